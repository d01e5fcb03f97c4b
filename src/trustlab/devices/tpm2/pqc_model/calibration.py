"""Cortex-M4 cycles per unit of work, calibrated on pqm4's whole-operation figures.

pqm4 (mupq/pqm4, ``data/pqm4_cortex_m4.json``) publishes, per scheme and
operation, the average cycle count on a Cortex-M4 and the share of it spent in
Keccak. With our counts of the same operations (:mod:`.counts`):

* cycles per Keccak-f[1600] permutation = hashing cycles / permutations, one
  estimate per pqm4 row; their median is the unit cost and their spread is
  kept (a test checks the rows agree);
* the rest (NTT + inverse NTT, base multiplications, other polynomial passes)
  is a non-negative least-squares fit of the non-hashing cycles on our counts,
  one fit per scheme family (ML-KEM: 16-bit q = 3329; ML-DSA: 23-bit q), with
  the residual of every row reported.

The implementation used is pqm4's portable C ("clean") by default: a TPM's
SecurCore SC300 (Cortex-M3 class) lacks the DSP instructions pqm4's ``m4f``
assembly relies on.
"""

from __future__ import annotations

import functools
import json
import statistics
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from trustlab.devices.tpm2.pqc_model import counts
from trustlab.devices.tpm2.pqc_model.params import DSA_OPERATIONS, KEM_OPERATIONS, MLDSA, MLKEM

ARITH_UNITS: dict[str, tuple[str, ...]] = {
    "transform": ("ntt", "invntt"),
    "basemul": ("basemul",),
    "poly": ("poly_add", "sample_uniform", "sample_cbd", "sample_bounded", "sample_mask", "sample_ball"),
}
"""Regressors of the non-hashing cycles: each sums some counted units."""


@functools.cache
def pqm4() -> dict:
    text = (resources.files("trustlab.devices.tpm2.pqc_model") / "data" / "pqm4_cortex_m4.json").read_text("utf-8")
    return json.loads(text)


def pqm4_source(impl: str) -> str:
    doc = pqm4()
    return f"{doc['source']} @ {doc['commit'][:12]}, implementation '{impl}', {doc['platform']}"


def family_of(algorithm: str) -> str:
    return "ML-KEM" if algorithm in MLKEM else "ML-DSA"


def _rows(family: str) -> list[tuple[str, str]]:
    if family == "ML-KEM":
        return [(a, op) for a in MLKEM for op in KEM_OPERATIONS]
    return [(a, op) for a in MLDSA for op in DSA_OPERATIONS]


def regressors(unit_counts: dict[str, float]) -> dict[str, float]:
    return {name: float(sum(unit_counts.get(u, 0) for u in units)) for name, units in ARITH_UNITS.items()}


@dataclass(frozen=True)
class Calibration:
    impl: str
    keccak_cycles: float                                  # per permutation (median over rows)
    keccak_rows: dict[str, float] = field(default_factory=dict)    # "alg op" -> cycles/permutation
    arith: dict[str, dict[str, float]] = field(default_factory=dict)  # family -> regressor -> cycles
    residuals: dict[str, float] = field(default_factory=dict)      # "alg op" -> (model - pqm4)/pqm4, non-hash part

    def cycles(self, algorithm: str, unit_counts: dict[str, float]) -> tuple[float, float]:
        """(Keccak cycles, other cycles) on a Cortex-M4 for these counts."""
        keccak = self.keccak_cycles * unit_counts.get("keccak_f1600", 0)
        coef = self.arith[family_of(algorithm)]
        other = sum(coef[name] * x for name, x in regressors(unit_counts).items())
        return keccak, other


@functools.cache
def calibrate(impl: str = "clean") -> Calibration:
    from scipy.optimize import nnls  # here: scipy.optimize is ~0.5 s to import and only calibration uses it

    schemes = pqm4()["schemes"]
    keccak_rows: dict[str, float] = {}
    arith: dict[str, dict[str, float]] = {}
    residuals: dict[str, float] = {}
    for family in ("ML-KEM", "ML-DSA"):
        a_rows, b_rows, labels = [], [], []
        for algorithm, op in _rows(family):
            fig = schemes[algorithm][impl][op]
            total, share = fig["cycles"]["AVG"], fig["hash_share"]
            m = counts.mean(algorithm, op)
            keccak_rows[f"{algorithm} {op}"] = share * total / m["keccak_f1600"]
            a_rows.append(list(regressors(m).values()))
            b_rows.append((1.0 - share) * total)
            labels.append(f"{algorithm} {op}")
        a, b = np.array(a_rows), np.array(b_rows)
        coef, _ = nnls(a, b)
        arith[family] = dict(zip(ARITH_UNITS, (float(c) for c in coef)))
        for label, got, want in zip(labels, a @ coef, b):
            residuals[label] = float((got - want) / want)
    return Calibration(impl, statistics.median(keccak_rows.values()), keccak_rows, arith, residuals)

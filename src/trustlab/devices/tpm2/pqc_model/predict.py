"""``price(algorithm, operation, chip)``: how long a post-quantum operation takes on a chip, with an interval.

The one pricing function for chips described by their facts (:class:`~.chipspec.ChipSpec`: ``--chip``,
a TOML file, or a shipped TPM 2.0 profile through :func:`~.chipspec.for_profile`). Issue 25's workload
replay reuses it. An operation costs

    work (Cortex-M4 'clean' cycles of our counted units, :mod:`.calibration`)
    / speed (M4-equivalent MHz: clock x the core class's work per clock, :mod:`.classes`, or the chip's
      own measured SHA-256 rate, unclamped, when it has one)
    x build factor (class x clock chips: -O2/-O3 = 1, -Os, -O0, or when not stated a mixture weighted by
      the builds published benchmarks state; Embench-IoT, our -O0/-Og/-O2 measurement) and between-source
      spread (a new chip is a new source: Student-t from the sources of a known build and timer in the
      class's group)
    x implementation factor (portable C = 1; hand-written assembly down to the class's sourced assembly: its paired
      C / assembly measurements (asm_pairs.toml, non-Keccak work), else pqm4's fastest on cores that run it)
    (a chip with a hardware Keccak engine, --chip keccak_engine= / keccak_cycles=: its counted Keccak
    permutations and sponge calls cost the engine's core cycles instead, :mod:`.keccak_engine`)
    x protection factor (certified chips, secret-key operations: published masking overheads)
  + for a TPM: per-command overhead, the bus, and on key creation the FIPS 140-3 pairwise consistency
    test and the wrapping of the private part.

Every assumption is a range; ``median_ms`` is the central estimate of the operation's mean time
(every assumption at its median, portable C, the mean counted work: what published averages compare
with), ``run_median_ms`` the median of single runs at those assumptions (ML-DSA signing's rejection
loop makes it lower than the mean) and ``low_ms`` .. ``high_ms`` the 5th..95th percentile of a
Monte-Carlo draw over all the ranges and the counted runs at once, every assumption drawn independently
(so extremes are not multiplied: the product of ten 5% ends is far beyond any 5% of the product). That model is :mod:`.estimate`. A chip
with published 1.85 figures (:mod:`.silicon`) is answered from them instead, priced as TPM commands
(:mod:`.cost`), so this module sits above both.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from trustlab.devices.tpm2.pqc_model import chipspec, cost, estimate, silicon
from trustlab.devices.tpm2.pqc_model.chipspec import ChipSpec
from trustlab.errors import TrustlabError
from trustlab.timing import registry

DRAWS = 4000


CALIBRATION, EXTRAPOLATED, MODEL = "calibration", "extrapolated from calibration", "model"
BASES = (CALIBRATION, EXTRAPOLATED, MODEL)
"""What a price rests on: a published figure of the operation (silicon.toml), a published figure of another
parameter set or operation of the same chip scaled by the counted work (silicon.label says which), or the model."""


@dataclass(frozen=True)
class Price:
    """One operation's predicted time: central estimate, interval, and where every figure came from."""

    median_ms: float
    low_ms: float
    high_ms: float
    provenance: str
    basis: str = "model"  # one of BASES: the published figure itself, extrapolated from one, or the generic model
    run_median_ms: float | None = None  # the median single run (ML-DSA signing's rejection loop skews it low)

    @property
    def calibrated(self) -> bool:
        """Priced at a published figure of this very operation (not extrapolated from another's)."""
        return self.basis == CALIBRATION

    @property
    def mean_ms(self) -> float:
        return self.median_ms

    def as_tuple(self) -> tuple[float, float, float, str]:
        return self.median_ms, self.low_ms, self.high_ms, self.provenance


CENTRAL_RUNS = 1001
"""Counted runs the central estimate's median is taken over (every other assumption at its centre)."""
CENTRAL = {"ratio": 0.5, "clock": 0.5, "place": 0.5, "impl": 0.5, "protect": 0.5, "bus": 0.5, "build": 0.5,
           "source": 0.5, "timer": 0.5}


def price(algorithm: str, operation: str, chip: ChipSpec | str, *, protection: bool = True,
          exclude: frozenset[str] = frozenset(), draws: int = DRAWS) -> Price:
    """(median, low, high, provenance) of ``operation`` ('keygen', 'sign', ..., 'create', 'load', or 'a+b')."""
    spec = _spec(chip)
    estimate.check(algorithm, operation)
    spec = chipspec.for_algorithm(spec, algorithm, exclude)  # assembly the class has no speed-up for on this family
    if spec.calibrated_profile and protection:
        cal = calibrated(spec.calibrated_profile, algorithm, operation)
        if cal is not None:
            run_median, low, high, prov, mean, extrapolated = cal
            return Price(mean, min(low, mean), max(high, mean), prov, EXTRAPOLATED if extrapolated else CALIBRATION,
                         run_median_ms=run_median)
    mean = float(estimate.one(spec, algorithm, operation, CENTRAL, protection=protection, exclude=exclude))
    # the seed is the question's, never the chip's: a label (name=) cannot move an interval, and every chip is
    # drawn with the same random numbers (common random numbers), so two chips that differ in one fact differ by
    # that fact, not by Monte-Carlo noise (a chip at twice the clock gets exactly half the interval)
    seed = zlib.crc32(f"{algorithm}|{operation}|{protection}|{sorted(exclude)}".encode())
    rng = np.random.default_rng(seed)
    central = np.broadcast_to(estimate.one(spec, algorithm, operation, CENTRAL, protection=protection, exclude=exclude,
                                  rng=rng, n=CENTRAL_RUNS), (CENTRAL_RUNS,))
    run_median = float(np.median(central))
    u = {k: rng.random(draws) for k in CENTRAL}
    if spec.keccak_engine is not None:  # its own stream: a chip without an engine keeps its draws
        u["engine"] = np.random.default_rng(seed ^ 0x6B656363).random(draws)
    else:  # the software Keccak's implementation (.keccak_impl): its own stream too
        u["keccak"] = np.random.default_rng(seed ^ 0x6B696D70).random(draws)
    u["lineage"] = np.random.default_rng(seed ^ 0x6C696E65).random(draws)  # the code base (.lineage): its own stream
    xs = np.sort(np.broadcast_to(estimate.one(spec, algorithm, operation, u, protection=protection, exclude=exclude,
                                     rng=rng, n=draws), (draws,)))
    low, high = float(xs[int(0.05 * (draws - 1))]), float(xs[int(0.95 * (draws - 1))])
    return Price(mean, min(low, mean), max(high, mean), estimate.provenance(spec, algorithm, operation, protection, exclude),
                 run_median_ms=run_median)


def _spec(chip: ChipSpec | str) -> ChipSpec:
    if isinstance(chip, ChipSpec):
        return chip
    if chip not in registry.available():
        raise TrustlabError(f"unknown profile {chip!r} (see `trustlab profiles list`)")
    profile = registry.load(chip)
    if profile.family != "tpm2":
        raise TrustlabError(f"profile {chip!r} is a {profile.family!r} profile; PQC pricing needs a tpm2 profile")
    return chipspec.for_profile(profile)


def calibrated(profile: str, algorithm: str, operation: str) -> tuple[float, float, float, str, float, bool] | None:
    """(median, low, high, provenance, mean, extrapolated) of a calibrated operation on ``profile``, or None if
    not published (``extrapolated``: from another parameter set's or operation's published figure).

    ``operation`` is a priced operation ('create', 'sign', ...); the answer is the whole benchmark
    operation (with its other commands), as the publication measured it (:mod:`.silicon`), priced by
    the TPM command pricing (:mod:`.cost`). The spread is the counted runs' (ML-DSA signing's
    rejection loop; the published figures are means only); the mean is the exact expectation
    (:func:`.cost.calibrated_mean`): the published figure itself where the operation is the published one.
    """
    found = silicon.for_operation(profile, algorithm, operation)
    if found is None:
        return None
    row, extrapolated = found
    tpm2 = registry.load(profile)
    totals = sorted(cost.calibrated_totals(tpm2, algorithm, operation, row))
    n = len(totals)
    mid = totals[n // 2] if n % 2 else (totals[n // 2 - 1] + totals[n // 2]) / 2
    return (float(mid), float(totals[int(0.05 * (n - 1))]), float(totals[int(0.95 * (n - 1))]),
            silicon.label(row, algorithm, extrapolated, operation),
            cost.calibrated_mean(tpm2, algorithm, operation, row), extrapolated)

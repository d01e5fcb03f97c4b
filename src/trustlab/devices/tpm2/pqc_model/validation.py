"""The PQC cost model beside published figures, marked "independent" or "calibration".

Rows have the fields of ``trustlab validate``'s checks (profile, device_class,
command, predicted, reference, unit, kind, source, note, flagged), so the
validate command can take them as they are.

What exists (searched with the project's search tool, November 2026):

* independent: Albrecht, Hanser, Höller, Pöppelmann, Virdia, Wallner, "Implementing
  RLWE-based Schemes Using an RSA Co-Processor", TCHES 2019(1): a Kyber768 *variant*
  on an Infineon SLE 78 smart-card controller (the family of Infineon's TPM security
  controllers), 79.6 / 102.4 / 132.7 ms key generation / encapsulation / decapsulation.
  Its arithmetic runs on the RSA co-processor and its hashing on the SHA-256 / AES
  engines, so it is a different implementation of a pre-standard algorithm: an
  order-of-magnitude check only (flagged).
* calibration: pqm4's own Cortex-M4 cycle counts (the model's unit costs are fitted on
  them), and Greconici, Kannwischer, Sprenkels, TCHES 2021(1) Dilithium3 on Cortex-M3
  (the SC300 class's work-per-clock range is taken from it).

No published measurement of ML-DSA or ML-KEM (FIPS 203/204) on a TPM, a secure element
or a smart card was found: there is no independent check of ML-DSA, and none of either
algorithm on a TPM.
"""

from __future__ import annotations

import statistics

from trustlab.devices.tpm2.pqc_model import calibration, chips, counts
from trustlab.devices.tpm2.pqc_model.cost import compute_ms, unit_costs
from trustlab.timing import registry

INDEPENDENT = "independent"
CALIBRATION = "calibration"

ALBRECHT_2019 = ("Albrecht et al., Implementing RLWE-based Schemes Using an RSA Co-Processor, "
                 "IACR TCHES 2019(1), Kyber768 variant on Infineon SLE 78")
ALBRECHT_2019_MS = {"keygen": 79.6, "encapsulate": 102.4, "decapsulate": 132.7}
GRECONICI_2021 = ("Greconici, Kannwischer, Sprenkels, Compact Dilithium Implementations on Cortex-M3 and "
                  "Cortex-M4, IACR TCHES 2021(1), Dilithium3 constant-time on Cortex-M3 (average kcycles)")
GRECONICI_2021_KCYCLES = {"keygen": 2562.0, "sign": 10667.0, "verify": 2321.0}
SLE78_PROFILE = "infineon-slb9672-wolftpm"


def _row(profile, device_class, command, predicted, reference, unit, kind, source, note, flagged=False) -> dict:
    return {"profile": profile, "device_class": device_class, "command": command, "predicted": predicted,
            "reference": reference, "unit": unit, "kind": kind, "source": source, "note": note,
            "flagged": flagged}


def rows() -> list[dict]:
    out: list[dict] = []
    if SLE78_PROFILE in registry.available():
        pqc = unit_costs(registry.load(SLE78_PROFILE))
        for op, ms in ALBRECHT_2019_MS.items():
            predicted = sum(compute_ms(pqc, "ML-KEM-768", counts.mean("ML-KEM-768", op), None).values())
            out.append(_row(f"{SLE78_PROFILE}-pqc", "discrete TPM 2.0", f"ML-KEM-768 {op} (compute)", predicted, ms, "ms",
                            INDEPENDENT, ALBRECHT_2019,
                            "reference is a pre-standard Kyber768 variant using the RSA co-processor and SHA-256/AES "
                            "engines on an SLE 78 card; our model prices FIPS 203 ML-KEM-768 in software on the "
                            "Infineon security controller class: order of magnitude only", flagged=True))
    cal = calibration.calibrate()
    for (algorithm, op) in [(a, o) for a in ("ML-KEM-768", "ML-DSA-65") for o in counts_ops(a)]:
        keccak, other = cal.cycles(algorithm, counts.mean(algorithm, op))
        ref = calibration.pqm4()["schemes"][algorithm]["clean"][op]["cycles"]["AVG"]
        out.append(_row("(Cortex-M4, pqm4 'clean')", "microcontroller", f"{algorithm} {op}", (keccak + other) / 1e6,
                        ref / 1e6, "Mcycles", CALIBRATION, calibration.pqm4_source("clean"),
                        "the unit costs are fitted on these figures"))
    sc300 = chips.chip_for("st-st33")
    per_clock = statistics.median(chips.log_uniform_quantiles(*sc300.per_clock))
    for op, kcycles in GRECONICI_2021_KCYCLES.items():
        keccak, other = cal.cycles("ML-DSA-65", counts.mean("ML-DSA-65", op))
        out.append(_row("(Cortex-M3 class, SC300)", "microcontroller", f"ML-DSA-65 {op}", (keccak + other) / per_clock / 1e3,
                        kcycles, "kcycles", CALIBRATION, GRECONICI_2021,
                        "the SC300 class's work-per-clock range is taken from these figures; Dilithium3 (round 3) "
                        "differs from ML-DSA-65 in details"))
    return out


def counts_ops(algorithm: str) -> tuple[str, ...]:
    return ("keygen", "encapsulate", "decapsulate") if "KEM" in algorithm else ("keygen", "sign", "verify")

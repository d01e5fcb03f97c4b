"""Reference source: the post-quantum cost model's rows (issue 17), from ``devices/tpm2/pqc_model/validation``.

One independent row set (a Kyber768 variant measured on an Infineon SLE 78, set beside
ML-KEM-768 priced on the SLB 9672's companion ``-pqc`` profile; flagged: a different
implementation of a pre-standard algorithm) and calibration rows (pqm4, Cortex-M3
Dilithium). No published ML-DSA / ML-KEM measurement on a TPM-class chip exists.
"""

from __future__ import annotations

from trustlab.devices.tpm2.pqc_model import validation as pqc_validation
from trustlab.validation.core import Check, Inconsistency


def _rows() -> list[dict]:
    return pqc_validation.rows()


PROFILES = ("infineon-slb9672-wolftpm-pqc",)


def checks() -> list[Check]:
    out = []
    for row in _rows():
        row = dict(row)
        if row.pop("flagged", False):  # core.Check has no flag: say it in the note
            row["note"] = f"flagged: {row.get('note', '')}".rstrip(": ")
        out.append(Check(**row))
    return out


def inconsistencies() -> list[Inconsistency]:
    return []

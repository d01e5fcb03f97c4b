"""Reference source: Gunupudi & Tate 2010, Table II (model column) for the four TPM 1.2 profiles.

Table II's model column is the paper's own formulas evaluated on the same
Table I components the shipped profiles hold, so agreement checks the
formulas and the transcription, not the chips: every row is a calibration
check. The measured 'Actual' column is withheld; these profiles therefore
state no independent accuracy.
"""

from __future__ import annotations

from trustlab.timing import formulas, registry
from trustlab.validation.core import CALIBRATION, Check, Inconsistency, device_class

PAPER = "Gunupudi & Tate, Timing-Accurate TPM Simulation (2010)"
TABLE_II = f"{PAPER}, Table II (model estimates)"
PROFILES = ("atmel-2010", "winbond-2010", "infineon-2010", "stm-2010")

# The model column of Table II (ms), per command and vendor, as printed in the paper.
# Used only as reference values set beside what the formulas compute.
TABLE_II_MODEL: dict[str, dict[str, float]] = {
    "TPM_Seal": {"atmel-2010": 94.0, "winbond-2010": 114.6, "infineon-2010": 180.8, "stm-2010": 239.9},
    "TPM_UnBind": {"atmel-2010": 803.9, "winbond-2010": 505.3, "infineon-2010": 324.5, "stm-2010": 803.4},
    "TPM_Sign": {"atmel-2010": 788.8, "winbond-2010": 502.9, "infineon-2010": 328.7, "stm-2010": 731.6},
    "TPM_Quote": {"atmel-2010": 798.4, "winbond-2010": 503.9, "infineon-2010": 329.3, "stm-2010": 775.2},
    "TPM_Unseal": {"atmel-2010": 810.2, "winbond-2010": 506.0, "infineon-2010": 324.7, "stm-2010": 816.8},
    "TPM_AuthorizeMigrationKey": {"atmel-2010": 34.2, "winbond-2010": 11.5, "infineon-2010": 20.6,
                                  "stm-2010": 85.5},
    "TPM_CreateMigrationBlob": {"atmel-2010": 891.5, "winbond-2010": 611.5, "infineon-2010": 486.9,
                                "stm-2010": 1099.4},
    "TPM_ChangeAuth": {"atmel-2010": 877.4, "winbond-2010": 609.9, "infineon-2010": 485.9, "stm-2010": 1035.7},
}


def checks() -> list[Check]:
    out = []
    for command, row in TABLE_II_MODEL.items():
        for name, paper in row.items():
            prof = registry.load(name)
            ms, _ = formulas.lookup(prof.family, command).evaluate(prof)
            out.append(Check(name, device_class(name, prof.family), command, ms, paper, "ms", CALIBRATION,
                             TABLE_II, "the paper's model from the same Table I components"))
    return out


def inconsistencies() -> list[Inconsistency]:
    return []

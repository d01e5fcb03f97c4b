"""Peak RAM of each post-quantum operation, beside what the chip is stated to have.

The RAM an operation needs is pqm4's measured stack ("Memory Evaluation") on a
Cortex-M4: the portable C ("clean") and the stack-optimised ("m4fstack", ML-DSA;
"m4fstack" for ML-KEM too) implementations bound what a TPM vendor would ship.
No TPM vendor publishes its chip's RAM (data sheets give NV memory only), so
the chip side is reported as not public rather than guessed.
"""

from __future__ import annotations

from trustlab.devices.tpm2.pqc_model import calibration
from trustlab.devices.tpm2.pqc_model.params import check_operation

CHIP_RAM_NOTE = "not public (TPM data sheets state NV memory and I/O buffer, not RAM)"


def peak_ram(algorithm: str, operation: str) -> dict[str, int | str]:
    """Stack bytes per implementation (pqm4) and the source line."""
    check_operation(algorithm, operation)
    schemes = calibration.pqm4()["schemes"][algorithm]
    out: dict[str, int | str] = {impl: figs[operation]["stack_bytes"] for impl, figs in schemes.items()
                                 if operation in figs and "stack_bytes" in figs[operation]}
    out["source"] = calibration.pqm4_source("*") + ", Memory Evaluation"
    out["chip_ram"] = CHIP_RAM_NOTE
    return out

"""The price of one post-quantum TPM command on a chip: component -> ms.

INTERIM VERSION (to be replaced by the unit-count model): the compute time is
pqm4's portable-C ("clean") Cortex-M4 cycle count for the whole operation
(mupq/pqm4 benchmarks.md, AVG column) at an assumed 30 MHz, and the bus moves
one byte per microsecond. It exists so that the TPM 2.0 PQC command handlers
can call the stable API below while the calibrated model is built.
"""

from __future__ import annotations

import random

from trustlab.devices.tpm2.pqc_model.params import check_operation
from trustlab.timing.profile import Profile

# INTERIM: mupq/pqm4 benchmarks.md, "clean" implementation, AVG cycles.
_PQM4_CLEAN_CYCLES = {
    ("ML-KEM-768", "keygen"): 988_722, ("ML-KEM-768", "encapsulate"): 1_138_225,
    ("ML-KEM-768", "decapsulate"): 1_387_984,
    ("ML-KEM-1024", "keygen"): 1_536_343, ("ML-KEM-1024", "encapsulate"): 1_708_071,
    ("ML-KEM-1024", "decapsulate"): 2_020_327,
    ("ML-DSA-44", "keygen"): 1_874_405, ("ML-DSA-44", "sign"): 7_925_955, ("ML-DSA-44", "verify"): 2_063_096,
    ("ML-DSA-65", "keygen"): 3_205_533, ("ML-DSA-65", "sign"): 12_359_056, ("ML-DSA-65", "verify"): 3_377_305,
    ("ML-DSA-87", "keygen"): 5_341_863, ("ML-DSA-87", "sign"): 15_579_513, ("ML-DSA-87", "verify"): 5_610_203,
}
_INTERIM_MHZ = 30.0
_INTERIM_BUS_MS_PER_BYTE = 0.001


def operation_cost(profile: Profile, algorithm: str, operation: str, *, in_bytes: int, out_bytes: int,
                   rng: random.Random | None = None) -> dict[str, float]:
    """What one whole TPM command doing ``operation`` with ``algorithm`` costs on ``profile``'s chip.

    The returned components are the command's entire cost (command overhead
    ``ohc`` included, so a caller adds nothing): ``ohc``, ``pqc_bus`` (moving
    ``in_bytes`` + ``out_bytes`` over the chip's bus) and ``pqc_compute``.
    """
    check_operation(algorithm, operation)
    if in_bytes < 0 or out_bytes < 0:
        raise ValueError("in_bytes and out_bytes must not be negative")
    ohc = profile.mean("ohc") if "ohc" in profile else 0.0
    compute = _PQM4_CLEAN_CYCLES[(algorithm, operation)] / (_INTERIM_MHZ * 1000.0)
    return {"ohc": ohc, "pqc_bus": (in_bytes + out_bytes) * _INTERIM_BUS_MS_PER_BYTE, "pqc_compute": compute}

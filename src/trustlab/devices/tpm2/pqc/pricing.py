"""What each PQC command costs on the profile's chip: the PQC cost model's answer.

The handlers never price anything themselves: they name the operation
(algorithm, keygen/sign/verify/encapsulate/decapsulate) and the bytes that
cross the bus, and :func:`operation_cost` of ``devices/tpm2/pqc_model``
(issue 17 part A) answers component -> ms for the whole command. Commands
without a post-quantum operation (ReadPublic, FlushContext, the sequence
starts, SequenceUpdate) are timed by the ordinary TPM 2.0 wire formula:
``ohc`` + ``ohir`` x bytes in + ``ohor`` x bytes out (+ hashing for
SequenceUpdate), like any command the proxy forwards.
"""

from __future__ import annotations

import random

from trustlab.timing.profile import Profile

try:
    from trustlab.devices.tpm2.pqc_model.cost import operation_cost as _model_cost
except ImportError:  # pragma: no cover - INTERIM until pqc_model (issue 17 part A) is on main
    _model_cost = None

# INTERIM pricing, used only while devices/tpm2/pqc_model is absent: pqm4's
# portable-C Cortex-M4 cycle counts (mupq/pqm4 benchmarks.md, "clean", AVG)
# at an assumed 30 MHz core, plus the profile's own per-byte wire costs.
# Replaced by the cost model as soon as it lands; do not quote these figures.
_INTERIM_KCYCLES = {
    ("ML-KEM-768", "keygen"): 989, ("ML-KEM-768", "encapsulate"): 1138, ("ML-KEM-768", "decapsulate"): 1388,
    ("ML-KEM-1024", "keygen"): 1536, ("ML-KEM-1024", "encapsulate"): 1708, ("ML-KEM-1024", "decapsulate"): 2020,
    ("ML-DSA-44", "keygen"): 1874, ("ML-DSA-44", "sign"): 7926, ("ML-DSA-44", "verify"): 2063,
    ("ML-DSA-65", "keygen"): 3206, ("ML-DSA-65", "sign"): 12359, ("ML-DSA-65", "verify"): 3377,
    ("ML-DSA-87", "keygen"): 5342, ("ML-DSA-87", "sign"): 15580, ("ML-DSA-87", "verify"): 5610,
}
_INTERIM_MHZ = 30.0


def _interim_cost(profile: Profile, algorithm: str, operation: str, *, in_bytes: int, out_bytes: int,
                  rng: random.Random | None = None) -> dict[str, float]:
    out = {"pqc_compute": _INTERIM_KCYCLES[(algorithm, operation)] / _INTERIM_MHZ}
    for comp, n in (("ohc", 1), ("ohir", in_bytes), ("ohor", out_bytes)):
        if comp in profile:
            out[comp] = profile.mean(comp) * n
    return out


def operation_ms(profile: Profile, rng: random.Random, algorithm: str, operation: str, *,
                 in_bytes: int, out_bytes: int) -> dict[str, float]:
    """component -> ms of one whole command performing ``operation`` (drawn with ``rng``)."""
    price = _model_cost if _model_cost is not None else _interim_cost
    return dict(price(profile, algorithm, operation, in_bytes=in_bytes, out_bytes=out_bytes, rng=rng))

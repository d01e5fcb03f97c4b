"""What each PQC command costs on the profile's chip: the PQC cost model's answer.

The handlers never price anything themselves: they name the operation
(algorithm, keygen/sign/verify/encapsulate/decapsulate) and the bytes that
cross the bus, and :func:`~trustlab.devices.tpm2.pqc_model.cost.operation_cost`
(issue 17 part A) answers component -> ms for the whole command: ``ohc``,
``pqc_keccak`` + ``pqc_arith`` (the counted work at the chip's unit costs, one
draw per call) and ``pqc_bus``. Commands without a post-quantum operation
(ReadPublic, FlushContext, the sequence starts) are timed by the ordinary
TPM 2.0 wire formula, like any command the proxy forwards; a SequenceUpdate of
an ML-DSA sequence adds the model's Keccak time of absorbing its bytes.
"""

from __future__ import annotations

import random

from trustlab.devices.tpm2.pqc_model.cost import absorb_ms, operation_cost
from trustlab.timing.profile import Profile


def operation_ms(profile: Profile, rng: random.Random, algorithm: str, operation: str, *,
                 in_bytes: int, out_bytes: int) -> dict[str, float]:
    """component -> ms of one whole command performing ``operation`` (drawn with ``rng``)."""
    return dict(operation_cost(profile, algorithm, operation, in_bytes=in_bytes, out_bytes=out_bytes, rng=rng))



def sequence_update_ms(profile: Profile, n_bytes: int) -> dict[str, float]:
    """Keccak ms of absorbing ``n_bytes`` more message into an ML-DSA sequence's mu."""
    return dict(absorb_ms(profile, n_bytes))

"""What each PQC command costs on the profile's chip: the PQC cost model's answer.

The handlers never price anything themselves: they name the operation
(algorithm; keygen for a key being created, load for a key loaded again from its
seed, sign / verify / encapsulate / decapsulate) and the bytes that cross the
bus, and :func:`~trustlab.devices.tpm2.pqc_model.cost.operation_cost` answers
component -> ms for the whole command: ``ohc``, ``pqc_keccak`` + ``pqc_arith``
(the counted work at the chip's unit costs, one draw per call, with the chip's
protection of secret-key operations when it is certified), ``pqc_wrap`` (key
creation's wrapping of the private part) and ``pqc_bus``. Creating a key
(TPM2_CreatePrimary, TPM2_Create) is keygen + the FIPS 140-3 pairwise
consistency test + wrapping; loading it (TPM2_Load, TPM2_ContextLoad) expands
the seed again. A profile with published 1.85 figures (SEALSQ QVault: wolfTPM's
docs/benchmarks.md) answers at those means (``pqc_model.silicon``).

Commands without a post-quantum operation (ReadPublic, FlushContext, the
sequence starts) are timed by the ordinary TPM 2.0 wire formula, like any
command the proxy forwards; a SequenceUpdate of an ML-DSA sequence adds the
model's Keccak time of absorbing its bytes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from trustlab.devices.tpm2.pqc_model.cost import absorb_ms, operation_cost
from trustlab.timing.profile import Profile

HANDLER_OPERATIONS = {"keygen": "create"}
"""A handler's 'keygen' creates a key (CreatePrimary / Create): the model's 'create'."""


def operation_ms(profile: Profile, rng: random.Random | None, algorithm: str, operation: str, *,
                 in_bytes: int, out_bytes: int) -> dict[str, float]:
    """component -> ms of one whole command performing ``operation`` (drawn with ``rng``; None: the model's
    means, the central estimate ``estimate`` and ``replay`` give)."""
    return dict(operation_cost(profile, algorithm, HANDLER_OPERATIONS.get(operation, operation),
                               in_bytes=in_bytes, out_bytes=out_bytes, rng=rng))


def sequence_update_ms(profile: Profile, n_bytes: int) -> dict[str, float]:
    """Keccak ms of absorbing ``n_bytes`` more message into an ML-DSA sequence's mu."""
    return dict(absorb_ms(profile, n_bytes))


@dataclass(frozen=True)
class OperationPrice:
    """A handler's ``Reply.price`` for a command performing ``operation``: :func:`operation_ms`, drawn with
    ``rng`` when the proxy calls it. It names what it prices (:attr:`priced_as`), which the trace carries so
    that ``trustlab replay`` prices the same operation on another chip with this same function."""

    profile: Profile
    rng: random.Random
    algorithm: str
    operation: str

    def __call__(self, in_bytes: int, out_bytes: int) -> dict[str, float]:
        return operation_ms(self.profile, self.rng, self.algorithm, self.operation, in_bytes=in_bytes,
                            out_bytes=out_bytes)

    @property
    def priced_as(self) -> dict[str, Any]:
        return {"alg": self.algorithm, "op": self.operation}


@dataclass(frozen=True)
class AbsorbPrice:
    """``Reply.price`` of an ML-DSA SequenceUpdate: :func:`sequence_update_ms` of the bytes it absorbs
    (charged beside the wire formula's terms); :attr:`priced_as` as :class:`OperationPrice`'s."""

    profile: Profile
    algorithm: str | None
    n_bytes: int

    def __call__(self, in_bytes: int, out_bytes: int) -> dict[str, float]:
        return sequence_update_ms(self.profile, self.n_bytes)

    @property
    def priced_as(self) -> dict[str, Any]:
        return {"alg": self.algorithm, "op": "absorb", "bytes": self.n_bytes}

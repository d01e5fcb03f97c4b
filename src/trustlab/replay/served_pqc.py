"""The trace's own post-quantum commands (serve's TPM 2.0 Library 1.85 extension), priced as serve prices them.

serve's PQC handlers price a key creation, a load, a signature, a verification, an
encapsulation or a decapsulation with
:func:`trustlab.devices.tpm2.pqc.pricing.operation_ms` (the PQC cost model on the profile's
chip, drawn per call from the proxy's extension generator ``random.Random(seed)``), and an
ML-DSA SequenceUpdate with the wire formula plus
:func:`~trustlab.devices.tpm2.pqc.pricing.sequence_update_ms`. The trace line names what was
priced (its ``pqc`` field: algorithm, operation); replay calls the same two functions with it,
on every profile:

* the mean price is the model's central estimate (``operation_ms`` without a generator: mean
  counted work at mean unit costs, the chip's median protection factor, mean bus rate);
* draw 0 repeats serve's own draws: one ``random.Random(seed)`` per trace segment (each segment
  is one serve run), the operations drawn in trace order, exactly as the proxy drew them - so on
  the recording profile with the recording seed the total is the sum of the recorded
  ``modelled_ms`` (up to float summation order);
* the other draws are independent calls of the same function (beyond a budget of :data:`POOL`
  calls shared by the kinds of command, resampled from each kind's pool of calls).

A trace recorded before serve wrote the field has no ``pqc``: the operation is read off the
command and its key's parameter set (:data:`OPERATIONS`, as the handlers choose it). An operation
the model cannot price on a profile is reported "cannot price" with the model's reason, never
charged as overhead.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass

import numpy as np

from trustlab.devices.tpm2.pqc import operations
from trustlab.errors import TrustlabError
from trustlab.replay.load import Command

OPERATIONS = operations.OPERATIONS
"""The operation each PQC handler prices, for traces without the ``pqc`` field."""
CLASSICAL_AS = operations.CLASSICAL_AS
NEW_IN_185 = operations.NEW_IN_185
POOL = 50_000
"""Calls of the cost model for the draws beyond draw 0, shared by the kinds of command (each gets at least
:data:`MIN_POOL`; ~10 us a call): a kind needing more is resampled from its pool."""
MIN_POOL = 64
WIRE = "wire"


@functools.cache
def _algorithms() -> dict[str, str]:
    """Key variant (``mldsa65``) -> the cost model's algorithm (``ML-DSA-65``), from the handlers' own table."""
    from trustlab.devices.tpm2.pqc import keys

    return {p.variant: p.algorithm for p in (*keys.MLDSA_SETS.values(), *keys.MLKEM_SETS.values())}


def is_pqc_variant(variant: str | None) -> bool:
    return variant is not None and variant in _algorithms()


def operation(c: Command) -> tuple[str | None, str, int | None] | None:
    """(algorithm, operation, absorbed bytes) of a command serve priced with the PQC model, else None.
    A 1.85 key's other commands (ReadPublic, ContextSave, a failed command) cost the wire formula:
    ``(algorithm, "wire", None)``."""
    if c.pqc is not None:
        return c.pqc
    if c.command.startswith("RM_") or not is_pqc_variant(c.variant):
        return None
    algorithm = _algorithms()[c.variant or ""]
    if c.ok and c.command in OPERATIONS:
        return algorithm, OPERATIONS[c.command], None
    if c.ok and c.command == "TPM2_SequenceUpdate":  # ML-DSA's (a HashML-DSA one is hashed: sha256_byte)
        return algorithm, "absorb", c.hashed_bytes
    return algorithm, WIRE, None


def own_terms(c: Command, op: tuple[str | None, str, int | None]) -> dict[str, float]:
    """The wire formula's terms serve charges beside (absorb) or instead of (wire) the PQC model's price."""
    if op[1] in (WIRE, "absorb"):
        return {"ohc": 1.0, "ohir": float(c.in_bytes), "ohor": float(c.out_bytes)}
    return {}


@dataclass(frozen=True)
class Row:
    """One PQC-priced command of the trace: where it is, and what serve priced."""

    index: int
    segment: int
    algorithm: str | None
    operation: str
    in_bytes: int
    out_bytes: int
    absorbed: int | None

    @property
    def kind(self) -> tuple:
        return self.algorithm, self.operation, self.in_bytes, self.out_bytes, self.absorbed


def rows(commands: list[Command]) -> list[Row]:
    out = []
    for i, c in enumerate(commands):
        op = operation(c)
        if op is not None and op[1] != WIRE:
            out.append(Row(i, c.segment, op[0], op[1], c.in_bytes, c.out_bytes, op[2]))
    return out


def _one(profile, rng: random.Random | None, row: Row) -> float:
    """What serve charges ``row`` on ``profile`` beyond its wire terms (the same functions it calls)."""
    from trustlab.devices.tpm2.pqc import pricing

    if row.operation == "absorb":
        return sum(pricing.sequence_update_ms(profile, row.absorbed or 0).values())
    return sum(pricing.operation_ms(profile, rng, row.algorithm or "", row.operation, in_bytes=row.in_bytes,
                                    out_bytes=row.out_bytes).values())


@dataclass
class PqcPrices:
    mean: np.ndarray        # per PQC row, the central estimate
    seed_draw: np.ndarray   # per PQC row, serve's own draw with the seed
    draws: np.ndarray       # per draw 1.., the PQC rows' total minus its mean
    unpriceable: dict[tuple, str]  # kind -> why the model cannot price it on this profile (charged 0)


def price(pqc_rows: list[Row], profile, draws: int, seed: int) -> PqcPrices:
    """The PQC rows on ``profile``: means, draw 0 (serve's sequence) and ``draws - 1`` independent totals."""
    n = len(pqc_rows)
    mean, seed_draw = np.zeros(n), np.zeros(n)
    extra = np.zeros(max(0, draws - 1))
    unpriceable: dict[tuple, str] = {}
    by_kind: dict[tuple, list[int]] = {}
    for k, row in enumerate(pqc_rows):
        by_kind.setdefault(row.kind, []).append(k)
    kind_mean: dict[tuple, float] = {}
    for kind, ks in by_kind.items():
        try:
            kind_mean[kind] = _one(profile, None, pqc_rows[ks[0]])
        except TrustlabError as exc:
            unpriceable[kind] = str(exc)
            continue
        mean[ks] = kind_mean[kind]
    rng0, segment = None, None
    for k, row in enumerate(pqc_rows):  # draw 0: serve's generator, in the order serve drew
        if row.segment != segment or rng0 is None:
            rng0, segment = random.Random(seed), row.segment
        if row.kind in kind_mean:
            seed_draw[k] = _one(profile, rng0, row)
    if draws > 1:
        np_rng = np.random.default_rng(seed + 2)
        for kind, ks in by_kind.items():
            if kind not in kind_mean or kind[1] == "absorb":  # absorbing is deterministic
                continue
            rng = random.Random(f"replay|{seed}|{kind}")
            need = (draws - 1) * len(ks)
            size = min(need, max(MIN_POOL, POOL // len(by_kind)))
            pool = np.array([_one(profile, rng, pqc_rows[ks[0]]) for _ in range(size)])
            sample = pool.reshape(draws - 1, len(ks)) if size == need else np_rng.choice(pool, (draws - 1, len(ks)))
            extra += sample.sum(axis=1) - kind_mean[kind] * len(ks)
    return PqcPrices(mean, seed_draw, extra, unpriceable)

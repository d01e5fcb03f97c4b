"""Mutation fuzzing of the extension's dispatcher, shared by the PQC wire and peer-path fuzz tests.

One loop so both tests mutate frames the same way: byte flips after the
header, truncations after the command code, random tails; the size field is
then set to the frame's length so the mutation reaches the handlers instead
of the framing check.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence

from trustlab.devices.tpm2 import extensions as ext


def mutate(seed: bytes, rng: random.Random, edits: int) -> bytes:
    """``seed`` with ``edits`` random edits (flip a byte, cut the tail, append bytes) and its size field fixed."""
    f = bytearray(seed)
    for _ in range(edits):
        op = rng.randrange(3)
        if op == 0 and len(f) > 10:
            f[rng.randrange(10, len(f))] = rng.randrange(256)
        elif op == 1 and len(f) > 14:
            del f[rng.randrange(14, len(f)):]
        else:
            f += bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    f[2:6] = struct.pack(">I", len(f))
    return bytes(f)


def assert_mutants_never_fault(ctx: ext.Context, seeds: Sequence[bytes], rng: random.Random, rounds: int,
                               edits: tuple[int, int]) -> None:
    """Dispatch ``rounds`` mutants of ``seeds`` (``edits`` = fewest, most edits each): every claimed one
    answers a well-formed TPM response and no handler raises (a raise is TPM_RC_FAILURE with a fault)."""
    for _ in range(rounds):
        f = mutate(rng.choice(seeds), rng, rng.randint(*edits))
        out = ext.dispatch(f, ctx)
        if out is None:
            continue
        assert out.fault is None, (out.fault, f.hex())
        assert len(out.response) == struct.unpack_from(">I", out.response, 2)[0]

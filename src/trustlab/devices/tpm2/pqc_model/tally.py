"""Counting the work of one operation: Keccak permutations, NTTs, multiplications, samples.

A :class:`Tally` is threaded through the counting implementations
(:mod:`.mlkem`, :mod:`.mldsa`); each primitive adds its units. Keccak itself
is hashlib's: bytes come from ``hashlib.shake_*``/``sha3_*`` and the number of
Keccak-f[1600] permutations is computed from the byte lengths and the rate,
exactly as a sponge would run them (FIPS 202 Sec. 4: pad10*1 always adds at
least one byte, so absorbing n bytes takes ceil((n + 1) / rate) permutations;
every further ``rate`` bytes squeezed take one more).
"""

from __future__ import annotations

import hashlib
from collections import Counter

RATE = {"shake128": 168, "shake256": 136, "sha3_256": 136, "sha3_512": 72}
"""Sponge rates in bytes (FIPS 202 Sec. 6: r = 1600 - 2c)."""


class Tally(Counter):
    """Unit -> count. Units: ``keccak_f1600``, ``ntt``, ``invntt``, ``basemul`` (one polynomial
    product in the NTT domain), ``poly_add`` (one polynomial add/sub), ``sample_uniform`` /
    ``sample_cbd`` / ``sample_bounded`` / ``sample_mask`` / ``sample_ball`` (polynomials),
    ``rej_iterations`` (ML-DSA signing loop), ``bytes_hashed``, ``keccak_calls`` (sponge calls: what a
    hardware Keccak engine charges its per-call set-up for, :mod:`.keccak_engine`)."""

    def keccak(self, kind: str, in_len: int, out_len: int) -> None:
        rate = RATE[kind]
        absorb = -(-(in_len + 1) // rate)
        squeeze_more = max(0, -(-out_len // rate) - 1)
        self["keccak_f1600"] += absorb + squeeze_more
        self["bytes_hashed"] += in_len
        self["keccak_calls"] += 1


def sha3_256(t: Tally, data: bytes) -> bytes:
    t.keccak("sha3_256", len(data), 32)
    return hashlib.sha3_256(data).digest()


def sha3_512(t: Tally, data: bytes) -> bytes:
    t.keccak("sha3_512", len(data), 64)
    return hashlib.sha3_512(data).digest()


def shake(t: Tally, kind: str, data: bytes, out_len: int) -> bytes:
    t.keccak(kind, len(data), out_len)
    return hashlib.new(kind.replace("shake", "shake_"), data).digest(out_len)


class XofStream:
    """An incrementally squeezed SHAKE; permutations are counted for the blocks actually read."""

    def __init__(self, t: Tally, kind: str, data: bytes) -> None:
        self._t, self._kind, self._rate = t, kind, RATE[kind]
        self._h = hashlib.new(kind.replace("shake", "shake_"), data)
        self._in_len = len(data)
        self._buf = b""
        self._pos = 0

    def read(self, n: int) -> bytes:
        end = self._pos + n
        if end > len(self._buf):
            self._buf = self._h.digest(max(end, 2 * len(self._buf), 4 * self._rate))
        out = self._buf[self._pos:end]
        self._pos = end
        return out

    def close(self) -> None:
        """Charge the permutations: absorbing, then one per further block squeezed."""
        self._t.keccak(self._kind, self._in_len, self._pos)

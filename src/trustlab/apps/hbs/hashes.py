"""The keyed SHA-256 functions of RFC 8391 (F, H, H_msg, PRF) and PRF_keygen, metered.

A ``Meter`` sees every call with its input length, so the same scheme code
runs on the host (no meter) and on the simulated card (a meter that charges
the card's clock per hash call and per 64-byte compression block).
"""

from __future__ import annotations

import hashlib
from typing import Protocol

from trustlab.apps.hbs.address import Address

N = 32
_PAD = {i: i.to_bytes(32, "big") for i in range(5)}
_PAD0, _PAD1, _PAD2, _PAD3, _PAD4 = (_PAD[i] for i in range(5))
_KM = [i.to_bytes(4, "big") for i in range(3)]  # ADRS keyAndMask values, its last 4 bytes


def sha256_blocks(nbytes: int) -> int:
    """Compression-function calls SHA-256 makes on an ``nbytes`` input (padding included)."""
    return (nbytes + 9 + 63) // 64


KINDS = ("F", "H", "H_msg", "PRF", "PRF_keygen")
_F, _H, _H_MSG, _PRF, _PRF_KEYGEN = range(len(KINDS))
BLOCKS = len(KINDS)  # tally index of the SHA-256 blocks


class Meter(Protocol):
    """Sees every hash and RAM operation of the scheme code.

    ``tally``: while not None, a hash is counted by adding 1 at its kind's index
    (in :data:`KINDS`) and its SHA-256 blocks at index :data:`BLOCKS`, instead of
    calling :meth:`hash` (one Python call per hash is most of a metered hash's cost);
    None when each hash must be seen one by one.
    """

    tally: list[int] | None

    def hash(self, kind: str, nbytes: int) -> None: ...
    def ram(self, nbytes: int) -> None: ...


_sha256 = hashlib.sha256  # OpenSSL through hashlib: a third of the per-call cost of a cryptography Hash


def xor(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(len(a), "big")


class Hasher:
    """RFC 8391 section 5.1 SHA-256 instantiation with an optional meter."""

    def __init__(self, meter: Meter | None = None) -> None:
        self.meter = meter

    # Each function hashes and counts inline into the meter's tally, without a shared helper or
    # a call into the meter: the calls saved are what keep a metered hash near hashlib's own cost.
    def prf(self, key: bytes, m: bytes) -> bytes:
        data = _PAD3 + key + m
        meter = self.meter
        if meter is not None:
            tally = meter.tally
            if tally is None:
                meter.hash("PRF", len(data))
            else:
                tally[_PRF] += 1
                tally[BLOCKS] += (len(data) + 72) >> 6  # sha256_blocks, inlined
        return _sha256(data).digest()

    def prf_keygen(self, key: bytes, m: bytes) -> bytes:
        """PRF_keygen of NIST SP 800-208 / the XMSS reference implementation (padding 4)."""
        data = _PAD4 + key + m
        meter = self.meter
        if meter is not None:
            tally = meter.tally
            if tally is None:
                meter.hash("PRF_keygen", len(data))
            else:
                tally[_PRF_KEYGEN] += 1
                tally[BLOCKS] += (len(data) + 72) >> 6  # sha256_blocks, inlined
        return _sha256(data).digest()

    def f(self, key: bytes, m: bytes) -> bytes:
        data = _PAD0 + key + m
        meter = self.meter
        if meter is not None:
            tally = meter.tally
            if tally is None:
                meter.hash("F", len(data))
            else:
                tally[_F] += 1
                tally[BLOCKS] += (len(data) + 72) >> 6  # sha256_blocks, inlined
        return _sha256(data).digest()

    def h(self, key: bytes, m: bytes) -> bytes:
        data = _PAD1 + key + m
        meter = self.meter
        if meter is not None:
            tally = meter.tally
            if tally is None:
                meter.hash("H", len(data))
            else:
                tally[_H] += 1
                tally[BLOCKS] += (len(data) + 72) >> 6  # sha256_blocks, inlined
        return _sha256(data).digest()

    def h_msg(self, key: bytes, m: bytes) -> bytes:
        data = _PAD2 + key + m
        meter = self.meter
        if meter is not None:
            tally = meter.tally
            if tally is None:
                meter.hash("H_msg", len(data))
            else:
                tally[_H_MSG] += 1
                tally[BLOCKS] += (len(data) + 72) >> 6  # sha256_blocks, inlined
        return _sha256(data).digest()

    def _xor(self, a: bytes, b: bytes) -> bytes:
        if self.meter is not None:
            self.meter.ram(len(a))
        return xor(a, b)

    def rand_hash(self, left: bytes, right: bytes, seed: bytes, adrs: Address) -> bytes:
        """RAND_HASH (RFC 8391 Algorithm 7): keyed H with two bitmasks.

        The three PRF inputs differ only in keyAndMask, the address's last word,
        so the address is serialised once and that word appended (as 0, 1, 2).
        """
        head = adrs.to_bytes()[:28]
        key = self.prf(seed, head + _KM[0])
        bm0 = self.prf(seed, head + _KM[1])
        bm1 = self.prf(seed, head + _KM[2])
        adrs.key_and_mask = 2
        return self.h(key, self._xor(left, bm0) + self._xor(right, bm1))

    def chain(self, x: bytes, start: int, steps: int, seed: bytes, adrs: Address) -> bytes:
        """``steps`` steps of the WOTS+ chain function from hash address ``start`` (RFC 8391 Algorithm 2).

        The bulk of every WOTS+ key and signature. Between steps the address changes only in
        its hash word and keyAndMask, so the rest is serialised once, and the steps hash
        inline; the meter's tally gets the same calls, blocks and RAM bytes as ``steps``
        :meth:`chain_step` calls would give it (in aggregate, as it charges them anyway).
        While the meter must see each hash (a tear armed, costs drawn per call) it goes
        step by step.
        """
        meter = self.meter
        if steps <= 0:
            return x
        if meter is not None and meter.tally is None:
            for j in range(start, start + steps):
                adrs.set_hash(j)
                x = self.chain_step(x, seed, adrs)
            return x
        head = adrs.to_bytes()[:24]
        prf_head, n, sha256, from_bytes = _PAD3 + seed + head, len(x), _sha256, int.from_bytes
        for j in range(start, start + steps):
            prefix = prf_head + j.to_bytes(4, "big")
            key = sha256(prefix + _KM[0]).digest()
            bm = sha256(prefix + _KM[1]).digest()
            x = sha256(_PAD0 + key + (from_bytes(x, "big") ^ from_bytes(bm, "big")).to_bytes(n, "big")).digest()
        adrs.set_hash(start + steps - 1)
        adrs.key_and_mask = 1  # where the last step leaves the address
        if meter is not None:
            tally = meter.tally
            assert tally is not None
            tally[_PRF] += 2 * steps
            tally[_F] += steps
            tally[BLOCKS] += steps * (2 * sha256_blocks(len(prf_head) + 8) + sha256_blocks(len(_PAD0) + N + n))
            meter.ram(n * steps)
        return x

    def chain_step(self, x: bytes, seed: bytes, adrs: Address) -> bytes:
        """One step of the WOTS+ chain function (RFC 8391 Algorithm 2); the address as in rand_hash."""
        head = adrs.to_bytes()[:28]
        key = self.prf(seed, head + _KM[0])
        bm = self.prf(seed, head + _KM[1])
        adrs.key_and_mask = 1
        return self.f(key, self._xor(x, bm))

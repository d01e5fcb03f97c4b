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


class Meter(Protocol):
    def hash(self, kind: str, nbytes: int) -> None: ...
    def ram(self, nbytes: int) -> None: ...


_sha256 = hashlib.sha256  # OpenSSL through hashlib: a third of the per-call cost of a cryptography Hash


def xor(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(len(a), "big")


class Hasher:
    """RFC 8391 section 5.1 SHA-256 instantiation with an optional meter."""

    def __init__(self, meter: Meter | None = None) -> None:
        self.meter = meter

    # Each function hashes and meters inline, without a shared helper: one Python call fewer
    # per hash is what keeps a metered hash near hashlib's own cost.
    def prf(self, key: bytes, m: bytes) -> bytes:
        data = _PAD3 + key + m
        if self.meter is not None:
            self.meter.hash("PRF", len(data))
        return _sha256(data).digest()

    def prf_keygen(self, key: bytes, m: bytes) -> bytes:
        """PRF_keygen of NIST SP 800-208 / the XMSS reference implementation (padding 4)."""
        data = _PAD4 + key + m
        if self.meter is not None:
            self.meter.hash("PRF_keygen", len(data))
        return _sha256(data).digest()

    def f(self, key: bytes, m: bytes) -> bytes:
        data = _PAD0 + key + m
        if self.meter is not None:
            self.meter.hash("F", len(data))
        return _sha256(data).digest()

    def h(self, key: bytes, m: bytes) -> bytes:
        data = _PAD1 + key + m
        if self.meter is not None:
            self.meter.hash("H", len(data))
        return _sha256(data).digest()

    def h_msg(self, key: bytes, m: bytes) -> bytes:
        data = _PAD2 + key + m
        if self.meter is not None:
            self.meter.hash("H_msg", len(data))
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

    def chain_step(self, x: bytes, seed: bytes, adrs: Address) -> bytes:
        """One step of the WOTS+ chain function (RFC 8391 Algorithm 2); the address as in rand_hash."""
        head = adrs.to_bytes()[:28]
        key = self.prf(seed, head + _KM[0])
        bm = self.prf(seed, head + _KM[1])
        adrs.key_and_mask = 1
        return self.f(key, self._xor(x, bm))

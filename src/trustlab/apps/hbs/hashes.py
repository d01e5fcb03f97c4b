"""The keyed SHA-256 functions of RFC 8391 (F, H, H_msg, PRF) and PRF_keygen, metered.

A ``Meter`` sees every call with its input length, so the same scheme code
runs on the host (no meter) and on the simulated card (a meter that charges
the card's clock per hash call and per 64-byte compression block).
"""

from __future__ import annotations

from typing import Protocol

from cryptography.hazmat.primitives import hashes

from trustlab.apps.hbs.address import Address

N = 32
_PAD = {i: i.to_bytes(32, "big") for i in range(5)}


def sha256_blocks(nbytes: int) -> int:
    """Compression-function calls SHA-256 makes on an ``nbytes`` input (padding included)."""
    return (nbytes + 9 + 63) // 64


class Meter(Protocol):
    def hash(self, kind: str, nbytes: int) -> None: ...
    def ram(self, nbytes: int) -> None: ...


def _sha256(data: bytes) -> bytes:
    h = hashes.Hash(hashes.SHA256())
    h.update(data)
    return h.finalize()


def xor(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(len(a), "big")


class Hasher:
    """RFC 8391 section 5.1 SHA-256 instantiation with an optional meter."""

    def __init__(self, meter: Meter | None = None) -> None:
        self.meter = meter

    def _call(self, kind: str, data: bytes) -> bytes:
        if self.meter is not None:
            self.meter.hash(kind, len(data))
        return _sha256(data)

    def prf(self, key: bytes, m: bytes) -> bytes:
        return self._call("PRF", _PAD[3] + key + m)

    def prf_keygen(self, key: bytes, m: bytes) -> bytes:
        """PRF_keygen of NIST SP 800-208 / the XMSS reference implementation (padding 4)."""
        return self._call("PRF_keygen", _PAD[4] + key + m)

    def f(self, key: bytes, m: bytes) -> bytes:
        return self._call("F", _PAD[0] + key + m)

    def h(self, key: bytes, m: bytes) -> bytes:
        return self._call("H", _PAD[1] + key + m)

    def h_msg(self, key: bytes, m: bytes) -> bytes:
        return self._call("H_msg", _PAD[2] + key + m)

    def _xor(self, a: bytes, b: bytes) -> bytes:
        if self.meter is not None:
            self.meter.ram(len(a))
        return xor(a, b)

    def rand_hash(self, left: bytes, right: bytes, seed: bytes, adrs: Address) -> bytes:
        """RAND_HASH (RFC 8391 Algorithm 7): keyed H with two bitmasks."""
        adrs.key_and_mask = 0
        key = self.prf(seed, adrs.to_bytes())
        adrs.key_and_mask = 1
        bm0 = self.prf(seed, adrs.to_bytes())
        adrs.key_and_mask = 2
        bm1 = self.prf(seed, adrs.to_bytes())
        return self.h(key, self._xor(left, bm0) + self._xor(right, bm1))

    def chain_step(self, x: bytes, seed: bytes, adrs: Address) -> bytes:
        """One step of the WOTS+ chain function (RFC 8391 Algorithm 2)."""
        adrs.key_and_mask = 0
        key = self.prf(seed, adrs.to_bytes())
        adrs.key_and_mask = 1
        bm = self.prf(seed, adrs.to_bytes())
        return self.f(key, self._xor(x, bm))

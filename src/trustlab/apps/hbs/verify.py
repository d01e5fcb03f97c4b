"""Independent off-card XMSS / XMSS^MT verifier (RFC 8391 Algorithms 14 and 17).

Written separately from the signer on purpose: it shares no code with
``wots``/``tree``/``address`` (its own address packing, base-w, chains and
L-tree), takes only public data (the public key bytes and the signature
bytes), and meters nothing. A signature from the card counts as valid only if
this verifier says so, so a bug shared by signer and verifier is less likely
to hide. It is also the code the Botan known-answer vectors check.
"""

from __future__ import annotations

import struct

from cryptography.hazmat.primitives import hashes

from trustlab.errors import TrustlabError


def _h(prefix: int, key: bytes, m: bytes) -> bytes:
    d = hashes.Hash(hashes.SHA256())
    d.update(prefix.to_bytes(32, "big") + key + m)
    return d.finalize()


def _adrs(layer: int, tree: int, typ: int, a: int, b: int, c: int, km: int) -> bytes:
    return struct.pack(">IQIIIII", layer, tree, typ, a, b, c, km)


class Verifier:
    """Verifies RFC 8391 signatures for SHA-256, n = 32, w in {4, 16}."""

    def __init__(self, h: int, d: int = 1, w: int = 16, idx_bytes: int | None = None) -> None:
        if w not in (4, 16) or d < 1 or h % d:
            raise TrustlabError(f"verifier parameters h={h}, d={d}, w={w} are not an XMSS parameter set")
        self.h, self.d, self.w, self.n = h, d, w, 32
        self.lg = w.bit_length() - 1
        self.len1 = -(-8 * self.n // self.lg)
        csum_max = self.len1 * (w - 1)
        self.len2 = 1
        while w ** self.len2 <= csum_max:  # smallest len2 with w^len2 > max checksum
            self.len2 += 1
        self.l = self.len1 + self.len2
        self.t = h // d
        self.idx_bytes = idx_bytes if idx_bytes is not None else (4 if d == 1 else -(-h // 8))

    @property
    def signature_bytes(self) -> int:
        return self.idx_bytes + self.n + self.d * (self.l + self.t) * self.n

    def _digits(self, m: bytes) -> list[int]:
        bits = int.from_bytes(m, "big")
        total = 8 * len(m)
        msg = [(bits >> (total - self.lg * (i + 1))) & (self.w - 1) for i in range(self.len1)]
        csum = sum(self.w - 1 - v for v in msg)
        shift = 8 - ((self.len2 * self.lg) % 8)
        nbytes = -(-self.len2 * self.lg // 8)
        c = (csum << shift)
        ctotal = 8 * nbytes
        return msg + [(c >> (ctotal - self.lg * (i + 1))) & (self.w - 1) for i in range(self.len2)]

    def _rand_hash(self, left: bytes, right: bytes, seed: bytes, base: tuple[int, ...]) -> bytes:
        key = _h(3, seed, _adrs(*base, 0))
        bm0 = _h(3, seed, _adrs(*base, 1))
        bm1 = _h(3, seed, _adrs(*base, 2))
        x = bytes(p ^ q for p, q in zip(left + right, bm0 + bm1))
        return _h(1, key, x)

    def _root_from_sig(self, idx: int, ots: list[bytes], auth: list[bytes], m: bytes, seed: bytes,
                       layer: int, tree: int) -> bytes:
        digits = self._digits(m)
        pk = []
        for i, (s, a) in enumerate(zip(ots, digits)):
            x = s
            for j in range(a, self.w - 1):
                k = _h(3, seed, _adrs(layer, tree, 0, idx, i, j, 0))
                bm = _h(3, seed, _adrs(layer, tree, 0, idx, i, j, 1))
                x = _h(0, k, bytes(p ^ q for p, q in zip(x, bm)))
            pk.append(x)
        height = 0
        while len(pk) > 1:  # L-tree
            nxt = [self._rand_hash(pk[2 * i], pk[2 * i + 1], seed, (layer, tree, 1, idx, height, i))
                   for i in range(len(pk) // 2)]
            if len(pk) % 2:
                nxt.append(pk[-1])
            pk = nxt
            height += 1
        node, pos = pk[0], idx
        for k, sib in enumerate(auth):
            base = (layer, tree, 2, 0, k, pos >> 1)
            node = self._rand_hash(node, sib, seed, base) if pos % 2 == 0 else self._rand_hash(sib, node, seed, base)
            pos >>= 1
        return node

    def verify(self, public_key: bytes, message: bytes, signature: bytes) -> bool:
        """True iff ``signature`` on ``message`` verifies under ``public_key`` (OID || root || SEED)."""
        if len(public_key) != 4 + 2 * self.n or len(signature) != self.signature_bytes:
            return False
        root, seed = public_key[4:4 + self.n], public_key[4 + self.n:]
        idx = int.from_bytes(signature[:self.idx_bytes], "big")
        if idx >= 1 << self.h:
            return False
        off = self.idx_bytes
        r = signature[off:off + self.n]
        off += self.n
        node = _h(2, r + root + idx.to_bytes(self.n, "big"), message)
        for layer in range(self.d):
            leaf = idx & ((1 << self.t) - 1)
            idx >>= self.t
            ots = [signature[off + i * self.n: off + (i + 1) * self.n] for i in range(self.l)]
            off += self.l * self.n
            auth = [signature[off + i * self.n: off + (i + 1) * self.n] for i in range(self.t)]
            off += self.t * self.n
            node = self._root_from_sig(leaf, ots, auth, node, seed, layer, idx)
        return node == root

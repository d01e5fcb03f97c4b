"""GCM (NIST SP 800-38D) on card primitives.

Key set-up (init): ``H = E_K(0)``. Per message with a 96-bit IV, ``m`` blocks
and no associated data: one encryption for ``E_K(J0)``, ``m`` counter
encryptions, and ``m + 1`` GF(2^128) multiplies (every ciphertext block and
the length block) -- Table I's "E = m + 1, Mul = m + 1". Other IV lengths
add GHASH multiplies over the IV. The multiply is one ``gf_multiply`` charge:
the paper's chips had no GF(2^128) hardware, so its price on MULTOS
(199 ms, Table II) is a software loop of shifts and XORs.
"""

from __future__ import annotations

from trustlab.apps.ae.common import BLOCK, AEMode, blocks, check_tag
from trustlab.errors import TrustlabError


class GCM(AEMode):
    name = "gcm"
    nonce_sizes = ()  # any non-empty IV; 12 bytes is the fast path

    def _check_tag_len(self, t: int) -> None:
        if t not in (4, 8, 12, 13, 14, 15, 16):
            raise TrustlabError(f"gcm: tag length must be 4, 8 or 12..16 bytes, got {t}")

    def _setup(self) -> None:
        self.h = self.crypto.encrypt(self.kc, bytes(BLOCK))

    def _ghash_blocks(self, y: bytes, data: bytes) -> bytes:
        c = self.crypto
        for x in blocks(data):
            y = c.gf_multiply(c.xor(y, x + bytes(BLOCK - len(x))), self.h)
        return y

    def _j0(self, iv: bytes) -> bytes:
        if not iv:
            raise TrustlabError("gcm: IV must not be empty")
        if len(iv) == 12:
            return iv + b"\x00\x00\x00\x01"
        y = self._ghash_blocks(bytes(BLOCK), iv)
        return self.crypto.gf_multiply(self.crypto.xor(y, (8 * len(iv)).to_bytes(BLOCK, "big")), self.h)

    def _gctr(self, icb: bytes, data: bytes) -> bytes:
        c = self.crypto
        out = bytearray()
        cb = icb
        for x in blocks(data):
            cb = c.inc(cb, 4)
            out += c.xor(x, c.encrypt(self.kc, cb))
        return bytes(out)

    def _tag(self, j0: bytes, aad: bytes, ctext: bytes) -> bytes:
        c = self.crypto
        y = self._ghash_blocks(bytes(BLOCK), aad)
        y = self._ghash_blocks(y, ctext)
        lengths = (8 * len(aad)).to_bytes(8, "big") + (8 * len(ctext)).to_bytes(8, "big")
        s = c.gf_multiply(c.xor(y, lengths), self.h)
        return c.xor(c.encrypt(self.kc, j0), s)[:self.tag_len]

    def encrypt(self, nonce: bytes, plaintext: bytes, aad: bytes = b"") -> tuple[bytes, bytes]:
        j0 = self._j0(nonce)
        ctext = self._gctr(j0, plaintext)
        return ctext, self._tag(j0, aad, ctext)

    def decrypt(self, nonce: bytes, ciphertext: bytes, tag: bytes, aad: bytes = b"") -> bytes:
        j0 = self._j0(nonce)
        check_tag(self._tag(j0, aad, ciphertext), tag)
        return self._gctr(j0, ciphertext)

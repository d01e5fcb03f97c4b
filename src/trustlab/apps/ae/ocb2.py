"""OCB2 (OCB 2.0, Rogaway 2004; ISO/IEC 19772:2009 mechanism 1) -- BROKEN, for comparison only.

Inoue and Minematsu (2018) and Iwata, Minematsu, Inoue, Poettering (Crypto
2019) showed OCB2 admits universal forgeries and plaintext recovery with a
single encryption query; ISO withdrew it. The paper we reproduce (Mayes 2017)
predates the attack and measured OCB2, so it is modelled here to compare
costs -- constructing it issues an :class:`InsecureModeWarning`, and
``tests/card/test_ae_ocb2.py`` reproduces the minimal forgery.

Algorithm (draft-krovetz-ocb-00, the OCB 2.0 specification)::

    Δ ← E_K(N)
    for i in 1..m-1:  Δ ← 2Δ;  C[i] ← E_K(M[i] ⊕ Δ) ⊕ Δ
    Δ ← 2Δ;  Pad ← E_K(len(M[m]) ⊕ Δ);  C[m] ← M[m] ⊕ Pad (truncated)
    Σ ← M[1] ⊕ … ⊕ M[m-1] ⊕ C[m]0* ⊕ Pad
    Δ ← 3Δ;  T ← E_K(Σ ⊕ Δ) ⊕ PMAC_K(A)  (PMAC only if A is not empty)

    PMAC_K(A):  Δ ← 3²·E_K(0);  Σ ← 0
                for i in 1..a-1:  Δ ← 2Δ;  Σ ← Σ ⊕ E_K(A[i] ⊕ Δ)
                Δ ← 2Δ;  full last block: Δ ← 3Δ, Σ ← Σ ⊕ A[a]
                         short last block: Δ ← 3²Δ, Σ ← Σ ⊕ A[a]10*
                return E_K(Σ ⊕ Δ)

Cost: ``m + 2`` encryptions per message and nothing key-dependent unless
there is associated data (PMAC's ``E_K(0)``). Table I of the paper counts one
"Init" encryption for OCB: that is OCB3's ``L_*``, which RFC 7253 computes
inside ENCRYPT (the pseudo code the paper implemented, §IV.A), so it is paid
per message. The OCB2 example code keeps key set-up apart from encryption;
any ``E_K(0)`` it derives is per key, not per message, and EMV sends no
associated data, so the message never needs it. The paper's own reading
agrees: on MULTOS "OCB2 is the quickest mode for message sizes beyond
32bytes" (§IV.B), which one more 3.3 ms encryption per message would move
past 128 bytes.
"""

from __future__ import annotations

import warnings

from trustlab.apps.ae.common import BLOCK, InsecureModeWarning, SymmetricPassMode, blocks, double, pad10

WARNING = ("OCB2 is broken (universal forgery: Inoue-Minematsu 2018, Iwata et al. 2019) and withdrawn "
           "from ISO/IEC 19772; it is modelled for cost comparison only -- use OCB3")


class OCB2(SymmetricPassMode):
    name = "ocb2"
    nonce_sizes = (16,)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        warnings.warn(WARNING, InsecureModeWarning, stacklevel=2)
        super().__init__(*args, **kwargs)

    def _triple(self, x: bytes) -> bytes:
        return self.crypto.xor(double(self.crypto, x), x)

    def _pmac(self, aad: bytes) -> bytes:
        c = self.crypto
        delta = self._triple(self._triple(c.encrypt(self.kc, bytes(BLOCK))))  # 3^2 · E_K(0)
        sigma = bytes(BLOCK)
        parts = blocks(aad)
        for a in parts[:-1]:
            delta = double(c, delta)
            sigma = c.xor(sigma, c.encrypt(self.kc, c.xor(a, delta)))
        delta = double(c, delta)
        last = parts[-1]
        if len(last) == BLOCK:
            delta = self._triple(delta)
            sigma = c.xor(sigma, last)
        else:
            delta = self._triple(self._triple(delta))
            sigma = c.xor(sigma, pad10(last))
        return c.encrypt(self.kc, c.xor(sigma, delta))

    def _crypt(self, nonce: bytes, data: bytes, aad: bytes, encrypting: bool) -> tuple[bytes, bytes]:
        c = self.crypto
        self._check_nonce(nonce)
        delta = c.encrypt(self.kc, nonce)
        parts = blocks(data) or [b""]
        checksum = bytes(BLOCK)
        out = bytearray()
        for x in parts[:-1]:
            delta = double(c, delta)
            if encrypting:
                y = c.xor(c.encrypt(self.kc, c.xor(x, delta)), delta)
                checksum = c.xor(checksum, x)
            else:
                y = c.xor(c.decrypt(self.kc, c.xor(x, delta)), delta)
                checksum = c.xor(checksum, y)
            out += y
        last = parts[-1]
        delta = double(c, delta)
        length = (8 * len(last)).to_bytes(BLOCK, "big")
        pad = c.encrypt(self.kc, c.xor(length, delta))
        y = c.xor(last, pad) if last else b""
        out += y
        ctext_last = y if encrypting else last
        checksum = c.xor(checksum, c.xor(ctext_last + bytes(BLOCK - len(ctext_last)), pad))
        delta = self._triple(delta)
        tag = c.encrypt(self.kc, c.xor(checksum, delta))
        if aad:
            tag = c.xor(tag, self._pmac(aad))
        return bytes(out), tag[:self.tag_len]

"""Encrypt-then-MAC as Mayes (2017) built it, and as ISO/IEC 19772 mechanism 5 specifies it.

Encryption: CTR mode (ISO/IEC 10116) under key ``K`` from a full-block
starting value ``S`` (the nonce), counter incremented modulo 2^128.
MAC: ISO/IEC 9797-1 MAC algorithm 1 (CBC-MAC) under a separate key ``K'``,
padding method 1 (zeros), initial transformation 1, output transformation 1
(none), truncated to the leftmost 64 bits (the paper's §III option list).

What the MAC covers. The paper's construction, mode ``etm`` (the default,
``mac_nonce=False``): "a MAC computation on the cipher text using a different
key (K')" (§III), Figure 3, and Table I's count of ``2m`` block encryptions
(``m`` counter + ``m`` CBC-MAC) all say the MAC covers ``C`` alone. ISO/IEC
19772 mechanism 5 MACs the starting variable and the ciphertext,
``MAC_K'(S || C)``: mode ``etm-iso`` (``mac_nonce=True``), ``2m + 1``. The
paper's reading is weaker: the nonce is not authenticated, so a changed nonce
yields a different plaintext that still verifies
(``tests/card/test_ae_crosscheck.py`` shows it). The study reproduces the
paper's tables with ``etm`` and shows ``etm-iso`` beside it.
No associated data: the mechanism as configured has none.
"""

from __future__ import annotations

from trustlab.apps.ae.common import BLOCK, AEMode, blocks, check_tag, zero_pad
from trustlab.devices.card.primitives import CardCrypto, KeyedCipher
from trustlab.errors import TrustlabError


def cbc_mac(crypto: CardCrypto, kc: KeyedCipher, data: bytes, out_len: int | None = None) -> bytes:
    """ISO/IEC 9797-1 MAC algorithm 1, padding method 1 (= FIPS 113 with DES)."""
    n = crypto.block_size
    y = bytes(n)
    for i, x in enumerate(blocks(zero_pad(data, n), n)):
        y = crypto.encrypt(kc, x if i == 0 else crypto.xor(y, x))
    return y[:out_len or n]


def ctr_crypt(crypto: CardCrypto, kc: KeyedCipher, start: bytes, data: bytes) -> bytes:
    """ISO/IEC 10116 CTR: key stream E(S), E(S+1), ... XORed onto the data."""
    out = bytearray()
    ctr = start
    for i, x in enumerate(blocks(data, crypto.block_size)):
        if i:
            ctr = crypto.inc(ctr, len(ctr))
        out += crypto.xor(x, crypto.encrypt(kc, ctr))
    return bytes(out)


class ETM(AEMode):
    name = "etm"
    nonce_sizes = (BLOCK,)
    default_tag_len = 8

    def __init__(self, crypto: CardCrypto, key: bytes, *, mac_key: bytes | None = None,
                 tag_len: int | None = None, mac_nonce: bool = False) -> None:
        self.mac_nonce = mac_nonce
        if mac_key is None:
            raise TrustlabError("etm: needs a separate MAC key (mac_key=...), ISO/IEC 19772 mechanism 5")
        if mac_key == key:
            raise TrustlabError("etm: the MAC key must differ from the encryption key")
        super().__init__(crypto, key, tag_len=tag_len)
        self.mac_kc = crypto.load_key(mac_key)

    def encrypt(self, nonce: bytes, plaintext: bytes, aad: bytes = b"") -> tuple[bytes, bytes]:
        if aad:
            raise TrustlabError("etm: mechanism 5 as configured has no associated data")
        self._check_nonce(nonce)
        ctext = ctr_crypt(self.crypto, self.kc, nonce, plaintext)
        return ctext, self._mac(nonce, ctext)

    def _mac(self, nonce: bytes, ctext: bytes) -> bytes:
        data = nonce + ctext if self.mac_nonce else ctext
        return cbc_mac(self.crypto, self.mac_kc, data, self.tag_len)

    def decrypt(self, nonce: bytes, ciphertext: bytes, tag: bytes, aad: bytes = b"") -> bytes:
        if aad:
            raise TrustlabError("etm: mechanism 5 as configured has no associated data")
        self._check_nonce(nonce)
        check_tag(self._mac(nonce, ciphertext), tag)
        return ctr_crypt(self.crypto, self.kc, nonce, ciphertext)

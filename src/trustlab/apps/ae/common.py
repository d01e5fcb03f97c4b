"""What every AE mode shares: the mode interface, doubling in GF(2^128), padding, tag checks.

Every operation on a block goes through :class:`~trustlab.devices.card.primitives.CardCrypto`
so that it is counted and charged; plain byte formatting (building a nonce
block, length fields) is CPU work the paper does not benchmark and stays free,
except where it is a whole-block copy into a working buffer.
"""

from __future__ import annotations

import hmac
from abc import ABC, abstractmethod

from trustlab.devices.card.primitives import CardCrypto
from trustlab.errors import TrustlabError

BLOCK = 16
R128 = bytes(15) + b"\x87"


class InvalidTag(Exception):
    """Authentication failed: the ciphertext, nonce, associated data or tag was altered."""


class InsecureModeWarning(UserWarning):
    """The mode has a published break; it is modelled for comparison only."""


def double(crypto: CardCrypto, x: bytes) -> bytes:
    """x·2 in GF(2^128) (OCB's ``double``/``two_times``): a shift and a conditional XOR."""
    shifted = crypto.shift_left(x, 1)
    if x[0] & 0x80:
        shifted = crypto.xor(shifted, R128)
    return shifted


def ntz(i: int) -> int:
    """Number of trailing zero bits of i > 0."""
    return (i & -i).bit_length() - 1


def pad10(partial: bytes) -> bytes:
    """partial || 1 || 0* to a full block (OCB's treatment of a final short block)."""
    return partial + b"\x80" + bytes(BLOCK - 1 - len(partial))


def zero_pad(data: bytes, block: int = BLOCK) -> bytes:
    """ISO/IEC 9797-1 padding method 1: zeros up to a block multiple (empty -> one block)."""
    if not data:
        return bytes(block)
    return data + bytes(-len(data) % block)


def blocks(data: bytes, block: int = BLOCK) -> list[bytes]:
    return [data[i:i + block] for i in range(0, len(data), block)]


def check_tag(expected: bytes, got: bytes) -> None:
    if len(expected) != len(got) or not hmac.compare_digest(expected, got):
        raise InvalidTag("authentication tag mismatch")


class AEMode(ABC):
    """An authenticated-encryption mode running on card primitives.

    Construction does the key-dependent set-up (counted as ``*_init`` ops),
    ``encrypt``/``decrypt`` do the per-message work. ``nonce_sizes`` says
    which nonce lengths the mode accepts.
    """

    name: str = ""
    nonce_sizes: tuple[int, ...] = ()
    default_tag_len: int = 16

    def __init__(self, crypto: CardCrypto, key: bytes, *, tag_len: int | None = None) -> None:
        if crypto.block_size != BLOCK:
            raise TrustlabError(
                f"{self.name}: needs a 16-byte block cipher; {crypto.cipher} has {crypto.block_size}-byte blocks "
                "(use aes128 or a 16-byte substitute such as tdes(m1)||m2)")
        self.crypto = crypto
        self.tag_len = self.default_tag_len if tag_len is None else tag_len
        self._check_tag_len(self.tag_len)
        self.kc = crypto.load_key(key)
        with crypto.phase("init"):
            self._setup()

    def _check_tag_len(self, t: int) -> None:
        if not 1 <= t <= 16:
            raise TrustlabError(f"{self.name}: tag length must be 1..16 bytes, got {t}")

    def _check_nonce(self, nonce: bytes) -> None:
        if self.nonce_sizes and len(nonce) not in self.nonce_sizes:
            raise TrustlabError(f"{self.name}: nonce must be {self._sizes()} bytes, got {len(nonce)}")

    def _sizes(self) -> str:
        s = self.nonce_sizes
        return f"{s[0]}..{s[-1]}" if len(s) > 2 else " or ".join(map(str, s))

    def _setup(self) -> None:  # key-dependent precomputation
        return None

    @abstractmethod
    def encrypt(self, nonce: bytes, plaintext: bytes, aad: bytes = b"") -> tuple[bytes, bytes]:
        """(ciphertext, tag)."""

    @abstractmethod
    def decrypt(self, nonce: bytes, ciphertext: bytes, tag: bytes, aad: bytes = b"") -> bytes:
        """The plaintext, or :class:`InvalidTag`."""


class SymmetricPassMode(AEMode):
    """A mode whose encryption and decryption are one pass that also yields the tag (OCB2, OCB3)."""

    @abstractmethod
    def _crypt(self, nonce: bytes, data: bytes, aad: bytes, encrypting: bool) -> tuple[bytes, bytes]:
        """(output, full-length tag) for one pass over ``data``."""

    def encrypt(self, nonce: bytes, plaintext: bytes, aad: bytes = b"") -> tuple[bytes, bytes]:
        return self._crypt(nonce, plaintext, aad, True)

    def decrypt(self, nonce: bytes, ciphertext: bytes, tag: bytes, aad: bytes = b"") -> bytes:
        plaintext, expected = self._crypt(nonce, ciphertext, aad, False)
        check_tag(expected, tag)
        return plaintext


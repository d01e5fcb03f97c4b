"""Signed wallet tokens and the directory of who may sign them.

A token is the paper's ``S = Sign(ctrID || ctrVal || currBalance)`` (Table I):
the issuer signs the first one, each merchant signs the next after a purchase.
The encoding is fixed-width and domain-separated so no token can be read as
another structure. Signatures are ECDSA P-256/SHA-256 from ``cryptography``:
the wallet's parties are ordinary hosts, not TPMs.

The :class:`Directory` is the trust anchor merchants share offline: the
issuer's public key plus merchant keys the issuer has certified. A token signed
by anybody else is rejected, whatever it says.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from trustlab.apps.counters.base import VerificationError

_TOKEN_TAG = b"trustlab-wallet-token-v1\x00"
_CERT_TAG = b"trustlab-wallet-merchant-v1\x00"
_ECDSA = ec.ECDSA(hashes.SHA256())


def _public_bytes(key: ec.EllipticCurvePublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint)


@dataclass(frozen=True)
class Token:
    """(counter ID, counter value, balance), signed by ``signer``."""

    counter: int
    value: int
    balance: int
    signer: str
    signature: bytes = b""

    def body(self) -> bytes:
        name = self.signer.encode()
        return _TOKEN_TAG + struct.pack(">IQqH", self.counter, self.value, self.balance, len(name)) + name


class Signer:
    """A party that signs tokens: the issuer or a merchant."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._key = ec.generate_private_key(ec.SECP256R1())
        self.public = self._key.public_key()

    def sign_token(self, counter: int, value: int, balance: int) -> Token:
        unsigned = Token(counter, value, balance, self.name)
        return Token(counter, value, balance, self.name, self._key.sign(unsigned.body(), _ECDSA))

    def sign_raw(self, data: bytes) -> bytes:
        return self._key.sign(data, _ECDSA)


class Directory:
    """The issuer's key and the merchants it certified."""

    def __init__(self, issuer: Signer) -> None:
        self.issuer_name = issuer.name
        self._issuer_public = issuer.public
        self._issuer = issuer
        self._keys: dict[str, ec.EllipticCurvePublicKey] = {issuer.name: issuer.public}
        self._certs: dict[str, bytes] = {}

    def certify(self, merchant: Signer) -> None:
        """The issuer vouches for a merchant's token-signing key."""
        cert = self._issuer.sign_raw(_CERT_TAG + merchant.name.encode() + b"\x00" + _public_bytes(merchant.public))
        self._certs[merchant.name] = cert
        self._keys[merchant.name] = merchant.public

    def check_token(self, token: Token) -> None:
        """Raise :class:`VerificationError` unless a trusted party signed exactly this token."""
        key = self._keys.get(token.signer)
        if key is None:
            raise VerificationError("unknown-signer", f"token signed by {token.signer!r}, not the issuer or a certified merchant")
        if token.signer != self.issuer_name:
            cert = self._certs[token.signer]
            try:
                self._issuer_public.verify(cert, _CERT_TAG + token.signer.encode() + b"\x00" + _public_bytes(key), _ECDSA)
            except InvalidSignature:
                raise VerificationError("bad-merchant-cert", token.signer) from None
        try:
            key.verify(token.signature, token.body(), _ECDSA)
        except InvalidSignature:
            raise VerificationError("bad-token-signature", f"token for counter {token.counter} does not verify") from None
        if token.balance < 0:
            raise VerificationError("negative-balance", f"token claims balance {token.balance}")

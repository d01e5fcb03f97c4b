"""FIPS 203/204 key objects from their seeds, through pyca/cryptography (OpenSSL).

A TPM 1.85 ML-DSA private key is its 32-byte seed xi and an ML-KEM private key
its 64-byte seed d||z (Part 2, Tables 206 and 210), so an object is fully
described by (parameter set, seed); the expanded keys are recomputed on load.
Signing goes through the message representative mu (FIPS 204, Algorithm 2/7
line 6): mu = SHAKE256(tr || M', 64) with tr = SHAKE256(pk, 64), so a
streamed message, an external mu (TPM2_SignDigest) and HashML-DSA's
M' = 1 || |ctx| || ctx || OID(PH) || PH(M) all end in one ``sign_mu``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import mldsa, mlkem

from trustlab.devices.tpm2.pqc.structures import HASH_OIDS, HASHES, TPM_ALG_HASH_MLDSA, TPM_ALG_MLKEM


@dataclass(frozen=True)
class ParameterSet:
    """One FIPS 203/204 parameter set as the TPM names it."""

    algorithm: str  # the cost model's name, e.g. "ML-DSA-65"
    variant: str  # the trace's key variant, e.g. "mldsa65"
    seed_size: int
    public_size: int
    output_size: int  # signature (ML-DSA) or ciphertext (ML-KEM)
    private_cls: Any
    public_cls: Any


MLDSA_SETS = {
    1: ParameterSet("ML-DSA-44", "mldsa44", 32, 1312, 2420, mldsa.MLDSA44PrivateKey, mldsa.MLDSA44PublicKey),
    2: ParameterSet("ML-DSA-65", "mldsa65", 32, 1952, 3309, mldsa.MLDSA65PrivateKey, mldsa.MLDSA65PublicKey),
    3: ParameterSet("ML-DSA-87", "mldsa87", 32, 2592, 4627, mldsa.MLDSA87PrivateKey, mldsa.MLDSA87PublicKey),
}
MLKEM_SETS = {
    2: ParameterSet("ML-KEM-768", "mlkem768", 64, 1184, 1088, mlkem.MLKEM768PrivateKey, mlkem.MLKEM768PublicKey),
    3: ParameterSet("ML-KEM-1024", "mlkem1024", 64, 1568, 1568, mlkem.MLKEM1024PrivateKey,
                    mlkem.MLKEM1024PublicKey),
}
# TPM_MLKEM_512 (1) is a valid 1.85 value, refused with TPM_RC_PARMS and left out of TPM_PT_ML_PARAMETER_SETS
# while no maintained binding offers it: pyca/cryptography leaves ML-KEM-512 out on purpose (its PR 14670 was
# reverted in 14671; issue 15333, 2026-07: "still intentionally excluded" until every backend has it) - 50.0.2,
# the pinned and newest release, has none, and the OpenSSL inside its wheel is not reachable otherwise; the
# system OpenSSL (3.0) has no ML-KEM; liboqs-python is a ctypes shim that clones and builds liboqs from GitHub
# on first import (no Debian package). A cryptography that adds the class is taken up here without a change.
if hasattr(mlkem, "MLKEM512PrivateKey"):
    MLKEM_SETS[1] = ParameterSet("ML-KEM-512", "mlkem512", 64, 800, 768, mlkem.MLKEM512PrivateKey,
                                 mlkem.MLKEM512PublicKey)
MLDSA_BY_NAME = {p.algorithm: k for k, p in MLDSA_SETS.items()}
MLKEM_BY_NAME = {p.algorithm: k for k, p in MLKEM_SETS.items()}


def parameter_set(kind: int, pset: int) -> ParameterSet | None:
    table = MLKEM_SETS if kind == TPM_ALG_MLKEM else MLDSA_SETS
    return table.get(pset)


def private_from_seed(ps: ParameterSet, seed: bytes) -> Any:
    return ps.private_cls.from_seed_bytes(seed)


def public_bytes(private: Any) -> bytes:
    return private.public_key().public_bytes_raw()


def tr(public: bytes) -> bytes:
    """tr = H(pk, 64) of FIPS 204."""
    return hashlib.shake_256(public).digest(64)


class MuStream:
    """mu = SHAKE256(tr || M') accumulated over a message that arrives in pieces."""

    def __init__(self, public: bytes, context: bytes, kind: int, hash_alg: int | None = None) -> None:
        self.kind = kind
        self.context = context
        self._tr = tr(public)
        if kind == TPM_ALG_HASH_MLDSA:
            self._ph = hashlib.new(HASHES[hash_alg])
            self._hash_alg = hash_alg
        else:
            self._shake = hashlib.shake_256(self._tr + bytes([0, len(context)]) + context)

    def update(self, data: bytes) -> None:
        (self._ph if self.kind == TPM_ALG_HASH_MLDSA else self._shake).update(data)

    def mu(self) -> bytes:
        if self.kind == TPM_ALG_HASH_MLDSA:
            return prehash_mu(self._tr, self.context, self._hash_alg, self._ph.digest())
        return self._shake.digest(64)


def prehash_mu(tr_: bytes, context: bytes, hash_alg: int, ph: bytes) -> bytes:
    """mu of HashML-DSA (FIPS 204, Algorithm 4) for a pre-hashed message PH(M)."""
    m_prime = bytes([1, len(context)]) + context + HASH_OIDS[hash_alg] + ph
    return hashlib.shake_256(tr_ + m_prime).digest(64)


def sign_mu(private: Any, mu: bytes) -> bytes:
    return private.sign_mu(mu)


def verify_mu(public: Any, signature: bytes, mu: bytes) -> bool:
    try:
        public.verify_mu(signature, mu)
        return True
    except (InvalidSignature, ValueError):
        return False



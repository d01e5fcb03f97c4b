"""The host's own cryptography for TPM 1.2: what a TSS and a verifier compute.

The engine's crypto goes through :class:`~.primitives.Primitives` (timed: it
charges the clock). The host's side of a protocol is real work too but costs
no modelled time: the client's authorization HMACs and parameter digests,
ADIP pads, the OAEP encryptions to the EK (TPM_TakeOwnership) or to a bind
key, and an application's signature checks. They all call these few
functions, looked up on this module at call time, so a benchmark can record
exactly the raw crypto the host needs by replacing them here
(``benchmarks/bench_speed.py``) instead of patching hashlib or OpenSSL.
"""

from __future__ import annotations

import hashlib

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa, utils

from trustlab.devices.tpm12.primitives import new_hmac, thread_entropy  # (new_hmac: OpenSSL's HMAC, as the engine's)

_sha1 = hashlib.sha1
# TPM_ES_RSAESOAEP_SHA1_MGF1 with the label "TCPA" (Part 1, 31.1.1); padding objects are immutable
OAEP_TCPA = padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=b"TCPA")
_PKCS1 = padding.PKCS1v15()
_PREHASHED = utils.Prehashed(hashes.SHA1())


def nonce(n: int = 20) -> bytes:
    """Fresh OS randomness for a host nonce (nonceOdd, TPM_OSAP's nonceOddOSAP, antireplay).

    Read 4 KiB at a time from the thread's buffer the engines draw from too
    (``primitives.thread_entropy``): one system call per nonce cost more than
    the rest of a session's bookkeeping.
    """
    return thread_entropy().take(n)


def sha1(*parts: bytes) -> bytes:
    """SHA-1 of the concatenated parts."""
    return _sha1(b"".join(parts)).digest()


def hmac_sha1(key: bytes, *parts: bytes) -> bytes:
    """HMAC-SHA1 of the concatenated parts (authorization trailers, OSAP shared secrets)."""
    return new_hmac(key, b"".join(parts), "sha1").digest()


def oaep_encrypt(public: rsa.RSAPublicKey, plaintext: bytes) -> bytes:
    """RSAES-OAEP-SHA1 with label TCPA, as a TPM 1.2 decrypts it."""
    return public.encrypt(plaintext, OAEP_TCPA)


def verify_sha1(public: rsa.RSAPublicKey, signature: bytes, digest: bytes) -> None:
    """Check a PKCS#1 v1.5 signature over a SHA-1 digest; raises ``InvalidSignature``."""
    public.verify(signature, digest, _PKCS1, _PREHASHED)


"""The transport-session log digest, shared by the TPM and its verifiers (Part 1, 24).

A logged transport session keeps ``transDigest``, starting at 20 zero bytes and
extended ``transDigest = SHA1(transDigest || entry)`` with a TPM_TRANSPORT_LOG_IN
(tag, input-parameter digest, pubKeyHash) before each wrapped command and a
TPM_TRANSPORT_LOG_OUT (tag, TPM_CURRENT_TICKS, output-parameter digest,
locality) after it. TPM_ReleaseTransportSigned signs
TPM_SIGN_INFO(tag, "TRAN", antiReplay, transDigest). A verifier who saw the
wrapped commands and responses recomputes the digest with :func:`replay` and
checks the signature with :func:`verify_release` — any dropped, inserted or
altered command changes the digest.

Pure functions: the hash is a parameter (the engine passes its timed SHA-1,
verifiers plain ``hashlib``).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Callable, Iterable

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa, utils

TAG_LOG_IN = 0x001F
TAG_LOG_OUT = 0x0020
TAG_SIGNINFO = 0x0005
ZERO = b"\x00" * 20

Hash = Callable[..., bytes]


def _sha1(*parts: bytes) -> bytes:
    return hashlib.sha1(b"".join(parts)).digest()


def log_in(param_digest: bytes, pubkey_hash: bytes = ZERO) -> bytes:
    return struct.pack(">H", TAG_LOG_IN) + param_digest + pubkey_hash


def log_out(ticks: bytes, param_digest: bytes, locality: int = 0) -> bytes:
    return struct.pack(">H", TAG_LOG_OUT) + ticks + param_digest + struct.pack(">I", locality)


def current_ticks(ticks_us: int, tick_nonce: bytes) -> bytes:
    """TPM_CURRENT_TICKS as it appears in the log (tag, UINT64 ticks, rate, nonce)."""
    return struct.pack(">HQH", 0x0014, ticks_us, 1) + tick_nonce


def extend(digest: bytes, entry: bytes, sha1: Hash = _sha1) -> bytes:
    return sha1(digest, entry)


@dataclass(frozen=True)
class LogEntry:
    """One wrapped command as the host saw it: digests and the TPM's tick count."""

    in_digest: bytes
    out_digest: bytes
    ticks_us: int
    locality: int = 0
    pubkey_hash: bytes = ZERO


def replay(entries: Iterable[LogEntry], tick_nonce: bytes) -> bytes:
    """Recompute transDigest from the observed log (establish entry first)."""
    d = ZERO
    for e in entries:
        d = extend(d, log_in(e.in_digest, e.pubkey_hash))
        d = extend(d, log_out(current_ticks(e.ticks_us, tick_nonce), e.out_digest, e.locality))
    return d


def release_input(d: bytes, release_in_digest: bytes) -> bytes:
    """The LOG_IN the release command itself adds before signing."""
    return extend(d, log_in(release_in_digest))


def sign_info(anti_replay: bytes, trans_digest: bytes) -> bytes:
    return (struct.pack(">H", TAG_SIGNINFO) + b"TRAN" + anti_replay
            + struct.pack(">I", len(trans_digest)) + trans_digest)


def verify_release(public: rsa.RSAPublicKey, anti_replay: bytes, trans_digest: bytes,
                   signature: bytes) -> bool:
    """True iff ``signature`` is the TPM's signature over this log digest and nonce."""
    digest = _sha1(sign_info(anti_replay, trans_digest))
    try:
        public.verify(signature, digest, padding.PKCS1v15(), utils.Prehashed(hashes.SHA1()))
        return True
    except InvalidSignature:
        return False

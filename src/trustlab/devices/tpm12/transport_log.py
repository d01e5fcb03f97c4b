"""The transport-session log digest, shared by the TPM and its verifiers (Part 1, 24; Part 3, 24).

A logged transport session keeps ``transDigest``, starting at 20 zero bytes and
extended ``transDigest = SHA1(transDigest || entry)``:

* TPM_EstablishTransport: TPM_TRANSPORT_LOG_IN (tag 0x0010, SHA1(ordinal ||
  transPublic || secretSize || secret), pubKeyHash 0) and TPM_TRANSPORT_LOG_OUT
  (tag 0x0011, TPM_CURRENT_TICKS, SHA1(returnCode || ordinal || locality ||
  currentTicks || transNonceEven), locality);
* each TPM_ExecuteTransport: LOG_IN (H1 = SHA1(ORDw || DATAw), pubKeyHash =
  SHA1 of the SHA1s of the TPM_STORE_PUBKEYs of the wrapped command's keys, or
  0) and LOG_OUT (ticks, H2 = SHA1(RCw || ORDw || DATAw out), locality);
* TPM_ReleaseTransportSigned: one LOG_OUT (ticks, SHA1(ordinal ||
  antiReplay), locality), then the key signs TPM_SIGN_INFO(tag, "TRAN",
  antiReplay, transDigest).

A verifier who saw the wrapped commands and responses recomputes the digest
with :func:`replay` and :func:`release_output` and checks the signature with
:func:`verify_release` - any dropped, inserted or altered command changes the
digest.

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

# Session-opening commands carry no DATAw area: their parameters and results count as handles,
# so a wrapped one is logged as H1 = SHA1(ORDw), H2 = SHA1(RCw || ORDw) (Part 3, 24.2 step 4.c;
# libtpms). TPM_OIAP, TPM_OSAP, TPM_DSAP.
NO_DATA_ORDINALS = frozenset({0x0A, 0x0B, 0x11})
TAG_LOG_IN = 0x0010  # TPM_TAG_TRANSPORT_LOG_IN (Part 2, 3.2)
TAG_LOG_OUT = 0x0011  # TPM_TAG_TRANSPORT_LOG_OUT
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


def release_output(d: bytes, ticks: bytes, release_in_digest: bytes, locality: int = 0,
                   sha1: Hash = _sha1) -> bytes:
    """The one LOG_OUT TPM_ReleaseTransportSigned adds before signing (Part 3, 24.3 step 6)."""
    return extend(d, log_out(ticks, release_in_digest, locality), sha1)


def store_pubkey_digest(modulus: bytes) -> bytes:
    """SHA1 of a TPM_STORE_PUBKEY (keyLength, key): one key's share of a LOG_IN pubKeyHash."""
    return _sha1(struct.pack(">I", len(modulus)), modulus)


def sign_info(anti_replay: bytes, data: bytes, fixed: bytes = b"TRAN") -> bytes:
    """TPM_SIGN_INFO (Part 2, 8.1): tag, 4-byte label ("TRAN", "TSTP" ...), replay nonce, sized data."""
    return struct.pack(">H", TAG_SIGNINFO) + fixed + anti_replay + struct.pack(">I", len(data)) + data


def verify_release(public: rsa.RSAPublicKey, anti_replay: bytes, trans_digest: bytes,
                   signature: bytes) -> bool:
    """True iff ``signature`` is the TPM's signature over this log digest and nonce."""
    digest = _sha1(sign_info(anti_replay, trans_digest))
    try:
        public.verify(signature, digest, padding.PKCS1v15(), utils.Prehashed(hashes.SHA1()))
        return True
    except InvalidSignature:
        return False

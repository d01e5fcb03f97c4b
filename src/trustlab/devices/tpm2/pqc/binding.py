"""Private keys and saved contexts bound to this TPM instance, with no hierarchy's authorization.

The proxy keeps no secret that outlives it. What it needs is made *inside the
backend TPM*:

- A PQC *primary* key's seed is HKDF(secret of its hierarchy, template digest,
  sensitive data), the secret being a deterministic keyed-hash primary of that
  hierarchy (reserved template :data:`DERIVATION_TEMPLATE`) HMACing a label:
  the same seed and template give the same key, as Part 1 requires. The
  client's authorization of the hierarchy is replayed (TPM2_CreatePrimary
  needs it anyway).
- An *ordinary* key (``TPM2_Create``) gets a seed from swtpm's RNG; its
  TPM2B_PRIVATE holds a random 32-byte key K *sealed by swtpm under the
  client's own parent* (a keyed-hash data object, :func:`wrap_under_parent`)
  and the sensitive area under AES-256-GCM(K) with the object's and the
  parent's Names as associated data. Loading it needs the parent loaded and
  authorized, as libtpms' TPM2_Load does, and no hierarchy's authorization;
  the blob lives and dies with its parent (a new SPS after TPM2_Clear, another
  TPM instance: swtpm's own integrity check fails, TPM_RC_INTEGRITY).
- A saved *context* is sealed under HKDF(reset secret, hierarchy proof):
  the reset secret is a keyed-hash primary of the *null* hierarchy (whose
  authorization is always empty and which is never disabled), made directly on
  the TPM past the resource manager; it changes when libtpms' nullSeed does, at
  every TPM Reset (libtpms binds contexts to ``totalResetCount``). The
  hierarchy proofs are the extension's (:mod:`.state`), renewed on the events
  libtpms renews phProof/ehProof/shProof/nullProof on.

The reserved templates are refused to clients (:func:`is_reserved_template`),
so no client can recreate the derivation key or load a wrapping object through
the proxy; a client with direct access to swtpm could, as it could read its state.
"""

from __future__ import annotations

import hashlib
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from trustlab.devices.tpm2.commands import TPM_RC_FAILURE
from trustlab.devices.tpm2.extensions import (
    TPM_RC_INTEGRITY,
    TPM_RC_SIZE,
    Reader,
    TpmError,
    at_param,
)
from trustlab.devices.tpm2.pqc.structures import (
    FIXED_PARENT,
    FIXED_TPM,
    NO_DA,
    SENSITIVE_DATA_ORIGIN,
    SIGN,
    TPM_ALG_HMAC,
    TPM_ALG_KEYEDHASH,
    TPM_ALG_SHA256,
    TPM_RH_NULL,
    USER_WITH_AUTH,
    frame,
    password,
    response_code,
    tpm2b,
    u16,
    u32,
)

DERIVATION_UNIQUE = hashlib.sha256(b"trustlab TPM 1.85 PQC extension: key derivation v1").digest()
DERIVATION_TEMPLATE = (u16(TPM_ALG_KEYEDHASH) + u16(TPM_ALG_SHA256)
                       + u32(FIXED_TPM | FIXED_PARENT | SENSITIVE_DATA_ORIGIN | USER_WITH_AUTH | NO_DA | SIGN)
                       + tpm2b(b"") + u16(TPM_ALG_HMAC) + u16(TPM_ALG_SHA256) + tpm2b(DERIVATION_UNIQUE))
BLOB_MAGIC = b"TLPQ\x02"
PASSWORD_EMPTY = password()
WRAP_POLICY = hashlib.sha256(b"trustlab TPM 1.85 PQC extension: private-key wrapping v2").digest()
"""authPolicy of the data object that seals a key's K under its parent: marks it reserved (it is never
satisfied; the proxy unseals with the empty password, userWithAuth SET)."""
WRAP_PREFIX = (u16(TPM_ALG_KEYEDHASH) + u16(TPM_ALG_SHA256)
               + u32(FIXED_TPM | FIXED_PARENT | USER_WITH_AUTH | NO_DA) + tpm2b(WRAP_POLICY) + u16(0x0010))
"""TPMT_PUBLIC of the wrapping data object up to its unique field (keyed-hash, scheme TPM_ALG_NULL)."""
KEY_SIZE = 32


def is_reserved_template(public_area: bytes) -> bool:
    """True for the derivation template's or a wrapping object's TPMT_PUBLIC (refused to clients: a client
    that loaded a wrapping object under the parent it may use could unseal a PQC key's K)."""
    return public_area == DERIVATION_TEMPLATE or public_area.startswith(WRAP_PREFIX)


def hierarchy_secret(transact, hierarchy: int, auth_area: bytes = PASSWORD_EMPTY,
                     label: bytes = b"primary") -> bytes:
    """32 bytes only this TPM instance's ``hierarchy`` seed yields, for ``label``.

    ``auth_area`` authorizes the hierarchy (the client's, replayed: swtpm
    checks it); by default an empty password.
    """
    response = _answer(transact, frame(0x131, [hierarchy], tpm2b(tpm2b(b"") + tpm2b(b""))
                                       + tpm2b(DERIVATION_TEMPLATE) + tpm2b(b"") + u32(0), [auth_area]))
    handle = _read(response.u32)
    try:
        response = _answer(transact, frame(0x155, [handle], tpm2b(b"trustlab-pqc:" + label) + u16(TPM_ALG_SHA256),
                                           [PASSWORD_EMPTY]))
        _read(response.u32)  # parameterSize
        secret = _read(response.tpm2b)
        if len(secret) != 32:
            raise TpmError(TPM_RC_FAILURE, "backend HMAC of the wrong size")
        return secret
    finally:
        transact(frame(0x165, [], u32(handle)))


def _answer(transact, command: bytes) -> Reader:
    """The backend's answer after the header; its error code is passed on."""
    response = transact(command)
    rc = response_code(response)
    if rc != 0:
        raise TpmError(rc, "backend refused a derivation step")
    return Reader(response, 10)


def _read(field):
    """One field of a backend answer; a short answer is the backend's failure, not the client's error."""
    try:
        return field()
    except TpmError:
        raise TpmError(TPM_RC_FAILURE, "backend answer too short") from None


def reset_secret(transact) -> bytes:
    """32 bytes of this TPM instance that change at every TPM Reset (libtpms' nullSeed) and need no
    authorization: a null-hierarchy derivation. ``transact`` should reach the TPM past the resource
    manager (the temporary primary must take no slot of the client's space)."""
    return hierarchy_secret(transact, TPM_RH_NULL, label=b"context")


def hkdf(secret: bytes, info: bytes, length: int) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info).derive(secret)


def primary_seed(secret: bytes, template: bytes, sensitive_data: bytes, length: int) -> bytes:
    """A primary key's seed: a function of hierarchy seed, template and sensitive data only."""
    return hkdf(secret, b"primary" + hashlib.sha256(template).digest() + hashlib.sha256(sensitive_data).digest(),
                length)


def _seal(secret: bytes, purpose: bytes, associated: bytes, plain: bytes) -> bytes:
    """nonce || AES-256-GCM(HKDF(secret, purpose), plain, associated)."""
    nonce = os.urandom(12)
    key = hkdf(secret, b"storage" + purpose, 32)
    return nonce + AESGCM(key).encrypt(nonce, plain, associated)


def _unseal(secret: bytes, purpose: bytes, associated: bytes, blob: bytes, param: int) -> bytes:
    """The plaintext of :func:`_seal`; a short blob is TPM_RC_SIZE, any mismatch TPM_RC_INTEGRITY."""
    if len(blob) < 12 + 16:
        raise TpmError(at_param(TPM_RC_SIZE, param), "not a blob of this lab")
    key = hkdf(secret, b"storage" + purpose, 32)
    try:
        return AESGCM(key).decrypt(blob[:12], blob[12:], associated)
    except InvalidTag:
        raise TpmError(at_param(TPM_RC_INTEGRITY, param), "blob fails its integrity check") from None


def read_public(transact, handle: int) -> tuple[int, bytes, bytes, bytes]:
    """(rc, TPMT_PUBLIC, name, qualifiedName) of a backend object."""
    response = transact(frame(0x173, [handle], b""))
    rc = response_code(response)
    if rc != 0:
        return rc, b"", b"", b""
    r = Reader(response, 10)
    return 0, _read(r.tpm2b), _read(r.tpm2b), _read(r.tpm2b)


def seal_context(secret: bytes, header: bytes, body: bytes) -> bytes:
    """A saved context's blob: ``body`` sealed under ``secret`` (:func:`context_secret`), bound to the
    context ``header``."""
    return _seal(secret, b"context", header, body)


def unseal_context(secret: bytes, header: bytes, blob: bytes) -> bytes:
    """The body of a saved context; another instance's, or a changed header, is TPM_RC_INTEGRITY."""
    return _unseal(secret, b"context", header, blob, 1)


def context_secret(reset: bytes, proof: bytes, clear_epoch: bytes = b"") -> bytes:
    """What a saved context of a hierarchy is sealed under: the reset secret, the hierarchy's proof and,
    for an stClear object, the clear epoch (libtpms adds clearCount for savedHandle 0x80000002)."""
    return hkdf(reset + proof + clear_epoch, b"trustlab-pqc context", 32)


# ---- ordinary keys: K sealed by swtpm under the client's parent -----------------------------


def wrap_under_parent(transact, parent: int, auth_area: bytes) -> tuple[bytes, bytes, bytes]:
    """(K, wrapping private, wrapping public): a fresh K sealed by swtpm under ``parent`` with the client's
    authorization (swtpm checks the password and that the parent is a storage key)."""
    key = os.urandom(KEY_SIZE)
    response = _answer(transact, frame(0x153, [parent], tpm2b(tpm2b(b"") + tpm2b(key)) + tpm2b(WRAP_PREFIX
                                                                                              + tpm2b(b""))
                                       + tpm2b(b"") + u32(0), [auth_area]))
    _read(response.u32)  # parameterSize
    return key, _read(response.tpm2b), _read(response.tpm2b)


def unwrap_under_parent(transact, parent: int, auth_area: bytes, private: bytes, public: bytes) -> bytes:
    """K of a wrapping object: TPM2_Load under ``parent`` (the client's authorization), TPM2_Unseal,
    TPM2_FlushContext. A blob that is not the parent's fails swtpm's integrity check: TPM_RC_INTEGRITY."""
    if not public.startswith(WRAP_PREFIX):
        raise TpmError(at_param(TPM_RC_INTEGRITY, 1), "private blob fails its integrity check")
    response = transact(frame(0x157, [parent], tpm2b(private) + tpm2b(public), [auth_area]))
    rc = response_code(response)
    if rc & 0xC0 == 0xC0:  # a parameter of the wrapping object: the client's inPrivate is not this parent's
        raise TpmError(at_param(TPM_RC_INTEGRITY, 1), "private blob fails its integrity check")
    if rc != 0:
        raise TpmError(rc, "backend refused to load the key's wrapping")
    handle = _read(Reader(response, 10).u32)
    try:
        r = _answer(transact, frame(0x15E, [handle], b"", [PASSWORD_EMPTY]))
        _read(r.u32)
        key = _read(r.tpm2b)
    finally:
        transact(frame(0x165, [], u32(handle)))
    if len(key) != KEY_SIZE:
        raise TpmError(TPM_RC_FAILURE, "backend unsealed a key of the wrong size")
    return key


def seal_private(transact, parent: int, auth_area: bytes, parent_name: bytes, object_name: bytes,
                 sensitive: bytes) -> bytes:
    """TPM2B_PRIVATE contents for ``sensitive`` (a marshalled TPMT_SENSITIVE) under ``parent``."""
    key, private, public = wrap_under_parent(transact, parent, auth_area)
    return BLOB_MAGIC + tpm2b(private) + tpm2b(public) + _seal(key, parent_name, object_name, sensitive)


def unseal_private(transact, parent: int, auth_area: bytes, parent_name: bytes, object_name: bytes,
                   blob: bytes) -> bytes:
    """The TPMT_SENSITIVE of ``blob``; another parent, instance or public area is TPM_RC_INTEGRITY."""
    if not blob.startswith(BLOB_MAGIC):
        raise TpmError(at_param(TPM_RC_SIZE, 1), "not a private blob of this lab")
    r = Reader(blob, len(BLOB_MAGIC))
    try:
        private, public = r.tpm2b(), r.tpm2b()
    except TpmError:
        raise TpmError(at_param(TPM_RC_SIZE, 1), "not a private blob of this lab") from None
    key = unwrap_under_parent(transact, parent, auth_area, private, public)
    return _unseal(key, parent_name, object_name, blob[r.pos:], 1)

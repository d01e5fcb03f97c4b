"""Private keys bound to this TPM instance, by the backend TPM's own hierarchy seeds.

The proxy holds no secret of its own. Every key it needs is *derived inside
the backend TPM* from a hierarchy seed, the way a TPM derives a primary key:

1. ``TPM2_CreatePrimary`` in the hierarchy of a deterministic keyed-hash
   (HMAC-SHA256) key with a reserved template (:data:`DERIVATION_UNIQUE`) -
   the same seed and template always give the same key, so it persists with
   swtpm's ``--state`` and differs on every other TPM instance;
2. ``TPM2_HMAC`` with it over a purpose label gives a 32-byte secret;
3. ``TPM2_FlushContext``.

A PQC *primary* key's seed is HKDF(secret of its hierarchy, template digest,
sensitive data): the same template gives the same key, as Part 1 requires.
An *ordinary* key (``TPM2_Create``) gets a seed from swtpm's RNG, returned as a
TPM2B_PRIVATE sealed with AES-256-GCM under HKDF(storage secret, parent's
Name), with the object's Name as associated data: it loads only under the
same parent on the same TPM instance, with its own public area, and a blob
from another instance fails its integrity check (TPM_RC_INTEGRITY).

The reserved derivation template is refused to clients (see
:func:`is_reserved_template`), so no client can recreate the key through the
proxy; a client with direct access to swtpm could, as it could read its state.
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
    TPM_RH_OWNER,
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
BLOB_MAGIC = b"TLPQ\x01"
PASSWORD_EMPTY = password()


def is_reserved_template(public_area: bytes) -> bool:
    """True for the derivation template's TPMT_PUBLIC (refused to clients)."""
    return public_area == DERIVATION_TEMPLATE


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


def storage_secret(transact) -> bytes:
    """The secret that wraps ordinary (``TPM2_Create``) keys: owner hierarchy, empty owner password."""
    return hierarchy_secret(transact, TPM_RH_OWNER, label=b"storage")


def hkdf(secret: bytes, info: bytes, length: int) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info).derive(secret)


def primary_seed(secret: bytes, template: bytes, sensitive_data: bytes, length: int) -> bytes:
    """A primary key's seed: a function of hierarchy seed, template and sensitive data only."""
    return hkdf(secret, b"primary" + hashlib.sha256(template).digest() + hashlib.sha256(sensitive_data).digest(),
                length)


def seal(secret: bytes, parent_name: bytes, object_name: bytes, sensitive: bytes) -> bytes:
    """TPM2B_PRIVATE contents for ``sensitive`` (a marshalled TPMT_SENSITIVE)."""
    nonce = os.urandom(12)
    key = hkdf(secret, b"storage" + parent_name, 32)
    return BLOB_MAGIC + nonce + AESGCM(key).encrypt(nonce, sensitive, object_name)


def unseal(secret: bytes, parent_name: bytes, object_name: bytes, blob: bytes, param: int) -> bytes:
    """The TPMT_SENSITIVE in ``blob``; any mismatch (instance, parent, public area) is TPM_RC_INTEGRITY."""
    if len(blob) < len(BLOB_MAGIC) + 12 + 16 or not blob.startswith(BLOB_MAGIC):
        raise TpmError(at_param(TPM_RC_SIZE, param), "not a private blob of this lab")
    nonce = blob[len(BLOB_MAGIC):len(BLOB_MAGIC) + 12]
    key = hkdf(secret, b"storage" + parent_name, 32)
    try:
        return AESGCM(key).decrypt(nonce, blob[len(BLOB_MAGIC) + 12:], object_name)
    except InvalidTag:
        raise TpmError(at_param(TPM_RC_INTEGRITY, param), "private blob fails its integrity check") from None


def read_public(transact, handle: int) -> tuple[int, bytes, bytes, bytes]:
    """(rc, TPMT_PUBLIC, name, qualifiedName) of a backend object."""
    response = transact(frame(0x173, [handle], b""))
    rc = response_code(response)
    if rc != 0:
        return rc, b"", b"", b""
    r = Reader(response, 10)
    return 0, _read(r.tpm2b), _read(r.tpm2b), _read(r.tpm2b)


def check_parent_auth(transact, parent: int, auth_area: bytes) -> int:
    """Replay the client's authorization of ``parent`` on a harmless USER-role command.

    TPM2_Create of a one-byte sealed object under the parent: swtpm checks the
    password (and the parent's type) itself; the result is discarded.
    """
    template = (u16(TPM_ALG_KEYEDHASH) + u16(TPM_ALG_SHA256) + u32(FIXED_TPM | FIXED_PARENT | USER_WITH_AUTH | NO_DA)
                + tpm2b(b"") + u16(0x0010) + tpm2b(b""))
    return response_code(transact(frame(0x153, [parent], tpm2b(tpm2b(b"") + tpm2b(b"\x00")) + tpm2b(template)
                                        + tpm2b(b"") + u32(0), [auth_area])))


def seal_context(secret: bytes, header: bytes, body: bytes) -> bytes:
    """A saved context's blob: ``body`` sealed under the storage secret, bound to the context ``header``."""
    return seal(secret, b"context", header, body)


def unseal_context(secret: bytes, header: bytes, blob: bytes) -> bytes:
    """The body of a saved context; another instance's, or a changed header, is TPM_RC_INTEGRITY."""
    return unseal(secret, b"context", header, blob, 1)

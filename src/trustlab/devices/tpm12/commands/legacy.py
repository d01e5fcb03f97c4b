"""TPM 1.1 commands a TPM 1.2 still answers: the DIR, TPM_EvictKey and TPM_CertifyKey.

TPM Main 1.2 Part 3 keeps them (DIR in 25, EvictKey in 28.4, CertifyKey in
12.1); IBM's TPM 1.2 utilities (``dirread``, ``dirwrite``, ``evictkey``,
``certifykey``) send them. Each follows libtpms' ``TPM_Process_*`` step for
step: the same checks in the same order, the same return codes.
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import LoadedKey, modulus_of
from trustlab.devices.tpm12.owner_evict import is_owner_evict
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Writer

AUTH_DIR = "authDIR"  # PersistentState.extra key: TPM_PERMANENT_DATA -> authDIR[0], hex
DIGEST_ZERO = bytes(20)


def auth_dir(tpm) -> bytes:
    """The one DIR a TPM 1.2 has (libtpms: TPM_PERMANENT_DATA -> authDIR), all zeros until written."""
    value = tpm.state.extra.get(AUTH_DIR)
    return bytes.fromhex(value) if value else DIGEST_ZERO


def _dir_index(index: int) -> None:
    if index != 0:  # Part 3, 25.1/25.2 step 1: "only one TPM_PERMANENT_DATA -> authDIR"
        raise TpmError("TPM_BADINDEX", f"DIR index {index} (this TPM has DIR 0 only)")


@tpm_command("TPM_DirWriteAuth", auth=(1,))
def dir_write_auth(tpm, req: Request) -> Response:
    """Write DIR 0 with owner authorization (Part 3, 25.1)."""
    index, contents = req.params.u32(), req.params.raw(20)
    req.params.end()
    req.auth.check(0, tpm.owner_auth(), (C.TPM_ET_OWNER, C.TPM_KH_OWNER))
    _dir_index(index)
    tpm.state.extra[AUTH_DIR] = contents.hex()
    tpm.mark_dirty()
    return Response()


@tpm_command("TPM_DirRead")
def dir_read(tpm, req: Request) -> Response:
    """Read DIR 0 (Part 3, 25.2): no authorization."""
    index = req.params.u32()
    req.params.end()
    _dir_index(index)
    return Response(params=auth_dir(tpm))


@tpm_command("TPM_EvictKey", handles=1)
def evict_key(tpm, req: Request) -> Response:
    """Flush a loaded key (Part 3, 28.4, deprecated for TPM_FlushSpecific): libtpms'
    TPM_Process_EvictKey answers TPM_INVALID_KEYHANDLE for a handle that is not a loaded key
    (the SRK and EK included)."""
    req.params.end()
    handle = req.handles[0]
    if handle not in tpm.keys:
        raise TpmError("TPM_INVALID_KEYHANDLE", f"no loaded key {handle:#010x}")
    if is_owner_evict(tpm, handle):  # libtpms TPM_Process_EvictKey
        raise TpmError("TPM_KEY_OWNER_CONTROL", f"key {handle:#010x} is owner-evict")
    del tpm.keys[handle]
    return Response()


def certify_info(key: LoadedKey, nonce: bytes, pubkey_digest: bytes) -> bytes:
    """TPM_CERTIFY_INFO (Part 2, 11.1) of a key without PCR binding: pcrInfoSize 0."""
    b = key.blob
    return (Writer().raw(C.STRUCT_VER).u16(b.usage).u32(b.flags).u8(b.auth_usage).raw(b.parms.marshal())
            .raw(pubkey_digest).raw(nonce).u8(0).u32(0).bytes())


@tpm_command("TPM_CertifyKey", handles=2, auth=(0, 1, 2))
def certify_key(tpm, req: Request) -> Response:
    """Certify ``keyHandle`` with ``certHandle`` (Part 3, 12.1), as libtpms' TPM_Process_CertifyKey.

    Sessions, unlike TPM_CertifyKey2's: with two, #1 authorizes the certifying
    key and #2 the key being certified (TPM_AUTH2FAIL); with one, it
    authorizes the key being certified and the certifying key must be
    TPM_AUTH_NEVER; with none, both must allow it.
    """
    cert_h, key_h = req.handles
    nonce = req.params.raw(20)
    req.params.end()
    cert, key = tpm.key(cert_h), tpm.key(key_h)
    if cert.blob.parms.sig_scheme not in (C.TPM_SS_RSASSAPKCS1v15_SHA1, C.TPM_SS_RSASSAPKCS1v15_INFO):
        raise TpmError("TPM_BAD_KEY_PROPERTY", f"certifying key's signature scheme {cert.blob.parms.sig_scheme:#x}")
    if len(req.auth) == 2:
        req.auth.check(0, cert.usage_auth, (C.TPM_ET_KEYHANDLE, cert_h))
    elif cert.blob.auth_usage != C.TPM_AUTH_NEVER:
        raise TpmError("TPM_AUTHFAIL", "the certifying key needs authorization")
    if len(req.auth):
        req.auth.check(len(req.auth) - 1, key.usage_auth, (C.TPM_ET_KEYHANDLE, key_h))
    elif key.blob.auth_usage == C.TPM_AUTH_ALWAYS:
        raise TpmError("TPM_AUTHFAIL", "the key to certify needs authorization")
    if key.blob.is_cmk:  # step 3: payload must be TPM_PT_ASYM
        raise TpmError("TPM_INVALID_KEYUSAGE", "a certified migratable key is certified by TPM_CertifyKey2")
    if cert.blob.usage == C.TPM_KEY_IDENTITY and key.blob.migratable:
        raise TpmError("TPM_MIGRATEFAIL", "an identity key certifies non-migratable keys only")
    if cert.blob.usage not in (C.TPM_KEY_SIGNING, C.TPM_KEY_IDENTITY, C.TPM_KEY_LEGACY):
        raise TpmError("TPM_INVALID_KEYUSAGE", f"certifying key usage {cert.blob.usage:#x}")
    if key.blob.usage not in (C.TPM_KEY_SIGNING, C.TPM_KEY_STORAGE, C.TPM_KEY_IDENTITY, C.TPM_KEY_BIND,
                              C.TPM_KEY_LEGACY):
        raise TpmError("TPM_INVALID_KEYUSAGE", f"key usage {key.blob.usage:#x} cannot be certified")
    if key.blob.pcr_info:
        raise TpmError("TPM_BAD_PARAMETER", "certifying a PCR-bound key with TPM_CertifyKey is not supported "
                       "by trustlab (use TPM_CertifyKey2)")
    modulus = key.blob.pub if key.private is None else modulus_of(key.private)
    info = certify_info(key, nonce, tpm.crypto.sha1(modulus))  # step 11: SHA-1 of the modulus alone
    sig = tpm.crypto.rsa_sign(cert.private, tpm.crypto.sha1(info))
    return Response(params=info + Writer().sized(sig).bytes())

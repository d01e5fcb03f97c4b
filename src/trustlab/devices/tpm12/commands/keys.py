"""Key creation and loading: TPM_CreateWrapKey, TPM_LoadKey2, TPM_MakeIdentity, TPM_CertifyKey2.

Wrapping (Part 1, 11): ``pubDataDigest = SHA1(public part of TPM_KEY12)``
(1 block for the 51-byte HMAC key, 5 for an RSA key) goes into the
TPM_STORE_ASYMKEY with the secrets and the private key; the whole is
OAEP-encrypted under the parent (``rsa_enc`` + 17 blocks). Loading reverses
it (``rsa_dec`` + 17 blocks) and re-checks pubDataDigest. TPM_LoadKey2 on the
HMAC CMK of the oracle study is thus 6 (parameter digest over 315 bytes) + 5
(request HMAC) + 17 (OAEP) + 1 (pubDataDigest) + 1 (output digest) + 5
(response HMAC) = 35 blocks = 2240 bytes, the paper's coefficient.
"""

from __future__ import annotations

import copy
import hmac as _hmac
from dataclasses import replace

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import (Key12, LoadedKey, StoreAsymkey, modulus_of,
                                         check_key_parms, prime_of, rsa_from_prime, skip_key, unmarshal_key)
from trustlab.devices.tpm12.commands.endorsement import ek as ek_key
from trustlab.devices.tpm12.pcrs import PcrInfo
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Reader, Writer

KEY_SLOTS = 32


def storage_parent(tpm, handle: int) -> LoadedKey:
    parent = tpm.key(handle)
    if parent.blob.usage != C.TPM_KEY_STORAGE:
        raise TpmError("TPM_INVALID_KEYUSAGE", f"key {handle:#010x} is not a storage key")
    return parent


def wrap(tpm, parent: LoadedKey, public: Key12, usage_auth: bytes, migration_auth: bytes,
         priv: bytes, payload: int = C.TPM_PT_ASYM, pub_digest: bytes | None = None) -> Key12:
    """Seal a key's secret half under ``parent`` (OAEP), returning the full TPM_KEY12."""
    digest = pub_digest if pub_digest is not None else tpm.crypto.sha1(public.public_part())
    store = StoreAsymkey(payload, usage_auth, migration_auth, digest, priv)
    return public.with_enc(tpm.crypto.rsa_encrypt(parent.public, store.marshal()))


def unwrap(tpm, parent: LoadedKey, blob: Key12) -> StoreAsymkey:
    """Decrypt a key's secret half and check it belongs to this public part."""
    store = StoreAsymkey.from_bytes(tpm.crypto.rsa_decrypt(parent.private, blob.enc))
    if not _hmac.compare_digest(store.pub_digest, tpm.crypto.sha1(blob.public_part())):
        raise TpmError("TPM_DECRYPT_ERROR", "key blob's public part was altered")
    return store


def loaded(blob: Key12, store: StoreAsymkey, parent: int) -> LoadedKey:
    if blob.parms.algorithm == C.TPM_ALG_RSA:
        return LoadedKey(blob, store.usage_auth, store.migration_auth, store.pub_digest,
                         private=rsa_from_prime(blob.pub, store.priv), parent=parent)
    return LoadedKey(blob, store.usage_auth, store.migration_auth, store.pub_digest,
                     hmac_secret=store.priv, parent=parent)


def check_template(t: Key12, parent: LoadedKey, parent_h: int) -> None:
    """Part 3, 10.4 (TPM_CreateWrapKey) steps 3-6, in libtpms' order and with its codes.

    Step 3 (TPM_Key_CheckProperties: RSA only, the usage's schemes and size,
    an unknown usage) answers TPM_BAD_KEY_PROPERTY before the parent's usage
    and migratability (steps 4-5) and the template's usage and flags (step 6:
    IDENTITY, AUTHCHANGE, a CMK) answer TPM_INVALID_KEYUSAGE. A MIGRATE key
    with its mandatory schemes is thus created, as libtpms does.
    """
    if t.parms.algorithm != C.TPM_ALG_RSA:
        raise TpmError("TPM_BAD_KEY_PROPERTY", f"TPM_CreateWrapKey makes RSA keys, not algorithm {t.parms.algorithm:#x}")
    check_key_parms(t.usage, t.parms)
    if parent.blob.usage != C.TPM_KEY_STORAGE:
        raise TpmError("TPM_INVALID_KEYUSAGE", f"key {parent_h:#010x} is not a storage key")
    if parent.blob.migratable and not t.migratable:
        raise TpmError("TPM_INVALID_KEYUSAGE", f"key {parent_h:#010x} is migratable: its children must be too")
    if t.usage in (C.TPM_KEY_IDENTITY, C.TPM_KEY_AUTHCHANGE):
        raise TpmError("TPM_INVALID_KEYUSAGE", f"cannot create a key of usage {t.usage:#06x} here")
    if t.is_cmk:
        raise TpmError("TPM_INVALID_KEYUSAGE", "certified migratable keys need TPM_CMK_CreateKey")


@tpm_command("TPM_CreateWrapKey", handles=1, auth=(1,))
def create_wrap_key(tpm, req: Request) -> Response:
    parent_h = req.handles[0]
    enc_usage, enc_mig = req.params.raw(20), req.params.raw(20)
    template = unmarshal_key(req.params)
    req.params.end()
    parent = tpm.key(parent_h)
    req.auth.check(0, parent.usage_auth, (C.TPM_ET_KEYHANDLE, parent_h))
    check_template(template, parent, parent_h)
    usage_auth = req.auth.decrypt_auth(0, enc_usage)
    mig_auth = (req.auth.decrypt_auth(0, enc_mig, odd=True) if template.migratable
                else tpm.state.tpm_proof)
    key = tpm.crypto.rsa_generate(template.parms.key_bits)
    public = template.with_public(modulus_of(key))
    return Response(params=wrap(tpm, parent, public, usage_auth, mig_auth, prime_of(key)).marshal())


def _load(tpm, req: Request) -> int:
    """TPM_LoadKey / TPM_LoadKey2 (Part 3, 10.5): unwrap under the parent into a free slot."""
    parent_h = req.handles[0]
    structure = copy.copy(req.params)
    try:
        blob, improper = unmarshal_key(req.params), None
    except TpmError as e:  # libtpms loads the structure, checks paramSize, the parent and its
        if e.code != "TPM_BAD_KEY_PROPERTY":  # authorization, and only then the key's properties
            raise
        blob, improper = None, e
        skip_key(structure)
        req.params = structure
    req.params.end()
    parent = storage_parent(tpm, parent_h)
    if len(req.auth):
        req.auth.check(0, parent.usage_auth, (C.TPM_ET_KEYHANDLE, parent_h))
    elif parent.blob.auth_usage != C.TPM_AUTH_NEVER:
        raise TpmError("TPM_AUTHFAIL", "the parent key needs authorization")
    if improper is not None:  # (found by tpm_loadkey of a file TrouSerS could not parse)
        raise improper
    store = unwrap(tpm, parent, blob)
    if len(tpm.keys) >= KEY_SLOTS:
        raise TpmError("TPM_RESOURCES", f"all {KEY_SLOTS} key slots are in use")
    handle = tpm.new_handle("key")
    tpm.keys[handle] = loaded(blob, store, parent_h)
    return handle


@tpm_command("TPM_LoadKey2", handles=1, auth=(0, 1))
def load_key2(tpm, req: Request) -> Response:
    return Response(handles=Writer().u32(_load(tpm, req)).bytes())


@tpm_command("TPM_LoadKey", handles=1, auth=(0, 1))
def load_key(tpm, req: Request) -> Response:
    """The 1.1 form: the new handle is an output *parameter*, covered by the response HMAC."""
    return Response(params=Writer().u32(_load(tpm, req)).bytes())


@tpm_command("TPM_MakeIdentity", auth=(2,))
def make_identity(tpm, req: Request) -> Response:
    """Create an AIK (Part 3, 15.1); the identity binding is signed by the new AIK.

    idKeyParams may be a TPM_KEY12 or a TPM 1.1 TPM_KEY (TrouSerS sends the
    latter); idKey answers in the same structure, with the template's flags,
    authDataUsage, parameters and PCR info (libtpms TPM_Key_GenerateRSA).
    Checks in libtpms' order: properties, owner, SRK, usage, migratable.
    """
    enc_auth, label_ca = req.params.raw(20), req.params.raw(20)
    template = unmarshal_key(req.params)
    req.params.end()
    if template.parms.algorithm != C.TPM_ALG_RSA or template.parms.key_bits < 2048:
        raise TpmError("TPM_BAD_KEY_PROPERTY", "an identity key is RSA of at least 2048 bits")
    if template.usage == C.TPM_KEY_IDENTITY:
        check_key_parms(template.usage, template.parms)
    req.auth.check(1, tpm.owner_auth(), (C.TPM_ET_OWNER, C.TPM_KH_OWNER))
    req.auth.check(0, tpm.state.srk_auth, (C.TPM_ET_KEYHANDLE, C.TPM_KH_SRK))
    if template.usage != C.TPM_KEY_IDENTITY or template.migratable:
        raise TpmError("TPM_INVALID_KEYUSAGE", "an identity key is a non-migratable TPM_KEY_IDENTITY")
    usage_auth = req.auth.decrypt_auth(1, enc_auth)
    for use in req.auth.uses:  # step 7: both sessions end
        use.cont = 0
    key = tpm.crypto.rsa_generate()
    public = template.with_public(modulus_of(key))
    if template.pcr_info:
        public = replace(public, pcr_info=PcrInfo.parse(template.pcr_info).with_creation(tpm, tpm.locality))
    blob = wrap(tpm, tpm.srk_loaded(), public, usage_auth, tpm.state.tpm_proof, prime_of(key))
    # TPM_IDENTITY_CONTENTS: version, ordinal, labelPrivCADigest, identityPubKey
    contents = Writer().raw(C.STRUCT_VER).u32(C.ORD["TPM_MakeIdentity"]).raw(label_ca).raw(public.pubkey()).bytes()
    binding = tpm.crypto.rsa_sign(key, tpm.crypto.sha1(contents))
    return Response(params=blob.marshal() + Writer().sized(binding).bytes())


@tpm_command("TPM_ActivateIdentity", handles=1, auth=(1, 2))
def activate_identity(tpm, req: Request) -> Response:
    """Part 3, 15.2: the privacy CA's answer, encrypted under the EK, yields the session key for the
    AIK's credential if it names this AIK (and, in a TPM_EK_BLOB_ACTIVATE, the platform's PCRs).

    As libtpms' TPM_Process_ActivateIdentity (TPM_CheckRequestTag21): the idKey authorization is
    optional; without it (AUTH1, the owner's only, as IBM's ``activateidentity`` sends) the AIK must
    have authDataUsage TPM_AUTH_NEVER, else TPM_AUTHFAIL. The owner is checked before the key."""
    id_h = req.handles[0]
    blob = req.params.sized(1024)
    req.params.end()
    with_key_auth = len(req.auth) == 2
    req.auth.check(1 if with_key_auth else 0, tpm.owner_auth(), (C.TPM_ET_OWNER, C.TPM_KH_OWNER))
    key = tpm.key(id_h)
    if with_key_auth:
        req.auth.check(0, key.usage_auth, (C.TPM_ET_KEYHANDLE, id_h))
    elif key.blob.auth_usage != C.TPM_AUTH_NEVER:
        raise TpmError("TPM_AUTHFAIL", f"identity key {id_h:#010x} needs its own authorization")
    if key.blob.usage != C.TPM_KEY_IDENTITY:
        raise TpmError("TPM_BAD_PARAMETER", f"key {id_h:#010x} is not an identity key")
    id_digest = tpm.crypto.sha1(key.blob.pubkey())
    b1 = Reader(tpm.crypto.rsa_decrypt(ek_key(tpm), blob), "TPM_EK_BLOB")
    if b1.peek(2) == C.TPM_TAG_EK_BLOB.to_bytes(2, "big"):
        b1.u16()
        if b1.u16() != C.TPM_EK_TYPE_ACTIVATE:
            raise TpmError("TPM_BAD_TYPE", "the TPM_EK_BLOB is not a TPM_EK_TYPE_ACTIVATE")
        a1 = Reader(b1.sized(1024), "TPM_EK_BLOB_ACTIVATE")
        a1.u16()  # TPM_TAG_EK_BLOB_ACTIVATE
        session_key = symmetric_key(a1)
        if a1.raw(20) != id_digest:
            raise TpmError("TPM_BAD_PARAMETER", "the blob names another identity key")
        selection_start = a1.pos
        size = a1.u16()
        a1.raw(size)
        locality, release = a1.u8(), a1.raw(20)
        info = PcrInfo(True, b"", _slice(a1, selection_start, 2 + size), locality, release)
        info.check_release(tpm, tpm.locality)
    else:  # a TPM 1.1 TPM_ASYM_CA_CONTENTS: sessionKey, idDigest
        session_key = symmetric_key(b1)
        if b1.raw(20) != id_digest:
            raise TpmError("TPM_BAD_PARAMETER", "the blob names another identity key")
    return Response(session_key)


def symmetric_key(r) -> bytes:
    """TPM_SYMMETRIC_KEY (Part 2, 10.7): algId, encScheme, size, data; returned as read."""
    start = r.pos
    r.u32()
    r.u16()
    n = r.u16()
    r.raw(n)
    return _slice(r, start, 8 + n)


def _slice(r, start: int, n: int) -> bytes:
    return r._data[start:start + n]


def certify_info2(key: LoadedKey, nonce: bytes, msa_digest: bytes, pubkey_digest: bytes) -> bytes:
    """TPM_CERTIFY_INFO2 (Part 2, 11.2) describing ``key``."""
    b = key.blob
    payload = C.TPM_PT_MIGRATE_RESTRICTED if b.is_cmk else C.TPM_PT_ASYM
    ma = msa_digest if b.is_cmk else b""
    return (Writer().u16(C.TPM_TAG_CERTIFY_INFO2).u8(0).u8(payload).u16(b.usage).u32(b.flags)
            .u8(b.auth_usage).raw(b.parms.marshal()).raw(pubkey_digest).raw(nonce)
            .u8(0).sized(b.pcr_info).sized(ma).bytes())


@tpm_command("TPM_CertifyKey2", handles=2, auth=(0, 1, 2))
def certify_key2(tpm, req: Request) -> Response:
    """Certify ``keyHandle`` with the identity/signing key ``certHandle``.

    Sessions: #1 authorizes the key being certified, #2 the certifying key
    (with one session, only the certifying key; Part 3, 12.2). On the HMAC
    CMK: 148 bytes in, 444 out (TPM_CERTIFY_INFO2 of 92 bytes with the
    msaDigest); blocks 1 (parameter digest) + 10 (two HMACs) + 1 (SHA1 of
    the 36-byte TPM_PUBKEY) + 4 (CMK list check) + 2 (certify info) + 6
    (output digest) + 10 = 34 — the paper's formula has 436 bytes and 30
    blocks (see tests/tpm12/test_formulas.py).
    """
    key_h, cert_h = req.handles
    msa_digest, nonce = req.params.raw(20), req.params.raw(20)
    req.params.end()
    key, cert = tpm.key(key_h), tpm.key(cert_h)
    if len(req.auth) == 2:
        req.auth.check(0, key.usage_auth, (C.TPM_ET_KEYHANDLE, key_h))
        req.auth.check(1, cert.usage_auth, (C.TPM_ET_KEYHANDLE, cert_h))
    elif len(req.auth) == 1:
        req.auth.check(0, cert.usage_auth, (C.TPM_ET_KEYHANDLE, cert_h))
    if cert.blob.usage not in (C.TPM_KEY_IDENTITY, C.TPM_KEY_SIGNING):
        raise TpmError("TPM_INVALID_KEYUSAGE", "the certifying key must be an identity or signing key")
    pk_digest = tpm.crypto.sha1(key.blob.pubkey())
    if key.blob.is_cmk:  # Part 3, 12.2: the certified list must be the CMK's own (+4 blocks)
        migauth = Writer().u16(C.TPM_TAG_CMK_MIGAUTH).raw(msa_digest).raw(pk_digest).bytes()
        if not _hmac.compare_digest(key.migration_auth, tpm.crypto.hmac(tpm.state.tpm_proof, migauth)):
            raise TpmError("TPM_MA_SOURCE", "migrationPubDigest is not this CMK's approved list")
    info = certify_info2(key, nonce, msa_digest, pk_digest)
    sig = tpm.crypto.rsa_sign(cert.private, tpm.crypto.sha1(info))
    return Response(params=info + Writer().sized(sig).bytes())


def cmk_migauth(tpm, blob: Key12, msa_digest: bytes) -> bytes:
    """TPM_CMK_MIGAUTH (Part 2, 5.16): tag, msaDigest, SHA1(TPM_PUBKEY)."""
    return Writer().u16(C.TPM_TAG_CMK_MIGAUTH).raw(msa_digest).raw(tpm.crypto.sha1(blob.pubkey())).bytes()

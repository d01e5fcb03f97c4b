"""Key migration: certified migratable keys (CMKs) and plain migration (Part 3, 11 and 14).

What-if semantics (Gunupudi & Tate 2010, Sec. VI-A): *direct migration* — a
CMK's approved list (msaList) holds digests of destination **storage keys**;
TPM_CMK_CreateBlob with TPM_MS_RESTRICT_MIGRATE migrates the key only to a
key whose TPM_PUBKEY digest is on that list, with no migration-authority
signature. The CMK's ``migrationAuth`` is ``HMAC(tpmProof, TPM_CMK_MIGAUTH(
msaDigest, SHA1(TPM_PUBKEY)))``, so neither the list nor the key can be
swapped after creation.

Migration blobs follow TPM 1.2: the key's secret is OAEP-encoded (no RSA) to a
198-byte block ``o1`` whose seed is the first 20 bytes of the private key, XOR
masked with a fresh random ``r1`` (returned to the caller), and the masked
block is OAEP-encrypted under the destination key. The encoding parameter is
msaDigest for CMKs and migrationAuth for ordinary keys.

Coefficients at the oracle study's sizes (HMAC CMK, one-entry msaList):

* TPM_AuthorizeMigrationKey: 341 in (10 + 2 + 284 TPM_PUBKEY + 45), 357 out
  (10 + 306 TPM_MIGRATIONKEYAUTH + 41); blocks 5 (digest over 290 bytes) + 5
  (HMAC) + 5 (SHA1(pubkey || scheme || tpmProof)) + 6 (output digest) + 5
  = 26 = 1664 bytes: the paper's formula.
* TPM_CMK_ApproveMA: 75 in, 71 out; 1 + 5 + 4 (HMAC(tpmProof, approval)) + 1
  + 5 = 16 blocks = 1024: the paper's formula.
* TPM_CMK_CreateKey: 154 in (the HMAC template is 35 bytes), 362 out (the
  311-byte key blob); 2 + 5 + 4 (approval) + 1 (ADIP) + 1 (key identifier) +
  1 (SHA1 of TPM_PUBKEY) + 4 (migrationAuth HMAC) + 1 (pubDataDigest) + 17
  (OAEP) + 6 + 5 = 47 blocks = 3008: the paper's formula.
* TPM_CreateMigrationBlob (RSA key, MIGRATE): 672 in, 554 out (198-byte
  random); 10 + 10 + 17 + 5 (migration key authorization) + 12 (198-byte
  OAEP encoding: MGF1 9 + 3) + 17 + 8 + 10 = 89 blocks = 5696: the formula.
* TPM_CMK_CreateBlob: 683 in, 513 out as the paper; 10 + 5 + 17 + 1 (msaList
  digest) + 4 (migrationAuth check) + 5 (migration key authorization) + 5
  (destination TPM_PUBKEY digest, checked against the list) + 12 + 17 + 8 +
  5 = 89 blocks, the paper counts 85.
* TPM_CMK_ConvertMigration: 680 in, 311 out as the paper; 10 + 5 + 17 + 1 +
  12 + 1 (pubDataDigest) + 5 (parent TPM_PUBKEY digest) + 1 (source key
  digest) + 4 (new migrationAuth) + 17 + 5 + 5 = 83 blocks, the paper 85.

The paper gives totals, not items, and its simulator's source is not
public, so the last two differences (+4 and -2 blocks, 0.03 ms and -0.01 ms
on Infineon) stay; ``tests/tpm12/test_formulas.py`` pins them.
"""

from __future__ import annotations

import hmac as _hmac

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.commands.keys import cmk_migauth, storage_parent
from trustlab.devices.tpm12.commands.owner import RESTRICT_DELEGATE
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import (HMAC_KEY_LABEL, Key12, KeyParms, StoreAsymkey, modulus_of, prime_of,
                                         rsa_from_prime, rsa_public, unmarshal_key)
from trustlab.devices.tpm12.primitives import oaep_decode, oaep_encode, xor
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.wire import Reader, Writer

MIGRATION_BLOCK = 198  # Part 3, 11.3: the OAEP encoding of TPM_MIGRATE_ASYMKEY for 2048-bit keys
HMAC_SECRET = 20  # the what-if HMAC CMK's private part: 20 bytes (an RSA prime is at least 32)
TAG_MA_APPROVAL = C.TPM_TAG_CMK_MA_APPROVAL


def msa_digests(msa_list: bytes) -> list[bytes]:
    """TPM_MSA_COMPOSITE: UINT32 count, then count 20-byte digests.

    Part 2 requires TPMs to take four entries and allows more; like libtpms (TPM_MsaComposite_Load) no
    count limit but at least one, so the command buffer (TPM_BUFFER_MAX) is what bounds the list."""
    r = Reader(msa_list, "TPM_MSA_COMPOSITE")
    n = r.u32()
    if n == 0:
        raise TpmError("TPM_INVALID_STRUCTURE", "msaList of 0 entries")
    out = [r.raw(20) for _ in range(n)]
    r.end()
    return out


def _owner(tpm, req: Request) -> None:
    req.auth.check(0, tpm.owner_auth(), (C.TPM_ET_OWNER, C.TPM_KH_OWNER))


@tpm_command("TPM_CMK_ApproveMA", auth=(1,))
def cmk_approve_ma(tpm, req: Request) -> Response:
    msa_digest = req.params.raw(20)
    req.params.end()
    _owner(tpm, req)
    return Response(params=tpm.crypto.hmac(tpm.state.tpm_proof, Writer().u16(TAG_MA_APPROVAL).raw(msa_digest).bytes()))


@tpm_command("TPM_CMK_SetRestrictions", auth=(1,))
def cmk_set_restrictions(tpm, req: Request) -> Response:
    """Part 3, 11.6: the owner sets TPM_PERMANENT_DATA -> restrictDelegate (a TPM_CMK_DELEGATE bit
    mask; TPM_CAP_PROP_CMK_RESTRICTION reads it, TPM_OwnerClear zeroes it), as libtpms'
    TPM_Process_CMK_SetRestrictions. It restricts delegated use of CMKs; delegation itself is not
    implemented here, so nothing else reads it (the TSS 1.2 testsuite's Tspi_TPM_CMKSetRestrictions01)."""
    restriction = req.params.u32()
    req.params.end()
    _owner(tpm, req)
    if restriction:
        tpm.state.extra[RESTRICT_DELEGATE] = str(restriction)
    else:
        tpm.state.extra.pop(RESTRICT_DELEGATE, None)
    tpm.mark_dirty()
    return Response()


@tpm_command("TPM_CMK_CreateKey", handles=1, auth=(1,))
def cmk_create_key(tpm, req: Request) -> Response:
    parent_h = req.handles[0]
    enc_auth = req.params.raw(20)
    template = Key12.unmarshal(req.params)
    approval, msa_digest = req.params.raw(20), req.params.raw(20)
    req.params.end()
    parent = storage_parent(tpm, parent_h)
    req.auth.check(0, parent.usage_auth, (C.TPM_ET_KEYHANDLE, parent_h))
    expect = tpm.crypto.hmac(tpm.state.tpm_proof, Writer().u16(TAG_MA_APPROVAL).raw(msa_digest).bytes())
    if not _hmac.compare_digest(expect, approval):
        raise TpmError("TPM_MA_AUTHORITY", "msaList was not approved by the owner")  # Part 3, 11.5
    if not template.is_cmk or not template.migratable:
        raise TpmError("TPM_INVALID_KEYUSAGE", "a CMK template sets migratable and migrateAuthority")
    usage_auth = req.auth.decrypt_auth(0, enc_auth)
    if template.parms.algorithm == C.TPM_ALG_HMAC:
        if template.usage != C.TPM_KEY_HMAC:
            raise TpmError("TPM_INVALID_KEYUSAGE", "an HMAC key has usage TPM_KEY_HMAC")
        priv = tpm.crypto.random(20)
        pub = tpm.crypto.sha1(HMAC_KEY_LABEL, priv)
    else:
        if template.usage not in (C.TPM_KEY_SIGNING, C.TPM_KEY_BIND, C.TPM_KEY_STORAGE):
            raise TpmError("TPM_INVALID_KEYUSAGE", f"usage {template.usage:#x}")
        key = tpm.crypto.rsa_generate()
        priv, pub = prime_of(key), modulus_of(key)
    public = Key12(template.usage, template.flags, template.auth_usage, template.parms, pub,
                   pcr_info=template.pcr_info)
    mig_auth = tpm.crypto.hmac(tpm.state.tpm_proof, cmk_migauth(tpm, public, msa_digest))
    pub_digest = tpm.crypto.sha1(public.public_part())
    store = StoreAsymkey(C.TPM_PT_MIGRATE_RESTRICTED, usage_auth, mig_auth, pub_digest, priv)
    return Response(params=public.with_enc(tpm.crypto.rsa_encrypt(parent.public, store.marshal())).marshal())


@tpm_command("TPM_AuthorizeMigrationKey", auth=(1,))
def authorize_migration_key(tpm, req: Request) -> Response:
    scheme = req.params.u16()
    pubkey = req.params.rest()
    parms, key = KeyParms.unmarshal(Reader(pubkey[:24], "TPM_PUBKEY")), pubkey[24:]
    _owner(tpm, req)
    if parms.algorithm != C.TPM_ALG_RSA or len(key) != 4 + 256:
        raise TpmError("TPM_BAD_KEY_PROPERTY", "the migration key must be a 2048-bit RSA key")
    digest = tpm.crypto.sha1(pubkey, scheme.to_bytes(2, "big"), tpm.state.tpm_proof)
    return Response(params=pubkey + scheme.to_bytes(2, "big") + digest)


def _read_mka(tpm, req: Request) -> tuple[bytes, int, bytes]:
    """TPM_MIGRATIONKEYAUTH: (migrationKey, migrationScheme, digest); :func:`_check_mka` checks it
    once the parent key is known (libtpms: after the parent lookup, so an unowned TPM answers
    about the missing key instead of hashing a tpmProof it does not have)."""
    p = req.params
    start = p.pos
    parms = KeyParms.unmarshal(p)
    key = p.sized(512)
    pubkey = req.param_bytes[start:p.pos]
    scheme, digest = p.u16(), p.raw(20)
    if parms.algorithm != C.TPM_ALG_RSA or len(key) != 256:
        raise TpmError("TPM_BAD_KEY_PROPERTY", "migration key must be RSA-2048")
    return pubkey, scheme, digest


def _check_mka(tpm, pubkey: bytes, scheme: int, digest: bytes) -> None:
    """Part 3, 11.3 step 5: the owner authorized this destination and scheme."""
    proof = tpm.state.tpm_proof
    if proof is None or not _hmac.compare_digest(digest, tpm.crypto.sha1(pubkey, scheme.to_bytes(2, "big"), proof)):
        raise TpmError("TPM_MIGRATEFAIL", "migration key was not authorized by this TPM's owner")


def _blob(tpm, pubkey: bytes, store: StoreAsymkey, payload: int, phash: bytes) -> tuple[bytes, bytes]:
    """Part 3, 11.3 / 11.9 steps 11-17: TPM_MIGRATE_ASYMKEY (K2) OAEP-encoded with seed K1 into
    the 198-byte block o1, masked with a fresh random r1, encrypted to the destination."""
    k1, k2 = _split_private(store.priv)
    m1 = Writer().u8(payload).raw(store.usage_auth).raw(store.pub_digest).sized(k2).bytes()
    o1 = oaep_encode(tpm.crypto.sha1, m1, phash, k1, MIGRATION_BLOCK)
    r1 = tpm.crypto.random(MIGRATION_BLOCK)
    out = tpm.crypto.rsa_encrypt(rsa_public(pubkey[28:]), xor(o1, r1))
    return r1, out


def _unblob(tpm, parent, enc: bytes, random: bytes, phash: bytes | None
            ) -> tuple[int, bytes, bytes, bytes, bytes]:
    """Decrypt, unmask and OAEP-decode a migration blob: (payload, usageAuth, pubDataDigest,
    private key, pHash). ``phash`` None: take it from the block (TPM_ConvertMigrationBlob)."""
    o1 = xor(tpm.crypto.rsa_decrypt(parent.private, enc), random)
    if len(random) != MIGRATION_BLOCK or len(o1) != MIGRATION_BLOCK:
        raise TpmError("TPM_BAD_PARAMETER", f"the random must be {MIGRATION_BLOCK} bytes")
    m1, k1, found = oaep_decode(tpm.crypto.sha1, o1, phash)
    r = Reader(m1, "TPM_MIGRATE_ASYMKEY")
    payload, usage_auth, pub_digest, k2 = r.u8(), r.raw(20), r.raw(20), r.sized(512)
    r.end()
    return payload, usage_auth, pub_digest, Reader(k1 + k2, "TPM_STORE_PRIVKEY").sized(512), found


def _cmk_migauth(tpm, msa_digest: bytes, key_digest: bytes) -> bytes:
    """HMAC(tpmProof, TPM_CMK_MIGAUTH(msaDigest, pubKeyDigest)): a CMK's migrationAuth (Part 3, 11.5)."""
    return tpm.crypto.hmac(tpm.state.tpm_proof,
                           Writer().u16(C.TPM_TAG_CMK_MIGAUTH).raw(msa_digest).raw(key_digest).bytes())


def sig_ticket(tpm, ver_key_digest: bytes, signed_data: bytes) -> bytes:
    """HMAC(tpmProof, TPM_CMK_SIGTICKET(verKeyDigest, signedData)) (Part 3, 11.8 step 4-5)."""
    return tpm.crypto.hmac(tpm.state.tpm_proof,
                           Writer().u16(C.TPM_TAG_CMK_SIGTICKET).raw(ver_key_digest).raw(signed_data).bytes())


def _check_sig_ticket(tpm, ticket: bytes, msa: list[bytes], restrict_ticket: bytes) -> None:
    """Part 3, 11.9 step 9.a / 11.10 step 11: an MA on the list signed SHA1(restrictTicket)."""
    signed = tpm.crypto.sha1(restrict_ticket)
    if not any(_hmac.compare_digest(sig_ticket(tpm, d, signed), ticket) for d in msa):
        raise TpmError("TPM_MA_TICKET_SIGNATURE", "no migration authority on the list signed this ticket")


@tpm_command("TPM_CMK_CreateTicket", auth=(1,))
def cmk_create_ticket(tpm, req: Request) -> Response:
    """Part 3, 11.8: the owner turns a migration authority's signature into a sigTicket."""
    p = req.params
    start = p.pos
    parms = KeyParms.unmarshal(p)
    modulus = p.sized(512)
    verification_key = req.param_bytes[start:p.pos]
    signed_data, signature = p.raw(20), p.sized(512)
    p.end()
    _owner(tpm, req)
    if parms.algorithm != C.TPM_ALG_RSA:
        raise TpmError("TPM_BAD_KEY_PROPERTY", "the verification key must be RSA")
    if parms.enc_scheme != C.TPM_ES_NONE:
        raise TpmError("TPM_INAPPROPRIATE_ENC", "the verification key must not encrypt")
    if parms.sig_scheme not in (C.TPM_SS_RSASSAPKCS1v15_SHA1, C.TPM_SS_RSASSAPKCS1v15_INFO):
        raise TpmError("TPM_INVALID_KEYUSAGE", "the verification key must sign with RSASSA-PKCS1v15")
    tpm.crypto.rsa_verify(rsa_public(modulus), signature, signed_data)
    return Response(params=sig_ticket(tpm, tpm.crypto.sha1(verification_key), signed_data))


def _split_private(priv: bytes) -> tuple[bytes, bytes]:
    """K1, K2 (Part 3, 11.9 step 11): TPM_STORE_PRIVKEY (keyLength || key) split after 20 bytes."""
    store_privkey = Writer().sized(priv).bytes()
    return store_privkey[:20], store_privkey[20:]


@tpm_command("TPM_CMK_CreateBlob", handles=1, auth=(1,))
def cmk_create_blob(tpm, req: Request) -> Response:
    """Part 3, 11.9. RSA CMKs follow it to the byte (their blobs import into libtpms and back);
    the what-if HMAC CMK (a 20-byte secret, no TCG migration format) keeps Gunupudi & Tate's
    direct migration to a listed destination, whose costs the oracle study reproduces."""
    parent_h = req.handles[0]
    mtype = req.params.u16()
    pubkey, scheme, mka_digest = _read_mka(tpm, req)
    source_digest = req.params.raw(20)
    msa_list, restrict, ticket = req.params.sized(C.TPM_BUFFER_MAX), req.params.sized(256), req.params.sized(256)
    enc = req.params.sized(512)
    req.params.end()
    parent = storage_parent(tpm, parent_h)
    req.auth.check(0, parent.usage_auth, (C.TPM_ET_KEYHANDLE, parent_h))
    _check_mka(tpm, pubkey, scheme, mka_digest)
    store = StoreAsymkey.from_bytes(tpm.crypto.rsa_decrypt(parent.private, enc))
    if len(store.priv) == HMAC_SECRET:
        return _cmk_create_blob_direct(tpm, mtype, scheme, pubkey, source_digest, msa_list, store)
    if store.payload not in (C.TPM_PT_MIGRATE_RESTRICTED, C.TPM_PT_MIGRATE_EXTERNAL):
        raise TpmError("TPM_INVALID_STRUCTURE", "not a certified migratable key")
    msa = msa_digests(msa_list)
    msa_digest = tpm.crypto.sha1(msa_list)
    if not _hmac.compare_digest(store.migration_auth, _cmk_migauth(tpm, msa_digest, source_digest)):
        raise TpmError("TPM_MA_AUTHORITY", "msaList or source key digest is not this CMK's")
    dest_digest = tpm.crypto.sha1(pubkey)
    if scheme == C.TPM_MS_RESTRICT_MIGRATE:  # step 8: the destination is itself an approved MA
        if dest_digest not in msa:
            raise TpmError("TPM_MA_AUTHORITY", "the destination is not on the CMK's list")
        if restrict or ticket:
            raise TpmError("TPM_BAD_PARAMETER", "TPM_MS_RESTRICT_MIGRATE takes no tickets")
    elif scheme == C.TPM_MS_RESTRICT_APPROVE:  # step 9: an MA on the list approved this migration
        if len(restrict) != 60 or len(ticket) != 20:
            raise TpmError("TPM_BAD_PARAMETER", "TPM_MS_RESTRICT_APPROVE needs restrictTicket and sigTicket")
        _check_sig_ticket(tpm, ticket, msa, restrict)
        if not _hmac.compare_digest(restrict[20:40], dest_digest):
            raise TpmError("TPM_MA_DESTINATION", "restrictTicket names another destination")
        if not _hmac.compare_digest(restrict[40:60], source_digest):
            raise TpmError("TPM_MA_SOURCE", "restrictTicket names another source key")
    else:
        raise TpmError("TPM_BAD_PARAMETER", f"migration scheme {scheme:#x} is not a CMK scheme")
    r1, out = _blob(tpm, pubkey, store, C.TPM_PT_CMK_MIGRATE, tpm.crypto.sha1(msa_digest, source_digest))
    return Response(params=Writer().sized(r1).sized(out).bytes())


def _cmk_create_blob_direct(tpm, mtype, scheme, pubkey, source_digest, msa_list, store) -> Response:
    """The what-if HMAC CMK: direct migration, no tickets (Gunupudi & Tate 2010, Sec. VI-A)."""
    if mtype != C.TPM_MS_RESTRICT_MIGRATE or scheme != C.TPM_MS_RESTRICT_MIGRATE:
        raise TpmError("TPM_BAD_PARAMETER", "the HMAC CMK migrates directly (TPM_MS_RESTRICT_MIGRATE)")
    if store.payload != C.TPM_PT_MIGRATE_RESTRICTED:
        raise TpmError("TPM_INVALID_KEYUSAGE", "not a certified migratable key")
    msa_digest = tpm.crypto.sha1(msa_list)
    if not _hmac.compare_digest(store.migration_auth, _cmk_migauth(tpm, msa_digest, source_digest)):
        raise TpmError("TPM_MA_AUTHORITY", "msaList or source key digest is not this CMK's")
    if tpm.crypto.sha1(pubkey) not in msa_digests(msa_list):
        raise TpmError("TPM_MA_DESTINATION", "the destination key is not on the CMK's approved list")
    r1, out = _blob(tpm, pubkey, store, C.TPM_PT_CMK_MIGRATE, msa_digest)
    return Response(params=Writer().sized(r1).sized(out).bytes())


@tpm_command("TPM_CMK_ConvertMigration", handles=1, auth=(1,))
def cmk_convert_migration(tpm, req: Request) -> Response:
    """Part 3, 11.10 for RSA CMKs (sigTicket checked); the what-if HMAC CMK converts directly."""
    parent_h = req.handles[0]
    p = req.params
    restrict = p.raw(60)  # TPM_CMK_AUTH: migrationAuthorityDigest, destinationKeyDigest, sourceKeyDigest
    ticket = p.raw(20)
    migrated = unmarshal_key(p)
    msa_list, random = p.sized(C.TPM_BUFFER_MAX), p.sized(512)
    p.end()
    parent = storage_parent(tpm, parent_h)
    req.auth.check(0, parent.usage_auth, (C.TPM_ET_KEYHANDLE, parent_h))
    if migrated.parms.algorithm == C.TPM_ALG_HMAC:
        return _cmk_convert_direct(tpm, parent, restrict, migrated, msa_list, random)
    msa = msa_digests(msa_list)
    msa_digest = tpm.crypto.sha1(msa_list)
    key_digest = tpm.crypto.sha1(migrated.pubkey())
    payload, usage_auth, pub_digest, priv, _ = _unblob(tpm, parent, migrated.enc, random,
                                                       tpm.crypto.sha1(msa_digest, key_digest))
    if payload != C.TPM_PT_CMK_MIGRATE:
        raise TpmError("TPM_BAD_MIGRATION", "not a CMK migration blob")
    _check_sig_ticket(tpm, ticket, msa, restrict)  # step 11
    if not _hmac.compare_digest(restrict[20:40], tpm.crypto.sha1(parent.blob.pubkey())):
        raise TpmError("TPM_MA_DESTINATION", "this parent is not the approved destination")
    if not _hmac.compare_digest(pub_digest, tpm.crypto.sha1(migrated.public_part())):
        raise TpmError("TPM_DECRYPT_ERROR", "the migrated key's public part was altered")
    rsa_from_prime(migrated.pub, priv)  # step 14: the private key belongs to the public key
    if not migrated.migratable or not migrated.is_cmk:
        raise TpmError("TPM_INVALID_KEYUSAGE", "not a certified migratable key")
    if not _hmac.compare_digest(restrict[40:60], key_digest):
        raise TpmError("TPM_MA_SOURCE", "restrictTicket names another source key")
    store = StoreAsymkey(C.TPM_PT_MIGRATE_RESTRICTED, usage_auth, _cmk_migauth(tpm, msa_digest, key_digest),
                         pub_digest, priv)
    return Response(params=Writer().sized(tpm.crypto.rsa_encrypt(parent.public, store.marshal())).bytes())


def _cmk_convert_direct(tpm, parent, restrict, migrated, msa_list, random) -> Response:
    """The what-if HMAC CMK (Gunupudi & Tate 2010, Sec. VI-A): the destination is on the list."""
    ma_digest, dest_digest, source_digest = restrict[:20], restrict[20:40], restrict[40:60]
    if not migrated.is_cmk:
        raise TpmError("TPM_INVALID_KEYUSAGE", "not a certified migratable key")
    msa_digest = tpm.crypto.sha1(msa_list)
    payload, usage_auth, pub_digest, priv, _ = _unblob(tpm, parent, migrated.enc, random, msa_digest)
    if payload != C.TPM_PT_CMK_MIGRATE:
        raise TpmError("TPM_BAD_MIGRATION", "not a CMK migration blob")
    if not _hmac.compare_digest(pub_digest, tpm.crypto.sha1(migrated.public_part())):
        raise TpmError("TPM_DECRYPT_ERROR", "the migrated key's public part was altered")
    if ma_digest != msa_digest or dest_digest not in msa_digests(msa_list):
        raise TpmError("TPM_MA_DESTINATION", "restrictTicket does not match the approved list")
    if not _hmac.compare_digest(dest_digest, tpm.crypto.sha1(parent.blob.pubkey())):
        raise TpmError("TPM_MA_DESTINATION", "this parent is not the approved destination")
    key_digest = tpm.crypto.sha1(migrated.pubkey())
    if not _hmac.compare_digest(source_digest, key_digest):
        raise TpmError("TPM_MA_SOURCE", "restrictTicket names another source key")
    store = StoreAsymkey(C.TPM_PT_MIGRATE_RESTRICTED, usage_auth, _cmk_migauth(tpm, msa_digest, key_digest),
                         pub_digest, priv)
    return Response(params=Writer().sized(tpm.crypto.rsa_encrypt(parent.public, store.marshal())).bytes())


@tpm_command("TPM_CreateMigrationBlob", handles=1, auth=(2,))
def create_migration_blob(tpm, req: Request) -> Response:
    parent_h = req.handles[0]
    mtype = req.params.u16()
    pubkey, scheme, mka_digest = _read_mka(tpm, req)
    enc = req.params.sized(512)
    req.params.end()
    parent = storage_parent(tpm, parent_h)
    req.auth.check(0, parent.usage_auth, (C.TPM_ET_KEYHANDLE, parent_h))
    _check_mka(tpm, pubkey, scheme, mka_digest)
    if mtype not in (C.TPM_MS_MIGRATE, C.TPM_MS_REWRAP) or scheme != mtype:
        raise TpmError("TPM_BAD_PARAMETER", "migrationType must match the authorized scheme")
    store = StoreAsymkey.from_bytes(tpm.crypto.rsa_decrypt(parent.private, enc))
    if store.payload != C.TPM_PT_ASYM:
        raise TpmError("TPM_INVALID_KEYUSAGE", "CMKs migrate with TPM_CMK_CreateBlob")
    req.auth.check(1, store.migration_auth)
    if _hmac.compare_digest(store.migration_auth, tpm.state.tpm_proof):
        raise TpmError("TPM_INVALID_KEYUSAGE", "the key is not migratable")
    if mtype == C.TPM_MS_REWRAP:
        out = tpm.crypto.rsa_encrypt(rsa_public(pubkey[28:]), store.marshal())
        return Response(params=Writer().sized(b"").sized(out).bytes())
    r1, out = _blob(tpm, pubkey, store, C.TPM_PT_MIGRATE, store.migration_auth)
    return Response(params=Writer().sized(r1).sized(out).bytes())


@tpm_command("TPM_ConvertMigrationBlob", handles=1, auth=(0, 1))
def convert_migration_blob(tpm, req: Request) -> Response:
    """Part 3, 11.4: re-wrap a TPM_MS_MIGRATE blob under ``parentHandle`` (pHash becomes the
    key's migrationAuth, as TPM_CreateMigrationBlob used it).

    Without a session only for a parent whose authDataUsage is TPM_AUTH_NEVER (else TPM_AUTHFAIL),
    checked before its usage, as libtpms' TPM_Process_ConvertMigrationBlob does (TPM_CheckRequestTag10);
    TrouSerS sends it so for a parent without authorization (the TSS 1.2 testsuite's
    Tspi_Key_ConvertMigrationBlob01)."""
    parent_h = req.handles[0]
    enc, random = req.params.sized(512), req.params.sized(512)
    req.params.end()
    parent = tpm.key(parent_h)
    if parent.blob.auth_usage != C.TPM_AUTH_NEVER or len(req.auth):
        req.auth.check(0, parent.usage_auth, (C.TPM_ET_KEYHANDLE, parent_h))
    parent = storage_parent(tpm, parent_h)
    if parent.blob.migratable:
        raise TpmError("TPM_INVALID_KEYUSAGE", "the new parent must be a non-migratable storage key")
    payload, usage_auth, pub_digest, priv, migration_auth = _unblob(tpm, parent, enc, random, None)
    if payload != C.TPM_PT_MIGRATE:
        raise TpmError("TPM_BAD_MIGRATION", "not a TPM_PT_MIGRATE blob")
    store = StoreAsymkey(C.TPM_PT_ASYM, usage_auth, migration_auth, pub_digest, priv)
    return Response(params=Writer().sized(tpm.crypto.rsa_encrypt(parent.public, store.marshal())).bytes())

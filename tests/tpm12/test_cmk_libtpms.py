"""Certified migratable keys move between our engine and libtpms, both ways, with real tickets.

The source TPM's owner approves a list (a migration authority's key and the
destination's storage key), creates an RSA CMK, authorizes the destination and
makes the blob (TPM_MS_RESTRICT_MIGRATE); the migration authority - a software
RSA key here - signs SHA1(restrictTicket); the destination's owner turns that
signature into a sigTicket (TPM_CMK_CreateTicket), converts the blob
(TPM_CMK_ConvertMigration) and loads and uses the key.
"""

from __future__ import annotations

import hashlib
import shutil

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa, utils

from trustlab.devices.tpm12 import TpmError, key_template, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.client import msa_composite
from trustlab.devices.tpm12.keys import Key12, KeyParms, rsa_public
from trustlab.devices.tpm12.primitives import KeyPool
from trustlab.devices.tpm12.wire import Writer

from .conformance_cases import OAEP_PARMS, frame
from .differential import pair

pytestmark = [pytest.mark.swtpm, pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")]

OWNER, SRK, KEY = secret("owner"), secret("srk"), secret("cmk")
SRK_H = C.TPM_KH_SRK


def sha1(*parts: bytes) -> bytes:
    return hashlib.sha1(b"".join(parts)).digest()


@pytest.fixture(scope="module")
def world():
    ours, libtpms = pair(KeyPool())
    for s in (ours, libtpms):
        s.raw(frame(C.ORD["TPM_Startup"], b"\x00\x01"))
        s.raw(frame(C.ORD["TPM_CreateEndorsementKeyPair"], b"\x01" * 20 + OAEP_PARMS.marshal()))
        s.tpm.TPM_TakeOwnership(OWNER, SRK)
        dest = Key12.from_bytes(s.tpm.TPM_CreateWrapKey(SRK_H, SRK, key_template(C.TPM_KEY_STORAGE), KEY))
        s.ctx["dest_pub"] = dest.pubkey()
        s.ctx["dest_h"] = s.tpm.TPM_LoadKey2(SRK_H, dest.marshal(), SRK)
    ma = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ma_pub = (KeyParms(C.TPM_ALG_RSA, C.TPM_ES_NONE, C.TPM_SS_RSASSAPKCS1v15_SHA1).marshal()
              + Writer().sized(ma.public_key().public_numbers().n.to_bytes(256, "big")).bytes())
    yield {"trustlab": ours, "libtpms": libtpms, "ma": ma, "ma_pub": ma_pub}
    libtpms.target.close()


def cmk_template() -> Key12:
    t = key_template(C.TPM_KEY_SIGNING)
    return Key12(t.usage, C.TPM_KEY_FLAG_MIGRATABLE | C.TPM_KEY_FLAG_MIGRATE_AUTHORITY, t.auth_usage, t.parms, b"")


@pytest.mark.parametrize("scheme", ["RESTRICT_MIGRATE", "RESTRICT_APPROVE"])
@pytest.mark.parametrize("source,dest", [("libtpms", "trustlab"), ("trustlab", "libtpms")])
def test_cmk_blob_imports(world, source, dest, scheme) -> None:
    """RESTRICT_MIGRATE: the destination is on the list; RESTRICT_APPROVE: only the MA is, and
    the source TPM checks the MA's ticket over restrictTicket before it makes the blob."""
    src, dst = world[source].tpm, world[dest].tpm
    dest_pub = world[dest].ctx["dest_pub"]
    approve = scheme == "RESTRICT_APPROVE"
    msa = msa_composite([sha1(world["ma_pub"])] + ([] if approve else [sha1(dest_pub)]))
    approval = src.TPM_CMK_ApproveMA(OWNER, sha1(msa))
    cmk = Key12.from_bytes(src.TPM_CMK_CreateKey(SRK_H, SRK, cmk_template(), KEY, approval, sha1(msa)))
    restrict = sha1(world["ma_pub"]) + sha1(dest_pub) + sha1(cmk.pubkey())  # TPM_CMK_AUTH
    signature = world["ma"].sign(sha1(restrict), padding.PKCS1v15(), utils.Prehashed(hashes.SHA1()))
    mka = src.TPM_AuthorizeMigrationKey(OWNER, dest_pub, getattr(C, f"TPM_MS_{scheme}"))
    if approve:
        src_ticket = src.TPM_CMK_CreateTicket(OWNER, world["ma_pub"], sha1(restrict), signature)
        random, out = src.TPM_CMK_CreateBlob(SRK_H, SRK, mka, sha1(cmk.pubkey()), msa, cmk.enc,
                                             scheme=C.TPM_MS_RESTRICT_APPROVE, restrict_ticket=restrict,
                                             sig_ticket=src_ticket)
    else:
        random, out = src.TPM_CMK_CreateBlob(SRK_H, SRK, mka, sha1(cmk.pubkey()), msa, cmk.enc)
    ticket = dst.TPM_CMK_CreateTicket(OWNER, world["ma_pub"], sha1(restrict), signature)
    dest_h = world[dest].ctx["dest_h"]
    migrated = cmk.with_enc(out).marshal()
    with pytest.raises(TpmError, match="TPM_MA_TICKET_SIGNATURE"):  # no ticket, no conversion
        dst.TPM_CMK_ConvertMigration(dest_h, KEY, restrict, migrated, msa, random)
    enc = dst.TPM_CMK_ConvertMigration(dest_h, KEY, restrict, migrated, msa, random, sig_ticket=ticket)
    handle = dst.TPM_LoadKey2(dest_h, cmk.with_enc(enc).marshal(), KEY)
    digest = sha1(b"migrated")
    sig = dst.TPM_Sign(handle, digest, KEY)
    rsa_public(cmk.pub).verify(sig, digest, padding.PKCS1v15(), utils.Prehashed(hashes.SHA1()))


@pytest.mark.parametrize("which", ["trustlab", "libtpms"])
def test_create_ticket_refuses_a_bad_signature(world, which) -> None:
    with pytest.raises(TpmError, match="TPM_BAD_SIGNATURE"):
        world[which].tpm.TPM_CMK_CreateTicket(OWNER, world["ma_pub"], b"\x01" * 20, b"\x02" * 256)


@pytest.mark.parametrize("source,dest", [("libtpms", "trustlab"), ("trustlab", "libtpms")])
def test_plain_migration_blob_imports(world, source, dest) -> None:
    """TPM_CreateMigrationBlob (TPM_MS_MIGRATE) on one TPM, TPM_ConvertMigrationBlob on the other."""
    src, dst = world[source].tpm, world[dest].tpm
    dest_pub = world[dest].ctx["dest_pub"]
    mig_auth = secret("migration")
    key = Key12.from_bytes(src.TPM_CreateWrapKey(SRK_H, SRK, key_template(C.TPM_KEY_SIGNING, migratable=True),
                                                 KEY, migration_auth=mig_auth))
    mka = src.TPM_AuthorizeMigrationKey(OWNER, dest_pub, C.TPM_MS_MIGRATE)
    random, out = src.TPM_CreateMigrationBlob(SRK_H, SRK, mka, key.enc, mig_auth)
    dest_h = world[dest].ctx["dest_h"]
    _, r = dst.call("TPM_ConvertMigrationBlob", handles=[dest_h],
                    params=Writer().sized(out).sized(random).bytes(), auth=[KEY])
    handle = dst.TPM_LoadKey2(dest_h, key.with_enc(r.sized()).marshal(), KEY)
    digest = sha1(b"migrated")
    rsa_public(key.pub).verify(dst.TPM_Sign(handle, digest, KEY), digest, padding.PKCS1v15(),
                               utils.Prehashed(hashes.SHA1()))

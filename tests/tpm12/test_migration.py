"""CMKs and migration: approved destinations only, tampering refused, HMAC keys agree."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from trustlab.devices.tpm12 import MemoryNVStore, Tpm12, TpmError, key_template, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.client import hmac_key_template, msa_composite, pubkey_digest
from trustlab.devices.tpm12.keys import Key12

from .conftest import OWNER, POOL, SRK

K = secret("k")
SRK_H = C.TPM_KH_SRK


def _party(clock) -> tuple[Tpm12, Key12, int]:
    t = Tpm12(clock, nv=MemoryNVStore(), keygen=POOL)
    t.TPM_TakeOwnership(OWNER, SRK)
    blob = Key12.from_bytes(t.TPM_CreateWrapKey(SRK_H, SRK, key_template(C.TPM_KEY_STORAGE), K))
    return t, blob, t.TPM_LoadKey2(SRK_H, blob.marshal(), SRK)


@pytest.fixture
def world(tpm, clock):
    dest, dest_key, dest_h = _party(clock)
    other, other_key, other_h = _party(clock)
    msa = msa_composite([pubkey_digest(dest_key.pubkey())])
    msa_digest = hashlib.sha1(msa).digest()
    approval = tpm.TPM_CMK_ApproveMA(OWNER, msa_digest)
    cmk = Key12.from_bytes(tpm.TPM_CMK_CreateKey(SRK_H, SRK, hmac_key_template(), K, approval, msa_digest))
    return dict(src=tpm, dest=dest, dest_key=dest_key, dest_h=dest_h, other=other, other_key=other_key,
                other_h=other_h, msa=msa, msa_digest=msa_digest, cmk=cmk)


def _migrate(w, to: str):
    src, cmk = w["src"], w["cmk"]
    mka = src.TPM_AuthorizeMigrationKey(OWNER, w[f"{to}_key"].pubkey())
    return src.TPM_CMK_CreateBlob(SRK_H, SRK, mka, pubkey_digest(cmk.pubkey()), w["msa"], cmk.enc)


def test_direct_migration_gives_identical_hmac_answers(world) -> None:
    w = world
    random, blob = _migrate(w, "dest")
    ticket = w["msa_digest"] + pubkey_digest(w["dest_key"].pubkey()) + pubkey_digest(w["cmk"].pubkey())
    enc = w["dest"].TPM_CMK_ConvertMigration(w["dest_h"], K, ticket, w["cmk"].with_enc(blob).marshal(),
                                             w["msa"], random)
    at_dest = w["dest"].TPM_LoadKey2(w["dest_h"], w["cmk"].with_enc(enc).marshal(), K)
    at_src = w["src"].TPM_LoadKey2(SRK_H, w["cmk"].marshal(), SRK)
    q = b"query" * 20
    assert w["src"].TPM_HMAC(at_src, q, K) == w["dest"].TPM_HMAC(at_dest, q, K)
    assert w["src"].TPM_HMAC(at_src, q, K, output_blocks=3) == w["dest"].TPM_HMAC(at_dest, q, K, output_blocks=3)
    assert len(w["src"].TPM_HMAC(at_src, q, K, output_blocks=3)) == 60


def test_cmk_cannot_migrate_off_its_approved_list(world) -> None:
    with pytest.raises(TpmError, match="TPM_MA_DESTINATION"):
        _migrate(world, "other")


def test_forged_approved_list_is_refused(world) -> None:
    w = world
    forged = msa_composite([pubkey_digest(w["other_key"].pubkey())])
    mka = w["src"].TPM_AuthorizeMigrationKey(OWNER, w["other_key"].pubkey())
    with pytest.raises(TpmError, match="TPM_MA_AUTHORITY"):
        w["src"].TPM_CMK_CreateBlob(SRK_H, SRK, mka, pubkey_digest(w["cmk"].pubkey()), forged, w["cmk"].enc)
    # and an unapproved list cannot be used to create a CMK at all
    with pytest.raises(TpmError, match="TPM_MA_AUTHORITY"):
        w["src"].TPM_CMK_CreateKey(SRK_H, SRK, hmac_key_template(), K, b"\x00" * 20, hashlib.sha1(forged).digest())


def test_owner_must_authorize_the_destination(world) -> None:
    w = world
    mka = bytearray(w["src"].TPM_AuthorizeMigrationKey(OWNER, w["dest_key"].pubkey()))
    mka[-1] ^= 1
    with pytest.raises(TpmError, match="TPM_MIGRATEFAIL"):
        w["src"].TPM_CMK_CreateBlob(SRK_H, SRK, bytes(mka), pubkey_digest(w["cmk"].pubkey()), w["msa"], w["cmk"].enc)


def test_blob_converts_only_at_the_destination_and_untampered(world) -> None:
    w = world
    random, blob = _migrate(w, "dest")
    ticket = w["msa_digest"] + pubkey_digest(w["dest_key"].pubkey()) + pubkey_digest(w["cmk"].pubkey())
    migrated = w["cmk"].with_enc(blob).marshal()
    with pytest.raises(TpmError):  # a different TPM's key cannot open it
        w["other"].TPM_CMK_ConvertMigration(w["other_h"], K, ticket, migrated, w["msa"], random)
    bad_random = bytes([random[0] ^ 1]) + random[1:]
    with pytest.raises(TpmError, match="TPM_DECRYPT_ERROR"):
        w["dest"].TPM_CMK_ConvertMigration(w["dest_h"], K, ticket, migrated, w["msa"], bad_random)


def test_hmac_matches_rfc2104_with_the_key(tpm) -> None:
    """TPM_HMAC is standard HMAC-SHA1 (checked against hashlib with the key recovered from a migration)."""
    from trustlab.devices.tpm12.keys import StoreAsymkey  # host cannot see the key: peek via the engine
    msa = msa_composite([b"\x01" * 20])
    d = hashlib.sha1(msa).digest()
    cmk = Key12.from_bytes(tpm.TPM_CMK_CreateKey(SRK_H, SRK, hmac_key_template(), K,
                                                 tpm.TPM_CMK_ApproveMA(OWNER, d), d))
    h = tpm.TPM_LoadKey2(SRK_H, cmk.marshal(), SRK)
    key = tpm.engine.keys[h].hmac_secret
    assert tpm.TPM_HMAC(h, b"abc", K) == hmac.new(key, b"abc", hashlib.sha1).digest()
    assert StoreAsymkey  # imported for the docstring's point: the secret never leaves in clear


def test_non_migratable_key_cannot_be_migrated(tpm, clock) -> None:
    dest, dest_key, _ = _party(clock)
    mka = tpm.TPM_AuthorizeMigrationKey(OWNER, dest_key.pubkey(), C.TPM_MS_MIGRATE)
    fixed = Key12.from_bytes(tpm.TPM_CreateWrapKey(SRK_H, SRK, key_template(C.TPM_KEY_SIGNING), K))
    with pytest.raises(TpmError):
        tpm.TPM_CreateMigrationBlob(SRK_H, SRK, mka, fixed.enc, secret("anything"))

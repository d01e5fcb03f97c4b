"""Run every command that has a paper formula once, at the paper's experiment sizes.

Sizes (Gunupudi & Tate 2010, Sec. III-IV, VI-B): 11 bytes sealed/bound, a
20-byte digest signed, all 24 PCRs quoted, RSA-2048 keys for the Sec. III/IV
commands, and the what-if HMAC CMK for the oracle commands of Sec. VI-B.
Returns ``{command: CommandRecord}`` of the engine's own charges.
"""

from __future__ import annotations

import hashlib

from trustlab.devices.tpm12 import Tpm12, key_template, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.client import bind, hmac_key_template, msa_composite, pubkey_digest
from trustlab.devices.tpm12.keys import Key12
from trustlab.devices.tpm12.nvstore import MemoryNVStore
from trustlab.timing.clock import Clock, CommandRecord

OWNER, SRK, K, D = secret("owner"), secret("srk"), secret("k"), secret("d")
DATA = b"eleven byte"  # the paper's 11-byte payloads (Seal, UnBind, Unseal)


def run(clock: Clock, keygen=None) -> dict[str, CommandRecord]:
    tpm = Tpm12(clock, nv=MemoryNVStore(), keygen=keygen)
    tpm.TPM_TakeOwnership(OWNER, SRK)
    out: dict[str, CommandRecord] = {}

    def rec(name: str) -> None:
        assert clock.last is not None and clock.last.name == name, (name, clock.last)
        out[name] = clock.last

    def oiap(secret_: bytes):
        s = tpm.TPM_OIAP(secret_)
        s.cont = False
        return s

    srk_h = C.TPM_KH_SRK
    storage = tpm.TPM_LoadKey2(srk_h, tpm.TPM_CreateWrapKey(srk_h, SRK, key_template(C.TPM_KEY_STORAGE), K), SRK)
    stored = tpm.TPM_Seal(storage, K, DATA, D)
    rec("TPM_Seal")
    assert tpm.TPM_Unseal(storage, stored, oiap(K), oiap(D)) == DATA
    rec("TPM_Unseal")

    bind_blob = tpm.TPM_CreateWrapKey(srk_h, SRK, key_template(C.TPM_KEY_BIND), K)
    bind_h = tpm.TPM_LoadKey2(srk_h, bind_blob, SRK)
    enc = bind(Key12.from_bytes(bind_blob).pubkey(), DATA)
    assert tpm.TPM_UnBind(bind_h, enc, oiap(K)) == DATA
    rec("TPM_UnBind")

    sign_h = tpm.TPM_LoadKey2(srk_h, tpm.TPM_CreateWrapKey(srk_h, SRK, key_template(C.TPM_KEY_SIGNING), K), SRK)
    tpm.TPM_Sign(sign_h, hashlib.sha1(b"x").digest(), oiap(K))
    rec("TPM_Sign")
    tpm.TPM_Quote(sign_h, b"n" * 20, range(24), oiap(K))
    rec("TPM_Quote")

    # ChangeAuth of a key blob's secret (entity TPM_ET_KEY), parent = storage key
    child = Key12.from_bytes(tpm.TPM_CreateWrapKey(storage, K, key_template(C.TPM_KEY_SIGNING), K))
    tpm.TPM_ChangeAuth(storage, K, C.TPM_ET_KEY, child.enc, oiap(K), D)
    rec("TPM_ChangeAuth")

    # plain migration of a migratable RSA key to another TPM's storage key
    dest = Tpm12(clock, nv=MemoryNVStore(), keygen=keygen)
    dest.TPM_TakeOwnership(OWNER, SRK)
    dest_blob = Key12.from_bytes(dest.TPM_CreateWrapKey(srk_h, SRK, key_template(C.TPM_KEY_STORAGE), K))
    dest_pub = dest_blob.pubkey()
    mka = tpm.TPM_AuthorizeMigrationKey(oiap(OWNER), dest_pub, C.TPM_MS_MIGRATE)
    rec("TPM_AuthorizeMigrationKey")
    mig = Key12.from_bytes(tpm.TPM_CreateWrapKey(srk_h, SRK, key_template(C.TPM_KEY_SIGNING, migratable=True),
                                                 K, migration_auth=D))
    tpm.TPM_CreateMigrationBlob(srk_h, oiap(SRK), mka, mig.enc, oiap(D))
    rec("TPM_CreateMigrationBlob")

    # the oracle commands with the HMAC CMK and one approved destination
    msa = msa_composite([pubkey_digest(dest_pub)])
    msa_digest = hashlib.sha1(msa).digest()
    approval = tpm.TPM_CMK_ApproveMA(oiap(OWNER), msa_digest)
    rec("TPM_CMK_ApproveMA")
    cmk = Key12.from_bytes(tpm.TPM_CMK_CreateKey(srk_h, SRK, hmac_key_template(), K, approval, msa_digest))
    rec("TPM_CMK_CreateKey")
    cmk_h = tpm.TPM_LoadKey2(srk_h, cmk.marshal(), oiap(SRK))
    rec("TPM_LoadKey2")
    aik_h = tpm.TPM_LoadKey2(srk_h, tpm.TPM_MakeIdentity(OWNER, SRK, K)[0], SRK)
    tpm.TPM_CertifyKey2(cmk_h, aik_h, b"c" * 20, msa_digest, oiap(K), oiap(K))
    rec("TPM_CertifyKey2")
    mka = tpm.TPM_AuthorizeMigrationKey(oiap(OWNER), dest_pub)
    random, blob = tpm.TPM_CMK_CreateBlob(srk_h, oiap(SRK), mka, pubkey_digest(cmk.pubkey()), msa, cmk.enc)
    rec("TPM_CMK_CreateBlob")
    dest_h = dest.TPM_LoadKey2(srk_h, dest_blob.marshal(), SRK)
    ticket = msa_digest + pubkey_digest(dest_pub) + pubkey_digest(cmk.pubkey())
    dest.TPM_CMK_ConvertMigration(dest_h, dest.TPM_OIAP(K), ticket, cmk.with_enc(blob).marshal(), msa, random)
    rec("TPM_CMK_ConvertMigration")
    return out

"""Run each command that has no paper formula once, at the sizes trustlab's own formulas assume.

Sizes: RSA-2048 keys (TPM 1.1 TPM_KEY for TPM_LoadKey), one-shot OIAP sessions
(continueAuthSession FALSE), a 20-byte TPM_GetRandom, TPM_CAP_VERSION_VAL,
one PCR in TPM_Quote2, 32-byte NV areas written and read whole, TPM_ReadCounter
wrapped in TPM_ExecuteTransport, one audited ordinal. Key generation is charged
as ``rsa_keygen`` only on profiles that have it (the 2010 ones do not). Returns
``{command: CommandRecord}`` of the engine's own charges, as paper_scenario does.
"""

from __future__ import annotations

import struct

from trustlab.devices.tpm12 import Tpm12, key_template, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.engine import Engine
from trustlab.devices.tpm12.keys import Key11, Key12, KeyParms
from trustlab.devices.tpm12.nvstore import MemoryNVStore
from trustlab.timing.clock import Clock, CommandRecord

OWNER, SRK, K, NV = secret("owner"), secret("srk"), secret("k"), secret("nv")
NV_INDEX, NV_SIZE = 0x00011000, 32


def nv_public(index: int, attrs: int, size: int) -> bytes:
    pcr = b"\x00\x03\x00\x00\x00" + b"\x1f" + b"\x00" * 20
    return (struct.pack(">HI", C.TPM_TAG_NV_DATA_PUBLIC, index) + pcr + pcr
            + struct.pack(">HI", C.TPM_TAG_NV_ATTRIBUTES, attrs) + b"\x00\x00\x00" + struct.pack(">I", size))


def run(clock: Clock, keygen=None) -> dict[str, CommandRecord]:
    tpm = Tpm12(clock, nv=MemoryNVStore(), keygen=keygen, started=False)
    out: dict[str, CommandRecord] = {}

    def rec(name: str) -> None:
        assert clock.last is not None and clock.last.name == name, (name, clock.last)
        out[name] = clock.last

    def oiap(secret_: bytes):
        s = tpm.TPM_OIAP(secret_)
        s.cont = False
        return s

    u32 = struct.Struct(">I").pack
    tpm.TPM_Startup()
    rec("TPM_Startup")
    tpm.call("TPM_SelfTestFull")
    rec("TPM_SelfTestFull")
    tpm.call("TPM_GetTestResult")
    rec("TPM_GetTestResult")
    tpm.call("TPM_GetCapability", params=u32(C.TPM_CAP_VERSION_VAL) + u32(0))
    rec("TPM_GetCapability")
    tpm.TPM_ReadPubek()
    rec("TPM_ReadPubek")
    tpm.TPM_TakeOwnership(OWNER, SRK)
    rec("TPM_TakeOwnership")
    tpm.TPM_GetRandom(20)
    rec("TPM_GetRandom")
    tpm.TPM_Extend(10, b"\x01" * 20)
    rec("TPM_Extend")
    tpm.TPM_PCRRead(10)
    rec("TPM_PCRRead")
    s = tpm.TPM_OIAP(K)
    rec("TPM_OIAP")
    tpm.TPM_FlushSpecific(s.handle, C.TPM_RT_AUTH)
    rec("TPM_FlushSpecific")
    s = tpm.TPM_OSAP(C.TPM_ET_OWNER, C.TPM_KH_OWNER, OWNER)
    rec("TPM_OSAP")
    tpm.TPM_FlushSpecific(s.handle, C.TPM_RT_AUTH)
    tpm.call("TPM_OwnerReadInternalPub", params=u32(C.TPM_KH_SRK), auth=[oiap(OWNER)])
    rec("TPM_OwnerReadInternalPub")

    srk = C.TPM_KH_SRK
    legacy = Key11(C.TPM_KEY_SIGNING, 0, C.TPM_AUTH_ALWAYS,
                   KeyParms(C.TPM_ALG_RSA, C.TPM_ES_NONE, C.TPM_SS_RSASSAPKCS1v15_SHA1), b"")
    blob = tpm.TPM_CreateWrapKey(srk, SRK, legacy, K)
    tpm.call("TPM_LoadKey", handles=[srk], params=blob, auth=[oiap(SRK)])
    rec("TPM_LoadKey")
    sign = tpm.TPM_LoadKey2(srk, tpm.TPM_CreateWrapKey(srk, SRK, key_template(C.TPM_KEY_SIGNING), K), SRK)
    tpm.TPM_GetPubKey(sign, oiap(K))
    rec("TPM_GetPubKey")
    tpm.call("TPM_GetTicks")
    rec("TPM_GetTicks")
    tpm.call("TPM_TickStampBlob", handles=[sign], params=b"a" * 20 + b"d" * 20, auth=[oiap(K)])
    rec("TPM_TickStampBlob")
    tpm.call("TPM_Quote2", handles=[sign], params=b"n" * 20 + b"\x00\x03\x00\x04\x00" + b"\x00", auth=[oiap(K)])
    rec("TPM_Quote2")

    osap = tpm.TPM_OSAP(C.TPM_ET_OWNER, C.TPM_KH_OWNER, OWNER)
    osap.cont = False
    tpm.call("TPM_NV_DefineSpace", params=nv_public(NV_INDEX, C.TPM_NV_PER_OWNERWRITE | C.TPM_NV_PER_OWNERREAD,
                                                    NV_SIZE) + osap.encrypt_auth(NV), auth=[osap])
    rec("TPM_NV_DefineSpace")
    tpm.call("TPM_NV_WriteValue", params=u32(NV_INDEX) + u32(0) + u32(NV_SIZE) + b"w" * NV_SIZE,
             auth=[oiap(OWNER)])
    rec("TPM_NV_WriteValue")
    tpm.call("TPM_NV_ReadValue", params=u32(NV_INDEX) + u32(0) + u32(NV_SIZE), auth=[oiap(OWNER)])
    rec("TPM_NV_ReadValue")

    cid, _ = tpm.TPM_CreateCounter(OWNER, K)
    rec("TPM_CreateCounter")
    tpm.TPM_IncrementCounter(cid, oiap(K))
    rec("TPM_IncrementCounter")
    tpm.TPM_ReadCounter(cid)
    rec("TPM_ReadCounter")
    key_s = tpm.TPM_OIAP(K)
    t = tpm.TPM_EstablishTransport(secret("t"))
    rec("TPM_EstablishTransport")
    with tpm.through(t):
        tpm.TPM_ReadCounter(cid)
    rec("TPM_ExecuteTransport")
    key_s.cont = False
    tpm.TPM_ReleaseTransportSigned(sign, b"r" * 20, t, key_s)
    rec("TPM_ReleaseTransportSigned")
    tpm.TPM_ReleaseCounter(cid, oiap(K))
    rec("TPM_ReleaseCounter")

    tpm.call("TPM_ContinueSelfTest")
    rec("TPM_ContinueSelfTest")
    tpm.call("TPM_ResetLockValue", auth=[oiap(OWNER)])
    rec("TPM_ResetLockValue")
    tpm.call("TPM_PCR_Reset", params=b"\x00\x03\x00\x00\x01")
    rec("TPM_PCR_Reset")
    tpm.call("TPM_OwnerReadPubek", auth=[oiap(OWNER)])
    rec("TPM_OwnerReadPubek")
    tpm.TPM_CreateWrapKey(srk, SRK, key_template(C.TPM_KEY_SIGNING), K)
    rec("TPM_CreateWrapKey")
    tpm.TPM_MakeIdentity(OWNER, SRK, K)
    rec("TPM_MakeIdentity")

    osap = tpm.TPM_OSAP(C.TPM_ET_OWNER, C.TPM_KH_OWNER, OWNER)
    osap.cont = False
    tpm.call("TPM_NV_DefineSpace", params=nv_public(NV_INDEX + 1, C.TPM_NV_PER_AUTHWRITE | C.TPM_NV_PER_AUTHREAD,
                                                    NV_SIZE) + osap.encrypt_auth(NV), auth=[osap])
    tpm.call("TPM_NV_WriteValueAuth", params=u32(NV_INDEX + 1) + u32(0) + u32(NV_SIZE) + b"a" * NV_SIZE,
             auth=[oiap(NV)])
    rec("TPM_NV_WriteValueAuth")
    tpm.call("TPM_NV_ReadValueAuth", params=u32(NV_INDEX + 1) + u32(0) + u32(NV_SIZE), auth=[oiap(NV)])
    rec("TPM_NV_ReadValueAuth")

    tpm.call("TPM_SetOrdinalAuditStatus", params=u32(C.ORD["TPM_GetRandom"]) + b"\x01", auth=[oiap(OWNER)])
    rec("TPM_SetOrdinalAuditStatus")
    tpm.call("TPM_GetAuditDigest", params=u32(0))
    rec("TPM_GetAuditDigest")
    tpm.call("TPM_GetAuditDigestSigned", handles=[sign], params=b"\x00" + b"a" * 20, auth=[oiap(K)])
    rec("TPM_GetAuditDigestSigned")
    tpm.call("TPM_SetOrdinalAuditStatus", params=u32(C.ORD["TPM_GetRandom"]) + b"\x00", auth=[oiap(OWNER)])

    # a signed ticket from a migration authority; a plain migration blob converted by this TPM
    ma_pub = tpm.TPM_GetPubKey(sign, oiap(K))
    signed = b"s" * 20
    sig = tpm.TPM_Sign(sign, signed, oiap(K))
    tpm.TPM_CMK_CreateTicket(oiap(OWNER), ma_pub, signed, sig)
    rec("TPM_CMK_CreateTicket")
    storage_blob = tpm.TPM_CreateWrapKey(srk, SRK, key_template(C.TPM_KEY_STORAGE), K)
    storage = tpm.TPM_LoadKey2(srk, storage_blob, SRK)
    mka = tpm.TPM_AuthorizeMigrationKey(oiap(OWNER), Key12.from_bytes(storage_blob).pubkey(), C.TPM_MS_MIGRATE)
    mig = Key12.from_bytes(tpm.TPM_CreateWrapKey(srk, SRK, key_template(C.TPM_KEY_SIGNING, migratable=True), K,
                                                 migration_auth=NV))
    random, blob = tpm.TPM_CreateMigrationBlob(srk, oiap(SRK), mka, mig.enc, oiap(NV))
    tpm.call("TPM_ConvertMigrationBlob", handles=[storage],
             params=u32(len(blob)) + blob + u32(len(random)) + random, auth=[oiap(K)])
    rec("TPM_ConvertMigrationBlob")

    tpm.call("TPM_SaveState")
    rec("TPM_SaveState")

    factory = Tpm12(clock, engine=Engine(clock, MemoryNVStore(), keygen, ek=False))  # no EK yet
    factory.call("TPM_CreateEndorsementKeyPair", params=b"e" * 20 + KeyParms(
        C.TPM_ALG_RSA, C.TPM_ES_RSAESOAEP_SHA1_MGF1, C.TPM_SS_NONE).marshal())
    rec("TPM_CreateEndorsementKeyPair")
    return out

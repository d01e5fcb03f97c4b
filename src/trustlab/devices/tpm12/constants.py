"""TPM 1.2 numbers: tags, ordinals, return codes, key usages (TCG TPM Main Part 2, rev 116).

Every value here was checked against Part 2 and libtpms' ``tpm_constants.h`` /
``tpm_error.h`` / ``tpm_structures.h`` (the conformance suite in
``tests/tpm12/`` holds the engine to libtpms' answers). Kept in one table-like
module so that a command module reads like Part 3 of the specification.
What-if commands (TPM_HMAC, TPM_ExecuteHashTree) use the vendor-specific
ordinal range (``TPM_VENDOR_COMMAND``, bit 0x20000000, Part 2, 17), which no
TCG command and nothing TrouSerS sends uses.
"""

from __future__ import annotations

# ---- command tags (Part 2, 3.1) ----
TPM_TAG_RQU_COMMAND = 0x00C1
TPM_TAG_RQU_AUTH1_COMMAND = 0x00C2
TPM_TAG_RQU_AUTH2_COMMAND = 0x00C3
TPM_TAG_RSP_COMMAND = 0x00C4
TPM_TAG_RSP_AUTH1_COMMAND = 0x00C5
TPM_TAG_RSP_AUTH2_COMMAND = 0x00C6
REQUEST_TAGS = {TPM_TAG_RQU_COMMAND: 0, TPM_TAG_RQU_AUTH1_COMMAND: 1, TPM_TAG_RQU_AUTH2_COMMAND: 2}
RESPONSE_TAG = {0: TPM_TAG_RSP_COMMAND, 1: TPM_TAG_RSP_AUTH1_COMMAND, 2: TPM_TAG_RSP_AUTH2_COMMAND}

# ---- structure tags (Part 2, 3.2, TPM_STRUCTURE_TAG) ----
TPM_TAG_SIGNINFO = 0x0005
TPM_TAG_PCR_INFO_LONG = 0x0006
TPM_TAG_COUNTER_VALUE = 0x000E
TPM_TAG_TRANSPORT_LOG_IN = 0x0010
TPM_TAG_TRANSPORT_LOG_OUT = 0x0011
TPM_TAG_CURRENT_TICKS = 0x0014
TPM_TAG_STORED_DATA12 = 0x0016
TPM_TAG_EK_BLOB = 0x000C
TPM_TAG_EK_BLOB_ACTIVATE = 0x002B
TPM_EK_TYPE_ACTIVATE = 0x0001
TPM_TAG_NV_ATTRIBUTES = 0x0017
TPM_TAG_NV_DATA_PUBLIC = 0x0018
TPM_TAG_TRANSPORT_AUTH = 0x001D
TPM_TAG_TRANSPORT_PUBLIC = 0x001E
TPM_TAG_PERMANENT_FLAGS = 0x001F
TPM_TAG_STCLEAR_FLAGS = 0x0020
TPM_TAG_KEY12 = 0x0028
TPM_TAG_CERTIFY_INFO2 = 0x0029
TPM_TAG_CAP_VERSION_INFO = 0x0030
TPM_TAG_CMK_MIGAUTH = 0x0033
TPM_TAG_CMK_SIGTICKET = 0x0034
TPM_TAG_CMK_MA_APPROVAL = 0x0035
TPM_TAG_QUOTE_INFO2 = 0x0036
TPM_TAG_DA_INFO = 0x0037

# ---- ordinals (Part 2, 17), the full TPM 1.2 set; a registered handler makes one implemented ----
ORD = {
    "TPM_OIAP": 0xa,
    "TPM_OSAP": 0xb,
    "TPM_ChangeAuth": 0xc,
    "TPM_TakeOwnership": 0xd,
    "TPM_ChangeAuthAsymStart": 0xe,
    "TPM_ChangeAuthAsymFinish": 0xf,
    "TPM_ChangeAuthOwner": 0x10,
    "TPM_DSAP": 0x11,
    "TPM_CMK_CreateTicket": 0x12,
    "TPM_CMK_CreateKey": 0x13,
    "TPM_Extend": 0x14,
    "TPM_PCRRead": 0x15,
    "TPM_Quote": 0x16,
    "TPM_Seal": 0x17,
    "TPM_Unseal": 0x18,
    "TPM_DirWriteAuth": 0x19,
    "TPM_DirRead": 0x1a,
    "TPM_CMK_CreateBlob": 0x1b,
    "TPM_CMK_SetRestrictions": 0x1c,
    "TPM_CMK_ApproveMA": 0x1d,
    "TPM_UnBind": 0x1e,
    "TPM_CreateWrapKey": 0x1f,
    "TPM_LoadKey": 0x20,
    "TPM_GetPubKey": 0x21,
    "TPM_EvictKey": 0x22,
    "TPM_KeyControlOwner": 0x23,
    "TPM_CMK_ConvertMigration": 0x24,
    "TPM_MigrateKey": 0x25,
    "TPM_CreateMigrationBlob": 0x28,
    "TPM_DAA_Join": 0x29,
    "TPM_ConvertMigrationBlob": 0x2a,
    "TPM_AuthorizeMigrationKey": 0x2b,
    "TPM_CreateMaintenanceArchive": 0x2c,
    "TPM_LoadMaintenanceArchive": 0x2d,
    "TPM_KillMaintenanceFeature": 0x2e,
    "TPM_LoadManuMaintPub": 0x2f,
    "TPM_ReadManuMaintPub": 0x30,
    "TPM_DAA_Sign": 0x31,
    "TPM_CertifyKey": 0x32,
    "TPM_CertifyKey2": 0x33,
    "TPM_Sign": 0x3c,
    "TPM_Sealx": 0x3d,
    "TPM_Quote2": 0x3e,
    "TPM_SetCapability": 0x3f,
    "TPM_ResetLockValue": 0x40,
    "TPM_LoadKey2": 0x41,
    "TPM_GetRandom": 0x46,
    "TPM_StirRandom": 0x47,
    "TPM_SelfTestFull": 0x50,
    "TPM_CertifySelfTest": 0x52,
    "TPM_ContinueSelfTest": 0x53,
    "TPM_GetTestResult": 0x54,
    "TPM_Reset": 0x5a,
    "TPM_OwnerClear": 0x5b,
    "TPM_DisableOwnerClear": 0x5c,
    "TPM_ForceClear": 0x5d,
    "TPM_DisableForceClear": 0x5e,
    "TPM_GetCapabilitySigned": 0x64,
    "TPM_GetCapability": 0x65,
    "TPM_GetCapabilityOwner": 0x66,
    "TPM_OwnerSetDisable": 0x6e,
    "TPM_PhysicalEnable": 0x6f,
    "TPM_PhysicalDisable": 0x70,
    "TPM_SetOwnerInstall": 0x71,
    "TPM_PhysicalSetDeactivated": 0x72,
    "TPM_SetTempDeactivated": 0x73,
    "TPM_SetOperatorAuth": 0x74,
    "TPM_SetOwnerPointer": 0x75,
    "TPM_CreateEndorsementKeyPair": 0x78,
    "TPM_MakeIdentity": 0x79,
    "TPM_ActivateIdentity": 0x7a,
    "TPM_ReadPubek": 0x7c,
    "TPM_OwnerReadPubek": 0x7d,
    "TPM_DisablePubekRead": 0x7e,
    "TPM_CreateRevocableEK": 0x7f,
    "TPM_RevokeTrust": 0x80,
    "TPM_OwnerReadInternalPub": 0x81,
    "TPM_GetAuditEvent": 0x82,
    "TPM_GetAuditEventSigned": 0x83,
    "TPM_GetAuditDigest": 0x85,
    "TPM_GetAuditDigestSigned": 0x86,
    "TPM_GetOrdinalAuditStatus": 0x8c,
    "TPM_SetOrdinalAuditStatus": 0x8d,
    "TPM_Terminate_Handle": 0x96,
    "TPM_Init": 0x97,
    "TPM_SaveState": 0x98,
    "TPM_Startup": 0x99,
    "TPM_SetRedirection": 0x9a,
    "TPM_SHA1Start": 0xa0,
    "TPM_SHA1Update": 0xa1,
    "TPM_SHA1Complete": 0xa2,
    "TPM_SHA1CompleteExtend": 0xa3,
    "TPM_FieldUpgrade": 0xaa,
    "TPM_SaveKeyContext": 0xb4,
    "TPM_LoadKeyContext": 0xb5,
    "TPM_SaveAuthContext": 0xb6,
    "TPM_LoadAuthContext": 0xb7,
    "TPM_SaveContext": 0xb8,
    "TPM_LoadContext": 0xb9,
    "TPM_FlushSpecific": 0xba,
    "TPM_PCR_Reset": 0xc8,
    "TPM_NV_DefineSpace": 0xcc,
    "TPM_NV_WriteValue": 0xcd,
    "TPM_NV_WriteValueAuth": 0xce,
    "TPM_NV_ReadValue": 0xcf,
    "TPM_NV_ReadValueAuth": 0xd0,
    "TPM_Delegate_UpdateVerification": 0xd1,
    "TPM_Delegate_Manage": 0xd2,
    "TPM_Delegate_CreateKeyDelegation": 0xd4,
    "TPM_Delegate_CreateOwnerDelegation": 0xd5,
    "TPM_Delegate_VerifyDelegation": 0xd6,
    "TPM_Delegate_LoadOwnerDelegation": 0xd8,
    "TPM_Delegate_ReadTable": 0xdb,
    "TPM_CreateCounter": 0xdc,
    "TPM_IncrementCounter": 0xdd,
    "TPM_ReadCounter": 0xde,
    "TPM_ReleaseCounter": 0xdf,
    "TPM_ReleaseCounterOwner": 0xe0,
    "TPM_EstablishTransport": 0xe6,
    "TPM_ExecuteTransport": 0xe7,
    "TPM_ReleaseTransportSigned": 0xe8,
    "TPM_GetTicks": 0xf1,
    "TPM_TickStampBlob": 0xf2,
    "TSC_PhysicalPresence": 0x4000000a,
    "TSC_ResetEstablishmentBit": 0x4000000b,
    # what-if commands (vendor range, TPM_VENDOR_COMMAND)
    "TPM_HMAC": 0x20000001, "TPM_ExecuteHashTree": 0x20000002,
}
TPM_VENDOR_COMMAND = 0x20000000

# ---- return codes (Part 2, 16) ----
TPM_SUCCESS = 0x00
TPM_NON_FATAL = 0x800
RC = {
    "TPM_AUTHFAIL": 0x1,
    "TPM_BADINDEX": 0x2,
    "TPM_BAD_PARAMETER": 0x3,
    "TPM_AUDITFAILURE": 0x4,
    "TPM_CLEAR_DISABLED": 0x5,
    "TPM_DEACTIVATED": 0x6,
    "TPM_DISABLED": 0x7,
    "TPM_DISABLED_CMD": 0x8,
    "TPM_FAIL": 0x9,
    "TPM_BAD_ORDINAL": 0xa,
    "TPM_INSTALL_DISABLED": 0xb,
    "TPM_INVALID_KEYHANDLE": 0xc,
    "TPM_KEYNOTFOUND": 0xd,
    "TPM_INAPPROPRIATE_ENC": 0xe,
    "TPM_MIGRATEFAIL": 0xf,
    "TPM_INVALID_PCR_INFO": 0x10,
    "TPM_NOSPACE": 0x11,
    "TPM_NOSRK": 0x12,
    "TPM_NOTSEALED_BLOB": 0x13,
    "TPM_OWNER_SET": 0x14,
    "TPM_RESOURCES": 0x15,
    "TPM_SHORTRANDOM": 0x16,
    "TPM_SIZE": 0x17,
    "TPM_WRONGPCRVAL": 0x18,
    "TPM_BAD_PARAM_SIZE": 0x19,
    "TPM_SHA_THREAD": 0x1a,
    "TPM_SHA_ERROR": 0x1b,
    "TPM_FAILEDSELFTEST": 0x1c,
    "TPM_AUTH2FAIL": 0x1d,
    "TPM_BADTAG": 0x1e,
    "TPM_IOERROR": 0x1f,
    "TPM_ENCRYPT_ERROR": 0x20,
    "TPM_DECRYPT_ERROR": 0x21,
    "TPM_INVALID_AUTHHANDLE": 0x22,
    "TPM_NO_ENDORSEMENT": 0x23,
    "TPM_INVALID_KEYUSAGE": 0x24,
    "TPM_WRONG_ENTITYTYPE": 0x25,
    "TPM_INVALID_POSTINIT": 0x26,
    "TPM_INAPPROPRIATE_SIG": 0x27,
    "TPM_BAD_KEY_PROPERTY": 0x28,
    "TPM_BAD_MIGRATION": 0x29,
    "TPM_BAD_SCHEME": 0x2a,
    "TPM_BAD_DATASIZE": 0x2b,
    "TPM_BAD_MODE": 0x2c,
    "TPM_BAD_PRESENCE": 0x2d,
    "TPM_BAD_VERSION": 0x2e,
    "TPM_NO_WRAP_TRANSPORT": 0x2f,
    "TPM_AUDITFAIL_UNSUCCESSFUL": 0x30,
    "TPM_AUDITFAIL_SUCCESSFUL": 0x31,
    "TPM_NOTRESETABLE": 0x32,
    "TPM_NOTLOCAL": 0x33,
    "TPM_BAD_TYPE": 0x34,
    "TPM_INVALID_RESOURCE": 0x35,
    "TPM_NOTFIPS": 0x36,
    "TPM_INVALID_FAMILY": 0x37,
    "TPM_NO_NV_PERMISSION": 0x38,
    "TPM_REQUIRES_SIGN": 0x39,
    "TPM_KEY_NOTSUPPORTED": 0x3a,
    "TPM_AUTH_CONFLICT": 0x3b,
    "TPM_AREA_LOCKED": 0x3c,
    "TPM_BAD_LOCALITY": 0x3d,
    "TPM_READ_ONLY": 0x3e,
    "TPM_PER_NOWRITE": 0x3f,
    "TPM_FAMILYCOUNT": 0x40,
    "TPM_WRITE_LOCKED": 0x41,
    "TPM_BAD_ATTRIBUTES": 0x42,
    "TPM_INVALID_STRUCTURE": 0x43,
    "TPM_KEY_OWNER_CONTROL": 0x44,
    "TPM_BAD_COUNTER": 0x45,
    "TPM_NOT_FULLWRITE": 0x46,
    "TPM_CONTEXT_GAP": 0x47,
    "TPM_MAXNVWRITES": 0x48,
    "TPM_NOOPERATOR": 0x49,
    "TPM_RESOURCEMISSING": 0x4a,
    "TPM_DELEGATE_LOCK": 0x4b,
    "TPM_DELEGATE_FAMILY": 0x4c,
    "TPM_DELEGATE_ADMIN": 0x4d,
    "TPM_TRANSPORT_NOTEXCLUSIVE": 0x4e,
    "TPM_OWNER_CONTROL": 0x4f,
    "TPM_DAA_RESOURCES": 0x50,
    "TPM_DAA_INPUT_DATA0": 0x51,
    "TPM_DAA_INPUT_DATA1": 0x52,
    "TPM_DAA_ISSUER_SETTINGS": 0x53,
    "TPM_DAA_TPM_SETTINGS": 0x54,
    "TPM_DAA_STAGE": 0x55,
    "TPM_DAA_ISSUER_VALIDITY": 0x56,
    "TPM_DAA_WRONG_W": 0x57,
    "TPM_BAD_HANDLE": 0x58,
    "TPM_BAD_DELEGATE": 0x59,
    "TPM_BADCONTEXT": 0x5a,
    "TPM_TOOMANYCONTEXTS": 0x5b,
    "TPM_MA_TICKET_SIGNATURE": 0x5c,
    "TPM_MA_DESTINATION": 0x5d,
    "TPM_MA_SOURCE": 0x5e,
    "TPM_MA_AUTHORITY": 0x5f,
    "TPM_PERMANENTEK": 0x61,
    "TPM_BAD_SIGNATURE": 0x62,
    "TPM_NOCONTEXTSPACE": 0x63,
    "TPM_RETRY": 0x800,
    "TPM_NEEDS_SELFTEST": 0x801,
    "TPM_DOING_SELFTEST": 0x802,
    "TPM_DEFEND_LOCK_RUNNING": 0x803,
    # vendor-specific (TPM_VENDOR_ERROR = 0x400): the what-if hash tree
    "TPM_BAD_HASHTREE": 0x401,
}
RC_NAME = {v: k for k, v in RC.items()}

# ---- key usages, flags, schemes (Part 2, 5.8-5.10, 4.x) ----
TPM_KEY_SIGNING = 0x0010
TPM_KEY_STORAGE = 0x0011
TPM_KEY_IDENTITY = 0x0012
TPM_KEY_AUTHCHANGE = 0x0013
TPM_KEY_BIND = 0x0014
TPM_KEY_LEGACY = 0x0015
TPM_KEY_MIGRATE = 0x0016
TPM_KEY_HMAC = 0x0020  # what-if: symmetric HMAC key (Gunupudi & Tate, Sec. VI-A), outside TPM_KEY_USAGE

# TPM_KEY_FLAGS (Part 2, 5.10)
TPM_KEY_FLAG_REDIRECTION = 0x00000001
TPM_KEY_FLAG_MIGRATABLE = 0x00000002
TPM_KEY_FLAG_VOLATILE = 0x00000004
TPM_KEY_FLAG_PCR_IGNORED_ON_READ = 0x00000008
TPM_KEY_FLAG_MIGRATE_AUTHORITY = 0x00000010  # a certified migratable key (CMK)
TPM_KEY_FLAGS_MASK = 0x0000001F

TPM_ALG_RSA = 0x00000001
TPM_ALG_SHA = 0x00000004
TPM_ALG_HMAC = 0x00000005
TPM_ALG_AES128 = 0x00000006
TPM_ALG_MGF1 = 0x00000007
TPM_ALG_AES192 = 0x00000008
TPM_ALG_AES256 = 0x00000009
TPM_ALG_XOR = 0x0000000A
TPM_ES_NONE = 0x0001
TPM_ES_RSAESPKCSv15 = 0x0002
TPM_ES_RSAESOAEP_SHA1_MGF1 = 0x0003
TPM_ES_SYM_CTR = 0x0004
TPM_ES_SYM_OFB = 0x0005
TPM_SS_NONE = 0x0001
TPM_SS_RSASSAPKCS1v15_SHA1 = 0x0002
TPM_SS_RSASSAPKCS1v15_DER = 0x0003
TPM_SS_RSASSAPKCS1v15_INFO = 0x0004

TPM_AUTH_NEVER = 0x00
TPM_AUTH_ALWAYS = 0x01
TPM_AUTH_PRIV_USE_ONLY = 0x11

# migration schemes (Part 2, 5.11)
TPM_MS_MIGRATE = 0x0001
TPM_MS_REWRAP = 0x0002
TPM_MS_MAINT = 0x0003
TPM_MS_RESTRICT_MIGRATE = 0x0004  # CMK to a destination on the msaList, no MA signature
TPM_MS_RESTRICT_APPROVE = 0x0005  # CMK with a migration-authority-signed ticket

# payload types (Part 2, 5.6)
TPM_PT_ASYM = 0x01
TPM_PT_BIND = 0x02
TPM_PT_MIGRATE = 0x03
TPM_PT_MAINT = 0x04
TPM_PT_SEAL = 0x05
TPM_PT_MIGRATE_RESTRICTED = 0x06
TPM_PT_MIGRATE_EXTERNAL = 0x07
TPM_PT_CMK_MIGRATE = 0x08

# entity types (Part 2, 4.9)
TPM_ET_KEYHANDLE = 0x0001
TPM_ET_OWNER = 0x0002
TPM_ET_DATA = 0x0003
TPM_ET_SRK = 0x0004
TPM_ET_KEY = 0x0005
TPM_ET_REVOKE = 0x0006
TPM_ET_COUNTER = 0x000A
TPM_ET_NV = 0x000B
TPM_ET_OPERATOR = 0x000C
TPM_ET_XOR = 0x00  # ADIP encryption scheme in the MSB of TPM_ENTITY_TYPE

# protocol ids (Part 2, 4.8)
TPM_PID_OIAP = 0x0001
TPM_PID_OSAP = 0x0002
TPM_PID_ADIP = 0x0003
TPM_PID_ADCP = 0x0004
TPM_PID_OWNER = 0x0005
TPM_PID_DSAP = 0x0006
TPM_PID_TRANSPORT = 0x0007

# reserved key handles (Part 2, 4.4.1)
TPM_KH_SRK = 0x40000000
TPM_KH_OWNER = 0x40000001
TPM_KH_REVOKE = 0x40000002
TPM_KH_TRANSPORT = 0x40000003
TPM_KH_OPERATOR = 0x40000004
TPM_KH_ADMIN = 0x40000005
TPM_KH_EK = 0x40000006

# startup types (Part 2, 4.5)
TPM_ST_CLEAR = 0x0001
TPM_ST_STATE = 0x0002
TPM_ST_DEACTIVATED = 0x0003

# transport attributes (Part 2, 13.1)
TPM_TRANSPORT_ENCRYPT = 0x00000001
TPM_TRANSPORT_LOG = 0x00000002
TPM_TRANSPORT_EXCLUSIVE = 0x00000004

# resource types (Part 2, 4.1)
TPM_RT_KEY = 0x00000001
TPM_RT_AUTH = 0x00000002
TPM_RT_HASH = 0x00000003
TPM_RT_TRANS = 0x00000004
TPM_RT_CONTEXT = 0x00000005
TPM_RT_COUNTER = 0x00000006
TPM_RT_DELEGATE = 0x00000007
TPM_RT_DAA_TPM = 0x00000008

# capability areas (Part 2, 21.1) and sub-capabilities (21.2)
TPM_CAP_ORD = 0x01
TPM_CAP_ALG = 0x02
TPM_CAP_PID = 0x03
TPM_CAP_FLAG = 0x04
TPM_CAP_PROPERTY = 0x05
TPM_CAP_VERSION = 0x06
TPM_CAP_KEY_HANDLE = 0x07
TPM_CAP_CHECK_LOADED = 0x08
TPM_CAP_SYM_MODE = 0x09
TPM_CAP_KEY_STATUS = 0x0C
TPM_CAP_NV_LIST = 0x0D
TPM_CAP_MFR = 0x10
TPM_CAP_NV_INDEX = 0x11
TPM_CAP_TRANS_ALG = 0x12
TPM_CAP_HANDLE = 0x14
TPM_CAP_TRANS_ES = 0x15
TPM_CAP_AUTH_ENCRYPT = 0x17
TPM_CAP_SELECT_SIZE = 0x18
TPM_CAP_DA_LOGIC = 0x19
TPM_CAP_VERSION_VAL = 0x1A
TPM_CAP_FLAG_PERMANENT = 0x108
TPM_CAP_FLAG_VOLATILE = 0x109

# localities (Part 2, 8.6, TPM_LOCALITY_SELECTION)
TPM_LOC_ZERO, TPM_LOC_ONE, TPM_LOC_TWO, TPM_LOC_THREE, TPM_LOC_FOUR = 0x01, 0x02, 0x04, 0x08, 0x10
TPM_LOC_ALL = 0x1F

# NV (Part 2, 19)
TPM_NV_INDEX_LOCK = 0xFFFFFFFF
TPM_NV_INDEX0 = 0x00000000
TPM_NV_INDEX_DIR = 0x10000001
TPM_NV_INDEX_D_BIT = 0x10000000
TPM_NV_INDEX_RESVD = 0x0F000000
TPM_NV_PER_READ_STCLEAR = 0x80000000
TPM_NV_PER_AUTHREAD = 0x00040000
TPM_NV_PER_OWNERREAD = 0x00020000
TPM_NV_PER_PPREAD = 0x00010000
TPM_NV_PER_GLOBALLOCK = 0x00008000
TPM_NV_PER_WRITE_STCLEAR = 0x00004000
TPM_NV_PER_WRITEDEFINE = 0x00002000
TPM_NV_PER_WRITEALL = 0x00001000
TPM_NV_PER_AUTHWRITE = 0x00000004
TPM_NV_PER_OWNERWRITE = 0x00000002
TPM_NV_PER_PPWRITE = 0x00000001

NUM_PCRS = 24
STRUCT_VER = b"\x01\x01\x00\x00"  # TPM_STRUCT_VER 1.1.0.0 used by 1.1-style structures
DIGEST = 20

TPM_BUFFER_MAX = 4096
"""libtpms' TPM 1.2 command/response buffer (tpm_constants.h TPM_BUFFER_MAX): TPM_CAP_PROP_INPUT_BUFFER by
default, and the largest size swtpm's CMD_SET_BUFFERSIZE accepts."""
TPM_BUFFER_MIN = 3072
"""The smallest buffer libtpms' TPM12_SetBufferSize accepts (swtpm reports it as minsize)."""

"""TPM 1.2 numbers: tags, ordinals, return codes, key usages (TPM Main Part 2, rev 103).

Kept in one table-like module so that a command module reads like Part 3 of
the specification. What-if commands (TPM_HMAC, TPM_ExecuteHashTree) use the
vendor-specific ordinal range (bit 0x20000000), as Part 2 reserves it for
commands outside the TCG set.
"""

from __future__ import annotations

# ---- tags (Part 2, 3.1) ----
TPM_TAG_RQU_COMMAND = 0x00C1
TPM_TAG_RQU_AUTH1_COMMAND = 0x00C2
TPM_TAG_RQU_AUTH2_COMMAND = 0x00C3
TPM_TAG_RSP_COMMAND = 0x00C4
TPM_TAG_RSP_AUTH1_COMMAND = 0x00C5
TPM_TAG_RSP_AUTH2_COMMAND = 0x00C6
REQUEST_TAGS = {TPM_TAG_RQU_COMMAND: 0, TPM_TAG_RQU_AUTH1_COMMAND: 1, TPM_TAG_RQU_AUTH2_COMMAND: 2}
RESPONSE_TAG = {0: TPM_TAG_RSP_COMMAND, 1: TPM_TAG_RSP_AUTH1_COMMAND, 2: TPM_TAG_RSP_AUTH2_COMMAND}

# structure tags
TPM_TAG_KEY12 = 0x0028
TPM_TAG_CERTIFY_INFO2 = 0x0029
TPM_TAG_CMK_MA_APPROVAL = 0x0033
TPM_TAG_CMK_MIGAUTH = 0x0033 + 0x0000  # distinct structure, same family (Part 2, 5.16)
TPM_TAG_COUNTER_VALUE = 0x000E
TPM_TAG_TRANSPORT_PUBLIC = 0x001E
TPM_TAG_TRANSPORT_LOG_IN = 0x001F
TPM_TAG_TRANSPORT_LOG_OUT = 0x0020
TPM_TAG_SIGNINFO = 0x0005
TPM_TAG_STORED_DATA12 = 0x0016

# ---- ordinals (Part 2, 17) ----
ORD = {
    "TPM_OIAP": 0x0A, "TPM_OSAP": 0x0B, "TPM_ChangeAuth": 0x0C, "TPM_TakeOwnership": 0x0D,
    "TPM_CMK_CreateKey": 0x13, "TPM_Extend": 0x14, "TPM_PCRRead": 0x15, "TPM_Quote": 0x16,
    "TPM_Seal": 0x17, "TPM_Unseal": 0x18, "TPM_CMK_CreateBlob": 0x1B, "TPM_CMK_ApproveMA": 0x1D,
    "TPM_UnBind": 0x1E, "TPM_CreateWrapKey": 0x1F, "TPM_GetPubKey": 0x21,
    "TPM_CMK_ConvertMigration": 0x24, "TPM_CreateMigrationBlob": 0x28,
    "TPM_ConvertMigrationBlob": 0x2A, "TPM_AuthorizeMigrationKey": 0x2B,
    "TPM_CertifyKey2": 0x33, "TPM_Sign": 0x3C, "TPM_LoadKey2": 0x41, "TPM_GetRandom": 0x46,
    "TPM_MakeIdentity": 0x79, "TPM_ReadPubek": 0x7C, "TPM_Startup": 0x99, "TPM_FlushSpecific": 0xBA,
    "TPM_CreateCounter": 0xDC, "TPM_IncrementCounter": 0xDD, "TPM_ReadCounter": 0xDE,
    "TPM_ReleaseCounter": 0xDF, "TPM_EstablishTransport": 0xE6, "TPM_ExecuteTransport": 0xE7,
    "TPM_ReleaseTransportSigned": 0xE8,
    # what-if commands (vendor range)
    "TPM_HMAC": 0x20000001, "TPM_ExecuteHashTree": 0x20000002,
}

# ---- return codes (Part 2, 16) ----
TPM_SUCCESS = 0x00
RC = {
    "TPM_AUTHFAIL": 0x01, "TPM_BADINDEX": 0x02, "TPM_BAD_PARAMETER": 0x03, "TPM_FAIL": 0x09,
    "TPM_BAD_ORDINAL": 0x0A, "TPM_INVALID_AUTHHANDLE": 0x0B, "TPM_INVALID_KEYHANDLE": 0x0C,
    "TPM_KEYNOTFOUND": 0x0D, "TPM_INAPPROPRIATE_ENC": 0x0E, "TPM_MIGRATEFAIL": 0x0F,
    "TPM_INVALID_PCR_INFO": 0x10, "TPM_NOSRK": 0x12, "TPM_OWNER_SET": 0x14, "TPM_RESOURCES": 0x15,
    "TPM_WRONGPCRVAL": 0x18, "TPM_BAD_PARAM_SIZE": 0x19, "TPM_AUTH2FAIL": 0x1D,
    "TPM_BADTAG": 0x1E, "TPM_INVALID_POSTINIT": 0x26, "TPM_BAD_KEY_PROPERTY": 0x28,
    "TPM_BAD_MIGRATION": 0x29, "TPM_BAD_SCHEME": 0x2A, "TPM_BAD_DATASIZE": 0x2B, "TPM_BAD_MODE": 0x2C,
    "TPM_DECRYPT_ERROR": 0x21, "TPM_INVALID_KEYUSAGE": 0x24, "TPM_INVALID_STRUCTURE": 0x43,
    "TPM_BAD_COUNTER": 0x45, "TPM_NOT_FULLWRITE": 0x46, "TPM_RESOURCEMISSING": 0x4E,
    "TPM_AUTH_CONFLICT": 0x3B, "TPM_TRANSPORT_NOTEXCLUSIVE": 0x5E,
    "TPM_MA_TICKET_SIGNATURE": 0x5F, "TPM_MA_DESTINATION": 0x60, "TPM_MA_SOURCE": 0x61,
    "TPM_BAD_SIGNATURE": 0x62, "TPM_BAD_HASHTREE": 0x20000001,
}
RC_NAME = {v: k for k, v in RC.items()}

# ---- key usages, flags, schemes (Part 2, 5.8-5.10, 4.x) ----
TPM_KEY_SIGNING = 0x0010
TPM_KEY_STORAGE = 0x0011
TPM_KEY_IDENTITY = 0x0012
TPM_KEY_BIND = 0x0014
TPM_KEY_LEGACY = 0x0015
TPM_KEY_MIGRATE = 0x0016
TPM_KEY_HMAC = 0x0020  # what-if: symmetric HMAC key (Gunupudi & Tate, Sec. VI-A)

TPM_KEY_FLAG_MIGRATABLE = 0x00000002
TPM_KEY_FLAG_MIGRATE_AUTHORITY = 0x00000008  # a certified migratable key (CMK)

TPM_ALG_RSA = 0x00000001
TPM_ALG_HMAC = 0x00000005
TPM_ES_NONE = 0x0001
TPM_ES_RSAESOAEP_SHA1_MGF1 = 0x0003
TPM_SS_NONE = 0x0001
TPM_SS_RSASSAPKCS1v15_SHA1 = 0x0002

TPM_AUTH_NEVER = 0x00
TPM_AUTH_ALWAYS = 0x01

# migration schemes (Part 2, 5.11)
TPM_MS_MIGRATE = 0x0001
TPM_MS_REWRAP = 0x0002
TPM_MS_RESTRICT_MIGRATE = 0x0004  # CMK to a migration-selection authority / destination
TPM_MS_RESTRICT_APPROVE = 0x0005

# payload types (Part 2, 5.6)
TPM_PT_ASYM = 0x01
TPM_PT_MIGRATE = 0x04
TPM_PT_MAINT = 0x05
TPM_PT_MIGRATE_RESTRICTED = 0x06
TPM_PT_MIGRATE_EXTERNAL = 0x07
TPM_PT_CMK_MIGRATE = 0x08

# entity types for OSAP (Part 2, 4.9)
TPM_ET_KEYHANDLE = 0x0001
TPM_ET_OWNER = 0x0002
TPM_ET_SRK = 0x0004
TPM_ET_COUNTER = 0x000A

# well-known handles
TPM_KH_SRK = 0x40000000
TPM_KH_OWNER = 0x40000001
TPM_KH_TRANSPORT = 0x40000007
TPM_KH_EK = 0x40000006

# startup types
TPM_ST_CLEAR = 0x0001
TPM_ST_STATE = 0x0002

# transport attributes (Part 2, 13.1)
TPM_TRANSPORT_ENCRYPT = 0x00000001
TPM_TRANSPORT_LOG = 0x00000002
TPM_TRANSPORT_EXCLUSIVE = 0x00000004

# resource types for FlushSpecific (Part 2, 4.1)
TPM_RT_KEY = 0x00000001
TPM_RT_AUTH = 0x00000002
TPM_RT_TRANS = 0x00000004
TPM_RT_COUNTER = 0x00000006

NUM_PCRS = 24
STRUCT_VER = b"\x01\x01\x00\x00"  # TPM_STRUCT_VER 1.1.0.0 used by 1.1-style structures
DIGEST = 20

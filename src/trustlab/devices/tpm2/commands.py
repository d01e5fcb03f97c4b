"""TPM 2.0 command codes, response codes and algorithm ids (TPM 2.0 Part 2).

Kept as plain tables so the wire layer can name what it sees without any TSS
library: a trace line says ``TPM2_Sign``, not ``0x15d``.
"""

from __future__ import annotations

TPM_ST_NO_SESSIONS = 0x8001
TPM_ST_SESSIONS = 0x8002

TPM_RC_SUCCESS = 0x000
TPM_RC_BAD_TAG = 0x01E
TPM_RC_INITIALIZE = 0x100
TPM_RC_FAILURE = 0x101
TPM_RC_COMMAND_SIZE = 0x142
TPM_RC_COMMAND_CODE = 0x143
TPM_RC_AUTH_FAIL = 0x08E
TPM_RC_HANDLE = 0x08B
TPM_RC_BAD_AUTH = 0x0A2
TPM_RC_NV_DEFINED = 0x14C
TPM_RC_RETRY = 0x922

COMMAND_CODES: dict[int, str] = {
    0x11F: "NV_UndefineSpaceSpecial", 0x120: "EvictControl", 0x121: "HierarchyControl",
    0x122: "NV_UndefineSpace", 0x124: "ChangeEPS", 0x125: "ChangePPS", 0x126: "Clear",
    0x127: "ClearControl", 0x128: "ClockSet", 0x129: "HierarchyChangeAuth",
    0x12A: "NV_DefineSpace", 0x12B: "PCR_Allocate", 0x12C: "PCR_SetAuthPolicy",
    0x12D: "PP_Commands", 0x12E: "SetPrimaryPolicy", 0x12F: "FieldUpgradeStart",
    0x130: "ClockRateAdjust", 0x131: "CreatePrimary", 0x132: "NV_GlobalWriteLock",
    0x133: "GetCommandAuditDigest", 0x134: "NV_Increment", 0x135: "NV_SetBits",
    0x136: "NV_Extend", 0x137: "NV_Write", 0x138: "NV_WriteLock",
    0x139: "DictionaryAttackLockReset", 0x13A: "DictionaryAttackParameters",
    0x13B: "NV_ChangeAuth", 0x13C: "PCR_Event", 0x13D: "PCR_Reset",
    0x13E: "SequenceComplete", 0x13F: "SetAlgorithmSet", 0x140: "SetCommandCodeAuditStatus",
    0x141: "FieldUpgradeData", 0x142: "IncrementalSelfTest", 0x143: "SelfTest",
    0x144: "Startup", 0x145: "Shutdown", 0x146: "StirRandom", 0x147: "ActivateCredential",
    0x148: "Certify", 0x149: "PolicyNV", 0x14A: "CertifyCreation", 0x14B: "Duplicate",
    0x14C: "GetTime", 0x14D: "GetSessionAuditDigest", 0x14E: "NV_Read", 0x14F: "NV_ReadLock",
    0x150: "ObjectChangeAuth", 0x151: "PolicySecret", 0x152: "Rewrap", 0x153: "Create",
    0x154: "ECDH_ZGen", 0x155: "HMAC", 0x156: "Import", 0x157: "Load", 0x158: "Quote",
    0x159: "RSA_Decrypt", 0x15B: "HMAC_Start", 0x15C: "SequenceUpdate", 0x15D: "Sign",
    0x15E: "Unseal", 0x160: "PolicySigned", 0x161: "ContextLoad", 0x162: "ContextSave",
    0x163: "ECDH_KeyGen", 0x164: "EncryptDecrypt", 0x165: "FlushContext",
    0x167: "LoadExternal", 0x168: "MakeCredential", 0x169: "NV_ReadPublic",
    0x16A: "PolicyAuthorize", 0x16B: "PolicyAuthValue", 0x16C: "PolicyCommandCode",
    0x16D: "PolicyCounterTimer", 0x16E: "PolicyCpHash", 0x16F: "PolicyLocality",
    0x170: "PolicyNameHash", 0x171: "PolicyOR", 0x172: "PolicyTicket", 0x173: "ReadPublic",
    0x174: "RSA_Encrypt", 0x176: "StartAuthSession", 0x177: "VerifySignature",
    0x178: "ECC_Parameters", 0x179: "FirmwareRead", 0x17A: "GetCapability",
    0x17B: "GetRandom", 0x17C: "GetTestResult", 0x17D: "Hash", 0x17E: "PCR_Read",
    0x17F: "PolicyPCR", 0x180: "PolicyRestart", 0x181: "ReadClock", 0x182: "PCR_Extend",
    0x183: "PCR_SetAuthValue", 0x184: "NV_Certify", 0x185: "EventSequenceComplete",
    0x186: "HashSequenceStart", 0x187: "PolicyPhysicalPresence",
    0x188: "PolicyDuplicationSelect", 0x189: "PolicyGetDigest", 0x18A: "TestParms",
    0x18B: "Commit", 0x18C: "PolicyPassword", 0x18D: "ZGen_2Phase", 0x18E: "EC_Ephemeral",
    0x18F: "PolicyNvWritten", 0x190: "PolicyTemplate", 0x191: "CreateLoaded",
    0x192: "PolicyAuthorizeNV", 0x193: "EncryptDecrypt2", 0x194: "AC_GetCapability",
    0x195: "AC_Send", 0x196: "Policy_AC_SendSelect", 0x197: "CertifyX509",
    0x198: "ACT_SetTimeout", 0x199: "ECC_Encrypt", 0x19A: "ECC_Decrypt",
    0x19B: "PolicyCapability", 0x19C: "PolicyParameters",
}
CODES_BY_NAME: dict[str, int] = {f"TPM2_{v}": k for k, v in COMMAND_CODES.items()}

# Algorithm ids (TPM_ALG_ID) and curves (TPM_ECC_CURVE) that decide which
# asymmetric component a key-using command charges.
TPM_ALG_RSA = 0x0001
TPM_ALG_KEYEDHASH = 0x0008
TPM_ALG_NULL = 0x0010
TPM_ALG_ECC = 0x0023
TPM_ALG_SYMCIPHER = 0x0025
TPM_ECC_NIST_P256 = 0x0003


def command_name(code: int) -> str:
    """``TPM2_<Name>`` for a known code, ``TPM2_CC_0x...`` otherwise."""
    name = COMMAND_CODES.get(code)
    return f"TPM2_{name}" if name else f"TPM2_CC_{code:#x}"


RC_VER1_NAMES: dict[int, str] = {
    0x000: "INITIALIZE", 0x001: "FAILURE", 0x003: "SEQUENCE", 0x00B: "PRIVATE", 0x019: "HMAC", 0x020: "DISABLED",
    0x021: "EXCLUSIVE", 0x024: "AUTH_TYPE", 0x025: "AUTH_MISSING", 0x026: "POLICY", 0x027: "PCR",
    0x028: "PCR_CHANGED", 0x02D: "UPGRADE", 0x02E: "TOO_MANY_CONTEXTS", 0x02F: "AUTH_UNAVAILABLE", 0x030: "REBOOT",
    0x031: "UNBALANCED", 0x042: "COMMAND_SIZE", 0x043: "COMMAND_CODE", 0x044: "AUTHSIZE", 0x045: "AUTH_CONTEXT",
    0x046: "NV_RANGE", 0x047: "NV_SIZE", 0x048: "NV_LOCKED", 0x049: "NV_AUTHORIZATION", 0x04A: "NV_UNINITIALIZED",
    0x04B: "NV_SPACE", 0x04C: "NV_DEFINED", 0x050: "BAD_CONTEXT", 0x051: "CPHASH", 0x052: "PARENT",
    0x053: "NEEDS_TEST", 0x054: "NO_RESULT", 0x055: "SENSITIVE",
}
"""Format-zero errors (TPM_RC_VER1 + n; Part 2, 6.6.3 Table 16), by n."""
RC_FMT1_NAMES: dict[int, str] = {
    0x001: "ASYMMETRIC", 0x002: "ATTRIBUTES", 0x003: "HASH", 0x004: "VALUE", 0x005: "HIERARCHY", 0x007: "KEY_SIZE",
    0x008: "MGF", 0x009: "MODE", 0x00A: "TYPE", 0x00B: "HANDLE", 0x00C: "KDF", 0x00D: "RANGE", 0x00E: "AUTH_FAIL",
    0x00F: "NONCE", 0x010: "PP", 0x012: "SCHEME", 0x015: "SIZE", 0x016: "SYMMETRIC", 0x017: "TAG",
    0x018: "SELECTOR", 0x01A: "INSUFFICIENT", 0x01B: "SIGNATURE", 0x01C: "KEY", 0x01D: "POLICY_FAIL",
    0x01F: "INTEGRITY", 0x020: "TICKET", 0x021: "RESERVED_BITS", 0x022: "BAD_AUTH", 0x023: "EXPIRED",
    0x024: "POLICY_CC", 0x025: "BINDING", 0x026: "CURVE", 0x027: "ECC_POINT", 0x028: "FW_LIMITED",
    0x029: "SVN_LIMITED", 0x02A: "PARMS", 0x02B: "EXT_MU", 0x02D: "SIGN_CONTEXT_KEY",
}
"""Format-one errors (TPM_RC_FMT1 + n; Table 16, with 1.85's PARMS, EXT_MU, SIGN_CONTEXT_KEY), by n."""
RC_WARN_NAMES: dict[int, str] = {
    0x001: "CONTEXT_GAP", 0x002: "OBJECT_MEMORY", 0x003: "SESSION_MEMORY", 0x004: "MEMORY",
    0x005: "SESSION_HANDLES", 0x006: "OBJECT_HANDLES", 0x007: "LOCALITY", 0x008: "YIELDED", 0x009: "CANCELED",
    0x00A: "TESTING", **{0x010 + i: f"REFERENCE_H{i}" for i in range(7)},
    **{0x018 + i: f"REFERENCE_S{i}" for i in range(7)}, 0x020: "NV_RATE", 0x021: "LOCKOUT", 0x022: "RETRY",
    0x023: "NV_UNAVAILABLE", 0x07F: "NOT_USED",
}
"""Warnings (TPM_RC_WARN + n; Table 16), by n."""


def response_code_text(rc: int) -> str:
    """``0x1df (TPM_RC_INTEGRITY, parameter 1)``: a response code, its TCG name and, for a format-one code,
    the handle, session or parameter it is about (Part 2, 6.6.2 Tables 15 and 16: what tpm2-tools'
    ``tpm2_rc_decode`` tells, by name). A code outside the tables is said as such, never dropped."""
    if rc == 0:
        return "TPM_RC_SUCCESS"
    if not 0 < rc <= 0xFFF:
        return f"{rc:#x} (not a TPM 2.0 response code)"
    if rc & 0x080:  # format one: error number in bits 5:0, then P (bit 6), S (bit 11) and N
        name = RC_FMT1_NAMES.get(rc & 0x3F)
        what = f"TPM_RC_{name}" if name else f"format-one error {rc & 0x3F:#x}"
        if rc & 0x040:
            where = f"parameter {(rc >> 8) & 0xF}"
        else:
            n = (rc >> 8) & 0x7
            where = (f"session {n}" if rc & 0x800 else f"handle {n}") if n else ""
        return f"{rc:#05x} ({what}{', ' + where if where else ''})"
    if rc == TPM_RC_BAD_TAG:
        return f"{rc:#05x} (TPM_RC_BAD_TAG)"
    if not rc & 0x100:
        return f"{rc:#05x} (a TPM 1.2 code)"
    if rc & 0x400:  # T: defined by the TPM's vendor
        return f"{rc:#05x} (vendor-specific {'warning' if rc & 0x800 else 'error'} {rc & 0x7F:#x})"
    table, kind = (RC_WARN_NAMES, "warning") if rc & 0x800 else (RC_VER1_NAMES, "error")
    name = table.get(rc & 0x7F)
    return f"{rc:#05x} ({f'TPM_RC_{name}' if name else f'format-zero {kind} {rc & 0x7F:#x}'})"

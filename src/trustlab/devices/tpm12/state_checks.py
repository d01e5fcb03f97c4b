"""Which TPM state each command checks before it runs (Part 1, 9.4; libtpms ``TPM_CheckState``).

Every libtpms command handler calls ``TPM_CheckState`` with its own map of
checks after loading its parameters: enabled (else TPM_DISABLED), activated
(else TPM_DEACTIVATED), owner installed (else TPM_NOSRK), in that order.
The maps below are libtpms' (tpm12/*.c, grouped by the map each handler
passes): most commands check all three (``TPM_CHECK_ALL``) or all but the
owner (``TPM_CHECK_ALLOW_NO_OWNER``); the rest are listed by what they skip.
A command not named here (a what-if command) checks enabled and activated.
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C


def _ords(*names: str) -> frozenset[int]:
    return frozenset(C.ORD[n] for n in names)


# TPM_CHECK_ALL: enabled, activated and an owner
_ALL = (
    "TPM_ActivateIdentity", "TPM_AuthorizeMigrationKey", "TPM_CMK_ApproveMA", "TPM_CMK_ConvertMigration",
    "TPM_CMK_CreateBlob", "TPM_CMK_CreateKey", "TPM_CMK_CreateTicket", "TPM_CMK_SetRestrictions", "TPM_CertifyKey",
    "TPM_CertifyKey2", "TPM_CertifySelfTest", "TPM_ChangeAuth", "TPM_ChangeAuthAsymFinish",
    "TPM_ChangeAuthAsymStart", "TPM_ChangeAuthOwner", "TPM_ConvertMigrationBlob", "TPM_CreateCounter",
    "TPM_CreateMaintenanceArchive", "TPM_CreateMigrationBlob", "TPM_CreateWrapKey", "TPM_DAA_Join", "TPM_DAA_Sign",
    "TPM_Delegate_CreateKeyDelegation", "TPM_Delegate_CreateOwnerDelegation", "TPM_Delegate_UpdateVerification",
    "TPM_Delegate_VerifyDelegation", "TPM_DisableOwnerClear", "TPM_DisablePubekRead", "TPM_EstablishTransport",
    "TPM_EvictKey", "TPM_ExecuteTransport", "TPM_GetAuditDigestSigned", "TPM_GetCapabilityOwner",
    "TPM_GetCapabilitySigned", "TPM_GetPubKey", "TPM_IncrementCounter", "TPM_KeyControlOwner",
    "TPM_KillMaintenanceFeature", "TPM_LoadContext", "TPM_LoadKey", "TPM_LoadKey2", "TPM_LoadMaintenanceArchive",
    "TPM_MakeIdentity", "TPM_MigrateKey", "TPM_NV_ReadValueAuth", "TPM_NV_WriteValueAuth", "TPM_OwnerClear",
    "TPM_OwnerReadInternalPub", "TPM_OwnerReadPubek", "TPM_Quote", "TPM_Quote2", "TPM_ReleaseCounterOwner",
    "TPM_ReleaseTransportSigned", "TPM_SaveContext", "TPM_Seal", "TPM_Sealx", "TPM_SetOrdinalAuditStatus",
    "TPM_SetOwnerPointer", "TPM_Sign", "TPM_TickStampBlob", "TPM_UnBind", "TPM_Unseal")
# not checking enabled nor activated (TPM_CHECK_NOT_SHUTDOWN | TPM_CHECK_NO_LOCKOUT [| TPM_CHECK_OWNER], or
# TPM_CHECK_NO_LOCKOUT only, or nothing: TPM_Startup)
_NEITHER = (
    "TPM_Startup", "TPM_ContinueSelfTest", "TPM_Extend", "TPM_FlushSpecific", "TPM_OIAP", "TPM_PCR_Reset",
    "TPM_PhysicalEnable", "TSC_PhysicalPresence", "TPM_Reset", "TSC_ResetEstablishmentBit", "TPM_SHA1Complete",
    "TPM_SHA1CompleteExtend", "TPM_SHA1Start", "TPM_SHA1Update", "TPM_SaveState", "TPM_SelfTestFull",
    "TPM_SetCapability", "TPM_Terminate_Handle", "TPM_NV_ReadValue", "TPM_NV_WriteValue", "TPM_DSAP", "TPM_OSAP",
    "TPM_OwnerSetDisable", "TPM_GetCapability", "TPM_GetTestResult")

# the TPM's state does not stop these: disabled (TPM_DISABLED) / deactivated (TPM_DEACTIVATED)
SKIP_ENABLED = _ords(*_NEITHER, "TPM_SetTempDeactivated")
SKIP_ACTIVATED = _ords(*_NEITHER, "TPM_PhysicalDisable", "TPM_PhysicalSetDeactivated", "TPM_TakeOwnership")
# these need an owner (TPM_NOSRK), checked after enabled and activated
NEEDS_OWNER = _ords(*_ALL, "TPM_DSAP", "TPM_OSAP", "TPM_OwnerSetDisable", "TPM_ResetLockValue")
# TPM_CHECK_NV_NOAUTH: while nvLocked is FALSE, not stopped by disabled or deactivated
NV_NOAUTH = _ords("TPM_NV_DefineSpace")

"""TPM_PERMANENT_FLAGS and TPM_STCLEAR_FLAGS (Part 2, 7.1-7.2): what the flags are and where they live.

A permanent flag the owner or physical presence set is kept in the engine's
persistent ``extra`` map under ``pf.<name>`` only while it differs from its
default, so the saved state of a TPM whose flags were never touched is the
same bytes as before the flags existed. Some permanent flags are facts of
other state and are derived, not stored: ownership of an EK made by
TPM_CreateEndorsementKeyPair (CEKPUsed), no EK yet (enableRevokeEK), nvLocked,
tpmEstablished. readPubek defaults to "no owner" (TPM_TakeOwnership clears
it, Part 3 6.1 step 13). The defaults are libtpms' as swtpm builds it
(``TPM_ENABLE_ACTIVATE``: enabled and activated from the factory;
``TPM_PermanentFlags_Init``).

The volatile flags (deactivated, disableForceClear, physicalPresence,
physicalPresenceLock, bGlobalLock) are engine attributes that TPM_Startup
resets.
"""

from __future__ import annotations

# Part 2, 7.1, in order: bit i of GetCapabilityOwner's non_volatile_flags is flag i (TPM_PF_* = i + 1)
PERMANENT = ("disable", "ownership", "deactivated", "readPubek", "disableOwnerClear", "allowMaintenance",
             "physicalPresenceLifetimeLock", "physicalPresenceHWEnable", "physicalPresenceCMDEnable",
             "CEKPUsed", "TPMpost", "TPMpostLock", "FIPS", "operator", "enableRevokeEK", "nvLocked",
             "readSRKPub", "tpmEstablished", "maintenanceDone", "disableFullDALogicInfo")
DEFAULTS = {name: False for name in PERMANENT} | {"ownership": True, "allowMaintenance": True}
_PREFIX = "pf."
EK_RESET = "ek_reset"  # TPM_PERMANENT_DATA -> EKreset (hex) of a revocable EK (commands/revoke.py)
ESTABLISHED = "tpm_established"  # (serving/tpm12/engine_backend.py keeps tpmEstablished under this key)


def permanent(tpm, name: str) -> bool:
    """The current value of one TPM_PERMANENT_FLAGS member."""
    extra = tpm.state.extra
    if name == "CEKPUsed":
        return extra.get("cekp_used") == "1"
    if name == "enableRevokeEK":  # TRUE without an EK, or with one made by TPM_CreateRevocableEK
        return tpm.state.ek is None or EK_RESET in extra
    if name == "nvLocked":
        return extra.get("nv_locked") == "1"
    if name == "tpmEstablished":
        return extra.get(ESTABLISHED) == "1"
    stored = extra.get(_PREFIX + name)
    if stored is not None:
        return stored == "1"
    if name == "readPubek":
        return tpm.state.owner_auth is None
    return DEFAULTS[name]


def set_permanent(tpm, name: str, value: bool) -> None:
    """Set a stored permanent flag (persisted before the response, like every NV change)."""
    key = _PREFIX + name
    default = (tpm.state.owner_auth is None) if name == "readPubek" else DEFAULTS[name]
    if value == default and name != "readPubek":
        if tpm.state.extra.pop(key, None) is not None:
            tpm.mark_dirty()
    elif tpm.state.extra.get(key) != ("1" if value else "0"):
        tpm.state.extra[key] = "1" if value else "0"
        tpm.mark_dirty()
    if name == "disable":
        tpm.disabled = value


def forget_permanent(tpm, name: str) -> None:
    """Back to the default (TPM_OwnerClear / TPM_ForceClear reset some flags)."""
    if tpm.state.extra.pop(_PREFIX + name, None) is not None:
        tpm.mark_dirty()
    if name == "disable":
        tpm.disabled = DEFAULTS["disable"]


def permanent_bits(tpm) -> list[bool]:
    return [permanent(tpm, name) for name in PERMANENT]


def bitmap(bits: list[bool]) -> int:
    """libtpms TPM_Bitmap_Store: flag i at bit i (GetCapabilityOwner)."""
    return sum(1 << i for i, b in enumerate(bits) if b)


def stclear_bits(tpm) -> list[bool]:
    """TPM_STCLEAR_FLAGS, in order: deactivated, disableForceClear, physicalPresence,
    physicalPresenceLock, bGlobalLock."""
    return [tpm.deactivated, tpm.disable_force_clear, tpm.physical_presence, tpm.pp_lock, tpm.global_lock]

"""Physical presence and what it authorizes (Part 3, 6.3, 6.6-6.9, 7.x; TSC_PhysicalPresence, TCG PC
Client / Part 3 28.x).

A platform BIOS proves that a person is at the machine by sending
TSC_PhysicalPresence: first PHYSICAL_PRESENCE_CMD_ENABLE (a permanent flag:
the command interface may assert presence), then PRESENT (a volatile flag,
until TPM_Startup or NOTPRESENT). Presence authorizes enabling, disabling and
(de)activating the TPM, allowing TPM_TakeOwnership, setting the operator
secret and TPM_ForceClear. Checks and their order follow libtpms
(``TPM_Process_PhysicalPresence`` and the tpm_admin.c / tpm_owner.c handlers).
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import flags
from trustlab.devices.tpm12.commands.owner import OPERATOR_AUTH, clear_owner, read_bool
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.registry import Request, Response, tpm_command

# TPM_PHYSICAL_PRESENCE bits (Part 2, 4.13)
HW_DISABLE, CMD_DISABLE, LIFETIME_LOCK, HW_ENABLE = 0x0200, 0x0100, 0x0080, 0x0040
CMD_ENABLE, NOTPRESENT, PRESENT, LOCK = 0x0020, 0x0010, 0x0008, 0x0004
_LIFETIME = LIFETIME_LOCK | HW_ENABLE | CMD_ENABLE | HW_DISABLE | CMD_DISABLE
_ASSERTION = LOCK | PRESENT | NOTPRESENT
_MASK = ~(_LIFETIME | _ASSERTION) & 0xFFFF


def require_presence(tpm) -> None:
    if not tpm.physical_presence:
        raise TpmError("TPM_BAD_PRESENCE", "physical presence is not asserted")


@tpm_command("TSC_PhysicalPresence")
def physical_presence(tpm, req: Request) -> Response:
    """TSC_PhysicalPresence: lifetime settings (permanent flags) or an assertion (volatile flags)."""
    bits = req.params.u16()
    req.params.end()
    if bits & _MASK:
        raise TpmError("TPM_BAD_PARAMETER", f"physicalPresence {bits:#06x} has undefined bits")
    lifetime, assertion = bits & _LIFETIME, bits & _ASSERTION
    if lifetime:
        if flags.permanent(tpm, "physicalPresenceLifetimeLock"):
            raise TpmError("TPM_BAD_PARAMETER", "the physical presence settings are locked for life")
        if assertion:
            raise TpmError("TPM_BAD_PARAMETER", "lifetime settings and an assertion together")
        if bits & HW_ENABLE and bits & HW_DISABLE or bits & CMD_ENABLE and bits & CMD_DISABLE:
            raise TpmError("TPM_BAD_PARAMETER", "enable and disable together")
        for bit, name, value in ((HW_ENABLE, "physicalPresenceHWEnable", True),
                                 (HW_DISABLE, "physicalPresenceHWEnable", False),
                                 (CMD_ENABLE, "physicalPresenceCMDEnable", True),
                                 (CMD_DISABLE, "physicalPresenceCMDEnable", False),
                                 (LIFETIME_LOCK, "physicalPresenceLifetimeLock", True)):
            if bits & bit:
                flags.set_permanent(tpm, name, value)
        return Response()
    if assertion:
        if not flags.permanent(tpm, "physicalPresenceCMDEnable"):
            raise TpmError("TPM_BAD_PARAMETER", "the command interface may not assert physical presence")
        if bits & LOCK and bits & PRESENT:
            raise TpmError("TPM_BAD_PARAMETER", "LOCK and PRESENT together")
        if bits & PRESENT and bits & NOTPRESENT:
            raise TpmError("TPM_BAD_PARAMETER", "PRESENT and NOTPRESENT together")
        if tpm.pp_lock:
            raise TpmError("TPM_BAD_PARAMETER", "physical presence is locked until the next TPM_Startup")
        if bits & LOCK:
            tpm.physical_presence, tpm.pp_lock = False, True
        elif bits & PRESENT:
            tpm.physical_presence = True
        elif bits & NOTPRESENT:
            tpm.physical_presence = False
        return Response()
    raise TpmError("TPM_BAD_PARAMETER", "physicalPresence sets nothing")


@tpm_command("TPM_PhysicalEnable")
def physical_enable(tpm, req: Request) -> Response:
    """Part 3, 6.6: presence clears TPM_PERMANENT_FLAGS.disable."""
    req.params.end()
    require_presence(tpm)
    flags.set_permanent(tpm, "disable", False)
    return Response()


@tpm_command("TPM_PhysicalDisable")
def physical_disable(tpm, req: Request) -> Response:
    """Part 3, 6.7: presence sets TPM_PERMANENT_FLAGS.disable."""
    req.params.end()
    require_presence(tpm)
    flags.set_permanent(tpm, "disable", True)
    return Response()


@tpm_command("TPM_PhysicalSetDeactivated")
def physical_set_deactivated(tpm, req: Request) -> Response:
    """Part 3, 6.8: presence sets TPM_PERMANENT_FLAGS.deactivated (effective at the next TPM_Startup)."""
    state = read_bool(req.params)
    req.params.end()
    require_presence(tpm)
    flags.set_permanent(tpm, "deactivated", state)
    return Response()


@tpm_command("TPM_SetTempDeactivated", auth=(0, 1))
def set_temp_deactivated(tpm, req: Request) -> Response:
    """Part 3, 6.9: the operator (or presence) deactivates the TPM until the next TPM_Startup."""
    req.params.end()
    if len(req.auth):
        if not flags.permanent(tpm, "operator"):
            raise TpmError("TPM_NOOPERATOR", "no operator secret is set (TPM_SetOperatorAuth)")
        req.auth.check(0, bytes.fromhex(tpm.state.extra[OPERATOR_AUTH]), (C.TPM_ET_OPERATOR, 0))
    else:
        require_presence(tpm)
    tpm.deactivated = True
    return Response()


@tpm_command("TPM_SetOwnerInstall")
def set_owner_install(tpm, req: Request) -> Response:
    """Part 3, 6.3: with an owner installed nothing happens (TPM_SUCCESS); else presence sets ownership."""
    state = read_bool(req.params)
    req.params.end()
    if tpm.state.owner_auth is not None:
        return Response()
    require_presence(tpm)
    flags.set_permanent(tpm, "ownership", bool(state))
    return Response()


@tpm_command("TPM_SetOperatorAuth")
def set_operator_auth(tpm, req: Request) -> Response:
    """Part 3, 6.10: presence installs the operator secret (no encryption: the platform is local)."""
    secret = req.params.raw(20)
    req.params.end()
    require_presence(tpm)
    tpm.state.extra[OPERATOR_AUTH] = secret.hex()
    flags.set_permanent(tpm, "operator", True)
    tpm.mark_dirty()
    return Response()


@tpm_command("TPM_ForceClear")
def force_clear(tpm, req: Request) -> Response:
    """Part 3, 5.3 (6.3 in rev 116): presence clears the owner, unless TPM_DisableForceClear ran this boot."""
    req.params.end()
    require_presence(tpm)
    if tpm.disable_force_clear:
        raise TpmError("TPM_CLEAR_DISABLED", "TPM_DisableForceClear ran since TPM_Startup")
    clear_owner(tpm)
    return Response()


@tpm_command("TPM_DisableForceClear")
def disable_force_clear(tpm, req: Request) -> Response:
    """Part 3, 6.5: TPM_ForceClear refused until the next TPM_Startup."""
    req.params.end()
    tpm.disable_force_clear = True
    return Response()

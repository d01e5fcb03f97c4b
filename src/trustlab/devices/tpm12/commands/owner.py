"""What the owner does to the TPM itself (Part 3, 5-7, 17.2): read and set its flags, change its
secrets, give it up.

TPM_GetCapabilityOwner, TPM_SetCapability, TPM_OwnerSetDisable,
TPM_DisablePubekRead, TPM_DisableOwnerClear, TPM_ChangeAuthOwner and
TPM_OwnerClear, with libtpms' checks in libtpms' order (tpm_process.c,
tpm_admin.c, tpm_auth.c, tpm_owner.c). :func:`clear_owner` is the common part
of TPM_OwnerClear and TPM_ForceClear (``TPM_OwnerClearCommon``).
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import flags, owner_evict
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.nvareas import areas, release, save as save_areas
from trustlab.devices.tpm12.registry import Request, Response, tpm_command
from trustlab.devices.tpm12.version import tpm_version
from trustlab.devices.tpm12.wire import Reader, Writer

OWNER = (C.TPM_ET_OWNER, C.TPM_KH_OWNER)
OPERATOR_AUTH = "operator_auth"  # PersistentState.extra key: TPM_PERMANENT_DATA.operatorAuth (hex)
RESTRICT_DELEGATE = "restrict_delegate"  # PersistentState.extra key: TPM_PERMANENT_DATA.restrictDelegate (int)
NV_INDEX_GPIO_00 = 0x00011600  # PC Client TIS: deallocated whenever the owner is cleared (libtpms TPM_PCCLIENT)
TPM_SET_PERM_FLAGS, TPM_SET_STCLEAR_FLAGS = 1, 3  # Part 2, 21.9 TPM_CAPABILITY_AREA for SetCapability
_SET_AREAS = range(1, 8)
# TPM_SET_PERM_FLAGS subCap (TPM_PF_*, 1-based) -> who may set it: "owner", "presence", "either"
_PERM_SETTABLE = {1: "either", 2: "presence", 3: "presence", 4: "owner", 5: "owner", 6: "owner", 17: "owner",
                  20: "owner"}


def _owner(tpm, req: Request, i: int = 0) -> None:
    req.auth.session(i)  # an unknown session handle first (TPM_INVALID_AUTHHANDLE), then no owner (libtpms)
    req.auth.check(i, tpm.owner_auth(), OWNER)


def read_bool(r: Reader) -> bool:
    """A TPM_BOOL parameter: 0 or 1, else TPM_BAD_PARAMETER (libtpms TPM_LoadBool)."""
    v = r.u8()
    if v > 1:
        raise TpmError("TPM_BAD_PARAMETER", f"a TPM_BOOL is 0 or 1, not {v}")
    return bool(v)


@tpm_command("TPM_GetCapabilityOwner", auth=(1,))
def get_capability_owner(tpm, req: Request) -> Response:
    """Part 3, 7.3: TPM_VERSION, then the permanent and the volatile flags as bitmaps (flag i at bit i)."""
    req.params.end()
    _owner(tpm, req)
    return Response(Writer().raw(tpm_version()).u32(flags.bitmap(flags.permanent_bits(tpm)))
                    .u32(flags.bitmap(flags.stclear_bits(tpm))).bytes())


@tpm_command("TPM_SetCapability", auth=(0, 1))
def set_capability(tpm, req: Request) -> Response:
    """Part 3, 7.4: the permanent flags the owner or physical presence may set (libtpms
    TPM_SetCapability_CapPermFlags) and TPM_STCLEAR_FLAGS.disableForceClear."""
    p = req.params
    area, sub, value = p.u32(), p.sized(1024), p.sized(1024)
    p.end()
    owner = bool(len(req.auth))
    if owner:
        _owner(tpm, req)
    presence = tpm.physical_presence
    if area not in _SET_AREAS:
        raise TpmError("TPM_BAD_MODE", f"capArea {area:#x}")
    if len(sub) != 4:
        raise TpmError("TPM_BAD_PARAM_SIZE", f"subCap of {len(sub)} bytes", parsed=True)
    if area not in (TPM_SET_PERM_FLAGS, TPM_SET_STCLEAR_FLAGS):
        raise TpmError("TPM_BAD_PARAMETER", f"capArea {area:#x}: nothing settable here")
    if len(value) != 1 or value[0] > 1:
        raise TpmError("TPM_BAD_PARAMETER", "setValue is one TPM_BOOL")
    which, on = int.from_bytes(sub, "big"), bool(value[0])
    if area == TPM_SET_STCLEAR_FLAGS:
        if which != 2:  # TPM_SF_DISABLEFORCECLEAR; the others are set by their own commands
            raise TpmError("TPM_BAD_PARAMETER", f"TPM_STCLEAR_FLAGS member {which} is not settable")
        if tpm.disabled:
            raise TpmError("TPM_DISABLED", "the TPM is disabled")
        if tpm.deactivated:
            raise TpmError("TPM_DEACTIVATED", "the TPM is deactivated")
        if not on:
            raise TpmError("TPM_BAD_PARAMETER", "disableForceClear can only be set TRUE")
        tpm.disable_force_clear = True
        return Response()
    who = _PERM_SETTABLE.get(which)
    if who is None:
        raise TpmError("TPM_BAD_PARAMETER", f"TPM_PERMANENT_FLAGS member {which} is not settable")
    name = flags.PERMANENT[which - 1]
    if name == "ownership" and tpm.state.owner_auth is not None:
        raise TpmError("TPM_OWNER_SET", "ownership cannot change while an owner is installed")
    if (who == "owner" and not owner) or (who == "presence" and not presence) or \
            (who == "either" and not (owner or presence)):
        raise TpmError("TPM_AUTHFAIL", f"setting {name} needs {who} authorization")
    if tpm.disabled and name != "disable":
        raise TpmError("TPM_DISABLED", "the TPM is disabled")
    if tpm.deactivated and name not in ("disable", "deactivated"):
        raise TpmError("TPM_DEACTIVATED", "the TPM is deactivated")
    if name == "disableOwnerClear" and not on:
        raise TpmError("TPM_BAD_PARAMETER", "disableOwnerClear can only be set TRUE")
    if name == "allowMaintenance" and on:
        raise TpmError("TPM_BAD_PARAMETER", "allowMaintenance can only be set FALSE")
    flags.set_permanent(tpm, name, on)
    return Response()


@tpm_command("TPM_OwnerSetDisable", auth=(1,))
def owner_set_disable(tpm, req: Request) -> Response:
    """Part 3, 6.5: the owner sets TPM_PERMANENT_FLAGS.disable."""
    state = read_bool(req.params)
    req.params.end()
    _owner(tpm, req)
    flags.set_permanent(tpm, "disable", state)
    return Response()


@tpm_command("TPM_DisablePubekRead", auth=(1,))
def disable_pubek_read(tpm, req: Request) -> Response:
    """Part 3, 27.1 (deprecated, still in 1.2): readPubek FALSE."""
    req.params.end()
    _owner(tpm, req)
    flags.set_permanent(tpm, "readPubek", False)
    return Response()


@tpm_command("TPM_DisableOwnerClear", auth=(1,))
def disable_owner_clear(tpm, req: Request) -> Response:
    """Part 3, 6.4: TPM_OwnerClear refused until the next TPM_ForceClear."""
    req.params.end()
    _owner(tpm, req)
    flags.set_permanent(tpm, "disableOwnerClear", True)
    return Response()


@tpm_command("TPM_ChangeAuthOwner", auth=(1,))
def change_auth_owner(tpm, req: Request) -> Response:
    """Part 3, 17.2: a new owner or SRK secret under the owner's OSAP session, which ends."""
    p = req.params
    protocol, enc_auth, etype = p.u16(), p.raw(20), p.u16()
    p.end()
    _owner(tpm, req)
    if req.auth.session(0).kind != "OSAP":
        raise TpmError("TPM_AUTHFAIL", "TPM_ChangeAuthOwner needs an OSAP session")
    use = req.auth.uses[0]
    use.cont = 0  # step 6: the session ends, successful or not
    if protocol != C.TPM_PID_ADCP:
        raise TpmError("TPM_BAD_PARAMETER", "protocolID must be TPM_PID_ADCP")
    if etype not in (C.TPM_ET_OWNER, C.TPM_ET_SRK):
        raise TpmError("TPM_WRONG_ENTITYTYPE", f"entity type {etype:#x}")
    new_auth = req.auth.decrypt_auth(0, enc_auth)
    if etype == C.TPM_ET_OWNER:
        tpm.state.owner_auth = new_auth
        # step 8: every other OSAP session on the owner is invalid now
        for handle, s in list(tpm.sessions.items()):
            if s.kind == "OSAP" and s.entity == OWNER and s is not use.session:
                tpm.end_session(handle)
    else:
        tpm.state.srk_auth = new_auth
    tpm.mark_dirty()
    return Response()


@tpm_command("TPM_OwnerClear", auth=(1,))
def owner_clear(tpm, req: Request) -> Response:
    """Part 3, 6.2: the owner gives the TPM up (unless disableOwnerClear); the session ends."""
    req.params.end()
    _owner(tpm, req)
    if flags.permanent(tpm, "disableOwnerClear"):
        raise TpmError("TPM_CLEAR_DISABLED", "the owner disabled TPM_OwnerClear")
    req.auth.uses[0].cont = 0
    session = req.auth.uses[0].session
    clear_owner(tpm, keep=session)
    return Response()


def clear_owner(tpm, keep=None) -> None:
    """libtpms TPM_OwnerClearCommon: owner, SRK, tpmProof, operator, counters, owner NV areas, loaded
    keys and sessions gone; the permanent flags back to the specification's defaults (disabled and
    deactivated until physical presence enables and activates the TPM again)."""
    st = tpm.state
    st.owner_auth, st.srk, st.srk_auth, st.tpm_proof = None, None, b"\x00" * 20, None
    st.counters.clear()
    st.extra.pop(OPERATOR_AUTH, None)
    st.extra.pop(RESTRICT_DELEGATE, None)  # libtpms TPM_OwnerClearCommon: restrictDelegate = 0
    st.extra.pop("nv_writes", None)  # noOwnerNVWrite back to 0
    owner_evict.forget_all(tpm)  # libtpms TPM_OwnerClearCommon: owner-evict keys deleted too
    tpm.keys.clear()
    for handle in list(tpm.sessions):
        if tpm.sessions[handle] is not keep:
            tpm.end_session(handle)
    if tpm.audited:
        tpm.set_audited(frozenset())
    table = areas(tpm)
    for index in [i for i, a in table.items()
                  if a.attributes & (C.TPM_NV_PER_OWNERWRITE | C.TPM_NV_PER_OWNERREAD)
                  and not index_has_d_bit(i) or i == NV_INDEX_GPIO_00]:  # (PC Client: GPIO_00 always goes)
        release(tpm, table, index)
    save_areas(tpm, table)
    for name in ("readPubek", "disableOwnerClear", "disableFullDALogicInfo", "readSRKPub", "ownership", "operator",
                 "maintenanceDone"):
        flags.forget_permanent(tpm, name)
    # step 9.f: allowMaintenance to its default, which for a TPM without the maintenance commands (this
    # engine, and libtpms as built: TPM_NOMAINTENANCE) is FALSE
    flags.set_permanent(tpm, "allowMaintenance", False)
    flags.set_permanent(tpm, "disable", True)
    flags.set_permanent(tpm, "deactivated", True)
    tpm.mark_dirty()


def index_has_d_bit(index: int) -> bool:
    return bool(index & C.TPM_NV_INDEX_D_BIT)

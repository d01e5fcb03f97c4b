"""TPM_GetCapability (Part 3, 7.1; capability areas Part 2, 21).

TrouSerS' tcsd asks at start-up for TPM_CAP_VERSION_VAL, TPM_CAP_ORD
(SaveKeyContext, SaveAuthContext), and the properties PCR, DIR, SLOTS (=KEYS),
MANUFACTURER and MAX_AUTHSESS; tpm-tools ask for flags, handles and NV
indices. Layouts and sub-capability size checks follow libtpms
(``TPM_GetCapabilityCommon``); values that the specification leaves to the
vendor (manufacturer id, resource counts, timeouts) are this engine's own.
"""

from __future__ import annotations

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import flags
from trustlab.devices.tpm12.commands.auth import MAX_SESSIONS
from trustlab.devices.tpm12.commands.counters import MAX_COUNTERS
from trustlab.devices.tpm12.commands.keys import KEY_SLOTS
from trustlab.devices.tpm12.commands.owner import RESTRICT_DELEGATE
from trustlab.devices.tpm12.commands.transport import MAX_TRANSPORTS as MAX_TRANS
from trustlab.devices.tpm12.contexts import CONTEXT_LIST
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.nvareas import MAX_TOTAL, areas
from trustlab.devices.tpm12.owner_evict import is_owner_evict
from trustlab.devices.tpm12.registry import Request, Response, by_ordinal, tpm_command
from trustlab.devices.tpm12.state import LOCKOUT_THRESHOLD
from trustlab.devices.tpm12.version import MANUFACTURER, version_info
from trustlab.devices.tpm12.wire import Reader, Writer

TIS_TIMEOUT_US = (750_000, 2_000_000, 750_000, 750_000)  # TIS 1.2 defaults A-D
DURATION_US = (2_000_000, 20_000_000, 60_000_000)  # small, medium, long (TIS 1.2 defaults)
_AUTH_PIDS = {C.TPM_PID_OIAP, C.TPM_PID_OSAP, C.TPM_PID_ADIP, C.TPM_PID_ADCP, C.TPM_PID_OWNER,
              C.TPM_PID_TRANSPORT}
# TPM_STARTUP_EFFECTS (Part 2, 21.4): bit 6 auditDigest zeroed by ST_CLEAR only; bits 3 and 1:
# authorization and transport sessions are not kept across TPM_Startup(ST_STATE) (keys are).
STARTUP_EFFECTS = 0x40 | 0x08 | 0x02


def _bool(v: bool) -> bytes:
    return b"\x01" if v else b"\x00"


def _u32(v: int) -> bytes:
    return v.to_bytes(4, "big")


def _handle_list(handles) -> bytes:
    """TPM_KEY_HANDLE_LIST (Part 2, 10.9): UINT16 count, then the handles."""
    hs = sorted(handles)
    return Writer().u16(len(hs)).raw(b"".join(_u32(h) for h in hs)).bytes()


def permanent_flags(tpm) -> bytes:
    """TPM_PERMANENT_FLAGS (Part 2, 7.1): tag and 20 booleans, in specification order."""
    return Writer().u16(C.TPM_TAG_PERMANENT_FLAGS).raw(b"".join(map(_bool, flags.permanent_bits(tpm)))).bytes()


def stclear_flags(tpm) -> bytes:
    """TPM_STCLEAR_FLAGS (Part 2, 7.2): deactivated, disableForceClear, physicalPresence,
    physicalPresenceLock, bGlobalLock."""
    return Writer().u16(C.TPM_TAG_STCLEAR_FLAGS).raw(b"".join(map(_bool, flags.stclear_bits(tpm)))).bytes()


def da_info(tpm) -> bytes:
    """TPM_DA_INFO (Part 2, 21.7): state, counts, action (lock out, then wait)."""
    remaining = tpm.lockout_remaining_s()
    return (Writer().u16(C.TPM_TAG_DA_INFO).u8(1 if remaining else 0).u16(min(tpm.auth_fail_count, 0xFFFF))
            .u16(LOCKOUT_THRESHOLD).u16(0x0039).u32(0x00000001).u32(int(remaining)).u32(0).bytes())


def _property(tpm, prop: int) -> bytes:
    keys_free = KEY_SLOTS - len(tpm.keys)
    n_trans = sum(1 for s in tpm.sessions.values() if s.kind == "TRANSPORT")
    n_auth = len(tpm.sessions) - n_trans
    values = {
        0x101: _u32(C.NUM_PCRS),  # PCR
        0x102: _u32(1),  # DIR
        0x103: MANUFACTURER,
        0x104: _u32(keys_free),  # KEYS (= TCPA SLOTS)
        0x107: _u32(0),  # MIN_COUNTER
        0x10A: _u32(MAX_SESSIONS - n_auth),  # AUTHSESS
        0x10B: _u32(MAX_TRANS - n_trans),  # TRANSESS
        0x10C: _u32(MAX_COUNTERS - len(tpm.state.counters)),  # COUNTERS
        0x10D: _u32(MAX_SESSIONS),  # MAX_AUTHSESS
        0x10E: _u32(MAX_TRANS),  # MAX_TRANSESS
        0x10F: _u32(MAX_COUNTERS),  # MAX_COUNTERS
        0x110: _u32(KEY_SLOTS),  # MAX_KEYS
        0x111: _bool(tpm.state.owner_auth is not None),  # OWNER
        0x112: _u32(CONTEXT_LIST - len(tpm.contexts.saved)),  # CONTEXT: free saved-session slots
        0x113: _u32(CONTEXT_LIST),  # MAX_CONTEXT (TPM_MIN_SESSION_LIST, as libtpms)
        0x114: _u32(0),  # FAMILYROWS: no delegation
        0x115: b"".join(map(_u32, TIS_TIMEOUT_US)),
        0x116: _u32(STARTUP_EFFECTS),
        0x117: _u32(0),  # DELEGATE_ROW
        0x119: _u32(0),  # MAX_DAASESS: no DAA
        0x11A: _u32(0),  # DAASESS
        0x11B: _u32(0xFFFFFFFF),  # CONTEXT_DIST
        0x11C: _bool(False),  # DAA_INTERRUPT
        0x11D: _u32(MAX_SESSIONS + MAX_TRANS - len(tpm.sessions)),  # SESSIONS
        0x11E: _u32(MAX_SESSIONS + MAX_TRANS),  # MAX_SESSIONS
        0x11F: _u32(int(tpm.state.extra.get(RESTRICT_DELEGATE, 0))),  # CMK_RESTRICTION (TPM_CMK_SetRestrictions)
        0x120: b"".join(map(_u32, DURATION_US)),
        0x122: _u32(tpm.counter_this_boot if tpm.counter_this_boot is not None else 0xFFFFFFFF),
        0x123: _u32(MAX_TOTAL - sum(a.size for a in areas(tpm).values())),  # MAX_NV_AVAILABLE
        0x124: _u32(C.TPM_BUFFER_MAX),  # libtpms: not what CMD_SET_BUFFERSIZE set (checked on swtpm)
    }
    try:
        return values[prop]
    except KeyError:
        raise TpmError("TPM_BAD_MODE", f"TPM_CAP_PROPERTY {prop:#x}") from None


def _handles(tpm, rtype: int) -> bytes:
    if rtype == C.TPM_RT_KEY:
        return _handle_list(tpm.keys)
    if rtype == C.TPM_RT_AUTH:
        return _handle_list(h for h, s in tpm.sessions.items() if s.kind != "TRANSPORT")
    if rtype == C.TPM_RT_TRANS:
        return _handle_list(h for h, s in tpm.sessions.items() if s.kind == "TRANSPORT")
    if rtype == C.TPM_RT_COUNTER:
        return _handle_list(tpm.state.counters)
    if rtype in (C.TPM_RT_CONTEXT, C.TPM_RT_DAA_TPM):
        return _handle_list(())
    raise TpmError("TPM_BAD_PARAMETER", f"resource type {rtype:#x}")


def _check_loaded_rsa(sub: bytes) -> bool:
    """Is the TPM_KEY_PARMS of a TPM_CAP_CHECK_LOADED query RSA? Loaded as libtpms'
    TPM_KeyParms_Load does (TPM_GetCapability_CapCheckLoaded): algorithm 0 (an uninitialised
    structure, what TrouSerS sends for a key blob it cannot parse) is loaded and answers FALSE, RSA
    parameters are only read (their values are checked when a key is loaded, not here), any other
    algorithm is TPM_BAD_KEY_PROPERTY; nothing after the structure is looked at."""
    r = Reader(sub, "TPM_KEY_PARMS")
    alg = r.u32()
    r.u16(), r.u16()
    parms = r.sized()
    if alg == C.TPM_ALG_RSA:
        rsa = Reader(parms, "TPM_RSA_KEY_PARMS")
        rsa.u32(), rsa.u32(), rsa.sized()
        return True
    if alg != 0:
        raise TpmError("TPM_BAD_KEY_PROPERTY", f"TPM_CAP_CHECK_LOADED: algorithm {alg:#x}")
    return False


def capability(tpm, area: int, sub: bytes) -> bytes:
    """The capability response for ``area``/``sub`` (Part 2, 21.1), or TPM_BAD_MODE."""
    n32 = int.from_bytes(sub, "big") if len(sub) == 4 else None
    n16 = int.from_bytes(sub, "big") if len(sub) == 2 else None

    def need(v):
        if v is None:
            raise TpmError("TPM_BAD_MODE", f"capArea {area:#x}: subCap of {len(sub)} bytes")
        return v

    if area == C.TPM_CAP_ORD:
        return _bool(by_ordinal(need(n32)) is not None)
    if area == C.TPM_CAP_ALG:
        return _bool(need(n32) == C.TPM_ALG_RSA)
    if area == C.TPM_CAP_PID:
        return _bool(need(n16) in _AUTH_PIDS)
    if area == C.TPM_CAP_FLAG:
        which = need(n32)
        if which == C.TPM_CAP_FLAG_PERMANENT:
            return permanent_flags(tpm)
        if which == C.TPM_CAP_FLAG_VOLATILE:
            return stclear_flags(tpm)
        raise TpmError("TPM_BAD_MODE", f"TPM_CAP_FLAG {which:#x}")
    if area == C.TPM_CAP_PROPERTY:
        return _property(tpm, need(n32))
    if area == C.TPM_CAP_VERSION:
        return C.STRUCT_VER
    if area == C.TPM_CAP_KEY_HANDLE:
        return _handle_list(tpm.keys)
    if area == C.TPM_CAP_CHECK_LOADED:
        return _bool(_check_loaded_rsa(sub) and len(tpm.keys) < KEY_SLOTS)
    if area == C.TPM_CAP_SYM_MODE:
        need(n32)
        return _bool(False)
    if area == C.TPM_CAP_KEY_STATUS:
        handle = need(n32)
        tpm.key(handle)
        return _bool(is_owner_evict(tpm, handle))
    if area == C.TPM_CAP_NV_LIST:
        return b"".join(_u32(i) for i in areas(tpm))  # in slot order, as libtpms (nvareas.release)
    if area == C.TPM_CAP_NV_INDEX:
        index = need(n32)
        a = areas(tpm).get(index)
        if a is None:
            raise TpmError("TPM_BADINDEX", f"no NV area {index:#010x}")
        return a.public(("r", index) in tpm.nv_stclear_locks, ("w", index) in tpm.nv_stclear_locks)
    if area == C.TPM_CAP_TRANS_ALG:
        return _bool(need(n32) in (C.TPM_ALG_MGF1, C.TPM_ALG_AES128))
    if area == C.TPM_CAP_HANDLE:
        return _handles(tpm, need(n32))
    if area == C.TPM_CAP_TRANS_ES:
        return _bool(need(n16) in (C.TPM_ES_SYM_CTR, C.TPM_ES_SYM_OFB))
    if area == C.TPM_CAP_AUTH_ENCRYPT:
        return _bool(need(n32) == C.TPM_ALG_XOR)
    if area == C.TPM_CAP_SELECT_SIZE:
        r = Reader(sub, "TPM_SELECT_SIZE")
        r.raw(2)  # major, minor: every version's size limit is the same here
        req_size = r.u16()
        return _bool(0 < req_size <= C.NUM_PCRS // 8)
    if area == C.TPM_CAP_DA_LOGIC:
        return da_info(tpm)
    if area == C.TPM_CAP_VERSION_VAL:
        return version_info()
    raise TpmError("TPM_BAD_MODE", f"capability area {area:#x}")


@tpm_command("TPM_GetCapability")
def get_capability(tpm, req: Request) -> Response:
    area, sub = req.params.u32(), req.params.sized(1024)
    req.params.end()
    if tpm.failed and not (area in (C.TPM_CAP_VERSION, C.TPM_CAP_VERSION_VAL, C.TPM_CAP_MFR) or
                           (area == C.TPM_CAP_PROPERTY and sub in (_u32(0x103), _u32(0x115), _u32(0x120)))):
        raise TpmError("TPM_FAILEDSELFTEST", "only version and manufacturer answer in failure mode")
    return Response(params=Writer().sized(capability(tpm, area, sub)).bytes())

"""What an independent run of real TPM 1.2 clients found (``tools/tpm12_client_matrix.py``), replayed
as raw commands to our engine and to libtpms side by side.

Each finding came from a Debian client on `trustlab serve` answering differently
from libtpms; the frames here are the ones those clients sent (or their minimal
equivalent), so the difference shows without the clients:

* ``tpm_restrictsrk -a`` on an unowned chip: an owner-authorized command with no
  owner is TPM_AUTHFAIL (libtpms TPM_AuthSessions_GetData), not TPM_NOSRK;
* ``tpm_createek -r`` on a chip with an EK: TPM_CreateRevocableEK is TPM_DISABLED_CMD;
* ``tpm_setenable -d -f``: TrouSerS sends tag 0x00C4 with ordinal 0: TPM_BAD_ORDINAL first;
* ``tpm_loadkey`` of a blob TrouSerS cannot parse: TPM_CAP_CHECK_LOADED with algorithm 0
  answers FALSE, parameters are not judged; TPM_LoadKey2 loads the key's structure, checks
  paramSize, the parent's authorization, and only then the key's properties;
* ``tpm_nvinfo``: a zero-size write/read sets bWriteSTClear, bWriteDefine / bReadSTClear
  whatever the attributes, and TPM_CAP_NV_LIST lists areas in slot order (a released
  area's slot is reused);
* ``tpm_setactive -s`` after Startup(ST_DEACTIVATED), TPM_SaveState and Startup(ST_STATE): the
  saved TPM_STCLEAR_FLAGS come back (libtpms TPM_SaveState_Store), the TPM stays deactivated;
* ``tpm_resetdalock`` during a dictionary-attack lockout runs (libtpms has no lockout
  check there); a failed one sets disableResetLock, so the next one fails too.
"""

from __future__ import annotations

import shutil
import struct

import pytest

from trustlab.devices.tpm12 import constants as C

from .conformance_cases import OWNER, WRONG, cap, ek_frame, frame, nv_define, pp, rc_of, u16, u32
from .differential import disagreements, run_on_fresh_pair
from .test_owner_libtpms import quiet

pytestmark = [pytest.mark.swtpm, pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")]

A, B, C3, D = 0x00023001, 0x00023002, 0x00023003, 0x00023010


def _owner(name: str, params: bytes = b"", secret: bytes = OWNER):
    return lambda s: quiet(s, s.tpm.call, name, params=params, auth=[secret])


def _nv(index: int, attrs: int = C.TPM_NV_PER_OWNERWRITE, size: int = 8):
    return lambda s: nv_define(s, index, attrs, size)


def _release(index: int):
    return lambda s: nv_define(s, index, C.TPM_NV_PER_OWNERWRITE, 0)


def _rsa_parms(bits: int) -> bytes:
    rsa = u32(bits) + u32(2) + u32(0)
    return u32(C.TPM_ALG_RSA) + u16(1) + u16(1) + u32(len(rsa)) + rsa


# what TrouSerS' tpm_loadkey sends for a file it cannot parse: a TPM_KEY of zeros (algorithm 0)
_GARBAGE_KEY = b"\x01\x01\x00\x00" + u16(0) + u32(0) + b"\x00" + u32(0) + u16(0) + u16(0) + u32(0) + u32(0) * 3


def _load_garbage_keeping_session(s) -> None:
    """TPM_LoadKey2 of TrouSerS' zeroed TPM_KEY with 29 bytes too many (tpm_loadkey garbage.blob) in an
    OIAP session that asks to continue: the frame does not parse, so the session must survive."""
    rsp = s.execute(frame(C.ORD["TPM_OIAP"]))
    s.ctx["oiap"], even = rsp[10:14], rsp[14:34]
    params = u32(C.TPM_KH_SRK) + _GARBAGE_KEY + b"\x00" * 29
    auth = s.ctx["oiap"] + even + b"\x01" + b"\x00" * 20  # (the HMAC is never looked at)
    s.execute(frame(C.ORD["TPM_LoadKey2"], params + auth, tag=C.TPM_TAG_RQU_AUTH1_COMMAND))


def _revocable_ek() -> bytes:
    return frame(C.ORD["TPM_CreateRevocableEK"], b"\x00" * 20 + struct.pack(">IHHI", 1, 3, 1, 12)
                 + struct.pack(">III", 2048, 2, 0) + b"\x01" + b"\xff" * 20)


def _failures(n: int):
    def run(s) -> None:
        for _ in range(n):
            quiet(s, s.tpm.call, "TPM_GetCapabilityOwner", auth=[WRONG])
    return run


SCENARIO: list[tuple[str, object, bool]] = [
    ("set_capability_no_owner", _owner("TPM_SetCapability", u32(1) + u32(4) + u32(17) + u32(1) + b"\x01"), False),
    ("reset_lock_value_no_owner", _owner("TPM_ResetLockValue"), False),
    ("create_revocable_ek_exists", lambda s: s.execute(_revocable_ek()), False),
    ("response_tag_ordinal_0", lambda s: s.execute(struct.pack(">HII", 0x00C4, 10, 0)), False),
    ("response_tag_known_ordinal", lambda s: s.execute(struct.pack(">HII", 0x00C4, 10, C.ORD["TPM_OIAP"])), False),
    ("check_loaded_alg_0", lambda s: s.execute(cap(C.TPM_CAP_CHECK_LOADED, u32(0) + u16(0) + u16(0) + u32(0))), True),
    ("check_loaded_rsa_1000", lambda s: s.execute(cap(C.TPM_CAP_CHECK_LOADED, _rsa_parms(1000))), True),
    ("check_loaded_alg_3", lambda s: s.execute(cap(C.TPM_CAP_CHECK_LOADED, u32(3) + u16(0) + u16(0) + u32(0))), False),
    ("check_loaded_trailing", lambda s: s.execute(cap(C.TPM_CAP_CHECK_LOADED, _rsa_parms(2048) + b"\x00")), True),
    ("take_ownership", lambda s: quiet(s, s.tpm.TPM_TakeOwnership, OWNER, OWNER), False),
    ("load_key2_alg_0_trailing", lambda s: _load_garbage_keeping_session(s), False),
    ("flush_after_param_size", lambda s: s.execute(frame(C.ORD["TPM_FlushSpecific"], s.ctx.get("oiap", b"\0" * 4)
                                                          + u32(C.TPM_RT_AUTH))), False),
    ("load_key2_alg_0", lambda s: quiet(s, s.tpm.call, "TPM_LoadKey2", handles=[C.TPM_KH_SRK],
                                        params=_GARBAGE_KEY, auth=[OWNER]), False),
    ("load_key2_alg_0_wrong_auth", lambda s: quiet(s, s.tpm.call, "TPM_LoadKey2", handles=[C.TPM_KH_SRK],
                                                   params=_GARBAGE_KEY, auth=[WRONG]), False),
    ("nv_define_a", _nv(A), False),
    ("nv_define_b", _nv(B), False),
    ("nv_define_c", _nv(C3), False),
    ("nv_release_b", _release(B), False),
    ("nv_define_d_in_bs_slot", _nv(D), False),
    ("nv_list_slot_order", lambda s: s.execute(cap(C.TPM_CAP_NV_LIST)), True),
    ("nv_redefine_a", _nv(A, size=16), False),
    ("nv_list_after_redefine", lambda s: s.execute(cap(C.TPM_CAP_NV_LIST)), True),
    ("nv_write_zero_size", _owner("TPM_NV_WriteValue", u32(C3) + u32(0) + u32(0)), False),
    ("nv_read_zero_size", lambda s: s.execute(frame(C.ORD["TPM_NV_ReadValue"], u32(C3) + u32(0) + u32(0))), False),
    ("nv_index_flags_set", lambda s: s.execute(cap(C.TPM_CAP_NV_INDEX, u32(C3))), True),
    ("nv_write_after_zero_size", _owner("TPM_NV_WriteValue", u32(C3) + u32(0) + u32(2) + b"ok"), False),
    ("power_cycle", lambda s: (s.target.init(), s.execute(frame(C.ORD["TPM_Startup"], u16(C.TPM_ST_CLEAR))),
                               s.execute(pp(0x0008))), False),
    ("nv_index_after_cycle", lambda s: s.execute(cap(C.TPM_CAP_NV_INDEX, u32(C3))), True),
    ("nv_list_after_cycle", lambda s: s.execute(cap(C.TPM_CAP_NV_LIST)), True),
    ("six_wrong_owner_auths", _failures(6), False),
    ("owner_command_in_lockout", _owner("TPM_GetCapabilityOwner"), False),
    ("reset_lock_value_in_lockout", _owner("TPM_ResetLockValue"), False),
    ("owner_command_after_reset", _owner("TPM_GetCapabilityOwner"), False),
    ("six_more_wrong_owner_auths", _failures(6), False),
    ("reset_lock_value_wrong", _owner("TPM_ResetLockValue", secret=WRONG), False),
    ("reset_lock_value_disabled", _owner("TPM_ResetLockValue"), False),
    ("da_info", lambda s: s.execute(cap(C.TPM_CAP_DA_LOGIC, u16(C.TPM_ET_OWNER))), False),
    ("boot_deactivated", lambda s: (s.target.init(), s.execute(frame(C.ORD["TPM_Startup"], u16(3)))), False),
    ("save_state_deactivated", lambda s: s.execute(frame(C.ORD["TPM_SaveState"])), False),
    ("resume_st_state", lambda s: (s.target.init(), s.execute(frame(C.ORD["TPM_Startup"], u16(C.TPM_ST_STATE)))),
     False),
    ("get_random_resumed_deactivated", lambda s: s.execute(frame(C.ORD["TPM_GetRandom"], u32(8))), False),
    ("flags_volatile_resumed", lambda s: s.execute(cap(C.TPM_CAP_FLAG, u32(C.TPM_CAP_FLAG_VOLATILE))), True),
]


def _rows() -> list[tuple]:
    return run_on_fresh_pair([frame(C.ORD["TPM_Startup"], u16(C.TPM_ST_CLEAR)), ek_frame(), pp(0x0020), pp(0x0008)],
                             SCENARIO)


def test_client_matrix_findings_answer_as_libtpms() -> None:
    """One test (xdist would run a module fixture once per worker); then the findings say what they say."""
    rows = _rows()
    bad = disagreements(rows)
    assert not bad, "\n".join(bad)
    by = {name: a for name, _e, a, _b in rows}
    for name, rc in (("set_capability_no_owner", "TPM_AUTHFAIL"), ("create_revocable_ek_exists", "TPM_DISABLED_CMD"),
                     ("response_tag_ordinal_0", "TPM_BAD_ORDINAL"), ("response_tag_known_ordinal", "TPM_BADTAG"),
                     ("check_loaded_alg_3", "TPM_BAD_KEY_PROPERTY"), ("load_key2_alg_0_trailing", "TPM_BAD_PARAM_SIZE"),
                     ("flush_after_param_size", "TPM_SUCCESS"), ("load_key2_alg_0", "TPM_BAD_KEY_PROPERTY"),
                     ("load_key2_alg_0_wrong_auth", "TPM_AUTHFAIL"),
                     ("owner_command_in_lockout", "TPM_DEFEND_LOCK_RUNNING"),
                     ("reset_lock_value_in_lockout", "TPM_SUCCESS"), ("owner_command_after_reset", "TPM_SUCCESS"),
                     ("reset_lock_value_wrong", "TPM_AUTHFAIL"), ("reset_lock_value_disabled", "TPM_AUTHFAIL"),
                     ("resume_st_state", "TPM_SUCCESS"), ("get_random_resumed_deactivated", "TPM_DEACTIVATED")):
        assert rc_of(by[name]) == (0 if rc == "TPM_SUCCESS" else C.RC[rc]), name
    assert by["check_loaded_alg_0"][-1:] == b"\x00" and by["check_loaded_rsa_1000"][-1:] == b"\x01"
    assert by["nv_list_slot_order"][14:] == u32(A) + u32(D) + u32(C3)
    public = by["nv_index_flags_set"]
    assert public[-7:-4] == b"\x01\x01\x01"  # bReadSTClear, bWriteSTClear, bWriteDefine
    assert by["nv_index_after_cycle"][-7:-4] == b"\x00\x00\x01"  # bWriteDefine is permanent

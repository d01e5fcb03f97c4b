"""Owner-evict keys (TPM_KeyControlOwner), TPM_Delegate_ReadTable, TPM_ChangeAuth's protocolID and
TPM_ActivateIdentity without the AIK's session: our engine against libtpms, command for command.

IBM's TPM 1.2 utilities (``keycontrol``, ``delegatereadtable``, ``chgauth``, ``identity -ac``) found
these (issue 26); here every rule behind them runs on both TPMs of :func:`.differential.pair`: each
command's return code and response length must agree, and where the answer is the TPM's state (a
key's owner-evict bit, the handle list, the delegation tables) its bytes too.
"""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import hostcrypto
from trustlab.devices.tpm12.client import key_template
from trustlab.devices.tpm12.keys import key_from_bytes, pubkey_modulus, rsa_public, unmarshal_key

from .conformance_cases import OWNER, SRK, WRONG, cap, ek_frame, frame, pp, quiet, rc_of, u16, u32
from .differential import disagreements, run_on_fresh_pair

pytestmark = [pytest.mark.swtpm, pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")]

KEY = hostcrypto.sha1(b"key")
OWNER_EVICT = 1  # TPM_KEY_CONTROL_OWNER_EVICT



def _key(s, name: str, template) -> None:
    """Create and load a key under the SRK; its handle and TPM_PUBKEY go to the side's scratch."""
    blob = quiet(s.tpm.TPM_CreateWrapKey, C.TPM_KH_SRK, SRK, template, KEY)
    h = quiet(s.tpm.TPM_LoadKey2, C.TPM_KH_SRK, blob, SRK) if blob else None
    if h is not None:
        s.ctx[name] = (h, key_from_bytes(blob).pubkey(), blob)


def _control(s, name: str, value: int = 1, bit: int = OWNER_EVICT, *, handle: int | None = None,
             pubkey: bytes | None = None, auth: bytes = OWNER) -> None:
    h, pub, _ = s.ctx.get(name, (0x01FFFFFF, b"", b""))
    params = (pubkey if pubkey is not None else pub) + u32(bit) + bytes([value])
    quiet(s.tpm.call, "TPM_KeyControlOwner", handles=[handle if handle is not None else h], params=params,
          auth=[auth])


def _handle_of(s, name: str) -> bytes:
    return u32(s.ctx.get(name, (0x01FFFFFF,))[0])


def _key_status(s, name: str) -> bytes:
    return s.execute(cap(C.TPM_CAP_KEY_STATUS, _handle_of(s, name)))


def _power_cycle(s, kind: int = C.TPM_ST_CLEAR) -> bytes:
    s.target.init()
    return s.execute(frame(C.ORD["TPM_Startup"], u16(kind)))


def _change_auth(s, protocol: int, entity: int) -> None:
    """IBM chgauth: a loaded storage key's child blob gets a new secret (ADCP through an OSAP session)."""
    _, _, blob = s.ctx.get("sign", (0, b"", b""))
    if not blob:
        return
    session = quiet(s.tpm.TPM_OSAP, C.TPM_ET_SRK, C.TPM_KH_SRK, SRK)
    if session is None:
        return
    session.cont = False
    enc = key_from_bytes(blob).enc
    params = u16(protocol) + session.encrypt_auth(WRONG) + u16(entity) + u32(len(enc)) + enc
    quiet(s.tpm.call, "TPM_ChangeAuth", handles=[C.TPM_KH_SRK], params=params, auth=[session, KEY])


def _make_identity(s, aik_auth: bool) -> None:
    session = quiet(s.tpm.TPM_OSAP, C.TPM_ET_OWNER, C.TPM_KH_OWNER, OWNER)
    if session is None:
        return
    session.cont = False
    params = session.encrypt_auth(KEY) + b"\x11" * 20 + key_template(C.TPM_KEY_IDENTITY, auth=aik_auth).marshal()
    out = quiet(s.tpm.call, "TPM_MakeIdentity", params=params, auth=[SRK, session])
    if out is not None:
        s.ctx["aik"] = unmarshal_key(out[1]).marshal()


def _activate_owner_only(s) -> None:
    """IBM ``identity -ac``: TPM_ActivateIdentity with the owner's session only (AUTH1)."""
    blob = s.ctx.pop("aik", None)
    h = quiet(s.tpm.TPM_LoadKey2, C.TPM_KH_SRK, blob, SRK) if blob else None
    pub = quiet(s.tpm.call, "TPM_OwnerReadPubek", auth=[OWNER]) if h is not None else None
    if pub is None:
        return
    session_key = u32(C.TPM_ALG_AES128) + u16(C.TPM_ES_SYM_CTR) + u16(16) + b"\x42" * 16
    plain = session_key + hostcrypto.sha1(key_from_bytes(blob).pubkey())  # TPM 1.1 TPM_ASYM_CA_CONTENTS
    enc = hostcrypto.oaep_encrypt(rsa_public(pubkey_modulus(pub[1].rest())[1]), plain)
    quiet(s.tpm.call, "TPM_ActivateIdentity", handles=[h], params=u32(len(enc)) + enc, auth=[OWNER])
    answer = s.last
    quiet(s.tpm.TPM_FlushSpecific, h)
    s.last = answer  # the step is judged by ActivateIdentity's answer


SCENARIO: list[tuple[str, object, bool]] = [
    ("delegate_read_table_no_owner", lambda s: s.execute(frame(C.ORD["TPM_Delegate_ReadTable"])), True),
    ("take_ownership", lambda s: quiet(s.tpm.TPM_TakeOwnership, OWNER, SRK), False),
    ("delegate_read_table", lambda s: s.execute(frame(C.ORD["TPM_Delegate_ReadTable"])), True),
    ("delegate_read_table_extra_byte", lambda s: s.execute(frame(C.ORD["TPM_Delegate_ReadTable"], b"\x00")), True),
    ("create_sign_key", lambda s: _key(s, "sign", key_template(C.TPM_KEY_SIGNING)), False),
    ("create_bind_key", lambda s: _key(s, "bind", key_template(C.TPM_KEY_BIND)), False),
    ("create_volatile_key",
     lambda s: _key(s, "volatile", replace(key_template(C.TPM_KEY_SIGNING), flags=C.TPM_KEY_FLAG_VOLATILE)), False),
    ("change_auth_key_adcp", lambda s: _change_auth(s, C.TPM_PID_ADCP, C.TPM_ET_KEY), False),
    ("change_auth_key_oiap_protocol", lambda s: _change_auth(s, C.TPM_PID_OIAP, C.TPM_ET_KEY), False),
    ("change_auth_keyhandle_entity", lambda s: _change_auth(s, C.TPM_PID_ADCP, C.TPM_ET_KEYHANDLE), False),
    ("key_status_not_evict", lambda s: _key_status(s, "sign"), True),
    ("key_control_wrong_owner", lambda s: _control(s, "sign", auth=WRONG), False),
    ("key_control_no_key", lambda s: _control(s, "sign", handle=0x01ABCDEF), False),
    ("key_control_srk", lambda s: _control(s, "sign", handle=C.TPM_KH_SRK), False),
    ("key_control_other_pubkey", lambda s: _control(s, "sign", pubkey=s.ctx.get("bind", (0, b"", b""))[1]), False),
    ("key_control_bad_bit", lambda s: _control(s, "sign", bit=2), False),
    ("key_control_volatile", lambda s: _control(s, "volatile"), False),
    ("key_control_clear_not_set", lambda s: _control(s, "sign", value=0), False),
    ("key_control_set", lambda s: _control(s, "sign"), False),
    ("key_status_evict", lambda s: _key_status(s, "sign"), True),
    ("key_control_set_again", lambda s: _control(s, "sign"), False),
    ("key_control_second_key", lambda s: _control(s, "bind"), False),
    ("create_plain_key", lambda s: _key(s, "plain", key_template(C.TPM_KEY_SIGNING)), False),
    ("flush_evict_key", lambda s: s.execute(frame(C.ORD["TPM_FlushSpecific"], _handle_of(s, "sign")
                                                  + u32(C.TPM_RT_KEY))), False),
    ("evict_key_evict_key", lambda s: s.execute(frame(C.ORD["TPM_EvictKey"], _handle_of(s, "sign"))), False),
    ("save_context_evict_key", lambda s: s.execute(frame(C.ORD["TPM_SaveContext"], _handle_of(s, "sign")
                                                         + u32(C.TPM_RT_KEY) + b"L" * 16)), False),
    ("power_cycle", lambda s: _power_cycle(s), False),
    ("key_handles_after_power_cycle", lambda s: s.execute(cap(C.TPM_CAP_KEY_HANDLE)), False),
    ("key_status_after_power_cycle", lambda s: _key_status(s, "sign"), True),
    ("plain_key_gone", lambda s: _key_status(s, "plain"), False),
    ("sign_with_evict_key", lambda s: quiet(s.tpm.TPM_Sign, s.ctx["sign"][0], b"\x01" * 20, KEY)
     if "sign" in s.ctx else None, False),
    ("load_key_beside_evict_keys", lambda s: _key(s, "plain", key_template(C.TPM_KEY_BIND)), False),
    ("key_handles_three", lambda s: s.execute(cap(C.TPM_CAP_KEY_HANDLE)), False),
    ("save_state_startup_state", lambda s: (s.execute(frame(C.ORD["TPM_SaveState"])),
                                            _power_cycle(s, C.TPM_ST_STATE))[1], False),
    ("key_status_after_st_state", lambda s: _key_status(s, "sign"), True),
    ("key_control_unset", lambda s: _control(s, "sign", value=0), False),
    ("key_status_unset", lambda s: _key_status(s, "sign"), True),
    ("flush_unset_key", lambda s: s.execute(frame(C.ORD["TPM_FlushSpecific"], _handle_of(s, "sign")
                                                  + u32(C.TPM_RT_KEY))), False),
    ("key_control_set_bind_again", lambda s: _control(s, "bind"), False),
    ("make_identity_aik_auth_always", lambda s: _make_identity(s, True), False),
    ("activate_owner_only_aik_needs_auth", _activate_owner_only, False),
    ("make_identity_aik_auth_never", lambda s: _make_identity(s, False), False),
    ("activate_owner_only", _activate_owner_only, False),
    ("pp_present", lambda s: (s.execute(pp(0x0020)), s.execute(pp(0x0008)))[1], False),
    ("force_clear", lambda s: s.execute(frame(C.ORD["TPM_ForceClear"])), False),
    ("key_handles_after_clear", lambda s: s.execute(cap(C.TPM_CAP_KEY_HANDLE)), True),
    ("power_cycle_after_clear", lambda s: _power_cycle(s), False),
    ("key_handles_after_clear_and_power_cycle", lambda s: s.execute(cap(C.TPM_CAP_KEY_HANDLE)), True),
]


def _rows() -> list[tuple]:
    return run_on_fresh_pair([frame(C.ORD["TPM_Startup"], u16(C.TPM_ST_CLEAR)), ek_frame()], SCENARIO)


def test_every_step_answers_as_libtpms() -> None:
    """One scenario, then what it must show beyond agreement."""
    rows = _rows()
    bad = disagreements(rows)
    assert not bad, "\n".join(bad)
    by = {name: a for name, _e, a, _b in rows}
    for name in ("take_ownership", "create_sign_key", "change_auth_key_adcp", "key_control_set",
                 "key_control_set_again", "power_cycle", "sign_with_evict_key", "load_key_beside_evict_keys",
                 "key_control_unset", "flush_unset_key", "key_control_set_bind_again", "key_control_second_key", "activate_owner_only",
                 "force_clear"):
        assert rc_of(by[name]) == 0, name
    for name, rc in (("key_control_wrong_owner", "TPM_AUTHFAIL"), ("key_control_no_key", "TPM_INVALID_KEYHANDLE"),
                     ("key_control_srk", "TPM_INVALID_KEYHANDLE"), ("key_control_other_pubkey", "TPM_BAD_PARAMETER"),
                     ("key_control_bad_bit", "TPM_BAD_MODE"), ("key_control_volatile", "TPM_BAD_PARAMETER"),
                     ("flush_evict_key", "TPM_KEY_OWNER_CONTROL"),
                     ("evict_key_evict_key", "TPM_KEY_OWNER_CONTROL"), ("save_context_evict_key", "TPM_OWNER_CONTROL"),
                     ("plain_key_gone", "TPM_INVALID_KEYHANDLE"),
                     ("change_auth_key_oiap_protocol", "TPM_BAD_PARAMETER"),
                     ("change_auth_keyhandle_entity", "TPM_WRONG_ENTITYTYPE"),
                     ("activate_owner_only_aik_needs_auth", "TPM_AUTHFAIL")):
        assert rc_of(by[name]) == C.RC[rc], name
    # the owner-evict bit as TPM_CAP_KEY_STATUS reads it, through a power cycle and ST_STATE
    for name, bit in (("key_status_not_evict", 0), ("key_status_evict", 1), ("key_status_after_power_cycle", 1),
                      ("key_status_after_st_state", 1), ("key_status_unset", 0)):
        assert by[name][-1] == bit, name
    assert b"\x42" * 16 in by["activate_owner_only"]  # the session key the privacy CA sent
    # the empty tables: familyTableSize 0, delegateTableSize 0
    assert by["delegate_read_table"][10:] == u32(0) + u32(0)
    # a power cycle keeps only the owner-evict key; a clear takes it away, for good
    assert by["key_handles_after_power_cycle"][14:16] == u16(2)
    assert by["key_handles_three"][14:16] == u16(3)
    assert by["key_handles_after_clear_and_power_cycle"][14:16] == u16(0)

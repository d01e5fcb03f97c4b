"""Physical presence, the owner's flag commands, the SHA-1 thread, key contexts, identities and
framing: our engine against libtpms, command for command (issue 26).

One scenario runs on both TPMs of :func:`.differential.pair` (each from the
factory: started here, an EK made): every command's return code and
response length must agree, and where the answer is determined by the state
(the flags, SHA-1 digests, PCR values) its bytes too.
"""

from __future__ import annotations

import hashlib
import shutil
import struct

import pytest

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import hostcrypto
from trustlab.devices.tpm12.client import key_template
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import Key11, key_from_bytes, pubkey_modulus, rsa_public, unmarshal_key
from trustlab.devices.tpm12.primitives import KeyPool

from .conformance_cases import OWNER, SRK, cap, ek_frame, frame, nv_define, pp, rc_of, u16, u32
from .differential import disagreements, pair, run_scenario

pytestmark = [pytest.mark.swtpm, pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")]

KEY = hostcrypto.sha1(b"key")
OPERATOR = hostcrypto.sha1(b"operator")



def flags_frame(which: int) -> bytes:
    return cap(C.TPM_CAP_FLAG, u32(which))



def quiet(side, fn, *args, **kw):
    try:
        return fn(*args, **kw)
    except TpmError:
        return None


# ---- the scenario: (name, action, compare the response bytes too) -------------------------
def _owner_cmd(name: str, params: bytes = b"") -> "callable":
    return lambda s: quiet(s, s.tpm.call, name, params=params, auth=[OWNER])


def _change_auth_owner(s, entity: int, new: bytes) -> None:
    session = quiet(s, s.tpm.TPM_OSAP, C.TPM_ET_OWNER, C.TPM_KH_OWNER, OWNER)
    if session is None:
        return
    session.cont = False
    params = u16(C.TPM_PID_ADCP) + session.encrypt_auth(new) + u16(entity)
    quiet(s, s.tpm.call, "TPM_ChangeAuthOwner", params=params, auth=[session])


def _make_identity_11(s) -> None:
    """TrouSerS' form: the AIK template is a TPM 1.1 TPM_KEY."""
    session = quiet(s, s.tpm.TPM_OSAP, C.TPM_ET_OWNER, C.TPM_KH_OWNER, OWNER)
    if session is None:
        return
    session.cont = False
    t = key_template(C.TPM_KEY_IDENTITY)
    template = Key11(t.usage, t.flags, t.auth_usage, t.parms, b"")
    params = session.encrypt_auth(KEY) + b"\x11" * 20 + template.marshal()
    out = quiet(s, s.tpm.call, "TPM_MakeIdentity", params=params, auth=[SRK, session])
    if out is not None:
        s.ctx["aik_blob"] = unmarshal_key(out[1]).marshal()


def _activate_identity(s, ek_blob: bool) -> None:
    """The privacy CA's answer: a TPM_EK_BLOB_ACTIVATE (or a 1.1 TPM_ASYM_CA_CONTENTS) under the EK."""
    blob = s.ctx.get("aik_blob")
    if blob is None:
        return
    h = quiet(s, s.tpm.TPM_LoadKey2, C.TPM_KH_SRK, blob, SRK)
    if h is None:
        return
    aik = key_from_bytes(blob)
    session_key = u32(C.TPM_ALG_AES128) + u16(C.TPM_ES_SYM_CTR) + u16(16) + b"\x42" * 16
    id_digest = hostcrypto.sha1(aik.pubkey())
    if ek_blob:
        pcr_info_short = u16(3) + b"\x00\x00\x00" + b"\x1f" + b"\x00" * 20
        activate = u16(C.TPM_TAG_EK_BLOB_ACTIVATE) + session_key + id_digest + pcr_info_short
        plain = u16(C.TPM_TAG_EK_BLOB) + u16(C.TPM_EK_TYPE_ACTIVATE) + u32(len(activate)) + activate
    else:
        plain = session_key + id_digest
    pub = quiet(s, s.tpm.call, "TPM_OwnerReadPubek", auth=[OWNER])
    if pub is None:
        return
    enc = hostcrypto.oaep_encrypt(rsa_public(pubkey_modulus(pub[1].rest())[1]), plain)
    quiet(s, s.tpm.call, "TPM_ActivateIdentity", handles=[h], params=u32(len(enc)) + enc, auth=[KEY, OWNER])
    quiet(s, s.tpm.TPM_FlushSpecific, h)


def _key_context(s) -> None:
    blob = quiet(s, s.tpm.TPM_CreateWrapKey, C.TPM_KH_SRK, SRK, key_template(C.TPM_KEY_SIGNING), KEY)
    h = quiet(s, s.tpm.TPM_LoadKey2, C.TPM_KH_SRK, blob, SRK) if blob else None
    if h is None:
        return
    rsp = s.execute(frame(C.ORD["TPM_SaveKeyContext"], u32(h)))
    s.ctx["keyctx"] = rsp[14:] if rc_of(rsp) == 0 else b""
    s.execute(frame(C.ORD["TPM_FlushSpecific"], u32(h) + u32(C.TPM_RT_KEY)))


def _save_state_keeps_oiap(s) -> None:
    rsp = s.execute(frame(C.ORD["TPM_OIAP"]))
    s.ctx["oiap"] = rsp[10:14]
    s.execute(frame(C.ORD["TPM_SaveState"]))
    s.target.init()
    s.execute(frame(C.ORD["TPM_Startup"], u16(C.TPM_ST_STATE)))


def _seal_pcr(s, info_long: bool, localities: bytes = b"\x01\x1f") -> None:
    """tpm_sealdata -p 0 -p 7 (TPM_PCR_INFO, sizeOfSelect 2) / -p 16 (TPM_PCR_INFO_LONG), then unseal."""
    session = quiet(s, s.tpm.TPM_OSAP, C.TPM_ET_SRK, C.TPM_KH_SRK, SRK)
    if session is None:
        return
    session.cont = False
    values = [s.tpm.TPM_PCRRead(i) for i in ((16,) if info_long else (0, 7))]
    select = b"\x00\x00\x01" if info_long else b"\x81\x00"
    selection = u16(len(select)) + select
    release = hostcrypto.sha1(selection, u32(20 * len(values)), *values)
    info = (u16(C.TPM_TAG_PCR_INFO_LONG) + localities + selection + selection + b"\x00" * 20 + release
            if info_long else selection + release + b"\x00" * 20)
    params = session.encrypt_auth(KEY) + u32(len(info)) + info + u32(5) + b"hello"
    out = quiet(s, s.tpm.call, "TPM_Seal", handles=[C.TPM_KH_SRK], params=params, auth=[session])
    if out is not None:
        s.ctx["sealed"] = out[1].rest()
        unsealed = quiet(s, s.tpm.call, "TPM_Unseal", handles=[C.TPM_KH_SRK], params=s.ctx["sealed"],
                         auth=[SRK, KEY])
        s.ctx["unsealed"] = unsealed[1].rest() if unsealed else None


SCENARIO: list[tuple[str, object, bool]] = [
    ("pp_undefined_bits", lambda s: s.execute(pp(0x0400)), False),
    ("pp_present_and_notpresent", lambda s: s.execute(pp(0x0018)), False),
    ("pp_cmd_enable", lambda s: s.execute(pp(0x0020)), False),
    ("pp_lifetime_with_assertion", lambda s: s.execute(pp(0x0028)), False),
    ("pp_present", lambda s: s.execute(pp(0x0008)), False),
    ("flags_volatile_present", lambda s: s.execute(flags_frame(C.TPM_CAP_FLAG_VOLATILE)), True),
    ("physical_disable", lambda s: s.execute(frame(C.ORD["TPM_PhysicalDisable"])), False),
    ("read_pubek_disabled", lambda s: s.execute(frame(C.ORD["TPM_ReadPubek"], b"\x00" * 20)), False),
    ("oiap_disabled", lambda s: s.execute(frame(C.ORD["TPM_OIAP"])), False),
    ("flags_permanent_disabled", lambda s: s.execute(flags_frame(C.TPM_CAP_FLAG_PERMANENT)), True),
    ("physical_enable", lambda s: s.execute(frame(C.ORD["TPM_PhysicalEnable"])), False),
    ("physical_set_deactivated_2", lambda s: s.execute(frame(C.ORD["TPM_PhysicalSetDeactivated"], b"\x02")), False),
    ("physical_set_deactivated", lambda s: s.execute(frame(C.ORD["TPM_PhysicalSetDeactivated"], b"\x01")), False),
    ("flags_permanent_deactivated", lambda s: s.execute(flags_frame(C.TPM_CAP_FLAG_PERMANENT)), True),
    ("physical_set_activated", lambda s: s.execute(frame(C.ORD["TPM_PhysicalSetDeactivated"], b"\x00")), False),
    ("set_owner_install_false", lambda s: s.execute(frame(C.ORD["TPM_SetOwnerInstall"], b"\x00")), False),
    ("take_ownership_install_disabled", lambda s: quiet(s, s.tpm.TPM_TakeOwnership, OWNER, SRK), False),
    ("set_owner_install_true", lambda s: s.execute(frame(C.ORD["TPM_SetOwnerInstall"], b"\x01")), False),
    ("set_operator_auth", lambda s: s.execute(frame(C.ORD["TPM_SetOperatorAuth"], OPERATOR)), False),
    ("stir_random", lambda s: s.execute(frame(C.ORD["TPM_StirRandom"], u32(10) + b"\x01" * 10)), False),
    ("stir_random_256", lambda s: s.execute(frame(C.ORD["TPM_StirRandom"], u32(256) + b"\x01" * 256)), False),
    ("sha1_update_no_thread", lambda s: s.execute(frame(C.ORD["TPM_SHA1Update"], u32(64) + b"a" * 64)), False),
    ("sha1_start", lambda s: s.execute(frame(C.ORD["TPM_SHA1Start"])), True),
    ("sha1_update", lambda s: s.execute(frame(C.ORD["TPM_SHA1Update"], u32(128) + b"a" * 128)), False),
    ("sha1_complete", lambda s: s.execute(frame(C.ORD["TPM_SHA1Complete"], u32(3) + b"abc")), True),
    ("sha1_complete_again", lambda s: s.execute(frame(C.ORD["TPM_SHA1Complete"], u32(3) + b"abc")), False),
    ("sha1_update_63", lambda s: (s.execute(frame(C.ORD["TPM_SHA1Start"])),
                                  s.execute(frame(C.ORD["TPM_SHA1Update"], u32(63) + b"a" * 63)))[1], False),
    ("sha1_interrupted", lambda s: (s.execute(frame(C.ORD["TPM_SHA1Start"])), s.execute(frame(C.ORD["TPM_OIAP"])),
                                    s.execute(frame(C.ORD["TPM_SHA1Complete"], u32(0))))[2], False),
    ("sha1_complete_extend", lambda s: (s.execute(frame(C.ORD["TPM_SHA1Start"])), s.execute(
        frame(C.ORD["TPM_SHA1CompleteExtend"], u32(16) + u32(5) + b"hello")))[1], True),
    ("sha1_complete_long", lambda s: (s.execute(frame(C.ORD["TPM_SHA1Start"])), s.execute(
        frame(C.ORD["TPM_SHA1Complete"], u32(65) + b"b" * 65)))[1], False),
    ("get_capability_owner_no_owner", _owner_cmd("TPM_GetCapabilityOwner"), False),
    ("take_ownership", lambda s: quiet(s, s.tpm.TPM_TakeOwnership, OWNER, SRK), False),
    ("get_capability_owner", _owner_cmd("TPM_GetCapabilityOwner"), False),
    ("get_pub_key_srk", lambda s: quiet(s, s.tpm.TPM_GetPubKey, C.TPM_KH_SRK, SRK), False),
    ("set_capability_read_srk_pub", _owner_cmd("TPM_SetCapability", u32(1) + u32(4) + u32(17) + u32(1) + b"\x01"),
     False),
    ("get_pub_key_srk_readable", lambda s: quiet(s, s.tpm.TPM_GetPubKey, C.TPM_KH_SRK, SRK), False),
    ("set_capability_ownership_owned",
     lambda s: s.execute(frame(C.ORD["TPM_SetCapability"], u32(1) + u32(4) + u32(2) + u32(1) + b"\x01")), False),
    ("set_capability_no_presence_area", _owner_cmd("TPM_SetCapability", u32(9) + u32(4) + u32(1) + u32(1) + b"\x01"),
     False),
    ("set_capability_cekp_used", _owner_cmd("TPM_SetCapability", u32(1) + u32(4) + u32(10) + u32(1) + b"\x01"),
     False),
    ("set_capability_stclear_pp", lambda s: s.execute(
        frame(C.ORD["TPM_SetCapability"], u32(3) + u32(4) + u32(3) + u32(1) + b"\x01")), False),
    ("flags_permanent_owned", lambda s: s.execute(flags_frame(C.TPM_CAP_FLAG_PERMANENT)), True),
    ("disable_pubek_read", _owner_cmd("TPM_DisablePubekRead"), False),
    ("read_pubek_owned", lambda s: s.execute(frame(C.ORD["TPM_ReadPubek"], b"\x00" * 20)), False),
    ("owner_set_disable", _owner_cmd("TPM_OwnerSetDisable", b"\x01"), False),
    ("get_random_disabled", lambda s: s.execute(frame(C.ORD["TPM_GetRandom"], u32(8))), False),
    ("owner_set_disable_bad_bool", _owner_cmd("TPM_OwnerSetDisable", b"\x02"), False),
    ("owner_set_enable", _owner_cmd("TPM_OwnerSetDisable", b"\x00"), False),
    ("set_temp_deactivated_operator", lambda s: quiet(s, s.tpm.call, "TPM_SetTempDeactivated", auth=[OPERATOR]),
     False),
    ("get_random_deactivated", lambda s: s.execute(frame(C.ORD["TPM_GetRandom"], u32(8))), False),
    ("power_cycle", lambda s: (s.target.init(), s.execute(frame(C.ORD["TPM_Startup"], u16(C.TPM_ST_CLEAR))))[1],
     False),
    ("pp_present_again", lambda s: s.execute(pp(0x0008)), False),
    ("pp_lock", lambda s: s.execute(pp(0x0004)), False),
    ("pp_present_locked", lambda s: s.execute(pp(0x0008)), False),
    ("flags_volatile_locked", lambda s: s.execute(flags_frame(C.TPM_CAP_FLAG_VOLATILE)), True),
    ("force_clear_no_presence", lambda s: s.execute(frame(C.ORD["TPM_ForceClear"])), False),
    ("seal_pcr_info_select2", lambda s: _seal_pcr(s, False), False),
    ("seal_pcr_info_long", lambda s: _seal_pcr(s, True), False),
    ("seal_pcr_info_long_locality_0", lambda s: _seal_pcr(s, True, b"\x00\x1f"), False),
    ("change_auth_owner_srk", lambda s: _change_auth_owner(s, C.TPM_ET_SRK, KEY), False),
    ("change_auth_owner_srk_back", lambda s: _change_auth_owner(s, C.TPM_ET_SRK, SRK), False),
    ("change_auth_owner_bad_entity", lambda s: _change_auth_owner(s, C.TPM_ET_KEYHANDLE, KEY), False),
    ("make_identity_tpm_key", _make_identity_11, False),
    ("activate_identity_ek_blob", lambda s: _activate_identity(s, True), False),
    ("activate_identity_asym_ca_contents", lambda s: _activate_identity(s, False), False),
    ("key_context_save_load", lambda s: (_key_context(s), s.execute(
        frame(C.ORD["TPM_LoadKeyContext"], u32(len(s.ctx.get("keyctx", b""))) + s.ctx.get("keyctx", b""))))[1],
     False),
    ("key_context_garbage", lambda s: s.execute(frame(C.ORD["TPM_LoadKeyContext"], u32(4) + b"junk")), False),
    ("save_key_context_no_key", lambda s: s.execute(frame(C.ORD["TPM_SaveKeyContext"], u32(0x01abcdef))), False),
    ("save_state_startup_state", _save_state_keeps_oiap, False),
    ("oiap_kept_across_st_state",
     lambda s: s.execute(frame(C.ORD["TPM_FlushSpecific"], s.ctx["oiap"] + u32(C.TPM_RT_AUTH))), False),
    ("frame_response_tag", lambda s: s.execute(struct.pack(">HII", 0xC4, 22, C.ORD["TPM_GetCapability"])
                                               + u32(C.TPM_CAP_PROPERTY) + u32(4) + u32(0x101)), False),
    ("frame_param_size_short", lambda s: s.execute(struct.pack(">HII", 0xC1, 22, C.ORD["TPM_GetCapability"])
                                                   + u32(C.TPM_CAP_PROPERTY) + u32(4) + u32(0x101) + b"\x00"), False),
    ("nv_define_owner_write", lambda s: nv_define(s, 0x00011201, C.TPM_NV_PER_OWNERWRITE, 8), False),
    ("nv_define_auth_write", lambda s: nv_define(s, 0x00011202, C.TPM_NV_PER_AUTHWRITE, 8), False),
    ("nv_define_gpio_00", lambda s: nv_define(s, 0x00011600, C.TPM_NV_PER_AUTHWRITE, 8), False),
    ("nv_list_owned", lambda s: s.execute(cap(C.TPM_CAP_NV_LIST)), True),
    ("disable_owner_clear", _owner_cmd("TPM_DisableOwnerClear"), False),
    ("owner_clear_disabled", _owner_cmd("TPM_OwnerClear"), False),
    ("pp_present_for_clear", lambda s: (s.target.init(), s.execute(frame(C.ORD["TPM_Startup"], u16(1))),
                                        s.execute(pp(0x0008)))[2], False),
    ("disable_force_clear", lambda s: s.execute(frame(C.ORD["TPM_DisableForceClear"])), False),
    ("force_clear_disabled", lambda s: s.execute(frame(C.ORD["TPM_ForceClear"])), False),
    ("power_cycle_2", lambda s: (s.target.init(), s.execute(frame(C.ORD["TPM_Startup"], u16(1))),
                                 s.execute(pp(0x0008)))[2], False),
    ("force_clear", lambda s: s.execute(frame(C.ORD["TPM_ForceClear"])), False),
    ("flags_permanent_cleared", lambda s: s.execute(flags_frame(C.TPM_CAP_FLAG_PERMANENT)), True),
    ("nv_list_cleared", lambda s: s.execute(cap(C.TPM_CAP_NV_LIST)), True),
    ("read_pubek_cleared", lambda s: s.execute(frame(C.ORD["TPM_ReadPubek"], b"\x00" * 20)), False),
    ("get_capability_owner_cleared", _owner_cmd("TPM_GetCapabilityOwner"), False),
]


def _rows() -> list[tuple]:
    ours, libtpms = pair(KeyPool())
    try:
        out = run_scenario(ours, libtpms, [frame(C.ORD["TPM_Startup"], u16(C.TPM_ST_CLEAR)), ek_frame()], SCENARIO)
        out.append(("unsealed", True, ours.ctx.get("unsealed") or b"", libtpms.ctx.get("unsealed") or b""))
    finally:
        libtpms.target.close()
    return out


def test_every_step_answers_as_libtpms() -> None:
    """One test (xdist would run a module fixture once per worker); then the scenario does what it says."""
    rows = _rows()
    bad = disagreements(rows)
    assert not bad, "\n".join(bad)
    # not only refusals: the steps that must succeed do, on both
    by = {name: (a, b) for name, _e, a, b in rows}
    for name in ("pp_present", "physical_disable", "take_ownership", "get_capability_owner",
                 "get_pub_key_srk_readable", "sha1_complete", "sha1_complete_extend", "make_identity_tpm_key",
                 "activate_identity_ek_blob", "activate_identity_asym_ca_contents", "key_context_save_load",
                 "oiap_kept_across_st_state", "force_clear", "seal_pcr_info_select2", "seal_pcr_info_long",
                 "change_auth_owner_srk", "set_temp_deactivated_operator"):
        assert [rc_of(x) for x in by[name]] == [0, 0], name
    assert by["unsealed"][0] == struct.pack(">I", 5) + b"hello"
    # OwnerClear/ForceClear release the owner's NV areas and PC Client's GPIO_00, keep the others
    assert by["nv_list_owned"][0][14:] == u32(0x00011201) + u32(0x00011202) + u32(0x00011600)
    assert by["nv_list_cleared"][0][14:] == u32(0x00011202)
    a, _ = by["sha1_complete"]
    assert a[10:30] == hashlib.sha1(b"a" * 128 + b"abc").digest()
    for name, rc in (("read_pubek_disabled", "TPM_DISABLED"), ("get_random_deactivated", "TPM_DEACTIVATED"),
                     ("frame_response_tag", "TPM_BADTAG"), ("frame_param_size_short", "TPM_BAD_PARAM_SIZE"),
                     ("get_pub_key_srk", "TPM_INVALID_KEYHANDLE"), ("owner_clear_disabled", "TPM_CLEAR_DISABLED")):
        assert rc_of(by[name][0]) == C.RC[rc], name

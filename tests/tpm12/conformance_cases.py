"""The differential cases: one function per case, run in order on both TPMs.

A case drives its :class:`~.differential.Side` (raw frames, or the host client
for sessions and secrets that differ per TPM, e.g. EK-encrypted owner secrets)
and is judged by its *last* command/response pair: return code, response
length and the non-random fields (``key``: which part of the response must be
identical; by default everything but the authorization trailers' fresh nonces
and HMACs). Cases share state in sequence, like a host session.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Callable

from trustlab.devices.tpm12 import TpmError, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.client import bind, key_template
from trustlab.devices.tpm12.keys import Key11, Key12, KeyParms, key_from_bytes

OWNER, SRK, KEY, DATA, NVA, CNT = (secret(x) for x in ("owner", "srk", "key", "data", "nv", "counter"))
WRONG = secret("wrong")
OAEP_PARMS = KeyParms(C.TPM_ALG_RSA, C.TPM_ES_RSAESOAEP_SHA1_MGF1, C.TPM_SS_NONE)


def frame(ordinal: int, params: bytes = b"", tag: int = C.TPM_TAG_RQU_COMMAND, size: int | None = None) -> bytes:
    return struct.pack(">HII", tag, size if size is not None else 10 + len(params), ordinal) + params


def u16(v: int) -> bytes:
    return struct.pack(">H", v)


def u32(v: int) -> bytes:
    return struct.pack(">I", v)


def pp(bits: int) -> bytes:
    """TSC_PhysicalPresence with ``bits`` (what a BIOS sends: CMD_ENABLE 0x0020, then PRESENT 0x0008)."""
    return frame(C.ORD["TSC_PhysicalPresence"], u16(bits))


def ek_frame() -> bytes:
    """TPM_CreateEndorsementKeyPair of an RSA-2048 EK (every libtpms comparison starts from one)."""
    return frame(C.ORD["TPM_CreateEndorsementKeyPair"], b"\x00" * 20 + struct.pack(">IHHI", 1, 3, 1, 12)
                 + struct.pack(">III", 2048, 2, 0))


def rc_of(rsp: bytes) -> int | None:
    return struct.unpack(">I", rsp[6:10])[0] if len(rsp) >= 10 else None


def stripped(rsp: bytes) -> bytes:
    """The response without authorization trailers (fresh nonceEven and HMAC per session)."""
    if len(rsp) < 10 or rc_of(rsp):
        return rsp
    n = {C.TPM_TAG_RSP_AUTH1_COMMAND: 1, C.TPM_TAG_RSP_AUTH2_COMMAND: 2}.get(struct.unpack(">H", rsp[:2])[0], 0)
    return rsp[:len(rsp) - 41 * n] if n else rsp


def header_only(rsp: bytes) -> bytes:
    """For responses whose body is random or key material: tag, size and code only."""
    return rsp[:10]


@dataclass
class Case:
    name: str
    group: str
    run: Callable
    key: Callable[[bytes], bytes] = stripped
    note: str = ""


CASES: list[Case] = []


def case(group: str, key: Callable[[bytes], bytes] = stripped, note: str = ""):
    def deco(fn):
        CASES.append(Case(fn.__name__, group, fn, key, note))
        return fn
    return deco


def raw_case(name: str, group: str, data: bytes, key: Callable[[bytes], bytes] = stripped, note: str = "") -> None:
    CASES.append(Case(name, group, lambda s: s.raw(data), key, note))


def quiet(fn, *a, **k):
    """Run a host call whose TPM error is the case's outcome (judged from the response)."""
    try:
        return fn(*a, **k)
    except TpmError:
        return None


def cap(area: int, sub: bytes = b"") -> bytes:
    return frame(C.ORD["TPM_GetCapability"], u32(area) + u32(len(sub)) + sub)


ORD = C.ORD

# ---- 1. before TPM_Startup (Part 3, 3.1: everything but Startup answers TPM_INVALID_POSTINIT) ----
for _name, _params in [("TPM_GetCapability", u32(C.TPM_CAP_VERSION_VAL) + u32(0)), ("TPM_PCRRead", u32(0)),
                       ("TPM_OIAP", b""), ("TPM_GetRandom", u32(8)), ("TPM_Extend", u32(0) + b"\x01" * 20),
                       ("TPM_ReadPubek", b"\x00" * 20), ("TPM_SelfTestFull", b""), ("TPM_GetTestResult", b""),
                       ("TPM_ContinueSelfTest", b""), ("TPM_SaveState", b""), ("TPM_GetTicks", b"")]:
    raw_case(f"before_startup_{_name}", "before-startup", frame(ORD[_name], _params))
raw_case("before_startup_unknown_ordinal", "before-startup", frame(0x0000FFFF))
raw_case("startup_bad_type", "startup", frame(ORD["TPM_Startup"], b"\x00\x07"))
raw_case("startup_short_param", "startup", frame(ORD["TPM_Startup"], b"\x00"))
raw_case("startup_clear", "startup", frame(ORD["TPM_Startup"], b"\x00\x01"))
raw_case("startup_second_time", "startup", frame(ORD["TPM_Startup"], b"\x00\x01"))
raw_case("startup_state_after_start", "startup", frame(ORD["TPM_Startup"], b"\x00\x02"))

# ---- 2. malformed frames ----
raw_case("frame_empty", "malformed", b"", note="swtpm needs a whole header")
raw_case("frame_short_header", "malformed", b"\x00\xc1\x00\x00\x00", note="swtpm needs a whole header")
raw_case("frame_size_larger_than_frame", "malformed", frame(ORD["TPM_GetRandom"], u32(8), size=20))
raw_case("frame_size_smaller_than_frame", "malformed", frame(ORD["TPM_GetRandom"], u32(8), size=12)[:12] + u32(8))
raw_case("frame_trailing_byte", "malformed", frame(ORD["TPM_GetRandom"], u32(8) + b"\x00"))
raw_case("frame_truncated_param", "malformed", frame(ORD["TPM_GetRandom"], b"\x00\x00"))
raw_case("frame_sized_buffer_over_64k", "malformed", cap(C.TPM_CAP_PROPERTY, b"")[:-4] + u32(0x00100000))
raw_case("frame_tag_response", "malformed", frame(ORD["TPM_GetRandom"], u32(8), tag=C.TPM_TAG_RSP_COMMAND))
raw_case("frame_tag_garbage", "malformed", frame(ORD["TPM_GetRandom"], u32(8), tag=0x1234))
raw_case("frame_tag_auth1_on_noauth", "malformed", frame(ORD["TPM_PCRRead"], u32(0), tag=C.TPM_TAG_RQU_AUTH1_COMMAND))
raw_case("frame_unknown_ordinal", "malformed", frame(0x0000FFFF))
raw_case("frame_unimplemented_ordinal_DAA_Join", "malformed", frame(ORD["TPM_DAA_Join"], b"\x00" * 8))
raw_case("frame_vendor_ordinal", "malformed", frame(0x20000123), note="vendor range, unused")
raw_case("frame_auth_tag_too_short", "malformed",
         frame(ORD["TPM_OwnerReadPubek"], b"\x00" * 10, tag=C.TPM_TAG_RQU_AUTH1_COMMAND))

# ---- 3. TPM_GetCapability (Part 2, 21) ----
V = "vendor-specific values (Part 2, 21.2 leaves them to the manufacturer)"
for _name, _area, _sub, _key in [
        ("version", C.TPM_CAP_VERSION, b"", stripped), ("version_val", C.TPM_CAP_VERSION_VAL, b"", header_only),
        ("flag_permanent", C.TPM_CAP_FLAG, u32(C.TPM_CAP_FLAG_PERMANENT), stripped),
        ("flag_volatile", C.TPM_CAP_FLAG, u32(C.TPM_CAP_FLAG_VOLATILE), stripped),
        ("flag_bad", C.TPM_CAP_FLAG, u32(0x107), stripped),
        ("ord_oiap", C.TPM_CAP_ORD, u32(ORD["TPM_OIAP"]), stripped),
        ("ord_nv_define", C.TPM_CAP_ORD, u32(ORD["TPM_NV_DefineSpace"]), stripped),
        ("ord_unknown", C.TPM_CAP_ORD, u32(0xFFFF), stripped),
        ("ord_subcap_2_bytes", C.TPM_CAP_ORD, b"\x00\x0a", stripped),
        ("alg_rsa", C.TPM_CAP_ALG, u32(C.TPM_ALG_RSA), stripped),
        ("alg_sha", C.TPM_CAP_ALG, u32(C.TPM_ALG_SHA), stripped),
        ("pid_owner", C.TPM_CAP_PID, b"\x00\x05", stripped),
        ("pid_bad_size", C.TPM_CAP_PID, u32(5), stripped),
        ("key_handle", C.TPM_CAP_KEY_HANDLE, b"", stripped),
        ("handle_key", C.TPM_CAP_HANDLE, u32(C.TPM_RT_KEY), stripped),
        ("handle_auth", C.TPM_CAP_HANDLE, u32(C.TPM_RT_AUTH), stripped),
        ("handle_trans", C.TPM_CAP_HANDLE, u32(C.TPM_RT_TRANS), stripped),
        ("handle_counter", C.TPM_CAP_HANDLE, u32(C.TPM_RT_COUNTER), stripped),
        ("handle_bad_type", C.TPM_CAP_HANDLE, u32(0x99), stripped),
        ("nv_list_empty", C.TPM_CAP_NV_LIST, b"", stripped),
        ("nv_index_missing", C.TPM_CAP_NV_INDEX, u32(0x1000), stripped),
        ("select_size_3", C.TPM_CAP_SELECT_SIZE, b"\x01\x02\x00\x03", stripped),
        ("select_size_4", C.TPM_CAP_SELECT_SIZE, b"\x01\x02\x00\x04", stripped),
        ("trans_es_ctr", C.TPM_CAP_TRANS_ES, b"\x00\x04", stripped),
        ("auth_encrypt_xor", C.TPM_CAP_AUTH_ENCRYPT, u32(C.TPM_ALG_XOR), stripped),
        ("sym_mode", C.TPM_CAP_SYM_MODE, u32(1), stripped),
        ("check_loaded_rsa", C.TPM_CAP_CHECK_LOADED, OAEP_PARMS.marshal(), stripped),
        ("da_logic", C.TPM_CAP_DA_LOGIC, b"\x00\x02", stripped),
        ("mfr_unknown", C.TPM_CAP_MFR, u32(0x99), stripped),
        ("bad_area", 0x77, b"", stripped)]:
    raw_case(f"cap_{_name}", "capability", cap(_area, _sub), _key, V if _key is header_only else "")
for _prop in [0x101, 0x102, 0x103, 0x104, 0x107, 0x10A, 0x10B, 0x10C, 0x10D, 0x10E, 0x10F, 0x110, 0x111,
              0x115, 0x116, 0x11B, 0x11F, 0x120, 0x122, 0x124, 0x105, 0x121]:
    vendorish = _prop in (0x103, 0x104, 0x10A, 0x10B, 0x10C, 0x10D, 0x10E, 0x10F, 0x110, 0x115, 0x116, 0x120, 0x124)
    raw_case(f"cap_property_{_prop:#x}", "capability", cap(C.TPM_CAP_PROPERTY, u32(_prop)),
             header_only if vendorish else stripped, V if vendorish else "")

# ---- 4. self-test, random, PCRs ----
raw_case("selftest_full", "selftest", frame(ORD["TPM_SelfTestFull"]))
raw_case("continue_selftest", "selftest", frame(ORD["TPM_ContinueSelfTest"]))
raw_case("get_test_result", "selftest", frame(ORD["TPM_GetTestResult"]), header_only,
         "outData is manufacturer-specific (Part 3, 4.3)")
raw_case("selftest_full_extra_byte", "selftest", frame(ORD["TPM_SelfTestFull"], b"\x00"))
for _n in (0, 1, 20, 128, 0xFFFFFFFF):
    raw_case(f"get_random_{_n}", "random", frame(ORD["TPM_GetRandom"], u32(_n)), lambda r: r[:14])
for _i in (0, 7, 15, 16, 17, 22, 23, 24):
    raw_case(f"pcr_read_{_i}", "pcr", frame(ORD["TPM_PCRRead"], u32(_i)))
for _i in (0, 10, 16, 17, 19, 23, 24):
    raw_case(f"extend_{_i}", "pcr", frame(ORD["TPM_Extend"], u32(_i) + hashlib.sha1(b"m%d" % _i).digest()))
raw_case("pcr_read_10_after_extend", "pcr", frame(ORD["TPM_PCRRead"], u32(10)))
raw_case("pcr_reset_16", "pcr", frame(ORD["TPM_PCR_Reset"], b"\x00\x03\x00\x00\x01"))
raw_case("pcr_read_16_after_reset", "pcr", frame(ORD["TPM_PCRRead"], u32(16)))
raw_case("pcr_reset_0_not_resettable", "pcr", frame(ORD["TPM_PCR_Reset"], b"\x00\x03\x01\x00\x00"))
raw_case("pcr_reset_17_wrong_locality", "pcr", frame(ORD["TPM_PCR_Reset"], b"\x00\x03\x00\x00\x02"))


@case("locality")
def extend_17_at_locality_2(s):
    s.target.set_locality(2)
    s.raw(frame(ORD["TPM_Extend"], u32(17) + b"\x17" * 20))
    s.ctx["after"] = s.last
    s.target.set_locality(0)
    s.last = s.ctx["after"]


@case("locality")
def pcr_read_17_after_locality_2_extend(s):
    s.raw(frame(ORD["TPM_PCRRead"], u32(17)))


# ---- 5. endorsement key ----
raw_case("read_pubek_no_ek", "ek", frame(ORD["TPM_ReadPubek"], b"\x00" * 20))
raw_case("take_ownership_no_ek", "ek", frame(ORD["TPM_TakeOwnership"], b"\x00\x05" + u32(0) + u32(0)
                                              + key_template(C.TPM_KEY_STORAGE).marshal() + b"\x00" * 45,
                                              tag=C.TPM_TAG_RQU_AUTH1_COMMAND))
raw_case("create_ek_1024_bits", "ek", frame(ORD["TPM_CreateEndorsementKeyPair"], b"\x01" * 20
                                            + KeyParms(C.TPM_ALG_RSA, C.TPM_ES_RSAESOAEP_SHA1_MGF1, C.TPM_SS_NONE,
                                                       1024).marshal()))
raw_case("create_ek_short", "ek", frame(ORD["TPM_CreateEndorsementKeyPair"], b"\x01" * 20))


def _pubkey_fields(rsp: bytes) -> bytes:
    """A TPM_PUBKEY answer: everything but the modulus and the checksum over it."""
    return rsp[:10 + 24 + 4] if rc_of(rsp) == 0 else rsp


raw_case("create_ek", "ek", frame(ORD["TPM_CreateEndorsementKeyPair"], b"\x01" * 20 + OAEP_PARMS.marshal()),
         _pubkey_fields)
raw_case("create_ek_again", "ek", frame(ORD["TPM_CreateEndorsementKeyPair"], b"\x01" * 20 + OAEP_PARMS.marshal()))
raw_case("read_pubek", "ek", frame(ORD["TPM_ReadPubek"], b"\x02" * 20), _pubkey_fields)
raw_case("read_pubek_short_nonce", "ek", frame(ORD["TPM_ReadPubek"], b"\x02" * 19))

# ---- 6. sessions before an owner ----
raw_case("oiap", "session", frame(ORD["TPM_OIAP"]), header_only, "handle and nonce are the TPM's choice")
raw_case("osap_owner_without_owner", "session",
         frame(ORD["TPM_OSAP"], struct.pack(">HI", C.TPM_ET_OWNER, C.TPM_KH_OWNER) + b"\x03" * 20))
raw_case("osap_bad_entity_type", "session", frame(ORD["TPM_OSAP"], struct.pack(">HI", 0x77, 0) + b"\x03" * 20))
raw_case("flush_unknown_session", "session", frame(ORD["TPM_FlushSpecific"], u32(0x02FFFFFF) + u32(C.TPM_RT_AUTH)))
raw_case("flush_bad_resource_type", "session", frame(ORD["TPM_FlushSpecific"], u32(0x01000000) + u32(0x77)))
raw_case("auth_with_unknown_session", "session",
         frame(ORD["TPM_OwnerReadPubek"], u32(0x0BADBAD0) + b"\x00" * 20 + b"\x00" + b"\x00" * 20,
               tag=C.TPM_TAG_RQU_AUTH1_COMMAND))


def _ek(s):
    return s.tpm.TPM_ReadPubek()


def take_ownership(s, template: Key12, owner: bytes = OWNER, hmac_secret: bytes | None = None,
                   pid: int = C.TPM_PID_OWNER) -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    ek = s.ctx.get("ek") or _ek(s)
    s.ctx["ek"] = ek
    oaep = padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), b"TCPA")
    params = (struct.pack(">H", pid) + u32(256) + ek.encrypt(owner, oaep) + u32(256) + ek.encrypt(SRK, oaep)
              + template.marshal())
    quiet(s.tpm.call, "TPM_TakeOwnership", params=params, auth=[hmac_secret or owner])
    if rc_of(s.last[1]) == 0:
        s.ctx["owned"] = True


SRK11 = Key11(C.TPM_KEY_STORAGE, 0, C.TPM_AUTH_ALWAYS, OAEP_PARMS, b"")
SRK12 = key_template(C.TPM_KEY_STORAGE)


@case("ownership")
def take_ownership_wrong_hmac(s):
    take_ownership(s, SRK11, hmac_secret=WRONG)


@case("ownership")
def take_ownership_bad_protocol(s):
    take_ownership(s, SRK11, pid=C.TPM_PID_OIAP)


@case("ownership")
def take_ownership_1024_bit_srk(s):
    take_ownership(s, Key11(C.TPM_KEY_STORAGE, 0, C.TPM_AUTH_ALWAYS,
                            KeyParms(C.TPM_ALG_RSA, C.TPM_ES_RSAESOAEP_SHA1_MGF1, C.TPM_SS_NONE, 1024), b""))


@case("ownership")
def take_ownership_signing_srk(s):
    take_ownership(s, Key11(C.TPM_KEY_SIGNING, 0, C.TPM_AUTH_ALWAYS,
                            KeyParms(C.TPM_ALG_RSA, C.TPM_ES_NONE, C.TPM_SS_RSASSAPKCS1v15_SHA1), b""))


def _srk_pub_fields(rsp: bytes) -> bytes:
    """srkPub: the TPM_KEY without the modulus (its size stays)."""
    if rc_of(rsp):
        return rsp
    body = stripped(rsp)[10:]
    return rsp[:10] + body[:-(256 + 4)] + body[-4:]


@case("ownership", key=_srk_pub_fields)
def take_ownership_tpm11_srk_template(s):
    take_ownership(s, SRK11)


@case("ownership")
def take_ownership_again(s):
    take_ownership(s, SRK12)


raw_case("read_pubek_after_owner", "ownership", frame(ORD["TPM_ReadPubek"], b"\x02" * 20))
raw_case("cap_property_owner", "ownership", cap(C.TPM_CAP_PROPERTY, u32(0x111)))
raw_case("cap_flag_permanent_owned", "ownership", cap(C.TPM_CAP_FLAG, u32(C.TPM_CAP_FLAG_PERMANENT)))


@case("ownership", key=_pubkey_fields)
def owner_read_pubek(s):
    quiet(s.tpm.call, "TPM_OwnerReadPubek", auth=[OWNER])


@case("ownership")
def owner_read_pubek_wrong_auth(s):
    quiet(s.tpm.call, "TPM_OwnerReadPubek", auth=[WRONG])


@case("ownership", key=_pubkey_fields)
def owner_read_internal_pub_ek(s):
    quiet(s.tpm.call, "TPM_OwnerReadInternalPub", params=u32(C.TPM_KH_EK), auth=[OWNER])


@case("ownership", key=lambda r: r[:10])
def owner_read_internal_pub_srk(s):
    quiet(s.tpm.call, "TPM_OwnerReadInternalPub", params=u32(C.TPM_KH_SRK), auth=[OWNER])


@case("ownership")
def owner_read_internal_pub_bad_handle(s):
    quiet(s.tpm.call, "TPM_OwnerReadInternalPub", params=u32(0x01000000), auth=[OWNER])


# ---- 7. keys: 1.1 and 1.2 structures, 512/1024/2048 bits ----
def _blob_fields(rsp: bytes) -> bytes:
    """A wrapped key: the public part minus the modulus; sizes stay (encData is random)."""
    if rc_of(rsp):
        return rsp
    body = stripped(rsp)[10:]
    key = key_from_bytes(body)
    return rsp[:10] + key.public_part()[:-len(key.pub)] + u32(len(key.enc))


def create_key(s, name: str, template: Key12, parent: int = C.TPM_KH_SRK, parent_auth: bytes = SRK) -> None:
    blob = quiet(s.tpm.TPM_CreateWrapKey, parent, parent_auth, template, KEY)
    if blob is not None:
        s.ctx[name] = blob


def _signing(bits: int, legacy: bool = False) -> Key12:
    parms = KeyParms(C.TPM_ALG_RSA, C.TPM_ES_NONE, C.TPM_SS_RSASSAPKCS1v15_SHA1, bits)
    cls = Key11 if legacy else Key12
    return cls(C.TPM_KEY_SIGNING, 0, C.TPM_AUTH_ALWAYS, parms, b"")


for _bits in (512, 1024, 2048):
    for _legacy in (False, True):
        _label = f"sign{_bits}{'_11' if _legacy else ''}"
        CASES.append(Case(f"create_wrap_key_signing_{_bits}{'_tpm11' if _legacy else ''}", "keys",
                          (lambda b, lg, lb: lambda s: create_key(s, lb, _signing(b, lg)))(_bits, _legacy, _label),
                          _blob_fields))


@case("keys", key=_blob_fields)
def create_wrap_key_storage(s):
    create_key(s, "storage", key_template(C.TPM_KEY_STORAGE))


@case("keys", key=_blob_fields)
def create_wrap_key_bind(s):
    create_key(s, "bind", key_template(C.TPM_KEY_BIND))


@case("keys")
def create_wrap_key_storage_1024(s):
    create_key(s, "x", Key12(C.TPM_KEY_STORAGE, 0, C.TPM_AUTH_ALWAYS,
                             KeyParms(C.TPM_ALG_RSA, C.TPM_ES_RSAESOAEP_SHA1_MGF1, C.TPM_SS_NONE, 1024), b""))


@case("keys")
def create_wrap_key_3072_bits(s):
    create_key(s, "x", _signing(3072))


@case("keys")
def create_wrap_key_signing_with_oaep(s):
    create_key(s, "x", Key12(C.TPM_KEY_SIGNING, 0, C.TPM_AUTH_ALWAYS, OAEP_PARMS, b""))


@case("keys")
def create_wrap_key_wrong_parent_auth(s):
    create_key(s, "x", _signing(2048), parent_auth=WRONG)


@case("keys")
def create_wrap_key_parent_not_loaded(s):
    create_key(s, "x", _signing(2048), parent=0x01ABCDEF)


def load(s, name: str, out: str, ordinal: str = "TPM_LoadKey2", auth: bytes = SRK) -> None:
    blob = s.ctx.get(name, b"")
    try:
        handles, r = s.tpm.call(ordinal, handles=[C.TPM_KH_SRK], params=blob, auth=[auth],
                                out_handles=1 if ordinal == "TPM_LoadKey2" else 0)
        s.ctx[out] = handles[0] if handles else r.u32()
    except TpmError:
        pass


def _handle_free(rsp: bytes) -> bytes:
    """A load: the handle the TPM chose is its own; the rest must match."""
    if rc_of(rsp):
        return rsp
    return rsp[:2] + rsp[6:10]


for _label in ("sign512", "sign1024", "sign2048", "sign512_11", "sign2048_11", "storage", "bind"):
    CASES.append(Case(f"load_key2_{_label}", "keys", (lambda lb: lambda s: load(s, lb, "h_" + lb))(_label),
                      _handle_free))


@case("keys", key=_handle_free)
def load_key_tpm11_ordinal(s):
    load(s, "sign1024_11", "h_legacy", "TPM_LoadKey")


@case("keys")
def load_key2_wrong_parent_auth(s):
    load(s, "sign1024", "x", auth=WRONG)


@case("keys")
def load_key2_tampered_public(s):
    blob = bytearray(s.ctx["sign1024"])
    blob[-300] ^= 1
    s.ctx["tampered"] = bytes(blob)
    load(s, "tampered", "x")


@case("keys")
def load_key2_garbage(s):
    s.ctx["garbage"] = b"\x00\x28" + b"\x00" * 30
    load(s, "garbage", "x")


def sign(s, handle_name: str, data: bytes, auth: bytes = KEY) -> None:
    quiet(s.tpm.TPM_Sign, s.ctx.get(handle_name, 0x01FFFFFF), data, auth)


for _label in ("sign512", "sign1024", "sign2048", "sign2048_11", "legacy"):
    CASES.append(Case(f"sign_sha1_digest_{_label}", "keys",
                      (lambda lb: lambda s: sign(s, "h_" + lb, b"\x11" * 20))(_label),
                      lambda r: r[:14], "signature bytes differ per key"))


@case("keys")
def sign_wrong_size(s):
    sign(s, "h_sign2048", b"\x11" * 21)


@case("keys")
def sign_wrong_auth(s):
    sign(s, "h_sign2048", b"\x11" * 20, WRONG)


@case("keys")
def sign_with_storage_key(s):
    sign(s, "h_storage", b"\x11" * 20)


@case("keys")
def sign_unknown_handle(s):
    sign(s, "nothing", b"\x11" * 20)


@case("keys", key=lambda r: r[:10] + stripped(r)[10:34] if not rc_of(r) else r)
def get_pub_key(s):
    quiet(s.tpm.TPM_GetPubKey, s.ctx.get("h_sign1024"), KEY)


@case("keys", key=lambda r: r[:16])
def cap_handle_keys_loaded(s):
    s.raw(cap(C.TPM_CAP_HANDLE, u32(C.TPM_RT_KEY)))


# ---- 8. protected storage ----
@case("storage", key=lambda r: stripped(r)[:10 + 4 + 4 + 4] if not rc_of(r) else r)
def seal(s):
    blob = quiet(s.tpm.TPM_Seal, s.ctx.get("h_storage"), KEY, b"secret!", DATA)
    if blob:
        s.ctx["sealed"] = blob


@case("storage")
def unseal(s):
    quiet(s.tpm.TPM_Unseal, s.ctx.get("h_storage"), s.ctx.get("sealed", b""), KEY, DATA)


@case("storage")
def unseal_wrong_data_auth(s):
    quiet(s.tpm.TPM_Unseal, s.ctx.get("h_storage"), s.ctx.get("sealed", b""), KEY, WRONG)


@case("storage")
def seal_with_signing_key(s):
    quiet(s.tpm.TPM_Seal, s.ctx.get("h_sign2048"), KEY, b"secret!", DATA)


@case("storage")
def unseal_tampered(s):
    blob = bytearray(s.ctx.get("sealed", b"\x00" * 300))
    blob[-5] ^= 0xFF
    quiet(s.tpm.TPM_Unseal, s.ctx.get("h_storage"), bytes(blob), KEY, DATA)


@case("storage")
def unbind(s):
    pub = quiet(s.tpm.TPM_GetPubKey, s.ctx.get("h_bind"), KEY)
    quiet(s.tpm.TPM_UnBind, s.ctx.get("h_bind"), bind(pub, b"bound data"), KEY)


@case("storage")
def unbind_garbage(s):
    quiet(s.tpm.TPM_UnBind, s.ctx.get("h_bind"), b"\x01" * 256, KEY)


# ---- 9. NV storage (Part 3, 20) ----
NO_PCRS = b"\x00\x03\x00\x00\x00" + b"\x1f" + b"\x00" * 20  # TPM_PCR_INFO_SHORT: any locality, no PCRs


def nv_public(index: int, attrs: int, size: int, pcr_read: bytes = NO_PCRS, pcr_write: bytes = NO_PCRS) -> bytes:
    return (struct.pack(">HI", C.TPM_TAG_NV_DATA_PUBLIC, index) + pcr_read + pcr_write
            + struct.pack(">HI", C.TPM_TAG_NV_ATTRIBUTES, attrs) + b"\x00\x00\x00" + u32(size))


def nv_define(s, index: int, attrs: int, size: int, auth: bytes = NVA, owner: bytes | None = OWNER,
              pcr_read: bytes = NO_PCRS, pcr_write: bytes = NO_PCRS) -> None:
    public = nv_public(index, attrs, size, pcr_read, pcr_write)
    if owner is None:
        s.raw(frame(ORD["TPM_NV_DefineSpace"], public + auth))
        return
    sess = s.tpm.TPM_OSAP(C.TPM_ET_OWNER, C.TPM_KH_OWNER, owner)
    sess.cont = False
    quiet(s.tpm.call, "TPM_NV_DefineSpace", params=public + sess.encrypt_auth(auth), auth=[sess])


def nv_write(index: int, offset: int, data: bytes) -> bytes:
    return u32(index) + u32(offset) + u32(len(data)) + data


@case("nv")
def nv_define_unlocked_no_auth(s):
    nv_define(s, 0x00011000, C.TPM_NV_PER_PPWRITE, 16, owner=None)


raw_case("nv_write_unlocked", "nv", frame(ORD["TPM_NV_WriteValue"], nv_write(0x00011000, 0, b"hello")))
raw_case("nv_read_unlocked", "nv", frame(ORD["TPM_NV_ReadValue"], u32(0x00011000) + u32(0) + u32(5)))
raw_case("nv_read_missing", "nv", frame(ORD["TPM_NV_ReadValue"], u32(0x00011999) + u32(0) + u32(5)))
raw_case("nv_read_past_end", "nv", frame(ORD["TPM_NV_ReadValue"], u32(0x00011000) + u32(12) + u32(5)))
raw_case("nv_cap_list", "nv", cap(C.TPM_CAP_NV_LIST))
raw_case("nv_cap_index", "nv", cap(C.TPM_CAP_NV_INDEX, u32(0x00011000)))
raw_case("nv_define_lock_with_size", "nv", frame(ORD["TPM_NV_DefineSpace"], nv_public(C.TPM_NV_INDEX_LOCK, 0, 4)
                                                 + b"\x00" * 20))
raw_case("nv_define_lock", "nv", frame(ORD["TPM_NV_DefineSpace"], nv_public(C.TPM_NV_INDEX_LOCK, 0, 0)
                                       + b"\x00" * 20))
raw_case("nv_cap_flags_locked", "nv", cap(C.TPM_CAP_FLAG, u32(C.TPM_CAP_FLAG_PERMANENT)))
raw_case("nv_define_locked_no_auth", "nv", frame(ORD["TPM_NV_DefineSpace"], nv_public(0x00011001,
                                                  C.TPM_NV_PER_OWNERWRITE, 8) + b"\x00" * 20))


@case("nv")
def nv_define_owner_ownerwrite(s):
    nv_define(s, 0x00011002, C.TPM_NV_PER_OWNERWRITE | C.TPM_NV_PER_OWNERREAD, 32)


@case("nv")
def nv_define_owner_authwrite(s):
    nv_define(s, 0x00011003, C.TPM_NV_PER_AUTHWRITE | C.TPM_NV_PER_AUTHREAD, 16)


@case("nv")
def nv_define_writeall(s):
    nv_define(s, 0x00011004, C.TPM_NV_PER_OWNERWRITE | C.TPM_NV_PER_WRITEALL, 8)


@case("nv")
def nv_define_conflict_write(s):
    nv_define(s, 0x00011005, C.TPM_NV_PER_OWNERWRITE | C.TPM_NV_PER_AUTHWRITE, 8)


@case("nv")
def nv_define_conflict_read(s):
    nv_define(s, 0x00011006, C.TPM_NV_PER_OWNERREAD | C.TPM_NV_PER_AUTHREAD | C.TPM_NV_PER_OWNERWRITE, 8)


@case("nv")
def nv_define_no_write(s):
    nv_define(s, 0x00011007, C.TPM_NV_PER_OWNERREAD, 8)


@case("nv")
def nv_define_too_big(s):
    nv_define(s, 0x00011008, C.TPM_NV_PER_OWNERWRITE, 100000)


@case("nv")
def nv_define_d_bit(s):
    nv_define(s, 0x10011009, C.TPM_NV_PER_OWNERWRITE, 8)


@case("nv")
def nv_define_index_0(s):
    nv_define(s, 0, C.TPM_NV_PER_OWNERWRITE, 8)


@case("nv")
def nv_define_wrong_owner(s):
    nv_define(s, 0x0001100A, C.TPM_NV_PER_OWNERWRITE, 8, owner=WRONG)


@case("nv")
def nv_write_owner(s):
    quiet(s.tpm.call, "TPM_NV_WriteValue", params=nv_write(0x00011002, 4, b"owner data"), auth=[OWNER])


@case("nv")
def nv_read_owner(s):
    quiet(s.tpm.call, "TPM_NV_ReadValue", params=u32(0x00011002) + u32(0) + u32(14), auth=[OWNER])


raw_case("nv_write_ownerwrite_without_auth", "nv", frame(ORD["TPM_NV_WriteValue"], nv_write(0x00011002, 0, b"x")))
raw_case("nv_read_ownerread_without_auth", "nv", frame(ORD["TPM_NV_ReadValue"], u32(0x00011002) + u32(0) + u32(1)))


@case("nv")
def nv_write_overrun(s):
    quiet(s.tpm.call, "TPM_NV_WriteValue", params=nv_write(0x00011002, 30, b"abcd"), auth=[OWNER])


@case("nv")
def nv_write_partial_writeall(s):
    quiet(s.tpm.call, "TPM_NV_WriteValue", params=nv_write(0x00011004, 0, b"abc"), auth=[OWNER])


@case("nv")
def nv_write_full_writeall(s):
    quiet(s.tpm.call, "TPM_NV_WriteValue", params=nv_write(0x00011004, 0, b"abcdefgh"), auth=[OWNER])


@case("nv")
def nv_write_value_auth(s):
    quiet(s.tpm.call, "TPM_NV_WriteValueAuth", params=nv_write(0x00011003, 0, b"area"), auth=[NVA])


@case("nv")
def nv_write_value_auth_wrong(s):
    quiet(s.tpm.call, "TPM_NV_WriteValueAuth", params=nv_write(0x00011003, 0, b"area"), auth=[WRONG])


@case("nv")
def nv_read_value_auth(s):
    quiet(s.tpm.call, "TPM_NV_ReadValueAuth", params=u32(0x00011003) + u32(0) + u32(4), auth=[NVA])


@case("nv")
def nv_read_value_auth_on_owner_area(s):
    quiet(s.tpm.call, "TPM_NV_ReadValueAuth", params=u32(0x00011002) + u32(0) + u32(4), auth=[NVA])


@case("nv")
def nv_write_owner_on_auth_area(s):
    quiet(s.tpm.call, "TPM_NV_WriteValue", params=nv_write(0x00011003, 0, b"x"), auth=[OWNER])


@case("nv")
def nv_delete_area(s):
    nv_define(s, 0x00011004, C.TPM_NV_PER_OWNERWRITE, 0)


def _pcr10_info(locality: int, digest: bytes) -> bytes:
    return b"\x00\x03\x00\x04\x00" + bytes([locality]) + digest


@case("nv")
def nv_define_pcr_and_locality_bound(s):
    pcr10 = s.tpm.TPM_PCRRead(10)
    good = hashlib.sha1(b"\x00\x03\x00\x04\x00" + u32(20) + pcr10).digest()
    nv_define(s, 0x00011010, C.TPM_NV_PER_OWNERWRITE, 8, pcr_read=_pcr10_info(C.TPM_LOC_TWO, good),
              pcr_write=_pcr10_info(C.TPM_LOC_ZERO, good))
    nv_define(s, 0x00011011, C.TPM_NV_PER_OWNERWRITE, 8, pcr_write=_pcr10_info(C.TPM_LOC_ALL, b"\x00" * 20))


@case("nv")
def nv_write_pcr_bound_in_the_right_state(s):
    quiet(s.tpm.call, "TPM_NV_WriteValue", params=nv_write(0x00011010, 0, b"pcrbound"), auth=[OWNER])


raw_case("nv_read_from_the_wrong_locality", "nv", frame(ORD["TPM_NV_ReadValue"], u32(0x00011010) + u32(0) + u32(8)))


@case("nv")
def nv_write_with_the_wrong_pcr_value(s):
    quiet(s.tpm.call, "TPM_NV_WriteValue", params=nv_write(0x00011011, 0, b"x"), auth=[OWNER])


raw_case("nv_cap_list_after", "nv", cap(C.TPM_CAP_NV_LIST))
raw_case("nv_cap_index_auth_area", "nv", cap(C.TPM_CAP_NV_INDEX, u32(0x00011003)))

# ---- 10. monotonic counters (Part 3, 25) ----


@case("counter", key=lambda r: stripped(r)[:10] + stripped(r)[14:20] if not rc_of(r) else r)
def create_counter(s):
    r = quiet(s.tpm.TPM_CreateCounter, OWNER, CNT, b"ABCD")
    if r:
        s.ctx["cid"] = r[0]


@case("counter")
def create_counter_wrong_owner(s):
    quiet(s.tpm.TPM_CreateCounter, WRONG, CNT, b"ABCD")


@case("counter", key=lambda r: stripped(r)[:16] if not rc_of(r) else r)
def increment_counter(s):
    quiet(s.tpm.TPM_IncrementCounter, s.ctx.get("cid", 0), CNT)


@case("counter")
def increment_counter_wrong_auth(s):
    quiet(s.tpm.TPM_IncrementCounter, s.ctx.get("cid", 0), WRONG)


@case("counter", key=lambda r: r[:16])
def read_counter(s):
    quiet(s.tpm.TPM_ReadCounter, s.ctx.get("cid", 0))


raw_case("read_counter_unknown", "counter", frame(ORD["TPM_ReadCounter"], u32(0x7777)))


@case("counter", key=lambda r: stripped(r)[:10] if not rc_of(r) else r)
def create_second_counter(s):
    r = quiet(s.tpm.TPM_CreateCounter, OWNER, CNT, b"EFGH")
    if r:
        s.ctx["cid2"] = r[0]


@case("counter")
def increment_second_counter_same_boot(s):
    quiet(s.tpm.TPM_IncrementCounter, s.ctx.get("cid2", 0), CNT)


@case("counter")
def release_counter(s):
    quiet(s.tpm.TPM_ReleaseCounter, s.ctx.get("cid2", 0), CNT)


@case("counter")
def read_released_counter(s):
    quiet(s.tpm.TPM_ReadCounter, s.ctx.get("cid2", 0))


# ---- 11. ticks, quotes ----
raw_case("get_ticks", "ticks", frame(ORD["TPM_GetTicks"]), lambda r: r[:12] + r[20:22] if len(r) > 20 else r,
         "tick count and nonce are the TPM's; tag and rate compared")


@case("ticks", key=lambda r: stripped(r)[:12] if not rc_of(r) else r)
def tick_stamp_blob(s):
    quiet(s.tpm.call, "TPM_TickStampBlob", handles=[s.ctx.get("h_sign2048", 0)],
          params=b"\x05" * 20 + b"\x06" * 20, auth=[KEY])


@case("ticks")
def tick_stamp_blob_storage_key(s):
    quiet(s.tpm.call, "TPM_TickStampBlob", handles=[s.ctx.get("h_storage", 0)],
          params=b"\x05" * 20 + b"\x06" * 20, auth=[KEY])


def _quote_fields(rsp: bytes) -> bytes:
    """Everything before the signature (PCR values are deterministic)."""
    if rc_of(rsp):
        return rsp
    body = stripped(rsp)
    return body[:-(4 + 256)] + body[-(256 + 4):-256]


@case("quote", key=_quote_fields)
def quote_pcrs_0_10(s):
    quiet(s.tpm.TPM_Quote, s.ctx.get("h_sign2048"), b"\x07" * 20, [0, 10], KEY)


@case("quote", key=_quote_fields)
def quote2_pcr_10(s):
    quiet(s.tpm.call, "TPM_Quote2", handles=[s.ctx.get("h_sign2048", 0)],
          params=b"\x07" * 20 + b"\x00\x03\x00\x04\x00" + b"\x00", auth=[KEY])


@case("quote", key=lambda r: r[:10])
def quote2_with_version(s):
    quiet(s.tpm.call, "TPM_Quote2", handles=[s.ctx.get("h_sign2048", 0)],
          params=b"\x07" * 20 + b"\x00\x03\x00\x04\x00" + b"\x01", auth=[KEY])


@case("quote")
def quote2_bad_selection(s):
    quiet(s.tpm.call, "TPM_Quote2", handles=[s.ctx.get("h_sign2048", 0)],
          params=b"\x07" * 20 + b"\x00\x09" + b"\x00" * 9 + b"\x00", auth=[KEY])


# ---- 12. flush ----
@case("flush")
def flush_key(s):
    quiet(s.tpm.TPM_FlushSpecific, s.ctx.get("h_sign512", 0), C.TPM_RT_KEY)


@case("flush")
def flush_key_twice(s):
    quiet(s.tpm.TPM_FlushSpecific, s.ctx.get("h_sign512", 0), C.TPM_RT_KEY)


# ---- 13. transport sessions (Part 3, 24) ----
TRANS = secret("transport")


def transport_public(attrs: int) -> bytes:
    return struct.pack(">HIIH", C.TPM_TAG_TRANSPORT_PUBLIC, attrs, 0, 0)


def _establish_fields(rsp: bytes) -> bytes:
    """transHandle is the TPM's; compare locality, the ticks' tag and rate, and the sizes."""
    return rsp[:10] + rsp[14:20] + rsp[28:30] if not rc_of(rsp) else rsp


LOGX = C.TPM_TRANSPORT_LOG | C.TPM_TRANSPORT_EXCLUSIVE
raw_case("establish_logged_exclusive", "transport",
         frame(ORD["TPM_EstablishTransport"], u32(C.TPM_KH_TRANSPORT) + transport_public(LOGX) + u32(20) + TRANS),
         _establish_fields)
raw_case("establish_encrypt_without_key", "transport",
         frame(ORD["TPM_EstablishTransport"], u32(C.TPM_KH_TRANSPORT) + transport_public(C.TPM_TRANSPORT_ENCRYPT)
               + u32(20) + TRANS))
raw_case("establish_secret_19_bytes", "transport",
         frame(ORD["TPM_EstablishTransport"], u32(C.TPM_KH_TRANSPORT) + transport_public(LOGX) + u32(19) + TRANS[:19]))
raw_case("establish_with_unknown_key", "transport",
         frame(ORD["TPM_EstablishTransport"], u32(0x01ABCDEF) + transport_public(LOGX) + u32(20) + TRANS))


def establish_with_key(s, alg: int, scheme: int) -> None:
    """An encrypted session: the secret travels as TPM_TRANSPORT_AUTH under the storage key."""
    pub = quiet(s.tpm.TPM_GetPubKey, s.ctx.get("h_storage", 0), KEY)
    if pub is not None:
        from trustlab.devices.tpm12.keys import pubkey_modulus

        s.ctx["storage_modulus"] = pubkey_modulus(pub)[1]
    quiet(s.tpm.TPM_EstablishTransport, TRANS, exclusive=False, logged=False, alg=alg, scheme=scheme,
          key=(s.ctx.get("h_storage", 0), s.ctx.get("storage_modulus", b"\x01" * 256), KEY))


for _name, _alg, _scheme in [("mgf1", C.TPM_ALG_MGF1, C.TPM_ES_NONE), ("aes_ctr", C.TPM_ALG_AES128, C.TPM_ES_SYM_CTR),
                             ("aes_ofb", C.TPM_ALG_AES128, C.TPM_ES_SYM_OFB),
                             ("mgf1_with_scheme", C.TPM_ALG_MGF1, C.TPM_ES_SYM_CTR),
                             ("aes_ecb", C.TPM_ALG_AES128, C.TPM_ES_NONE), ("xor", C.TPM_ALG_XOR, C.TPM_ES_NONE)]:
    CASES.append(Case(f"establish_encrypted_{_name}", "transport",
                      (lambda a, b: lambda s: establish_with_key(s, a, b))(_alg, _scheme), _establish_fields))
for _alg in (C.TPM_ALG_MGF1, C.TPM_ALG_AES128, C.TPM_ALG_AES256, C.TPM_ALG_RSA):
    raw_case(f"cap_trans_alg_{_alg:#x}", "transport", cap(C.TPM_CAP_TRANS_ALG, u32(_alg)))


def _execute_fields(rsp: bytes) -> bytes:
    """The tick count is the TPM's: compare locality and the wrapped response's header."""
    return rsp[:10] + stripped(rsp)[18:22] + stripped(rsp)[22:32] if not rc_of(rsp) else rsp


@case("transport", key=_execute_fields)
def execute_transport_read_counter(s):
    t = s.tpm.TPM_EstablishTransport(TRANS)
    with s.tpm.through(t):
        quiet(s.tpm.TPM_ReadCounter, s.ctx.get("cid", 0))


@case("transport", key=_execute_fields)
def execute_transport_failing_inner_command(s):
    t = s.tpm.TPM_EstablishTransport(TRANS)
    with s.tpm.through(t):
        quiet(s.tpm.TPM_ReadCounter, 0x7777)


@case("transport", key=_execute_fields)
def execute_transport_wrapped_oiap(s):
    t = s.tpm.TPM_EstablishTransport(TRANS)
    with s.tpm.through(t):
        quiet(s.tpm.TPM_OIAP, KEY)


@case("transport")
def execute_transport_wrong_secret(s):
    t = s.tpm.TPM_EstablishTransport(TRANS)
    t.key = WRONG
    with s.tpm.through(t):
        quiet(s.tpm.TPM_ReadCounter, s.ctx.get("cid", 0))


@case("transport")
def execute_transport_wrapping_establish(s):
    t = s.tpm.TPM_EstablishTransport(TRANS)
    params = transport_public(0) + u32(20) + TRANS
    inner = frame(ORD["TPM_EstablishTransport"], u32(C.TPM_KH_TRANSPORT) + params)
    quiet(s.tpm._execute_transport, t, inner, hashlib.sha1(u32(ORD["TPM_EstablishTransport"]) + params).digest(),
          1, 0, [])


@case("transport")
def execute_transport_after_exclusivity_lost(s):
    t = s.tpm.TPM_EstablishTransport(TRANS)
    s.raw(frame(ORD["TPM_PCRRead"], u32(0)))  # outside the exclusive session: it ends
    with s.tpm.through(t):
        quiet(s.tpm.TPM_ReadCounter, s.ctx.get("cid", 0))


def release(s, handle_name: str, logged: bool = True) -> None:
    key_s = s.tpm.TPM_OIAP(KEY)
    t = s.tpm.TPM_EstablishTransport(TRANS, exclusive=True, logged=logged)
    with s.tpm.through(t):
        quiet(s.tpm.TPM_ReadCounter, s.ctx.get("cid", 0))
    quiet(s.tpm.TPM_ReleaseTransportSigned, s.ctx.get(handle_name, 0), b"\x09" * 20, t, key_s)


def _release_fields(rsp: bytes) -> bytes:
    """locality, the ticks' tag and rate, the signature's size (ticks, nonce, signature are the TPM's)."""
    return rsp[:16] + rsp[24:26] + rsp[46:50] if not rc_of(rsp) else rsp


@case("transport", key=_release_fields)
def release_transport_signed(s):
    release(s, "h_sign2048")


@case("transport")
def release_transport_not_logged(s):
    release(s, "h_sign2048", logged=False)


@case("transport")
def release_transport_with_storage_key(s):
    release(s, "h_storage")


@case("transport", key=_release_fields)
def release_transport_with_1024_bit_key(s):
    release(s, "h_sign1024")


# ---- 13b. auditing (Part 3, 8) and certified migratable keys (Part 3, 11) ----
raw_case("get_audit_digest", "audit", frame(ORD["TPM_GetAuditDigest"], u32(0)), header_only,
         "which ordinals are audited by default differs (see README)")


@case("audit")
def set_ordinal_audit_status_get_random(s):
    quiet(s.tpm.call, "TPM_SetOrdinalAuditStatus", params=u32(ORD["TPM_GetRandom"]) + b"\x01", auth=[OWNER])


@case("audit")
def set_ordinal_audit_status_never_auditable(s):
    quiet(s.tpm.call, "TPM_SetOrdinalAuditStatus", params=u32(ORD["TPM_GetAuditDigest"]) + b"\x01", auth=[OWNER])


@case("audit", key=header_only)
def get_audit_digest_signed(s):
    quiet(s.tpm.call, "TPM_GetAuditDigestSigned", handles=[s.ctx.get("h_sign2048", 0)],
          params=b"\x00" + b"\x0a" * 20, auth=[KEY])


@case("audit")
def get_audit_digest_signed_close_with_signing_key(s):
    quiet(s.tpm.call, "TPM_GetAuditDigestSigned", handles=[s.ctx.get("h_sign2048", 0)],
          params=b"\x01" + b"\x0a" * 20, auth=[KEY])


@case("audit")
def set_ordinal_audit_status_off(s):
    quiet(s.tpm.call, "TPM_SetOrdinalAuditStatus", params=u32(ORD["TPM_GetRandom"]) + b"\x00", auth=[OWNER])


MSA = struct.pack(">I", 1) + hashlib.sha1(b"an MA key").digest()


@case("cmk", key=header_only)
def cmk_approve_ma(s):
    r = quiet(s.tpm.TPM_CMK_ApproveMA, OWNER, hashlib.sha1(MSA).digest())
    if r:
        s.ctx["approval"] = r


def _cmk_template() -> Key12:
    t = key_template(C.TPM_KEY_SIGNING)
    return Key12(t.usage, C.TPM_KEY_FLAG_MIGRATABLE | C.TPM_KEY_FLAG_MIGRATE_AUTHORITY, t.auth_usage, t.parms, b"")


@case("cmk", key=_blob_fields)
def cmk_create_key(s):
    quiet(s.tpm.TPM_CMK_CreateKey, C.TPM_KH_SRK, SRK, _cmk_template(), KEY, s.ctx.get("approval", bytes(20)),
          hashlib.sha1(MSA).digest())


@case("cmk")
def cmk_create_key_unapproved_list(s):
    quiet(s.tpm.TPM_CMK_CreateKey, C.TPM_KH_SRK, SRK, _cmk_template(), KEY, bytes(20), hashlib.sha1(MSA).digest())


@case("cmk")
def cmk_create_key_not_migratable(s):
    quiet(s.tpm.TPM_CMK_CreateKey, C.TPM_KH_SRK, SRK, key_template(C.TPM_KEY_SIGNING), KEY,
          s.ctx.get("approval", bytes(20)), hashlib.sha1(MSA).digest())


@case("cmk")
def cmk_create_ticket_bad_signature(s):
    ma_pub = (KeyParms(C.TPM_ALG_RSA, C.TPM_ES_NONE, C.TPM_SS_RSASSAPKCS1v15_SHA1).marshal()
              + u32(256) + b"\xc5" * 256)
    quiet(s.tpm.TPM_CMK_CreateTicket, OWNER, ma_pub, b"\x01" * 20, b"\x02" * 256)


@case("cmk")
def cmk_create_ticket_encryption_key(s):
    ma_pub = OAEP_PARMS.marshal() + u32(256) + b"\xc5" * 256
    quiet(s.tpm.TPM_CMK_CreateTicket, OWNER, ma_pub, b"\x01" * 20, b"\x02" * 256)


# ---- 13. dictionary-attack lockout (Part 1, 20) ----
for _i in range(6):
    CASES.append(Case(f"da_wrong_owner_auth_{_i + 1}", "lockout",
                      lambda s: quiet(s.tpm.call, "TPM_OwnerReadPubek", auth=[WRONG])))
CASES.append(Case("da_locked_right_auth", "lockout", lambda s: quiet(s.tpm.call, "TPM_OwnerReadPubek", auth=[OWNER])))
raw_case("da_locked_unauthorized_command_runs", "lockout", frame(ORD["TPM_PCRRead"], u32(0)))
raw_case("da_cap_logic_locked", "lockout", cap(C.TPM_CAP_DA_LOGIC, b"\x00\x02"), header_only,
         "the time left is the TPM's own")


@case("lockout", key=_pubkey_fields)
def da_after_lockout_expires(s):
    s.target.wait(1.5)
    quiet(s.tpm.call, "TPM_OwnerReadPubek", auth=[OWNER])


@case("lockout")
def da_reset_lock_value(s):
    quiet(s.tpm.call, "TPM_ResetLockValue", auth=[OWNER])


# ---- 14. TPM_SaveState and the power cycle ----
raw_case("extend_5_before_save", "savestate", frame(ORD["TPM_Extend"], u32(5) + b"\x55" * 20))
raw_case("save_state", "savestate", frame(ORD["TPM_SaveState"]))


@case("savestate")
def startup_state_restores(s):
    s.target.init()
    s.raw(frame(ORD["TPM_Startup"], b"\x00\x02"))


raw_case("pcr_5_preserved", "savestate", frame(ORD["TPM_PCRRead"], u32(5)))
raw_case("pcr_17_reset_by_startup_state", "savestate", frame(ORD["TPM_PCRRead"], u32(17)))


@case("savestate", key=lambda r: r[:14] if not rc_of(r) else r)
def key_survives_startup_state(s):
    sign(s, "h_sign2048", b"\x12" * 20)


@case("savestate")
def startup_clear_after_power_cycle(s):
    s.target.init()
    s.raw(frame(ORD["TPM_Startup"], b"\x00\x01"))


raw_case("pcr_5_cleared", "savestate", frame(ORD["TPM_PCRRead"], u32(5)))


@case("savestate")
def key_gone_after_startup_clear(s):
    sign(s, "h_sign2048", b"\x12" * 20)


@case("savestate")
def startup_state_without_saved_state(s):
    s.target.init()
    s.raw(frame(ORD["TPM_Startup"], b"\x00\x02"))


raw_case("failure_mode_pcr_read", "savestate", frame(ORD["TPM_PCRRead"], u32(0)))
raw_case("failure_mode_cap_version", "savestate", cap(C.TPM_CAP_VERSION))
raw_case("failure_mode_get_test_result", "savestate", frame(ORD["TPM_GetTestResult"]), header_only,
         "outData is manufacturer-specific (Part 3, 4.3)")


@case("savestate")
def recovered_by_power_cycle(s):
    s.target.init()
    s.raw(frame(ORD["TPM_Startup"], b"\x00\x01"))


raw_case("pcr_read_after_recovery", "savestate", frame(ORD["TPM_PCRRead"], u32(0)))

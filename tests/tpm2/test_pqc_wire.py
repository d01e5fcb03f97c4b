"""Wire formats of the TPM 2.0 Library 1.85 PQC structures and the extension point (no swtpm).

Reference bytes come from the 1.85 RC4 Part 2 tables as third-party
implementations marshal them (wolfTPM's MLDSA-65 / MLKEM-768 templates:
TPMS_MLDSA_PARMS = parameterSet, allowExternalMu; TPMS_MLKEM_PARMS =
symmetric FIRST, then parameterSet), written out by hand here.
"""

from __future__ import annotations

import struct

import pytest
from cryptography.hazmat.primitives.asymmetric import mldsa

from trustlab.devices.tpm2 import extensions as ext
from trustlab.devices.tpm2.pqc import keys
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.client import external_mu, frame, password, template

from .conftest import make_profile
from .pqc_mutation import assert_mutants_never_fault

# type nameAlg attributes authPolicy | parameterSet allowExternalMu | unique
MLDSA65_TEMPLATE = "00a1 000b 00040072 0000 0002 00 0000"
# type nameAlg attributes authPolicy | symmetric(NULL) parameterSet | unique
MLKEM768_TEMPLATE = "00a0 000b 00020072 0000 0010 0002 0000"
# HashML-DSA-87 with SHA-512 pre-hash: parameterSet hashAlg
HASH_MLDSA87_TEMPLATE = "00a2 000b 00040072 0000 0003 000d 0000"


def hx(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", ""))


def test_templates_match_the_1_85_tables_byte_for_byte():
    assert template("ML-DSA-65", allow_external_mu=False).marshal() == hx(MLDSA65_TEMPLATE)
    assert template("ML-KEM-768").marshal() == hx(MLKEM768_TEMPLATE)
    assert template("ML-DSA-87", hash_alg=S.TPM_ALG_SHA512).marshal() == hx(HASH_MLDSA87_TEMPLATE)
    assert template("ML-DSA-44").marshal()[10:13] == hx("0001 01")  # allowExternalMu = YES


@pytest.mark.parametrize("text", [MLDSA65_TEMPLATE, MLKEM768_TEMPLATE, HASH_MLDSA87_TEMPLATE])
def test_parse_marshal_round_trip(text):
    r = ext.Reader(hx(text))
    pub = S.parse_public(r)
    r.end()
    assert pub.marshal() == hx(text)


def test_name_is_namealg_and_digest_of_the_public_area():
    pub = template("ML-KEM-1024").with_unique(b"\x01" * 1568)
    import hashlib

    assert pub.name() == b"\x00\x0b" + hashlib.sha256(pub.marshal()).digest()


def test_signature_and_ticket_layouts():
    pub = template("ML-DSA-65")
    assert S.signature(pub, b"\xaa" * 3) == hx("00a1 0003 aaaaaa")  # TPMU_SIGNATURE.mldsa is a TPM2B
    hpub = template("ML-DSA-65", hash_alg=S.TPM_ALG_SHA256)
    assert S.signature(hpub, b"\xaa") == hx("00a2 000b 0001 aa")  # {hash, TPM2B}
    # TPMT_TK_VERIFIED 1.85: tag, hierarchy, [metadata for DIGEST_VERIFIED], hmac
    assert S.null_verified_ticket(S.TPM_ST_DIGEST_VERIFIED, S.TPM_ALG_SHA256) == hx("8027 40000007 000b 0000")
    assert S.null_verified_ticket(S.TPM_ST_MESSAGE_VERIFIED) == hx("8026 40000007 0000")


def test_external_mu_is_fips_204_mu():
    """mu from the client helper signs into a signature the standard verify() accepts."""
    key = mldsa.MLDSA65PrivateKey.from_seed_bytes(b"\x07" * 32)
    pk = key.public_key().public_bytes_raw()
    sig = key.sign_mu(external_mu(pk, b"message", b"ctx"))
    key.public_key().verify(sig, b"message", b"ctx")


def test_hash_mldsa_mu_matches_fips_204_algorithm_4():
    """HashML-DSA mu = H(tr || 1 || |ctx| || ctx || OID || PH(M)): sign_mu over it verifies as verify_mu."""
    key = mldsa.MLDSA44PrivateKey.from_seed_bytes(b"\x01" * 32)
    pk = key.public_key().public_bytes_raw()
    import hashlib

    ph = hashlib.sha256(b"msg").digest()
    mu = keys.prehash_mu(keys.tr(pk), b"", S.TPM_ALG_SHA256, ph)
    expected = hashlib.shake_256(hashlib.shake_256(pk).digest(64) + b"\x01\x00"
                                 + hx("0609608648016503040201") + ph).digest(64)
    assert mu == expected


def test_mldsa_template_attribute_rules():
    bad = S.Public(S.TPM_ALG_MLDSA, S.TPM_ALG_SHA256, S.DECRYPT | S.SENSITIVE_DATA_ORIGIN, b"", 2)
    with pytest.raises(ext.TpmError) as e:
        S.check_template(bad, 2)
    assert e.value.rc == ext.at_param(ext.TPM_RC_ATTRIBUTES, 2) == 0x2C2


# ---- the extension point itself ------------------------------------------------


class Backend:
    def __init__(self):
        self.seen = []

    def __call__(self, command: bytes) -> bytes:
        self.seen.append(command)
        return struct.pack(">HII", 0x8001, 14, 0) + b"\x00\x00\x00\x2a"


def ctx(profile=None):
    profile = profile or make_profile(ohc=1.0, ohir=0.01, ohor=0.02)
    return ext.Context("conn", profile, Backend(), ext.ExtensionState())


def test_unregistered_commands_are_not_claimed():
    assert ext.dispatch(struct.pack(">HII", 0x8001, 12, 0x17B) + b"\x00\x08", ctx()) is None  # GetRandom


def test_readme_example_registers_and_prices_a_new_command():
    code = 0x20000001

    @ext.tpm_command(code, "TPM2_Echo", handles=0)
    def echo(cmd, c):
        data = cmd.params.param(1).tpm2b(16)
        cmd.params.end()
        return ext.Reply(params=S.tpm2b(data[::-1]))

    try:
        c = ctx()
        out = ext.dispatch(frame(code, [], S.tpm2b(b"abc")), c)
        assert out.rc == 0 and out.response.endswith(b"\x00\x03cba")
        assert out.terms == {"ohc": 1.0, "ohir": 15.0, "ohor": 15.0}  # the wire formula, as for any command
        too_long = ext.dispatch(frame(code, [], S.tpm2b(b"x" * 17)), c)
        assert too_long.rc == ext.at_param(ext.TPM_RC_SIZE, 1)
        short = ext.dispatch(frame(code, [], b"\x00\x05ab"), c)
        assert short.rc == ext.at_param(ext.TPM_RC_INSUFFICIENT, 1)
        trailing = ext.dispatch(frame(code, [], S.tpm2b(b"a") + b"\x00"), c)
        assert trailing.rc == ext.TPM_RC_SIZE
    finally:
        ext._REGISTRY.pop(code)


def test_a_handler_bug_is_tpm_rc_failure_not_a_crash():
    code = 0x20000002

    @ext.tpm_command(code, "TPM2_Broken", handles=0)
    def broken(cmd, c):
        raise RuntimeError("bug")

    try:
        out = ext.dispatch(frame(code, [], b""), ctx())
        assert out.rc == 0x101 and len(out.response) == 10
        assert out.fault == "TPM2_Broken handler raised RuntimeError: bug"
    finally:
        ext._REGISTRY.pop(code)


def test_password_sessions_are_acknowledged_and_checked():
    code = 0x20000003

    @ext.tpm_command(code, "TPM2_Guarded", handles=1)
    def guarded(cmd, c):
        cmd.require_password(0, b"secret")
        return ext.Reply(params=b"\x01")

    try:
        ok = ext.dispatch(frame(code, [0x80FF0000], b"", [password(b"secret")]), ctx())
        # tag SESSIONS, parameterSize, parameter, then nonce(0) attributes hmac(0)
        assert ok.response == hx("8002 00000014 00000000 00000001 01 0000 00 0000")
        bad = ext.dispatch(frame(code, [0x80FF0000], b"", [password(b"wrong")]), ctx())
        assert bad.rc == 0x98E  # TPM_RC_AUTH_FAIL on session 1
        hmac_session = struct.pack(">IH", 0x02000000, 0) + b"\x01" + S.tpm2b(b"\x00" * 32)
        assert ext.dispatch(frame(code, [0x80FF0000], b"", [hmac_session]), ctx()).rc == ext.TPM_RC_AUTH_TYPE
        assert ext.dispatch(frame(code, [0x80FF0000], b""), ctx()).rc == ext.TPM_RC_AUTH_MISSING
    finally:
        ext._REGISTRY.pop(code)


def test_commands_with_non_pqc_templates_go_to_the_backend():
    ecc = (S.u16(0x0023) + S.u16(0x000B) + S.u32(0x00040072) + S.tpm2b(b"") + S.u16(0x0010) + S.u16(0x0018)
           + S.u16(0x000B) + S.u16(0x0003) + S.u16(0x0010) + S.tpm2b(b"") + S.tpm2b(b""))
    cmd = frame(0x131, [S.TPM_RH_OWNER], S.sensitive_create() + S.tpm2b(ecc) + S.tpm2b(b"") + S.u32(0),
                [password()])
    assert ext.dispatch(cmd, ctx()) is None


def test_pqc_commands_on_unknown_handles_answer_tpm_error_codes():
    c = ctx()
    digest_cmd = frame(0x1A6, [0x80FF0001], S.tpm2b(b"") + S.tpm2b(b"\x00" * 64) + S.null_hashcheck_ticket(),
                       [password()])
    assert ext.dispatch(digest_cmd, c).rc == 0x18B  # TPM_RC_HANDLE, handle 1
    pcr = frame(0x1A7, [0x00000000], b"")
    assert ext.dispatch(pcr, c).rc == 0x18B
    swtpm_key = frame(0x1A7, [0x80000001], b"")
    assert ext.dispatch(swtpm_key, c).rc == 0x19C  # TPM_RC_KEY: a key, but not an ML-KEM one


def test_the_readme_example_runs_as_written():
    """devices/tpm2/README.md's ten-line example, executed: it registers, answers and prices."""
    from pathlib import Path

    import trustlab.devices.tpm2 as pkg

    text = (Path(pkg.__file__).parent / "README.md").read_text(encoding="utf-8")
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) <= 11
    exec(compile(code, "README.md", "exec"), {})
    try:
        c = ctx()
        out = ext.dispatch(frame(0x20000001, [], S.tpm2b(b"abc")), c)
        assert out.rc == 0 and out.command == "TPM2_Reverse"
        random_bytes = Backend()(b"")[12:20]  # what the fake swtpm answered to GetRandom
        assert out.response[10:] == S.tpm2b(b"cba" + random_bytes)
        assert c.backend_transact.seen == [bytes.fromhex("80010000000c0000017b0008")]
        assert out.charges_ms == {"ohc": 1.0, "reverse_ms": 2.5} and out.terms == {}
    finally:
        ext._REGISTRY.pop(0x20000001)


def test_claimed_commands_refuse_non_password_sessions_and_leave_malformed_backend_commands_alone():
    audit = struct.pack(">IH", 0x02000001, 0) + b"\x00" + S.tpm2b(b"")
    assert ext.dispatch(frame(0x1A7, [0x80FF0000], b"", [audit]), ctx()).rc == ext.TPM_RC_AUTH_TYPE
    # a CreatePrimary whose authorization size lies: not ours to judge, swtpm answers it
    body = S.u32(S.TPM_RH_OWNER) + S.u32(999)
    broken = struct.pack(">HII", 0x8002, 10 + len(body), 0x131) + body
    assert ext.dispatch(broken, ctx()) is None
    # and one for the FlushContext of a handle of swtpm's
    assert ext.dispatch(frame(0x165, [], S.u32(0x80000001)), ctx()) is None


def test_mutated_pqc_frames_get_tpm_error_codes_never_a_handler_crash():
    """Byte flips, truncations and extensions of valid frames (against a backend that answers nonsense):
    each answer is a well-formed TPM response, and no handler ever raises (its fault would be TPM_RC_FAILURE)."""
    import random

    from trustlab.devices.tpm2.pqc import state as pqc_state

    rng = random.Random(17)
    c = ctx()
    state = pqc_state.state_of(c)
    key = mldsa.MLDSA44PrivateKey.from_seed_bytes(b"\x02" * 32)
    pub = template("ML-DSA-44").with_unique(key.public_key().public_bytes_raw())
    ps = keys.MLDSA_SETS[1]
    state.objects[0x80FF0000] = pqc_state.PqcObject(0x80FF0000, pub, ps, key, b"", pub.name(), pub.name())
    seeds = [
        frame(0x1A6, [0x80FF0000], S.tpm2b(b"") + S.tpm2b(b"\x01" * 64) + S.null_hashcheck_ticket(), [password()]),
        frame(0x1A5, [0x80FF0000], S.tpm2b(b"") + S.tpm2b(b"\x01" * 64) + S.signature(pub, b"\x00" * 2420)),
        frame(0x1AA, [0x80FF0000], S.tpm2b(b"") + S.tpm2b(b"ctx")),
        frame(0x1A9, [0x80FF0000], S.tpm2b(b"") + S.tpm2b(b"") + S.tpm2b(b"")),
        frame(0x1A8, [0x80FF0000], S.tpm2b(b"\x00" * 1088), [password()]),
        frame(0x1A7, [0x80FF0000], b""),
        frame(0x165, [], S.u32(0x80FF0001)),
        frame(0x173, [0x80FF0000], b""),
        frame(0x162, [0x80FF0000], b""),
        frame(0x161, [], struct.pack(">QII", 1, 0x80FF0000, 0x40000001) + S.tpm2b(b"TLPQ\x01" + b"\x00" * 40)),
        frame(0x131, [S.TPM_RH_OWNER], S.sensitive_create() + S.tpm2b(template("ML-DSA-44").marshal())
              + S.tpm2b(b"") + S.u32(0), [password()]),
        frame(0x153, [0x80000000], S.sensitive_create() + S.tpm2b(template("ML-KEM-768").marshal())
              + S.tpm2b(b"") + S.u32(0), [password()]),
        frame(0x158, [0x80FF0000], S.tpm2b(b"n") + S.u16(S.TPM_ALG_NULL) + S.u32(1) + S.u16(0x000B)
              + b"\x03\x07\x00\x00", [password()]),
    ]
    assert_mutants_never_fault(c, seeds, rng, rounds=1200, edits=(1, 4))

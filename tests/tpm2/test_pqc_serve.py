"""The 1.85 PQC commands end to end: client -> timing proxy (serve) -> handlers + swtpm.

Signatures are checked by cryptography's public-key ``verify`` on the public
key the TPM returned - an independent verifier - and ML-KEM shared secrets by
encapsulating with cryptography on the client side and decapsulating in the TPM.
"""

from __future__ import annotations

import hashlib
import struct
import time

import pytest
from cryptography.hazmat.primitives.asymmetric import mlkem

from trustlab.serving.tpm2.backend import swtpm_backend
from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.client import (
    ALGORITHMS,
    PqcClient,
    TpmResponseError,
    external_mu,
    frame,
    password,
    pcr_selection,
    public_key,
)
from trustlab.serving.proxy import TimingProxy, timed_swtpm
from trustlab.serving.swtpm import Swtpm
from trustlab.timing import registry

from .conftest import needs_swtpm

PROFILE = "sealsq-qvault-pqc-tpm-wolftpm"
"""The one 1.85 chip in silicon: its 8192-byte buffer carries every parameter set (serving/tpm2/limits.py)."""
TODAY = "st-st33ktpm2xspi-wolftpm"
"""A chip of today: a 2048-byte TPM_PT_MAX_COMMAND_SIZE (chips.toml)."""
pytestmark = [pytest.mark.swtpm, needs_swtpm]


@pytest.fixture(scope="module")
def served():
    records = []
    with timed_swtpm(PROFILE, virtual=True, trace=records.append) as proxy:
        proxy.trace_records = records
        yield proxy


@pytest.fixture
def tpm(served):
    with PqcClient.connect(served.tcti) as client:
        yield client


def test_mldsa65_primary_signs_a_digest_that_verifies_independently(served, tpm):
    key = tpm.create_primary("ML-DSA-65")
    assert key.handle >> 16 == 0x80FF and len(key.public.unique) == 1952
    message = b"attestation: PCR digest 1234"
    sig = tpm.sign_digest(key.handle, external_mu(key.public.unique, message))
    assert len(sig) == 3309
    public_key(key.public).verify(sig, message)  # cryptography (OpenSSL), not the handler
    record = served.trace_records[-1]
    assert record.command == "TPM2_SignDigest" and record.variant == "mldsa65" and record.rc == 0
    assert record.modelled_ms > 10 * record.breakdown.get("ohc", 0.0) > 0  # priced by the PQC model
    assert {"pqc_keccak", "pqc_arith", "pqc_bus"} <= set(record.breakdown)  # the PQC cost model's components
    tpm.flush(key.handle)


def test_primary_keys_are_deterministic_per_template(tpm):
    a = tpm.create_primary("ML-DSA-44")
    b = tpm.create_primary("ML-DSA-44")
    c = tpm.create_primary("ML-DSA-44", auth=b"x")  # userAuth is not part of the derivation
    assert a.public.unique == b.public.unique == c.public.unique and a.handle != b.handle
    d = tpm.create_primary("ML-DSA-44", allow_external_mu=False)
    assert d.public.unique != a.public.unique
    for k in (a, b, c, d):
        tpm.flush(k.handle)


def _max_sizes(client: PqcClient) -> tuple[int, int]:
    """TPM2_GetCapability(TPM_PT_MAX_COMMAND_SIZE, 2 properties) through serve."""
    rsp = client.call("TPM2_GetCapability", frame(0x17A, [], S.u32(6) + S.u32(0x11E) + S.u32(2)))
    assert rsp[15:19] == S.u32(2)
    (c_prop, c_val, r_prop, r_val) = (int.from_bytes(rsp[i:i + 4], "big") for i in (19, 23, 27, 31))
    assert (c_prop, r_prop) == (0x11E, 0x11F)
    return c_val, r_val


def test_mldsa87_verify_fits_the_buffer_the_tpm_reports(served, tpm):
    """Verifying ML-DSA-87 in the TPM takes a 4.7 KB command: the 1.85 chip's 8192-byte buffer carries it,
    and TPM_PT_MAX_COMMAND_SIZE / MAX_RESPONSE_SIZE say so."""
    assert _max_sizes(tpm) == (8192, 8192)
    key = tpm.create_primary("ML-DSA-87")
    mu = external_mu(key.public.unique, b"m")
    sig = tpm.sign_digest(key.handle, mu)
    public_key(key.public).verify(sig, b"m")
    assert tpm.verify_digest_signature(key, mu, sig)[:2] == b"\x80\x27"  # TPM_ST_DIGEST_VERIFIED
    tpm.flush(key.handle)


def test_a_4096_byte_tpm_refuses_mldsa87_verify_and_serves_on():
    """On a chip that reports 4096 (the OP-TEE fTPM: the reference code's buffer) the same command is answered
    TPM_RC_COMMAND_SIZE, on the same connection, which goes on."""
    with timed_swtpm("nvidia-jetson-orin-op-tee-ftpm-wolftpm", virtual=True) as proxy, \
            PqcClient.connect(proxy.tcti) as tpm:
        assert _max_sizes(tpm) == (4096, 4096)
        key = tpm.create_primary("ML-DSA-87")
        mu = external_mu(key.public.unique, b"m")
        with pytest.raises(TpmResponseError) as e:
            tpm.sign_digest(key.handle, mu)  # the 4627-byte signature does not fit a 4096-byte response
        assert e.value.rc == 0x095  # TPM_RC_SIZE, as wolfTPM's fwTPM answers a response over its buffer
        small = tpm.create_primary("ML-DSA-44")
        sig = tpm.sign_digest(small.handle, external_mu(small.public.unique, b"m"))
        with pytest.raises(TpmResponseError) as e:
            tpm.verify_digest_signature(key, mu, bytes(4627))  # an ML-DSA-87-sized signature: a 4.7 KB command
        assert e.value.rc == 0x142  # TPM_RC_COMMAND_SIZE (libtpms' answer to a command over its buffer)
        assert tpm.verify_digest_signature(small, external_mu(small.public.unique, b"m"), sig)[:2] == b"\x80\x27"
        for k in (key, small):
            tpm.flush(k.handle)


def test_a_2048_byte_chip_reports_and_enforces_its_buffer():
    with timed_swtpm(TODAY, virtual=True) as proxy, PqcClient.connect(proxy.tcti) as tpm:
        assert _max_sizes(tpm) == (2048, 2048)
        key = tpm.create_primary("ML-DSA-44")  # its 1312-byte public key fits
        with pytest.raises(TpmResponseError) as e:
            tpm.sign_digest(key.handle, external_mu(key.public.unique, b"m"))  # a 2420-byte signature does not
        assert e.value.rc == 0x095
        assert "TPM_PT_MAX_RESPONSE_SIZE of 2048 bytes" in str(e.value)
        with pytest.raises(TpmResponseError) as e:  # the README's and --help's first step, on this chip
            tpm.create_primary("ML-DSA-65")  # a 1952-byte public key: a 2095-byte answer
        said = str(e.value)
        assert e.value.rc == 0x095 and "\n" not in said, said
        assert "at least 2095 bytes" in said and "TPM_PT_MAX_RESPONSE_SIZE of 2048 bytes" in said, said
        assert "trustlab serve --profile sealsq-qvault-pqc-tpm-wolftpm (its chip's: 8192 bytes)" in said, said
        kem = tpm.create_primary("ML-KEM-768")
        secret, ciphertext = tpm.encapsulate(kem.handle)  # 1088 bytes: fits
        assert tpm.decapsulate(kem.handle, ciphertext) == secret
        for k in (key, kem):
            tpm.flush(k.handle)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_least_answer_size_a_size_error_gives_is_never_more_than_the_tpm_sends(tpm, algorithm):
    """TPM_RC_SIZE's 'at least N bytes' is a bound: a primary key's whole answer (exactly it, on swtpm), a
    created key's at most."""
    from trustlab.devices.tpm2.pqc.client import _answer_least, template

    pub = template(algorithm)
    params = S.sensitive_create() + S.tpm2b(pub.marshal()) + S.tpm2b(b"") + S.u32(0)
    answer = tpm.call("TPM2_CreatePrimary", frame(0x131, [S.TPM_RH_OWNER], params, [password()]))
    tpm.flush(struct.unpack_from(">I", answer, 10)[0])
    assert _answer_least(pub, 1) == len(answer)
    parent = tpm.create_storage_primary()
    answer = tpm.call("TPM2_Create", frame(0x153, [parent], params, [password()]))
    tpm.flush(parent)
    assert _answer_least(pub, 0) <= len(answer)


def test_read_public_and_the_tpm_verify_commands(tpm):
    key = tpm.create_primary("ML-DSA-65")
    pub, name, _qn = tpm.read_public(key.handle)
    assert pub == key.public and name == key.name == pub.name()
    mu = external_mu(pub.unique, b"m")
    sig = tpm.sign_digest(key.handle, mu)
    ticket = tpm.verify_digest_signature(key, mu, sig)
    assert ticket[:2] == b"\x80\x27"  # TPM_ST_DIGEST_VERIFIED
    with pytest.raises(TpmResponseError) as e:
        tpm.verify_digest_signature(key, external_mu(pub.unique, b"other"), sig)
    assert e.value.rc == 0x3DB  # TPM_RC_SIGNATURE, parameter 3
    tpm.flush(key.handle)


def test_sign_and_verify_sequences_over_long_messages(tpm):
    key = tpm.create_primary("ML-DSA-65", allow_external_mu=False)
    message = bytes(range(256)) * 20  # five SequenceUpdate chunks
    sig = tpm.sign_sequence(key.handle, message, context=b"trustlab")
    public_key(key.public).verify(sig, message, b"trustlab")
    assert tpm.verify_sequence(key, message, sig, context=b"trustlab")[:2] == b"\x80\x26"
    with pytest.raises(TpmResponseError) as e:  # pure ML-DSA without allowExternalMu refuses SignDigest
        tpm.sign_digest(key.handle, b"\x00" * 64)
    assert e.value.rc == 0x182  # TPM_RC_ATTRIBUTES, handle 1, as wolfTPM (EXT_MU: a TPM without external mu)
    tpm.flush(key.handle)


def test_hash_mldsa_signs_a_sha384_digest(tpm):
    key = tpm.create_primary("ML-DSA-44", hash_alg=S.TPM_ALG_SHA384)
    d = hashlib.sha384(b"document").digest()
    sig = tpm.sign_digest(key.handle, d, context=b"c")
    # OpenSSL has no HashML-DSA verify: check it over FIPS 204 Algorithm 4's mu with verify_mu
    mu = hashlib.shake_256(hashlib.shake_256(key.public.unique).digest(64) + b"\x01\x01c"
                           + bytes.fromhex("0609608648016503040202") + d).digest(64)
    public_key(key.public).verify_mu(sig, mu)
    # TPM_ST_DIGEST_VERIFIED, TPM_RH_NULL, metadata = the pre-hash (SHA-384), empty hmac
    assert tpm.verify_digest_signature(key, d, sig, context=b"c") == bytes.fromhex("8027 40000007 000c 0000")
    with pytest.raises(TpmResponseError) as e:
        tpm.sign_digest(key.handle, hashlib.sha256(b"document").digest())
    assert e.value.rc == 0x2D5  # TPM_RC_SIZE, parameter 2
    tpm.flush(key.handle)


def test_mlkem768_shared_secrets_agree_both_ways(served, tpm):
    key = tpm.create_primary("ML-KEM-768")
    secret, ciphertext = tpm.encapsulate(key.handle)
    assert len(secret) == 32 and len(ciphertext) == 1088
    assert tpm.decapsulate(key.handle, ciphertext) == secret
    # the independent side: encapsulate with cryptography to the TPM's public key
    their_secret, their_ct = mlkem.MLKEM768PublicKey.from_public_bytes(key.public.unique).encapsulate()
    assert tpm.decapsulate(key.handle, their_ct) == their_secret
    assert served.trace_records[-1].variant == "mlkem768"
    tpm.flush(key.handle)


def test_created_key_loads_under_its_parent_with_its_password(served, tpm):
    srk = tpm.create_storage_primary()
    private, public = tpm.create(srk, "ML-KEM-1024", auth=b"kem-pw")
    key = tpm.load(srk, private, public)
    spaces = served.extension_state.get("pqc", dict).spaces.values()  # this process is one client: one space
    inside = next(space.objects[key.handle] for space in spaces if key.handle in space.objects).private
    seed = inside.private_bytes_raw()  # white-box: the seed the TPM holds
    assert seed not in private and seed[:16] not in private and len(private) < 512  # sealed seed (+ its wrapping under the parent), no expanded key
    secret, ct = tpm.encapsulate(key.handle)
    assert tpm.decapsulate(key.handle, ct, auth=b"kem-pw") == secret
    with pytest.raises(TpmResponseError) as e:
        tpm.decapsulate(key.handle, ct, auth=b"wrong")
    assert e.value.rc == 0x98E  # TPM_RC_AUTH_FAIL, session 1
    tampered = bytearray(private)
    tampered[-1] ^= 1
    with pytest.raises(TpmResponseError) as e:
        tpm.load(srk, bytes(tampered), public)
    assert e.value.rc == 0x1DF  # TPM_RC_INTEGRITY, parameter 1
    for h in (key.handle, srk):
        tpm.flush(h)


def test_bad_input_answers_tpm_error_codes(tpm):
    kem = tpm.create_primary("ML-KEM-768")
    dsa = tpm.create_primary("ML-DSA-44")
    cases = {
        "wrong algorithm: sign with a KEM key": (
            frame(0x1A6, [kem.handle], S.tpm2b(b"") + S.tpm2b(b"\x00" * 64) + S.null_hashcheck_ticket(),
                  [password()]), 0x19C),
        "wrong algorithm: ML-KEM-512 template": (
            frame(0x131, [S.TPM_RH_OWNER], S.sensitive_create()
                  + S.tpm2b(S.Public(S.TPM_ALG_MLKEM, S.TPM_ALG_SHA256, 0x00020072, b"", 1).marshal())
                  + S.tpm2b(b"") + S.u32(0), [password()]), 0x2EA),  # TPM_RC_PARMS, parameter 2
        "oversized digest buffer": (
            frame(0x1A6, [dsa.handle], S.tpm2b(b"") + S.tpm2b(b"\x00" * 65) + S.null_hashcheck_ticket(),
                  [password()]), 0x2D5),  # TPM_RC_SIZE, parameter 2
        "oversized context": (
            frame(0x1A6, [dsa.handle], S.tpm2b(b"\x00" * 256) + S.tpm2b(b"") + S.null_hashcheck_ticket(),
                  [password()]), 0x1D5),  # TPM_RC_SIZE, parameter 1
        "oversized ciphertext": (frame(0x1A8, [kem.handle], S.tpm2b(b"\x00" * 1569), [password()]), 0x1D5),
        "short ciphertext": (frame(0x1A8, [kem.handle], S.tpm2b(b"\x00" * 1000), [password()]), 0x1D5),
        "wrong handle type: encapsulate to a signing key": (frame(0x1A7, [dsa.handle], b""), 0x19C),
        "wrong handle type: a PCR": (frame(0x1A7, [0x00000001], b""), 0x18B),
        "flushed handle": (frame(0x1A7, [0x80FFFFFF], b""), 0x18B),
        "missing authorization": (frame(0x1A8, [kem.handle], S.tpm2b(b"\x00" * 1088)), 0x125),
        "unauthorized hierarchy": (frame(0x131, [S.TPM_RH_OWNER], S.sensitive_create()
                                         + S.tpm2b(S.Public(S.TPM_ALG_MLDSA, S.TPM_ALG_SHA256, 0x00040072, b"",
                                                            2).marshal()) + S.tpm2b(b"") + S.u32(0)), 0x125),
        "not a hierarchy": (frame(0x131, [0x40000010], S.sensitive_create()
                                  + S.tpm2b(S.Public(S.TPM_ALG_MLDSA, S.TPM_ALG_SHA256, 0x00040072, b"",
                                                     2).marshal()) + S.tpm2b(b"") + S.u32(0), [password()]), 0x184),
    }
    for what, (command, rc) in cases.items():
        response = tpm.transport.transact(command)
        assert int.from_bytes(response[6:10], "big") == rc, what
    for h in (kem.handle, dsa.handle):
        tpm.flush(h)


def test_the_reserved_derivation_template_is_refused_to_clients(tpm):
    from trustlab.devices.tpm2.pqc import binding

    command = frame(0x131, [S.TPM_RH_OWNER], S.sensitive_create() + S.tpm2b(binding.DERIVATION_TEMPLATE)
                    + S.tpm2b(b"") + S.u32(0), [password()])
    assert int.from_bytes(tpm.transport.transact(command)[6:10], "big") == 0x2C4  # TPM_RC_VALUE, parameter 2


def test_hierarchy_and_parent_authorization_are_checked_by_the_backend(tpm):
    with pytest.raises(TpmResponseError) as e:
        tpm.create_primary("ML-DSA-44", hierarchy_auth=b"not-the-owner-password")
    assert e.value.rc in (0x98E, 0x9A2)  # swtpm's own AUTH_FAIL / BAD_AUTH on session 1
    srk = tpm.create_storage_primary()
    with pytest.raises(TpmResponseError) as e:
        tpm.create(srk, "ML-DSA-44", parent_auth=b"not-the-srk-password")
    assert e.value.rc in (0x98E, 0x9A2)
    private, public = tpm.create(srk, "ML-DSA-44")
    with pytest.raises(TpmResponseError) as e:
        tpm.load(srk, private, public, parent_auth=b"wrong")
    assert e.value.rc in (0x98E, 0x9A2)
    signing = tpm.create_primary("ML-DSA-44")
    with pytest.raises(TpmResponseError) as e:  # an ML-DSA key is not a storage parent
        tpm.create(signing.handle, "ML-DSA-44")
    assert e.value.rc == 0x18A  # TPM_RC_TYPE, handle 1
    for h in (srk, signing.handle):
        tpm.flush(h)


def _proxy_on(tpm_process: Swtpm) -> TimingProxy:
    return TimingProxy(registry.load(PROFILE), swtpm_backend(tpm_process, owned=False), virtual=True)


def test_blobs_are_bound_to_the_instance_and_persist_with_its_state(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    with Swtpm(state_dir=state) as first, _proxy_on(first) as proxy, PqcClient.connect(proxy.tcti) as tpm:
        srk = tpm.create_storage_primary()
        private, public = tpm.create(srk, "ML-DSA-65")
        primary = tpm.create_primary("ML-DSA-65").public.unique
    with Swtpm(state_dir=state) as again, _proxy_on(again) as proxy, PqcClient.connect(proxy.tcti) as tpm:
        key = tpm.load(tpm.create_storage_primary(), private, public)  # same seeds: loads
        assert tpm.create_primary("ML-DSA-65").public.unique == primary
        sig = tpm.sign_digest(key.handle, external_mu(key.public.unique, b"x"))
        public_key(key.public).verify(sig, b"x")
    with Swtpm() as other, _proxy_on(other) as proxy, PqcClient.connect(proxy.tcti) as tpm:
        with pytest.raises(TpmResponseError) as e:
            tpm.load(tpm.create_storage_primary(), private, public)
        assert e.value.rc == 0x1DF  # TPM_RC_INTEGRITY: another instance's blob
        assert tpm.create_primary("ML-DSA-65").public.unique != primary


@pytest.mark.realtime
def test_realtime_client_sees_the_modelled_time():
    with timed_swtpm(TODAY, virtual=False) as proxy, PqcClient.connect(proxy.tcti) as tpm:
        key = tpm.create_primary("ML-KEM-768")
        started = time.perf_counter()
        tpm.encapsulate(key.handle)
        waited_ms = (time.perf_counter() - started) * 1000.0
        modelled = proxy.records[-1].modelled_ms
        assert proxy.records[-1].command == "TPM2_Encapsulate"
        assert waited_ms >= modelled - 0.5  # the response was held for the modelled time


def test_tpm2_getcap_lists_the_pqc_algorithms_and_commands(served):
    """Unmodified tpm2-tools sees the 1.85 IDs in TPM_CAP_ALGS / TPM_CAP_COMMANDS (merged into swtpm's lists)."""
    import os
    import shutil
    import subprocess

    if shutil.which("tpm2_getcap") is None:
        pytest.skip("tpm2-tools not installed")
    env = dict(os.environ, TPM2TOOLS_TCTI=served.tcti)
    algs = subprocess.run(["tpm2_getcap", "algorithms"], env=env, capture_output=True, text=True, timeout=60)
    assert algs.returncode == 0
    for value in ("0xA0", "0xA1", "0xA2"):
        assert f"value:      {value}" in algs.stdout
    assert "value:      0x23" in algs.stdout  # swtpm's own ECC entry is still there
    cmds = subprocess.run(["tpm2_getcap", "commands"], env=env, capture_output=True, text=True, timeout=60)
    assert cmds.returncode == 0
    # TPMA_CC: SignSequenceComplete takes 2 handles and flushes one (as wolfTPM); SignSequenceStart returns one
    assert "value: 0x50001A4" in cmds.stdout and "value: 0x120001AA" in cmds.stdout


def test_getcapability_paging_keeps_order(tpm):
    """Asked for 2 entries from 0x1A0, the list is the first two PQC commands and says there is more."""
    import struct

    response = tpm.transport.transact(struct.pack(">HIIIII", 0x8001, 22, 0x17A, 2, 0x1A0, 2))
    assert response[10:] == bytes.fromhex("01 00000002 00000002 050001a3 050001a4")
    response = tpm.transport.transact(struct.pack(">HIIIII", 0x8001, 22, 0x17A, 0, 0x90, 8))
    assert response[10:] == bytes.fromhex("00 00000000 00000003 00a0 00000209 00a1 00000109 00a2 00000109")


def test_startup_clear_ends_pqc_objects():
    import socket

    from trustlab.devices.tpm2 import wire as tpm2wire
    from trustlab.serving import wire

    with timed_swtpm(PROFILE, virtual=True) as proxy, PqcClient.connect(proxy.tcti) as tpm:
        key = tpm.create_primary("ML-KEM-768")
        with socket.create_connection(proxy.backend.ctrl_address) as c:  # power cycle the backend, then Startup(CLEAR) via the proxy
            c.sendall(wire.ctrl_init())
            c.recv(4)
        proxy.backend.release()
        assert int.from_bytes(tpm.transport.transact(tpm2wire.startup_command())[6:10], "big") == 0
        with pytest.raises(TpmResponseError) as e:
            tpm.encapsulate(key.handle)
        assert e.value.rc == 0x18B


def test_mldsa65_quote_parses_with_tpm2_pytss_and_verifies_independently(served, tpm):
    """A restricted ML-DSA-65 attestation key quotes swtpm's PCRs; the attest parses and the signature verifies."""
    from tpm2_pytss.types import TPMS_ATTEST

    attrs = (S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN | S.USER_WITH_AUTH | S.RESTRICTED | S.SIGN)
    ak = tpm.create_primary("ML-DSA-65", attributes=attrs, allow_external_mu=False)
    with pytest.raises(TpmResponseError) as e:  # a restricted key needs a hash-check ticket, none covers mu
        tpm.sign_digest(ak.handle, b"\x00" * 64)
    assert e.value.rc == 0x3E0  # TPM_RC_TICKET, parameter 3
    pcrs = list(range(10))  # more than one TPM2_PCR_Read returns
    attest, sig = tpm.quote(ak.handle, pcrs, qualifying=b"nonce-123")
    public_key(ak.public).verify(sig, attest)  # ML-DSA over the TPMS_ATTEST bytes, no context
    parsed, used = TPMS_ATTEST.unmarshal(attest)
    assert used == len(attest) and parsed.magic == 0xFF544347 and int(parsed.type) == 0x8018
    assert bytes(parsed.extraData) == b"nonce-123"
    _pub, _name, qualified = tpm.read_public(ak.handle)
    assert bytes(parsed.qualifiedSigner) == qualified
    # independent PCR read through the proxy (swtpm answers it): the digest covers exactly these values
    values = b""
    for i in pcrs:
        r = tpm.transport.transact(frame(0x17E, [], pcr_selection(S.TPM_ALG_SHA256, [i])))
        values += r[-32:]
    assert bytes(parsed.attested.quote.pcrDigest) == hashlib.sha256(values).digest()
    quoted = [r for r in served.trace_records if r.command == "TPM2_Quote"][-1]
    assert quoted.variant == "mldsa65" and quoted.rc == 0 and "pqc_bus" in quoted.breakdown
    tpm.flush(ak.handle)


@pytest.mark.parametrize("how", ["tcti-ldr", "mssim"])
def test_other_transports_reach_the_pqc_commands(served, how):
    """tpm2-pytss's TCTILdr (here loading tcti-swtpm) and MS-simulator framing carry the same frames."""
    from trustlab.devices.tpm2.pqc.client import SocketTransport, TctiTransport

    transport = (TctiTransport(served.tcti) if how == "tcti-ldr"
                 else SocketTransport(served.host, served.port, mssim=True))
    with PqcClient(transport) as tpm:
        key = tpm.create_primary("ML-KEM-1024")
        secret, ct = tpm.encapsulate(key.handle)
        assert tpm.decapsulate(key.handle, ct) == secret
        tpm.flush(key.handle)
        big = tpm.create_primary("ML-DSA-87")  # a 4.6 KB response: more than a TCTI's default buffer
        public_key(big.public).verify(tpm.sign_digest(big.handle, external_mu(big.public.unique, b"m")), b"m")
        tpm.flush(big.handle)


def test_testparms_answers_for_the_pqc_parameter_sets(tpm):
    def test_parms(parms: bytes) -> int:
        return S.response_code(tpm.transport.transact(frame(0x18A, [], parms)))

    assert test_parms(S.u16(S.TPM_ALG_MLDSA) + S.u16(3) + b"\x01") == 0  # ML-DSA-87, external mu
    assert test_parms(S.u16(S.TPM_ALG_HASH_MLDSA) + S.u16(1) + S.u16(S.TPM_ALG_SHA512)) == 0
    assert test_parms(S.u16(S.TPM_ALG_MLKEM) + S.u16(S.TPM_ALG_NULL) + S.u16(2)) == 0
    assert test_parms(S.u16(S.TPM_ALG_MLKEM) + S.u16(S.TPM_ALG_NULL) + S.u16(1)) == 0x1EA  # ML-KEM-512: PARMS
    assert test_parms(S.u16(S.TPM_ALG_MLDSA) + S.u16(4) + b"\x00") == 0x1EA
    assert test_parms(S.u16(0x0023) + S.u16(S.TPM_ALG_NULL) + S.u16(S.TPM_ALG_NULL) + S.u16(3)
                      + S.u16(S.TPM_ALG_NULL)) == 0  # ECC P-256: swtpm's own answer


def test_swtpm_path_tcti_is_a_unix_socket():
    """``swtpm:path=...`` reaches a unix-socket TPM (here swtpm itself, answering a classical command)."""
    with Swtpm(unix=True) as plain, PqcClient.connect(f"swtpm:path={plain.data_path}") as tpm:
        assert tpm.create_storage_primary() >> 24 == 0x80
        with pytest.raises(TpmResponseError) as e:  # swtpm itself has no 1.85 commands
            tpm.encapsulate(0x80000000)
        assert e.value.rc == 0x143  # TPM_RC_COMMAND_CODE


def test_contexts_move_keys_between_connections_and_stay_bound(served, tmp_path):
    """ContextSave/ContextLoad of a PQC key (how tpm2-tools-style clients survive a resource manager)."""
    with PqcClient.connect(served.tcti) as first:
        key = first.create_primary("ML-DSA-44", auth=b"pw")
        saved = first.context_save(key.handle)
        first.flush(key.handle)
    assert saved[8:12] == b"\x80\xff\x00\x00" and saved[12:16] == b"\x40\x00\x00\x01"
    with PqcClient.connect(served.tcti) as second:
        again = second.context_load(saved)
        assert again.public == key.public and again.name == key.name
        sig = second.sign_digest(again.handle, external_mu(key.public.unique, b"x"), auth=b"pw")
        public_key(key.public).verify(sig, b"x")
        second.flush(again.handle)
        tampered = bytearray(saved)
        tampered[7] ^= 1  # the sequence number is bound to the blob
        with pytest.raises(TpmResponseError) as e:
            second.context_load(bytes(tampered))
        assert e.value.rc == 0x1DF
    with Swtpm() as other, _proxy_on(other) as proxy, PqcClient.connect(proxy.tcti) as elsewhere:
        with pytest.raises(TpmResponseError) as e:
            elsewhere.context_load(saved)
        assert e.value.rc == 0x1DF  # TPM_RC_INTEGRITY: another instance's context


def test_sequence_updates_are_priced_by_the_message_they_absorb(served, tpm):
    key = tpm.create_primary("ML-DSA-44", allow_external_mu=False)
    tpm.sign_sequence(key.handle, b"\x00" * 2048 + b"tail")
    updates = [r for r in served.trace_records if r.command == "TPM2_SequenceUpdate"][-2:]
    assert all(r.variant == "mldsa44" and r.breakdown["pqc_keccak"] > 0 for r in updates)
    tpm.flush(key.handle)

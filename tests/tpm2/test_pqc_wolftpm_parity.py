"""The 1.85 behaviours where trustlab followed wolfTPM's fwTPM (issue 27, item 5), through serve + swtpm.

Each case is one of the differences found against wolfTPM (src/fwtpm/fwtpm_command.c)
and resolved by the public 1.85 text where there is one, wolfTPM where it is
silent. Signatures are checked with cryptography (OpenSSL), not the handler.
The byte-for-byte comparison against a running fwTPM is tools/wolftpm_differential.py.
"""

from __future__ import annotations

import hashlib

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed, encode_dss_signature

from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.client import PqcClient, TpmResponseError, frame, password, public_key
from trustlab.serving.proxy import timed_swtpm

from .conftest import needs_swtpm

pytestmark = [pytest.mark.swtpm, needs_swtpm]
RESTRICTED_SIGNER = S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN | S.USER_WITH_AUTH | S.RESTRICTED | S.SIGN
GENERATED = bytes.fromhex("ff544347")  # TPM_GENERATED_VALUE


@pytest.fixture(scope="module")
def served():
    with timed_swtpm("sealsq-qvault-pqc-tpm-wolftpm", virtual=True) as proxy:
        yield proxy


@pytest.fixture
def tpm(served):
    with PqcClient.connect(served.tcti) as client:
        yield client


def rc_of(response: bytes) -> int:
    return int.from_bytes(response[6:10], "big")


def hash_with_ticket(tpm: PqcClient, data: bytes, alg: int = S.TPM_ALG_SHA256) -> tuple[bytes, bytes]:
    """swtpm's TPM2_Hash in the owner hierarchy: (digest, TPMT_TK_HASHCHECK)."""
    response = tpm.call("TPM2_Hash", frame(0x17D, [], S.tpm2b(data) + S.u16(alg) + S.u32(S.TPM_RH_OWNER)))
    digest_size = int.from_bytes(response[10:12], "big")
    return response[12:12 + digest_size], response[12 + digest_size:]


def test_ml_parameter_sets_property_is_reported(tpm):
    """TPM_PT_ML_PARAMETER_SETS (0x131): ML-KEM-768/1024, ML-DSA-44/65/87 and external mu (bits 1-6)."""
    response = tpm.call("TPM2_GetCapability", frame(0x17A, [], S.u32(6) + S.u32(0x131) + S.u32(1)))
    assert response[11:] == bytes.fromhex("00000006 00000001 00000131 0000007e")  # after moreData
    # a property page that spans it keeps swtpm's entries in order around ours
    response = tpm.call("TPM2_GetCapability", frame(0x17A, [], S.u32(6) + S.u32(0x100) + S.u32(100)))
    count = int.from_bytes(response[15:19], "big")
    props = [int.from_bytes(response[19 + 8 * i:23 + 8 * i], "big") for i in range(count)]
    assert 0x131 in props and props == sorted(props) and 0x100 in props


def test_pure_mldsa_without_external_mu_is_attributes(tpm):
    key = tpm.create_primary("ML-DSA-44", allow_external_mu=False)
    with pytest.raises(TpmResponseError) as e:
        tpm.sign_digest(key.handle, b"\x00" * 64)
    assert e.value.rc == 0x182  # TPM_RC_ATTRIBUTES on the key, as wolfTPM
    tpm.flush(key.handle)


UNRESTRICTED_SIGNER = S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN | S.USER_WITH_AUTH | S.SIGN


def ecc_signing_primary(tpm: PqcClient, attrs: int = UNRESTRICTED_SIGNER) -> tuple[int, ec.EllipticCurvePublicKey]:
    """An ECDSA-P256/SHA-256 primary of swtpm's under the owner hierarchy: its handle and public key."""
    public = (S.u16(0x0023) + S.u16(S.TPM_ALG_SHA256) + S.u32(attrs) + S.tpm2b(b"") + S.u16(S.TPM_ALG_NULL)
              + S.u16(0x0018) + S.u16(S.TPM_ALG_SHA256) + S.u16(0x0003) + S.u16(S.TPM_ALG_NULL)
              + S.tpm2b(b"") + S.tpm2b(b""))
    response = tpm.call("TPM2_CreatePrimary", frame(0x131, [S.TPM_RH_OWNER], S.sensitive_create()
                                                    + S.tpm2b(public) + S.tpm2b(b"") + S.u32(0), [password()]))
    handle = int.from_bytes(response[10:14], "big")
    area = response[20:20 + int.from_bytes(response[18:20], "big")]
    x_at = len(area) - 2 * 34
    x, y = area[x_at + 2:x_at + 34], area[x_at + 36:]
    point = ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"), ec.SECP256R1())
    return handle, point.public_key()


def test_sign_digest_with_an_ecc_key_signs_as_wolftpm_does(tpm):
    handle, pub = ecc_signing_primary(tpm)
    digest = hashlib.sha256(b"classical key, 1.85 command").digest()
    response = tpm.transport.transact(frame(0x1A6, [handle], S.tpm2b(b"") + S.tpm2b(digest)
                                            + S.null_hashcheck_ticket(), [password()]))
    assert rc_of(response) == 0
    sig = response[14:14 + int.from_bytes(response[10:14], "big")]
    assert sig[:4] == bytes.fromhex("0018 000b")  # TPMT_SIGNATURE: ECDSA, SHA-256
    r_size = int.from_bytes(sig[4:6], "big")
    r = int.from_bytes(sig[6:6 + r_size], "big")
    s = int.from_bytes(sig[8 + r_size:], "big")
    pub.verify(encode_dss_signature(r, s), digest, ec.ECDSA(Prehashed(hashes.SHA256())))
    verified = tpm.transport.transact(frame(0x1A5, [handle], S.tpm2b(b"") + S.tpm2b(digest) + sig))
    assert rc_of(verified) == 0 and verified[10:] == bytes.fromhex("8027 40000007 000b 0000")
    bad = sig[:-1] + bytes([sig[-1] ^ 1])
    assert rc_of(tpm.transport.transact(frame(0x1A5, [handle], S.tpm2b(b"") + S.tpm2b(digest) + bad))) == 0x3DB
    with_context = frame(0x1A6, [handle], S.tpm2b(b"ctx") + S.tpm2b(digest) + S.null_hashcheck_ticket(),
                         [password()])
    assert rc_of(tpm.transport.transact(with_context)) == 0x1D5  # TPM_RC_SIZE, parameter 1
    wrong_size = frame(0x1A6, [handle], S.tpm2b(b"") + S.tpm2b(digest[:20]) + S.null_hashcheck_ticket(),
                       [password()])
    assert rc_of(tpm.transport.transact(wrong_size)) == 0x2D5  # swtpm's TPM_RC_SIZE on Sign's 1st = our 2nd
    tpm.flush(handle)


def test_restricted_hash_mldsa_signs_only_with_a_valid_hashcheck_ticket(tpm):
    key = tpm.create_primary("ML-DSA-65", attributes=RESTRICTED_SIGNER, hash_alg=S.TPM_ALG_SHA256)
    digest, ticket = hash_with_ticket(tpm, b"a message the TPM hashed")
    with pytest.raises(TpmResponseError) as e:
        tpm.sign_digest(key.handle, digest)  # a NULL ticket
    assert e.value.rc == 0x3E0  # TPM_RC_TICKET, parameter 3
    forged = ticket[:-1] + bytes([ticket[-1] ^ 1])
    with pytest.raises(TpmResponseError) as e:
        tpm.sign_digest(key.handle, digest, validation=forged)
    assert e.value.rc == 0x3E0
    sig = tpm.sign_digest(key.handle, digest, validation=ticket)
    mu = hashlib.shake_256(hashlib.shake_256(key.public.unique).digest(64) + b"\x01\x00"
                           + bytes.fromhex("0609608648016503040201") + digest).digest(64)
    public_key(key.public).verify_mu(sig, mu)
    # a message starting with TPM_GENERATED_VALUE gets a NULL ticket from swtpm: nothing to sign with
    digest, ticket = hash_with_ticket(tpm, GENERATED + b"forged attestation")
    assert ticket == S.null_hashcheck_ticket()
    tpm.flush(key.handle)


def test_restricted_mldsa_sequences_refuse_tpm_generated_messages(tpm):
    key = tpm.create_primary("ML-DSA-44", attributes=RESTRICTED_SIGNER, allow_external_mu=False)
    message = b"an ordinary message" * 100  # through SequenceUpdate
    public_key(key.public).verify(tpm.sign_sequence(key.handle, message), message)
    for forged in (GENERATED + b"x", GENERATED + b"y" * 2000):  # in the final buffer / in the first update
        with pytest.raises(TpmResponseError) as e:
            tpm.sign_sequence(key.handle, forged)
        assert e.value.rc == 0x1C4  # TPM_RC_VALUE, parameter 1
    unrestricted = tpm.create_primary("ML-DSA-44", allow_external_mu=False)
    public_key(unrestricted.public).verify(tpm.sign_sequence(unrestricted.handle, GENERATED + b"x"),
                                           GENERATED + b"x")
    for h in (key.handle, unrestricted.handle):
        tpm.flush(h)


def test_x509sign_keys_do_not_sign_digests_or_sequences(tpm):
    key = tpm.create_primary("ML-DSA-44", attributes=S.FIXED_TPM | S.FIXED_PARENT | S.SENSITIVE_DATA_ORIGIN
                             | S.USER_WITH_AUTH | S.SIGN | S.X509SIGN)
    with pytest.raises(TpmResponseError) as e:
        tpm.sign_digest(key.handle, b"\x00" * 64)
    assert e.value.rc == 0x182
    with pytest.raises(TpmResponseError) as e:
        tpm.sign_sequence(key.handle, b"m")
    assert e.value.rc == 0x182
    tpm.flush(key.handle)


def test_load_external_public_keys_verify_and_encapsulate(tpm):
    """TPM2_LoadExternal of an ML-DSA / ML-KEM public key made outside the TPM (wolfTPM offers it too)."""
    from cryptography.hazmat.primitives.asymmetric import mldsa, mlkem

    signer = mldsa.MLDSA44PrivateKey.from_seed_bytes(b"\x05" * 32)
    public = S.Public(S.TPM_ALG_MLDSA, S.TPM_ALG_SHA256, S.USER_WITH_AUTH | S.SIGN, b"", 1,
                      unique=signer.public_key().public_bytes_raw())
    response = tpm.call("TPM2_LoadExternal", frame(0x167, [], S.u16(0) + S.tpm2b(public.marshal())
                                                   + S.u32(S.TPM_RH_NULL)))
    handle = int.from_bytes(response[10:14], "big")
    assert response[14:] == S.tpm2b(public.name())
    key = type("Key", (), {"handle": handle, "public": public})
    message = b"signed elsewhere"
    assert tpm.verify_sequence(key, message, signer.sign(message))[:2] == b"\x80\x26"
    with pytest.raises(TpmResponseError) as e:
        tpm.sign_sequence(handle, message)
    assert e.value.rc == 0x29C  # TPM_RC_KEY, handle 2 (a public key only)
    tpm.flush(handle)
    kem = mlkem.MLKEM768PrivateKey.from_seed_bytes(b"\x06" * 64)
    public = S.Public(S.TPM_ALG_MLKEM, S.TPM_ALG_SHA256, S.USER_WITH_AUTH | S.DECRYPT, b"", 2,
                      unique=kem.public_key().public_bytes_raw())
    response = tpm.call("TPM2_LoadExternal", frame(0x167, [], S.u16(0) + S.tpm2b(public.marshal())
                                                   + S.u32(S.TPM_RH_OWNER)))
    handle = int.from_bytes(response[10:14], "big")
    shared, ciphertext = tpm.encapsulate(handle)
    assert kem.decapsulate(ciphertext) == shared
    with pytest.raises(TpmResponseError) as e:
        tpm.decapsulate(handle, ciphertext)
    assert e.value.rc == 0x19C  # TPM_RC_KEY, handle 1
    tpm.flush(handle)
    bad = S.Public(S.TPM_ALG_MLKEM, S.TPM_ALG_SHA256, S.USER_WITH_AUTH | S.DECRYPT, b"", 2, unique=b"\x00" * 100)
    response = tpm.transport.transact(frame(0x167, [], S.u16(0) + S.tpm2b(bad.marshal()) + S.u32(S.TPM_RH_NULL)))
    assert rc_of(response) == 0x2DC  # TPM_RC_KEY, parameter 2


def test_ecc_sign_sequences_run_on_swtpm_hash_sequences(tpm):
    """SignSequence/VerifySequence with an ECC key (wolfTPM offers them): swtpm hashes, swtpm signs."""
    handle, pub = ecc_signing_primary(tpm)
    message = b"classical sequence " * 100  # through SequenceUpdate
    start = tpm.call("TPM2_SignSequenceStart", frame(0x1AA, [handle], S.tpm2b(b"") + S.tpm2b(b"")))
    seq = int.from_bytes(start[10:14], "big")
    tpm.call("TPM2_SequenceUpdate", frame(0x15C, [seq], S.tpm2b(message[:1024]), [password()]))
    done = tpm.call("TPM2_SignSequenceComplete", frame(0x1A4, [seq, handle], S.tpm2b(message[1024:]),
                                                       [password(), password()]))
    sig = done[14:14 + int.from_bytes(done[10:14], "big")]
    r_size = int.from_bytes(sig[4:6], "big")
    der = encode_dss_signature(int.from_bytes(sig[6:6 + r_size], "big"), int.from_bytes(sig[8 + r_size:], "big"))
    pub.verify(der, message, ec.ECDSA(hashes.SHA256()))  # over the message, as TPM2_Sign of its SHA-256
    start = tpm.call("TPM2_VerifySequenceStart", frame(0x1A9, [handle], S.tpm2b(b"") * 3))
    seq = int.from_bytes(start[10:14], "big")
    tpm.call("TPM2_SequenceUpdate", frame(0x15C, [seq], S.tpm2b(message[:1024]), [password()]))
    tpm.call("TPM2_SequenceUpdate", frame(0x15C, [seq], S.tpm2b(message[1024:]), [password()]))
    done = tpm.call("TPM2_VerifySequenceComplete", frame(0x1A3, [seq, handle], sig, [password()]))
    assert done[14:14 + int.from_bytes(done[10:14], "big")] == bytes.fromhex("8026 40000007 0000")
    tpm.flush(handle)


def test_restricted_ecc_sequences_refuse_tpm_generated_messages(tpm):
    handle, _pub = ecc_signing_primary(tpm, RESTRICTED_SIGNER)
    for message, rc in ((b"ordinary", 0), (GENERATED + b"forged", 0x1C4)):
        start = tpm.call("TPM2_SignSequenceStart", frame(0x1AA, [handle], S.tpm2b(b"") + S.tpm2b(b"")))
        seq = int.from_bytes(start[10:14], "big")
        done = tpm.transport.transact(frame(0x1A4, [seq, handle], S.tpm2b(message), [password(), password()]))
        assert rc_of(done) == rc, message  # TPM_RC_VALUE on the buffer, as for ML-DSA keys
    tpm.flush(handle)


def test_command_counts_include_the_pqc_commands(tpm):
    """TPM_PT_TOTAL_COMMANDS / TPM_PT_LIBRARY_COMMANDS count what TPM_CAP_COMMANDS lists (wolfTPM counts its own)."""
    response = tpm.call("TPM2_GetCapability", frame(0x17A, [], S.u32(6) + S.u32(0x129) + S.u32(2)))
    total, library = (int.from_bytes(response[23 + 8 * i:27 + 8 * i], "big") for i in range(2))
    listed, first, more = 0, 0, 1
    while more:
        response = tpm.call("TPM2_GetCapability", frame(0x17A, [], S.u32(2) + S.u32(first) + S.u32(64)))
        more, count = response[10], int.from_bytes(response[15:19], "big")
        codes = [int.from_bytes(response[19 + 4 * i:23 + 4 * i], "big") & 0xFFFF for i in range(count)]
        listed += count
        first = codes[-1] + 1 if codes else 0x10000
    assert total == library == listed

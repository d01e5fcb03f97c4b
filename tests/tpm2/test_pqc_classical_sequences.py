"""RSA/ECC sign and verify sequences on the PQC path are bound to the key's Name, not to its handle number.

1.85 Part 3 20.6 / 20.3: "If keyHandle refers to a key that is not the same as
the key that was used to start the signature context, the TPM shall return
TPM_RC_SIGN_CONTEXT_KEY"; wolfTPM's fwTPM compares Names (a flushed key's
handle recycled for another key is not the same key), as the ML-DSA sequences
here already do (test_pqc_context_proofs). The key is swtpm's own object, in
the client's resource-manager space: its handle is a virtual one, reused by
the next object the space loads.
"""

from __future__ import annotations

import struct

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from trustlab.devices.tpm2.pqc import structures as S
from trustlab.devices.tpm2.pqc.client import PqcClient, frame, password
from trustlab.devices.tpm2.pqc.structures import response_code as rc
from trustlab.serving.proxy import timed_swtpm

from .conftest import needs_swtpm
from .test_pqc_context_proofs import ECC_SIGN

pytestmark = [pytest.mark.swtpm, needs_swtpm]
SIGN_CONTEXT_KEY_H2 = 0x2AD  # TPM_RC_SIGN_CONTEXT_KEY, handle 2


@pytest.fixture(scope="module")
def served():
    with timed_swtpm("sealsq-qvault-pqc-tpm-wolftpm", virtual=True) as proxy:
        yield proxy


def ecc_key(t: PqcClient, unique: bytes) -> tuple[int, ec.EllipticCurvePublicKey]:
    """An ECDSA P-256 primary in the null hierarchy; another ``unique`` (the template's x): another key."""
    template = ECC_SIGN[:-4] + S.tpm2b(unique) + S.tpm2b(b"")  # TPMS_ECC_POINT: x = unique, y empty
    response = t.transport.transact(frame(0x131, [S.TPM_RH_NULL], S.sensitive_create(b"") + S.tpm2b(template)
                                          + S.tpm2b(b"") + S.u32(0), [password()]))
    assert rc(response) == 0
    (handle,) = struct.unpack_from(">I", response, 10)
    public = t.transport.transact(frame(0x173, [handle], b""))
    area = public[12:12 + struct.unpack_from(">H", public, 10)[0]]
    point = area[-(2 + 32 + 2 + 32):]
    x, y = point[2:34], point[36:68]
    return handle, ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"),
                                                 ec.SECP256R1()).public_key()


def start(t: PqcClient, key: int, sign: bool = True) -> int:
    if sign:
        response = t.call("TPM2_SignSequenceStart", frame(0x1AA, [key], S.tpm2b(b"") + S.tpm2b(b"")))
    else:
        response = t.call("TPM2_VerifySequenceStart", frame(0x1A9, [key], S.tpm2b(b"") * 3))
    return struct.unpack_from(">I", response, 10)[0]


def complete(t: PqcClient, seq: int, key: int, message: bytes) -> bytes:
    return t.transport.transact(frame(0x1A4, [seq, key], S.tpm2b(message), [password(), password()]))


def signature(response: bytes) -> bytes:
    """The TPMT_SIGNATURE (ECDSA) of a SignSequenceComplete response, as DER."""
    sig = response[14:14 + struct.unpack_from(">I", response, 10)[0]]
    r_size = struct.unpack_from(">H", sig, 4)[0]
    return encode_dss_signature(int.from_bytes(sig[6:6 + r_size], "big"), int.from_bytes(sig[8 + r_size:], "big"))


def test_a_classical_sign_sequence_is_bound_to_its_key_not_to_the_handle_number(served):
    with PqcClient.connect(served.tcti) as t:
        k, k_pub = ecc_key(t, b"first")
        seq = start(t, k)
        t.flush(k)
        other, _ = ecc_key(t, b"other")
        assert other == k  # the freed (virtual) handle, another key
        assert rc(complete(t, seq, other, b"msg")) == SIGN_CONTEXT_KEY_H2
        t.flush(other)
        again, again_pub = ecc_key(t, b"first")  # the same key again (same template, same seed): same Name
        assert again == k
        done = complete(t, seq, again, b"msg")  # the refused Complete left the sequence as it was
        assert rc(done) == 0
        again_pub.verify(signature(done), b"msg", ec.ECDSA(hashes.SHA256()))
        k_pub.verify(signature(done), b"msg", ec.ECDSA(hashes.SHA256()))
        t.flush(again)


def test_a_classical_verify_sequence_is_bound_to_its_key(served):
    with PqcClient.connect(served.tcti) as t:
        k, _ = ecc_key(t, b"first")
        seq = start(t, k, sign=False)
        t.flush(k)
        other, _ = ecc_key(t, b"other")
        assert other == k
        signed = complete(t, start(t, other), other, b"msg")  # a valid signature by the *other* key
        sig = signed[14:14 + struct.unpack_from(">I", signed, 10)[0]]
        t.call("TPM2_SequenceUpdate", frame(0x15C, [seq], S.tpm2b(b"msg"), [password()]))
        verify = t.transport.transact(frame(0x1A3, [seq, other], sig, [password()]))
        assert rc(verify) == SIGN_CONTEXT_KEY_H2
        t.flush(other)
        again, _ = ecc_key(t, b"first")  # the starting key again: the kept sequence verifies its signature
        signed = complete(t, start(t, again), again, b"msg")
        sig = signed[14:14 + struct.unpack_from(">I", signed, 10)[0]]
        verify = t.call("TPM2_VerifySequenceComplete", frame(0x1A3, [seq, again], sig, [password()]))
        assert verify[14:14 + struct.unpack_from(">I", verify, 10)[0]][:2] == b"\x80\x26"  # TPM_ST_MESSAGE_VERIFIED
        t.flush(again)

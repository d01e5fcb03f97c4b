"""Auditing (Part 3, 8): the owner picks ordinals; a signed audit digest verifies from the spec."""

from __future__ import annotations

import hashlib
import struct

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, utils

from trustlab.devices.tpm12 import Tpm12, TpmError, key_template, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.keys import Key12, rsa_public

from .conftest import OWNER, SRK

K = secret("k")


def sha1(*p: bytes) -> bytes:
    return hashlib.sha1(b"".join(p)).digest()


def test_audited_commands_extend_a_signed_digest(tpm: Tpm12) -> None:
    blob = tpm.TPM_CreateWrapKey(C.TPM_KH_SRK, SRK, key_template(C.TPM_KEY_SIGNING), K)
    key = tpm.TPM_LoadKey2(C.TPM_KH_SRK, blob, SRK)
    ord_random = C.ORD["TPM_GetRandom"]
    tpm.call("TPM_SetOrdinalAuditStatus", params=struct.pack(">IB", ord_random, 1), auth=[OWNER])
    data = tpm.TPM_GetRandom(8)
    _, r = tpm.call("TPM_GetAuditDigestSigned", handles=[key], params=b"\x00" + b"\x07" * 20, auth=[K])
    counter, digest, ordinal_digest, sig = r.raw(10), r.raw(20), r.raw(20), r.sized()
    assert struct.unpack(">I", counter[6:])[0] == 1
    expect = bytes(20)  # from Part 3 8.1: A1 = (0x0012, inParamDigest, count), A2 = (0x0013, outParamDigest, count)
    expect = sha1(expect, b"\x00\x12", sha1(struct.pack(">II", ord_random, 8)), counter)
    expect = sha1(expect, b"\x00\x13", sha1(struct.pack(">II", 0, ord_random), struct.pack(">I", 8), data), counter)
    assert digest == expect
    assert ordinal_digest == sha1(struct.pack(">I", ord_random))
    info = b"\x00\x05ADIG" + b"\x07" * 20 + struct.pack(">I", 50) + digest + counter + ordinal_digest
    rsa_public(Key12.from_bytes(blob).pub).verify(sig, sha1(info), padding.PKCS1v15(), utils.Prehashed(hashes.SHA1()))
    with pytest.raises(TpmError, match="TPM_INVALID_KEYUSAGE"):  # only an AIK may close the session
        tpm.call("TPM_GetAuditDigestSigned", handles=[key], params=b"\x01" + b"\x07" * 20, auth=[K])


def test_audit_queries_cannot_be_audited(tpm: Tpm12) -> None:
    with pytest.raises(TpmError, match="TPM_BAD_PARAMETER"):
        tpm.call("TPM_SetOrdinalAuditStatus", params=struct.pack(">IB", C.ORD["TPM_GetAuditDigest"], 1),
                 auth=[OWNER])

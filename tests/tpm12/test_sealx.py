"""TPM_Sealx (Part 3, 10.7) and the TPM_Unseal of its blobs, each case on trustlab and on libtpms.

The data travels encrypted both ways: XOR with MGF1(nonceEven || nonceOdd || "XOR" || sharedSecret) of
the key's OSAP session, which the command ends. IBM's sealxfile/unsealxfile do the same round trip in
tools/tpm12_ibm_utils.py.
"""

from __future__ import annotations

import hashlib
import struct

import pytest

from trustlab.devices.tpm12 import TpmError
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.primitives import mgf1, xor
from trustlab.devices.tpm12.wire import Writer

from .conftest import SRK
from .test_context import side, tpm  # noqa: F401 - the two-sided fixtures

DATA, DATA_AUTH = b"sealed for the session only", hashlib.sha1(b"data").digest()


def _sha1(*parts: bytes) -> bytes:
    return hashlib.sha1(b"".join(parts)).digest()


def _pad(session, data: bytes) -> bytes:
    """What the TPM XORs with: the session's current nonceEven and the nonceOdd its next command sends."""
    return xor(data, mgf1(_sha1, session.nonce_even + session.next_odd + b"XOR" + session.key, len(data)))


def _pcr_info_long(at_creation: int = 1) -> bytes:
    """TPM_PCR_INFO_LONG selecting PCR 16 (localityAtCreation as given, any locality at release)."""
    sel = struct.pack(">H", 3) + bytes((0, 0, 1))
    return struct.pack(">HBB", C.TPM_TAG_PCR_INFO_LONG, at_creation, 0x1F) + sel + sel + bytes(20) * 2


def _sealx(tpm, data: bytes, pcr_info: bytes = b"") -> bytes:
    s = tpm._osap_key(C.TPM_KH_SRK, SRK)
    params = Writer().raw(s.encrypt_auth(DATA_AUTH)).sized(pcr_info).sized(_pad(s, data)).bytes()
    _, r = tpm.call("TPM_Sealx", handles=[C.TPM_KH_SRK], params=params, auth=[s])
    assert not s.open  # step 18: the session ends
    return r.rest()


def test_sealx_round_trip(tpm) -> None:
    blob = _sealx(tpm, DATA)
    assert blob[:4] == b"\x00\x16\x00\x05"  # TPM_STORED_DATA12, et = TPM_ET_XOR << 8 | TPM_ET_KEY
    s = tpm._osap_key(C.TPM_KH_SRK, SRK)
    pad = _pad(s, bytes(len(DATA)))
    _, r = tpm.call("TPM_Unseal", handles=[C.TPM_KH_SRK], params=blob, auth=[s, DATA_AUTH])
    assert xor(r.sized(), pad) == DATA
    assert not s.open


def test_sealx_blob_needs_an_osap_session_and_sealx_its_rules(tpm) -> None:
    blob = _sealx(tpm, DATA)
    with pytest.raises(TpmError) as e:
        tpm.call("TPM_Unseal", handles=[C.TPM_KH_SRK], params=blob, auth=[SRK, DATA_AUTH])  # OIAP
    assert e.value.code == "TPM_BAD_MODE"
    with pytest.raises(TpmError) as e:
        _sealx(tpm, b"")
    assert e.value.code == "TPM_BAD_PARAMETER"
    short_info = struct.pack(">H", 3) + bytes((0, 0, 1)) + bytes(40)  # a 1.1 TPM_PCR_INFO
    with pytest.raises(TpmError) as e:
        _sealx(tpm, DATA, short_info)
    assert e.value.code == "TPM_BADINDEX"
    with pytest.raises(TpmError) as e:  # a locality selection must not be empty, even the one the TPM rewrites
        _sealx(tpm, DATA, _pcr_info_long(at_creation=0))
    assert e.value.code == "TPM_BADINDEX"
    bound = _sealx(tpm, DATA, _pcr_info_long())
    assert bound[:4] == b"\x00\x16\x00\x05" and len(bound) > len(blob)

"""Sealing, binding, ChangeAuth, session binding, response integrity, and frame fuzzing."""

from __future__ import annotations

import hashlib
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trustlab.devices.tpm12 import MemoryNVStore, Tpm12, TpmError, key_template, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import client
from trustlab.devices.tpm12.client import bind
from trustlab.devices.tpm12.keys import Key12
from trustlab.timing.clock import Clock
from trustlab.timing.registry import load

from .conftest import OWNER, POOL, SRK

K, D = secret("k"), secret("d")


@pytest.fixture
def storage(tpm: Tpm12) -> int:
    blob = tpm.TPM_CreateWrapKey(C.TPM_KH_SRK, SRK, key_template(C.TPM_KEY_STORAGE), K)
    return tpm.TPM_LoadKey2(C.TPM_KH_SRK, blob, SRK)


def _pcr_info(pcrs: list[int], release: bytes) -> bytes:
    bits = bytearray(3)
    for i in pcrs:
        bits[i // 8] |= 1 << (i % 8)
    return struct.pack(">H", 3) + bytes(bits) + release + b"\x00" * 20


def test_seal_to_pcrs_unseals_only_in_that_state(tpm: Tpm12, storage: int) -> None:
    tpm.TPM_Extend(7, hashlib.sha1(b"good kernel").digest())
    composite = struct.pack(">H", 3) + b"\x80\x00\x00" + struct.pack(">I", 20) + tpm.TPM_PCRRead(7)
    stored = tpm.TPM_Seal(storage, K, b"disk key", D, _pcr_info([7], hashlib.sha1(composite).digest()))
    assert tpm.TPM_Unseal(storage, stored, K, D) == b"disk key"
    with pytest.raises(TpmError, match="TPM_AUTH2FAIL"):
        tpm.TPM_Unseal(storage, stored, K, secret("wrong"))
    tpm.TPM_Extend(7, hashlib.sha1(b"evil kernel").digest())
    with pytest.raises(TpmError, match="TPM_WRONGPCRVAL"):
        tpm.TPM_Unseal(storage, stored, K, D)


def test_sealed_blob_is_bound_to_its_tpm(tpm: Tpm12, storage: int, clock) -> None:
    stored = tpm.TPM_Seal(storage, K, b"secret", D)
    tampered = bytearray(stored)
    tampered[-1] ^= 1
    with pytest.raises(TpmError, match="TPM_NOTSEALED_BLOB"):
        tpm.TPM_Unseal(storage, bytes(tampered), K, D)
    other = Tpm12(clock, nv=MemoryNVStore(), keygen=POOL)
    other.TPM_TakeOwnership(OWNER, SRK)
    with pytest.raises(TpmError):
        other.TPM_Unseal(C.TPM_KH_SRK, stored, SRK, D)


def test_bind_unbind_and_change_auth(tpm: Tpm12, storage: int) -> None:
    blob = Key12.from_bytes(tpm.TPM_CreateWrapKey(storage, K, key_template(C.TPM_KEY_BIND), K))
    h = tpm.TPM_LoadKey2(storage, blob.marshal(), K)
    assert tpm.TPM_UnBind(h, bind(blob.pubkey(), b"hello"), K) == b"hello"
    new_enc = tpm.TPM_ChangeAuth(storage, K, C.TPM_ET_KEY, blob.enc, K, D)
    h2 = tpm.TPM_LoadKey2(storage, blob.with_enc(new_enc).marshal(), K)
    assert tpm.TPM_UnBind(h2, bind(blob.pubkey(), b"again"), D) == b"again"
    with pytest.raises(TpmError, match="TPM_AUTHFAIL"):
        tpm.TPM_UnBind(h2, bind(blob.pubkey(), b"again"), K)
    with pytest.raises(TpmError, match="TPM_AUTH2FAIL"):  # the old secret must be proven
        tpm.TPM_ChangeAuth(storage, K, C.TPM_ET_KEY, blob.enc, secret("guess"), D)


def test_osap_session_is_bound_to_its_entity(tpm: Tpm12, storage: int) -> None:
    owner_session = tpm.TPM_OSAP(C.TPM_ET_OWNER, C.TPM_KH_OWNER, OWNER)
    with pytest.raises(TpmError, match="TPM_AUTHFAIL"):  # an owner session cannot authorize a key
        tpm.call(
            "TPM_Seal", handles=[storage], params=owner_session.encrypt_auth(D) + b"\0" * 4 + b"\0\0\0\x01x",
            auth=[owner_session])


def test_host_detects_a_tampered_response(tpm: Tpm12, monkeypatch) -> None:
    monkeypatch.setattr(client, "FAST_PATH", False)  # frames, to flip a bit of one
    real = tpm.engine.execute

    def flip(frame: bytes) -> bytes:
        rsp = bytearray(real(frame))
        if struct.unpack(">I", frame[6:10])[0] == C.ORD["TPM_OwnerReadInternalPub"]:
            rsp[20] ^= 1
        return bytes(rsp)

    tpm.engine.execute = flip  # type: ignore[method-assign]
    with pytest.raises(TpmError, match="response authorization"):
        tpm.TPM_OwnerReadInternalPub(OWNER, C.TPM_KH_SRK)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=200),
                 st.builds(lambda tag, ordinal, body: struct.pack(">HII", tag, 10 + len(body), ordinal) + body,
                           st.sampled_from([0xC1, 0xC2, 0xC3, 0x1234]),
                           st.sampled_from(sorted(C.ORD.values())), st.binary(max_size=120))))
def test_garbage_frames_get_error_codes_never_exceptions(fuzz_tpm: Tpm12, frame: bytes) -> None:
    rsp = fuzz_tpm.execute(frame)
    tag, size, rc = struct.unpack(">HII", rsp[:10])
    assert size == len(rsp) and tag in (0xC4, 0xC5, 0xC6)
    assert fuzz_tpm.engine.last_internal_error is None, fuzz_tpm.engine.last_internal_error


@pytest.fixture(scope="module")
def fuzz_tpm() -> Tpm12:
    t = Tpm12(Clock(load("sim-2010")), nv=MemoryNVStore())
    t.TPM_TakeOwnership(OWNER, SRK)
    return t

"""Engine core: real signatures, authorization refused, wire errors, persistence."""

from __future__ import annotations

import hashlib
import struct

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, utils

from trustlab.devices.tpm12 import FileNVStore, MemoryNVStore, Tpm12, TpmError, key_template, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.keys import Key12, rsa_public
from trustlab.timing.clock import Clock
from trustlab.timing.registry import load

from .conftest import OWNER, SRK

KEY = secret("key")


def _signing_key(tpm: Tpm12) -> tuple[int, bytes]:
    blob = tpm.TPM_CreateWrapKey(C.TPM_KH_SRK, SRK, key_template(C.TPM_KEY_SIGNING), KEY)
    return tpm.TPM_LoadKey2(C.TPM_KH_SRK, blob, SRK), blob


def test_sign_produces_a_verifiable_signature(tpm: Tpm12) -> None:
    handle, blob = _signing_key(tpm)
    digest = hashlib.sha1(b"message").digest()
    sig = tpm.TPM_Sign(handle, digest, KEY)
    rsa_public(Key12.from_bytes(blob).pub).verify(sig, digest, padding.PKCS1v15(),
                                                  utils.Prehashed(hashes.SHA1()))


def test_wrong_authorization_is_refused(tpm: Tpm12) -> None:
    handle, _ = _signing_key(tpm)
    with pytest.raises(TpmError, match="TPM_AUTHFAIL"):
        tpm.TPM_Sign(handle, b"\x00" * 20, secret("guess"))
    with pytest.raises(TpmError, match="TPM_AUTHFAIL"):
        tpm.TPM_CreateWrapKey(C.TPM_KH_SRK, secret("not srk"), key_template(C.TPM_KEY_SIGNING), KEY)
    with pytest.raises(TpmError, match="TPM_AUTHFAIL"):
        tpm.TPM_CreateCounter(secret("not owner"), secret("c"))


def test_tampered_key_blob_is_refused(tpm: Tpm12) -> None:
    _, blob = _signing_key(tpm)
    k = Key12.from_bytes(blob)
    forged = Key12(C.TPM_KEY_STORAGE, k.flags, k.auth_usage, k.parms, k.pub, k.enc)  # usage changed
    with pytest.raises(TpmError, match="TPM_DECRYPT_ERROR"):
        tpm.TPM_LoadKey2(C.TPM_KH_SRK, forged.marshal(), SRK)


def test_malformed_frames_get_error_responses(tpm: Tpm12) -> None:
    for frame in (b"", b"\x00\xc1", struct.pack(">HII", 0xC1, 99, 0x46),
                  struct.pack(">HII", 0xC1, 10, 0xDEAD), struct.pack(">HII", 0x1234, 10, 0x46),
                  struct.pack(">HII", 0xC1, 12, 0x46) + b"\x00\x00"):
        rsp = tpm.execute(frame)
        assert len(rsp) == 10 and struct.unpack(">I", rsp[6:10])[0] != 0


def test_quote_reflects_extended_pcrs(tpm: Tpm12) -> None:
    handle, blob = _signing_key(tpm)
    value = tpm.TPM_Extend(10, hashlib.sha1(b"boot").digest())
    assert value == hashlib.sha1(b"\x00" * 20 + hashlib.sha1(b"boot").digest()).digest()
    composite, sig = tpm.TPM_Quote(handle, b"N" * 20, [10], KEY)
    info = b"\x01\x01\x00\x00QUOT" + hashlib.sha1(composite).digest() + b"N" * 20
    rsa_public(Key12.from_bytes(blob).pub).verify(sig, hashlib.sha1(info).digest(), padding.PKCS1v15(),
                                                  utils.Prehashed(hashes.SHA1()))


def test_counters_never_go_backwards_across_restarts(tmp_path) -> None:
    path = tmp_path / "tpm.state"
    clock = Clock(load("sim-2010"))
    tpm = Tpm12(clock, nv=FileNVStore(path))
    tpm.TPM_TakeOwnership(OWNER, SRK)
    cid, start = tpm.TPM_CreateCounter(OWNER, secret("c"))
    seen = [start]
    for _ in range(3):
        seen.append(tpm.TPM_IncrementCounter(cid, secret("c")))
        tpm = Tpm12(clock, nv=FileNVStore(path))  # power cycle: a new engine from the file
        assert tpm.TPM_ReadCounter(cid) == seen[-1]
    assert seen == sorted(seen) and len(set(seen)) == len(seen)
    # a second counter created later starts above every value ever reached
    cid2, start2 = tpm.TPM_CreateCounter(OWNER, secret("d"))
    assert start2 > seen[-1]


def test_one_counter_per_boot(tpm: Tpm12) -> None:
    a, _ = tpm.TPM_CreateCounter(OWNER, secret("a"))
    b, _ = tpm.TPM_CreateCounter(OWNER, secret("b"))
    tpm.TPM_IncrementCounter(a, secret("a"))
    tpm.TPM_IncrementCounter(a, secret("a"))
    with pytest.raises(TpmError, match="TPM_BAD_COUNTER"):
        tpm.TPM_IncrementCounter(b, secret("b"))
    tpm.restart()
    assert tpm.TPM_IncrementCounter(b, secret("b")) > 0


def test_corrupt_state_is_a_clear_error() -> None:
    from trustlab.errors import TrustlabError

    with pytest.raises(TrustlabError, match="corrupt"):
        Tpm12(Clock(load("sim-2010")), nv=MemoryNVStore(b"{not json"))


def test_a_failed_save_keeps_the_old_state(tmp_path, monkeypatch) -> None:
    import os

    path = tmp_path / "tpm.state"
    clock = Clock(load("sim-2010"))
    tpm = Tpm12(clock, nv=FileNVStore(path))
    tpm.TPM_TakeOwnership(OWNER, SRK)
    cid, start = tpm.TPM_CreateCounter(OWNER, secret("c"))
    before = path.read_bytes()

    def crash(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    from trustlab.errors import TrustlabError

    with pytest.raises(TrustlabError, match="cannot write"):
        tpm.TPM_IncrementCounter(cid, secret("c"))
    assert tpm.TPM_ReadCounter(cid) == start  # the failed increment did not happen in memory either
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["tpm.state"]  # no temp file left behind
    assert Tpm12(clock, nv=FileNVStore(path)).TPM_ReadCounter(cid) == start


class _FlakyStore(MemoryNVStore):
    """A store whose next save raises ``fail`` (storage error or injected power loss)."""

    fail: BaseException | None = None

    def save(self, data: bytes) -> None:
        if self.fail is not None:
            raise self.fail
        super().save(data)


def _register_half_done() -> None:
    from trustlab.devices.tpm12 import tpm_command

    @tpm_command("TPM_TestHalfDone", ordinal=0x20000F10, handles=0, auth=(0,))
    def half_done(tpm, req):  # changes persistent state, then fails: the error path must persist
        tpm.state.extra["half"] = "1"
        tpm.mark_dirty()
        raise TpmError("TPM_BAD_PARAMETER", "failed after changing state")


def test_storage_failure_while_answering_an_error_is_a_tpm_fail_response() -> None:
    from trustlab.devices.ftpm.errors import PowerLoss

    _register_half_done()
    store = _FlakyStore()
    tpm = Tpm12(Clock(load("sim-2010")), nv=store)
    # healthy storage: the handler's error is the answer and its state change is durable
    with pytest.raises(TpmError, match="TPM_BAD_PARAMETER"):
        tpm.call("TPM_TestHalfDone")
    assert b'"half": "1"' in store.data
    del tpm.engine.state.extra["half"]
    tpm.engine.mark_dirty()
    tpm.TPM_GetRandom(4)  # persist the removal
    durable = store.data
    # broken storage on the error path: a TPM_FAIL response, not an exception; nothing happened
    store.fail = OSError(5, "I/O error")
    frame = struct.pack(">HII", C.TPM_TAG_RQU_COMMAND, 10, 0x20000F10)
    rsp = tpm.execute(frame)
    assert struct.unpack(">HII", rsp) == (C.TPM_TAG_RSP_COMMAND, 10, C.RC["TPM_FAIL"])
    assert "half" not in tpm.engine.state.extra and store.data == durable
    assert isinstance(tpm.engine.last_internal_error, OSError)
    with pytest.raises(TpmError, match="TPM_FAIL"):
        tpm.call("TPM_TestHalfDone")
    store.fail = None
    assert len(tpm.TPM_GetRandom(8)) == 8  # the TPM keeps answering
    # injected power loss is not an answer: it propagates (the fTPM's crash tests rely on it)
    store.fail = PowerLoss()
    with pytest.raises(PowerLoss):
        tpm.call("TPM_TestHalfDone")
    store.fail = None
    assert Tpm12(Clock(load("sim-2010")), nv=store).engine.state.extra.get("half") is None


def test_a_corrupt_state_file_is_named_by_its_path(tmp_path) -> None:
    """A damaged --state file was reported as 'TPM state in FileNVStore is corrupt' (D8): the error names the file."""
    from trustlab.errors import TrustlabError

    path = tmp_path / "tpm12-state.json"
    Tpm12(Clock(load("sim-2010")), nv=FileNVStore(path))
    path.write_bytes(path.read_bytes()[:40] + b"\x01" + path.read_bytes()[41:])
    with pytest.raises(TrustlabError, match="corrupt") as err:
        Tpm12(Clock(load("sim-2010")), nv=FileNVStore(path))
    assert f"TPM state in file {path} is corrupt" in str(err.value) and "FileNVStore" not in str(err.value)

"""Realtime mode returns when the model says; a new command is timed for free."""

from __future__ import annotations

import statistics
import struct
import time

import pytest

from trustlab.devices.tpm12 import MemoryNVStore, Response, Tpm12, TpmError, key_template, secret, tpm_command
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.wire import Writer
from trustlab.timing.clock import Clock
from trustlab.timing.registry import load

from .conftest import OWNER, POOL, SRK

K = secret("k")


@pytest.mark.realtime
def test_realtime_command_returns_after_its_modelled_time() -> None:
    """Infineon TPM_GetRandom (~19.3 ms modelled) answered through the raw frame interface."""
    clock = Clock(load("infineon-2010"), realtime=True)
    tpm = Tpm12(clock, nv=MemoryNVStore(), keygen=POOL)
    frame = struct.pack(">HIII", 0xC1, 14, C.ORD["TPM_GetRandom"], 16)
    errors = []
    for _ in range(7):
        started = time.perf_counter()
        rsp = tpm.execute(frame)
        wall_ms = (time.perf_counter() - started) * 1000
        assert struct.unpack(">I", rsp[6:10])[0] == 0 and clock.last.ms > 19
        assert wall_ms >= clock.last.ms - 0.1  # never early
        errors.append(wall_ms - clock.last.ms)
    assert statistics.median(errors) <= 2.0, errors


def test_a_new_command_is_timed_without_timing_code() -> None:
    @tpm_command("TPM_SignTwice", ordinal=0x20000F01, handles=1, auth=(1,))
    def sign_twice(tpm, req):
        key = tpm.key(req.handles[0])
        req.auth.check(0, key.usage_auth, (C.TPM_ET_KEYHANDLE, req.handles[0]))
        data = req.params.sized()
        digest = tpm.crypto.sha1(data)
        sigs = [tpm.crypto.rsa_sign(key.private, digest) for _ in range(2)]
        return Response(params=Writer().sized(b"".join(sigs)).bytes())

    profile = load("infineon-2010")
    clock = Clock(profile)
    tpm = Tpm12(clock, nv=MemoryNVStore(), keygen=POOL)
    tpm.TPM_TakeOwnership(OWNER, SRK)
    h = tpm.TPM_LoadKey2(C.TPM_KH_SRK, tpm.TPM_CreateWrapKey(C.TPM_KH_SRK, SRK,
                                                              key_template(C.TPM_KEY_SIGNING), K), SRK)
    s = tpm.TPM_OIAP(K)
    _, r = tpm.call("TPM_SignTwice", handles=[h], params=Writer().sized(b"abc").bytes(), auth=[s])
    assert len(r.sized()) == 512
    rec = clock.last
    assert rec.name == "TPM_SignTwice"
    b = rec.breakdown
    assert b["rsa_sign"] == 2 * profile.mean("rsa_sign")
    assert b["ohc"] == profile.mean("ohc")
    # in: 10 + 4 + 4 + 3 + 45 = 66 bytes; out: 10 + 4 + 512 + 41 = 567 bytes
    assert b["ohir"] == 66 * profile.mean("ohir") and b["ohor"] == 567 * profile.mean("ohor")
    assert b["sha1_byte"] > 0
    # wrong authorization is still refused by the generic session machinery
    try:
        tpm.call("TPM_SignTwice", handles=[h], params=Writer().sized(b"abc").bytes(), auth=[secret("no")])
    except TpmError as e:
        assert e.code == "TPM_AUTHFAIL"
    else:
        raise AssertionError("wrong authorization accepted")


def test_a_handler_that_forgets_authorization_fails_closed() -> None:
    @tpm_command("TPM_Forgetful", ordinal=0x20000F02, handles=0, auth=(1,))
    def forgetful(tpm, req):
        return Response()

    tpm = Tpm12(Clock(load("sim-2010")), nv=MemoryNVStore(), keygen=POOL)
    try:
        tpm.call("TPM_Forgetful", auth=[secret("x")])
    except TpmError as e:
        assert e.code == "TPM_FAIL"
    else:
        raise AssertionError("an unchecked session was accepted")

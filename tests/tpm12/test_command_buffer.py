"""The TPM 1.2 command buffer (TPM_BUFFER_MAX, 4096 bytes) holds on every path into the engine.

A command frame longer than the buffer never reaches the chip: ``trustlab serve`` refuses it at its
front end (``serving.wire.FrameReader``: TPM_BAD_PARAM_SIZE, nothing charged), and swtpm reads at most
TPM_BUFFER_MAX + 9 bytes (swtpm mainloop.c: the buffer is ``TPMPROP_TPM_BUFFER_MAX`` plus the 9-byte
``tpm2_send_command_prefix``), so libtpms, which has no input check of its own, gets the frame cut short
and answers TPM_BAD_PARAM_SIZE (tpm_process.c TPM_Process_GetCommandParams: paramSize != bytes). The
engine answers the same whether the command comes as a frame or as values (the in-process fast path),
with the same (empty) ledger - before, the fast path ran a TPM_HMAC of any size up to 64 KiB.
"""

from __future__ import annotations

import hashlib
import shutil
import socket
import struct

import pytest

from trustlab.devices.tpm12 import MemoryNVStore, Tpm12, TpmError, client, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.client import hmac_key_template, msa_composite
from trustlab.devices.tpm12.engine import Engine
from trustlab.devices.tpm12.keys import Key12
from trustlab.devices.tpm12.parsed import Command
from trustlab.serving import wire
from trustlab.serving.path import CommandPath
from trustlab.timing.clock import Clock
from trustlab.timing.registry import load

from .conftest import OWNER, POOL, SRK

K = secret("k")
HMAC_OVERHEAD = 10 + 4 + 4 + 4 + 45  # header, key handle, dataSize, outputBlocks, one authorization
BAD_PARAM_SIZE = C.RC["TPM_BAD_PARAM_SIZE"]


def _hmac_party() -> tuple[Tpm12, Clock, int]:
    clock = Clock(load("infineon-2010"))
    tpm = Tpm12(clock, nv=MemoryNVStore(), keygen=POOL)
    tpm.TPM_TakeOwnership(OWNER, SRK)
    digest = hashlib.sha1(msa_composite([b"\x01" * 20])).digest()
    cmk = Key12.from_bytes(tpm.TPM_CMK_CreateKey(C.TPM_KH_SRK, SRK, hmac_key_template(), K,
                                                 tpm.TPM_CMK_ApproveMA(OWNER, digest), digest))
    return tpm, clock, tpm.TPM_LoadKey2(C.TPM_KH_SRK, cmk.marshal(), SRK)


def _totals(clock: Clock) -> tuple[float, dict, dict, dict]:
    return (clock.now_ms, dict(clock.command_counts), dict(clock.by_command_component), dict(clock.by_component))


def _ledger(before: tuple, after: tuple) -> dict:
    """What one call added to a clock: modelled ms, commands run, ms per (command, component)."""
    counts = {k: v - before[1].get(k, 0) for k, v in after[1].items() if v != before[1].get(k, 0)}
    charged = {k: v - before[2].get(k, 0.0) for k, v in after[2].items() if v != before[2].get(k, 0.0)}
    return {"ms": after[0] - before[0], "commands": counts, "charged": charged}


def _query(tpm: Tpm12, clock: Clock, handle: int, data_bytes: int, fast: bool, monkeypatch) -> tuple:
    """TPM_HMAC of ``data_bytes`` on one path: its response code and the ledger it left."""
    monkeypatch.setattr(client, "FAST_PATH", fast)
    before = _totals(clock)
    try:
        tpm.TPM_HMAC(handle, b"\x5a" * data_bytes, K)
        rc = 0
    except TpmError as e:
        rc = e.rc
    return rc, _ledger(before, _totals(clock))


@pytest.mark.parametrize("frame_bytes", [4090, 4095, 4096, 4097, 4105, 4106, 4154, 64 * 1024])
def test_tpm_hmac_framed_and_as_values_answer_alike(frame_bytes, monkeypatch) -> None:
    """TPM_HMAC around the buffer: the same answer and ledger framed and as values; beyond it
    TPM_BAD_PARAM_SIZE with nothing charged for the refused command (its TPM_OIAP ran)."""
    data = frame_bytes - HMAC_OVERHEAD
    framed_tpm, framed_clock, framed_key = _hmac_party()
    values_tpm, values_clock, values_key = _hmac_party()
    framed = _query(framed_tpm, framed_clock, framed_key, data, False, monkeypatch)
    values = _query(values_tpm, values_clock, values_key, data, True, monkeypatch)
    assert framed == values
    rc, ledger = values
    if frame_bytes <= C.TPM_BUFFER_MAX:
        assert rc == 0 and ledger["commands"] == {"TPM_OIAP": 1, "TPM_HMAC": 1}
        assert ledger["charged"]["TPM_HMAC", "ohir"] == pytest.approx(frame_bytes * framed_clock.fixed_cost("ohir"))
    else:
        assert rc == BAD_PARAM_SIZE and ledger["commands"] == {"TPM_OIAP": 1}
        assert "TPM_HMAC" in values_tpm.engine.last_refusal and f"{frame_bytes}-byte" in values_tpm.engine.last_refusal


def test_refusal_is_what_serve_answers(monkeypatch) -> None:
    """The engine's answer to an oversized frame is byte for byte the serve front end's, whose limit is the
    engine's; the refusal leaves the TPM as it was (a SHA-1 thread survives it)."""
    assert CommandPath.max_frame == Engine(Clock(load("infineon-2010"))).max_command == C.TPM_BUFFER_MAX
    frame = struct.pack(">HII", 0xC1, 4097, 0xA1) + struct.pack(">I", 4083) + b"\0" * 4083
    reader = wire.FrameReader(max_frame=CommandPath.max_frame, family="tpm1.2")
    reader.feed(frame)
    refused = reader.next_event()
    assert isinstance(refused, wire.Refuse)
    engine = Engine(Clock(load("infineon-2010")))
    engine.execute(struct.pack(">HII", 0xC1, 10, 0xA0))  # TPM_SHA1Start
    before = _totals(engine.clock)
    assert engine.execute(frame) == refused.reply
    assert engine.execute(Command((0xA1, (), frame[10:], ()))).rc == BAD_PARAM_SIZE
    assert _totals(engine.clock) == before and engine.sha1_context is not None


def _nv_area(size: int) -> tuple[bytes, bytes]:
    """TPM_NV_DefineSpace of a ``size``-byte area (no owner, NV unlocked: no authorization) and the
    TPM_NV_ReadValue parameters reading all of it (a response of 14 + ``size`` bytes)."""
    index = 0x00011000 + size
    public = (struct.pack(">HI", C.TPM_TAG_NV_DATA_PUBLIC, index) + NO_PCRS + NO_PCRS
              + struct.pack(">HI", C.TPM_TAG_NV_ATTRIBUTES, C.TPM_NV_PER_PPWRITE) + b"\x00\x00\x00"
              + struct.pack(">I", size))
    return public + b"\x00" * 20, struct.pack(">III", index, 0, size)


NO_PCRS = struct.pack(">H", 3) + b"\x00" * 3 + b"\x1f" + b"\x00" * 20  # TPM_PCR_INFO_SHORT: no PCRs, any locality


@pytest.mark.parametrize("size", [4082, 4083, 5000])
def test_a_response_longer_than_the_buffer_is_tpm_size(size, monkeypatch) -> None:
    """A TPM_NV_ReadValue whose answer (14 + size bytes) outgrows the 4096-byte buffer answers TPM_SIZE,
    framed and as values alike, with the same ledger (``ohor`` for the 10-byte answer)."""
    answers = []
    for fast in (False, True):
        monkeypatch.setattr(client, "FAST_PATH", fast)
        clock = Clock(load("infineon-2010"))
        tpm = Tpm12(clock, nv=MemoryNVStore(), keygen=POOL)
        define, read = _nv_area(size)
        tpm.call("TPM_NV_DefineSpace", params=define)
        before = _totals(clock)
        try:
            rc, length = 0, len(tpm.call("TPM_NV_ReadValue", params=read)[1].sized(1 << 16))
        except TpmError as e:
            rc, length = e.rc, 0
        answers.append((rc, length, _ledger(before, _totals(clock))))
    assert answers[0] == answers[1]
    rc, length, ledger = answers[0]
    ohor = ledger["charged"]["TPM_NV_ReadValue", "ohor"] / clock.fixed_cost("ohor")
    if 14 + size <= C.TPM_BUFFER_MAX:
        assert (rc, length) == (0, size) and ohor == pytest.approx(14 + size)
    else:
        assert (rc, length) == (C.RC["TPM_SIZE"], 0) and ohor == pytest.approx(10)


# ---- against libtpms ------------------------------------------------------------------------------

def _sha1_update(n: int) -> bytes:
    return struct.pack(">HII", 0xC1, 14 + n, 0xA1) + struct.pack(">I", n) + b"\xaa" * n


def _unknown(size: int) -> bytes:
    return struct.pack(">HII", 0xC1, size, 0x7777) + b"\0" * (size - 10)


SHA1_START = struct.pack(">HII", 0xC1, 10, 0xA0)
CASES = {  # frame -> what both answer (the first answer: swtpm answers each further read of a longer frame too)
    "SHA1Update 4032 bytes (frame 4046)": (_sha1_update(4032), 0),
    "SHA1Update 4082 bytes (frame 4096)": (_sha1_update(4082), C.RC["TPM_SHA_ERROR"]),
    "SHA1Update 4092 bytes (frame 4106)": (_sha1_update(4092), BAD_PARAM_SIZE),
    "SHA1Update 8192 bytes": (_sha1_update(8192), BAD_PARAM_SIZE),
    "unknown ordinal, frame 4096": (_unknown(4096), C.RC["TPM_BAD_ORDINAL"]),
    "unknown ordinal, frame 4106": (_unknown(4106), BAD_PARAM_SIZE),
    "unknown ordinal, frame 64 KiB": (_unknown(65536), BAD_PARAM_SIZE),
}
SWTPM_SLACK = {  # frames swtpm still reads whole (its buffer is 4096 + 9): libtpms runs them, we refuse
    "SHA1Update 4083 bytes (frame 4097)": (_sha1_update(4083), C.RC["TPM_SHA_ERROR"]),
    "unknown ordinal, frame 4105": (_unknown(4105), C.RC["TPM_BAD_ORDINAL"]),
}


def _exchange(s: socket.socket, frame: bytes) -> bytes:
    s.sendall(frame)
    head = b""
    while len(head) < 10:
        chunk = s.recv(10 - len(head))
        assert chunk, "swtpm closed the connection"
        head += chunk
    rest = struct.unpack(">I", head[2:6])[0] - 10
    body = b""
    while len(body) < rest:
        body += s.recv(rest - len(body))
    return head + body


def _libtpms_answer(port: int, frame: bytes) -> int:
    """The first answer swtpm sends to ``frame`` after TPM_SHA1Start, on a connection of its own (closed
    after that answer: the rest of a longer frame is read and answered as further commands)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        _exchange(s, SHA1_START)
        return struct.unpack(">I", _exchange(s, frame)[6:10])[0]


@pytest.mark.swtpm
@pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")
def test_buffer_edge_against_libtpms() -> None:
    """Frames at the buffer's edge answered as libtpms in swtpm answers them; the 4097..4105-byte frames
    swtpm's read buffer still takes whole are the one known difference (we refuse them as serve does)."""
    from trustlab.serving.tpm12.socket_tpm import Swtpm12

    with Swtpm12(startup=True) as swtpm:
        for name, (frame, expected) in {**CASES, **SWTPM_SLACK}.items():
            ours = Engine(Clock(load("infineon-2010")), ek=False)
            assert ours.execute(SHA1_START)[6:10] == b"\0\0\0\0"
            theirs = _libtpms_answer(swtpm.port, frame)
            assert theirs == expected, name
            mine = struct.unpack(">I", ours.execute(frame)[6:10])[0]
            assert mine == (expected if name in CASES else BAD_PARAM_SIZE), name


@pytest.mark.swtpm
@pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")
def test_response_edge_against_libtpms() -> None:
    """TPM_NV_ReadValue answers of 4096, 4097 and 5014 bytes: the same answer as libtpms, frame for frame
    apart from the data (TPM_SIZE, tpm_store.c TPM_Sbuffer_StoreFinalResponse, beyond 4096)."""
    from trustlab.serving.tpm12.socket_tpm import Swtpm12

    ours = Engine(Clock(load("infineon-2010")), ek=False)
    with Swtpm12(startup=True) as swtpm, socket.create_connection(("127.0.0.1", swtpm.port), timeout=10) as s:
        for size in (4082, 4083, 5000):
            define, read = _nv_area(size)
            for ordinal, params in ((C.ORD["TPM_NV_DefineSpace"], define), (C.ORD["TPM_NV_ReadValue"], read)):
                frame = struct.pack(">HII", 0xC1, 10 + len(params), ordinal) + params
                mine, theirs = ours.execute(frame), _exchange(s, frame)
                assert (mine[:10], len(mine)) == (theirs[:10], len(theirs)), (size, ordinal)

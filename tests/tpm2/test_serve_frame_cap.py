"""The frame cap through serve: one per profile, reported by GetCapability as enforced, and hostile sizes.

Each hostile frame gets one clear refusal - ``80 01 00 00 00 0a 00 00 01 42``,
TPM_RC_COMMAND_SIZE, what libtpms answers a command over its buffer or short
of its size field - and serving goes on: on the same connection when the frame
could be read past, on the next one otherwise. ``tpm2_getcap`` (tpm2-tools, a
client we did not write) reads the reported sizes.
"""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import time

import pytest

from trustlab.devices.tpm2 import wire as tpm2wire
from trustlab.serving import frontend, wire
from trustlab.serving.proxy import TimingProxy
from trustlab.serving.swtpm import Swtpm, recv_upto
from trustlab.serving.tpm2 import limits
from trustlab.timing import registry

from .conftest import needs_swtpm

pytestmark = [pytest.mark.swtpm, needs_swtpm]

PQC_CHIP = "sealsq-qvault-pqc-tpm-wolftpm"  # 8192 (chips.toml)
GETRANDOM = tpm2wire.build_command(0x17B, b"\x00\x08")
REFUSED = wire.error_response(wire.TPM_RC_COMMAND_SIZE)


@pytest.fixture(scope="module")
def served():
    lines: list[str] = []
    with Swtpm() as tpm, TimingProxy(registry.load(PQC_CHIP), tpm, virtual=True, log=lines.append) as proxy:
        proxy.lines = lines
        yield proxy


def _connect(proxy: TimingProxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=10)


def _random_works(sock: socket.socket) -> None:
    sock.sendall(GETRANDOM)
    rsp = recv_upto(sock, 20)
    assert wire.response_code(rsp) == 0 and len(rsp) == 20


def test_the_profile_sets_the_cap_the_front_end_reads(served):
    assert limits.for_profile(PQC_CHIP).command == 8192 and served.max_frame == 8192
    assert limits.for_profile("st-st33ktpm2xspi-wolftpm").frame == 4096  # never below libtpms' own


@pytest.mark.skipif(shutil.which("tpm2_getcap") is None, reason="tpm2-tools not installed")
def test_tpm2_getcap_reads_the_enforced_sizes(served):
    out = subprocess.run(["tpm2_getcap", "-T", served.tcti, "properties-fixed"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for prop in ("TPM2_PT_MAX_COMMAND_SIZE", "TPM2_PT_MAX_RESPONSE_SIZE"):
        block = text[text.index(prop):]
        assert block.split("raw:", 1)[1].split()[0] == "0x2000", block[:80]
    block = text[text.index("TPM2_PT_INPUT_BUFFER"):]
    assert block.split("raw:", 1)[1].split()[0] == "0x400"  # TPM2B_MAX_BUFFER, as the handlers take it


def test_a_header_claiming_2_gib_is_refused_once_and_the_next_client_is_served(served):
    before = served.rejected_frames
    with _connect(served) as s:
        s.sendall(struct.pack(">HII", 0x8001, 1 << 31, 0x17B))
        assert recv_upto(s, 64) == REFUSED  # and then the end of the stream: 2 GiB are not read past
    assert served.rejected_frames == before + 1
    assert any("2147483648-byte command" in line for line in served.lines)
    with _connect(served) as s:
        _random_works(s)


@pytest.mark.parametrize("framing", ["raw", "mssim"])
def test_a_frame_just_over_the_cap_is_refused_and_the_connection_goes_on(served, framing):
    big = struct.pack(">HII", 0x8001, 8193, 0x1A5) + bytes(8183)  # a VerifyDigestSignature one byte too long
    with _connect(served) as s:
        if framing == "mssim":
            s.sendall(struct.pack(">IBI", wire.MS_SEND_COMMAND, 0, len(big)) + big)
            assert recv_upto(s, 18) == wire.frame_reply(REFUSED, "mssim")
            s.sendall(struct.pack(">IBI", wire.MS_SEND_COMMAND, 0, len(GETRANDOM)) + GETRANDOM)
            rsp = recv_upto(s, 28)
            assert wire.response_code(rsp[4:]) == 0 and rsp[-4:] == bytes(4)
        else:
            s.sendall(big)
            assert recv_upto(s, 10) == REFUSED
            _random_works(s)


def test_a_non_pqc_command_over_libtpms_buffer_gets_libtpms_answer_and_swtpm_stays_in_step(served):
    long_random = struct.pack(">HII", 0x8001, 5000, 0x17B) + b"\x00\x08" + bytes(4988)
    with _connect(served) as s:
        s.sendall(long_random)  # within the profile's 8192, over libtpms' 4096: never forwarded
        assert recv_upto(s, 10) == REFUSED
        _random_works(s)


def test_a_truncated_big_frame_is_answered_once_at_the_end_of_the_stream(served):
    with _connect(served) as s:
        s.sendall(struct.pack(">HII", 0x8001, 6000, 0x1A5) + bytes(2990))
        s.shutdown(socket.SHUT_WR)
        assert recv_upto(s, 64) == REFUSED
    with _connect(served) as s:
        _random_works(s)


def test_a_big_frame_that_stalls_is_answered_once_then_closed(served, monkeypatch):
    monkeypatch.setattr(frontend, "IDLE_PARTIAL_TIMEOUT", 0.3)
    with _connect(served) as s:
        s.sendall(struct.pack(">HII", 0x8001, 9000, 0x1A5) + bytes(100))  # over the cap, being read past
        started = time.monotonic()
        assert recv_upto(s, 64) == REFUSED
        assert time.monotonic() - started < 5
    with _connect(served) as s:
        _random_works(s)


# ---- the control port's CMD_SET_BUFFERSIZE (swtpm control code 0x11) agrees with the cap ----------------------

def _ctrl(port: int, request: bytes) -> bytes:
    """One control request on its own connection; the whole reply (swtpm answers 16 bytes or 4)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        s.shutdown(socket.SHUT_WR)
        return recv_upto(s, 16)


def _buffersize(size: int) -> bytes:
    return wire.ctrl_request(wire.CMD_SET_BUFFERSIZE, struct.pack(">I", size))


def _swtpm_ioctl(port: int, size: int) -> subprocess.CompletedProcess:
    return subprocess.run(["swtpm_ioctl", "--tcp", f"127.0.0.1:{port}", "-b", str(size)], capture_output=True,
                          text=True, timeout=30)


def test_a_buffersize_query_on_the_pqc_profile_reports_the_cap(served):
    """A client sizing its buffers from the control channel sees 8192, as TPM2_GetCapability reports;
    the minimum stays libtpms' (what swtpm itself answers)."""
    ours = struct.unpack(">IIII", _ctrl(served.ctrl_port, _buffersize(0)))
    theirs = struct.unpack(">IIII", _ctrl(served.backend.ctrl_address[1], _buffersize(0)))
    assert ours == (0, 8192, theirs[2], 8192)
    assert theirs[1] == theirs[3] == limits.BACKEND_MAX


@pytest.mark.skipif(shutil.which("swtpm_ioctl") is None, reason="swtpm_ioctl not installed")
def test_swtpm_ioctl_reads_the_cap(served):
    """swtpm's own client (not ours) reads the buffer size serve reports."""
    out = _swtpm_ioctl(served.ctrl_port, 0)
    assert out.returncode == 0, out.stderr
    assert "TPM buffersize: 8192" in out.stdout and "maximum size  : 8192" in out.stdout


@pytest.mark.parametrize("size", [0xFFFFFFFF, 1, 4096, 8192])
def test_a_set_is_answered_as_swtpm_answers_it_and_serving_goes_on(served, size):
    """swtpm refuses a set while its TPM runs (TPM_BAD_ORDINAL, ctrlchannel.c) and serve's TPM always runs:
    hostile (0xffffffff, below the minimum) or not, the answer is swtpm's own, the size is unchanged, and the
    next command is served."""
    theirs = _ctrl(served.backend.ctrl_address[1], _buffersize(size))
    assert theirs == struct.pack(">I", wire.TPM_BAD_ORDINAL)
    assert _ctrl(served.ctrl_port, _buffersize(size)) == theirs
    assert struct.unpack(">IIII", _ctrl(served.ctrl_port, _buffersize(0)))[1] == 8192
    with _connect(served) as sock:
        _random_works(sock)


@pytest.mark.skipif(shutil.which("tpm2_getrandom") is None, reason="tpm2-tools not installed")
def test_tpm2_getrandom_works_after_hostile_sets(served):
    for size in (0xFFFFFFFF, 0, 1):
        _ctrl(served.ctrl_port, _buffersize(size))
    out = subprocess.run(["tpm2_getrandom", "-T", served.tcti, "--hex", "8"], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0 and len(out.stdout.strip()) == 16, out.stderr


@pytest.mark.parametrize("size", [0, 0xFFFFFFFF, 1, 8192])
def test_a_non_pqc_profile_passes_swtpm_answer_through(size):
    """Where the profile's cap is not above libtpms' buffer, the control channel's answer is swtpm's, byte for
    byte, as before."""
    with Swtpm() as tpm, TimingProxy(registry.load("st-st33ktpm2xspi-wolftpm"), tpm, virtual=True,
                                     log=lambda *a, **k: None) as proxy:
        assert _ctrl(proxy.ctrl_port, _buffersize(size)) == _ctrl(tpm.ctrl_port, _buffersize(size))
        with _connect(proxy) as sock:
            _random_works(sock)


def test_buffersize_reply_clamps_a_successful_set_to_the_cap():
    """A set swtpm accepted (its TPM not running: never so under serve) is reported clamped to
    [minsize, cap], as libtpms clamps to its own range; refusals and pass-through stay untouched."""
    from trustlab.serving import control

    def reply(size: int) -> bytes:
        return struct.pack(">IIII", 0, size, 2808, 4096)

    assert control.buffersize_reply(struct.pack(">I", 0xFFFFFFFF), reply(4096), 8192)[4:8] == struct.pack(">I", 8192)
    assert control.buffersize_reply(struct.pack(">I", 1), reply(2808), 8192)[4:8] == struct.pack(">I", 2808)
    assert control.buffersize_reply(struct.pack(">I", 6000), reply(4096), 8192)[4:] == struct.pack(">III", 6000,
                                                                                                    2808, 8192)
    refused = struct.pack(">I", wire.TPM_BAD_ORDINAL)
    assert control.buffersize_reply(struct.pack(">I", 6000), refused, 8192) == refused
    assert control.buffersize_reply(struct.pack(">I", 0), reply(4096), None) == reply(4096)

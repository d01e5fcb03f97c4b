"""`trustlab serve` as a drop-in TPM: tpm2-tools and swtpm_ioctl (the peers) against a default serve.

Resource manager (kernel tpmrm rules), control-port allow list, one default for
both TCTIs, shutdown on SIGTERM, stale state clean-up, --state.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from trustlab.serving.tpm2 import rm
from trustlab.devices.tpm2 import wire as tpm2wire
from trustlab.serving import wire
from trustlab.serving.proxy import TimingProxy
from trustlab.serving.swtpm import OWNER_FILE, STATE_PREFIX, Swtpm, state_dirs_of

from .conftest import needs_swtpm

pytestmark = [needs_swtpm, pytest.mark.skipif(shutil.which("tpm2_createprimary") is None,
                                              reason="tpm2-tools not installed")]
SRC = str(Path(__file__).resolve().parents[2] / "src")


def tool(tcti: str, cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, TPM2TOOLS_TCTI=tcti, TSS2_LOG="all+NONE")
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=60)


def ok(tcti: str, cwd: Path, *argv: str) -> bytes:
    done = tool(tcti, cwd, *argv)
    assert done.returncode == 0, (argv, done.stderr.decode())
    return done.stdout


@pytest.fixture
def served(swtpm, zero_profile):
    lines: list[str] = []
    with TimingProxy(zero_profile, swtpm, virtual=True, log=lines.append) as proxy:
        proxy.log_lines = lines
        yield proxy


def test_four_step_sequence_without_flushcontext(served, tmp_path):
    """The issue's sequence: each tool leaves its objects loaded; the RM saves and flushes them."""
    tcti = served.tcti
    ok(tcti, tmp_path, "tpm2_createprimary", "-C", "o", "-c", "p.ctx")
    ok(tcti, tmp_path, "tpm2_create", "-C", "p.ctx", "-u", "k.pub", "-r", "k.priv")
    ok(tcti, tmp_path, "tpm2_load", "-C", "p.ctx", "-u", "k.pub", "-r", "k.priv", "-c", "k.ctx")
    (tmp_path / "msg").write_bytes(b"hello")
    ok(tcti, tmp_path, "tpm2_sign", "-c", "k.ctx", "-g", "sha256", "-o", "sig", "msg")
    for _ in range(3):  # more objects than the TPM has slots: still fine
        ok(tcti, tmp_path, "tpm2_createprimary", "-C", "o", "-c", "q.ctx")
    ok(tcti, tmp_path, "tpm2_verifysignature", "-c", "k.ctx", "-g", "sha256", "-m", "msg", "-s", "sig")
    # the RM's own ContextLoad/Save/Flush were charged to the commands that needed them
    signs = [r for r in served.records if r.command == "TPM2_Sign"]
    assert signs and signs[-1].rm_commands >= 3 and signs[-1].served_ms >= signs[-1].modelled_ms - 1e-6


def test_four_parallel_sign_loops(served, tmp_path):
    tcti = served.tcti
    ok(tcti, tmp_path, "tpm2_createprimary", "-C", "o", "-c", "p.ctx")
    ok(tcti, tmp_path, "tpm2_create", "-C", "p.ctx", "-u", "k.pub", "-r", "k.priv")
    ok(tcti, tmp_path, "tpm2_load", "-C", "p.ctx", "-u", "k.pub", "-r", "k.priv", "-c", "k.ctx")
    (tmp_path / "msg").write_bytes(b"hello")
    script = ("ok=0; for i in $(seq 10); do tpm2_sign -c k.ctx -g sha256 -o sig$$ msg && ok=$((ok+1)); done; "
              "echo $ok")
    env = dict(os.environ, TPM2TOOLS_TCTI=tcti, TSS2_LOG="all+NONE")
    loops = [subprocess.Popen(["sh", "-c", script], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL) for _ in range(4)]
    counts = [int(p.communicate(timeout=300)[0]) for p in loops]
    assert counts == [10, 10, 10, 10]


def test_spaces_are_private_and_capability_is_filtered(served):
    """Two connections (remote-like: no process to share) each see only their own objects."""
    auth = struct.pack(">IHBH", 0x40000009, 0, 0, 0)  # TPM_RS_PW, empty
    public = bytes.fromhex("0023" "000b" "00030072" "0000" "0006" "0080" "0043" "0010" "0003" "0010" "0000" "0000")
    body = (struct.pack(">II", 0x40000001, len(auth)) + auth + bytes.fromhex("0004" "0000" "0000")
            + struct.pack(">H", len(public)) + public + bytes.fromhex("0000" "00000000"))
    primary = tpm2wire.build_command(0x131, body, tag=0x8002)
    handles_cap = tpm2wire.build_command(0x17A, struct.pack(">III", 1, 0x80000000, 20))
    a, b = served._new_client(("test", 1), None), served._new_client(("test", 2), None)
    rsp, *_ = served.serve_command(a, primary, "raw", time.perf_counter())
    assert wire.response_code(rsp) == 0
    vhandle = struct.unpack_from(">I", rsp, 10)[0]
    assert vhandle == rm.VHANDLE_TOP and not rm.is_extension_handle(vhandle)
    cap_a, *_ = served.serve_command(a, handles_cap, "raw", time.perf_counter())
    cap_b, *_ = served.serve_command(b, handles_cap, "raw", time.perf_counter())
    assert struct.unpack_from(">I", cap_a, 15)[0] == 1 and struct.unpack_from(">I", cap_a, 19)[0] == vhandle
    assert struct.unpack_from(">I", cap_b, 15)[0] == 0
    read_public = tpm2wire.build_command(0x173, struct.pack(">I", vhandle))
    assert wire.response_code(served.serve_command(a, read_public, "raw", time.perf_counter())[0]) == 0
    assert wire.response_code(served.serve_command(b, read_public, "raw", time.perf_counter())[0]) == 0x18B
    # extension handles are never mapped: the command reaches the backend as the client sent it
    assert served.rm is not None
    for code in (0x173, 0x165):  # ReadPublic (handle area), FlushContext (parameter)
        ext = tpm2wire.build_command(code, struct.pack(">I", rm.EXTENSION_FIRST + 1))
        seen: list[bytes] = []
        served.rm.execute(a.space, ext, lambda c: seen.append(c) or wire.error_response(0x18B))
        assert seen == [ext]
    flush = tpm2wire.build_command(0x165, struct.pack(">I", vhandle))
    assert wire.response_code(served.serve_command(a, flush, "raw", time.perf_counter())[0]) == 0
    assert served.loaded_objects() == 0


def test_control_shutdown_refused_then_tpm_still_works(served, tmp_path):
    if shutil.which("swtpm_ioctl") is None:
        pytest.skip("swtpm_ioctl not installed")
    done = subprocess.run(["swtpm_ioctl", "--tcp", f"127.0.0.1:{served.ctrl_port}", "-s"],
                          capture_output=True, timeout=30)
    assert done.returncode != 0 and b"0x9" in done.stderr  # TPM_FAIL from the control channel
    assert any("refused CMD_SHUTDOWN" in line for line in served.log_lines)
    assert len(ok(served.tcti, tmp_path, "tpm2_getrandom", "8")) == 8
    for code in (wire.CMD_STOP, wire.CMD_STORE_VOLATILE):  # fixed-length refusals keep the stream in step
        with socket.create_connection(("127.0.0.1", served.ctrl_port), timeout=10) as s:
            s.sendall(struct.pack(">I", code) + struct.pack(">I", wire.CMD_GET_TPMESTABLISHED))
            assert wire.ctrl_result(s.recv(4)) == wire.TPM_FAIL
            assert wire.ctrl_result(wire_recv(s, 8)) == 0
    assert served.refused_control == 3
    assert len(ok(served.tcti, tmp_path, "tpm2_getrandom", "8")) == 8


def wire_recv(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        assert chunk
        buf += chunk
    return buf


def test_both_tctis_against_one_default_proxy(served, tmp_path):
    for tcti in (served.tcti, served.mssim_tcti, served.tcti):
        assert len(ok(tcti, tmp_path, "tpm2_getrandom", "8")) == 8
    assert {r.framing for r in served.records} == {"raw", "mssim"}
    if shutil.which("swtpm_ioctl"):  # CMD_GET_CAPABILITY (code 1 = TPM_SIGNAL_POWER_ON) is still swtpm's
        done = subprocess.run(["swtpm_ioctl", "--tcp", f"127.0.0.1:{served.ctrl_port}", "-c"],
                              capture_output=True, timeout=30)
        assert done.returncode == 0 and b"capability" in done.stdout, done


def test_mssim_framing_error_answers_in_mssim_framing(served):
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:
        s.sendall(struct.pack(">IBI", wire.MS_SEND_COMMAND, 0, 3) + b"abc")
        reply = s.recv(100)
    assert reply == wire.frame_reply(wire.error_response(0x142), "mssim")


def _serve(*extra: str) -> tuple[subprocess.Popen, int]:
    env = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.Popen([sys.executable, "-m", "trustlab", "serve", "--profile", "nuvoton-npct750-wolftpm",
                             "--port", "0", "--virtual", *extra], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("TPM2TOOLS_TCTI="):
            return proc, int(line.rsplit("port=", 1)[1])
    raise AssertionError(proc.stderr.read() if proc.stderr else "no banner")


def test_sigterm_right_after_start_exits_fast_and_cleans_up():
    for _ in range(3):  # the full 20-of-20 loop is in benchmarks/bench_tpm2.py
        proc, port = _serve()
        assert state_dirs_of(proc.pid)
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        elapsed = time.monotonic() - t
        assert proc.returncode == 0 and elapsed < 2.0 * 3  # generous here; measured in the benchmark
        assert not state_dirs_of(proc.pid)


def test_stale_state_of_dead_owner_is_removed():
    stale = Path(tempfile.mkdtemp(prefix=STATE_PREFIX))
    (stale / OWNER_FILE).write_text("999999999 1 999999998\n")  # no such process
    live = Path(tempfile.mkdtemp(prefix=STATE_PREFIX))
    me = os.getpid()
    from trustlab.serving.peers import start_time as _start_time

    (live / OWNER_FILE).write_text(f"{me} {_start_time(me)} 0\n")
    try:
        proc, _port = _serve()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        assert not stale.exists() and live.exists()
    finally:
        shutil.rmtree(live, ignore_errors=True)
        shutil.rmtree(stale, ignore_errors=True)


def test_state_dir_keeps_nv_across_restarts(tmp_path):
    state = tmp_path / "tpm-state"
    proc, port = _serve("--state", str(state))
    try:
        ok(f"swtpm:port={port}", tmp_path, "tpm2_nvdefine", "-C", "o", "-s", "8", "0x1500077")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    proc, port = _serve("--state", str(state))
    try:
        out = ok(f"swtpm:port={port}", tmp_path, "tpm2_getcap", "handles-nv-index")
        assert b"0x1500077" in out
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    assert state.is_dir() and any(state.iterdir())


def test_non_loopback_host_warns():
    env = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.Popen([sys.executable, "-m", "trustlab", "serve", "--profile", "nuvoton-npct750-wolftpm",
                             "--port", "0", "--virtual", "--host", "0.0.0.0"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    for line in proc.stdout:
        if line.startswith("TPM2TOOLS_TCTI="):
            break
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)
    assert "control port (P+1) has no authentication" in proc.stderr.read()


def test_swtpm_owner_file_names_this_process():
    with Swtpm() as tpm:
        pid, _start, child = (tpm.state_dir / OWNER_FILE).read_text().split()
        assert int(pid) == os.getpid() and int(child) == tpm.proc.pid

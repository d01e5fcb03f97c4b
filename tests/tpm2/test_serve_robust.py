"""A long-running serve is a shared TPM: no client and no byte may take it down for the others.

Power cycles on either control protocol, trace write errors, outputs that
would land in the user's files, floods of control-port garbage, a client that
never reads, SIGTERM with a command in flight - each from the issue's
reproducer, against ``trustlab serve`` (a subprocess) or a ``TimingProxy``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from trustlab.devices.tpm2 import wire as tpm2wire
from trustlab.serving import control, wire
from trustlab.serving.proxy import TimingProxy

from .conftest import make_profile, needs_swtpm

pytestmark = needs_swtpm
SRC = str(Path(__file__).resolve().parents[2] / "src")
GETRANDOM = tpm2wire.build_command(0x17B, b"\x00\x08")


def call(port: int, frame: bytes, timeout: float = 10.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(frame)
        head = s.recv(10, socket.MSG_WAITALL)
        return head + s.recv(struct.unpack(">I", head[2:6])[0] - 10, socket.MSG_WAITALL)


def ctrl(port: int, request: bytes, reply: int = 4) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        return s.recv(reply, socket.MSG_WAITALL)


def serve(*argv: str, cwd: Path | None = None) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.Popen([sys.executable, "-m", "trustlab", "serve", "--port", "0", *argv], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def port_of(proc: subprocess.Popen) -> int:
    for line in proc.stdout:
        if line.startswith("TPM2TOOLS_TCTI="):
            return int(line.strip().rsplit("port=", 1)[1])
        if line.startswith("TCSD_USE_TCP_DEVICE"):
            return int(line.strip().rsplit("=", 1)[1])
    proc.wait(30)
    raise AssertionError(f"serve did not start: {proc.stderr.read()}")


def finish(proc: subprocess.Popen) -> tuple[int, str]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    return proc.returncode, err


def run_serve(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "trustlab", "serve", "--port", "0", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


@contextmanager
def mssim_platform(proxy: TimingProxy) -> Iterator[socket.socket]:
    """A platform-port connection as tcti-mssim opens it: its data connection open and silent, then
    TPM_SIGNAL_POWER_ON (which tells the port's protocol)."""
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10):
        with socket.create_connection(("127.0.0.1", proxy.ctrl_port), timeout=10) as s:
            s.sendall(struct.pack(">I", wire.MS_SIGNAL_POWER_ON))
            assert s.recv(4, socket.MSG_WAITALL) == control.MS_OK
            yield s


@pytest.fixture
def served(swtpm):
    lines: list[str] = []
    with TimingProxy(make_profile("zero", ohc=0.0), swtpm, virtual=True, log=lines.append) as proxy:
        proxy.log_lines = lines
        yield proxy


# ---- 3: a power cycle never leaves the TPM unusable -----------------------------------------------------

def test_any_control_sequence_leaves_a_working_tpm(served) -> None:
    """The issue's 8-byte CMD_INIT, every MS platform signal, CMD_SHUTDOWN/CMD_STOP, in a random order:
    after each one GetRandom works (within 1 s), or the request was refused."""
    swtpm_requests = [wire.ctrl_init(), wire.ctrl_request(wire.CMD_SHUTDOWN), wire.ctrl_request(wire.CMD_STOP),
                      wire.ctrl_request(wire.CMD_SET_LOCALITY, b"\x00"), wire.ctrl_request(wire.CMD_GET_CAPABILITY)]
    rng = random.Random(21)
    steps = [("swtpm", r) for r in swtpm_requests] * 2 + [("mssim", c) for c in range(1, 22)]
    rng.shuffle(steps)
    for kind, what in steps:
        if kind == "swtpm":
            reply = ctrl(served.ctrl_port, what, 8 if what == wire.ctrl_request(wire.CMD_GET_CAPABILITY) else 4)
            refused = wire.ctrl_result(reply) != 0
        else:
            if what in (wire.MS_SESSION_END, wire.MS_STOP):
                continue
            with mssim_platform(served) as s:
                s.sendall(struct.pack(">I", what))
                reply = s.recv(4, socket.MSG_WAITALL)
            refused = reply != control.MS_OK
            assert reply in (control.MS_OK, control.MS_REFUSED)
        started = time.monotonic()
        assert tpm2wire.response_code(call(served.port, GETRANDOM)) == 0, (kind, what, refused)
        assert time.monotonic() - started < 1.0
    assert served.refused_control >= 4


def test_mssim_power_off_is_a_power_cycle_with_startup(served) -> None:
    """TPM_SIGNAL_POWER_OFF then POWER_ON (as tcti-mssim would): the TPM is started, PCR 16 reset."""
    extend = tpm2wire.build_command(0x182, struct.pack(">I", 16) + struct.pack(">I", 9)
                                    + struct.pack(">IHBH", 0x40000009, 0, 0, 0)
                                    + struct.pack(">IH", 1, 0x000B) + b"\x55" * 32, tag=0x8002)
    read16 = tpm2wire.build_command(0x17E, struct.pack(">IHB", 1, 0x000B, 3) + bytes([0, 0, 1]))
    assert tpm2wire.response_code(call(served.port, extend)) == 0
    extended = call(served.port, read16)[-32:]
    assert extended != b"\0" * 32
    with mssim_platform(served) as s:
        for signal_code in (wire.MS_SIGNAL_POWER_OFF, wire.MS_SIGNAL_POWER_ON, wire.MS_SIGNAL_NV_ON):
            s.sendall(struct.pack(">I", signal_code))
            assert s.recv(4, socket.MSG_WAITALL) == control.MS_OK
        s.sendall(struct.pack(">I", wire.MS_SIGNAL_NV_OFF))
        assert s.recv(4, socket.MSG_WAITALL) == control.MS_REFUSED
    assert call(served.port, read16)[-32:] == b"\0" * 32
    assert any("power cycle" in line for line in served.log_lines)


def test_tpm12_control_sequence_leaves_a_working_tpm(tmp_path: Path) -> None:
    from trustlab.serving.tpm12.engine_backend import EngineBackend
    from trustlab.timing.registry import load

    get_random = struct.pack(">HIII", 0x00C1, 14, 0x46, 8)
    profile = load("infineon-2010")
    with TimingProxy(profile, EngineBackend(profile, tmp_path / "s"), virtual=True, control="swtpm") as proxy:
        for request in (wire.ctrl_request(wire.CMD_SHUTDOWN), wire.ctrl_init(), wire.ctrl_request(wire.CMD_STOP),
                        wire.ctrl_init(), wire.ctrl_request(wire.CMD_SHUTDOWN)):
            ctrl(proxy.ctrl_port, request)
            assert struct.unpack(">I", call(proxy.port, get_random)[6:10])[0] == 0


def test_device_backend_refuses_power_cycle(served) -> None:
    """A backend without a control channel cannot be power-cycled: CMD_INIT is refused, not acknowledged."""
    served.backend.ctrl_address, saved = None, served.backend.ctrl_address
    try:
        assert wire.ctrl_result(ctrl(served.ctrl_port, wire.ctrl_init())) == wire.TPM_FAIL
    finally:
        served.backend.ctrl_address = saved


# ---- 4: a trace write error ------------------------------------------------------------------------------

def _small_files() -> None:  # in serve's process: files may not grow past 64 KiB (a full disk, for the trace)
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write then fails with EFBIG instead of killing serve
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))


def test_trace_write_error_turns_tracing_off_and_serving_goes_on(tmp_path: Path) -> None:
    """The trace hits a write error mid-serve (the file may not grow: as on a full disk): one line says tracing is
    off, and serving goes on - no dead port, no traceback."""
    env = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.Popen([sys.executable, "-m", "trustlab", "serve", "--port", "0", "--profile",
                             "nuvoton-npct750-wolftpm", "--virtual", "--trace", str(tmp_path / "t.jsonl")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_small_files)
    try:
        port = port_of(proc)
        for _ in range(400):  # ~ 500 bytes of trace each
            assert tpm2wire.response_code(call(port, GETRANDOM)) == 0
    finally:
        rc, err = finish(proc)
    assert rc == 0 and "Traceback" not in err, err
    said = [line for line in err.splitlines() if "--trace" in line]
    assert len(said) == 1 and "tracing is off, serving goes on" in said[0], err
    assert "stopped after 400 command(s)" in err
    lines = (tmp_path / "t.jsonl").read_text().splitlines(keepends=True)
    assert lines and all(line.endswith("\n") and json.loads(line)["v"] for line in lines)  # no half line at the end


def test_trace_to_a_device_is_refused_in_one_line() -> None:
    done = run_serve("--profile", "nuvoton-npct750-wolftpm", "--virtual", "--trace", "/dev/full")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "--trace /dev/full" in done.stderr


# ---- 5: outputs never land in the user's files -----------------------------------------------------------

def test_trace_naming_the_profile_is_refused(tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    shutil.copy(Path(SRC) / "trustlab/timing/profiles/tpm2/nuvoton-npct750-wolftpm.toml", profile)
    before = profile.read_bytes()
    done = run_serve("--profile", str(profile), "--trace", str(profile), "--virtual")
    assert done.returncode != 0 and "--trace" in done.stderr and "input" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and profile.read_bytes() == before


@pytest.mark.parametrize("family_profile", ["nuvoton-npct750-wolftpm", "infineon-2010"])
def test_state_in_a_foreign_directory_is_refused_and_nothing_written(tmp_path: Path, family_profile: str) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    done = run_serve("--profile", family_profile, "--state", ".", "--virtual", cwd=tmp_path)
    assert done.returncode != 0 and "--state" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "--force" not in done.stderr  # serve has none to offer
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]


@pytest.mark.parametrize("name", ["tpm2-00.permall", ".trustlab-output", "tpm12-state.json"])
def test_trace_onto_a_state_file_is_refused(tmp_path: Path, name: str) -> None:
    """--trace st/tpm2-00.permall appended JSON to the TPM's NV image; refused before anything is written."""
    (tmp_path / "st").mkdir()
    done = run_serve("--profile", "nuvoton-npct750-wolftpm", "--virtual", "--state", "st", "--trace",
                     f"st/{name}", cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "--trace" in done.stderr and "--state" in done.stderr
    assert os.listdir(tmp_path / "st") == []


@pytest.mark.parametrize("family_profile", ["nuvoton-npct750-wolftpm", "infineon-2010"])
def test_a_second_serve_on_the_same_state_is_refused_in_one_line(tmp_path: Path, family_profile: str) -> None:
    """Two serves on one --state would share swtpm's files (it failed with 'CMD_INIT failed with result 0x9') or
    both write the TPM 1.2 engine's state: the second is refused, naming the first; the first serves on."""
    first = serve("--profile", family_profile, "--virtual", "--state", "st", cwd=tmp_path)
    try:
        port = port_of(first)
        before = sorted(os.listdir(tmp_path / "st"))
        done = run_serve("--profile", family_profile, "--virtual", "--state", "st", cwd=tmp_path)
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and f"pid {first.pid}" in done.stderr, done.stderr
        assert sorted(os.listdir(tmp_path / "st")) == before
        if family_profile == "nuvoton-npct750-wolftpm":
            assert tpm2wire.response_code(call(port, GETRANDOM)) == 0
    finally:
        assert finish(first)[0] == 0
    again = serve("--profile", family_profile, "--virtual", "--state", "st", cwd=tmp_path)  # the lock went with it
    port_of(again)
    assert finish(again)[0] == 0


@pytest.mark.parametrize("where", ["/proc/x", "ro/state"])
def test_state_in_an_unwritable_place_is_one_line(tmp_path: Path, where: str) -> None:
    if where.startswith("ro"):
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only directories")
        (tmp_path / "ro").mkdir(mode=0o555)
    done = run_serve("--profile", "nuvoton-npct750-wolftpm", "--state", where, "--virtual", cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "--state" in done.stderr


def test_state_dir_new_then_reused(tmp_path: Path) -> None:
    """A new directory is claimed (marked) and reused by the next serve; an older unmarked state dir too."""
    for _ in range(2):
        proc = serve("--profile", "nuvoton-npct750-wolftpm", "--virtual", "--state", "st", cwd=tmp_path)
        port_of(proc)
        rc, err = finish(proc)
        assert rc == 0, err
    assert (tmp_path / "st" / "tpm2-00.permall").exists() and (tmp_path / "st" / ".trustlab-output").exists()
    (tmp_path / "st" / ".trustlab-output").unlink()  # as an earlier serve left it
    proc = serve("--profile", "nuvoton-npct750-wolftpm", "--virtual", "--state", "st", cwd=tmp_path)
    port_of(proc)
    assert finish(proc)[0] == 0


# ---- 6: logs and slow readers ------------------------------------------------------------------------------

def test_control_port_garbage_is_summarised(served) -> None:
    rng = random.Random(6)
    for _ in range(40):  # 40 connections of garbage (each closed after its first unknown request)
        with socket.create_connection(("127.0.0.1", served.ctrl_port), timeout=10) as s:
            s.sendall(bytes([0, 0, 0, rng.randrange(100, 250)]) + rng.randbytes(26_000))
            s.recv(64)
    served.stop()
    refused = [line for line in served.log_lines if line.startswith("refused")]
    assert served.refused_control >= 40 and len(refused) <= 5
    assert any("more like the above" in line for line in served.log_lines)


def test_a_client_that_never_reads_delays_nobody(served) -> None:
    """A client floods commands and reads nothing; another's GetRandom is answered within 0.2 s."""
    hog = socket.create_connection(("127.0.0.1", served.port), timeout=10)
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    big = tpm2wire.build_command(0x17B, b"\x00\x30")  # 48 random bytes per answer
    hog.setblocking(False)
    try:
        for _ in range(20_000):
            try:
                hog.send(big)
            except BlockingIOError:
                break
        time.sleep(0.3)  # the loop answers until the hog's buffers are full
        worst = 0.0
        for _ in range(5):
            started = time.monotonic()
            assert tpm2wire.response_code(call(served.port, GETRANDOM)) == 0
            worst = max(worst, time.monotonic() - started)
        assert worst < 0.2, worst
    finally:
        hog.close()


# ---- 7: SIGTERM with a command in flight -----------------------------------------------------------------

def test_sigterm_answers_the_command_in_flight(tmp_path: Path) -> None:
    profile = tmp_path / "slow.toml"
    profile.write_text('name = "slow"\nfamily = "tpm2"\n[provenance]\nsource = "test"\n[components.ohc]\n'
                       'mean = 1500.0\nunit = "call"\nsource = "test"\n')
    proc = serve("--profile", str(profile), "--no-rt-priority")
    try:
        port = port_of(proc)
        with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
            s.sendall(GETRANDOM)
            time.sleep(0.3)  # the response is held for 1.5 s
            proc.send_signal(signal.SIGTERM)
            head = s.recv(10, socket.MSG_WAITALL)
            assert len(head) == 10 and tpm2wire.response_code(head) == 0
    finally:
        rc, err = finish(proc)
    assert rc == 0, err


def test_a_failed_serving_loop_leaves_no_dead_open_port(served) -> None:
    """Should the loop ever fail, its ports close (a client is refused, not left hanging) and serve knows why."""
    def boom(now: float) -> float:
        raise RuntimeError("injected")

    served._front._timeout = boom
    try:
        with socket.create_connection(("127.0.0.1", served.port), timeout=5):
            pass  # wakes the loop
    except ConnectionRefusedError:
        pass  # (on a loaded host its own reap timer woke it first: the ports are closed already)
    deadline = time.monotonic() + 5
    while served.serving and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not served.serving and "injected" in (served.failure or "")
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", served.port), timeout=2).close()
    assert any("serving loop failed" in line for line in served.log_lines)


def test_state_dir_is_removed_when_startup_fails(tmp_path: Path) -> None:
    """The port is taken: serve fails after it claimed a new --state directory, which it removes again."""
    from trustlab.serving.swtpm import free_port_pair

    with socket.socket() as a, socket.socket() as b:
        port = free_port_pair()
        a.bind(("127.0.0.1", port))
        b.bind(("127.0.0.1", port + 1))
        a.listen()
        b.listen()
        env = dict(os.environ, PYTHONPATH=SRC)
        done = subprocess.run([sys.executable, "-m", "trustlab", "serve", "--port", str(port), "--profile",
                               "nuvoton-npct750-wolftpm", "--virtual", "--state", "new"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "new").exists()


# ---- the swtpm serve owns dies: serve stops, never a dead TPM behind open ports --------------------------

def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (every thread's /proc children list: psutil is not a dependency)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass  # a thread that ended meanwhile
    return found


def test_owned_swtpm_killed_stops_serve_with_one_clear_line() -> None:
    """kill -9 the swtpm serve started: a command gets an error answer (or a closed connection), serve exits
    non-zero within seconds with one stderr line naming the swtpm, its pid and the signal, and both ports close
    (it never restarts the swtpm silently: the TPM's volatile state would be lost behind the client's back)."""
    proc = serve("--profile", "sealsq-qvault-pqc-tpm-wolftpm", "--virtual")
    try:
        port = port_of(proc)
        assert tpm2wire.response_code(call(port, GETRANDOM)) == 0
        [child] = _children(proc.pid)
        assert Path(f"/proc/{child}/comm").read_text().strip() == "swtpm"
        os.kill(child, signal.SIGKILL)
        try:
            assert tpm2wire.response_code(call(port, GETRANDOM, timeout=5)) != 0
        except OSError:
            pass  # serve noticed first: refused or closed, never a hang
        proc.wait(timeout=10)
    finally:
        rc, err = finish(proc)
    assert rc != 0, err
    lines = [line for line in err.splitlines() if f"pid {child}" in line]
    assert len(lines) == 1 and "swtpm" in lines[0] and "signal 9" in lines[0] and "stopping" in lines[0], err
    assert "until it answers again" not in err and "Traceback" not in err, err
    for p in (port, port + 1):
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", p), timeout=2).close()


def test_external_backend_that_dies_keeps_serve_up() -> None:
    """A TPM serve does not own (``--backend tcp:``) may come back: while it is down, commands get
    TPM_RC_FAILURE, the outage is said once, and serve keeps its ports until SIGTERM (exit 0)."""
    from trustlab.devices.tpm2.commands import TPM_RC_FAILURE
    from trustlab.serving.swtpm import Swtpm

    tpm = Swtpm().start()
    try:
        proc = serve("--profile", "sealsq-qvault-pqc-tpm-wolftpm", "--virtual", "--backend",
                     f"tcp:127.0.0.1:{tpm.port}")
        try:
            port = port_of(proc)
            assert tpm2wire.response_code(call(port, GETRANDOM)) == 0
            assert tpm.proc is not None
            tpm.proc.kill()
            tpm.proc.wait(5)
            assert tpm2wire.response_code(call(port, GETRANDOM)) == TPM_RC_FAILURE
            time.sleep(0.5)
            assert proc.poll() is None
            assert tpm2wire.response_code(call(port, GETRANDOM)) == TPM_RC_FAILURE
        finally:
            rc, err = finish(proc)
    finally:
        tpm.stop()
    assert rc == 0, err
    assert err.count("until it answers again") == 1, err


def _serve_and_stop(*argv: str, cwd: Path) -> tuple[int, str]:
    """Start a TPM 1.2 serve (no swtpm needed), wait for its banner, stop it: (exit code, stderr)."""
    env = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.Popen([sys.executable, "-m", "trustlab", "serve", "--port", "0", "--profile", "infineon-2010",
                             "--virtual", *argv], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("trustlab serve:")
    finally:
        rc, err = finish(proc)
    return rc, err


def _earlier_trace() -> str:
    from trustlab.serving.trace import TraceRecord, trace_line

    return trace_line(TraceRecord(seq=1, command="TPM_GetRandom", code="0x46", variant=None, framing="tpm12",
                                  in_bytes=14, out_bytes=22, rc=0, modelled_ms=1.5, backend_ms=0.1, held_ms=1.4,
                                  unmodelled=False))


EARLIER_TRACE = _earlier_trace()


def test_trace_onto_a_file_that_is_not_a_trace_is_refused_unless_forced(tmp_path: Path) -> None:
    """--trace notes.md appended JSON lines to the user's notes (D4): a file that is neither empty nor an earlier
    trace (first line a trace record) is refused in one line and left alone; --force replaces it; an earlier
    trace or an empty file is appended to; --force without --trace has no effect and is refused."""
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\n{\"seq\": 1}\n")
    done = run_serve("--profile", "infineon-2010", "--virtual", "--trace", "notes.md", cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "--trace notes.md: exists and is not an earlier trace" in done.stderr and "--force" in done.stderr
    assert notes.read_text() == "# my notes\n{\"seq\": 1}\n"
    done = run_serve("--profile", "infineon-2010", "--virtual", "--force", cwd=tmp_path)
    assert done.returncode == 2 and "--force: applies only with --trace" in done.stderr, done.stderr
    rc, err = _serve_and_stop("--trace", "notes.md", "--force", cwd=tmp_path)
    assert rc == 0 and "Traceback" not in err, err
    assert notes.read_text() == ""  # replaced (no command was served)
    trace = tmp_path / "t.jsonl"
    trace.write_text(EARLIER_TRACE)
    rc, err = _serve_and_stop("--trace", "t.jsonl", cwd=tmp_path)
    assert rc == 0 and trace.read_text() == EARLIER_TRACE, err  # an earlier trace: appended to, never replaced


def test_trace_through_a_symbolic_link_is_refused_and_forced_replaces_the_link(tmp_path: Path) -> None:
    """--trace sl.jsonl --force wrote through the link into its target (evaluator): a link, dangling or not, is
    refused in one line; --force replaces the link itself and never writes its target."""
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    link = tmp_path / "sl.jsonl"
    link.symlink_to("precious.txt")
    dangling = tmp_path / "dl.jsonl"
    dangling.symlink_to("nowhere.txt")
    for name in ("sl.jsonl", "dl.jsonl"):
        done = run_serve("--profile", "infineon-2010", "--virtual", "--trace", name, cwd=tmp_path)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert f"--trace {name}: is a symbolic link" in done.stderr
    assert not (tmp_path / "nowhere.txt").exists() and precious.read_text() == "keep me\n"
    rc, err = _serve_and_stop("--trace", "sl.jsonl", "--force", cwd=tmp_path)
    assert rc == 0 and "Traceback" not in err, err
    assert precious.read_text() == "keep me\n" and not link.is_symlink()


def test_appending_to_a_torn_trace_starts_on_a_line_of_its_own(tmp_path: Path) -> None:
    """An earlier trace cut off mid-line (a crash) got the next record glued onto the torn line; the writer now
    ends that line first, so every new record parses."""
    from trustlab.serving.trace import TraceWriter, is_trace_line

    trace = tmp_path / "t.jsonl"
    trace.write_text(EARLIER_TRACE + '{"seq": 9, "comm')
    TraceWriter(trace).close()
    assert trace.read_text() == EARLIER_TRACE + '{"seq": 9, "comm\n'
    TraceWriter(trace).close()  # an ended file is left as it is
    assert trace.read_text().endswith('"comm\n') and is_trace_line(EARLIER_TRACE.splitlines()[0].encode())

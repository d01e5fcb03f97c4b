"""`trustlab serve` for TPM 1.2: the engine behind swtpm's protocol (serving/tpm12/engine_backend.py).

The control channel is compared byte for byte with swtpm running libtpms'
TPM 1.2; the data channel must answer exactly what the in-process engine
answers and charge exactly what it charges.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trustlab.apps.counters import schemes
from trustlab.apps.counters.runner import run as run_scheme
from trustlab.apps.workloads import Request
from trustlab.devices.tpm12 import MemoryNVStore, Tpm12, TpmError
from trustlab.devices.tpm12 import constants as C
from trustlab.serving.tpm12.engine_backend import CAPABILITIES, STATE_FILE, EngineBackend
from trustlab.serving.tpm12.socket_tpm import SocketTpm12, Swtpm12
from trustlab.serving import wire
from trustlab.serving.proxy import TimingProxy
from trustlab.timing.clock import Clock
from trustlab.timing.registry import load

needs_swtpm = pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm is not installed")

GET_RANDOM_8 = struct.pack(">HIII", C.TPM_TAG_RQU_COMMAND, 14, C.ORD["TPM_GetRandom"], 8)


def pcr_read(index: int) -> bytes:
    return struct.pack(">HIII", C.TPM_TAG_RQU_COMMAND, 14, C.ORD["TPM_PCRRead"], index)


def rc_of(response: bytes) -> int:
    return struct.unpack_from(">I", response, 6)[0]


@pytest.fixture
def backend(tmp_path: Path):
    b = EngineBackend(load("infineon-2010"), tmp_path / "state")
    yield b
    b.close()


def ctrl(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request)
        time.sleep(0.05)
        return s.recv(4096)


# The sequence a platform drives; each request with the reply we expect, checked against swtpm.
SEQUENCE = [
    ("set locality 0", wire.ctrl_request(wire.CMD_SET_LOCALITY, b"\x00")),
    ("bad locality", wire.ctrl_request(wire.CMD_SET_LOCALITY, b"\x09")),
    ("established (fresh)", wire.ctrl_request(wire.CMD_GET_TPMESTABLISHED)),
    ("config", wire.ctrl_request(wire.CMD_GET_CONFIG)),
    ("hash start", wire.ctrl_request(wire.CMD_HASH_START)),
    ("hash data", wire.ctrl_request(wire.CMD_HASH_DATA, struct.pack(">I", 3) + b"abc")),
    ("hash end", wire.ctrl_request(wire.CMD_HASH_END)),
    ("established (after DRTM)", wire.ctrl_request(wire.CMD_GET_TPMESTABLISHED)),
    ("reset established at locality 0", wire.ctrl_request(wire.CMD_RESET_TPMESTABLISHED, b"\x00")),
    ("reset established at locality 3", wire.ctrl_request(wire.CMD_RESET_TPMESTABLISHED, b"\x03")),
    ("established (after reset)", wire.ctrl_request(wire.CMD_GET_TPMESTABLISHED)),
    ("unknown code", wire.ctrl_request(99)),
    ("cancel", wire.ctrl_request(wire.CMD_CANCEL_TPM_CMD)),
    ("buffer size query", wire.ctrl_request(wire.CMD_SET_BUFFERSIZE, struct.pack(">I", 0))),
    ("buffer size set while running", wire.ctrl_request(wire.CMD_SET_BUFFERSIZE, struct.pack(">I", 3500))),
    ("init", wire.ctrl_init()),
]


def test_control_replies(backend: EngineBackend) -> None:
    replies = {name: backend.control(struct.unpack(">I", req[:4])[0], req[4:]) for name, req in SEQUENCE}
    assert replies["established (fresh)"] == struct.pack(">IB3x", 0, 0)
    assert replies["bad locality"] == struct.pack(">I", 0x3D)
    assert replies["established (after DRTM)"] == struct.pack(">IB3x", 0, 1)
    assert replies["reset established at locality 0"] == struct.pack(">I", 0x3D)
    assert replies["established (after reset)"] == struct.pack(">IB3x", 0, 0)
    assert replies["unknown code"] == struct.pack(">I", C.RC["TPM_BAD_ORDINAL"])
    assert replies["cancel"] == struct.pack(">I", C.RC["TPM_FAIL"])
    assert replies["buffer size query"] == struct.pack(">IIII", 0, 4096, 3072, 4096)
    assert replies["buffer size set while running"] == struct.pack(">I", C.RC["TPM_BAD_ORDINAL"])
    caps = backend.control(wire.CMD_GET_CAPABILITY, b"")
    assert caps == struct.pack(">Q", CAPABILITIES)


@pytest.mark.swtpm
@needs_swtpm
def test_control_channel_matches_swtpm(tmp_path: Path) -> None:
    """Every reply of the sequence, and the DRTM PCR 17, byte for byte as swtpm (libtpms TPM 1.2) gives them."""
    b = EngineBackend(load("infineon-2010"), tmp_path / "ours")
    try:
        with Swtpm12(state_dir=tmp_path / "libtpms") as sw:
            assert sw.port is not None
            data = SocketTpm12("127.0.0.1", sw.port)
            for name, req in SEQUENCE:
                ours = b.control(struct.unpack(">I", req[:4])[0], req[4:])
                theirs = ctrl(sw.port + 1, req)
                assert ours == theirs, name
                if name == "hash end":
                    assert b.transact(pcr_read(17)) == data.execute(pcr_read(17))
            data.close()
            caps = ctrl(sw.port + 1, wire.ctrl_request(wire.CMD_GET_CAPABILITY))
            assert len(caps) == 8 and int.from_bytes(caps, "big") & CAPABILITIES == CAPABILITIES
    finally:
        b.close()


def test_drtm_extends_pcr17(backend: EngineBackend) -> None:
    for req in (wire.ctrl_request(wire.CMD_HASH_START),
                wire.ctrl_request(wire.CMD_HASH_DATA, struct.pack(">I", 3) + b"abc"),
                wire.ctrl_request(wire.CMD_HASH_END)):
        assert backend.control(struct.unpack(">I", req[:4])[0], req[4:]) == b"\0\0\0\0"
    pcr = backend.transact(pcr_read(17))[10:]
    assert pcr == hashlib.sha1(b"\0" * 20 + hashlib.sha1(b"abc").digest()).digest()


def test_power_cycle(backend: EngineBackend) -> None:
    """SHUTDOWN powers off (data answers TPM_FAIL, control TPM_BAD_ORDINAL); INIT powers on; flags persist."""
    backend.control(wire.CMD_HASH_START, b"")
    backend.control(wire.CMD_HASH_END, b"")
    assert rc_of(backend.transact(GET_RANDOM_8)) == 0
    assert backend.control(wire.CMD_SHUTDOWN, b"") == b"\0\0\0\0"
    assert backend.transact(GET_RANDOM_8) == struct.pack(">HII", 0xC4, 10, C.RC["TPM_FAIL"])
    assert backend.charged() == {}
    assert backend.control(wire.CMD_GET_TPMESTABLISHED, b"") == struct.pack(">I", C.RC["TPM_BAD_ORDINAL"])
    assert backend.control(wire.CMD_INIT, struct.pack(">I", 0)) == b"\0\0\0\0"
    assert rc_of(backend.transact(GET_RANDOM_8)) == 0
    assert backend.control(wire.CMD_GET_TPMESTABLISHED, b"") == struct.pack(">IB3x", 0, 1)  # a permanent flag


def test_charged_is_what_the_engine_charges(backend: EngineBackend) -> None:
    """charged() is the in-process engine's own breakdown for the same command."""
    clock = Clock(load("infineon-2010"))
    inproc = Tpm12(clock, MemoryNVStore(), started=False)
    inproc.TPM_Startup()
    response = backend.transact(pcr_read(0))
    assert response == inproc.execute(pcr_read(0))
    assert backend.charged() == clock.last.breakdown
    assert backend.last_command == "TPM_PCRRead"
    assert sum(backend.charged().values()) > 0


def test_state_persists_in_state_dir(tmp_path: Path) -> None:
    profile = load("infineon-2010")
    first = EngineBackend(profile, tmp_path / "s")
    ek = first.engine.state.ek.public_key().public_numbers()
    first.close()
    assert (tmp_path / "s" / STATE_FILE).exists()
    again = EngineBackend(profile, tmp_path / "s")
    assert again.engine.state.ek.public_key().public_numbers() == ek
    again.close()
    temporary = EngineBackend(profile)
    where = temporary.state_dir
    assert where is not None and where.exists()
    temporary.close()
    assert not where.exists()


def test_proxy_serves_and_holds(tmp_path: Path) -> None:
    """Over TCP: the proxy's ledger equals the engine's, the trace has one line per command."""
    profile = load("infineon-2010")
    trace = tmp_path / "trace.jsonl"
    with TimingProxy(profile, EngineBackend(profile, tmp_path / "s"), virtual=True, trace=str(trace),
                     control="swtpm") as proxy:
        remote = SocketTpm12("127.0.0.1", proxy.port)
        assert rc_of(remote.execute(GET_RANDOM_8)) == 0
        assert rc_of(remote.execute(pcr_read(99))) == C.RC["TPM_BADINDEX"]
        remote.close()
        engine_ms = proxy.backend.clock.by_command["TPM_PCRRead"] + proxy.backend.clock.by_command["TPM_GetRandom"]
        assert proxy.clock.now_ms == pytest.approx(engine_ms)
        assert ctrl(proxy.ctrl_port, wire.ctrl_request(wire.CMD_GET_TPMESTABLISHED)) == struct.pack(">IB3x", 0, 0)
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    assert [x["command"] for x in lines] == ["TPM_GetRandom", "TPM_PCRRead"]
    assert lines[1]["rc"] == C.RC["TPM_BADINDEX"] and lines[0]["modelled_ms"] > 0


def test_power_cycle_through_the_proxy(tmp_path: Path) -> None:
    """The control port reaches the backend (the DRTM sequence too: the backend's extra_control); CMD_SHUTDOWN is
    refused as for TPM 2.0 (a shared TPM is never left off); CMD_INIT is a power cycle with the BIOS's Startup."""
    profile = load("infineon-2010")
    with TimingProxy(profile, EngineBackend(profile, tmp_path / "s"), virtual=True, control="swtpm") as proxy:
        remote = SocketTpm12("127.0.0.1", proxy.port)
        for request in (wire.ctrl_request(wire.CMD_HASH_START),
                        wire.ctrl_request(wire.CMD_HASH_DATA, struct.pack(">I", 3) + b"abc"),
                        wire.ctrl_request(wire.CMD_HASH_END)):
            assert ctrl(proxy.ctrl_port, request) == b"\0\0\0\0"
        assert ctrl(proxy.ctrl_port, wire.ctrl_request(wire.CMD_GET_TPMESTABLISHED)) == struct.pack(">IB3x", 0, 1)
        assert ctrl(proxy.ctrl_port, wire.ctrl_request(wire.CMD_SHUTDOWN)) == struct.pack(">I", wire.TPM_FAIL)
        assert rc_of(remote.execute(GET_RANDOM_8)) == 0
        assert ctrl(proxy.ctrl_port, wire.ctrl_init()) == b"\0\0\0\0"
        assert rc_of(remote.execute(GET_RANDOM_8)) == 0  # powered up and started (ST_CLEAR) at once
        assert proxy.refused_control == 1
        proxy.reset()  # the proxy's own power cycle: CMD_INIT + TPM_Startup(ST_CLEAR) (already started: fine)
        assert rc_of(remote.execute(GET_RANDOM_8)) == 0
        remote.close()


def test_proxy_rejects_oversized_frame(tmp_path: Path) -> None:
    profile = load("infineon-2010")
    with TimingProxy(profile, EngineBackend(profile, tmp_path / "s"), virtual=True, control="swtpm") as proxy:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as s:
            s.sendall(struct.pack(">HII", 0xC1, 1 << 20, 0x46))
            assert rc_of(s.recv(64)) == C.RC["TPM_BAD_PARAM_SIZE"]
        remote = SocketTpm12("127.0.0.1", proxy.port)  # the server survives
        assert rc_of(remote.execute(GET_RANDOM_8)) == 0
        remote.close()


def test_serve_cli_tpm12(tmp_path: Path) -> None:
    """`trustlab serve --profile infineon-2010` answers TPM 1.2 frames and keeps --state."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    state = tmp_path / "state"
    proc = subprocess.Popen([sys.executable, "-m", "trustlab", "serve", "--profile", "infineon-2010", "--port", "0",
                             "--virtual", "--state", str(state)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        banner = proc.stdout.readline()
        assert "infineon-2010 (virtual)" in banner, banner + proc.stderr.read()
        port = int(banner.split(" on 127.0.0.1:")[1].split()[0])
        assert proc.stdout.readline().startswith("TCSD_USE_TCP_DEVICE=1")
        remote = SocketTpm12("127.0.0.1", port)
        assert rc_of(remote.execute(GET_RANDOM_8)) == 0
        remote.close()
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=20)
    assert "stopped after 1 command(s)" in err
    assert (state / STATE_FILE).exists()


def test_serve_cli_rejects_backend_for_tpm12() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run([sys.executable, "-m", "trustlab", "serve", "--profile", "infineon-2010", "--backend",
                           "device:/dev/tpm0"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode != 0 and "--backend" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("scheme", ["log", "hashtree"])
def test_counters_over_the_wire_time_as_in_process(scheme: str) -> None:
    """`run counters --tpm12 served`: the same modelled time per operation as the in-process engine."""
    profile = load("infineon-counters-2010").without_spread()
    requests = [Request(i % 3, op) for i, op in enumerate(["increment"] * 4 + ["read"] * 2)]
    times = {}
    for mode in ("inproc", "served"):
        built = schemes.build(scheme, profile, 3, seed=1, tpm12=mode)
        try:
            times[mode] = [r.ms for r in run_scheme(built, requests, seed=1)]
        finally:
            built.close()
    assert times["served"] == pytest.approx(times["inproc"], rel=1e-12)


def test_run_counters_records_where_the_tpm_ran() -> None:
    from trustlab.experiments.registry import run_argv

    argv = ["--scheme", "log", "--profile", "winbond-counters-2010", "--counters", "2", "--requests", "4",
            "--deterministic"]
    inproc = run_argv("counters", argv)
    served = run_argv("counters", argv + ["--tpm12", "served"])
    assert served.params["tpm12"] == "served" and inproc.params["tpm12"] == "inproc"
    (a,), (b,) = inproc.data, served.data
    assert a["tpm12"] == "in-process engine" and b["tpm12"].startswith("served engine")
    assert b["total_s"] == pytest.approx(a["total_s"], rel=1e-12)


def test_tpm12_flag_errors() -> None:
    from trustlab.errors import TrustlabError

    with pytest.raises(TrustlabError, match="TPM_ExecuteHashTree"):
        schemes.build("hashtree", load("infineon-counters-2010"), 2, tpm12="libtpms")
    with pytest.raises(TrustlabError, match="log-tpm2"):
        schemes.build("log-tpm2", load("infineon-slb9672-wolftpm"), 2, tpm12="served")


def _op_times(scheme: str, tpm12: str, requests: list) -> list[float]:
    built = schemes.build(scheme, load("infineon-counters-2010").without_spread(), 3, seed=1, tpm12=tpm12)
    try:
        return [r.ms for r in run_scheme(built, requests, seed=1)]
    finally:
        built.close()


REQUESTS = [Request(i % 3, op) for i, op in enumerate(["increment"] * 4 + ["read"] * 2)]


def test_lockstep_times_are_the_twin_engines(monkeypatch) -> None:
    """The lockstep plumbing of --tpm12 libtpms, with the served engine standing in for libtpms."""
    from trustlab.apps.counters import wire as W

    monkeypatch.setattr(W, "_libtpms", lambda clock: W._served(load("infineon-counters-2010"), clock, 0))
    assert _op_times("log", "libtpms", REQUESTS) == pytest.approx(_op_times("log", "inproc", REQUESTS), rel=1e-12)


@pytest.mark.swtpm
@needs_swtpm
def test_counters_on_libtpms() -> None:
    """`run counters --scheme log --tpm12 libtpms`: the scheme's certificates from libtpms verify."""
    times = _op_times("log", "libtpms", REQUESTS)
    assert times == pytest.approx(_op_times("log", "inproc", REQUESTS), rel=1e-12)



def _startup(kind: int) -> bytes:
    return struct.pack(">HIIH", C.TPM_TAG_RQU_COMMAND, 12, C.ORD["TPM_Startup"], kind)


EXTEND_PCR1 = struct.pack(">HIII", C.TPM_TAG_RQU_COMMAND, 34, C.ORD["TPM_Extend"], 1) + b"\x11" * 20
SAVE_STATE = struct.pack(">HII", C.TPM_TAG_RQU_COMMAND, 10, C.ORD["TPM_SaveState"])


def power_cycle_script(data, control) -> list:
    """TPM_SaveState, CMD_INIT, TPM_Startup(ST_STATE) keeps PCR 1, also with INIT_FLAG_DELETE_VOLATILE (it
    deletes swtpm's CMD_STORE_VOLATILE blob, not the SaveState image); a second ST_STATE fails."""
    out = [rc_of(data(GET_RANDOM_8)), rc_of(data(_startup(C.TPM_ST_CLEAR))), rc_of(data(_startup(C.TPM_ST_CLEAR)))]
    extended = data(EXTEND_PCR1)[10:]
    out += [rc_of(data(SAVE_STATE)), control(wire.ctrl_init())]
    out += [rc_of(data(_startup(C.TPM_ST_STATE))), data(pcr_read(1))[10:] == extended]
    out += [rc_of(data(SAVE_STATE)), control(wire.ctrl_init(1)), rc_of(data(_startup(C.TPM_ST_STATE)))]
    out += [control(wire.ctrl_init()), rc_of(data(_startup(C.TPM_ST_STATE)))]  # the image was used up
    return out


def test_save_state_power_cycle(backend: EngineBackend, tmp_path: Path) -> None:
    """--startup none: the client drives TPM_Startup; ST_STATE resumes after TPM_SaveState and CMD_INIT."""
    b = EngineBackend(load("infineon-2010"), tmp_path / "none", startup="none")
    try:
        ours = power_cycle_script(b.transact, lambda req: b.control(struct.unpack(">I", req[:4])[0], req[4:]))
    finally:
        b.close()
    assert ours[:3] == [C.RC["TPM_INVALID_POSTINIT"], 0, C.RC["TPM_INVALID_POSTINIT"]]
    assert ours[3:7] == [0, b"\0\0\0\0", 0, True]
    assert ours[7:] == [0, b"\0\0\0\0", 0, b"\0\0\0\0", C.RC["TPM_FAILEDSELFTEST"]]
    if shutil.which("swtpm") is not None:  # the same script on libtpms gives the same answers
        with Swtpm12(state_dir=tmp_path / "libtpms", startup=False) as sw:
            assert sw.port is not None
            remote = SocketTpm12("127.0.0.1", sw.port)
            theirs = power_cycle_script(remote.execute, lambda req: ctrl(sw.port + 1, req))
            remote.close()
        assert ours == theirs


def test_storage_failure_answers_tpm_fail() -> None:
    """If the state cannot be saved, the command answers TPM_FAIL and the state stays the last durable one."""
    from types import SimpleNamespace

    class Broken(MemoryNVStore):
        fail = False

        def save(self, data: bytes) -> None:
            if self.fail:
                raise OSError("disk full")
            super().save(data)

    nv = Broken()
    backend = EngineBackend(load("infineon-2010"), nv=nv)
    host = Tpm12(Clock(load("infineon-2010")), engine=SimpleNamespace(execute=backend.transact))
    nv.fail = True
    with pytest.raises(TpmError, match="TPM_FAIL"):
        host.TPM_TakeOwnership(b"\1" * 20, b"\2" * 20)
    assert isinstance(backend.last_error, OSError)
    assert backend.engine.state.owner_auth is None  # nothing half-done
    nv.fail = False
    host.TPM_TakeOwnership(b"\1" * 20, b"\2" * 20)
    assert backend.engine.state.owner_auth == b"\1" * 20
    backend.close()


def test_shutdown_after_save_state_resumes(tmp_path: Path) -> None:
    """The suspend path: TPM_SaveState, CMD_SHUTDOWN (power off), CMD_INIT, TPM_Startup(ST_STATE) keeps PCR 1.

    (swtpm exits on CMD_SHUTDOWN, so this one has no libtpms side.)
    """
    b = EngineBackend(load("infineon-2010"), tmp_path / "s", startup="none")
    try:
        assert rc_of(b.transact(_startup(C.TPM_ST_CLEAR))) == 0
        extended = b.transact(EXTEND_PCR1)[10:]
        assert rc_of(b.transact(SAVE_STATE)) == 0
        assert b.control(wire.CMD_SHUTDOWN, b"") == b"\0\0\0\0" and not b.powered
        assert b.control(wire.CMD_INIT, struct.pack(">I", 0)) == b"\0\0\0\0"
        assert rc_of(b.transact(_startup(C.TPM_ST_STATE))) == 0
        assert b.transact(pcr_read(1))[10:] == extended
    finally:
        b.close()


OIAP_CLIENT = r"""
import socket, struct, sys
port, count = int(sys.argv[1]), int(sys.argv[2])
with socket.create_connection(("127.0.0.1", port)) as s:  # one process, one connection: exits without flushing
    for _ in range(count):
        s.sendall(struct.pack(">HII", 0xC1, 10, 0x0A))
        head = s.recv(10, socket.MSG_WAITALL)
        s.recv(struct.unpack(">I", head[2:6])[0] - 10, socket.MSG_WAITALL)
        assert head[6:10] == bytes(4), head.hex()
"""


def test_an_exited_clients_sessions_are_flushed(tmp_path: Path) -> None:
    """Processes that open TPM_OIAP sessions and exit without TPM_FlushSpecific (a raw client, a tcsd that is
    restarted): serve flushes them when the process is gone; before, the 65th OIAP answered TPM_RESOURCES for
    every client. Another live client's session is never flushed."""
    profile = load("infineon-2010")
    oiap = struct.pack(">HII", C.TPM_TAG_RQU_COMMAND, 10, C.ORD["TPM_OIAP"])
    with TimingProxy(profile, EngineBackend(profile, tmp_path / "s"), virtual=True) as proxy, \
            socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as live:
        live.sendall(oiap)
        kept = live.recv(64)
        assert rc_of(kept) == 0
        for _ in range(3):  # 120 sessions in all: more than the 64 the engine holds
            subprocess.run([sys.executable, "-c", OIAP_CLIENT, str(proxy.port), "40"], check=True, timeout=60)
            deadline = time.monotonic() + 5
            while len(proxy.tpm12_handles) > 1 and time.monotonic() < deadline:  # exits are noticed every 0.5 s
                time.sleep(0.05)
            assert len(proxy.tpm12_handles) == 1
        assert rc_of(proxy.execute(oiap)) == 0
        handle = struct.unpack_from(">I", kept, 10)[0]  # the live client's session still works: flush it itself
        live.sendall(struct.pack(">HIIII", C.TPM_TAG_RQU_COMMAND, 18, C.ORD["TPM_FlushSpecific"], handle, 2))
        assert rc_of(live.recv(64)) == 0


@pytest.mark.parametrize("size", [0, 0xFFFFFFFF, 1, 8192])
def test_set_buffersize_through_the_proxy_stays_the_engines_answer(tmp_path: Path, size: int) -> None:
    """TPM 1.2 serve's CMD_SET_BUFFERSIZE is the engine's answer, unchanged by the TPM 2.0 frame cap (issue 27:
    only a TPM 2.0 profile whose cap exceeds libtpms' buffer reports its own): a query answers swtpm's sizes,
    a set is refused because a served TPM runs, and serving goes on."""
    profile = load("infineon-2010")
    request = wire.ctrl_request(wire.CMD_SET_BUFFERSIZE, struct.pack(">I", size))
    with TimingProxy(profile, EngineBackend(profile, tmp_path / "s"), virtual=True, control="swtpm") as proxy:
        assert ctrl(proxy.ctrl_port, request) == proxy.backend.control(wire.CMD_SET_BUFFERSIZE, request[4:])
        expected = struct.pack(">IIII", 0, 4096, 3072, 4096) if size == 0 else struct.pack(">I", wire.TPM_BAD_ORDINAL)
        assert ctrl(proxy.ctrl_port, request) == expected
        remote = SocketTpm12("127.0.0.1", proxy.port)
        assert rc_of(remote.execute(GET_RANDOM_8)) == 0
        remote.close()


INPUT_BUFFER_CAP = struct.pack(">HIIIII", C.TPM_TAG_RQU_COMMAND, 22, C.ORD["TPM_GetCapability"], 5, 4, 0x124)


def test_set_buffersize_while_off_is_kept() -> None:
    """While the TPM is off a size is taken, clamped to libtpms' [3072, 4096], and still reported after power-up."""
    b = EngineBackend(load("infineon-2010"))
    try:
        b.power_off()
        for wanted, kept in ((3500, 3500), (1, 3072), (0xFFFFFFFF, 4096), (3500, 3500)):
            reply = b.control(wire.CMD_SET_BUFFERSIZE, struct.pack(">I", wanted))
            assert reply == struct.pack(">IIII", 0, kept, 3072, 4096)
        b.power_on()
        assert b.control(wire.CMD_SET_BUFFERSIZE, struct.pack(">I", 0)) == struct.pack(">IIII", 0, 3500, 3072, 4096)
        assert b.control(wire.CMD_SET_BUFFERSIZE, b"") == struct.pack(">I", C.RC["TPM_BAD_PARAMETER"])
    finally:
        b.close()


@pytest.mark.swtpm
@needs_swtpm
def test_set_buffersize_while_off_matches_swtpm(tmp_path: Path) -> None:
    """swtpm stopped (CMD_STOP) takes a size and keeps it across CMD_INIT, yet TPM_CAP_PROP_INPUT_BUFFER stays
    4096 on libtpms: the engine's off / set / power-up gives the same bytes."""
    b = EngineBackend(load("infineon-2010"), tmp_path / "ours")
    try:
        with Swtpm12(state_dir=tmp_path / "libtpms") as sw:
            assert sw.port is not None
            theirs = [ctrl(sw.port + 1, wire.ctrl_request(wire.CMD_STOP))]
            b.power_off()
            ours = [struct.pack(">I", 0)]
            for size in (3500, 0):
                request = wire.ctrl_request(wire.CMD_SET_BUFFERSIZE, struct.pack(">I", size))
                theirs.append(ctrl(sw.port + 1, request))
                ours.append(b.control(wire.CMD_SET_BUFFERSIZE, request[4:]))
            theirs.append(ctrl(sw.port + 1, wire.ctrl_init()))
            ours.append(b.control(wire.CMD_INIT, wire.ctrl_init()[4:]))
            data = SocketTpm12("127.0.0.1", sw.port)
            data.execute(struct.pack(">HIIH", C.TPM_TAG_RQU_COMMAND, 12, C.ORD["TPM_Startup"], C.TPM_ST_CLEAR))
            theirs.append(data.execute(INPUT_BUFFER_CAP))
            data.close()
            ours.append(b.transact(INPUT_BUFFER_CAP))
            assert ours == theirs
    finally:
        b.close()


@pytest.mark.swtpm
@needs_swtpm
def test_drtm_before_startup_matches_swtpm(tmp_path: Path) -> None:
    """Between _TPM_Init (CMD_INIT) and TPM_Startup libtpms refuses CMD_HASH_START (TPM_INVALID_POSTINIT);
    after Startup it is taken: the engine with --startup none answers the same bytes."""
    startup = struct.pack(">HIIH", C.TPM_TAG_RQU_COMMAND, 12, C.ORD["TPM_Startup"], C.TPM_ST_CLEAR)
    b = EngineBackend(load("infineon-2010"), tmp_path / "ours", startup="none")
    try:
        with Swtpm12(state_dir=tmp_path / "libtpms") as sw:
            assert sw.port is not None
            theirs = [ctrl(sw.port + 1, wire.ctrl_init()), ctrl(sw.port + 1, wire.ctrl_request(wire.CMD_HASH_START))]
            data = SocketTpm12("127.0.0.1", sw.port)
            data.execute(startup)
            data.close()
            theirs.append(ctrl(sw.port + 1, wire.ctrl_request(wire.CMD_HASH_START)))
            ours = [b.control(wire.CMD_INIT, wire.ctrl_init()[4:]), b.control(wire.CMD_HASH_START, b"")]
            b.transact(startup)
            ours.append(b.control(wire.CMD_HASH_START, b""))
            assert ours == theirs == [struct.pack(">I", 0), struct.pack(">I", C.RC["TPM_INVALID_POSTINIT"]),
                                      struct.pack(">I", 0)]
    finally:
        b.close()


def test_served_capabilities_leave_out_what_serve_refuses(tmp_path: Path) -> None:
    """Through serve, CMD_GET_CAPABILITY no longer advertises CMD_SHUTDOWN (refused: a shared TPM is never left
    off); every advertised code is one serve lets through."""
    from trustlab.serving import control
    profile = load("infineon-2010")
    with TimingProxy(profile, EngineBackend(profile, tmp_path / "s"), virtual=True, control="swtpm") as proxy:
        caps = int.from_bytes(ctrl(proxy.ctrl_port, wire.ctrl_request(wire.CMD_GET_CAPABILITY)), "big")
    assert caps == CAPABILITIES & ~control.PTM_CAP_BITS[wire.CMD_SHUTDOWN]
    allowed = wire.ALLOWED_CONTROL | EngineBackend.extra_control
    assert all(code in allowed for code, bit in control.PTM_CAP_BITS.items() if caps & bit)

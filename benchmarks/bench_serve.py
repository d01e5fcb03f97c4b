"""Serving overhead: CPU per command that ``trustlab serve`` adds on top of its backend, both generations.

Measured in one run, side by side on one machine, with a raw socket loop (one
persistent connection, one command at a time, as a TSS sends them):

* **TPM 2.0** - the bare backend is a swtpm process driven directly on its
  data port; served is ``trustlab serve --virtual`` (which starts its own
  swtpm). CPU = the server side's CPU time (swtpm alone; serve's process plus
  its swtpm) from ``/proc/PID/task/*/schedstat`` (nanoseconds), divided by the
  number of commands. The client's own CPU is not counted on either side.
* **TPM 1.2** - the bare backend is trustlab's engine (``EngineBackend``)
  called in-process on the same frames (thread CPU time); served is
  ``trustlab serve --virtual`` with a TPM 1.2 profile.

Commands without RSA: GetRandom(8), a PCR read, a GetCapability. Rounds
alternate bare and served; each figure is the median over rounds. Figures:
``tpm2_bare_us`` / ``tpm2_served_us`` / ``tpm2_overhead_us`` per command (the
three interleaved), the same for ``tpm12_``, and ``target_us`` (25: issue 21).
``tpm2_by_command`` / ``tpm12_by_command``: bare, served and overhead for each
command class alone (a loop of that one frame, in the same rounds). ``tpm2_client_side_us``:
the raw client's own CPU for the bare loop - what reaching swtpm over its socket
costs any client, and so also the proxy, which is swtpm's client.
``tpm2_relay``: what serve's relay transport costs, in the same rounds: serve relaying to its swtpm over
a unix socket (its default, ``served_unix_relay_us`` = ``tpm2_served_us``) beside a serve relaying over TCP
loopback (``--backend tcp:`` to a swtpm started here; that swtpm's CPU counted), and the bare swtpm on
both transports (``bare_tcp_us`` = ``tpm2_bare_us``, the swtpm a user runs; ``bare_unix_us``).
``host_load_1min``: CPU time per command grows with the host's load (cache and
scheduler effects), so compare figures from one run only. Interference only
ever adds CPU time, so ``*_overhead_min_us`` (the least disturbed round of
each side) is reported beside the medians; ``within_target`` judges the
medians.
"""

from __future__ import annotations

import os
import socket
import statistics
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

from trustlab.devices.tpm2 import wire as tpm2wire
from trustlab.serving.swtpm import Swtpm, recv_exact

SRC = str(Path(__file__).resolve().parents[1] / "src")
TARGET_US = 25.0
CLASSES = ("GetRandom", "PCR_Read", "GetCapability")
"""The command classes of both lists, in their order."""
TPM2_COMMANDS = [
    tpm2wire.build_command(0x17B, b"\x00\x08"),                                             # GetRandom(8)
    tpm2wire.build_command(0x17E, struct.pack(">IHB", 1, 0x000B, 3) + b"\x01\x00\x00"),     # PCR_Read(sha256: 0)
    tpm2wire.build_command(0x17A, struct.pack(">III", 6, 0x100, 1)),                        # GetCapability(fixed)
]
TPM12_COMMANDS = [
    struct.pack(">HIII", 0x00C1, 14, 0x46, 8),                                              # TPM_GetRandom(8)
    struct.pack(">HIII", 0x00C1, 14, 0x15, 0),                                              # TPM_PCRRead(0)
    struct.pack(">HIIIII", 0x00C1, 22, 0x65, 5, 4, 0x101),                                  # GetCapability(PCRs)
]


def cpu_ns(pid: int, children: bool = False) -> int:
    """CPU time (ns) of every thread of ``pid`` (and of its child processes)."""
    total = 0
    pids = [pid]
    if children:
        try:
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            pids += [int(k) for k in kids]
        except OSError:
            pass
    for p in pids:
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                total += int(Path(f"/proc/{p}/task/{t}/schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return total


def _loop(sock: socket.socket, frames: list[bytes], n: int) -> None:
    for i in range(n):
        sock.sendall(frames[i % len(frames)])
        head = recv_exact(sock, 10)
        recv_exact(sock, struct.unpack(">I", head[2:6])[0] - 10)


def _served_round(proc: subprocess.Popen, port: int, frames: list[bytes], n: int,
                  backend_pid: int | None = None) -> float:
    """CPU per command of serve and its swtpm: its child, or ``backend_pid`` (a swtpm it reaches over TCP)."""
    def spent() -> int:
        return cpu_ns(proc.pid, children=True) + (cpu_ns(backend_pid) if backend_pid else 0)

    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _loop(sock, frames, 200)  # warm
        before = spent()
        _loop(sock, frames, n)
        return (spent() - before) / n / 1000.0


def _bare_round(tpm: Swtpm, frames: list[bytes], n: int) -> float:
    assert tpm.proc is not None
    with tpm.connect_data() as sock:
        _loop(sock, frames, 200)
        before = cpu_ns(tpm.proc.pid)
        _loop(sock, frames, n)
        return (cpu_ns(tpm.proc.pid) - before) / n / 1000.0


def _start_serve(profile: str, *extra: str) -> tuple[subprocess.Popen, int]:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "trustlab", "serve", "--profile", profile, "--virtual",
                             "--port", "0", *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("TPM2TOOLS_TCTI=") or line.startswith("TCSD_USE_TCP_DEVICE"):
            return proc, int(line.strip().replace(",", "=").rsplit("=", 1)[1])
    raise RuntimeError("serve did not start")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()


def tpm2(n: int, rounds: int) -> dict[str, Any]:
    import time

    bare, served, client, bare_unix, served_tcp = [], [], [], [], []
    by_class: dict[str, tuple[list[float], list[float]]] = {c: ([], []) for c in CLASSES}
    proc, port = _start_serve("nuvoton-npct750-wolftpm")
    relay_tpm, tcp_proc = Swtpm(), None  # a serve relaying over TCP (--backend tcp:), as before fbd12a0
    try:
        relay_tpm.start()
        assert relay_tpm.proc is not None and relay_tpm.port is not None
        tcp_proc, tcp_port = _start_serve("nuvoton-npct750-wolftpm", "--backend",
                                          f"tcp:127.0.0.1:{relay_tpm.port}")
        with Swtpm() as tpm, Swtpm(unix=True) as tpm_unix:
            assert tpm.proc is not None
            for _ in range(rounds):
                bare_unix.append(_bare_round(tpm_unix, TPM2_COMMANDS, n))
                with tpm.connect_data() as sock:
                    _loop(sock, TPM2_COMMANDS, 200)
                    before, mine = cpu_ns(tpm.proc.pid), time.thread_time_ns()
                    _loop(sock, TPM2_COMMANDS, n)
                    bare.append((cpu_ns(tpm.proc.pid) - before) / n / 1000.0)
                    client.append((time.thread_time_ns() - mine) / n / 1000.0)
                    for name, frame in zip(CLASSES, TPM2_COMMANDS):
                        before = cpu_ns(tpm.proc.pid)
                        _loop(sock, [frame], n)
                        by_class[name][0].append((cpu_ns(tpm.proc.pid) - before) / n / 1000.0)
                served.append(_served_round(proc, port, TPM2_COMMANDS, n))
                served_tcp.append(_served_round(tcp_proc, tcp_port, TPM2_COMMANDS, n, relay_tpm.proc.pid))
                for name, frame in zip(CLASSES, TPM2_COMMANDS):
                    by_class[name][1].append(_served_round(proc, port, [frame], n))
    finally:
        _stop(proc)
        if tcp_proc is not None:
            _stop(tcp_proc)
        relay_tpm.stop()
    figures = _figures("tpm2", bare, served)
    figures["tpm2_by_command"] = _by_command(by_class)
    # serve's relay to its swtpm: unix socket (its default) against TCP loopback, and the bare swtpm on
    # the same two transports, all in the same rounds (what the unix socket buys, both ends counted)
    figures["tpm2_relay"] = {
        "bare_tcp_us": round(statistics.median(bare), 1), "bare_unix_us": round(statistics.median(bare_unix), 1),
        "served_unix_relay_us": round(statistics.median(served), 1),
        "served_tcp_relay_us": round(statistics.median(served_tcp), 1),
        "overhead_unix_relay_us": round(statistics.median(served) - statistics.median(bare), 1),
        "overhead_tcp_relay_us": round(statistics.median(served_tcp) - statistics.median(bare), 1),
        "overhead_unix_relay_min_us": round(min(served) - min(bare), 1),
        "overhead_tcp_relay_min_us": round(min(served_tcp) - min(bare), 1),
        "overhead_over_bare_unix_us": round(statistics.median(served) - statistics.median(bare_unix), 1),
        "rounds_served_tcp_relay_us": [round(x, 1) for x in served_tcp],
        "rounds_bare_unix_us": [round(x, 1) for x in bare_unix]}
    # what any client of swtpm pays on its own side for the same loop (a relay pays it too, towards swtpm)
    figures["tpm2_client_side_us"] = round(statistics.median(client), 1)
    return figures


def tpm12(n: int, rounds: int) -> dict[str, Any]:
    import time

    from trustlab.serving.tpm12.engine_backend import EngineBackend
    from trustlab.timing.registry import load

    profile = load("infineon-2010")
    backend = EngineBackend(profile)
    bare, served = [], []
    by_class: dict[str, tuple[list[float], list[float]]] = {c: ([], []) for c in CLASSES}
    proc, port = _start_serve("infineon-2010")
    try:
        for _ in range(rounds):
            for i in range(200):
                backend.transact(TPM12_COMMANDS[i % 3])
            before = time.thread_time_ns()
            for i in range(n):
                backend.transact(TPM12_COMMANDS[i % 3])
            bare.append((time.thread_time_ns() - before) / n / 1000.0)
            for name, frame in zip(CLASSES, TPM12_COMMANDS):
                before = time.thread_time_ns()
                for _i in range(n):
                    backend.transact(frame)
                by_class[name][0].append((time.thread_time_ns() - before) / n / 1000.0)
            served.append(_served_round(proc, port, TPM12_COMMANDS, n))
            for name, frame in zip(CLASSES, TPM12_COMMANDS):
                by_class[name][1].append(_served_round(proc, port, [frame], n))
    finally:
        _stop(proc)
        backend.close()
    figures = _figures("tpm12", bare, served)
    figures["tpm12_by_command"] = _by_command(by_class)
    return figures


def _figures(prefix: str, bare: list[float], served: list[float]) -> dict[str, Any]:
    b, s = statistics.median(bare), statistics.median(served)
    return {f"{prefix}_bare_us": round(b, 1), f"{prefix}_served_us": round(s, 1),
            f"{prefix}_overhead_us": round(s - b, 1), f"{prefix}_overhead_min_us": round(min(served) - min(bare), 1), f"{prefix}_rounds_bare_us": [round(x, 1) for x in bare],
            f"{prefix}_rounds_served_us": [round(x, 1) for x in served]}


def _by_command(by_class: dict[str, tuple[list[float], list[float]]]) -> dict[str, dict[str, float]]:
    """Median bare / served / overhead (µs) for each command class looped alone, and the least disturbed
    overhead."""
    out = {}
    for name, (bare, served) in by_class.items():
        b, s = statistics.median(bare), statistics.median(served)
        out[name] = {"bare_us": round(b, 1), "served_us": round(s, 1), "overhead_us": round(s - b, 1),
                     "overhead_min_us": round(min(served) - min(bare), 1)}
    return out


def run(quick: bool = False) -> dict[str, Any]:
    n, rounds = (1000, 3) if quick else (5000, 5)
    figures: dict[str, Any] = {"target_us": TARGET_US, "commands_per_round": n}
    figures.update(tpm2(n, rounds))
    figures.update(tpm12(n, rounds))
    figures["within_target"] = bool(figures["tpm2_overhead_us"] <= TARGET_US
                                    and figures["tpm12_overhead_us"] <= TARGET_US)
    try:
        figures["host_load_1min"] = os.getloadavg()[0]
    except OSError:
        pass
    return figures


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))

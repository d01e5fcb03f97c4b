"""Acceptance with real TPM 1.2 software: TrouSerS tcsd and tpm-tools against `trustlab serve`.

tcsd's TCP device mode (``tcsd -e`` with TCSD_USE_TCP_DEVICE,
TCSD_TCP_DEVICE_HOSTNAME, TCSD_TCP_DEVICE_PORT) speaks swtpm's data protocol.
The same flow runs first against libtpms' TPM 1.2 (``swtpm socket`` without
``--tpm2``), which shows the harness is right, then against the served engine;
both are traced by the proxy, and every command must get the same return code
and the same request and response sizes from both (a differential test through
real TPM software). Each tcsd has its own configuration, system persistent
storage and port.

Run with ``-s`` to see the transcript (command, exit code, wall time).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from trustlab.serving.tpm12.engine_backend import STATE_FILE
from trustlab.serving.tpm12.socket_tpm import Swtpm12
from trustlab.serving.tpm2.backend import SocketBackend
from trustlab.serving.proxy import TimingProxy
from trustlab.timing.registry import load

from . import tss_clients

pytestmark = pytest.mark.swtpm

TCSD = "/usr/sbin/tcsd"
TOOLS = ("tpm_version", "tpm_takeownership", "tpm_getpubek", "tpm_nvdefine", "tpm_nvwrite", "tpm_nvread",
         "tpm_sealdata", "tpm_unsealdata", "tpm_createek")
NV_INDEX = "0x00011101"
SECRET_TEXT = b"trustlab sealed this\n"


def _missing() -> str | None:
    if not os.path.exists(TCSD):
        return f"TrouSerS tcsd not installed at {TCSD} (apt install trousers)"
    lacking = [t for t in TOOLS if shutil.which(t) is None]
    if lacking:
        return f"tpm-tools missing: {', '.join(lacking)} (apt install tpm-tools)"
    if shutil.which("swtpm") is None:
        return "swtpm not installed"
    if os.geteuid() != 0:
        return "tcsd must start as root (it drops to the tss user)"
    return None


@dataclass
class Step:
    command: str
    rc: int
    wall_s: float
    output: str


class Tcsd(tss_clients.Tcsd):
    """tss_clients' tcsd (its own port, config and system.data), with a tool runner that times each tool."""

    def tool(self, *argv: str) -> Step:
        env = {**os.environ, "TSS_TCSD_PORT": str(self.port), "TSS_TCSD_HOSTNAME": "127.0.0.1"}
        started = time.perf_counter()
        done = subprocess.run(list(argv), env=env, cwd=self.dir, capture_output=True, timeout=300,
                              stdin=subprocess.DEVNULL)
        output = (done.stdout + done.stderr).decode(errors="replace")  # tpm_version prints stray bytes
        return Step(" ".join(argv), done.returncode, time.perf_counter() - started, output)


def tools_flow(tcsd: Tcsd, *, create_ek: bool) -> list[Step]:
    """tpm_version, (tpm_createek), takeownership, getpubek, NV define/write/read, seal/unseal; stops at a failure."""
    (tcsd.dir / "in.txt").write_bytes(SECRET_TEXT)
    plan = [("tpm_version",)]
    if create_ek:
        plan.append(("tpm_createek",))
    plan += [
        ("tpm_takeownership", "-y", "-z"),
        ("tpm_getpubek", "-z"),
        ("tpm_nvdefine", "-i", NV_INDEX, "-s", "32", "-p", "OWNERWRITE", "-y", "-z"),
        ("tpm_nvwrite", "-i", NV_INDEX, "-f", "in.txt", "-z"),
        ("tpm_nvread", "-i", NV_INDEX, "-s", str(len(SECRET_TEXT)), "-f", "nv.out"),
        ("tpm_sealdata", "-z", "-i", "in.txt", "-o", "sealed.blob"),
        ("tpm_unsealdata", "-z", "-i", "sealed.blob", "-o", "unsealed.txt"),
    ]
    steps = []
    for argv in plan:
        steps.append(tcsd.tool(*argv))
        if steps[-1].rc != 0:
            break
    return steps


def transcript(steps: list[Step]) -> str:
    return "\n".join(f"{s.wall_s * 1000:9.1f} ms  rc={s.rc}  {s.command}" for s in steps)


def check_flow(steps: list[Step], tcsd: Tcsd) -> None:
    failed = [s for s in steps if s.rc != 0]
    assert not failed, f"{failed[0].command} failed:\n{failed[0].output}\ntcsd log:\n{tcsd.log_text()}"
    assert len(steps) >= 8
    by = {s.command.split()[0]: s for s in steps}
    assert "TPM 1.2 Version Info" in by["tpm_version"].output
    assert "Public Endorsement Key" in by["tpm_getpubek"].output
    assert (tcsd.dir / "nv.out").read_bytes() == SECRET_TEXT
    assert (tcsd.dir / "unsealed.txt").read_bytes() == SECRET_TEXT


serve = tss_clients.serve


@pytest.fixture
def workdir():
    why = _missing()
    if why:
        pytest.skip(why)
    d = Path(tempfile.mkdtemp(prefix="trustlab-tcsd-"))  # not under pytest's 0700 tmp: tcsd runs as tss
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


class Tpm12Relay(SocketBackend):
    """libtpms' TPM 1.2 (a swtpm) behind the proxy, which traces each command's rc and sizes (no timing)."""

    family = "tpm1.2"


def traced(path: Path) -> list[tuple[int, int, int]]:
    """(rc, request bytes, response bytes) of every traced command."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [(r["rc"], r["in_bytes"], r["out_bytes"]) for r in rows]


def libtpms_flow(workdir: Path) -> tuple[list[Step], Tcsd, list[tuple[int, int, int]]]:
    """The flow against libtpms (with tpm_createek first), traced through the proxy."""
    trace = workdir / "libtpms.jsonl"
    with Swtpm12(state_dir=workdir / "libtpms") as tpm:
        assert tpm.port is not None
        relay = Tpm12Relay(("127.0.0.1", tpm.port), ("127.0.0.1", tpm.port + 1))
        with TimingProxy(load("infineon-2010"), relay, virtual=True, control="swtpm", trace=str(trace)) as proxy:
            tcsd = Tcsd(proxy.port, workdir / "libtpms-tcsd").start()
            try:
                steps = tools_flow(tcsd, create_ek=True)
            finally:
                tcsd.stop()
    return steps, tcsd, traced(trace)


def test_tcsd_and_tpm_tools_on_served_engine(workdir: Path) -> None:
    """The same flow against `trustlab serve --profile infineon-2010` (the CLI, in virtual time: a unit test)."""
    reference, reference_tcsd, theirs = libtpms_flow(workdir)
    print("\nlibtpms TPM 1.2:\n" + transcript(reference))
    check_flow(reference, reference_tcsd)  # the harness itself is right
    trace = workdir / "trace.jsonl"
    with serve(workdir, "--virtual", "--trace", str(trace)) as port:
        tcsd = Tcsd(port, workdir / "served-tcsd").start()
        try:
            steps = tools_flow(tcsd, create_ek=False)
        finally:
            tcsd.stop()
    commands = [json.loads(line)["command"] for line in trace.read_text().splitlines()]
    print("\nserved engine (infineon-2010):\n" + transcript(steps))
    check_flow(steps, tcsd)
    assert "TPM_TakeOwnership" in commands and "TPM_Unseal" in commands
    assert (workdir / "engine" / STATE_FILE).exists()  # --state kept the owner
    # differential: every command tcsd and the tools sent got the same rc and sizes as from libtpms
    # (libtpms' extra TPM_CreateEndorsementKeyPair, which a factory-made chip does not need, left out)
    ek = theirs.index((0, 54, 314))
    assert traced(trace) == theirs[:ek] + theirs[ek + 1:]


@pytest.mark.realtime
def test_tcsd_realtime_transcript(workdir: Path) -> None:
    """Realtime: every tool takes at least the modelled time of the commands it caused (the hold works
    through tcsd); prints the transcript (tool, wall, modelled)."""
    trace = workdir / "trace.jsonl"

    def records() -> list[dict]:
        return [json.loads(line) for line in trace.read_text().splitlines()] if trace.exists() else []

    rows = []
    with serve(workdir, "--trace", str(trace)) as port:
        tcsd = Tcsd(port, workdir).start()
        plain = tcsd.tool

        def timed_tool(*argv: str) -> Step:
            before = len(records())
            step = plain(*argv)
            rows.append((step, sum(r["modelled_ms"] for r in records()[before:])))
            return step

        tcsd.tool = timed_tool  # type: ignore[method-assign]
        try:
            steps = tools_flow(tcsd, create_ek=False)
        finally:
            tcsd.stop()
    print("\n" + "\n".join(f"{s.wall_s * 1000:9.1f} ms wall  {m:9.1f} ms modelled  rc={s.rc}  {s.command}"
                            for s, m in rows))
    check_flow(steps, tcsd)
    for step, modelled in rows:
        assert step.wall_s * 1000 >= modelled, step.command

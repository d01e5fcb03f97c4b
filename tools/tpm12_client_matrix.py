#!/usr/bin/env python3
"""An outside evaluator's matrix: real TPM 1.2 programs, option by option, on libtpms and on `trustlab serve`.

The team's harness (``tests/tpm12/tss_clients.py``) runs the plans its
authors wrote. This runner is an independent second opinion with its own
steps: every tpm-tools binary with each of its options (``-u``, ``-l``,
``-z``, ``-s``, ``-f``, prompted and wrong passwords), the NV permission and
size/offset matrix, sealing of empty and large files to many PCR sets,
tpm-quote-tools' whole chain, simple-tpm-pk11's programs and its PKCS#11
module (``pkcs11-tool``), and reboots between steps: a power cycle on the
control port (CMD_INIT), TPM_SaveState then TPM_Startup(ST_STATE), and a
restart of the TPM process on the same state directory.

Each scenario runs on a fresh libtpms (``swtpm socket`` without ``--tpm2``)
and on a fresh ``trustlab serve --profile infineon-2010 --virtual
--startup none``, both booted alike by this runner as a BIOS would
(TPM_Startup, then TSC_PhysicalPresence CMD_ENABLE and PRESENT), through
TrouSerS' tcsd (TCP device mode, own config/port/system_ps_file; restarted
across a reboot, as an OS would be). A step is compared by exit status,
masked output and the (ordinal, return code) sequence of its frames.

It fetches nothing and takes nothing; it needs root (tcsd), swtpm,
trousers, tpm-tools, tpm-quote-tools, simple-tpm-pk11 and opensc.

    PYTHONPATH=src:. python tools/tpm12_client_matrix.py [-v] [--only NAME] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.tpm12 import tss_clients as H  # noqa: E402  (the relay, tcsd and step machinery are shared)
from trustlab.serving import wire  # noqa: E402
from trustlab.serving.tpm12.socket_tpm import SocketTpm12, Swtpm12  # noqa: E402

S = H.S
ST_CLEAR, ST_STATE, ST_DEACTIVATED = 1, 2, 3
PK11 = "/usr/lib/x86_64-linux-gnu/libsimple-tpm-pk11.so"
PW, WRONG = "matrixpw\n", "nope\n"
LARGE = bytes(range(256)) * 40  # 10 KiB


def startup(kind: int) -> bytes:
    return struct.pack(">HIIH", 0x00C1, 12, 0x99, kind)


SAVE_STATE = struct.pack(">HII", 0x00C1, 10, 0x98)


def extend(pcr: int) -> bytes:
    return struct.pack(">HIII", 0x00C1, 34, 0x14, pcr) + b"\x5a" * 20


# ---- actions between steps ---------------------------------------------------------
@dataclass(frozen=True)
class Boot:
    """A reboot between steps: ``how`` is 'cycle' (CMD_INIT on the control port), 'process' (stop the
    TPM process, start it on the same state); ``save`` sends TPM_SaveState first and resumes ST_STATE."""

    how: str = "cycle"
    save: bool = False
    startup: int = 0  # TPM_Startup's type: 0 is ST_STATE after a SaveState, else ST_CLEAR

    @property
    def kind(self) -> int:
        return self.startup or (ST_STATE if self.save else ST_CLEAR)

    @property
    def title(self) -> str:
        names = {ST_CLEAR: "ST_CLEAR", ST_STATE: "ST_STATE", ST_DEACTIVATED: "ST_DEACTIVATED"}
        return f"<reboot {self.how}{' SaveState' if self.save else ''} Startup({names[self.kind]})>"


@dataclass(frozen=True)
class Raw:
    """Raw frames sent through the relay (what a platform or another program would send)."""

    name: str
    frames: tuple[bytes, ...]

    @property
    def title(self) -> str:
        return f"<raw {self.name}>"


@dataclass(frozen=True)
class Wait:
    """Let wall-clock time pass (a user waiting out a dictionary-attack lockout)."""

    seconds: float

    @property
    def title(self) -> str:
        return f"<wait {self.seconds:g} s>"


# `tpm_setenable -d -f` is not a step: TrouSerS 0.3.15 cannot marshal TPM_PhysicalDisable (tcsd: "Unknown
# ordinal: 0x70"), sends tag 0x00C4 with ordinal 0 and now and then never answers the tool. The frame it
# sends is in tests/tpm12/test_client_matrix_findings.py; the state is reached with the real command.
PHYSICAL_DISABLE = Raw("TPM_PhysicalDisable", (struct.pack(">HII", 0x00C1, 10, 0x70),))


# ---- the backends -----------------------------------------------------------------
class Libtpms:
    name = "libtpms"

    def __init__(self, d: Path) -> None:
        self.state = d / "libtpms-state"
        self.state.mkdir(parents=True, exist_ok=True)
        self.tpm: Swtpm12 | None = None

    def start(self) -> None:
        self.tpm = Swtpm12(state_dir=self.state, startup=False).start()

    @property
    def port(self) -> int:
        return self.tpm.port

    def cycle(self) -> None:
        rc = wire.ctrl_result(self.tpm.ctrl(wire.ctrl_init(), reply_size=4))
        assert rc == 0, f"libtpms CMD_INIT {rc:#x}"

    def stop(self) -> None:
        if self.tpm is not None:
            self.tpm.stop()
            self.tpm = None

    def first_frames(self) -> list[bytes]:
        """A fresh libtpms has no EK: what swtpm_setup sends (trustlab's factory chip has one)."""
        parms = struct.pack(">IHHI", 1, 3, 1, 12) + struct.pack(">III", 2048, 2, 0)
        body = b"\x00" * 20 + parms
        return [struct.pack(">HII", 0x00C1, 10 + len(body), 0x78) + body]


class Served:
    name = "served"

    def __init__(self, d: Path) -> None:
        self.state = d / "engine"
        self.proc: subprocess.Popen | None = None
        self._port = 0

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "trustlab", "serve", "--profile", "infineon-2010", "--port", "0", "--virtual",
             "--startup", "none", "--state", str(self.state)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        banner = self.proc.stdout.readline()
        if " on 127.0.0.1:" not in banner:
            self.proc.kill()
            raise RuntimeError(f"serve did not start: {banner}{self.proc.communicate()[1]}")
        self._port = int(banner.split(" on 127.0.0.1:")[1].split()[0])

    @property
    def port(self) -> int:
        return self._port

    def cycle(self) -> None:
        with socket.create_connection(("127.0.0.1", self._port + 1), timeout=10) as s:
            s.sendall(wire.ctrl_init())
            reply = H.recv_exact(s, 4)
        assert wire.ctrl_result(reply) == 0, f"serve CMD_INIT {reply.hex()}"

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.communicate(timeout=30)
            self.proc = None

    def first_frames(self) -> list[bytes]:
        return []


def send(port: int, frames: list[bytes]) -> list[int]:
    tpm = SocketTpm12("127.0.0.1", port)
    try:
        return [struct.unpack_from(">I", tpm.execute(f), 6)[0] for f in frames]
    finally:
        tpm.close()


# ---- running a scenario -------------------------------------------------------------
@dataclass
class Row:
    title: str
    rc: int
    output: str
    frames: list[str]
    problem: str | None
    exact: bool
    requests: list[str] = field(default_factory=list)  # hex, for --json


def _prepare(d: Path) -> None:
    H._prepare(d)
    (d / "empty.txt").write_bytes(b"")
    (d / "large.bin").write_bytes(LARGE)
    (d / "short.nonce").write_bytes(b"0123456789")
    (d / "garbage.blob").write_bytes(b"\x01\x01\x00\x00" + b"\x00" * 60)
    (d / "pcrinfo").write_bytes(b"\x00\x03\x80\x00\x00" + b"\x00" * 20)
    home = d / "home" / ".simple-tpm-pk11"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config").write_text(f"key {d / 'key1'}\n")
    for p in (d / "home", home, home / "config"):
        p.chmod(0o755 if p.is_dir() else 0o644)


def _start_tcsd(log, d: Path):
    """tcsd on the TPM behind ``log``, and how its start went: an OS boots on a TPM in failure mode
    too, but tcsd refuses it (its TPM_GetCapability fails); the tools then find no tcsd."""
    tcsd = H.Tcsd(log.port, d)
    try:
        tcsd.start()
        return tcsd, "tcsd up"
    except AssertionError:
        return tcsd, f"tcsd exited {tcsd.proc.returncode if tcsd.proc else '?'}"


def run_scenario(name: str, plan: list, backend, d: Path) -> list[Row]:
    _prepare(d)
    backend.start()
    rows: list[Row] = []
    rcs = send(backend.port, [startup(ST_CLEAR)])
    made = send(backend.port, backend.first_frames())
    assert made == [0] * len(made), f"{backend.name}: CreateEndorsementKeyPair {made}"
    rcs += send(backend.port, [H.pp_frame(H.PP_CMD_ENABLE), H.pp_frame(H.PP_PRESENT)])
    rows.append(Row("<power-up: Startup(ST_CLEAR), PP enable+present>", 0, "", [f"{rc:#x}" for rc in rcs],
                    None, True))
    log = H.FrameLog(("127.0.0.1", backend.port))
    tcsd = H.Tcsd(log.port, d).start()
    env_home = str(d / "home")
    try:
        for step in plan:
            if isinstance(step, Boot):
                tcsd.stop()
                log.close()
                pre = send(backend.port, [SAVE_STATE]) if step.save else []
                if step.how == "cycle":
                    backend.cycle()
                else:
                    backend.stop()
                    backend.start()
                rcs = pre + send(backend.port, [startup(step.kind), H.pp_frame(H.PP_PRESENT)])
                log = H.FrameLog(("127.0.0.1", backend.port))
                tcsd, started = _start_tcsd(log, d)
                rows.append(Row(step.title, 0, "", [f"{rc:#x}" for rc in rcs] + [started], None, True))
            elif isinstance(step, Wait):
                time.sleep(step.seconds)
            elif isinstance(step, Raw):
                frames = []
                with log._lock:
                    if log._up is None:
                        log._up = log._connect()
                    for f in step.frames:
                        log._up.sendall(f)
                        frames.append(H.Frame(f, H._recv_frame(log._up)))
                rows.append(Row(step.title, 0, "", [f.label() for f in frames], None, True))
            else:
                os.environ["HOME"] = env_home  # simple-tpm-pk11's config
                try:
                    o = H.run_step(step, tcsd, log)
                except subprocess.TimeoutExpired:
                    rows.append(Row(step.title, -9, "timeout", [], None, True))
                    continue
                rows.append(Row(step.title, o.rc, o.output, o.frames, o.problem, step.exact_output,
                                [r.hex() for r in o.requests]))
    finally:
        tcsd.stop()
        log.close()
        backend.stop()
    return rows


def diff(ours: Row, theirs: Row) -> list[str]:
    why = []
    if ours.rc != theirs.rc:
        why.append(f"exit {ours.rc} vs {theirs.rc}")
    if ours.problem:
        why.append(f"check: {ours.problem}")
    if theirs.problem:
        why.append(f"check on libtpms: {theirs.problem}")
    if ours.exact and H.mask(ours.output) != H.mask(theirs.output):
        why.append(f"output {H.mask(ours.output)[-400:]!r}\n      vs {H.mask(theirs.output)[-400:]!r}")
    if ours.frames != theirs.frames:
        why.append(f"frames {ours.frames}\n      vs {theirs.frames}")
    return why


# ---- the scenarios ------------------------------------------------------------------
def loose(*argv: str, stdin: str = "", check=None):
    return S(*argv, stdin=stdin, check=check, exact_output=False)


def unowned_plan() -> list:
    """What a user tries on a new, unowned chip: every binary's options before ownership, physical presence."""
    return [
        loose("tpm_version", "-l", "none"),  # (the vendor and chip version differ by design)
        loose("tpm_version", "-l", "debug"),
        S("tpm_version", "-v"),
        S("tpm_selftest", "-l", "error"),
        loose("tpm_getpubek"),
        loose("tpm_getpubek", "-u", "-l", "info"),
        S("tpm_restrictpubek", "-s", "-z"),
        S("tpm_restrictpubek", "-r", "-z"),
        S("tpm_restrictsrk", "-s", "-z"),
        S("tpm_restrictsrk", "-a", "-z"),
        S("tpm_setclearable", "-s", "-z"),
        S("tpm_setclearable", "-f"),
        S("tpm_setclearable", "-s", "-z"),
        S("tpm_setownable", "-s", "-z"),
        S("tpm_setownable", "-p"),
        S("tpm_takeownership", "-y", "-z"),
        S("tpm_setownable", "-a"),
        S("tpm_setpresence", "-s", "-z"),
        S("tpm_setpresence", "-c"),
        S("tpm_setpresence", "-a"),
        S("tpm_setpresence", "--enable-hw"),
        S("tpm_setpresence", "--disable-hw"),
        S("tpm_setpresence", "--enable-cmd"),
        S("tpm_setenable", "-s", "-z"),
        PHYSICAL_DISABLE,
        S("tpm_setenable", "-s", "-z"),
        S("tpm_nvinfo"),
        S("tpm_setenable", "-e", "-f"),
        S("tpm_setactive", "-s", "-z"),
        S("tpm_setactive", "-i", "-t"),
        S("tpm_setactive", "-s", "-z"),
        S("tpm_nvinfo", "-n"),
        Boot("cycle"),
        S("tpm_setactive", "-s", "-z"),
        S("tpm_setactive", "-i"),
        Boot("cycle"),
        S("tpm_setactive", "-s", "-z"),
        loose("tpm_version"),
        S("tpm_getpubek"),  # deactivated
        S("tpm_nvinfo"),
        S("tpm_nvdefine", "-i", "0x00021002", "-s", "8", "-p", "PPWRITE", "-y", "-z"),
        S("tpm_takeownership", "-y", "-z"),
        PHYSICAL_DISABLE,  # disabled and deactivated
        S("tpm_setenable", "-s", "-z"),
        S("tpm_clear", "-f"),
        S("tpm_setenable", "-e", "-f"),
        S("tpm_setactive", "-a"),
        Boot("cycle"),
        S("tpm_setactive", "-s", "-z"),
        S("tpm_nvdefine", "-i", "0x00021001", "-s", "8", "-p", "AUTHWRITE", "-y", "-z"),
        S("tpm_nvinfo", "-i", "0x00021001"),
        S("tpm_nvwrite", "-i", "0x00021001", "-d", "unowned", "-z"),
        S("tpm_nvread", "-i", "0x00021001", "-s", "7", "-f", "nvu.out", check=H.file_is("nvu.out", b"unowned")),
        S("tpm_nvrelease", "-i", "0x00021001", "-y"),
        S("tpm_createek"),
        S("tpm_createek", "-r", "-g", "-o", "ek.secret"),
        S("tpm_revokeek", "-i", "ek.secret"),
        S("tpm_revokeek", "-i", "empty.txt"),
        S("tpm_clear", "-f"),
        S("tpm_clear", "-z"),
        S("tpm_changeownerauth", "-z", "-o", stdin=PW + PW),
        S("tpm_sealdata", "-z", "-i", "in.txt", "-o", "s.blob"),
        S("tpm_selftest", "-r", "-l", "debug", exact_output=False),
        S("tpm_setpresence", "--lock"),
        S("tpm_setpresence", "-s", "-z"),
        PHYSICAL_DISABLE,
        S("tpm_setpresence", "-a"),
        S("tpm_setpresence", "--set-lifetime-lock", "-y"),
        S("tpm_setpresence", "--enable-cmd"),
        Boot("cycle"),
        S("tpm_setpresence", "-s", "-z"),
        S("tpm_setpresence", "-a"),
        S("tpm_clear", "-f"),
    ]


def owner_plan() -> list:
    """Owner and SRK secrets typed at the prompts, unicode secrets, every owner-authorized query
    with the right, the wrong and the unicode-encoded secret, changing and resetting them."""
    return [
        S("tpm_takeownership", "-u", stdin=PW * 4),
        S("tpm_getpubek", stdin=PW),  # the ASCII secret: the owner's is unicode
        S("tpm_resetdalock", stdin=PW),
        loose("tpm_getpubek", "-u", stdin=PW),
        S("tpm_resetdalock", "-l", "debug", stdin=PW, exact_output=False),
        S("tpm_setenable", "-s", "-u", stdin=PW),
        S("tpm_setactive", "-s", "-u", stdin=PW),
        S("tpm_setownable", "-s", "-u", stdin=PW),
        S("tpm_setclearable", "-s", "-u", stdin=PW),
        S("tpm_restrictpubek", "-s", "-u", stdin=PW),
        S("tpm_restrictsrk", "-s", "-u", stdin=PW),
        S("tpm_setpresence", "-s", "-u", stdin=PW),
        S("tpm_setenable", "-s", "-z"),
        S("tpm_setenable", "-s", "-u", stdin=WRONG),
        S("tpm_setenable", "-s", "-u", stdin=WRONG),
        S("tpm_setenable", "-s", "-u", stdin=PW),  # the 6th failure: defended for 1 s
        S("tpm_resetdalock", "-u", stdin=WRONG),  # runs in a lockout; fails: disableResetLock, 2 s
        S("tpm_resetdalock", "-u", stdin=PW),  # disableResetLock while the lockout runs
        Wait(4.5),
        S("tpm_resetdalock", "-u", stdin=PW),
        S("tpm_setenable", "-s", "-u", stdin=PW),
        S("tpm_sealdata", "-i", "in.txt", "-o", "srkpw.blob", stdin=PW),  # SRK secret ASCII: unicode was set
        S("tpm_sealdata", "-u", "-i", "in.txt", "-o", "srkpw.blob", stdin=PW),
        S("tpm_unsealdata", "-i", "srkpw.blob", "-o", "srkpw.txt", stdin=PW),
        S("tpm_unsealdata", "-z", "-i", "srkpw.blob", "-o", "srkpw2.txt"),
        S("tpm_resetdalock", "-u", stdin=PW),
        S("tpm_changeownerauth", "-o", "-g", "-n", stdin=PW + "new\nnew\n"),
        S("tpm_changeownerauth", "-o", "-g", stdin=PW + "new2\nnew2\n"),
        S("tpm_changeownerauth", "-o", stdin="new\nnew\nnew\n"),
        S("tpm_resetdalock", "-u", stdin="new\n"),
        S("tpm_changeownerauth", "-o", "-s", "-u", "-r", stdin="new\n"),
        S("tpm_changeownerauth", "-o", "-s", "-z", stdin="a\na\n"),
        S("tpm_changeownerauth", "-o", "-s", "-r", stdin="a\n"),
        S("tpm_changeownerauth", "-o", stdin="\n"),
        S("tpm_changeownerauth", "-z", "-o", "-r"),
        S("tpm_resetdalock", "-z"),
        S("tpm_setoperatorauth", stdin="op\nop\n"),
        S("tpm_setoperatorauth", "-p", stdin="op\nop\n"),
        S("tpm_setoperatorauth", stdin="op\nmismatch\n"),
        S("tpm_setactive", "-i", "-t"),
        S("tpm_setactive", "-s", "-z"),
        S("tpm_getpubek", "-z", exact_output=False),
        Boot("cycle"),
        S("tpm_setactive", "-s", "-z"),
        S("tpm_restrictpubek", "-r", "-u", stdin=PW),
        S("tpm_restrictpubek", "-r", "-z"),
        S("tpm_getpubek"),
        S("tpm_restrictpubek", "-s", "-z"),
        S("tpm_restrictsrk", "-r", "-z"),
        S("tpm_sealdata", "-z", "-i", "in.txt", "-o", "r.blob"),
        S("tpm_unsealdata", "-z", "-i", "r.blob", "-o", "r.txt", check=H.file_is("r.txt", H.SECRET)),
        S("tpm_restrictsrk", "-a", "-z"),
        S("tpm_setclearable", "-o", "-u", stdin=WRONG),
        S("tpm_resetdalock", "-z"),
        S("tpm_setclearable", "-f", "-z"),
        S("tpm_clear", "-f"),
        S("tpm_setclearable", "-s", "-z"),
        S("tpm_clear", "-u", stdin=PW),
        S("tpm_clear", "-z"),
        S("tpm_setenable", "-s", "-z"),
        S("tpm_takeownership", "-y", stdin="s\ns\n"),
        S("tpm_sealdata", "-z", "-i", "in.txt", "-o", "x.blob"),
        S("tpm_sealdata", "-i", "in.txt", "-o", "x.blob", stdin="s\n"),
        S("tpm_takeownership", stdin="mismatch\nother\n"),
    ]


NV = "0x000220{:02x}"


def nv_plan() -> list:
    """tpm_nvdefine with each permission and attribute, sizes and offsets at the bounds, release."""
    perms = ["AUTHREAD", "AUTHWRITE", "OWNERREAD", "OWNERWRITE", "PPREAD", "PPWRITE", "GLOBALLOCK",
             "READ_STCLEAR", "WRITE_STCLEAR", "WRITEDEFINE", "OWNERREAD|OWNERWRITE", "AUTHREAD|AUTHWRITE",
             "AUTHREAD|OWNERREAD", "AUTHWRITE|OWNERWRITE", "PPWRITE|OWNERWRITE", "WRITEDEFINE|OWNERWRITE",
             "READ_STCLEAR|OWNERWRITE", "WRITE_STCLEAR|OWNERWRITE", "GLOBALLOCK|OWNERWRITE", "PPREAD|PPWRITE"]
    plan: list = [S("tpm_takeownership", "-y", "-z")]
    for i, p in enumerate(perms):
        plan.append(S("tpm_nvdefine", "-i", NV.format(i), "-s", "32", "-p", p, "-y", "--pwda=nva"))
    plan += [
        S("tpm_nvinfo"),
        S("tpm_nvdefine", "-i", "0x00023000", "-s", "0", "-p", "OWNERWRITE", "-y", "-z"),
        S("tpm_nvdefine", "-i", "0x00023001", "-s", "1", "-y", "-z"),
        S("tpm_nvdefine", "-i", "0x00023002", "-s", "2048", "-p", "OWNERWRITE", "-y", "-z"),
        S("tpm_nvdefine", "-i", "0x00023003", "-s", "4097", "-p", "OWNERWRITE", "-y", "-z"),
        S("tpm_nvdefine", "-i", "0x00023004", "-s", "20000", "-p", "OWNERWRITE", "-y", "-z"),
        S("tpm_nvdefine", "-i", "0x10023005", "-s", "8", "-p", "OWNERWRITE", "-y", "-z"),
        S("tpm_nvdefine", "-i", "0xffffffff", "-s", "8", "-p", "OWNERWRITE", "-y", "-z"),
        S("tpm_nvdefine", "-i", "0x00023006", "-s", "8", "-p", "OWNERWRITE", "-r", "0", "-r", "23", "-w", "7",
          "-y", "-z"),
        S("tpm_nvdefine", "-i", "0x00023007", "-s", "8", "-p", "OWNERWRITE", "-w", "16", "-y", "-z"),
        S("tpm_nvdefine", "-i", "0x00023008", "-s", "8", "-p", "OWNERWRITE", "-r", "24", "-y", "-z"),
        S("tpm_nvdefine", "-i", "0x00023009", "-s", "8", "-p", "OWNERWRITE", "-f", "pcrinfo", "-y", "-z"),
        S("tpm_nvdefine", "-i", "0x0002300a", "-s", "8", "-p", "BOGUS", "-y", "-z"),
        S("tpm_nvdefine", "-i", "0x0002300b", "-s", "8", "-p", "OWNERWRITE", "-y", stdin=WRONG),
        S("tpm_resetdalock", "-z"),
        S("tpm_nvdefine", "-i", "0x0002300c", "-s", "8", "-p", "AUTHWRITE", "-z", "-u", stdin="\n"),
        S("tpm_nvdefine", "-i", "0x0002300d", "-s", "8", "-p", "AUTHREAD", "-y", stdin="a\na\n"),
        S("tpm_nvinfo", "-n"),
        S("tpm_nvinfo", "-i", "0x00023006"),
        S("tpm_nvinfo", "-i", "0x00023009"),
        S("tpm_nvinfo", "-i", "0x0002300c"),
        # reads and writes at the bounds (AUTHREAD|AUTHWRITE area, 32 bytes)
        S("tpm_nvwrite", "-i", NV.format(11), "-d", "A", "-n", "31", "--password=nva"),
        S("tpm_nvwrite", "-i", NV.format(11), "-d", "AB", "-n", "31", "--password=nva"),
        S("tpm_nvwrite", "-i", NV.format(11), "-d", "A", "-n", "32", "--password=nva"),
        S("tpm_nvwrite", "-i", NV.format(11), "-m", "0x42", "-s", "32", "--password=nva"),
        S("tpm_nvwrite", "-i", NV.format(11), "-m", "0x42", "-s", "33", "--password=nva"),
        S("tpm_nvwrite", "-i", NV.format(11), "-f", "empty.txt", "--password=nva"),
        S("tpm_nvwrite", "-i", NV.format(11), "-f", "large.bin", "--password=nva"),
        S("tpm_nvread", "-i", NV.format(11), "--password=nva", "-f", "b.out", check=H.file_is("b.out", b"B" * 32)),
        S("tpm_nvread", "-i", NV.format(11), "-s", "1", "-n", "31", "--password=nva", "-f", "c.out",
          check=H.file_is("c.out", b"B")),
        S("tpm_nvread", "-i", NV.format(11), "-s", "2", "-n", "31", "--password=nva"),
        S("tpm_nvread", "-i", NV.format(11), "-s", "1", "-n", "32", "--password=nva"),
        S("tpm_nvread", "-i", NV.format(11), "-s", "33", "--password=nva"),
        S("tpm_nvread", "-i", NV.format(11), "--password=wrong"),
        S("tpm_resetdalock", "-z"),
        S("tpm_nvread", "-i", NV.format(11), "-z"),
        S("tpm_resetdalock", "-z"),
        S("tpm_nvread", "-i", NV.format(11), "-u", "--password=nva"),
        S("tpm_resetdalock", "-z"),
        # each permission: write then read with owner / area secret / none
        *[s for i in range(10) for s in (
            S("tpm_nvwrite", "-i", NV.format(i), "-d", "perm", "--password=nva"),
            S("tpm_nvwrite", "-i", NV.format(i), "-d", "perm", "-z"),
            S("tpm_nvread", "-i", NV.format(i), "-s", "4", "--password=nva"),
            S("tpm_nvread", "-i", NV.format(i), "-s", "4"),
            S("tpm_resetdalock", "-z"))],
        # physical presence taken away, then back
        S("tpm_setpresence", "-c"),
        S("tpm_nvwrite", "-i", NV.format(5), "-d", "pp", "-z"),
        S("tpm_nvread", "-i", NV.format(4), "-s", "2"),
        S("tpm_nvdefine", "-i", "0x00023030", "-s", "8", "-p", "PPWRITE", "-y", "-z"),
        S("tpm_setpresence", "-a"),
        S("tpm_nvwrite", "-i", NV.format(5), "-d", "pp", "-z"),
        S("tpm_nvread", "-i", NV.format(4), "-s", "2"),
        # locks: zero-size reads and writes
        S("tpm_nvread", "-i", NV.format(7), "-s", "0"),
        S("tpm_nvread", "-i", NV.format(7), "-s", "4"),
        S("tpm_nvwrite", "-i", NV.format(8), "-s", "0", "-f", "empty.txt"),
        S("tpm_nvwrite", "-i", NV.format(17), "-s", "0", "-f", "empty.txt", "-z"),
        S("tpm_nvwrite", "-i", NV.format(17), "-d", "x", "-z"),
        S("tpm_nvwrite", "-i", NV.format(15), "-s", "0", "-f", "empty.txt", "-z"),
        S("tpm_nvwrite", "-i", NV.format(15), "-d", "y", "-z"),
        S("tpm_nvwrite", "-i", NV.format(18), "-d", "g", "-z"),
        S("tpm_nvwrite", "-i", "0", "-s", "0", "-f", "empty.txt", "-z"),
        S("tpm_nvwrite", "-i", NV.format(18), "-d", "g", "-z"),
        S("tpm_nvinfo", "-i", NV.format(15)),
        Boot("cycle"),
        S("tpm_nvwrite", "-i", NV.format(17), "-d", "x", "-z"),
        S("tpm_nvwrite", "-i", NV.format(15), "-d", "y", "-z"),
        S("tpm_nvwrite", "-i", NV.format(18), "-d", "g", "-z"),
        S("tpm_nvread", "-i", NV.format(7), "-s", "4"),
        S("tpm_nvwrite", "-i", "0x00023002", "-m", "0x43", "-s", "2048", "-z"),
        S("tpm_nvread", "-i", "0x00023002", "-s", "2048", "-f", "big.out"),
        S("tpm_nvwrite", "-i", "0x00023001", "-d", "z"),
        S("tpm_nvread", "-i", "0x00023001", "-s", "1"),
        S("tpm_nvread", "-i", "0x00023006", "-s", "8"),
        S("tpm_nvwrite", "-i", "0x00023006", "-d", "pcr", "-z"),
        Raw("TPM_Extend(PCR 7)", (extend(7),)),
        S("tpm_nvwrite", "-i", "0x00023006", "-d", "pcr", "-z"),
        S("tpm_nvread", "-i", "0x00023006", "-s", "3"),
        # release
        S("tpm_nvrelease", "-i", NV.format(0), "-y"),
        S("tpm_nvrelease", "-i", NV.format(0), "-y"),
        S("tpm_nvrelease", "-i", NV.format(1), "--pwdo=wrong"),
        S("tpm_resetdalock", "-z"),
        S("tpm_nvrelease", "-i", NV.format(1), "-u", "-y"),
        S("tpm_nvrelease", "-i", NV.format(1), "-o", stdin="\n"),
        S("tpm_nvrelease", "-i", NV.format(15), "-y"),
        S("tpm_nvrelease", "-i", "0xffffffff", "-y"),
        S("tpm_nvinfo", "-n"),
        Boot("process"),
        S("tpm_nvinfo", "-n"),
        S("tpm_nvread", "-i", "0x00023002", "-s", "16", "-n", "2032", "-f", "big2.out",
          check=H.file_is("big2.out", b"C" * 16)),
        S("tpm_nvdefine", "-i", "0", "-s", "0", "-y", "-z"),
        S("tpm_nvdefine", "-i", "0x00023020", "-s", "8", "-y", "-z"),
        S("tpm_nvinfo", "-n"),
    ]
    return plan


def seal_plan() -> list:
    """tpm_sealdata/tpm_unsealdata: empty and large inputs, stdin/stdout, many PCR sets, PCR changes, reboots."""
    def unseal(blob: str, out: str, data: bytes = H.SECRET):
        return S("tpm_unsealdata", "-z", "-i", blob, "-o", out, check=H.file_is(out, data))
    return [
        S("tpm_sealdata", "-z", "-i", "in.txt", "-o", "nope.blob"),  # no owner, no SRK
        S("tpm_takeownership", "-y", "-z"),
        S("tpm_sealdata", "-z", "-i", "empty.txt", "-o", "empty.blob"),
        unseal("empty.blob", "empty.out", b""),
        S("tpm_sealdata", "-z", "-i", "large.bin", "-o", "large.blob"),
        unseal("large.blob", "large.out", LARGE),
        loose("tpm_sealdata", "-z", "-i", "in.txt"),
        S("tpm_sealdata", "-z", "-o", "stdin.blob", stdin="from stdin\n"),
        loose("tpm_unsealdata", "-z", "-i", "stdin.blob"),
        S("tpm_sealdata", "-z", "-i", "nosuch.txt", "-o", "x.blob"),
        S("tpm_unsealdata", "-z", "-i", "nosuch.blob", "-o", "x.out"),
        S("tpm_unsealdata", "-z", "-i", "in.txt", "-o", "x.out"),
        S("tpm_unsealdata", "-z", "-i", "garbage.blob", "-o", "x.out"),
        S("tpm_sealdata", "-z", "-p", "0", "-p", "23", "-i", "in.txt", "-o", "p0_23.blob"),
        unseal("p0_23.blob", "p0_23.out"),
        S("tpm_sealdata", "-z", "-p", "8", "-p", "15", "-i", "in.txt", "-o", "p8_15.blob"),
        unseal("p8_15.blob", "p8_15.out"),
        S("tpm_sealdata", "-z", *[a for i in range(24) for a in ("-p", str(i))], "-i", "in.txt", "-o", "all.blob"),
        unseal("all.blob", "all.out"),
        S("tpm_sealdata", "-z", "-p", "17", "-p", "22", "-i", "large.bin", "-o", "p17.blob"),
        unseal("p17.blob", "p17.out", LARGE),
        S("tpm_sealdata", "-z", "-p", "24", "-i", "in.txt", "-o", "p24.blob"),
        S("tpm_sealdata", "-z", "-p", "7", "-i", "in.txt", "-o", "p7.blob"),
        S("tpm_sealdata", "-z", "-p", "16", "-i", "in.txt", "-o", "p16.blob"),
        S("tpm_sealdata", "-z", "-p", "10", "-i", "in.txt", "-o", "p10.blob"),
        Raw("TPM_Extend(PCR 7), TPM_Extend(PCR 16)", (extend(7), extend(16))),
        S("tpm_unsealdata", "-z", "-i", "p7.blob", "-o", "p7.out"),
        S("tpm_unsealdata", "-z", "-i", "p16.blob", "-o", "p16.out"),
        unseal("p10.blob", "p10.out"),
        unseal("p0_23.blob", "p0_23b.out"),
        Boot("cycle"),
        unseal("p7.blob", "p7b.out"),
        unseal("p16.blob", "p16b.out"),
        unseal("large.blob", "large2.out", LARGE),
        Raw("TPM_Extend(PCR 16)", (extend(16),)),
        Boot("cycle", save=True),
        S("tpm_unsealdata", "-z", "-i", "p16.blob", "-o", "p16c.out"),
        unseal("p7.blob", "p7c.out"),
        Boot("process", save=True),
        S("tpm_unsealdata", "-z", "-i", "p16.blob", "-o", "p16d.out"),
        Boot("process"),
        unseal("p16.blob", "p16e.out"),
        unseal("empty.blob", "empty2.out", b""),
        S("tpm_unsealdata", "-i", "empty.blob", "-o", "w.out", stdin=WRONG),
        S("tpm_resetdalock", "-z"),
        S("tpm_changeownerauth", "-z", "-s", stdin="srk\nsrk\n"),
        S("tpm_unsealdata", "-z", "-i", "empty.blob", "-o", "w2.out"),
        S("tpm_resetdalock", "-z"),
        S("tpm_unsealdata", "-i", "in.txt", "-o", "w3.out", stdin="srk\n"),
        S("tpm_sealdata", "-i", "in.txt", "-o", "srk.blob", stdin="srk\n"),
        S("tpm_unsealdata", "-i", "srk.blob", "-o", "srk.out", stdin="srk\n", check=H.file_is("srk.out", H.SECRET)),
        S("tpm_clear", "-z"),
        S("tpm_takeownership", "-y", "-z"),
        S("tpm_unsealdata", "-z", "-i", "empty.blob", "-o", "gone.out"),
    ]


def quote_plan() -> list:
    """tpm-quote-tools' whole set with edge arguments, across a reboot and a process restart."""
    return [
        S("tpm_mkaik", "-z", "noowner.blob", "noowner.pub"),
        S("tpm_takeownership", "-y", "-z"),
        loose("tpm_mkuuid", "aik.uuid"),
        loose("tpm_mkuuid", "aik2.uuid"),
        S("tpm_mkuuid"),
        S("tpm_mkaik", "-z", "aik.blob", "aik.pub"),
        S("tpm_mkaik", "-u", "-z", "aiku.blob", "aiku.pub"),
        S("tpm_mkaik", "aikp.blob", "aikp.pub", stdin="\n"),
        S("tpm_mkaik", "-z", "aik.blob"),
        S("tpm_loadkey", "garbage.blob", "aik2.uuid"),
        S("tpm_loadkey", "nosuch.blob", "aik2.uuid"),
        S("tpm_loadkey", "aik.blob", "aik.uuid"),
        S("tpm_loadkey", "aiku.blob", "aik2.uuid"),
        loose("tpm_getpcrhash", "aik.uuid", "hash", "pcrvals", *[str(i) for i in range(24)]),
        S("tpm_getpcrhash", "aik.uuid", "hash24", "pcrvals24", "24"),
        S("tpm_getpcrhash", "aik.uuid", "hashnone", "pcrvalsnone"),
        S("tpm_getquote", "-p", "pcrvals", "aik.uuid", "nonce", "quote.sig", *[str(i) for i in range(24)],
          check=H.quote_verifies),
        S("tpm_getquote", "aik.uuid", "nonce", "q1.sig", "23"),
        S("tpm_getquote", "aik.uuid", "nonce", "q0.sig"),
        S("tpm_getquote", "aik.uuid", "short.nonce", "qs.sig", "0"),
        S("tpm_getquote", "aik.uuid", "nosuch.nonce", "qn.sig", "0"),
        S("tpm_getquote", "aik2.uuid", "nonce", "q2.sig", "0", "5"),
        loose("tpm_verifyquote", "aik.pub", "hash", "nonce", "quote.sig"),
        loose("tpm_verifyquote", "aik.pub", "hash", "nonce"),
        loose("tpm_updatepcrhash", "hash", "pcrupd", "hashu"),
        Raw("TPM_Extend(PCR 7)", (extend(7),)),
        S("tpm_getquote", "-p", "pcrvals", "aik.uuid", "nonce", "quote.sig", "0", "7", "16",
          check=H.quote_verifies),
        Boot("cycle"),
        S("tpm_getquote", "-p", "pcrvals", "aik.uuid", "nonce", "quote.sig", "7", "10", check=H.quote_verifies),
        Boot("cycle", save=True),
        S("tpm_getquote", "-p", "pcrvals", "aik.uuid", "nonce", "quote.sig", "7", check=H.quote_verifies),
        Boot("process"),
        S("tpm_getquote", "-p", "pcrvals", "aik.uuid", "nonce", "quote.sig", "0", "1", check=H.quote_verifies),
        S("tpm_unloadkey", "aik2.uuid"),
        S("tpm_unloadkey", "nosuch.uuid"),
        S("tpm_getquote", "aik2.uuid", "nonce", "q3.sig", "0"),
        S("tpm_unloadkey", "aik.uuid"),
        S("tpm_getquote", "aik.uuid", "nonce", "q4.sig", "0"),
    ]


def pk11_plan() -> list:
    """simple-tpm-pk11: key sizes, SRK and key PINs, software keys, exfiltration, and the PKCS#11
    module through pkcs11-tool and ssh-keygen -D."""
    mod = ("--module", PK11)
    return [
        S("stpm-keygen", "-o", "nokey"),  # no owner, no SRK
        S("tpm_takeownership", "-y", "-z"),
        S("stpm-keygen", "-o", "key1"),
        loose("stpm-sign", "-k", "key1", "-f", "large.bin"),
        loose("stpm-sign", "-k", "key1", "-f", "in.txt", "-r"),  # (a raw signature: binary, key-dependent)
        S("stpm-sign", "-k", "key1", "-f", "empty.txt"),
        S("stpm-sign", "-k", "key1", "-f", "nosuch.txt"),
        S("stpm-keygen", "-b", "512", "-o", "k512"),
        loose("stpm-sign", "-k", "k512", "-f", "in.txt"),
        S("stpm-keygen", "-b", "4096", "-o", "k4096"),
        S("stpm-keygen", "-b", "1000", "-o", "k1000"),
        S("stpm-keygen", "-b", "0", "-o", "k0"),
        S("stpm-keygen", "-s", "-o", "ks", stdin="\n"),
        S("stpm-keygen", "-s", "-o", "ksw", stdin=WRONG),
        S("tpm_resetdalock", "-z"),
        S("stpm-keygen", "-p", "-o", "kp", stdin="pin\n"),
        loose("stpm-sign", "-k", "kp", "-f", "in.txt"),
        S("stpm-sign", "-k", "kp", "-f", "in.txt", "-s", stdin="\n"),
        S("stpm-sign", "-k", "key1", "-f", "in.txt", "-s", stdin=WRONG),
        S("tpm_resetdalock", "-z"),
        S("stpm-keygen", "-S", "-o", "ksoft", exact_output=False),
        loose("stpm-sign", "-k", "ksoft", "-f", "in.txt"),
        loose("stpm-exfiltrate", "-k", "ksoft", "-O"),
        S("stpm-exfiltrate", "-k", "ksoft", stdin=WRONG),
        S("tpm_resetdalock", "-z"),
        S("stpm-exfiltrate", "-k", "key1", "-O"),
        S("stpm-exfiltrate", "-k", "nosuch", "-O"),
        loose("pkcs11-tool", *mod, "-I"),
        loose("pkcs11-tool", *mod, "-L"),  # (its firmware version is the chip's)
        loose("pkcs11-tool", *mod, "-O"),
        loose("ssh-keygen", "-D", PK11),
        loose("pkcs11-tool", *mod, "--login", "--pin", "1234", "--sign", "-m", "RSA-PKCS", "-i", "in.txt",
              "-o", "p11.sig"),
        Boot("cycle"),
        loose("stpm-sign", "-k", "key1", "-f", "in.txt"),
        loose("ssh-keygen", "-D", PK11),
        Boot("process", save=True),
        loose("stpm-sign", "-k", "key1", "-f", "in.txt"),
        S("tpm_clear", "-f"),
        S("stpm-sign", "-k", "key1", "-f", "in.txt"),
    ]


def reboot_plan() -> list:
    """What a platform may get wrong around a reboot: a command between TPM_SaveState and the power
    cut, ST_STATE with nothing saved, ST_DEACTIVATED, a second TPM_Startup; PCR values across them."""
    return [
        S("tpm_takeownership", "-y", "-z"),
        S("tpm_sealdata", "-z", "-i", "in.txt", "-o", "s.blob"),
        S("tpm_sealdata", "-z", "-p", "7", "-i", "in.txt", "-o", "s7.blob"),
        S("tpm_mkaik", "-z", "aik.blob", "aik.pub"),
        loose("tpm_mkuuid", "aik.uuid"),
        S("tpm_loadkey", "aik.blob", "aik.uuid"),
        Raw("TPM_Extend(PCR 7), TPM_Extend(PCR 16)", (extend(7), extend(16))),
        S("tpm_getquote", "-p", "pcrvals", "aik.uuid", "nonce", "quote.sig", "7", "16", check=H.quote_verifies),
        S("cat", "pcrvals"),
        Boot("cycle", save=True),
        S("tpm_getquote", "-p", "pcrvals", "aik.uuid", "nonce", "quote.sig", "7", "16", check=H.quote_verifies),
        S("cat", "pcrvals"),
        Raw("TPM_Startup(ST_CLEAR) again", (startup(ST_CLEAR),)),
        Raw("TPM_SaveState", (SAVE_STATE,)),
        S("tpm_version", exact_output=False),  # a command after SaveState invalidates it
        Boot("cycle", startup=ST_STATE),  # nothing saved: failure mode
        S("tpm_version"),
        S("tpm_selftest"),
        S("tpm_unsealdata", "-z", "-i", "s.blob", "-o", "f.out"),
        Boot("cycle"),
        S("tpm_unsealdata", "-z", "-i", "s7.blob", "-o", "s7.out", check=H.file_is("s7.out", H.SECRET)),
        S("tpm_getquote", "-p", "pcrvals", "aik.uuid", "nonce", "quote.sig", "7", "16", check=H.quote_verifies),
        S("cat", "pcrvals"),
        Boot("cycle", startup=ST_DEACTIVATED),
        S("tpm_setactive", "-s", "-z"),
        S("tpm_unsealdata", "-z", "-i", "s.blob", "-o", "d.out"),
        S("tpm_getpubek", "-z"),
        Boot("process", save=True),  # SaveState on a deactivated boot, then ST_STATE
        S("tpm_setactive", "-s", "-z"),
        S("tpm_unsealdata", "-z", "-i", "s.blob", "-o", "d2.out"),
        Boot("process", startup=ST_STATE),  # the saved state was used up
        S("tpm_version"),
        Boot("process"),
        S("tpm_unsealdata", "-z", "-i", "s.blob", "-o", "ok.out", check=H.file_is("ok.out", H.SECRET)),
        S("tpm_getquote", "-p", "pcrvals", "aik.uuid", "nonce", "quote.sig", "0", "7", check=H.quote_verifies),
        S("cat", "pcrvals"),
    ]


def srk_secret_plan() -> list:
    """A non-default SRK secret (tpm_changeownerauth -s) as simple-tpm-pk11 and tpm-quote-tools meet it."""
    mod = ("--module", PK11)
    return [
        S("tpm_takeownership", "-y", "-z"),
        S("tpm_changeownerauth", "-z", "-s", stdin="srkpin\nsrkpin\n"),
        S("stpm-keygen", "-o", "key1"),  # the well-known SRK secret: wrong now
        S("tpm_resetdalock", "-z"),
        S("stpm-keygen", "-s", "-o", "key1", stdin="srkpin\n"),
        loose("stpm-sign", "-k", "key1", "-f", "in.txt", "-s", stdin="srkpin\n"),
        S("stpm-sign", "-k", "key1", "-f", "in.txt"),
        S("tpm_resetdalock", "-z"),
        loose("stpm-exfiltrate", "-k", "key1", "-O", "-s", stdin="srkpin\n"),
        S("tpm_mkaik", "-z", "aik.blob", "aik.pub"),
        loose("tpm_mkuuid", "aik.uuid"),
        S("tpm_loadkey", "aik.blob", "aik.uuid"),
        S("tpm_resetdalock", "-z"),
        loose("pkcs11-tool", *mod, "-O"),
        S("tpm_resetdalock", "-z"),
        S("tpm_sealdata", "-i", "in.txt", "-o", "s.blob", stdin="srkpin\n"),
        S("tpm_unsealdata", "-i", "s.blob", "-o", "s.out", stdin="srkpin\n", check=H.file_is("s.out", H.SECRET)),
        S("tpm_changeownerauth", "-z", "-s", "-r"),
        S("stpm-sign", "-k", "key1", "-f", "in.txt"),
        S("tpm_unsealdata", "-z", "-i", "s.blob", "-o", "s2.out", check=H.file_is("s2.out", H.SECRET)),
    ]


SCENARIOS = {"unowned": unowned_plan, "owner": owner_plan, "nv": nv_plan, "seal": seal_plan,
             "quote": quote_plan, "pk11": pk11_plan, "reboot": reboot_plan,
             "srk-secret": srk_secret_plan}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", choices=sorted(SCENARIOS), help="run only this scenario")
    ap.add_argument("-v", action="store_true", help="print every step, not only the differing ones")
    ap.add_argument("--json", type=Path, help="write every step's outcome on both TPMs here")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args(argv)
    why = H.missing() or (None if shutil.which("pkcs11-tool") else "pkcs11-tool not installed (apt install opensc)")
    if why:
        print(f"tpm12_client_matrix: {why}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="trustlab-matrix-"))
    work.chmod(0o755)
    total = differing = 0
    report = {}
    try:
        for name in args.only or SCENARIOS:
            plan = SCENARIOS[name]()
            theirs = run_scenario(name, plan, Libtpms(work / name / "libtpms"), work / name / "libtpms")
            ours = run_scenario(name, plan, Served(work / name / "served"), work / name / "served")
            n = 0
            for a, b in zip(ours, theirs):
                why = diff(a, b)
                n += bool(why)
                if why or args.v:
                    print(f"[{name}] {a.title}: exit {a.rc}/{b.rc}")
                    for w in why:
                        print("    " + w)
            print(f"== {name}: {len(ours)} steps, {n} differ")
            total += len(ours)
            differing += n
            report[name] = [{"step": a.title, "ours": a.__dict__, "libtpms": b.__dict__, "differ": diff(a, b)}
                            for a, b in zip(ours, theirs)]
            sys.stdout.flush()
        print(f"TOTAL: {total} steps, {differing} differ from libtpms")
        if args.json:
            args.json.write_text(json.dumps(report, indent=1, default=str))
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())

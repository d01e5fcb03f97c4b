"""Run IBM's TPM 1.2 utilities step by step against libtpms and against `trustlab serve`, and compare.

IBM's TPM 1.2 utilities (``libtpm/utils`` of keylime/tpm4720-keylime on GitHub) are a peer client:
about a hundred small programs over IBM's own TSS library, which builds every request itself. This
script takes the directory of the built programs (``takeown``, ``createkey``, ... built from source
outside the repository) and runs the same plan of steps twice:

- against libtpms' TPM 1.2 (``swtpm socket`` without ``--tpm2``; its endorsement key made with
  TPM_CreateEndorsementKeyPair, as a manufacturer would);
- against ``trustlab serve --profile infineon-2010 --virtual``.

Before the first step both TPMs get what a platform BIOS sends: TSC_PhysicalPresence with
PHYSICAL_PRESENCE_CMD_ENABLE, then PHYSICAL_PRESENCE_PRESENT (Part 3, 6.2.1 of TPM Main 1.2).

The utilities reach a TPM over TCP with raw TPM frames (``lib/tpmutil_sock.c``: TPM_SERVER_NAME,
TPM_SERVER_PORT; no vTPM instance prefix), which is swtpm's data protocol, so each backend's data
port is used as it is. A small logging relay here sits in between and records every request's
ordinal and every response's return code, independent of trustlab's own tracing.

Each step is compared on three things: the program's exit status, an output check (a value taken
from the program's output or its output files, such as "the unsealed file equals the input" or the
permanent flags it printed), and the sequence of (ordinal, return code) pairs the program caused.

Usage::

    python tools/tpm12_ibm_utils.py BUILD_DIR [--json] [--markdown] [--verbose]

``BUILD_DIR`` holds the built programs (or has them in ``bin/`` or ``utils/``). Exit status 0 when
every step behaves the same on both, 1 otherwise, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from trustlab.devices.tpm12.constants import ORD, RC_NAME  # noqa: E402
from trustlab.serving.swtpm import recv_upto  # noqa: E402
from trustlab.serving.tpm12.socket_tpm import Swtpm12  # noqa: E402

TSC_PHYSICAL_PRESENCE = 0x4000000A
PHYSICAL_PRESENCE_CMD_ENABLE = 0x0020
PHYSICAL_PRESENCE_PRESENT = 0x0008
OWNER, SRK, KEY, DATA_AUTH = "ooo", "sss", "kkk", "ddd"
PLAINTEXT = b"trustlab IBM utilities round trip\n"
ORDINAL_NAMES = {v: k for k, v in ORD.items()}
STEP_TIMEOUT_S = 300


# --------------------------------------------------------------------------- the plan

Check = Callable[[Path, str], str]


def printed(pattern: str) -> Check:
    """The output check "what the program printed for ``pattern``" (first group, or 'absent')."""
    rx = re.compile(pattern, re.M)

    def check(_: Path, out: str) -> str:
        m = rx.search(out)
        return (m.group(1) if m.groups() else m.group(0)) if m else "absent"
    return check


def same_file(name: str, expected: bytes = PLAINTEXT) -> Check:
    """The output check "file ``name`` holds ``expected``"."""
    def check(workdir: Path, _: str) -> str:
        path = workdir / name
        if not path.exists():
            return "missing"
        return "equal" if path.read_bytes() == expected else f"differs ({path.stat().st_size} bytes)"
    return check


def exists(name: str) -> Check:
    """The output check "file ``name`` was written" (and not empty)."""
    def check(workdir: Path, _: str) -> str:
        path = workdir / name
        return "written" if path.exists() and path.stat().st_size > 0 else "missing"
    return check


CEKP_USED = "CEKPUsed"


def flags(_: Path, out: str) -> str:
    """The flags getcapability printed (name: TRUE/FALSE lines), as one string.

    CEKPUsed is left out: libtpms' EK here was made by TPM_CreateEndorsementKeyPair (which sets it),
    trustlab's at manufacture (which does not); both are right for how their EK came to be.
    """
    return ";".join(m.group(0) for m in re.finditer(r"^[A-Za-z][A-Za-z .]*: (TRUE|FALSE)$", out, re.M)
                    if not m.group(0).startswith(CEKP_USED))


def extend_value(message: bytes, index_start: bytes = b"\x00" * 20) -> str:
    """The PCR value after extending a reset PCR with SHA-1(message), in the utilities' hex."""
    return hashlib.sha1(index_start + hashlib.sha1(message).digest()).hexdigest()


@dataclass(frozen=True)
class Step:
    """One program run: ``argv`` may name handles captured by earlier steps as ``{name}``."""

    name: str
    argv: tuple[str, ...]
    check: Check | None = None
    capture: str | None = None  # name under which the "New Key Handle" this step printed is kept
    note: str = ""


def S(name: str, *argv: str, check: Check | None = None, capture: str | None = None, note: str = "") -> Step:
    return Step(name, tuple(argv), check, capture, note)


HANDLE = re.compile(r"New Key Handle = ([0-9A-Fa-f]{8})")


def plan() -> list[Step]:
    """Every step, in order: what a user of the utilities runs on a fresh, BIOS-prepared TPM."""
    o = ("-pwdo", OWNER)
    return [
        # capabilities and flags on a TPM without owner
        S("getcapability version", "getcapability", "-cap", "1a", check=printed(r"(?i)version.*")),
        S("getcapability PCRs", "getcapability", "-cap", "5", "-scap", "101", check=printed(r"Result for.*?: *(.*)$")),
        S("getcapability permanent flags", "getcapability", "-cap", "4", "-scap", "108", check=flags),
        S("getcapability volatile flags", "getcapability", "-cap", "4", "-scap", "109", check=flags),
        S("getcapability ord Seal", "getcapability", "-cap", "1", "-scap", "17", check=printed(r"Result.*")),
        S("getcapability alg RSA", "getcapability", "-cap", "2", "-scap", "1", check=printed(r"Result.*")),
        S("getcapability key handles", "listkeys"),
        S("selftest", "selftest"),
        S("getrandom", "getrandom", "-size", "32", "-out", "random.bin", check=exists("random.bin")),
        S("pcrread 0", "pcrread", "-ix", "0", check=printed(r"(?i)current value of pcr 0 is ([0-9a-f]+)")),
        S("extend 10", "extend", "-ix", "10", "-ic", "trustlab"),
        S("pcrread 10", "pcrread", "-ix", "10", check=printed(r"(?i)current value of pcr 10 is ([0-9a-f]+)")),
        S("pcrreset 16", "pcrreset", "-ix", "16"),
        S("sha", "sha", "-ic", "trustlab", check=printed(r"(?i)(?:digest|hash).*")),
        S("sha1start", "sha1start"),
        S("getticks", "getticks", check=printed(r"(?i)tick.*rate.*")),
        S("dirread 0", "dirread", "-in", "0", check=printed(r"(?i)content.*")),
        S("getpubek (no owner)", "getpubek", "-ok", "pubek.pem", check=exists("pubek.pem")),
        S("createek (EK exists)", "createek"),
        # physical presence commands, as tpm-tools' -f and setactive/setenable need them
        S("physicalpresence -s", "physicalpresence", "-s"),
        S("physicalenable", "physicalenable"),
        S("physicalsetdeactivated -c", "physicalsetdeactivated", "-c"),
        S("setownerinstall", "setownerinstall"),
        # ownership
        S("takeown", "takeown", "-v12", *o, "-pwds", SRK, check=exists("srk.pem")),
        S("takeown again (owner set)", "takeown", "-v12", *o, "-pwds", SRK),
        S("getcapability permanent flags (owned)", "getcapability", "-cap", "4", "-scap", "108", check=flags),
        S("getpubek (owner)", "getpubek", *o, "-ok", "pubek-owner.pem", check=exists("pubek-owner.pem")),
        S("ownerreadinternalpub SRK", "ownerreadinternalpub", "-hk", "40000000", "-of", "srk.pub", *o,
          check=exists("srk.pub")),
        S("ownerreadinternalpub EK", "ownerreadinternalpub", "-hk", "40000006", "-of", "ek.pub", *o,
          check=exists("ek.pub")),
        S("getpubkey SRK", "getpubkey", "-ha", "40000000", "-pwdk", SRK),
        # keys
        S("createkey signing", "createkey", "-kt", "s", "-ok", "sign", "-hp", "40000000", "-pwdp", SRK,
          "-pwdk", KEY, check=exists("sign.key")),
        S("createkey storage", "createkey", "-kt", "e", "-ok", "stor", "-hp", "40000000", "-pwdp", SRK,
          "-pwdk", KEY, check=exists("stor.key")),
        S("createkey binding", "createkey", "-kt", "b", "-ok", "bind", "-hp", "40000000", "-pwdp", SRK,
          "-pwdk", KEY, check=exists("bind.key")),
        S("createkey signing TPM_KEY (-v1)", "createkey", "-kt", "s", "-v1", "-ok", "sign11", "-hp", "40000000",
          "-pwdp", SRK, "-pwdk", KEY, check=exists("sign11.key")),
        S("loadkey signing", "loadkey", "-hp", "40000000", "-ik", "sign.key", "-pwdp", SRK, capture="sign"),
        S("loadkey storage", "loadkey", "-hp", "40000000", "-ik", "stor.key", "-pwdp", SRK, capture="stor"),
        S("loadkey binding", "loadkey", "-hp", "40000000", "-ik", "bind.key", "-pwdp", SRK, capture="bind"),
        S("loadkey TPM_KEY (-v1)", "loadkey", "-v1", "-hp", "40000000", "-ik", "sign11.key", "-pwdp", SRK,
          capture="sign11"),
        S("createkey child of storage key", "createkey", "-kt", "s", "-ok", "child", "-hp", "{stor}", "-pwdp", KEY,
          "-pwdk", KEY, check=exists("child.key")),
        S("loadkey child", "loadkey", "-hp", "{stor}", "-ik", "child.key", "-pwdp", KEY, capture="child"),
        S("signfile", "signfile", "-hk", "{sign}", "-pwdk", KEY, "-if", "data.txt", "-os", "data.sig",
          check=exists("data.sig")),
        S("verifyfile (host)", "verifyfile", "-is", "data.sig", "-if", "data.txt", "-ik", "sign.pem"),
        S("signfile wrong password", "signfile", "-hk", "{sign}", "-pwdk", "wrong", "-if", "data.txt", "-os",
          "bad.sig"),
        S("signfile TPM_KEY key", "signfile", "-hk", "{sign11}", "-pwdk", KEY, "-if", "data.txt", "-os",
          "data11.sig", check=exists("data11.sig")),
        S("signfile child key", "signfile", "-hk", "{child}", "-pwdk", KEY, "-if", "data.txt", "-os",
          "child.sig", check=exists("child.sig")),
        S("bindfile (host)", "bindfile", "-ik", "bind.pem", "-if", "data.txt", "-of", "data.bound"),
        S("unbindfile", "unbindfile", "-hk", "{bind}", "-pwdk", KEY, "-if", "data.bound", "-of", "data.unbound",
          check=same_file("data.unbound")),
        S("tickstampblob", "tickstampblob", "-ic", "trustlab", "-hk", "{sign}", "-pwdk", KEY),
        S("certifykey", "certifykey", "-hk", "{child}", "-hc", "{sign}", "-pwdk", KEY, "-pwdc", KEY, "-of",
          "certify.bin", check=exists("certify.bin")),
        S("signmsg", "signmsg", "-hk", "{sign}", "-pwdk", KEY, "-ic", "trustlab", "-os", "msg.sig",
          check=exists("msg.sig")),
        # auditing
        S("enableaudit TPM_Sign", "enableaudit", *o, "-ord", "3c"),
        S("getauditdigest", "getauditdigest", "-s", "0"),
        S("getauditdigestsigned", "getauditdigestsigned", "-h", "{sign}", "-p", KEY, "-s", "0"),
        S("enableaudit -d TPM_Sign", "enableaudit", *o, "-ord", "3c", "-d"),
        # transport session, owner-controlled keys, maintenance, delegation, establishment bit
        S("transport_test", "transport_test", "-ek", "{bind}", "-ekp", KEY, "-sk", "{sign}", "-skp", KEY),
        S("keycontrol owner evict", "keycontrol", *o, "-pwdk", KEY, "-hk", "{child}", "-bn", "1", "-bv", "1"),
        S("createrevek (EK exists)", "createrevek", "-pwdk", "rev"),
        S("resetestbit", "resetestbit"),
        S("delegatereadtable", "delegatereadtable"),
        # sealing (sealfile binds to PCRs 0-6 as they are; sealxfile encrypts the data in transit)
        S("sealfile (PCRs 0-6)", "sealfile", "-hk", "40000000", "-pwdk", SRK, "-pwdd", DATA_AUTH, "-if", "data.txt",
          "-of", "data.sealed", check=exists("data.sealed")),
        S("unsealfile (PCRs 0-6)", "unsealfile", "-hk", "40000000", "-pwdk", SRK, "-pwdd", DATA_AUTH, "-if",
          "data.sealed", "-of", "data.unsealed", check=same_file("data.unsealed")),
        S("unsealfile wrong data password", "unsealfile", "-hk", "40000000", "-pwdk", SRK, "-pwdd", "wrong", "-if",
          "data.sealed", "-of", "bad.unsealed"),
        S("sealfile under storage key", "sealfile", "-hk", "{stor}", "-pwdk", KEY, "-if", "data.txt", "-of",
          "stor.sealed", check=exists("stor.sealed")),
        S("unsealfile under storage key", "unsealfile", "-hk", "{stor}", "-pwdk", KEY, "-if", "stor.sealed",
          "-of", "stor.unsealed", check=same_file("stor.unsealed")),
        S("extend 5 (changes a sealed-to PCR)", "extend", "-ix", "5", "-ic", "boot"),
        S("unsealfile after PCR change", "unsealfile", "-hk", "40000000", "-pwdk", SRK, "-pwdd", DATA_AUTH, "-if",
          "data.sealed", "-of", "late.unsealed"),
        S("sealxfile", "sealxfile", "-hk", "40000000", "-pwdk", SRK, "-if", "data.txt", "-of", "x.sealed",
          check=exists("x.sealed")),
        S("unsealxfile", "unsealxfile", "-hk", "40000000", "-pwdk", SRK, "-if", "x.sealed", "-of", "x.unsealed",
          check=same_file("x.unsealed")),
        # identities and quotes
        S("identity (TPM_KEY template)", "identity", "-la", "aik", *o, "-pwds", SRK, "-ok", "aik11",
          check=exists("aik11")),
        S("identity -v12", "identity", "-la", "aik", *o, "-pwds", SRK, "-v12", "-ok", "aik",
          check=exists("aik")),
        S("identity -ac (activate)", "identity", "-la", "aik", *o, "-pwds", SRK, "-v12", "-ac", "-ok", "aikac",
          check=printed(r"(?i)(activat\w+.*)")),
        S("loadkey AIK", "loadkey", "-hp", "40000000", "-ik", "aik", "-pwdp", SRK, capture="aik"),
        S("tpmquote", "tpmquote", "-hk", "{aik}", "-bm", "400", "-oq", "quote.bin",
          check=printed(r"Verification against AIK (\w+)")),
        S("quote2", "quote2", "-hk", "{aik}", "-bm", "400", check=printed(r"(?i)(verification.*)")),
        S("certifyselftest", "certifyselftest", "-h", "{sign}", "-p", KEY),
        # NV storage
        S("nv_definespace owner r/w", "nv_definespace", *o, "-in", "1000", "-sz", "64", "-per", "20002"),
        S("nv_writevalue owner", "nv_writevalue", *o, "-in", "1000", "-if", "data.txt"),
        S("nv_readvalue owner", "nv_readvalue", *o, "-in", "1000", "-sz", str(len(PLAINTEXT)), "-of", "nv.out",
          check=same_file("nv.out")),
        S("nv_definespace auth r/w", "nv_definespace", *o, "-in", "1001", "-sz", "16", "-per", "40004", "-pwdd",
          DATA_AUTH),
        S("nv_writevalue auth", "nv_writevalue", "-pwdd", DATA_AUTH, "-in", "1001", "-ic", "hello"),
        S("nv_readvalue auth", "nv_readvalue", "-pwdd", DATA_AUTH, "-in", "1001", "-sz", "5", "-of", "nv1.out",
          check=same_file("nv1.out", b"hello")),
        S("nv_readvalue wrong password", "nv_readvalue", "-pwdd", "wrong", "-in", "1001", "-sz", "5"),
        S("nv_definespace 4096 bytes", "nv_definespace", *o, "-in", "1002", "-sz", "4096", "-per", "20002"),
        S("nv_definespace release", "nv_definespace", *o, "-in", "1000", "-sz", "0"),
        S("nv_readvalue released", "nv_readvalue", *o, "-in", "1000", "-sz", "4"),
        # counters, DIR, audit-free admin
        S("counter_create", "counter_create", *o, "-la", "1", "-pwdc", "ccc", check=printed(r"(?i)(value.*)")),
        S("counter_increment", "counter_increment", "-ix", "{counter}", "-pwdc", "ccc",
          check=printed(r"(?i)(value.*)")),
        S("counter_read", "counter_read", "-ix", "{counter}", check=printed(r"(?i)(value.*)")),
        S("counter_release", "counter_release", "-ix", "{counter}", "-pwdc", "ccc"),
        S("dirwrite", "dirwrite", *o, "-in", "0", "-ic", "trustlab"),
        S("dirread after write", "dirread", "-in", "0", check=printed(r"(?i)content.*")),
        S("chgauth key", "chgauth", "-hp", "40000000", "-pwdp", SRK, "-if", "sign.key", "-pwd", KEY, "-pwdn", "new"),
        S("chgtpmauth SRK", "chgtpmauth", *o, "-pwdn", SRK),
        S("chgtpmauth owner", "chgtpmauth", "-own", *o, "-pwdn", OWNER),
        S("savecontext key", "savecontext", "-ha", "{sign}", "-rt", "1", "-la", "k", "-of", "key.ctx",
          check=exists("key.ctx")),
        S("evictkey", "evictkey", "-hk", "{sign}"),
        S("loadcontext key", "loadcontext", "-ha", "{sign}", "-if", "key.ctx", "-keep"),
        S("signfile after loadcontext", "signfile", "-hk", "{sign}", "-pwdk", KEY, "-if", "data.txt", "-os",
          "ctx.sig", check=exists("ctx.sig")),
        S("loadcontext key again (handle in use)", "loadcontext", "-ha", "{sign}", "-if", "key.ctx", "-keep"),
        S("flushspecific key", "flushspecific", "-ha", "{bind}", "-rt", "1"),
        S("evictkey flushed", "evictkey", "-hk", "{bind}"),
        S("resetlockvalue", "resetlockvalue", *o),
        S("setoperatorauth", "setoperatorauth", "-pwdo", "opr"),
        S("setcapability readSRKPub", "setcapability", *o, "-cap", "4", "-scap", "110", "-val", "1"),
        S("getpubkey SRK after readSRKPub", "getpubkey", "-ha", "40000000", "-pwdk", SRK),
        S("disablepubek", "disablepubek", *o),
        S("getpubek after disablepubek", "getpubek"),
        S("ownersetdisable -en", "ownersetdisable", "-en", *o),
        S("savestate", "savestate"),
        S("disableownerclear", "disableownerclear", *o),
        S("clearown (disabled)", "clearown", *o),
        S("forceclear", "forceclear"),
        S("getcapability permanent flags (cleared)", "getcapability", "-cap", "4", "-scap", "108", check=flags),
        S("takeown after clear", "takeown", "-v12", *o, "-pwds", SRK, check=exists("srk.pem")),
        S("revtrust (not revocable)", "revtrust", "-pwdk", "rev"),
        S("killmaintenancefeature (no owner)", "killmaintenancefeature", *o),
        S("clearown", "clearown", *o),
    ]


# --------------------------------------------------------------------------- the relay

@dataclass
class Frame:
    ordinal: str
    rc: int | None  # None: the TPM closed the connection without answering

    def __str__(self) -> str:
        return f"{self.ordinal}:{'closed' if self.rc is None else RC_NAME.get(self.rc, hex(self.rc))}"


def _read_frame(sock: socket.socket) -> bytes:
    head = recv_upto(sock, 6)
    if len(head) < 6:
        return head
    size = struct.unpack_from(">I", head, 2)[0]
    return head + (recv_upto(sock, size - 6) if size > 6 else b"")


class Relay:
    """A TCP relay that records (ordinal, rc) of every command between a client and a TPM data port."""

    def __init__(self, tpm_port: int) -> None:
        self.tpm_port = tpm_port
        self.frames: list[Frame] = []
        self.lock = threading.Lock()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client, socket.create_connection(("127.0.0.1", self.tpm_port)) as tpm:
            while True:
                request = _read_frame(client)
                if len(request) < 10:
                    return
                ordinal = struct.unpack_from(">I", request, 6)[0]
                name = ORDINAL_NAMES.get(ordinal, hex(ordinal))
                tpm.sendall(request)
                response = _read_frame(tpm)
                rc = struct.unpack_from(">I", response, 6)[0] if len(response) >= 10 else None
                with self.lock:
                    self.frames.append(Frame(name, rc))
                if rc is None:
                    return
                client.sendall(response)

    def take(self) -> list[Frame]:
        with self.lock:
            taken, self.frames = self.frames, []
        return taken

    def close(self) -> None:
        self.listener.close()


def assert_physical_presence(port: int) -> list[int]:
    """TSC_PhysicalPresence(CMD_ENABLE) then (PRESENT), as a BIOS sends them; returns both rcs."""
    rcs = []
    for value in (PHYSICAL_PRESENCE_CMD_ENABLE, PHYSICAL_PRESENCE_PRESENT):
        frame = struct.pack(">HIIH", 0x00C1, 12, TSC_PHYSICAL_PRESENCE, value)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(frame)
            response = _read_frame(s)
        rcs.append(struct.unpack_from(">I", response, 6)[0] if len(response) >= 10 else -1)
    return rcs


# --------------------------------------------------------------------------- backends

@contextmanager
def libtpms_backend(workdir: Path) -> Iterator[int]:
    """libtpms' TPM 1.2 in a fresh swtpm (started, with an EK made as a manufacturer would); its data port."""
    with Swtpm12(state_dir=workdir / "swtpm-state") as tpm:
        assert tpm.port is not None
        rc = tpm.create_ek()
        if rc != 0:
            raise RuntimeError(f"libtpms: TPM_CreateEndorsementKeyPair answered {rc:#x}")
        yield tpm.port


@contextmanager
def trustlab_backend(workdir: Path, profile: str = "infineon-2010") -> Iterator[int]:
    """`trustlab serve --profile PROFILE --virtual` on a free port with its own state; its data port."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "trustlab", "serve", "--profile", profile, "--virtual",
                             "--port", "0", "--state", str(workdir / "engine")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        banner = proc.stdout.readline() if proc.stdout else ""
        if " on 127.0.0.1:" not in banner:
            proc.kill()
            raise RuntimeError(f"trustlab serve did not start: {banner}{proc.communicate()[1]}")
        yield int(banner.split(" on 127.0.0.1:")[1].split()[0])
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.communicate(timeout=30)


# --------------------------------------------------------------------------- running

@dataclass
class Outcome:
    """What one step did on one backend."""

    exit: int
    check: str
    frames: list[str]
    output: str = field(repr=False, default="")


def find_programs(build: Path) -> Path:
    for candidate in (build, build / "bin", build / "utils", build / "libtpm" / "utils"):
        if (candidate / "takeown").is_file() and os.access(candidate / "takeown", os.X_OK):
            return candidate
    print(f"error: no built 'takeown' in {build} (nor in its bin/, utils/, libtpm/utils/)", file=sys.stderr)
    raise SystemExit(2)


def run_plan(programs: Path, port: int, workdir: Path, steps: list[Step], instance: str) -> list[Outcome]:
    """Run every step against the TPM on ``port`` through a logging relay; one Outcome per step."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "data.txt").write_bytes(PLAINTEXT)
    relay = Relay(port)
    env = {**os.environ, "TPM_SERVER_NAME": "127.0.0.1", "TPM_SERVER_PORT": str(relay.port),
           "TPM_INSTANCE": instance, "PATH": f"{programs}:{os.environ.get('PATH', '')}"}
    for stale in Path("/tmp").glob(f".key-*-{instance}"):  # the library's key-swap files
        stale.unlink()
    captured: dict[str, str] = {}
    outcomes = []
    try:
        for step in steps:
            argv = [a.format(**captured) if "{" in a else a for a in step.argv]
            try:
                done = subprocess.run([str(programs / argv[0]), *argv[1:]], env=env, cwd=workdir,
                                      capture_output=True, timeout=STEP_TIMEOUT_S, stdin=subprocess.DEVNULL)
                out = (done.stdout + done.stderr).decode(errors="replace")
                status = done.returncode
            except subprocess.TimeoutExpired:
                out, status = "timed out", -1
            except KeyError as missing:  # pragma: no cover - a placeholder no earlier step captured
                out, status = f"no captured {missing}", -2
            if step.capture:
                m = HANDLE.search(out)
                captured[step.capture] = m.group(1) if m else "DEADBEEF"
            if step.name == "counter_create":
                m = re.search(r"(?i)(?:new counter|counter id|id)[^0-9]*(\d+)", out)
                captured["counter"] = m.group(1) if m else "0"
            frames = [str(f) for f in relay.take()]
            check = step.check(workdir, out) if step.check else ""
            outcomes.append(Outcome(status, check, frames, out))
    finally:
        relay.close()
    return outcomes


@dataclass
class Row:
    step: str
    same: bool
    differs: list[str]
    libtpms: Outcome
    trustlab: Outcome


def compare(steps: list[Step], ref: list[Outcome], ours: list[Outcome]) -> list[Row]:
    rows = []
    for step, a, b in zip(steps, ref, ours):
        differs = [what for what, x, y in (("exit", a.exit, b.exit), ("check", a.check, b.check),
                                           ("frames", a.frames, b.frames)) if x != y]
        rows.append(Row(step.name, not differs, differs, a, b))
    return rows


def run(build: Path, *, keep: Path | None = None, profile: str = "infineon-2010") -> tuple[list[Row], dict]:
    """Both backends, the whole plan; returns the rows and the physical-presence rcs of each."""
    programs = find_programs(build)
    steps = plan()
    root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="trustlab-ibm-"))
    try:
        with libtpms_backend(root / "libtpms") as port:
            pp_ref = assert_physical_presence(port)
            ref = run_plan(programs, port, root / "libtpms" / "work", steps, f"t-libtpms-{os.getpid()}")
        with trustlab_backend(root / "trustlab", profile) as port:
            pp_ours = assert_physical_presence(port)
            ours = run_plan(programs, port, root / "trustlab" / "work", steps, f"t-trustlab-{os.getpid()}")
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return compare(steps, ref, ours), {"libtpms": pp_ref, "trustlab": pp_ours}


def markdown(rows: list[Row]) -> str:
    lines = ["| # | step | libtpms exit | trustlab exit | same | differs in |", "|---|---|---|---|---|---|"]
    for i, r in enumerate(rows, 1):
        lines.append(f"| {i} | {r.step} | {r.libtpms.exit} | {r.trustlab.exit} | {'yes' if r.same else 'NO'} | "
                     f"{', '.join(r.differs)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build", type=Path, help="directory with the built IBM TPM 1.2 utilities")
    parser.add_argument("--profile", default="infineon-2010", help="tpm1.2 profile to serve (default infineon-2010)")
    parser.add_argument("--json", action="store_true", help="one JSON document with every step on both backends")
    parser.add_argument("--markdown", action="store_true", help="the step table in Markdown")
    parser.add_argument("--verbose", action="store_true", help="print both outputs of every differing step")
    parser.add_argument("--keep", type=Path, help="keep work directories under this path")
    args = parser.parse_args(argv)
    if not args.build.is_dir():
        parser.error(f"build directory {args.build} does not exist")
    if shutil.which("swtpm") is None:
        print("error: swtpm is not installed (libtpms is the reference)", file=sys.stderr)
        return 2
    started = time.monotonic()
    rows, pp = run(args.build, keep=args.keep, profile=args.profile)
    differing = [r for r in rows if not r.same]
    if args.json:
        print(json.dumps({"steps": len(rows), "differing": len(differing), "physical_presence": pp,
                          "rows": [{**asdict(r), "libtpms": {k: v for k, v in asdict(r.libtpms).items()},
                                    "trustlab": {k: v for k, v in asdict(r.trustlab).items()}} for r in rows]},
                         indent=1))
    else:
        print(markdown(rows) if args.markdown else "\n".join(
            f"{'same' if r.same else 'DIFF'}  {r.step}" + (f"  ({', '.join(r.differs)})" if r.differs else "")
            for r in rows))
        if args.verbose:
            for r in differing:
                print(f"\n=== {r.step}: differs in {', '.join(r.differs)}")
                for who, o in (("libtpms", r.libtpms), ("trustlab", r.trustlab)):
                    print(f"--- {who}: exit {o.exit}, check {o.check!r}\n    frames {' '.join(o.frames)}")
                    print("    " + o.output.strip().replace("\n", "\n    ")[:1500])
        print(f"\nphysical presence rcs: libtpms {pp['libtpms']}, trustlab {pp['trustlab']}")
        print(f"{len(rows)} steps, {len(differing)} behave differently on trustlab "
              f"({time.monotonic() - started:.0f} s)")
    return 0 if not differing else 1


if __name__ == "__main__":
    sys.exit(main())

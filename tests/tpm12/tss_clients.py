"""Real TPM 1.2 programs, step by step, against libtpms and against `trustlab serve`.

Every step of tpm-tools, tpm-quote-tools and simple-tpm-pk11 (Debian
packages, written by others) runs through TrouSerS' tcsd (TCP device mode,
its own config, port and system_ps_file) against a TPM 1.2. A small logging
TCP proxy between tcsd and the TPM records every frame, so a step is
compared by

* the tool's exit status,
* its output, with what legitimately differs between two chips masked
  (key moduli, nonces, the vendor), and
* the (ordinal, return code) sequence of the frames it caused.

Both TPMs get what a platform BIOS sends before the OS starts: physical
presence enabled and asserted (TSC_PhysicalPresence with
PHYSICAL_PRESENCE_CMD_ENABLE, then PRESENT), sent here as raw frames before
tcsd starts. libtpms' fresh state has no endorsement key, so the harness
first creates one (TPM_CreateEndorsementKeyPair), as ``swtpm_setup`` would;
a factory-made trustlab chip has one already.

The recorded request frames are what the in-repo differential suite replays
(``tests/tpm12/data/tss_frames.json``; ``python -m tests.tpm12.tss_clients
--record`` rewrites it).
"""

from __future__ import annotations

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from trustlab.devices.tpm12 import constants as C
from trustlab.serving.swtpm import recv_exact
from trustlab.serving.tpm12.socket_tpm import SocketTpm12, Swtpm12

TCSD = "/usr/sbin/tcsd"
HEADER = 10
TSC_PHYSICAL_PRESENCE = 0x4000000A
PP_CMD_ENABLE, PP_PRESENT = 0x0020, 0x0008
DATA = Path(__file__).with_name("data") / "tss_frames.json"
SECRET = b"trustlab sealed this\n"
_NAMES = {v: k for k, v in C.ORD.items()}
_NAMES[TSC_PHYSICAL_PRESENCE] = "TSC_PhysicalPresence"
_RC_NAMES = {v: k for k, v in C.RC.items()}


PRESENCE_RCS: dict[str, list[int]] = {}  # the BIOS frames' return codes, per TPM


def pp_frame(bits: int) -> bytes:
    """TSC_PhysicalPresence (Part 3, 6.4 of the TSC spec / libtpms TPM_Process_PhysicalPresence)."""
    return struct.pack(">HIIH", 0x00C1, 12, TSC_PHYSICAL_PRESENCE, bits)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _recv_frame(sock: socket.socket) -> bytes:
    head = recv_exact(sock, HEADER)
    size = struct.unpack_from(">I", head, 2)[0]
    return head + recv_exact(sock, max(0, size - HEADER))


def _recv_request(sock: socket.socket) -> bytes:
    """A request as the client wrote it: at least paramSize bytes, plus whatever else arrived with them
    (a client whose paramSize is short of what it sent is relayed as sent, as a TPM device sees it)."""
    data = b""
    while len(data) < HEADER or len(data) < struct.unpack_from(">I", data, 2)[0]:
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("peer closed")
        data += chunk
    return data


@dataclass
class Frame:
    request: bytes
    response: bytes

    @property
    def ordinal(self) -> int:
        return struct.unpack_from(">I", self.request, 6)[0]

    @property
    def rc(self) -> int:
        return struct.unpack_from(">I", self.response, 6)[0] if len(self.response) >= HEADER else -1

    def label(self) -> str:
        name = _NAMES.get(self.ordinal, f"{self.ordinal:#x}")
        rc = "OK" if self.rc == 0 else _RC_NAMES.get(self.rc, f"{self.rc:#x}")
        return f"{name}:{rc}"


class FrameLog:
    """A logging TCP relay: tcsd connects here, frames go on to the TPM's data port, both directions recorded."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.frames: list[Frame] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._stop = False
        self._up: socket.socket | None = None  # one connection to the TPM for every client connection
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(conn,), daemon=True).start()

    def _relay(self, conn: socket.socket) -> None:
        """(swtpm serves one connection at a time: tcsd's reconnects share this relay's one upstream.)"""
        with conn:
            while True:
                try:
                    request = _recv_request(conn)
                except (ConnectionError, OSError):
                    return
                with self._lock:
                    if self._up is None:
                        self._up = self._connect()
                    try:
                        self._up.sendall(request)
                        response = _recv_frame(self._up)
                    except (ConnectionError, OSError) as e:
                        self._up.close()
                        self._up = None
                        print(f"relay: the TPM at {self.upstream} dropped the connection ({e}) after "
                              f"{len(self.frames)} frames", file=sys.stderr)
                        return
                    self.frames.append(Frame(request, response))
                conn.sendall(response)

    def _connect(self) -> socket.socket:
        for _ in range(50):  # (a TPM that serves one connection at a time may still be closing the last)
            try:
                return socket.create_connection(self.upstream)
            except ConnectionRefusedError:
                time.sleep(0.02)
        return socket.create_connection(self.upstream)

    def close(self) -> None:
        """Stop listening for good: shutdown wakes the accept() blocked in the serving thread, which
        otherwise keeps the listening socket alive (and a later relay could be handed its port)."""
        self._stop = True
        try:
            self._server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._server.close()
        self._thread.join(timeout=5)
        with self._lock:
            if self._up is not None:
                self._up.close()
                self._up = None


class Tcsd:
    """A foreground tcsd on its own port with its own config and system.data, reaching a TCP TPM."""

    def __init__(self, tpm_port: int, workdir: Path) -> None:
        self.tpm_port = tpm_port
        self.dir = workdir
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Tcsd":
        self.dir.mkdir(mode=0o755, exist_ok=True)
        state = self.dir / "tcsd-state"
        state.mkdir(exist_ok=True)
        shutil.chown(state, "tss", "tss")
        conf = self.dir / "tcsd.conf"
        conf.write_text(f"port = {self.port}\nsystem_ps_file = {state / 'system.data'}\n"
                        "firmware_log_file = /dev/null\nkernel_log_file = /dev/null\n")
        shutil.chown(conf, "root", "tss")
        conf.chmod(0o640)
        env = {**os.environ, "TCSD_USE_TCP_DEVICE": "1", "TCSD_TCP_DEVICE_HOSTNAME": "127.0.0.1",
               "TCSD_TCP_DEVICE_PORT": str(self.tpm_port)}
        self.log = open(self.dir / "tcsd.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([TCSD, "-f", "-e", "-c", str(conf)], env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"tcsd exited ({self.proc.returncode}): {self.log_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"tcsd did not listen on {self.port}: {self.log_text()}")

    def log_text(self) -> str:
        return (self.dir / "tcsd.log").read_text(errors="replace")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
            self.log.close()


# ---- the steps ------------------------------------------------------------------
Check = Callable[[Path, str], str | None]  # (workdir, output) -> what is wrong, or None


@dataclass(frozen=True)
class Step:
    """One tool invocation; ``stdin`` answers its password prompts (getpass reads stdin without a tty)."""

    argv: tuple[str, ...]
    stdin: str = ""
    check: Check | None = None
    exact_output: bool = True  # compare the masked output with the other TPM's

    @property
    def title(self) -> str:
        return " ".join(self.argv) + (" <<" + self.stdin.replace("\n", "|") if self.stdin else "")


def S(*argv: str, stdin: str = "", check: Check | None = None, exact_output: bool = True) -> Step:
    return Step(tuple(argv), stdin, check, exact_output)


def file_is(name: str, data: bytes) -> Check:
    def check(d: Path, _out: str) -> str | None:
        p = d / name
        if not p.exists():
            return f"{name} missing"
        return None if p.read_bytes() == data else f"{name} holds {p.read_bytes()[:40]!r}"
    return check


def says(text: str) -> Check:
    return lambda _d, out: None if text in out else f"output lacks {text!r}"


def aik_public_key(der: bytes):
    """tpm_mkaik's public key file: a TSS_BLOB in DER (TSS 1.2, 4.3.4.32: SEQUENCE { structVersion,
    blobType, blobLength, OCTET STRING TPM_PUBKEY }); the modulus and exponent come from the TPM_PUBKEY."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    def tlv(at: int) -> tuple[int, int, int]:  # (tag, start of contents, end of contents)
        n = der[at + 1]
        if n & 0x80:
            width = n & 0x7F
            return der[at], at + 2 + width, at + 2 + width + int.from_bytes(der[at + 2:at + 2 + width], "big")
        return der[at], at + 2, at + 2 + n

    _, at, _ = tlv(0)  # into the SEQUENCE
    tag, start, end = tlv(at)
    while tag != 0x04:
        tag, start, end = tlv(end)
    blob = der[start:end]
    parm_size = struct.unpack_from(">I", blob, 8)[0]
    exp_size = struct.unpack_from(">I", blob, 12 + 8)[0]
    exponent = int.from_bytes(blob[12 + 12:12 + 12 + exp_size], "big") if exp_size else 65537
    at = 12 + parm_size
    key_len = struct.unpack_from(">I", blob, at)[0]
    modulus = int.from_bytes(blob[at + 4:at + 4 + key_len], "big")
    return rsa.RSAPublicNumbers(exponent, modulus).public_key()


def quote_verifies(d: Path, _out: str) -> str | None:
    """tpm_getquote's signature verifies with the AIK's public key (tpm_mkaik's file) over the
    TPM_QUOTE_INFO2 (Part 2, 11.4: tag, "QUT2", nonce, TPM_PCR_INFO_SHORT) rebuilt from the PCR values it
    wrote (``-p``): TrouSerS' TPM_Quote2 selects 3 bytes (24 PCRs) at locality 0."""
    import hashlib

    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    pub = aik_public_key((d / "aik.pub").read_bytes())
    values = [line.split("=") for line in (d / "pcrvals").read_text().split()]
    bits = bytearray(3)
    for i, _ in values:
        bits[int(i) // 8] |= 1 << (int(i) % 8)
    blob = b"".join(bytes.fromhex(v) for _, v in values)
    selection = struct.pack(">H", len(bits)) + bytes(bits)
    composite = selection + struct.pack(">I", len(blob)) + blob
    info = (struct.pack(">H", 0x0036) + b"QUT2" + (d / "nonce").read_bytes() + selection + b"\x01"
            + hashlib.sha1(composite).digest())
    try:
        pub.verify((d / "quote.sig").read_bytes(), info, padding.PKCS1v15(), hashes.SHA1())
    except Exception as e:  # noqa: BLE001 - any failure is the finding
        return f"quote signature does not verify: {type(e).__name__}"
    return None


PW = "tlpass\n"
PW2 = PW + PW
WRONG = "wrongpw\n"


def tpm_tools_plan() -> list[Step]:
    """Every tpm-tools program, its status query, its actions and wrong-password cases."""
    seal16 = "seal16.blob"
    return [
        S("tpm_version", exact_output=False, check=says("TPM 1.2 Version Info")),
        S("tpm_selftest"),
        S("tpm_selftest", "-r", exact_output=False),
        S("tpm_nvinfo"),
        S("tpm_getpubek", "-z", exact_output=False, check=says("Public Endorsement Key")),
        S("tpm_setenable", "-s", "-z"),
        S("tpm_setactive", "-s", "-z"),
        S("tpm_setownable", "-s", "-z"),
        S("tpm_setownable", "-a"),
        S("tpm_setpresence", "-s", "-z"),
        S("tpm_takeownership", "-y", "-z"),
        S("tpm_takeownership", "-y", "-z"),  # owned already
        S("tpm_createek"),  # the EK exists
        S("tpm_getpubek", "-z", exact_output=False, check=says("Public Endorsement Key")),
        S("tpm_getpubek", stdin=WRONG),
        S("tpm_resetdalock", "-z"),
        S("tpm_setenable", "-s", "-z"),
        S("tpm_setenable", "-s", stdin=WRONG),
        S("tpm_resetdalock", "-z"),
        S("tpm_setactive", "-s", "-z"),
        S("tpm_setownable", "-s", "-z"),
        S("tpm_setclearable", "-s", "-z"),
        S("tpm_restrictpubek", "-s", "-z"),
        S("tpm_restrictsrk", "-s", "-z"),
        S("tpm_setpresence", "-s", "-z"),
        S("tpm_setenable", "-e", "-z"),
        S("tpm_setenable", "-e", "-f"),
        S("tpm_setactive", "-a", "-z"),
        S("tpm_setownable", "-p", "-z"),
        S("tpm_setownable", "-s", "-z"),
        S("tpm_setownable", "-a", "-z"),
        S("tpm_restrictsrk", "-a", "-z"),
        S("tpm_restrictsrk", "-s", "-z"),
        S("tpm_restrictsrk", "-r", "-z"),
        S("tpm_restrictsrk", "-s", "-z"),
        S("tpm_resetdalock", "-z"),
        S("tpm_resetdalock", stdin=WRONG),
        S("tpm_resetdalock", "-z"),
        S("tpm_setoperatorauth", "-z"),
        S("tpm_setpresence", "-a", "-z"),
        S("tpm_setpresence", "-s", "-z"),
        S("tpm_selftest", "-r", exact_output=False),
        # NV
        S("tpm_nvdefine", "-i", "0x00011101", "-s", "32", "-p", "OWNERWRITE", "-y", "-z"),
        S("tpm_nvdefine", "-i", "0x00011101", "-s", "32", "-p", "OWNERWRITE", "-y", "-z"),  # defined already
        S("tpm_nvdefine", "-i", "0x00011102", "-s", "64", "-p", "AUTHREAD|AUTHWRITE", "-y", "--pwda=nvpw"),
        S("tpm_nvdefine", "-i", "0x00011103", "-s", "4096", "-p", "OWNERWRITE", "-y", "-z"),
        S("tpm_nvdefine", "-i", "0x00011104", "-s", "20", "-r", "0", "-r", "7", "-p", "OWNERWRITE", "-y", "-z"),
        S("tpm_nvinfo"),
        S("tpm_nvinfo", "-n"),
        S("tpm_nvinfo", "-i", "0x00011102"),
        S("tpm_nvwrite", "-i", "0x00011101", "-f", "in.txt", "-z"),
        S("tpm_nvread", "-i", "0x00011101", "-s", str(len(SECRET)), "-f", "nv.out", check=file_is("nv.out", SECRET)),
        S("tpm_nvwrite", "-i", "0x00011101", "-d", "x", "-n", "40"),  # past the end
        S("tpm_nvwrite", "-i", "0x00011102", "-d", "hello", "--password=nvpw"),
        S("tpm_nvwrite", "-i", "0x00011102", "-d", "hello", "--password=wrong"),
        S("tpm_resetdalock", "-z"),
        S("tpm_nvread", "-i", "0x00011102", "-s", "5", "--password=nvpw", "-f", "nv2.out", check=file_is("nv2.out", b"hello")),
        S("tpm_nvread", "-i", "0x00011102", "-s", "5", "--password=wrong"),
        S("tpm_resetdalock", "-z"),
        S("tpm_nvwrite", "-i", "0x00011103", "-m", "0x41", "-s", "4096", "-z"),
        S("tpm_nvread", "-i", "0x00011103", "-s", "16", "-n", "4080", "-f", "nv3.out", check=file_is("nv3.out", b"A" * 16)),
        S("tpm_nvwrite", "-i", "0x00011104", "-d", "pcr-bound", "-z"),
        S("tpm_nvread", "-i", "0x00011104", "-s", "9", "-f", "nv4.out", check=file_is("nv4.out", b"pcr-bound")),
        S("tpm_nvread", "-i", "0x00011199", "-s", "4"),  # no such index
        S("tpm_nvrelease", "-i", "0x00011102", "-y"),
        S("tpm_nvrelease", "-i", "0x00011102", "-y"),  # gone already
        S("tpm_nvrelease", "-i", "0x00011103", "--pwdo=wrong"),
        S("tpm_resetdalock", "-z"),
        # sealing
        S("tpm_sealdata", "-z", "-i", "in.txt", "-o", "sealed.blob"),
        S("tpm_unsealdata", "-z", "-i", "sealed.blob", "-o", "unsealed.txt", check=file_is("unsealed.txt", SECRET)),
        S("tpm_sealdata", "-z", "-p", "0", "-p", "7", "-i", "in.txt", "-o", "sealpcr.blob"),
        S("tpm_unsealdata", "-z", "-i", "sealpcr.blob", "-o", "unsealpcr.txt", check=file_is("unsealpcr.txt", SECRET)),
        S("tpm_sealdata", "-z", "-p", "16", "-i", "in.txt", "-o", seal16),
        S("tpm_unsealdata", "-z", "-i", seal16, "-o", "unseal16.txt", check=file_is("unseal16.txt", SECRET)),
        S("tpm_unsealdata", "-i", "sealed.blob", "-o", "bad.txt", stdin=WRONG),
        S("tpm_resetdalock", "-z"),
        # passwords
        S("tpm_changeownerauth", "-z", "-o", stdin=PW2),
        S("tpm_getpubek", stdin=PW, exact_output=False, check=says("Public Endorsement Key")),
        S("tpm_getpubek", "-z"),  # the old secret
        S("tpm_resetdalock", stdin=PW),
        S("tpm_changeownerauth", "-o", "-r", stdin=PW),
        S("tpm_changeownerauth", "-z", "-s", stdin=PW2),
        S("tpm_sealdata", "-i", "in.txt", "-o", "sealpw.blob", stdin=PW),
        S("tpm_changeownerauth", "-s", "-r", stdin=PW + "\n"),
        S("tpm_revokeek", "-i", "nosuchfile"),
        S("tpm_restrictpubek", "-r", "-z"),
        S("tpm_restrictpubek", "-s", "-z"),
        S("tpm_getpubek", "-z", exact_output=False),
        # clearing
        S("tpm_setclearable", "-o", "-z"),
        S("tpm_setclearable", "-s", "-z"),
        S("tpm_clear", "-z"),  # owner clear disabled
        S("tpm_clear", "-f"),  # physical presence clears
        S("tpm_setenable", "-s", "-z"),
        S("tpm_takeownership", "-y", "-z"),
        S("tpm_clear", "-z"),
        S("tpm_takeownership", "-y", "-z"),
        S("tpm_setenable", "-d", "-z"),
        S("tpm_setenable", "-e", "-f"),
        S("tpm_setactive", "-i", "-t"),
        S("tpm_setactive", "-s", "-z"),
    ]


def quote_tools_plan() -> list[Step]:
    """tpm-quote-tools (an AIK, a quote that verifies) and simple-tpm-pk11 (a TPM-held signing key)."""
    return [
        S("tpm_takeownership", "-y", "-z"),
        S("tpm_mkuuid", "aik.uuid", exact_output=False),
        S("tpm_mkaik", "-z", "aik.blob", "aik.pub"),
        S("tpm_loadkey", "aik.blob", "aik.uuid"),
        S("tpm_loadkey", "aik.blob", "aik.uuid"),  # registered already
        S("tpm_getpcrhash", "aik.uuid", "hash", "pcrvals", "0", "1", "10", exact_output=False),
        S("tpm_getquote", "-p", "pcrvals", "aik.uuid", "nonce", "quote.sig", "0", "1", "10", "16",
          check=quote_verifies),
        S("tpm_getquote", "aik.uuid", "nonce", "quote2.sig", "99"),
        S("tpm_updatepcrhash", "hash", "pcrupd", "hash2", exact_output=False),
        S("tpm_verifyquote", "aik.pub", "hash", "nonce", "quote.sig", exact_output=False),
        S("tpm_getquote", "nosuch.uuid", "nonce", "quote3.sig", "0"),
        S("tpm_unloadkey", "aik.uuid"),
        S("tpm_unloadkey", "aik.uuid"),
        S("tpm_mkaik", "aik2.blob", "aik2.pub", stdin=WRONG),
        S("tpm_resetdalock", "-z"),
        S("stpm-keygen", "-o", "key1"),
        S("stpm-sign", "-k", "key1", "-f", "in.txt", exact_output=False),
        S("stpm-sign", "-k", "key1", "-f", "in.txt", "-r", exact_output=False),
        S("stpm-keygen", "-p", "-o", "key2", stdin="keypin\n"),
        S("stpm-keygen", "-b", "1024", "-o", "key3"),
        S("stpm-sign", "-k", "key3", "-f", "in.txt", exact_output=False),
        S("stpm-keygen", "-S", "-o", "key4", exact_output=False),
        S("stpm-exfiltrate", "-k", "key4", "-O", exact_output=False),
        S("stpm-exfiltrate", "-k", "key1", "-O"),
        S("stpm-sign", "-k", "nosuchkey", "-f", "in.txt"),
    ]


PLANS = {"tpm-tools": tpm_tools_plan, "tpm-quote-tools + simple-tpm-pk11": quote_tools_plan}

# ---- running ----------------------------------------------------------------------
_MASKS = [
    (re.compile(r"(?:[0-9a-fA-F]{2}[ :]?){8,}"), "<hex>"),  # moduli, digests, nonces, blobs
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<0x>"),
    (re.compile(r"/tmp/\S+"), "<path>"),
]


def mask(text: str) -> str:
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return text


@dataclass
class Outcome:
    step: Step
    rc: int
    output: str
    frames: list[str] = field(default_factory=list)
    problem: str | None = None  # a failed output check
    requests: list[bytes] = field(default_factory=list)


def run_step(step: Step, tcsd: Tcsd, log: FrameLog) -> Outcome:
    env = {**os.environ, "TSS_TCSD_PORT": str(tcsd.port), "TSS_TCSD_HOSTNAME": "127.0.0.1"}
    before = len(log.frames)
    done = subprocess.run(list(step.argv), env=env, cwd=tcsd.dir, capture_output=True, timeout=300,
                          input=step.stdin.encode(), start_new_session=True)  # no tty: getpass reads stdin
    time.sleep(0.01)  # (the relay records the last response just after sending it)
    frames = log.frames[before:]
    output = (done.stdout + done.stderr).decode(errors="replace")
    problem = step.check(tcsd.dir, output) if step.check and done.returncode == 0 else None
    return Outcome(step, done.returncode, output, [f.label() for f in frames], problem,
                   [f.request for f in frames])


def _prepare(workdir: Path) -> None:
    workdir.mkdir(mode=0o755, parents=True, exist_ok=True)
    (workdir / "in.txt").write_bytes(SECRET)
    (workdir / "nonce").write_bytes(bytes(range(20)))
    (workdir / "pcrupd").write_text("10=" + "11" * 20 + "\n")


def assert_presence(port: int) -> list[int]:
    """What a BIOS sends: physical presence command enabled, then asserted; returns both rcs."""
    tpm = SocketTpm12("127.0.0.1", port)
    try:
        return [struct.unpack_from(">I", tpm.execute(pp_frame(bits)), 6)[0] for bits in (PP_CMD_ENABLE, PP_PRESENT)]
    finally:
        tpm.close()


def run_plan(plan: list[Step], tpm_port: int, workdir: Path) -> list[Outcome]:
    _prepare(workdir)
    log = FrameLog(("127.0.0.1", tpm_port))
    tcsd = Tcsd(log.port, workdir).start()
    try:
        return [run_step(step, tcsd, log) for step in plan]
    finally:
        tcsd.stop()
        log.close()


@contextmanager
def libtpms(workdir: Path) -> Iterator[int]:
    """libtpms' TPM 1.2 with an EK and physical presence asserted; yields its data port."""
    with Swtpm12(state_dir=workdir / "libtpms-state") as tpm:
        assert tpm.port is not None
        assert tpm.create_ek() == 0
        PRESENCE_RCS["libtpms"] = assert_presence(tpm.port)
        yield tpm.port


@contextmanager
def serve(workdir: Path, *flags: str) -> Iterator[int]:
    """`trustlab serve --profile infineon-2010 --port 0 --state WORKDIR/engine FLAGS`; yields its data port."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "trustlab", "serve", "--profile", "infineon-2010", "--port", "0",
                             "--state", str(workdir / "engine"), *flags], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        banner = proc.stdout.readline() if proc.stdout else ""
        if " on 127.0.0.1:" not in banner:
            proc.kill()
            raise AssertionError(f"trustlab serve did not start: {banner}{proc.communicate()[1]}")
        yield int(banner.split(" on 127.0.0.1:")[1].split()[0])
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.communicate(timeout=30)


@contextmanager
def served(workdir: Path) -> Iterator[int]:
    """`trustlab serve ... --virtual` with physical presence asserted; yields its data port."""
    with serve(workdir, "--virtual") as port:
        PRESENCE_RCS["served"] = assert_presence(port)
        yield port


def differences(ours: Outcome, theirs: Outcome) -> list[str]:
    """What differs between the same step on two TPMs (empty: the step behaves as on libtpms)."""
    why = []
    if ours.rc != theirs.rc:
        why.append(f"exit {ours.rc} vs {theirs.rc}")
    if ours.problem or theirs.problem:
        if ours.problem:
            why.append(f"check: {ours.problem}")
        if theirs.problem:
            why.append(f"check on libtpms: {theirs.problem}")
    if ours.step.exact_output and mask(ours.output) != mask(theirs.output):
        why.append(f"output {mask(ours.output)[-300:]!r} vs {mask(theirs.output)[-300:]!r}")
    if ours.frames != theirs.frames:
        why.append(f"frames {ours.frames} vs {theirs.frames}")
    return why


def compare(plan_name: str, workdir: Path) -> tuple[list[Outcome], list[Outcome]]:
    """Run one plan against libtpms, then against serve; returns (libtpms, served) outcomes."""
    plan = PLANS[plan_name]()
    sub = re.sub(r"\W+", "-", plan_name)
    with libtpms(workdir / f"{sub}-libtpms") as port:
        theirs = run_plan(plan, port, workdir / f"{sub}-libtpms")
    with served(workdir / f"{sub}-served") as port:
        ours = run_plan(plan, port, workdir / f"{sub}-served")
    return theirs, ours


def missing() -> str | None:
    """Why the clients cannot run here, or None."""
    if not os.path.exists(TCSD):
        return f"TrouSerS tcsd not installed at {TCSD} (apt install trousers)"
    for tool in ("tpm_version", "tpm_mkaik", "stpm-keygen", "swtpm"):
        if shutil.which(tool) is None:
            return f"{tool} not installed (make system)"
    if os.geteuid() != 0:
        return "tcsd must start as root (it drops to the tss user)"
    return None


def table(results: dict[str, tuple[list[Outcome], list[Outcome]]]) -> str:
    rows = ["| tool set | steps | differ from libtpms |", "|---|---|---|"]
    for name, (theirs, ours) in results.items():
        n = sum(1 for a, b in zip(ours, theirs) if differences(a, b))
        rows.append(f"| {name} | {len(ours)} | {n} |")
    return "\n".join(rows)


RUN_LIMIT = 3  # consecutive frames of one ordinal kept per step (stpm-keygen stirs the RNG ~100 times)


def record(results: dict[str, tuple[list[Outcome], list[Outcome]]]) -> None:
    """Write the request frames the clients sent to libtpms, step by step, for the replay suite
    (test_tss_replay.py); the BIOS's physical-presence frames first, long runs of one ordinal cut."""
    import json

    doc: dict = {"bios": [pp_frame(PP_CMD_ENABLE).hex(), pp_frame(PP_PRESENT).hex()], "plans": {}}
    for name, (theirs, _ours) in results.items():
        steps = []
        for o in theirs:
            kept: list[str] = []
            run = 0
            for i, r in enumerate(o.requests):
                run = run + 1 if i and r[6:10] == o.requests[i - 1][6:10] else 1
                if run <= RUN_LIMIT:
                    kept.append(r.hex())
            steps.append({"step": o.step.title, "requests": kept})
        doc["plans"][name] = steps
    DATA.parent.mkdir(exist_ok=True)
    DATA.write_text(json.dumps(doc, indent=1) + "\n")


def main(argv: list[str]) -> int:
    """Run the plans, print the step table and every difference; ``--record`` rewrites the frame data."""
    import json

    workdir = Path(tempfile.mkdtemp(prefix="trustlab-tss-"))
    workdir.chmod(0o755)
    results = {}
    try:
        for name in PLANS:
            results[name] = compare(name, workdir)
            theirs, ours = results[name]
            for a, b in zip(ours, theirs):
                why = differences(a, b)
                if why or "-v" in argv:
                    print(f"[{name}] {a.step.title}: rc {a.rc}/{b.rc}")
                    for w in why:
                        print("    " + w)
        print(table(results))
        if "--record" in argv:
            record(results)
    finally:
        if "--keep" in argv:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

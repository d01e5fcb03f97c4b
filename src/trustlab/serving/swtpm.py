"""A swtpm (libtpms) process per use: start, wait, reset, clean up.

Every test and every sweep point gets its own TPM, so state never leaks from
one run into the next: a fresh temporary state directory, free ports (or unix
sockets), and a process that dies with its parent (``PR_SET_PDEATHSIG``) even
when the parent crashes.

    with Swtpm() as tpm:                      # CMD_INIT + TPM2_Startup(CLEAR) done
        tpm.tcti                              # "swtpm:host=127.0.0.1,port=P"
        rsp = tpm.send(startup_command())     # raw TPM 2.0 frame in, frame out
        tpm.reset()                           # power cycle: CMD_INIT + Startup
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Callable

from trustlab.devices.frame import build_frame
from trustlab.serving import wire
from trustlab.serving.peers import start_time
from trustlab.errors import TrustlabError

SWTPM_BINARY = "swtpm"
STATE_PREFIX = "trustlab-swtpm-"
OWNER_FILE = "owner"
"""In a temporary state directory: ``PID START`` of the process that made it, then swtpm's PID."""
TPM2_STARTUP_CLEAR = build_frame(0x8001, 0x144, b"\0\0")
"""TPM2_Startup(TPM_SU_CLEAR) (Part 3, 9.3), as a BIOS sends it after power-up."""
_LIVE: "weakref.WeakSet[Swtpm]" = weakref.WeakSet()


class SwtpmError(TrustlabError):
    """swtpm is missing, did not start, or did not answer."""


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port_pair(host: str = "127.0.0.1", tries: int = 200) -> int:
    """A port P with P and P+1 both free (swtpm's data + control convention)."""
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        if port < 65535 and _port_free(port + 1, host):
            return port
        port = rng.randrange(20000, 60000)
        if _port_free(port, host) and _port_free(port + 1, host):
            return port
    raise SwtpmError("no free pair of consecutive TCP ports found")


def _owner_alive(text: str) -> bool:
    fields = text.split()
    if len(fields) < 2 or not fields[0].isdigit():
        return True  # not ours to judge
    return start_time(int(fields[0])) == fields[1]


def state_dirs_of(pid: int, tmp: Path | None = None) -> list[Path]:
    """The temporary state directories process ``pid`` made (by their owner file)."""
    found = []
    for d in Path(tmp or tempfile.gettempdir()).glob(f"{STATE_PREFIX}*"):
        try:
            if (d / OWNER_FILE).read_text().split()[0] == str(pid):
                found.append(d)
        except (OSError, IndexError):
            continue
    return found


def remove_stale_state(tmp: Path | None = None) -> list[Path]:
    """Delete temporary swtpm state directories whose owning process is gone (killed with SIGKILL).

    A directory counts as stale only if it carries an owner file naming a dead
    process; its swtpm, if still running, is terminated first. Returns what was removed.
    """
    removed = []
    for d in Path(tmp or tempfile.gettempdir()).glob(f"{STATE_PREFIX}*"):
        try:
            text = (d / OWNER_FILE).read_text()
        except OSError:
            continue
        if _owner_alive(text):
            continue
        fields = text.split()
        if len(fields) >= 3 and fields[2].isdigit():
            try:
                cmdline = Path(f"/proc/{fields[2]}/cmdline").read_bytes()
                if str(d).encode() in cmdline:  # our swtpm, orphaned: stop it before removing its state
                    os.kill(int(fields[2]), signal.SIGTERM)
            except OSError:
                pass
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


@functools.cache
def unixio_supported(binary: str = SWTPM_BINARY) -> bool:
    """Does this swtpm take ``--server type=unixio`` (a unix-socket data channel)? Read once from its ``--help``.

    A command relayed over a unix socket costs both ends less kernel time than
    over TCP loopback (no TCP/IP stack, no ACKs), with the same bytes; swtpm
    builds without it are old, but they exist.
    """
    try:
        usage = subprocess.run([binary, "socket", "--help"], stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return False  # missing or broken: Swtpm.start() says so in its own words
    return "--server type=unixio" in usage


_FALLBACK_LOGGED: set[str] = set()


def unix_data_channel(binary: str = SWTPM_BINARY, log: Callable[[str], None] | None = None) -> bool:
    """True: run an owned swtpm's data and control channels on unix sockets. False (a swtpm without
    unixio): TCP on 127.0.0.1, and that choice is logged once per process (``log``, else stderr)."""
    if unixio_supported(binary):
        return True
    if shutil.which(binary) is not None and binary not in _FALLBACK_LOGGED:
        _FALLBACK_LOGGED.add(binary)
        message = (f"{binary} has no unix-socket server (--server type=unixio): its channels run over TCP on "
                   "127.0.0.1 (a few us more per command)")
        if log is not None:
            log(message)
        else:
            print(f"trustlab: {message}", file=sys.stderr, flush=True)
    return False


def recv_upto(sock: socket.socket, n: int) -> bytes:
    """Read ``n`` bytes, or fewer if the peer closes first (a peer's early close is then visible to the caller)."""
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            break
        chunks += chunk
    return bytes(chunks)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Read exactly ``n`` bytes or raise ConnectionError on EOF."""
    data = recv_upto(sock, n)
    if len(data) < n:
        raise ConnectionError(f"connection closed after {len(data)} of {n} bytes")
    return data


def read_response(sock: socket.socket) -> bytes:
    """One TPM response frame from a raw data channel (one ``recv`` when it arrives whole, as it does)."""
    data = sock.recv(65536)
    if len(data) < wire.HEADER_SIZE:
        if not data:
            raise ConnectionError("connection closed before a response")
        data += recv_exact(sock, wire.HEADER_SIZE - len(data))
    size = wire.response_length(data)
    if len(data) < size:
        data += recv_exact(sock, size - len(data))
    elif len(data) > size:
        raise wire.WireError(f"{len(data) - size} byte(s) after a {size}-byte response")
    return data


class Swtpm:
    """One swtpm process (``swtpm socket --tpm2``) with its own state.

    ``unix=True`` uses unix sockets in the state directory instead of TCP
    ports. ``startup=False`` leaves the TPM initialised but not started (for
    callers that send TPM2_Startup themselves, as tpm2-tools' ``tpm2_startup``).
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int | None = None, unix: bool = False,
                 state_dir: Path | None = None, startup: bool = True, timeout: float = 10.0,
                 binary: str = SWTPM_BINARY) -> None:
        self.host = host
        self.unix = unix
        self.startup = startup
        self.timeout = timeout
        self.binary = binary
        self._requested_port = port
        self._own_state = state_dir is None
        self._state_dir = state_dir
        self._sock_dir: Path | None = None
        """Unix sockets of a swtpm on a caller's state directory live apart from it (never in the user's dir)."""
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None

    # ---- addresses ---------------------------------------------------------

    @property
    def state_dir(self) -> Path:
        if self._state_dir is None:
            raise SwtpmError("swtpm not started")
        return self._state_dir

    @property
    def ctrl_port(self) -> int | None:
        return None if self.port is None else self.port + 1

    @property
    def data_path(self) -> Path:
        return (self._sock_dir or self.state_dir) / "data.sock"

    @property
    def ctrl_path(self) -> Path:
        return (self._sock_dir or self.state_dir) / "ctrl.sock"

    @property
    def tcti(self) -> str:
        """TCTI string for tpm2-tools (``TPM2TOOLS_TCTI``) and tpm2-pytss."""
        if self.unix:
            return f"swtpm:path={self.data_path}"
        return f"swtpm:host={self.host},port={self.port}"

    @property
    def tcti_conf(self) -> str:
        """The part after ``swtpm:``, for ``TCTILdr("swtpm", conf)``."""
        return self.tcti.split(":", 1)[1]

    # ---- life cycle --------------------------------------------------------

    def start(self) -> "Swtpm":
        if self.proc is not None:
            return self
        if shutil.which(self.binary) is None:
            raise SwtpmError(f"{self.binary!r} not found on PATH: install the swtpm package (apt install swtpm)")
        if self._state_dir is None:
            self._state_dir = Path(tempfile.mkdtemp(prefix=STATE_PREFIX))
        else:
            self._state_dir.mkdir(parents=True, exist_ok=True)
            if self.unix and self._sock_dir is None:
                self._sock_dir = Path(tempfile.mkdtemp(prefix="trustlab-swtpm-sock-"))
        try:
            self._start_process()
            _LIVE.add(self)
            self.reset()
        except BaseException:  # an error, Ctrl-C or SIGTERM while starting: no process, no state left behind
            self._kill()
            self._cleanup_dir()
            _LIVE.discard(self)
            raise
        return self

    def _start_process(self) -> None:
        last_error = ""
        for _attempt in range(5):  # a port may be taken between probing and binding
            if not self.unix:
                self.port = self._requested_port or free_port_pair(self.host)
            try:
                self._spawn()
                self._wait_ready()
                break
            except SwtpmError as exc:
                last_error = str(exc)
                self._kill()
                if self._requested_port or self.unix:
                    break
        if self.proc is None:
            raise SwtpmError(f"swtpm did not start: {last_error}")

    def _spawn(self) -> None:
        if self.unix:
            server = f"type=unixio,path={self.data_path}"
            ctrl = f"type=unixio,path={self.ctrl_path}"
        else:
            server = f"type=tcp,port={self.port},bindaddr={self.host}"
            ctrl = f"type=tcp,port={self.ctrl_port},bindaddr={self.host}"
        argv = [self.binary, "socket", *self._family_args(), "--tpmstate", f"dir={self.state_dir}",
                "--server", server, "--ctrl", ctrl,
                "--log", f"file={self.state_dir / 'swtpm.log'},level=1"]
        # PR_SET_PDEATHSIG fires when the *thread* that forked exits, so it is
        # only armed from the main thread; other threads rely on atexit/stop().
        main = threading.current_thread() is threading.main_thread()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, preexec_fn=_die_with_parent if main else None)
        if self._own_state:
            me = os.getpid()
            (self.state_dir / OWNER_FILE).write_text(f"{me} {start_time(me)} {self.proc.pid}\n")

    def _family_args(self) -> list[str]:
        """swtpm's flags for the TPM generation this class runs (TPM 1.2: a subclass)."""
        return ["--tpm2"]

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                err = (self.proc.stderr.read() or b"").decode(errors="replace").strip() if self.proc.stderr else ""
                self.proc = None
                raise SwtpmError(f"exited with {self.proc_rc_text(err)}")
            try:
                reply = self.ctrl(wire.ctrl_request(wire.CMD_GET_CAPABILITY), reply_size=8)
                if wire.ctrl_result(reply) == 0:
                    return
            except OSError:
                time.sleep(0.01)
        raise SwtpmError(f"no answer on the control channel within {self.timeout:.0f} s")

    @staticmethod
    def proc_rc_text(err: str) -> str:
        return f"an error: {err.splitlines()[-1] if err else 'no message'}"

    def reset(self) -> None:
        """Power-cycle: ``CMD_INIT`` then ``TPM2_Startup(CLEAR)`` (unless startup=False).

        swtpm serves one data connection at a time: while a ``TimingProxy``
        fronts this swtpm it holds that connection, so call ``proxy.reset()``.
        """
        rc = wire.ctrl_result(self.ctrl(wire.ctrl_init(), reply_size=4))
        if rc != 0:
            raise SwtpmError(f"CMD_INIT failed with result {rc:#x}")
        if self.startup:
            rsp = self.send(TPM2_STARTUP_CLEAR)
            rc = wire.response_code(rsp)
            if rc not in (0, 0x100):  # TPM_RC_INITIALIZE: already started
                raise SwtpmError(f"TPM2_Startup failed with {rc:#x}")

    def stop(self) -> None:
        """Stop the process and delete the temporary state (idempotent)."""
        if self.proc is not None:
            try:
                self.ctrl(wire.ctrl_request(wire.CMD_SHUTDOWN), reply_size=4)
            except OSError:
                pass
            self._kill()
        self._cleanup_dir()
        _LIVE.discard(self)

    def _kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stderr:
            proc.stderr.close()

    def _cleanup_dir(self) -> None:
        if self._own_state and self._state_dir is not None:
            shutil.rmtree(self._state_dir, ignore_errors=True)
            self._state_dir = None
        if self._sock_dir is not None:
            shutil.rmtree(self._sock_dir, ignore_errors=True)
            self._sock_dir = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exited(self) -> str | None:
        """How the process ended on its own ("exited with signal 9 (SIGKILL)", "exited with status 1"), or
        None while it runs (or once :meth:`stop` ended it: that is no news)."""
        proc = self.proc
        if proc is None or proc.poll() is None:
            return None
        rc = proc.returncode
        if rc < 0:
            try:
                how = f"signal {-rc} ({signal.Signals(-rc).name})"
            except ValueError:
                how = f"signal {-rc}"
        else:
            how = f"status {rc}"
        return f"exited with {how}"

    def __enter__(self) -> "Swtpm":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- talking to it -----------------------------------------------------

    def connect_data(self, timeout: float | None = None) -> socket.socket:
        """A new connection to the data channel (swtpm serves one at a time)."""
        return self._connect(self.data_path if self.unix else (self.host, self.port), timeout)

    def connect_ctrl(self, timeout: float | None = None) -> socket.socket:
        return self._connect(self.ctrl_path if self.unix else (self.host, self.ctrl_port), timeout)

    def _connect(self, address, timeout: float | None) -> socket.socket:
        family = socket.AF_UNIX if self.unix else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(timeout if timeout is not None else self.timeout)
        try:
            sock.connect(str(address) if self.unix else address)
        except OSError:
            sock.close()
            raise
        if not self.unix:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def send(self, command: bytes) -> bytes:
        """Send one raw TPM 2.0 command on a fresh connection; return the response."""
        with self.connect_data() as sock:
            sock.sendall(command)
            return read_response(sock)

    def ctrl(self, request: bytes, reply_size: int = 4) -> bytes:
        """One control-channel request; ``reply_size`` bytes of reply."""
        with self.connect_ctrl(timeout=2.0) as sock:
            sock.sendall(request)
            return recv_exact(sock, reply_size)


@atexit.register
def _stop_all() -> None:
    for tpm in list(_LIVE):
        try:
            tpm.stop()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass

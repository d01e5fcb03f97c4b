"""A TPM 1.2 over the wire: swtpm's TCP data protocol, as tcsd's TCP device mode speaks it.

:class:`SocketTpm12` has the engine's one method, ``execute(frame) -> bytes``,
so ``Tpm12(clock, engine=SocketTpm12(...))`` drives a TPM in another place -
``trustlab serve`` for TPM 1.2, or libtpms' TPM 1.2 in a swtpm
(:class:`Swtpm12`) - with every host-side helper (sessions, transport logs)
unchanged. The remote TPM's time is not visible in its bytes, so the caller
passes ``price``: called with each command and response, it returns the
command's name and its component breakdown (ms), which are charged to the
host's clock as an in-process engine would have charged them.
"""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

from trustlab.devices.tpm2.swtpm import free_port_pair, recv_exact
from trustlab.errors import TrustlabError
from trustlab.timing.clock import Clock

HEADER = 10
MAX_RESPONSE = 1 << 16

Pricer = Callable[[bytes, bytes], "tuple[str, dict[str, float]]"]


class WireError(TrustlabError):
    """The TPM at the other end cannot be reached or answered something that is not a TPM 1.2 frame."""


class SocketTpm12:
    """One persistent data connection to a TPM 1.2 at ``host:port``."""

    def __init__(self, host: str, port: int, clock: Clock | None = None, price: Pricer | None = None,
                 *, timeout: float = 120.0) -> None:
        self.address = (host, port)
        self.clock = clock
        self.price = price
        self.timeout = timeout
        self.nv = None       # Tpm12.restart() reads these; a remote TPM keeps its own state
        self.keygen = None
        self._sock: socket.socket | None = None

    def describe(self) -> str:
        return f"tcp:{self.address[0]}:{self.address[1]}"

    def _connect(self) -> socket.socket:
        try:
            sock = socket.create_connection(self.address, timeout=self.timeout)
        except OSError as exc:
            raise WireError(f"TPM 1.2 at {self.describe()}: cannot connect ({exc.strerror or exc})") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def execute(self, frame: bytes) -> bytes:
        if self._sock is None:
            self._sock = self._connect()
        where = f"TPM 1.2 at {self.describe()}"
        try:
            self._sock.sendall(frame)
            head = recv_exact(self._sock, HEADER)
            size = struct.unpack_from(">I", head, 2)[0]
            if not HEADER <= size <= MAX_RESPONSE:
                raise WireError(f"{where}: response size field {size} out of range")
            response = head + recv_exact(self._sock, size - HEADER)
        except OSError as exc:
            self.close()
            raise WireError(f"{where}: {exc.strerror or exc}") from None
        except WireError:
            self.close()
            raise
        if self.price is not None and self.clock is not None:
            name, breakdown = self.price(frame, response)
            with self.clock.command(name):
                for component, ms in breakdown.items():
                    self.clock.charge_ms(component, ms)
        return response

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None


class Swtpm12:
    """libtpms' TPM 1.2: ``swtpm socket`` without ``--tpm2``, powered, and started (ST_CLEAR)
    unless ``startup=False`` (then the client sends TPM_Startup).

    A fresh state directory has no endorsement key; :meth:`create_ek` makes one
    (TPM_CreateEndorsementKeyPair), as a manufacturer or ``swtpm_setup`` would.
    """

    def __init__(self, *, host: str = "127.0.0.1", state_dir: Path | None = None, startup: bool = True,
                 timeout: float = 10.0) -> None:
        self.host = host
        self.startup = startup
        self.timeout = timeout
        self._own_dir = state_dir is None
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Swtpm12":
        if shutil.which("swtpm") is None:
            raise WireError("'swtpm' not found on PATH: install the swtpm package (apt install swtpm)")
        if self.state_dir is None:
            self.state_dir = Path(tempfile.mkdtemp(prefix="trustlab-swtpm12-"))
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port_pair(self.host)
        argv = ["swtpm", "socket", "--tpmstate", f"dir={self.state_dir}",
                "--server", f"type=tcp,port={self.port},bindaddr={self.host}",
                "--ctrl", f"type=tcp,port={self.port + 1},bindaddr={self.host}",
                "--flags", "not-need-init,startup-clear" if self.startup else "not-need-init",
                "--log", f"file={self.state_dir / 'swtpm.log'},level=1"]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = (self.proc.stderr.read() or b"").decode(errors="replace").strip() if self.proc.stderr else ""
                self.stop()
                raise WireError(f"swtpm (TPM 1.2) exited at start: {err or 'no message'}")
            try:
                socket.create_connection((self.host, self.port + 1), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise WireError(f"swtpm (TPM 1.2) did not listen on {self.host}:{self.port + 1} within {self.timeout} s")

    def create_ek(self) -> int:
        """TPM_CreateEndorsementKeyPair (Part 3, 14.1) with an RSA-2048 template; returns its rc."""
        parms = struct.pack(">IHHI", 1, 3, 1, 12) + struct.pack(">III", 2048, 2, 0)  # RSA, OAEP, no sig
        body = b"\x00" * 20 + parms
        frame = struct.pack(">HII", 0x00C1, HEADER + len(body), 0x78) + body
        tpm = SocketTpm12(self.host, self.port or 0)
        try:
            return struct.unpack_from(">I", tpm.execute(frame), 6)[0]
        finally:
            tpm.close()

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            if self.proc.stderr is not None:
                self.proc.stderr.close()
            self.proc = None
        if self._own_dir and self.state_dir is not None:
            shutil.rmtree(self.state_dir, ignore_errors=True)
            self.state_dir = None

    def __enter__(self) -> "Swtpm12":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

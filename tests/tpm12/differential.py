"""Two TPM 1.2s side by side: our engine and libtpms (``swtpm socket`` without ``--tpm2``).

Both start in the same factory state: powered on, not yet started
(``--flags not-need-init`` / ``Engine(started=False)``), no endorsement key
(libtpms before ``swtpm_setup``; ``Engine(ek=False)``). Each side has a
:class:`~trustlab.devices.tpm12.Tpm12` host whose transport records the last
exchange, so a case may set up sessions through the host and is judged by the
last command/response pair.
"""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from trustlab.devices.tpm12 import MemoryNVStore, Tpm12
from trustlab.devices.tpm12.engine import Engine
from trustlab.devices.tpm12.primitives import KeyPool
from trustlab.devices.tpm2.swtpm import free_port_pair
from trustlab.timing.clock import Clock
from trustlab.timing.registry import load

CMD_INIT = 2
CMD_SET_LOCALITY = 5
NO_ANSWER = b""  # swtpm closes the connection without an answer (frame shorter than a header)


def _recv(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


class Libtpms:
    """libtpms' TPM 1.2 in a swtpm process with its own state directory and ports."""

    name = "libtpms"

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="trustlab-tpm12-diff-"))
        self.port = free_port_pair()
        self.proc = subprocess.Popen(
            ["swtpm", "socket", "--tpmstate", f"dir={self.dir}",
             "--server", f"type=tcp,port={self.port},bindaddr=127.0.0.1",
             "--ctrl", f"type=tcp,port={self.port + 1},bindaddr=127.0.0.1",
             "--flags", "not-need-init", "--log", f"file={self.dir / 'swtpm.log'},level=1"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port + 1), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.close()
                    raise RuntimeError("swtpm (TPM 1.2) did not start")
                time.sleep(0.02)
        self.sock: socket.socket | None = None

    def _data(self) -> socket.socket:
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        return self.sock

    def execute(self, frame: bytes) -> bytes:
        sock = self._data()
        sock.sendall(frame)
        if len(frame) < 10:  # swtpm waits for a whole header: end the connection to flush it
            sock.shutdown(socket.SHUT_WR)
            rsp = _recv(sock, 4096)
            sock.close()
            self.sock = None
            return rsp
        head = _recv(sock, 10)
        size = struct.unpack(">I", head[2:6])[0]
        return head + _recv(sock, size - 10)

    def ctrl(self, request: bytes, reply: int = 4) -> bytes:
        with socket.create_connection(("127.0.0.1", self.port + 1), timeout=10) as c:
            c.sendall(request)
            return _recv(c, reply)

    def init(self) -> None:
        """_TPM_Init: power cycle (swtpm CMD_INIT)."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        assert self.ctrl(struct.pack(">II", CMD_INIT, 0)) == b"\x00" * 4

    def set_locality(self, loc: int) -> None:
        if self.sock is not None:  # swtpm applies the locality to the next command on any connection
            pass
        assert self.ctrl(struct.pack(">IB", CMD_SET_LOCALITY, loc)) == b"\x00" * 4

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Ours:
    """The trustlab engine, in process, in the same factory state."""

    name = "trustlab"

    def __init__(self, clock: Clock, keygen: KeyPool) -> None:
        self.engine = Engine(clock, MemoryNVStore(), keygen, started=False, ek=False)

    def execute(self, frame: bytes) -> bytes:
        return self.engine.execute(frame)

    def init(self) -> None:
        self.engine.init()

    def set_locality(self, loc: int) -> None:
        self.engine.locality = loc

    def wait(self, seconds: float) -> None:
        self.engine.clock.charge_ms("idle", seconds * 1000.0)

    def close(self) -> None:
        pass


@dataclass
class Side:
    """One TPM with its host: raw access, a TSS-like client, and the case's scratch values."""

    target: Libtpms | Ours
    clock: Clock
    last: tuple[bytes, bytes] = (b"", b"")
    ctx: dict = field(default_factory=dict)
    record: list | None = None  # every exchange, while a test wants them

    def __post_init__(self) -> None:
        self.tpm = Tpm12(self.clock, engine=self)

    def execute(self, frame: bytes) -> bytes:
        rsp = self.target.execute(frame)
        self.last = (frame, rsp)
        if self.record is not None:
            self.record.append((frame, rsp))
        return rsp

    raw = execute


def pair(keygen: KeyPool) -> tuple[Side, Side]:
    clock = Clock(load("infineon-2010"))
    return Side(Ours(clock, keygen), clock), Side(Libtpms(), Clock(load("infineon-2010")))

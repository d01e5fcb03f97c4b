"""Two TPM 1.2s side by side: our engine and libtpms (``swtpm socket`` without ``--tpm2``).

Both start in the same factory state: powered on, not yet started
(``--flags not-need-init`` / ``Engine(started=False)``), no endorsement key
(libtpms before ``swtpm_setup``; ``Engine(ek=False)``). Each side has a
:class:`~trustlab.devices.tpm12.Tpm12` host whose transport records the last
exchange, so a case may set up sessions through the host and is judged by the
last command/response pair.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field

from trustlab.devices.tpm12 import MemoryNVStore, Tpm12
from trustlab.devices.tpm12.engine import Engine
from trustlab.devices.tpm12.primitives import KeyPool
from trustlab.serving.swtpm import recv_upto
from trustlab.serving.tpm12.socket_tpm import Swtpm12
from trustlab.timing.clock import Clock
from trustlab.timing.registry import load

CMD_INIT = 2
CMD_SET_LOCALITY = 5
NO_ANSWER = b""  # swtpm closes the connection without an answer (frame shorter than a header)


class Libtpms:
    """libtpms' TPM 1.2 in a swtpm process with its own state directory and ports."""

    name = "libtpms"

    def __init__(self) -> None:
        # the process: not-need-init, no Startup, no EK (the factory state the cases start from)
        self.swtpm = Swtpm12(startup=False).start()
        self.port = self.swtpm.port
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
            rsp = recv_upto(sock, 4096)
            sock.close()
            self.sock = None
            return rsp
        head = recv_upto(sock, 10)
        size = struct.unpack(">I", head[2:6])[0]
        return head + recv_upto(sock, size - 10)

    def ctrl(self, request: bytes, reply: int = 4) -> bytes:
        with socket.create_connection(("127.0.0.1", self.port + 1), timeout=10) as c:
            c.sendall(request)
            return recv_upto(c, reply)

    def init(self) -> None:
        """_TPM_Init: power cycle (swtpm CMD_INIT)."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        assert self.ctrl(struct.pack(">II", CMD_INIT, 0)) == b"\x00" * 4

    def set_locality(self, loc: int) -> None:
        # swtpm applies the locality to the next command on any connection
        assert self.ctrl(struct.pack(">IB", CMD_SET_LOCALITY, loc)) == b"\x00" * 4

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.swtpm.stop()


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


def run_scenario(ours: Side, libtpms: Side, boot: list[bytes], scenario: list[tuple]) -> list[tuple]:
    """Boot both TPMs with the ``boot`` frames (each must succeed), then run every ``(name, action,
    exact)`` step on both: rows ``(name, exact, our response, libtpms' response)``."""
    from .conformance_cases import rc_of

    for side in (ours, libtpms):
        for f in boot:
            assert rc_of(side.execute(f)) == 0
    out = []
    for name, action, exact in scenario:
        answers = []
        for side in (ours, libtpms):
            side.last = (b"", b"")
            action(side)
            answers.append(side.last[1])
        out.append((name, exact, *answers))
    return out


def run_on_fresh_pair(boot: list[bytes], scenario: list[tuple]) -> list[tuple]:
    """:func:`run_scenario` on a new pair of TPMs, the libtpms process closed afterwards, pass or fail: for
    scenarios whose checks need only the rows, not the sides."""
    ours, libtpms = pair(KeyPool())
    try:
        return run_scenario(ours, libtpms, boot, scenario)
    finally:
        libtpms.target.close()


def disagreements(rows: list[tuple]) -> list[str]:
    """The rows whose return code or length differ (and bytes, where the step compares them)."""
    from .conformance_cases import rc_of

    return [f"{name}: rc {rc_of(a)}/{rc_of(b)} len {len(a)}/{len(b)}"
            + (f" bytes {a.hex()} {b.hex()}" if exact and a != b else "")
            for name, exact, a, b in rows if rc_of(a) != rc_of(b) or len(a) != len(b) or (exact and a != b)]

"""The timing proxy: a TPM 2.0 that answers as slowly as a real chip.

``TimingProxy`` listens with swtpm's protocol — raw TPM 2.0 frames on the
data port P, the control channel on P+1 — so ``swtpm:port=P`` TCTIs (tpm2-tools,
tpm2-pytss, Keylime) work unmodified; the data port also accepts the MS
simulator's ``TPM_SEND_COMMAND`` framing (``mssim:port=P``). Each command is
forwarded to the backend; its cost is modelled from the wire (see
:mod:`.cost`); in realtime mode the response is held until the modelled time
has passed since the TPM started on it (the backend's own time is therefore
subtracted). With ``virtual=True`` nothing sleeps and the time is recorded.

One TPM serves one command at a time: commands from concurrent clients queue
on a lock, and a command's modelled time starts when the TPM takes it up.

    with Swtpm() as tpm, TimingProxy(load("nuvoton-npct750-wolftpm"), tpm) as proxy:
        ESAPI(TCTILdr("swtpm", proxy.tcti_conf))

or simply ``with timed_swtpm("nuvoton-npct750-wolftpm") as proxy: ...``.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Callable, Iterator

from trustlab.devices.tpm2 import cost, extensions, objects, wire
from trustlab.devices.tpm2.backend import Backend, SocketBackend, open_backend
from trustlab.devices.tpm2.commands import TPM_RC_FAILURE, command_name
from trustlab.devices.tpm2.swtpm import Swtpm, free_port_pair
from trustlab.errors import TrustlabError
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Profile

IDLE_PARTIAL_TIMEOUT = 10.0
"""Seconds a client may stall in the middle of a frame before it is dropped."""

PROBE_TIMEOUT = 10.0
"""Seconds :meth:`TimingProxy.check_backend` waits for the backend to connect and answer."""

TPM2_GetRandom = 0x17B


@dataclass
class TraceRecord:
    """One command as the proxy saw and timed it (one JSONL line of ``--trace``)."""

    seq: int
    command: str
    code: str
    variant: str | None
    framing: str
    in_bytes: int
    out_bytes: int
    rc: int
    modelled_ms: float
    backend_ms: float
    held_ms: float
    unmodelled: bool
    missing: list[str] = field(default_factory=list)
    breakdown: dict[str, float] = field(default_factory=dict)
    terms: dict[str, float] = field(default_factory=dict)


def precise_sleep_until(deadline: float) -> None:
    """Sleep until ``time.perf_counter() >= deadline``; spin (without yielding) for the last 0.2 ms.

    ``time.sleep`` overshoots by ~0.1 ms; a short busy spin removes that. The
    spin must not call ``sched_yield`` (``time.sleep(0)``): on a loaded host a
    yielding thread can lose the CPU for a whole time slice, several ms.
    """
    remaining = deadline - time.perf_counter()
    if remaining > 0.0002:
        time.sleep(remaining - 0.0002)
    while time.perf_counter() < deadline:
        pass


def _raise_thread_priority() -> bool:
    """Run the calling thread (one that holds responses) under SCHED_FIFO if allowed.

    On a loaded host a sleeping thread wakes several ms late under the
    ordinary scheduler - measured here: p99 ~3 ms lateness at load 3 on 2
    cores, even at nice -20, because autogroup scheduling shares the CPU
    between sessions - which is the whole error budget of realtime mode. A
    SCHED_FIFO thread is woken within microseconds. The thread sleeps almost
    all the time and spins at most 0.2 ms per command, and the kernel's RT
    throttling caps it anyway. Without the privilege, a nice value of -10
    is tried (it helps against load from the same session); else nothing.
    Returns whether real-time scheduling was obtained.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))  # 0 = the calling thread on Linux
        return True
    except (OSError, AttributeError):
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -10)
    except (OSError, AttributeError):
        pass
    return False


def _quickack(conn: socket.socket) -> None:
    """Acknowledge at once: TSS clients write a frame in pieces, and Nagle on
    their side plus delayed ACKs on ours would add ~40 ms to such a command."""
    try:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
    except (OSError, AttributeError):
        pass


class TimingProxy:
    """Serve ``backend`` on ``host:port`` (data) and ``port+1`` (control), timed by ``profile``.

    ``backend``: ``"swtpm"`` (start and own a fresh swtpm), ``"tcp:HOST:PORT"``,
    ``"device:/dev/tpmrm0"``, a :class:`Swtpm`, or a :class:`Backend`.
    ``trace``: a path or text stream for JSONL records, or a callable taking a
    :class:`TraceRecord`. ``control``: ``"swtpm"`` relays swtpm's control
    channel; ``"mssim"`` answers the MS simulator's platform port instead.
    ``rt_priority``: in realtime mode, serve connections from SCHED_FIFO
    threads when the process may (see :func:`_raise_thread_priority`).
    ``log``: called with a one-line message when the backend fails while
    serving (a client only sees TPM_RC_FAILURE; an operator needs the why).
    The proxy starts serving in background threads on construction.
    """

    def __init__(self, profile: Profile, backend: "str | Swtpm | Backend" = "swtpm", *,
                 virtual: bool = False, trace: "str | Path | IO[str] | Callable[[TraceRecord], None] | None" = None,
                 host: str = "127.0.0.1", port: int = 0, seed: int = 0, control: str = "swtpm",
                 keep_records: int = 100_000, rt_priority: bool = True,
                 log: Callable[[str], None] | None = None) -> None:
        if control not in ("swtpm", "mssim"):
            raise ValueError(f"control must be 'swtpm' or 'mssim', not {control!r}")
        self.profile = profile
        self.virtual = virtual
        self.rt_priority = rt_priority
        self.control = control
        self.backend = open_backend(backend)
        self.family = getattr(self.backend, "family", "tpm2")
        self._log = log
        self._backend_down = False
        self.clock = Clock(profile, seed=seed, realtime=False)
        self.objects = objects.ObjectTable()
        self.extension_state = extensions.ExtensionState(seed)
        self.records: list[TraceRecord] = []
        self._keep = keep_records
        self._seq = 0
        self._tpm_lock = threading.Lock()
        self._trace_lock = threading.Lock()
        self._trace_file: IO[str] | None = None
        self._trace_close = False
        self._trace_fn: Callable[[TraceRecord], None] | None = None
        if callable(trace):
            self._trace_fn = trace
        elif isinstance(trace, (str, Path)):
            self._trace_file = open(trace, "a", encoding="utf-8")  # noqa: SIM115 - closed in stop()
            self._trace_close = True
        elif trace is not None:
            self._trace_file = trace
        if not virtual and sys.getswitchinterval() > 0.001:
            # A held response must go out within ~0.1 ms of its due time; with
            # Python's default 5 ms GIL switch interval a busy thread elsewhere
            # in the process could delay the waking proxy thread by that much.
            sys.setswitchinterval(0.001)
        self.host = host
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        try:
            self._data_srv, self._ctrl_srv = self._listen(host, port)
        except BaseException:
            self.backend.close()
            raise
        self.port = self._data_srv.getsockname()[1]
        self.ctrl_port = self._ctrl_srv.getsockname()[1]
        for srv, handler in ((self._data_srv, self._serve_data), (self._ctrl_srv, self._serve_ctrl)):
            t = threading.Thread(target=self._accept_loop, args=(srv, handler), daemon=True,
                                 name=f"trustlab-proxy-{self.port}-accept")
            t.start()
            self._threads.append(t)

    # ---- addresses ---------------------------------------------------------

    @property
    def tcti(self) -> str:
        return f"swtpm:host={self.host},port={self.port}"

    @property
    def tcti_conf(self) -> str:
        return f"host={self.host},port={self.port}"

    @property
    def mssim_tcti(self) -> str:
        return f"mssim:host={self.host},port={self.port}"

    # ---- life cycle --------------------------------------------------------

    @staticmethod
    def _listen(host: str, port: int) -> tuple[socket.socket, socket.socket]:
        for _attempt in range(20):
            p = port or free_port_pair(host)
            socks = []
            try:
                for q in (p, p + 1):
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    socks.append(s)
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind((host, q))
                    s.listen(16)
                return socks[0], socks[1]
            except OSError as exc:
                for s in socks:
                    s.close()
                if port:
                    raise TrustlabError(f"cannot listen on {host}:{port}/{port + 1}: {exc.strerror}") from None
        raise OSError("no free port pair for the proxy")

    def check_backend(self) -> None:
        """Raise a one-line error naming the backend unless it answers a harmless TPM2_GetRandom.

        Run before announcing that the proxy is ready: otherwise a dead backend
        surfaces only as TPM_RC_FAILURE in some client much later. Any
        well-formed answer other than TPM_RC_FAILURE counts as alive
        (TPM_RC_INITIALIZE just means the client has yet to send TPM2_Startup).
        The probe is neither charged to the clock nor traced.
        """
        name = self.backend.describe()
        timeout = getattr(self.backend, "timeout", None)
        if isinstance(self.backend, SocketBackend):
            self.backend.timeout = min(timeout, PROBE_TIMEOUT)
        try:
            with self._tpm_lock:
                response = self.backend.transact(wire.build_command(TPM2_GetRandom, b"\x00\x08"))
            try:
                rc = wire.response_code(response)
            except (wire.WireError, struct.error, ValueError):
                raise TrustlabError(f"backend {name}: TPM2_GetRandom got a malformed answer "
                                    f"({len(response)} bytes)") from None
            if rc == TPM_RC_FAILURE:
                raise TrustlabError(f"backend {name}: not answering ({self._why_unreachable()})")
        finally:
            if isinstance(self.backend, SocketBackend):
                self.backend.timeout = timeout

    def _why_unreachable(self) -> str:
        """The OS's reason a socket backend cannot be reached, else the TPM's failure code."""
        address = getattr(self.backend, "address", None)
        if address is not None:
            family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
            try:
                with socket.socket(family, socket.SOCK_STREAM) as s:
                    s.settimeout(PROBE_TIMEOUT)
                    s.connect(address)
            except OSError as exc:
                return f"cannot connect: {exc.strerror or exc}"
        return "TPM2_GetRandom returned TPM_RC_FAILURE"

    def _note_backend(self, command: bytes, response: bytes) -> None:
        """Log (once per outage) when the backend stops answering, and when it is back."""
        if self._log is None:
            return
        try:
            failed = wire.response_code(response) == TPM_RC_FAILURE
        except (wire.WireError, struct.error, ValueError):
            failed = True
        if failed and not self._backend_down:
            try:
                what = command_name(struct.unpack_from(">I", command, 6)[0])
            except struct.error:
                what = "a command"
            self._log(f"backend {self.backend.describe()}: {what} failed (TPM_RC_FAILURE: backend unreachable "
                      "or in failure mode); clients get TPM_RC_FAILURE until it answers again")
        elif not failed and self._backend_down:
            self._log(f"backend {self.backend.describe()}: answering again")
        self._backend_down = failed

    def reset(self) -> None:
        """Power-cycle the backend TPM between runs: CMD_INIT, then TPM2_Startup(CLEAR).

        Use this rather than ``Swtpm.reset()`` while the proxy serves a swtpm:
        the proxy holds swtpm's single data connection. The object table and
        the clock's ledger are cleared too.
        """
        with self._tpm_lock:
            address = self.backend.ctrl_address
            if address is not None:
                family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
                with socket.socket(family, socket.SOCK_STREAM) as ctrl:
                    ctrl.settimeout(5)
                    ctrl.connect(address)
                    ctrl.sendall(wire.ctrl_init())
                    reply = ctrl.recv(4)
                if len(reply) < 4 or wire.ctrl_result(reply) != 0:
                    raise TrustlabError(f"backend {self.backend.describe()}: CMD_INIT failed")
                self.backend.release()
            rc = wire.response_code(self.backend.transact(wire.startup_command()))
            if rc not in (0, 0x100):
                raise TrustlabError(f"backend {self.backend.describe()}: TPM2_Startup failed with {rc:#x}")
            self.objects = objects.ObjectTable()
            self.clock.reset()

    def stop(self) -> None:
        """Close listeners and connections, the backend (and its swtpm if owned), the trace."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        for srv in (self._data_srv, self._ctrl_srv):
            try:
                srv.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            srv.close()
        with self._conns_lock:
            for c in list(self._conns):
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        for t in self._threads:
            t.join(timeout=2)
        with self._tpm_lock:
            self.backend.close()
        if self._trace_file is not None and self._trace_close:
            self._trace_file.close()

    def __enter__(self) -> "TimingProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- serving -----------------------------------------------------------

    def _accept_loop(self, srv: socket.socket, handler: Callable[[socket.socket], None]) -> None:
        if handler == self._serve_data and not self.virtual and self.rt_priority:
            # tcti-swtpm opens a connection per command: accepting late is holding late
            _raise_thread_priority()
        while not self._stopping.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _quickack(conn)
            with self._conns_lock:
                self._conns.add(conn)
            t = threading.Thread(target=self._guarded, args=(handler, conn), daemon=True)
            t.start()

    def _guarded(self, handler: Callable[[socket.socket], None], conn: socket.socket) -> None:
        """Whatever a client does, only its own connection ends."""
        try:
            handler(conn)
        except (OSError, ConnectionError, wire.WireError, struct.error):
            pass
        finally:
            extensions.connection_closed(id(conn), self.extension_state)
            with self._conns_lock:
                self._conns.discard(conn)
            try:
                conn.close()
            except OSError:
                pass

    def _serve_data(self, conn: socket.socket) -> None:
        if not self.virtual and self.rt_priority:
            _raise_thread_priority()
        reader = wire.FrameReader(max_frame=4096, family=self.family)
        while not self._stopping.is_set():
            conn.settimeout(IDLE_PARTIAL_TIMEOUT if reader.buffered else None)
            try:
                chunk = conn.recv(65536)
            except socket.timeout:
                return
            if not chunk:
                return
            _quickack(conn)
            reader.feed(chunk)
            while True:
                event = reader.next_event()
                if event is wire.NEED_DATA:
                    break
                if isinstance(event, wire.Reject):
                    conn.sendall(event.reply)
                    return
                if isinstance(event, wire.SessionEnd):
                    return
                if isinstance(event, wire.Handshake):
                    conn.sendall(wire.handshake_reply())
                    continue
                assert isinstance(event, wire.Command)
                response = self.execute(event.payload, event.framing, conn_id=id(conn))
                conn.sendall(wire.frame_reply(response, event.framing))

    def execute(self, command: bytes, framing: str = "raw", conn_id: object = None) -> bytes:
        """Run one complete command frame on the backend and hold it for its modelled time.

        The command path, one step per place (keep it that simple):

        1. *Extension hook* (engineer i17b): ``extensions.dispatch(command, ctx)``
           is called here, first, before the resource manager sees the
           command; a claimed command is answered and charged from its
           ``ExtensionResult`` and never reaches the backend.
        2. Resource manager (``family == "tpm2"`` only).
        3. ``backend.transact``.
        4. Pricing: ``backend.charged()`` if it reports, else the TPM 2.0 wire
           cost model (never for ``family == "tpm1.2"``).
        5. Hold until the modelled time has passed, trace.
        """
        with self._tpm_lock:
            started = time.perf_counter()
            claimed = extensions.dispatch(command, extensions.Context(
                conn_id, self.profile, self.backend.transact, self.extension_state))
            if claimed is None:
                response = self.backend.transact(command)
            backend_ms = (time.perf_counter() - started) * 1000.0
            if claimed is None:
                self._note_backend(command, response)
                assessed, charged = self._price(command, response)
                extra_ms: dict[str, float] = {}
            else:
                response, assessed = claimed.response, claimed.assessed(len(command))
                self.objects.observe(claimed.code, command, response, claimed.rc)  # e.g. a forwarded Startup
                if claimed.fault and self._log is not None:
                    self._log(claimed.fault)  # the client only saw TPM_RC_FAILURE
                charged, extra_ms = None, claimed.charges_ms
            with self.clock.command(assessed.command) as rec:
                if charged is not None:
                    for component, ms in charged.items():
                        self.clock.charge_ms(component, ms)
                else:
                    for component, count in assessed.terms.items():
                        self.clock.charge(component, count)
                for component, ms in extra_ms.items():
                    self.clock.charge_ms(component, ms)
            modelled = rec.ms
            if not self.virtual:
                precise_sleep_until(started + modelled / 1000.0)
            held_ms = (time.perf_counter() - started) * 1000.0 - backend_ms
            self._record(assessed, framing, modelled, backend_ms, held_ms, rec.breakdown)
        return response

    def _price(self, command: bytes, response: bytes) -> tuple[cost.CommandCost, dict[str, float] | None]:
        """What the command costs: the backend's own charge if it reports one, else the wire model.

        Returns the assessed command (name, sizes, rc, terms for the trace) and,
        when the backend priced it, its component -> ms breakdown.
        """
        charged = self.backend.charged()
        if self.family == "tpm1.2":
            code = struct.unpack_from(">I", command, 6)[0] if len(command) >= wire.HEADER_SIZE else 0
            rc = struct.unpack_from(">I", response, 6)[0] if len(response) >= wire.HEADER_SIZE else 0x9
            namer = getattr(self.backend, "command_name", None)
            name = namer(code) if callable(namer) else f"TPM_ORD_{code:#x}"
            assessed = cost.CommandCost(name, code, None, {}, len(command), len(response), rc,
                                        modelled=charged is not None)
            return assessed, dict(charged or {})
        assessed = cost.assess(command, response, self.objects, self.profile)
        self.objects.observe(assessed.code, command, response, assessed.rc)
        return assessed, (dict(charged) if charged is not None else None)

    def _record(self, a: cost.CommandCost, framing: str, modelled: float, backend_ms: float,
                held_ms: float, breakdown: dict[str, float]) -> None:
        self._seq += 1
        record = TraceRecord(seq=self._seq, command=a.command, code=f"{a.code:#x}", variant=a.variant,
                             framing=framing, in_bytes=a.in_bytes, out_bytes=a.out_bytes, rc=a.rc,
                             modelled_ms=modelled, backend_ms=backend_ms, held_ms=held_ms,
                             unmodelled=not a.modelled, missing=list(a.missing), breakdown=dict(breakdown),
                             terms=dict(a.terms))
        if len(self.records) >= self._keep:
            del self.records[: self._keep // 2]
        self.records.append(record)
        if self._trace_fn is not None:
            self._trace_fn(record)
        if self._trace_file is not None:
            with self._trace_lock:
                self._trace_file.write(json.dumps(asdict(record)) + "\n")
                self._trace_file.flush()

    # ---- control channel ---------------------------------------------------

    def _serve_ctrl(self, conn: socket.socket) -> None:
        if self.control == "mssim":
            return self._serve_mssim_platform(conn)
        address = self.backend.ctrl_address
        if address is None:
            return self._serve_ctrl_emulated(conn)
        family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as up:
            up.settimeout(10)
            up.connect(address)
            buf = b""
            while not self._stopping.is_set():
                conn.settimeout(IDLE_PARTIAL_TIMEOUT if buf else None)
                try:
                    chunk = conn.recv(65536)
                except socket.timeout:
                    return
                if not chunk:
                    return
                buf += chunk
                while buf:
                    n = wire.ctrl_request_length(buf)
                    if n is None or len(buf) < n:
                        if len(buf) > 4 + 8 + wire.MAX_FRAME:  # a lying CMD_HASH_DATA length
                            conn.sendall(wire.ctrl_error())
                            return
                        break
                    code = struct.unpack(">I", buf[:4])[0]
                    if code not in wire.RELAYED_CONTROL:
                        # state blobs, CMD_STOP, data fds and unknown codes are not for proxy clients
                        conn.sendall(wire.ctrl_error())
                        return
                    request, buf = buf[:n], buf[n:]
                    self._observe_ctrl(request)
                    up.sendall(request)
                    reply = up.recv(65536)
                    if not reply:
                        return
                    conn.sendall(reply)

    def _observe_ctrl(self, request: bytes) -> None:
        if len(request) >= 4 and struct.unpack(">I", request[:4])[0] == wire.CMD_INIT:
            with self._tpm_lock:
                self.objects.clear_transient()

    def _serve_ctrl_emulated(self, conn: socket.socket) -> None:
        """No control channel behind us (a device): acknowledge, report no capabilities."""
        while True:
            request = conn.recv(65536)
            if len(request) < 4:
                return
            code = struct.unpack(">I", request[:4])[0]
            if code == wire.CMD_GET_CAPABILITY:
                conn.sendall(struct.pack(">II", 0, 0))
            elif code == wire.CMD_GET_TPMESTABLISHED:
                conn.sendall(struct.pack(">II", 0, 0))
            else:
                conn.sendall(struct.pack(">I", 0))

    def _serve_mssim_platform(self, conn: socket.socket) -> None:
        """MS simulator platform port: every signal is acknowledged with 0.

        Power and NV signals do not reset the backend (a ``tcti-mssim`` sends
        POWER_ON on every connect; resetting would wipe state between tool
        invocations). Use the Swtpm's ``reset()`` for a deliberate power cycle.
        """
        buf = b""
        while True:
            chunk = conn.recv(4096)
            if not chunk:
                return
            buf += chunk
            while len(buf) >= 4:
                code = struct.unpack(">I", buf[:4])[0]
                if code in (wire.MS_SESSION_END, wire.MS_STOP):
                    return
                buf = buf[4:]
                conn.sendall(struct.pack(">I", 0))


@contextmanager
def timed_swtpm(profile: "Profile | str", *, virtual: bool = False, trace=None, seed: int = 0,
                unix: bool = False) -> Iterator[TimingProxy]:
    """A fresh swtpm behind a timing proxy, both cleaned up on exit.

    The one-liner for tests, sweeps and experiments::

        with timed_swtpm("nuvoton-npct750-wolftpm", virtual=True) as proxy:
            esys = ESAPI(TCTILdr("swtpm", proxy.tcti_conf))
            ...
            proxy.clock.now_ms      # modelled time so far

    ``proxy.backend.owned`` is the :class:`Swtpm`.
    """
    if isinstance(profile, str):
        from trustlab.timing import registry

        profile = registry.load(profile)
    tpm = Swtpm(unix=unix).start()
    try:
        from trustlab.devices.tpm2.backend import swtpm_backend

        proxy = TimingProxy(profile, swtpm_backend(tpm, owned=True), virtual=virtual, trace=trace, seed=seed)
    except BaseException:
        tpm.stop()
        raise
    try:
        yield proxy
    finally:
        proxy.stop()

"""The timing proxy: a TPM that answers as slowly as a real chip.

``TimingProxy`` listens with swtpm's protocol - raw TPM frames on the data
port P, the control channel on P+1 - so ``swtpm:port=P`` TCTIs (tpm2-tools,
tpm2-pytss, Keylime) work unmodified; the data port also accepts the MS
simulator's ``TPM_SEND_COMMAND`` framing and the control port tells the MS
simulator's platform signals from swtpm's control requests by the first
frame, so ``mssim:port=P`` works against the same default proxy.

What happens to a command between the sockets and the backend is its
generation's command path (:mod:`.path`): for TPM 2.0 (:mod:`.tpm2.path`) an
extension hook, a resource manager with the kernel tpmrm's rules
(:mod:`.tpm2.rm`; ``rm=False`` for raw access), the backend, and a cost
modelled from the wire or reported by the backend itself
(:meth:`.Backend.charged`); for TPM 1.2 (:mod:`.tpm12.path`) the engine, which
prices itself. This module is generation-blind. In realtime mode the response is held until the
modelled time has passed since its last request byte arrived (one event-loop
thread, :mod:`.frontend`); with ``virtual=True`` nothing sleeps and the time
is recorded. One TPM serves one command at a time, so concurrent clients
queue as they would on a chip.

    with Swtpm() as tpm, TimingProxy(load("nuvoton-npct750-wolftpm"), tpm) as proxy:
        ESAPI(TCTILdr("swtpm", proxy.tcti_conf))

or simply ``with timed_swtpm("nuvoton-npct750-wolftpm") as proxy: ...``.
"""

from __future__ import annotations

import itertools
import socket
import struct
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from trustlab.devices.tpm2 import cost
from trustlab.serving import control, peers, wire
from trustlab.serving.backend import Backend
from trustlab.serving.frontend import serve
from trustlab.serving.oplog import OperatorLog
from trustlab.serving.path import CommandPath
from trustlab.serving.realtime import precise_sleep_until
from trustlab.serving.swtpm import Swtpm, free_port_pair
from trustlab.serving.tpm12.path import Tpm12Path
from trustlab.serving.tpm2.backend import SocketBackend, open_backend
from trustlab.serving.tpm2.path import Tpm2Path
from trustlab.serving.trace import TraceRecord, TraceWriter
from trustlab.errors import TrustlabError
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Profile

PROBE_TIMEOUT = 10.0
"""Seconds :meth:`TimingProxy.check_backend` waits for the backend to connect and answer."""

CONTROL_MODES = ("auto", "swtpm", "mssim")


@dataclass(eq=False)
class Client:
    """A resource-manager space's owner: a local process (tcti-swtpm reconnects per command) or
    one connection (remote clients, whose process cannot be seen)."""

    id: int
    pid: int | None
    space: Any
    """What the client holds of its own in the TPM (TPM 2.0: its resource-manager space; else None)."""
    conns: set[int] = field(default_factory=set)
    started: str | None = None
    """The process's start time (tells a reused PID apart)."""


class TimingProxy:
    """Serve ``backend`` on ``host:port`` (data) and ``port+1`` (control), timed by ``profile``.

    ``backend``: ``"swtpm"`` (start and own a fresh swtpm), ``"tcp:HOST:PORT"``,
    ``"device:/dev/tpmrm0"``, a :class:`Swtpm`, or a :class:`Backend`.
    ``trace``: a path or text stream for JSONL records, or a callable taking a
    :class:`TraceRecord`. ``control``: ``"auto"`` tells swtpm control requests
    from MS-simulator platform signals per connection; ``"swtpm"`` /
    ``"mssim"`` force one. ``rm``: run the resource manager (TPM 2.0 backends).
    ``keep_records``: how many recent :class:`TraceRecord` ``records`` holds (0: none; without a
    trace no record is built then, as in ``trustlab serve``). ``abandoned_sessions``: how many
    client-saved TPM 2.0 sessions of exited clients the resource manager keeps for a later
    process to load (None: tpm2-abrmd's 4; 0: flush every session of a client that exits, as the
    kernel does). ``rt_priority``: in realtime mode, wait and hold under SCHED_FIFO when the
    process may. ``log``: called with a one-line message when the backend fails
    while serving or a control request is refused (a client only sees an
    error code; an operator needs the why). Serving starts on construction.
    """

    def __init__(self, profile: Profile, backend: "str | Swtpm | Backend" = "swtpm", *,
                 virtual: bool = False, trace: "str | Path | IO[str] | Callable[[TraceRecord], None] | None" = None,
                 host: str = "127.0.0.1", port: int = 0, seed: int = 0, control: str = "auto",
                 keep_records: int = 100_000, rt_priority: bool = True, rm: bool = True,
                 log: Callable[[str], None] | None = None, startup: str = "clear",
                 abandoned_sessions: int | None = None, replace_trace: bool = False) -> None:
        if control not in CONTROL_MODES:
            raise ValueError(f"control must be one of {', '.join(CONTROL_MODES)}, not {control!r}")
        if startup not in ("clear", "none"):
            raise ValueError(f"startup must be 'clear' or 'none', not {startup!r}")
        self.startup = startup
        self.profile = profile
        self.virtual = virtual
        self.control = control
        self.backend = open_backend(backend, log=log)
        self.family = getattr(self.backend, "family", "tpm2")
        self._log = OperatorLog(log)
        self._state_error: str | None = None
        self.clock = Clock(profile, seed=seed, realtime=False)
        self._tpm_lock = threading.RLock()
        self.path: CommandPath
        if self.family == "tpm1.2":
            self.path = Tpm12Path(self.backend, self.clock, self._log, cost.CommandCost)
        else:
            self.path = Tpm2Path(profile, self.backend, self.clock, self._log, seed=seed, rm=rm,
                                 owner_gone=self._forget_if_gone, lock=self._tpm_lock,
                                 abandoned_sessions=abandoned_sessions)
        # the generation's parts, for callers that look inside (tests, extensions): None where absent
        self.max_frame = self.path.max_frame
        """The largest command frame the front end takes whole (:attr:`CommandPath.max_frame`)."""
        self.rm = getattr(self.path, "rm", None)
        self.objects = getattr(self.path, "objects", None)
        self.extension_state = getattr(self.path, "extension_state", None)
        self.tpm12_handles = getattr(self.path, "handles", None)
        self.records: list[TraceRecord] = []
        self.late_count = 0
        """Responses where the backend alone took longer than the modelled time."""
        self.refused_control = 0
        self.rejected_frames = 0
        self._keep = keep_records
        self._seq = 0
        self._chip_free = 0.0
        self._trace_writer: TraceWriter | None = None
        self.trace_error: str | None = None
        self._trace_fn: Callable[[TraceRecord], None] | None = None
        if callable(trace):
            self._trace_fn = trace
        elif trace is not None:
            try:
                self._trace_writer = TraceWriter(trace, replace=replace_trace)  # closed in stop()
            except OSError as exc:
                self.backend.close()
                raise TrustlabError(f"--trace {trace}: cannot open ({exc.strerror or exc})") from None
        self.path.traced = self._trace_writer is not None or self._trace_fn is not None
        if not virtual and sys.getswitchinterval() > 0.001:
            # A held response must go out within ~0.1 ms of its due time; with
            # Python's default 5 ms GIL switch interval a busy thread elsewhere
            # in the process could delay the waking loop thread by that much.
            sys.setswitchinterval(0.001)
        self.host = host
        self._client_ids = itertools.count(1)
        self._clients: dict[tuple, Client] = {}
        self._peers = peers.PeerFinder()
        self._api_client = self._new_client(("api",), None)
        self._stopped = False
        try:
            data_srv, ctrl_srv = self._listen(host, port)
        except BaseException:
            self.backend.close()
            raise
        self.port = data_srv.getsockname()[1]
        self.ctrl_port = ctrl_srv.getsockname()[1]
        self._front = serve(self, data_srv, ctrl_srv, control=control, rt_priority=rt_priority, log=self._log)

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
                    s.listen(64)
                return socks[0], socks[1]
            except OSError as exc:
                for s in socks:
                    s.close()
                if port:
                    raise TrustlabError(f"cannot listen on {host}:{port}/{port + 1}: {exc.strerror}") from None
        raise OSError("no free port pair for the proxy")

    def check_backend(self) -> None:
        """Raise a one-line error naming the backend unless it answers a harmless GetRandom.

        Run before announcing that the proxy is ready: otherwise a dead backend
        surfaces only as TPM_RC_FAILURE in some client much later. Any
        well-formed answer other than a failure code counts as alive
        (TPM_RC_INITIALIZE just means the client has yet to send TPM2_Startup).
        The probe is neither charged to the clock nor traced.
        """
        name = self.backend.describe()
        timeout = getattr(self.backend, "timeout", None)
        if isinstance(self.backend, SocketBackend):
            self.backend.timeout = min(timeout, PROBE_TIMEOUT)
        try:
            with self._tpm_lock:
                response = self.backend.transact(self.path.probe)
            try:
                rc = wire.response_code(response)
            except (wire.WireError, struct.error, ValueError):
                raise TrustlabError(f"backend {name}: GetRandom got a malformed answer "
                                    f"({len(response)} bytes)") from None
            if rc in self.path.failure_rcs:
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
        return "GetRandom returned a failure code"

    def reset(self) -> None:
        """Power-cycle the backend TPM between runs: CMD_INIT, then Startup(CLEAR).

        Use this rather than ``Swtpm.reset()`` while the proxy serves a swtpm:
        the proxy holds swtpm's single data connection. The object table, the
        resource manager's spaces and the clock's ledger are cleared too.
        """
        with self._tpm_lock:
            reply = self._control_upstream(wire.CMD_INIT, wire.ctrl_init())
            if len(reply) < 4 or wire.ctrl_result(reply) != 0:
                raise TrustlabError(f"backend {self.backend.describe()}: CMD_INIT failed")
            rc = self._after_power_up(startup=True)
            if rc not in self.path.startup_ok:
                raise TrustlabError(f"backend {self.backend.describe()}: Startup failed with {rc:#x}")
            self.clock.reset()
            self._chip_free = 0.0

    def _after_power_up(self, startup: bool) -> int:
        """After a power cycle (CMD_INIT): every transient object and session is gone; with ``startup``,
        send the TPM(2)_Startup(CLEAR) a BIOS sends. Returns the Startup's response code (0: none sent).

        The TPM 1.2 engine plays the BIOS itself (its ``startup`` option), so nothing is sent to it.
        """
        self.backend.release()
        self.path.power_cycled()
        for client in self._clients.values():
            client.space = self.path.new_space(client.id)
        if not startup or getattr(self.backend, "plays_bios", False):
            return 0
        return self.path.startup_rc()

    @property
    def serving(self) -> bool:
        """False once the serving loop has ended on its own (:attr:`failure` says why)."""
        return self._front.serving

    @property
    def failure(self) -> str | None:
        return self._front.failure

    @property
    def backend_lost(self) -> str | None:
        """Why the backend will never answer again (the swtpm serve owns has exited), else None: then stop()
        (``trustlab serve`` polls this), never serve a dead TPM behind open ports."""
        return self.backend.lost()

    def stop(self) -> None:
        """Stop accepting; answer the commands in flight; close connections, the backend (and its swtpm if
        owned), the trace."""
        if self._stopped:
            return
        self._stopped = True
        self._front.stop()
        with self._tpm_lock:
            self.backend.close()
        if self._trace_writer is not None:
            try:
                self._trace_writer.close()
            except OSError as exc:
                self._trace_failed(exc)
        self._log.flush()

    def __enter__(self) -> "TimingProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def summary(self) -> str:
        """One line for the operator at exit: commands, modelled time, late responses."""
        sessions = self.path.held_summary()
        return (f"{self._seq} command(s), {self.clock.now_ms:.1f} ms modelled, {self.late_count} response(s) "
                f"where the backend alone exceeded the model, {self.refused_control} control request(s) refused, "
                f"{self.rejected_frames} malformed frame(s) rejected{sessions}")

    # ---- clients (resource-manager spaces) ---------------------------------

    def loaded_objects(self) -> int:
        """Transient objects the resource manager holds (saved) for its clients, all spaces."""
        return self.path.loaded_objects(list(self._clients.values()))

    def _new_client(self, key: tuple, pid: int | None) -> Client:
        client_id = next(self._client_ids)
        client = Client(client_id, pid, self.path.new_space(client_id))
        self._clients[key] = client
        return client

    def peer_pid(self, sock: socket.socket) -> int | None:
        """The local process at the other end of ``sock`` (None: remote or unknown)."""
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return None
        return self._peers.pid_of(sock)

    def client_for(self, sock: socket.socket, conn_id: int) -> Client:
        """The client a new data connection belongs to: its local process, else the connection."""
        pid = self._peers.pid_of(sock) if self.path.per_client else None
        started = peers.start_time(pid) if pid is not None else None
        key = ("pid", pid, started) if pid is not None else ("conn", conn_id)  # a reused PID is a new client
        client = self._clients.get(key) or self._new_client(key, pid)
        client.started = started
        client.conns.add(conn_id)
        return client

    def client_left(self, client: Client, conn_id: int) -> None:
        """A data connection closed; a connection-keyed client ends with it."""
        client.conns.discard(conn_id)
        if client.pid is None and not client.conns:
            self._end_client(("conn", conn_id))

    def reap_clients(self) -> None:
        """End the clients whose process has exited (as closing /dev/tpmrm0 does)."""
        for key, client in list(self._clients.items()):
            if client.pid is not None and not client.conns and not peers.alive(client.pid, client.started):
                self._end_client(key)

    def _forget_if_gone(self, space: Any) -> bool:
        """The command path asks: has the owner of ``space`` exited? Then forget it now, True (its exit
        would be noticed at the next reap; the next tool of a shell script is faster than that)."""
        for key, client in list(self._clients.items()):
            if client.space is space:
                if client.pid is None or client.conns or peers.alive(client.pid, client.started):
                    return False
                del self._clients[key]
                return True
        return False

    def _end_client(self, key: tuple) -> None:
        client = self._clients.pop(key, None)
        if client is None:
            return
        work = self.path.client_ended(client)
        if work is None:
            return
        assessed = self.path.close_cost()
        with self._tpm_lock:
            if assessed is None:  # TPM work nobody sees priced (TPM 1.2's flushes)
                work()
                return
            path = self.path
            path.clear_ledger()
            arrived = time.perf_counter()
            with self.clock.command(assessed.command) as rec:
                work()
            self._chip_free = max(self._chip_free, time.perf_counter()) + rec.ms / 1000.0
            record = self._record(assessed, "rm", rec.ms, 0.0, 0.0, rec.breakdown, served_ms=rec.ms, late=False,
                                  client=client.id, pid=client.pid)
            record.arrived = arrived
        self.traced(record)  # the space's objects flushed as the client's process ended: chip time, no client

    # ---- the command path --------------------------------------------------

    def execute(self, command: bytes, framing: str = "raw") -> bytes:
        """Run one complete command frame (as the API's own client) and hold it for its modelled time."""
        response, due, record = self.serve_command(self._api_client, command, framing, time.perf_counter())
        if not self.virtual:
            precise_sleep_until(due)
        self.sent(record, time.perf_counter())
        self.traced(record)
        return response

    def serve_command(self, client: Client, command: bytes, framing: str,
                      arrived: float) -> tuple[bytes, float, TraceRecord | None]:
        """Run ``command`` for ``client``; returns the response, the perf_counter time it is due, and
        its trace record (call :meth:`sent` once the response is out; None when no trace and no
        ``records`` wants it).

        The due time is ``max(arrived, chip free) + modelled``: the client
        sees the modelled time from its last request byte, and a command that
        arrives while the chip works for another client waits for it.
        """
        with self._tpm_lock:
            started = time.perf_counter()
            response, assessed, rec = self.path.run(client, command)
            done = time.perf_counter()
            backend_ms = (done - started) * 1000.0
            modelled = rec.ms
            if self.virtual:
                due = done
            else:
                due = max(arrived, self._chip_free) + modelled / 1000.0
                self._chip_free = max(due, done)
            late = not self.virtual and backend_ms > modelled
            self.late_count += late
            if not (self._keep or self._trace_writer is not None or self._trace_fn is not None):
                self._seq += 1  # nobody reads a record (serve's CLI without --trace): none is built
                return response, due, None
            record = self._record(assessed, framing, modelled, backend_ms, max(0.0, due - done) * 1000.0,
                                  rec.breakdown, served_ms=(max(due, done) - arrived) * 1000.0, late=late,
                                  client=client.id, pid=client.pid)
            record.arrived = arrived
            record.late_count = self.late_count
        return response, due, record

    def sent(self, record: TraceRecord | None, when: float) -> None:
        """The response of ``record`` leaves now (``when``): its served time becomes a measurement,
        and a trace callable sees it before the client can (in-process users rely on that)."""
        if record is None:
            return
        record.served_ms = (when - record.arrived) * 1000.0
        if self._trace_fn is not None:
            self._trace_fn(record)

    def traced(self, record: TraceRecord | None) -> None:
        """Write ``record``'s trace line (after its response left: file I/O never delays a client)."""
        if self._trace_writer is not None and record is not None:
            try:
                self._trace_writer.write(record)
            except OSError as exc:
                self._trace_failed(exc)

    def _trace_failed(self, exc: OSError) -> None:
        """A trace write failed (a full disk): say so once, stop tracing, go on serving."""
        writer, self._trace_writer = self._trace_writer, None
        self.path.traced = self._trace_fn is not None
        name = writer.name if writer is not None else "the trace"
        self.trace_error = f"--trace {name}: cannot write ({exc.strerror or exc}); tracing is off, serving goes on"
        self._log(self.trace_error)
        if writer is not None:
            try:
                writer.close()
            except OSError:
                pass

    def _record(self, a: cost.CommandCost, framing: str, modelled: float, backend_ms: float,
                held_ms: float, breakdown: dict[str, float], *, served_ms: float, late: bool,
                client: int, pid: int | None = None) -> TraceRecord:
        self._seq += 1
        path = self.path
        record = TraceRecord(self._seq, a.command, f"{a.code:#x}", a.variant, framing, a.in_bytes, a.out_bytes,
                             a.rc, modelled, backend_ms, held_ms, not a.modelled,
                             list(a.missing) if a.missing else [], breakdown, a.terms, served_ms, late,
                             path.rm_ms, path.rm_commands, client,  # positional: the fields' order
                             pid=pid, rm=path.rm_list, **path.detail)
        if self._keep:
            if len(self.records) >= self._keep:
                del self.records[: self._keep // 2]
            self.records.append(record)
        return record

    def note_reject(self, reason: str) -> None:
        """A frame the proxy refused (answered with an error; the connection closed unless the frame could be
        read past): counted, and told to the operator in one line."""
        self.rejected_frames += 1
        self._log(f"refused a client frame: {reason}", kind="refused frame")

    # ---- control channel ---------------------------------------------------

    def control_request(self, request: bytes) -> tuple[bytes, bool]:
        """Answer one swtpm control request: (reply, whether the connection may stay open).

        Only :data:`wire.ALLOWED_CONTROL` reaches the TPM; anything else is
        refused with TPM_FAIL and logged. Allowed requests are answered by the
        backend in-process (:meth:`Backend.control`), else relayed to its
        control channel, else acknowledged here (a device has no control
        channel; there ``CMD_INIT`` is refused). ``CMD_INIT`` is a real power
        cycle followed by the BIOS's Startup (:mod:`.control`).
        """
        code = struct.unpack(">I", request[:4])[0]
        name = wire.CONTROL_NAMES.get(code, f"control code {code}")
        # a backend may allow more of its own (the in-process TPM 1.2: the DRTM sequence)
        if code not in wire.ALLOWED_CONTROL and code not in getattr(self.backend, "extra_control", ()):
            self._refuse(f"refused {name} on the control port (only the requests a TSS needs are allowed)")
            return wire.ctrl_error(wire.TPM_FAIL), code in wire.CTRL_FIXED_LENGTH
        if code == wire.CMD_INIT and not self._can_power_cycle():
            self._refuse(f"refused {name}: backend {self.backend.describe()} cannot be power-cycled")
            return wire.ctrl_error(wire.TPM_FAIL), True
        with self._tpm_lock:
            reply = self.path.control_reply(code, request[4:], self._control_upstream(code, request))
            if code == wire.CMD_GET_CAPABILITY:
                reply = control.capabilities_reply(
                    reply, wire.ALLOWED_CONTROL | getattr(self.backend, "extra_control", frozenset()))
            if code == wire.CMD_INIT and len(reply) >= 4 and wire.ctrl_result(reply) == 0:
                self._powered_up(f"{name} on the control port")
        return reply, True

    def platform_signal(self, code: int) -> bytes:
        """Answer one MS-simulator platform signal (4 bytes: 0 done, else refused); see :mod:`.control`."""
        action = control.ms_signal_action(code)
        name = control.ms_signal_name(code)
        if action == control.CYCLE and not self._can_power_cycle():
            action = control.REFUSE
        if action == control.REFUSE:
            self._refuse(f"refused {name} on the platform port (a shared TPM is never left off or without NV)")
            return control.MS_REFUSED
        if action == control.CYCLE:
            with self._tpm_lock:
                reply = self._control_upstream(wire.CMD_INIT, wire.ctrl_init())
                if len(reply) < 4 or wire.ctrl_result(reply) != 0:
                    self._refuse(f"{name}: backend {self.backend.describe()} refused the power cycle")
                    return control.MS_REFUSED
                self._powered_up(f"{name} on the platform port")
        return control.MS_OK

    def _can_power_cycle(self) -> bool:
        """A swtpm (its control channel) or an in-process engine can; a device node cannot."""
        return self.backend.ctrl_address is not None or getattr(self.backend, "plays_bios", False)

    def _powered_up(self, why: str) -> None:
        rc = self._after_power_up(startup=self.startup == "clear")
        what = f"{self.path.startup_name} sent" if self.startup == "clear" else "no Startup sent (--startup none)"
        if rc not in self.path.startup_ok:
            what += f", but it answered {rc:#x}"
        self._log(f"power cycle by a client ({why}): {what}", kind="power cycle")

    def _refuse(self, message: str) -> None:
        self.refused_control += 1
        self._log(message, kind="refused control request")

    def _control_upstream(self, code: int, request: bytes) -> bytes:
        reply = self.backend.control(code, request[4:])
        if reply is not None:
            return reply
        address = self.backend.ctrl_address
        if address is None:  # no control channel behind us (a device): acknowledge, no capabilities
            if code in (wire.CMD_GET_CAPABILITY, wire.CMD_GET_TPMESTABLISHED):
                return struct.pack(">II", 0, 0)
            return struct.pack(">I", 0)
        family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
        try:
            with socket.socket(family, socket.SOCK_STREAM) as up:
                up.settimeout(5)
                up.connect(address)
                up.sendall(request)
                return up.recv(65536) or wire.ctrl_error(wire.TPM_FAIL)
        except OSError:
            return wire.ctrl_error(wire.TPM_FAIL)


@contextmanager
def timed_swtpm(profile: "Profile | str", *, virtual: bool = False, trace=None, seed: int = 0,
                unix: bool = False, rm: bool = True) -> Iterator[TimingProxy]:
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
        from trustlab.serving.tpm2.backend import swtpm_backend

        proxy = TimingProxy(profile, swtpm_backend(tpm, owned=True), virtual=virtual, trace=trace, seed=seed, rm=rm)
    except BaseException:
        tpm.stop()
        raise
    try:
        yield proxy
    finally:
        proxy.stop()

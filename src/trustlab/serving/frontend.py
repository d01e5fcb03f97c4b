"""The proxy's sockets: one event-loop thread that reads, queues, runs and holds.

Why one thread: a TPM runs one command at a time anyway, and every hand-off
between threads costs a wake-up (tens of us idle, ms on a loaded host) that
would show up on top of the modelled time. The loop

1. sends every held response whose due time has come (a short spin makes the
   last 0.2 ms exact);
2. when no response is held, runs the next queued job - a client command
   (through the proxy: extension hook, resource manager, backend, pricing),
   a control request, or a connection's close - in arrival order;
3. otherwise waits in ``select`` for input, the next due time or a timer.

A command's due time is ``max(arrival of its last byte, chip free) +
modelled``, so the client sees exactly the modelled time, and concurrent
clients queue as on a real chip.

Control port (P+1): with ``control="auto"`` the protocol is told per
connection from its first frame. swtpm TCTIs start with ``CMD_SET_LOCALITY``
or ``CMD_INIT``; MS-simulator TCTIs with ``TPM_SIGNAL_POWER_ON`` (1), which
is also swtpm's ``CMD_GET_CAPABILITY`` (QEMU, ``swtpm_ioctl -c``). tcti-mssim
opens its data connection first and keeps it open, silent, while it powers
the simulator on; so code 1 from a process (or, for a remote peer, a host)
with such a connection open is a platform signal, otherwise a capability query.

Sockets are non-blocking: a response a client does not read waits in that
connection's own buffer (and the connection is not read meanwhile), so a
client that never reads delays nobody else; after :data:`SEND_TIMEOUT` s of
not reading it is dropped. On :meth:`FrontEnd.stop` (SIGTERM) the listeners
close first, then every command already received is run and answered, every
held response sent, before the connections close.
"""

from __future__ import annotations

import heapq
import itertools
import math
import select
import socket
import struct
import threading
import time
from collections import deque
from typing import Any, Callable, Protocol

from trustlab.serving import wire
from trustlab.serving.realtime import SPIN, RealtimeScheduling, precise_sleep_until
from trustlab.serving.trace import TraceRecord


class Served(Protocol):
    """What the front end needs of the proxy it serves (:class:`~trustlab.serving.proxy.TimingProxy`).

    Declared here so the front end does not import the proxy that starts it.
    """

    virtual: bool
    family: str
    port: int
    max_frame: int
    """The largest command frame the served TPM takes (its TPM_PT_MAX_COMMAND_SIZE, at least the backend's)."""

    def client_for(self, sock: socket.socket, conn_id: int) -> Any: ...
    def client_left(self, client: Any, conn_id: int) -> None: ...
    def peer_pid(self, sock: socket.socket) -> int | None: ...
    def reap_clients(self) -> None: ...
    def note_reject(self, reason: str) -> None: ...
    def serve_command(self, client: Any, command: bytes, framing: str,
                      arrived: float) -> tuple[bytes, float, TraceRecord | None]: ...
    def control_request(self, request: bytes) -> tuple[bytes, bool]: ...
    def platform_signal(self, code: int) -> bytes: ...
    def sent(self, record: TraceRecord | None, when: float) -> None: ...
    def traced(self, record: TraceRecord | None) -> None: ...

IDLE_PARTIAL_TIMEOUT = 10.0
"""Seconds a client may stall in the middle of a frame before it is dropped."""
REAP_INTERVAL = 0.5
"""Seconds between checks for client processes that have exited (their spaces are flushed)."""
SEND_TIMEOUT = 2.0
"""Seconds a client may leave its responses unread (a full socket buffer) before it is dropped."""
DRAIN_TIMEOUT = 10.0
"""Seconds :meth:`FrontEnd.stop` waits, beyond the longest held response, for the commands in flight."""
TPM_RC_FAILURE = 0x101
POLL_GRAIN = 0.001
"""epoll's timeout unit (seconds): a hold's last grain is slept precisely, not left to epoll."""
READ_AHEAD = 65536
"""Bytes read ahead from a connection whose command is in flight before it is no longer read."""
READ, WRITE = select.EPOLLIN, select.EPOLLOUT
_GONE = select.EPOLLHUP | select.EPOLLERR


def _quickack(sock: socket.socket) -> None:
    """Acknowledge at once: TSS clients write a frame in pieces, and Nagle on
    their side plus delayed ACKs on ours would add ~40 ms to such a command."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
    except (OSError, AttributeError):
        pass


class Conn:
    """One accepted client connection (data or control port)."""

    __slots__ = ("id", "sock", "kind", "reader", "buf", "mode", "spoke", "partial_since", "client", "eof",
                 "closed", "out", "stalled_since", "events", "busy")
    _ids = itertools.count(1)

    def __init__(self, sock: socket.socket, kind: str, family: str, control: str, max_frame: int) -> None:
        self.id = next(Conn._ids)
        self.sock = sock
        self.kind = kind
        self.reader = wire.FrameReader(max_frame=max_frame, family=family) if kind == "data" else None
        self.buf = bytearray()  # control-port bytes not yet framed
        self.mode = None if control == "auto" else control  # control port: "swtpm" / "mssim"
        self.spoke = False  # data port: a frame has arrived
        self.partial_since = 0.0
        self.client: Any = None  # the proxy's Client (data port)
        self.eof = False
        self.closed = False
        self.out = bytearray()  # response bytes the client has not taken yet
        self.stalled_since = 0.0
        self.events = READ
        self.busy = False  # data port: a command of this connection is queued, running or held


class FrontEnd:
    """Serve ``proxy`` on two listening sockets from one thread (see the module docstring)."""

    def __init__(self, proxy: Served, data_srv: socket.socket, ctrl_srv: socket.socket, *,
                 control: str, rt_priority: bool, log: Callable[..., None] | None = None) -> None:
        self.proxy = proxy
        self.control = control
        self.rt_priority = rt_priority and not proxy.virtual
        self._inline = not self.rt_priority
        """Run a lone whole command straight from its read (not under SCHED_FIFO: there jobs run at normal
        priority, so an engine computing for long never starves the host)."""
        self._log = log
        self._srv = {data_srv: "data", ctrl_srv: "ctrl"}
        self._ep = select.epoll()
        self._fds: dict[int, Any] = {}  # fd -> "accept" / "wake" / Conn
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._jobs: deque[tuple] = deque()
        self._held: list[tuple[float, int, Conn, bytes, TraceRecord | None]] = []
        self._seq = itertools.count()
        self._conns: set[Conn] = set()
        self._partial: set[Conn] = set()
        self._stalled: set[Conn] = set()
        self._ready: dict[Conn, None] = {}
        """Connections whose next command is already buffered: taken after the next look at the sockets,
        so a client that pipelines gets one command per round and never starves the others."""
        self._stopping = threading.Event()
        self._draining = False
        self._drain_deadline = 0.0
        self._next_reap = 0.0
        self.failure: str | None = None
        """Why the loop ended on its own (an internal error): then the listeners are closed too."""
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"trustlab-proxy-{proxy.port}")

    def start(self) -> None:
        for srv in self._srv:
            srv.setblocking(False)
            self._ep.register(srv.fileno(), READ)
            self._fds[srv.fileno()] = ("accept", srv)
        self._ep.register(self._wake_r.fileno(), READ)
        self._fds[self._wake_r.fileno()] = ("wake", self._wake_r)
        self.thread.start()

    @property
    def serving(self) -> bool:
        return self.thread.is_alive() and self.failure is None

    def stop(self, timeout: float = DRAIN_TIMEOUT) -> None:
        """Stop accepting, finish the commands in flight (answer them, send what is held), then close."""
        if self.thread.is_alive() and threading.current_thread() is not self.thread:
            longest = max((due for due, *_ in self._held), default=0.0) - time.perf_counter()
            self._drain_deadline = time.perf_counter() + max(0.0, longest) + timeout
            self._draining = True
            self._wake()
            self.thread.join(max(0.0, longest) + timeout + 1.0)
        self._stopping.set()
        self._wake()
        if self.thread.is_alive() and threading.current_thread() is not self.thread:
            self.thread.join(2.0)
        for conn in list(self._conns):
            self._drop(conn)
        self._close_listeners()
        for s in (self._wake_r, self._wake_w):
            try:
                s.close()
            except OSError:
                pass
        try:
            self._ep.close()
        except OSError:
            pass

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    def _close_listeners(self) -> None:
        for srv in list(self._srv):
            try:
                self._fds.pop(srv.fileno(), None)
                self._ep.unregister(srv.fileno())
            except (OSError, ValueError):
                pass
            try:
                srv.close()
            except OSError:
                pass
        self._srv.clear()

    # ---- the loop ------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # noqa: BLE001 - never a dead open port: close the listeners and say why
            self.failure = f"the serving loop failed ({type(exc).__name__}: {exc})"
            self._close_listeners()
            if self._log is not None:
                self._log(self.failure)

    def _loop(self) -> None:
        rt = RealtimeScheduling(self.rt_priority)
        held, jobs, perf = self._held, self._jobs, time.perf_counter
        while not self._stopping.is_set():
            now = perf()
            while held and held[0][0] <= now:
                _due, _seq, conn, data, record = heapq.heappop(held)
                self._send_response(conn, data, record)
            if not held and jobs:
                if rt.active:
                    rt.normal()
                    try:
                        self._run_job(jobs.popleft())
                    finally:
                        rt.high()
                else:
                    self._run_job(jobs.popleft())
                continue
            if self._ready:
                for fd, mask in self._ep.poll(0):
                    self._on_ready(fd, mask)
                ready, self._ready = self._ready, {}
                for conn in ready:
                    if not conn.closed:
                        self._next_frames(conn, perf())
                        self._settle(conn)
                continue
            if self._draining and self._drained(now):
                return
            if held and held[0][0] - now <= SPIN + POLL_GRAIN:
                precise_sleep_until(held[0][0])
                continue
            timeout = self._timeout(now)
            try:
                events = self._ep.poll(timeout)
            except (OSError, ValueError):
                if self._stopping.is_set():
                    return
                raise
            for fd, mask in events:
                self._on_ready(fd, mask)
            now = perf()
            if self._partial or self._stalled or now >= self._next_reap:
                self._housekeeping(now)

    def _drained(self, now: float) -> bool:
        """Draining (stop): listeners closed, no new input read; done when nothing is left to answer."""
        if self._srv:
            self._close_listeners()
            for conn in list(self._conns):
                self._interest(conn)
        if now >= self._drain_deadline:
            return True
        return not self._jobs and not self._held and not any(c.out and not c.closed for c in self._conns)

    def _timeout(self, now: float) -> float:
        deadline = self._next_reap
        if self._held:
            deadline = min(deadline, self._held[0][0] - SPIN)
        for conn in self._partial:
            deadline = min(deadline, conn.partial_since + IDLE_PARTIAL_TIMEOUT)
        for conn in self._stalled:
            deadline = min(deadline, conn.stalled_since + SEND_TIMEOUT)
        if self._draining:
            deadline = min(deadline, now + 0.05)
        if self._held and deadline == self._held[0][0] - SPIN:
            # epoll counts whole milliseconds and rounds a timeout up: 3.4 ms would wake at 4 ms, up
            # to a millisecond after the held response was due. Round down instead; the loop sleeps
            # the last millisecond precisely (precise_sleep_until)
            return max(0.0, math.floor((deadline - now) / POLL_GRAIN) * POLL_GRAIN)
        return max(0.0, deadline - now)

    def _housekeeping(self, now: float) -> None:
        for conn in list(self._partial):
            if now - conn.partial_since > IDLE_PARTIAL_TIMEOUT:
                self._abandon(conn)  # it stalled inside a frame: answer it (TPM_RC_COMMAND_SIZE), then close
                self._drop(conn)
        for conn in list(self._stalled):
            if now - conn.stalled_since > SEND_TIMEOUT:
                self._drop(conn)  # it has not read its responses for that long
        if now >= self._next_reap:
            self._next_reap = now + REAP_INTERVAL
            self._jobs.append(("reap",))

    def _on_ready(self, fd: int, mask: int) -> None:
        data = self._fds.get(fd)
        if data is None:
            return
        if isinstance(data, Conn):
            if mask & WRITE:
                self._flush(data)
            if mask & (READ | _GONE) and not data.closed and data.events & READ:
                self._read(data)
            elif mask & _GONE and not data.closed and not data.events & READ:
                self._drop(data)  # hung up while it was not read: nothing more will come
        elif data[0] == "wake":
            try:
                self._wake_r.recv(64)
            except OSError:
                pass
        else:
            self._accept(data[1])

    def _accept(self, srv: socket.socket) -> None:
        kind = self._srv.get(srv)
        while kind is not None:
            try:
                sock, _ = srv.accept()
            except OSError:  # BlockingIOError: none left
                return
            sock.setblocking(False)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            _quickack(sock)
            conn = Conn(sock, kind, self.proxy.family, self.control, self.proxy.max_frame)
            if kind == "data":
                conn.client = self.proxy.client_for(sock, conn.id)
            self._conns.add(conn)
            self._fds[sock.fileno()] = conn
            self._ep.register(sock.fileno(), READ)

    def _interest(self, conn: Conn) -> None:
        """Read a connection only when it may send its next command: none of its own is in flight (a TPM
        takes one command at a time; one client's backlog never queues ahead of another's command), its
        responses have been taken, and serve is not stopping; write while output waits."""
        events = WRITE if conn.out else 0
        if not (conn.out or conn.eof or self._draining or (conn.busy and conn.reader is not None
                                                           and conn.reader.buffered > READ_AHEAD)):
            events |= READ
        self._set_events(conn, events)

    def _set_events(self, conn: Conn, events: int) -> None:
        if conn.closed or conn.events == events:
            return
        fd = conn.sock.fileno()
        try:
            if conn.events and events:
                self._ep.modify(fd, events)
            elif events:
                self._ep.register(fd, events)
                self._fds[fd] = conn
            else:
                self._ep.unregister(fd)
                self._fds.pop(fd, None)
        except (OSError, ValueError):
            return
        conn.events = events

    def _read(self, conn: Conn) -> None:
        try:
            chunk = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        arrived = time.perf_counter()
        if not chunk:
            self._end(conn)
            return
        if conn.kind == "data":
            reader = conn.reader
            if (self._inline and reader is not None and not reader.buffered and not conn.busy and not self._jobs
                    and not self._held and wire.whole_raw_command(chunk, self.proxy.family, self.proxy.max_frame)):
                conn.spoke = True  # the usual case: one whole command in one read, nothing queued: run it now
                conn.busy = True
                self._command(conn, chunk, "raw", arrived)
                return
            self._frames(conn, chunk, arrived)
            if conn.reader is not None and conn.reader.buffered:
                _quickack(conn.sock)  # the rest of a frame is coming: let it (the answer carries our ACK)
        else:
            _quickack(conn.sock)
            self._control(conn, chunk)

    def _end(self, conn: Conn) -> None:
        """EOF (or a stream that cannot be framed any more): answer what was already sent, then close."""
        if not conn.eof:
            conn.eof = True
            conn.partial_since = 0.0
            self._partial.discard(conn)
        self._settle(conn)

    def _abandon(self, conn: Conn, queued: bool = False) -> None:
        """The client's stream ends inside a frame: one refusal (TPM_RC_COMMAND_SIZE, as libtpms answers a frame
        short of its size field) for a client that still reads; nothing more is framed from it."""
        reader = conn.reader
        refusal = reader.abandon() if reader is not None else None
        if refusal is None:
            return
        conn.reader = None
        self.proxy.note_reject(refusal.reason)
        if queued:
            self._jobs.append(("send", conn, refusal.reply))
        else:
            self._send(conn, refusal.reply)

    def _settle(self, conn: Conn) -> None:
        """After frames were taken: close an ended connection once nothing of it is left to answer, or
        read it again."""
        if conn.closed:
            return
        if conn.eof:
            self._interest(conn)
            if not conn.busy and conn not in self._ready:
                self._abandon(conn, queued=True)  # (a frame left unfinished by the end of the stream)
                self._jobs.append(("close", conn))
        else:
            self._interest(conn)

    def _drop(self, conn: Conn) -> None:
        if conn.closed:
            return
        self._set_events(conn, 0)
        conn.closed = True
        self._conns.discard(conn)
        self._partial.discard(conn)
        self._stalled.discard(conn)
        try:
            conn.sock.close()
        except OSError:
            pass
        if conn.client is not None:
            self.proxy.client_left(conn.client, conn.id)

    # ---- sending: never blocks the loop ----------------------------------------

    def _send(self, conn: Conn, data: bytes) -> None:
        """Send what the socket takes now; keep the rest for when the client reads (and stop reading its
        commands meanwhile: backpressure, as a TPM that is still answering does not take the next)."""
        if conn.closed:
            return
        if not conn.out:
            try:
                sent = conn.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self._drop(conn)
                return
            if sent == len(data):
                return
            data = data[sent:]
            conn.stalled_since = time.perf_counter()
            self._stalled.add(conn)
            conn.out += data
            self._interest(conn)
            return
        conn.out += data

    def _flush(self, conn: Conn) -> None:
        if not conn.out or conn.closed:
            return
        try:
            sent = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(conn)
            return
        del conn.out[:sent]
        if sent:
            conn.stalled_since = time.perf_counter()
        if not conn.out:
            self._stalled.discard(conn)
            self._settle(conn)  # an ended connection is closed now (its close job left that to us)

    # ---- data port -----------------------------------------------------------

    def _frames(self, conn: Conn, chunk: bytes, arrived: float) -> None:
        if conn.reader is None:
            return
        conn.spoke = True
        conn.reader.feed(chunk)
        self._next_frames(conn, arrived)

    def _next_frames(self, conn: Conn, arrived: float) -> None:
        """Queue what the connection sent, up to its next command (then wait for that one's answer)."""
        reader = conn.reader
        if reader is None:
            return
        while not conn.busy:
            event = reader.next_event()
            if event is wire.NEED_DATA:
                break
            if isinstance(event, wire.Command):
                self._jobs.append(("cmd", conn, event, arrived))
                conn.busy = True
                self._interest(conn)
                break
            if isinstance(event, wire.Handshake):
                self._jobs.append(("send", conn, wire.handshake_reply()))
                continue
            if isinstance(event, wire.Refuse):  # an oversized command, read past: refused, the stream goes on
                self.proxy.note_reject(event.reason)
                self._jobs.append(("send", conn, event.reply))
                continue
            if isinstance(event, wire.Reject):
                self.proxy.note_reject(event.reason)
                self._jobs.append(("send", conn, event.reply))
            conn.reader = None  # a reject or TPM_SESSION_END: nothing after it is read
            self._end(conn)
            return
        if reader.buffered and not conn.busy:
            conn.partial_since = conn.partial_since or arrived
            self._partial.add(conn)
        elif conn.partial_since:
            conn.partial_since = 0.0
            self._partial.discard(conn)

    def _answered(self, conn: Conn) -> None:
        """The connection's command has its answer out: on to its next one."""
        conn.busy = False
        if conn.closed:
            return
        if conn.reader is not None and conn.reader.buffered:
            self._ready[conn] = None
        elif conn.eof or not conn.events & READ:
            self._settle(conn)

    # ---- control port --------------------------------------------------------

    def _control(self, conn: Conn, chunk: bytes) -> None:
        conn.buf += chunk
        while conn.buf and not conn.eof:
            if conn.mode is None:
                if len(conn.buf) < 4:
                    return
                code = struct.unpack(">I", conn.buf[:4])[0]
                if code in (wire.MS_SESSION_END, wire.MS_STOP):
                    conn.mode = "mssim"
                elif code == wire.MS_SIGNAL_POWER_ON:  # == CMD_GET_CAPABILITY: the ambiguous one
                    conn.mode = "mssim" if self._mssim_data_open(conn) else "swtpm"
                else:
                    conn.mode = "swtpm"
            if conn.mode == "mssim":
                if not self._mssim_signal(conn):
                    return
            elif conn.mode == "swtpm":
                if not self._swtpm_request(conn):
                    return
            else:
                return

    def _mssim_data_open(self, ctrl: Conn) -> bool:
        """Does the peer behind ``ctrl`` hold a silent data connection open (tcti-mssim's init)?"""
        silent = [c for c in self._conns if c.kind == "data" and not c.spoke and not c.eof]
        if not silent:
            return False
        pid = self.proxy.peer_pid(ctrl.sock)
        if pid is None:  # a remote peer: the same host is as close as we can tell
            try:
                host = ctrl.sock.getpeername()[0]
                return any(c.sock.getpeername()[0] == host for c in silent)
            except OSError:
                return False
        return any((c.client.pid if c.client and c.client.pid else self.proxy.peer_pid(c.sock)) == pid
                   for c in silent)

    def _mssim_signal(self, conn: Conn) -> bool:
        """One MS-simulator platform signal, answered in arrival order by the proxy's control policy."""
        if len(conn.buf) < 4:
            return False
        code = struct.unpack(">I", conn.buf[:4])[0]
        del conn.buf[:4]
        if code in (wire.MS_SESSION_END, wire.MS_STOP):
            self._end(conn)
            return False
        self._jobs.append(("signal", conn, code))
        return True

    def _swtpm_request(self, conn: Conn) -> bool:
        n = wire.ctrl_request_length(bytes(conn.buf[:8]))
        if n is None or len(conn.buf) < n:
            if len(conn.buf) > 4 + 8 + wire.MAX_FRAME:  # a lying CMD_HASH_DATA length
                self._jobs.append(("send", conn, wire.ctrl_error()))
                self._end(conn)
            return False
        request = bytes(conn.buf[:n])
        del conn.buf[:n]
        self._jobs.append(("ctrl", conn, request, 0))
        if struct.unpack(">I", request[:4])[0] not in wire.CTRL_FIXED_LENGTH:
            self._end(conn)  # its length is unknown, so the stream is lost after it: answer, then close
            return False
        return True

    # ---- jobs ----------------------------------------------------------------

    def _send_response(self, conn: Conn, data: bytes, record: TraceRecord | None) -> None:
        if record is not None:  # (None: nobody reads records, as in serve without --trace)
            self.proxy.sent(record, time.perf_counter())
        self._send(conn, data)
        self._answered(conn)
        if record is not None:
            self.proxy.traced(record)

    def _run_job(self, job: tuple) -> None:
        kind = job[0]
        if kind == "reap":
            self.proxy.reap_clients()
            return
        conn: Conn = job[1]
        if kind == "close":
            if conn.closed or conn.busy or conn in self._ready:
                return  # its commands are answered first; the last answer queues the close again
            if conn.out:
                return  # the rest of its output goes first; _flush closes it
            self._drop(conn)
            return
        if conn.closed:
            return
        if kind == "cmd":
            event = job[2]
            self._command(conn, event.payload, event.framing, job[3])
            return
        try:
            if kind == "send":
                self._send(conn, job[2])
            elif kind == "signal":
                self._send(conn, self.proxy.platform_signal(job[2]))
            elif kind == "ctrl":
                request, skip = job[2], job[3]
                reply, keep_open = self.proxy.control_request(request)
                self._send(conn, reply[skip:])
                if not keep_open:
                    self._end(conn)
        except Exception as exc:  # noqa: BLE001 - one bad job must not end serving for everyone
            if self._log is not None:
                self._log(f"internal error on a {kind} request ({type(exc).__name__}: {exc}); answered with a "
                          "failure", kind="internal error")
            self._drop(conn)

    def _command(self, conn: Conn, payload: bytes, framing: str, arrived: float) -> None:
        """Run one client command; send its answer now, or hold it until its due time."""
        try:
            response, due, record = self.proxy.serve_command(conn.client, payload, framing, arrived)
        except Exception as exc:  # noqa: BLE001 - one bad command must not end serving for everyone
            if self._log is not None:
                self._log(f"internal error on a command ({type(exc).__name__}: {exc}); answered with "
                          "TPM_RC_FAILURE", kind="internal error")
            self._send(conn, wire.frame_reply(wire.error_response(TPM_RC_FAILURE, self.proxy.family), framing))
            self._answered(conn)
            return
        data = wire.frame_reply(response, framing) if framing != "raw" else response
        if due > time.perf_counter():
            heapq.heappush(self._held, (due, next(self._seq), conn, data, record))
            return
        self._send_response(conn, data, record)


def serve(proxy: Served, data_srv: socket.socket, ctrl_srv: socket.socket, *, control: str,
          rt_priority: bool, log: Callable[..., None] | None = None) -> FrontEnd:
    """Start a :class:`FrontEnd` for ``proxy``; returns it (``stop()`` to end)."""
    front = FrontEnd(proxy, data_srv, ctrl_srv, control=control, rt_priority=rt_priority, log=log)
    front.start()
    return front

"""The TPM 2.0 backends: a swtpm (libtpms), a swtpm-protocol TPM over TCP, a kernel device node.

:func:`open_backend` turns ``--backend`` into one. The resource manager that
gives each client its own space in front of them is :mod:`.rm`.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
from pathlib import Path
from typing import Callable

from trustlab.devices.tpm2 import wire as tpm2wire
from trustlab.devices.tpm2.commands import TPM_RC_FAILURE
from trustlab.serving import wire
from trustlab.serving.backend import Backend, BackendError
from trustlab.serving.swtpm import Swtpm, read_response, unix_data_channel


class SocketBackend(Backend):
    """A raw TPM 2.0 data channel (swtpm's) with one persistent connection.

    swtpm serves one data connection at a time, so while a proxy fronts a
    swtpm, other clients must go through the proxy (or call ``release()``).

    A command that fails mid-way (the TPM process died, the connection broke,
    a reply timed out) is answered with TPM_RC_FAILURE and the connection is
    re-opened for the next command, so one bad exchange never desynchronises
    the stream.

    The connected socket is blocking, with the kernel's own timeouts
    (``SO_RCVTIMEO``/``SO_SNDTIMEO``) rather than Python's: a Python socket
    timeout costs a ``poll()`` before every ``send`` and ``recv``, two system
    calls per command on the serving thread.
    """

    def __init__(self, address: tuple[str, int] | str, ctrl_address=None, timeout: float = 120.0,
                 owned: Swtpm | None = None) -> None:
        self.address = address
        self.ctrl_address = ctrl_address
        self.owned = owned
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timeout = timeout

    @property
    def timeout(self) -> float:
        """Seconds a send or a reply may take before the command fails (TPM_RC_FAILURE)."""
        return self._timeout

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        self._timeout = seconds
        sock = self._sock
        if sock is not None:
            try:
                _kernel_timeouts(sock, seconds)
            except OSError:
                pass  # a broken connection: the next command reconnects (with the new timeout)

    def _connect(self) -> socket.socket:
        family = socket.AF_UNIX if isinstance(self.address, str) else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.address)
        except OSError as exc:
            sock.close()
            raise BackendError(f"backend {self.describe()}: cannot connect: {exc}") from None
        if family == socket.AF_INET and sock.getsockname() == sock.getpeername():
            # TCP simultaneous open: with nothing listening on a port in the ephemeral range, the
            # kernel may pick that very port as our source and connect us to ourselves; every
            # command would then come back as its own "response"
            sock.close()
            raise BackendError(f"backend {self.describe()}: cannot connect: nothing listening (self-connect)")
        if family == socket.AF_INET:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(None)
        _kernel_timeouts(sock, self.timeout)
        return sock

    def transact(self, command: bytes) -> bytes:
        with self._lock:
            for attempt in (0, 1):
                try:
                    if self._sock is None:
                        self._sock = self._connect()
                    self._sock.sendall(command)  # a peer that closed the idle connection: EOF, then attempt 1
                    return read_response(self._sock)
                except (OSError, ConnectionError, wire.WireError, BackendError):
                    self._drop()
            return tpm2wire.error_response(TPM_RC_FAILURE)

    def release(self) -> None:
        """Close the persistent connection (swtpm serves one data connection at a time)."""
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def lost(self) -> str | None:
        """The owned swtpm exited (killed, crashed): it never comes back. One not owned may."""
        proc = self.owned.proc if self.owned is not None else None
        how = self.owned.exited() if proc is not None and self.owned is not None else None
        return None if how is None or proc is None else f"the TPM 2.0 backend (swtpm, pid {proc.pid}) {how}"

    def close(self) -> None:
        with self._lock:
            self._drop()
        if self.owned is not None:
            self.owned.stop()

    def describe(self) -> str:
        if isinstance(self.address, str):
            return f"unix:{self.address}"
        return f"tcp:{self.address[0]}:{self.address[1]}"


def _kernel_timeouts(sock: socket.socket, seconds: float) -> None:
    """Time out a blocking socket's sends and receives in the kernel (no poll per call)."""
    whole = int(seconds)
    timeval = struct.pack("ll", whole, int((seconds - whole) * 1_000_000))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)


class DeviceBackend(Backend):
    """A kernel TPM character device (``/dev/tpmrm0``): write a command, read a response."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self._fd = os.open(path, os.O_RDWR)
        except OSError as exc:
            raise BackendError(f"backend device:{path}: cannot open: {exc.strerror}") from None
        self._lock = threading.Lock()

    def transact(self, command: bytes) -> bytes:
        with self._lock:
            try:
                os.write(self._fd, command)
                return os.read(self._fd, 8192)
            except OSError:
                return tpm2wire.error_response(TPM_RC_FAILURE)

    def close(self) -> None:
        try:
            os.close(self._fd)
        except OSError:
            pass

    def describe(self) -> str:
        return f"device:{self.path}"


def swtpm_backend(tpm: Swtpm, owned: bool = False) -> SocketBackend:
    if tpm.unix:
        return SocketBackend(str(tpm.data_path), str(tpm.ctrl_path), owned=tpm if owned else None)
    assert tpm.port is not None
    return SocketBackend((tpm.host, tpm.port), (tpm.host, tpm.port + 1), owned=tpm if owned else None)


def open_backend(spec: "str | Swtpm | Backend", log: Callable[[str], None] | None = None) -> Backend:
    """``swtpm`` (a fresh one, owned, on unix sockets; TCP only for a swtpm without them, said once through
    ``log``), ``tcp:HOST:PORT``, ``device:PATH``, a Swtpm or a Backend."""
    if isinstance(spec, Backend):
        return spec
    if isinstance(spec, Swtpm):
        return swtpm_backend(spec.start())
    if spec == "swtpm":  # ours alone: unix sockets (a command costs both ends less than over TCP loopback)
        return swtpm_backend(Swtpm(unix=unix_data_channel(log=log)).start(), owned=True)
    kind, _, rest = spec.partition(":")
    if kind == "tcp":
        host, _, port = rest.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65535:
            raise BackendError(f"--backend {spec!r}: expected tcp:HOST:PORT")
        return SocketBackend((host, int(port)), (host, int(port) + 1))
    if kind == "device":
        if not rest:
            raise BackendError(f"--backend {spec!r}: expected device:/dev/tpmrm0")
        if not Path(rest).exists():
            raise BackendError(f"--backend {spec!r}: {rest} does not exist")
        return DeviceBackend(rest)
    raise BackendError(f"--backend {spec!r}: expected swtpm, tcp:HOST:PORT or device:PATH")

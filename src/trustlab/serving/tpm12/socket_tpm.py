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

import socket
import struct
from typing import Callable

from trustlab.serving.swtpm import Swtpm, recv_exact
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
                self.clock.charge_all_ms(breakdown)
        return response

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None


class Swtpm12(Swtpm):
    """libtpms' TPM 1.2: ``swtpm socket`` without ``--tpm2``, powered, and started (ST_CLEAR)
    unless ``startup=False`` (then the client sends TPM_Startup).

    The process life cycle (ports, state directory, readiness, stop) is
    :class:`~trustlab.serving.swtpm.Swtpm`'s; only the flags and the
    power-up differ. A fresh state directory has no endorsement key:
    :meth:`create_ek` makes one (TPM_CreateEndorsementKeyPair), as a
    manufacturer or ``swtpm_setup`` would.
    """

    def _family_args(self) -> list[str]:
        return ["--flags", "not-need-init,startup-clear" if self.startup else "not-need-init"]

    def reset(self) -> None:
        """Nothing to send: swtpm's ``--flags`` already initialised (and, unless
        ``startup=False``, started) the TPM 1.2; TPM2_Startup would be a bad ordinal."""

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

"""The TPM 1.2 command path: the backend prices itself; each client's handles are flushed when it is gone.

A TPM 1.2 has no resource manager and trustlab has no TPM 1.2 wire cost
model: the engine (:mod:`.engine_backend`) charges what it computed
(``charged()``), a TPM 1.2 over the wire is not priced. What a client was
handed (sessions, keys) is remembered per client process (:mod:`.handles`)
and flushed with ``TPM_FlushSpecific`` when the process is gone.
"""

from __future__ import annotations

import struct
from typing import Any, Callable

from trustlab.serving.backend import Backend
from trustlab.serving.path import NO_DETAIL, NO_RM, CommandPath
from trustlab.serving.tpm12.handles import HandleOwners
from trustlab.timing.clock import Clock

TPM12_FAIL = 0x09
TPM_RC_FAILURE = 0x101
"""What a socket backend answers when the TPM behind it cannot be reached (either generation)."""
_RC_FAILURE = struct.pack(">I", TPM_RC_FAILURE)
TPM_ORD_GET_RANDOM, TPM_ORD_STARTUP, TPM_ST_CLEAR = 0x46, 0x99, 1
TPM_TAG_RQU_COMMAND = 0x00C1


class Tpm12Path(CommandPath):
    """The TPM 1.2 path of a proxy (see the module docstring).

    ``assessed``: the constructor of the assessed command the proxy's trace
    records take (``CommandCost``'s fields: name, code, variant, terms, sizes,
    rc, whether priced) - the TPM 2.0 cost model's record type, handed in so
    this generation does not import the other's.
    """

    family = "tpm1.2"
    probe = struct.pack(">HIII", TPM_TAG_RQU_COMMAND, 14, TPM_ORD_GET_RANDOM, 8)
    startup_command = struct.pack(">HIIH", TPM_TAG_RQU_COMMAND, 12, TPM_ORD_STARTUP, TPM_ST_CLEAR)
    startup_name = "TPM_Startup(ST_CLEAR)"
    startup_ok = (0, 0x26)  # TPM_INVALID_POSTINIT: already started
    failure_rcs = (TPM_RC_FAILURE, TPM12_FAIL)
    failure_rc = TPM_RC_FAILURE
    per_client = True

    def __init__(self, backend: Backend, clock: Clock, log: Callable[..., None],
                 assessed: Callable[..., Any]) -> None:
        super().__init__(backend, log)
        self.clock = clock
        self.handles = HandleOwners()
        """The session and key handles each client holds, flushed when it is gone (:mod:`.handles`)."""
        self._assessed = assessed
        self._names: dict[int, str] = {}

    def name(self, code: int) -> str:
        name = self._names.get(code)
        if name is None:
            namer = getattr(self.backend, "command_name", None)
            name = self._names[code] = namer(code) if callable(namer) else f"TPM_ORD_{code:#x}"
        return name

    def run(self, client: Any, command: bytes) -> tuple[bytes, Any, Any]:
        code = struct.unpack_from(">I", command, 6)[0] if len(command) >= 10 else 0
        name = self._names.get(code) or self.name(code)
        self.detail = NO_DETAIL
        self.rm_list = NO_RM
        clock = self.clock
        rec = clock.begin(name)
        try:
            backend = self.backend
            response = backend.transact(command)
            failed = len(response) < 10 or response[6:10] == _RC_FAILURE
            if failed or self.backend_down:
                self.note_backend(command, response, failed)
            self.handles.observe(client.id, command, response)
            charged = backend.charged()
            rc = struct.unpack_from(">I", response, 6)[0] if len(response) >= 10 else TPM12_FAIL
            assessed = self._assessed(name, code, None, {}, len(command), len(response), rc, charged is not None)
            if charged:  # charged() hands out a fresh dict ({} or None: nothing to charge)
                clock.charge_all_ms(charged)
            return response, assessed, rec
        finally:
            clock.end()

    def client_ended(self, client: Any) -> Callable[[], None] | None:
        frames = self.handles.release(client.id)
        if not frames:
            return None
        backend = self.backend

        def flush() -> None:
            for frame in frames:
                backend.transact(frame)  # a handle the client ended itself answers an error: fine
        return flush

    def power_cycled(self) -> None:
        self.handles.reset()

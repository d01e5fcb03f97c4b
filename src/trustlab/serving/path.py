"""What one TPM generation does with a client command between the front end and its backend.

The proxy (:mod:`.proxy`) is generation-blind: it takes frames, holds each
answer for its modelled time, keeps the clients and writes the trace. The way
a command takes in between - an extension hook, a resource manager, the
backend, the price - and what a client's exit or a power cycle releases are
the generation's, behind this contract:

- :class:`trustlab.serving.tpm2.path.Tpm2Path`: extension hook, the kernel
  tpmrm's resource manager, swtpm / a TCP TPM / a device, the TPM 2.0 wire
  cost model;
- :class:`trustlab.serving.tpm12.path.Tpm12Path`: the engine (or a TPM 1.2
  over the wire), which prices itself; the handles each client holds.

The base class keeps what both share: the backend-outage note (logged once per
outage) and the record's resource-manager ledger (empty unless the
generation runs commands of its own).
"""

from __future__ import annotations

import struct
from typing import Any, Callable

from trustlab.serving import wire
from trustlab.serving.backend import Backend

NO_DETAIL: dict = {}
"""A record's replay fields when the command is not traced (shared: only ever replaced, never changed)."""
NO_RM: list = []
"""A record's list of resource-manager commands when there were none (shared: replaced, never appended to)."""


class CommandPath:
    """One generation's command path (see the module docstring). Subclasses set the class attributes."""

    family: str = "tpm2"
    probe: bytes = b""
    """A harmless command (GetRandom) that any live TPM answers: :meth:`TimingProxy.check_backend`."""
    startup_command: bytes = b""
    """The Startup(CLEAR) a BIOS sends after a power cycle."""
    startup_name: str = "Startup(CLEAR)"
    startup_ok: tuple[int, ...] = (0,)
    """Startup answers that leave the TPM usable (success, or already started)."""
    failure_rcs: tuple[int, ...] = ()
    """Response codes that mean the TPM did not really answer (the probe fails on them)."""
    failure_rc: int = 0
    """The code a frame that does not parse stands for."""
    per_client: bool = False
    """Clients are told apart by process: each has a space or handles of its own, released when it exits."""
    max_frame: int = 4096
    """The largest command frame the TPM takes (libtpms' buffer): a larger one is refused at the front end."""

    def __init__(self, backend: Backend, log: Callable[..., None]) -> None:
        self.backend = backend
        self._log = log
        self.backend_down = False
        self.traced = False
        """A trace wants each command's replay fields (:attr:`detail`); set by the proxy."""
        self.rm_ms = 0.0
        self.rm_commands = 0
        self.rm_list: list = NO_RM
        self.detail: dict = NO_DETAIL

    # ---- per command ---------------------------------------------------------

    def name(self, code: int) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def run(self, client: Any, command: bytes) -> tuple[bytes, Any, Any]:  # pragma: no cover - interface
        """Run ``command`` for ``client``, charged to the proxy's clock inside one clock record.

        Returns the response, the assessed command (``CommandCost``: name, sizes, rc, terms) and the
        clock record (its ``ms`` and ``breakdown``). :attr:`rm_ms`, :attr:`rm_commands`, :attr:`rm_list`
        and :attr:`detail` then describe the command for its trace record.
        """
        raise NotImplementedError

    def clear_ledger(self) -> None:
        """Before a command: no resource-manager commands and no replay fields yet."""
        if self.rm_commands:
            self.rm_ms, self.rm_commands, self.rm_list = 0.0, 0, NO_RM
        self.detail = NO_DETAIL

    def note_rm_command(self, ms: float, entry: list) -> None:
        """One of the generation's own commands ran inside the current client command (or close)."""
        if not self.rm_commands:
            self.rm_list = []
        self.rm_ms += ms
        self.rm_commands += 1
        self.rm_list.append(entry)

    def note_backend(self, command: bytes, response: bytes, failed: bool) -> None:
        """Log (once per outage) when the backend stops answering, and when it is back."""
        if failed and not self.backend_down and self.backend.lost() is None:  # lost: its owner says so and stops
            try:
                what = self.name(struct.unpack_from(">I", command, 6)[0])
            except struct.error:
                what = "a command"
            self._log(f"backend {self.backend.describe()}: {what} failed (TPM_RC_FAILURE: backend unreachable "
                      "or in failure mode); clients get TPM_RC_FAILURE until it answers again")
        elif not failed and self.backend_down:
            self._log(f"backend {self.backend.describe()}: answering again")
        self.backend_down = failed

    def startup_rc(self) -> int:
        """Send :attr:`startup_command`; its response code (:attr:`failure_rc` if the answer does not parse)."""
        try:
            return wire.response_code(self.backend.transact(self.startup_command))
        except (wire.WireError, struct.error, ValueError):
            return self.failure_rc

    # ---- clients -------------------------------------------------------------

    def new_space(self, client_id: int) -> Any:
        """What a new client holds of its own (a resource-manager space), or None."""
        return None

    def client_ended(self, client: Any) -> Callable[[], None] | None:
        """``client`` is gone: release what needs no TPM now; return the TPM work left (run under the
        TPM's lock by the proxy), or None."""
        return None

    def close_cost(self) -> Any:
        """The assessed command a client's close-time TPM work is recorded as (None: not recorded)."""
        return None

    def control_reply(self, code: int, payload: bytes, reply: bytes) -> bytes:
        """The backend's answer to control request ``code`` as this generation's TPM gives it (as it is here)."""
        return reply

    def power_cycled(self) -> None:
        """Every transient object, session and handle is gone (the proxy gives clients new spaces)."""

    def held_summary(self) -> str:
        """What the generation holds for clients, for the exit summary ("" if nothing to say)."""
        return ""

    def loaded_objects(self, clients: list[Any]) -> int:
        """Transient objects held (saved) for ``clients``."""
        return 0

"""The TPM 2.0 command path: extension hook, resource manager, backend, pricing - one place each.

For each client command:

1. Extension hook: a code registered by an extension (:mod:`trustlab.devices.tpm2.extensions`)
   in a TPM 2.0 frame goes to its handler first, before the resource manager
   sees it; the handler's ``Context`` (the client, the profile, backend calls
   through the client's space) is built only then. A claimed command is
   answered and charged from its ``ExtensionResult`` and never reaches the
   backend.
2. Resource manager (:mod:`.rm`, unless ``rm=False``): a command with no
   handle, no session and nothing of the client's space loaded goes straight
   on (:meth:`ResourceManager.passes`); any other is loaded, mapped, run and
   saved in the client's space.
3. ``backend.transact``.
4. Pricing: ``backend.charged()`` if the backend reports its own charge, else
   the TPM 2.0 wire cost model (:class:`trustlab.devices.tpm2.cost.Pricer`);
   the object table (key variants by handle) then observes the command. The
   resource manager's own commands are priced the same way and charged to the
   client command that caused them (the trace's ``rm`` fields).
"""

from __future__ import annotations

import struct
import threading
from typing import Any, Callable

from trustlab.devices.tpm2 import cost, extensions, objects
from trustlab.devices.tpm2 import wire as tpm2wire
from trustlab.devices.tpm2.commands import TPM_RC_FAILURE, command_name
from trustlab.serving import control
from trustlab.serving import trace as tracing
from trustlab.serving import wire
from trustlab.serving.backend import Backend
from trustlab.serving.path import NO_DETAIL, NO_RM, CommandPath
from trustlab.serving.tpm2 import limits
from trustlab.serving.tpm2.rm import ResourceManager, Space
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Profile

TPM2_GetRandom = 0x17B
_RC_FAILURE = struct.pack(">I", TPM_RC_FAILURE)
_TPM2_TAGS = (b"\x80\x01", b"\x80\x02")
"""TPM_ST_NO_SESSIONS, TPM_ST_SESSIONS: the frames the extension hook looks at."""
_HEADER = tpm2wire.HEADER_SIZE
_COMMAND_SIZE = wire.error_response(wire.TPM_RC_COMMAND_SIZE)
"""libtpms' answer to a command over its buffer: ``80 01 00 00 00 0a 00 00 01 42``."""


class Tpm2Path(CommandPath):
    """The TPM 2.0 path of a proxy (see the module docstring).

    ``owner_gone(space)``: True if the client owning ``space`` has exited and was
    forgotten now (the resource manager asks before refusing another space's
    session). ``lock``: the TPM's lock, held while an extension calls the backend.
    ``abandoned_sessions``: the resource manager's bound on client-saved sessions
    kept after their client closed (:data:`.rm.ABANDONED_MAX`; 0: flush all).
    """

    family = "tpm2"
    probe = tpm2wire.build_command(TPM2_GetRandom, b"\x00\x08")
    startup_command = tpm2wire.startup_command()
    startup_name = "TPM2_Startup(CLEAR)"
    startup_ok = (0, 0x100)  # TPM_RC_INITIALIZE: already started
    failure_rcs = (TPM_RC_FAILURE,)
    failure_rc = TPM_RC_FAILURE

    def __init__(self, profile: Profile, backend: Backend, clock: Clock, log: Callable[..., None], *,
                 seed: int = 0, rm: bool = True, owner_gone: Callable[[Space], bool] | None = None,
                 lock: "threading.RLock | None" = None, abandoned_sessions: int | None = None) -> None:
        super().__init__(backend, log)
        self.profile = profile
        self.limits = limits.for_profile(profile.name)
        self.max_frame = self.limits.frame
        self.clock = clock
        self.objects = objects.ObjectTable()
        self.pricer = cost.Pricer(profile)
        self.extension_state = extensions.ExtensionState(seed, flush_on_close=rm)
        extensions.registered()  # load the handlers now: inside the first command they made it ~0.4 s late
        self._owner_gone = owner_gone
        self._lock = lock if lock is not None else threading.RLock()
        self.rm: ResourceManager | None = None
        if rm:
            self.rm = ResourceManager(self._internal, self.objects, query=backend.transact, reclaim=self._reclaim,
                                      abandoned_max=abandoned_sessions)
        self.per_client = rm
        self._self_priced = type(backend).charged is not Backend.charged
        """The backend may price its own commands (else ``charged()`` is always None: not asked)."""
        self._names: dict[int, str] = {}
        self._contexts: dict[int, extensions.Context] = {}
        """Client id -> the extension ``Context`` its commands get (dropped when the client ends)."""
        self._priced: tuple | None = None
        """The price of the client command the resource manager ran last (:meth:`_run_priced`)."""

    # ---- per command -----------------------------------------------------------

    def name(self, code: int) -> str:
        reg = extensions.registration(code)
        if reg is not None:
            return reg.name
        name = self._names.get(code)
        if name is None:
            name = self._names[code] = command_name(code)
        return name

    def run(self, client: Any, command: bytes) -> tuple[bytes, cost.CommandCost, Any]:
        code = struct.unpack_from(">I", command, 6)[0] if len(command) >= _HEADER else 0
        reg = extensions.registration(code)
        if reg is None:
            name = self._names.get(code) or self.name(code)
        else:
            name = reg.name
        if self.rm_commands:
            self.rm_ms, self.rm_commands, self.rm_list = 0.0, 0, NO_RM
        self.detail = NO_DETAIL
        clock = self.clock
        rec = clock.begin(name)  # begin/end: no generator context manager on the hot path
        try:
            if reg is not None and command[:2] in _TPM2_TAGS:  # an extension's code (else dispatch passes)
                claimed = self._extension(client, command, reg)
                if claimed is not None:
                    return claimed[0], claimed[1], rec
            if len(command) > self.limits.backend:  # over libtpms' buffer: its answer, never forwarded
                assessed = self.pricer.assess(command, _COMMAND_SIZE, self.objects)
                clock.charge_all(assessed.terms)
                return _COMMAND_SIZE, assessed, rec
            rm = self.rm
            if rm is None or rm.passes(client.space, command, code):
                response = self._run_priced(command)
            else:
                self._priced = None
                response = rm.execute(client.space, command, self._run_priced)
            priced = self._priced
            if priced is None:  # refused by the resource manager before reaching the TPM
                assessed, charged = self.pricer.assess(command, response, self.objects), None
            else:
                assessed, charged = priced
            if charged is not None:
                clock.charge_all_ms(charged)
            else:
                clock.charge_all(assessed.terms)
            return response, assessed, rec
        finally:
            clock.end()

    def _extension(self, client: Any, command: bytes,
                   reg: extensions.Registration) -> tuple[bytes, cost.CommandCost] | None:
        """Step 1: the extension's handler, if it claims the command (charged here)."""
        ctx = self._contexts.get(client.id)
        if ctx is None:  # one per client, built the first time an extension's code comes from it
            ctx = self._contexts[client.id] = extensions.Context(
                client.id, self.profile, lambda c: self.transact_in_space(client, c), self.extension_state,
                self.limits.command, self._transact_direct)
        claimed = extensions.dispatch_registered(command, reg, ctx)
        if claimed is None:
            return None
        assessed = claimed.assessed(len(command))
        self.objects.observe(claimed.code, command, claimed.response, claimed.rc)  # e.g. a forwarded Startup
        if claimed.fault:
            self._log(claimed.fault)  # the client only saw TPM_RC_FAILURE
        self.clock.charge_all(assessed.terms)
        self.clock.charge_all_ms(claimed.charges_ms)
        return claimed.response, assessed

    def _run_priced(self, real: bytes) -> bytes:
        """Steps 3-4 for a client command: the backend, then its price (the last such price is the
        command's; a bound method, not a closure per command)."""
        response = self.backend.transact(real)
        failed = len(response) < _HEADER or response[6:10] == _RC_FAILURE
        if failed or self.backend_down:
            self.note_backend(real, response, failed)
        charged = self.backend.charged() if self._self_priced else None
        assessed = self.pricer.assess(real, response, self.objects)
        if self.traced:  # replay's fields, only when traced
            self.detail = tracing.details(real, assessed.code, assessed.command, self.objects)
        self.objects.observe(assessed.code, real, response, assessed.rc)
        self._priced = assessed, (dict(charged) if charged is not None else None)
        return response

    def transact_in_space(self, client: Any, command: bytes) -> bytes:
        """A backend command on ``client``'s behalf, through its resource-manager space, unpriced
        except for the RM's own context commands (for extensions that price themselves)."""
        with self._lock:
            if self.rm is None:
                return self.backend.transact(command)
            return self.rm.execute(client.space, command, self.backend.transact)

    def _transact_direct(self, command: bytes) -> bytes:
        """A backend command past the resource manager, unpriced (an extension's own short-lived object)."""
        with self._lock:
            return self.backend.transact(command)

    def _internal(self, command: bytes) -> bytes:
        """One of the resource manager's own commands: run and priced like a client's."""
        response = self.backend.transact(command)
        assessed = self.pricer.assess(command, response, self.objects)
        clock = self.clock
        before = clock.now_ms
        clock.charge_all(assessed.terms)
        self.note_rm_command(clock.now_ms - before,
                             [assessed.command, assessed.in_bytes, assessed.out_bytes, assessed.rc])
        return response

    # ---- clients -----------------------------------------------------------------

    def new_space(self, client_id: int) -> Space:
        space = Space(0)
        space.conn_id = client_id
        return space

    def _reclaim(self, space: Space) -> bool:
        """The resource manager asks: has the owner of ``space`` exited? Then close its space now (its exit
        would be noticed at the next reap; the next tool of a shell script is faster than that)."""
        if self._owner_gone is None or not self._owner_gone(space):
            return False
        self._contexts.pop(space.conn_id, None)
        extensions.connection_closed(space.conn_id, self.extension_state)
        if self.rm is not None:
            self.rm.close(space)  # its RM commands are charged to the command that claims
        return True

    def client_ended(self, client: Any) -> Callable[[], None] | None:
        self._contexts.pop(client.id, None)
        extensions.connection_closed(client.id, self.extension_state)
        rm, space = self.rm, client.space
        if rm is None or space.empty:
            return None
        return lambda: rm.close(space)

    def close_cost(self) -> cost.CommandCost:
        return cost.CommandCost("RM_FlushOnClose", 0, None, {}, 0, 0, 0, True)

    def control_reply(self, code: int, payload: bytes, reply: bytes) -> bytes:
        """CMD_SET_BUFFERSIZE reports the profile's frame cap, as GetCapability does (:mod:`.limits`)."""
        if code != wire.CMD_SET_BUFFERSIZE:
            return reply
        return control.buffersize_reply(payload, reply, self.limits.control_buffer)

    def power_cycled(self) -> None:
        self.objects.clear_transient()
        extensions.tpm_reset(self.extension_state)
        if self.rm is not None:
            self.rm.reset()

    def held_summary(self) -> str:
        if self.rm is None:
            return ""
        return f", {self.rm.sessions_held()} session(s) held for clients ({len(self.rm.abandoned)} abandoned)"

    def loaded_objects(self, clients: list[Any]) -> int:
        return sum(len(c.space.vhandles()) for c in clients if c.space is not None)

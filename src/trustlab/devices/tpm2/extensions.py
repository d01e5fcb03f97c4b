"""What-if commands for TPM 2.0: handlers the proxy runs instead of the backend TPM.

The timing proxy forwards every command to swtpm - except those a handler
registered here claims. That is how a command (or an algorithm) that no chip
ships yet is put in front of real clients at a real chip's speed (the example
of ``devices/tpm2/README.md``, run by its tests)::

    @tpm_command(0x20000001, "TPM2_Reverse", handles=0)
    def reverse(cmd, ctx):
        data = cmd.params.param(1).tpm2b(64)
        cmd.params.end()
        rnd = ctx.backend_transact(bytes.fromhex("80010000000c0000017b0008"))
        return Reply(params=tpm2b(data[::-1] + rnd[12:20]),
                     price=lambda n_in, n_out: {"ohc": ctx.profile.mean("ohc"), "reverse_ms": 2.5})

A handler gets the parsed command (:class:`Command`: handles, authorization
sessions, a reader over the parameters) and a :class:`Context` (connection id,
profile, per-proxy state, ``backend_transact`` to the real TPM). It returns a
:class:`Reply` - the response parameters and what the command costs - or
``None`` to let the command go to the backend as usual (a handler may claim
``TPM2_CreatePrimary`` only when the template names an algorithm swtpm lacks).
Errors are raised as :class:`TpmError` with the TPM's response code. The proxy
charges what ``Reply.price(bytes_in, bytes_out)`` returns (component -> ms)
and ``Reply.terms`` (component -> count, drawn like any command's) on its
clock, holds the response in realtime mode, and traces it like any other
command.

Transient objects of extensions use handles 0x80FF0000-0x80FFFFFF, which the
resource manager never virtualizes or saves: under it a handler keeps them per
client (``ExtensionState.per_client``); :func:`connection_closed` and
:func:`tpm_reset` say how long they live.
"""

from __future__ import annotations

import hmac
import importlib
import inspect
import random
import struct
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from trustlab.devices.tpm2 import cost
from trustlab.devices.tpm2.commands import (
    TPM_RC_AUTH_FAIL,
    TPM_RC_BAD_AUTH,
    TPM_RC_BAD_TAG,
    TPM_RC_COMMAND_SIZE,
    TPM_RC_FAILURE,
    TPM_ST_NO_SESSIONS,
    TPM_ST_SESSIONS,
)
from trustlab.devices.tpm2.wire import HEADER_SIZE
from trustlab.devices.tpm2.wire import error_response as error_frame  # the 10-byte TPM_ST_NO_SESSIONS answer
from trustlab.timing.profile import Profile

EXTENSION_HANDLE_FIRST = 0x80FF0000
EXTENSION_HANDLE_LAST = 0x80FFFFFF
TPM_RS_PW = 0x40000009

# response codes (TPM 2.0 Part 2, 6.6; 1.85 adds PARMS .. SIGN_CONTEXT_KEY) a handler
# commonly needs; format-one codes name their place with at_handle/at_param/at_session
TPM_RC_ATTRIBUTES = 0x082
TPM_RC_HASH = 0x083
TPM_RC_VALUE = 0x084
TPM_RC_MODE = 0x089
TPM_RC_TYPE = 0x08A
TPM_RC_SCHEME = 0x092
TPM_RC_SIZE = 0x095
TPM_RC_SYMMETRIC = 0x096
TPM_RC_TAG = 0x097
TPM_RC_INSUFFICIENT = 0x09A
TPM_RC_SIGNATURE = 0x09B
TPM_RC_KEY = 0x09C
TPM_RC_INTEGRITY = 0x09F
TPM_RC_BINDING = 0x0A5
TPM_RC_PARMS = 0x0AA
TPM_RC_EXT_MU = 0x0AB
TPM_RC_SIGN_CONTEXT_KEY = 0x0AD
TPM_RC_AUTH_TYPE = 0x124
TPM_RC_AUTH_MISSING = 0x125
TPM_RC_AUTH_UNAVAILABLE = 0x12F
TPM_RC_AUTHSIZE = 0x144
TPM_RC_AUTH_CONTEXT = 0x145
TPM_RC_OBJECT_MEMORY = 0x902
TPM_RC_MEMORY = 0x904
_H, _P, _S = 0x000, 0x040, 0x800


def at_handle(rc: int, n: int) -> int:
    """A format-one response code about handle ``n`` (1-based)."""
    return rc | _H | (n << 8)


def at_param(rc: int, n: int) -> int:
    """A format-one response code about parameter ``n`` (1-based)."""
    return rc | _P | (n << 8)


def at_session(rc: int, n: int) -> int:
    """A format-one response code about authorization session ``n`` (1-based)."""
    return rc | _S | (n << 8)


class TpmError(Exception):
    """A handler's refusal: answered to the client as a response code, never a traceback."""

    def __init__(self, rc: int, why: str = "") -> None:
        super().__init__(f"{rc:#x}" + (f": {why}" if why else ""))
        self.rc = rc


def is_extension_handle(handle: int) -> bool:
    return EXTENSION_HANDLE_FIRST <= handle <= EXTENSION_HANDLE_LAST


# ---- parsing ------------------------------------------------------------------


class Reader:
    """Parameters of one command, read in order; a short or overlong area is a TPM error.

    ``param(n)`` names the parameter being read, so a short read answers
    TPM_RC_INSUFFICIENT (and an oversized TPM2B, TPM_RC_SIZE) for *that*
    parameter, as the TPM's unmarshalling code does.
    """

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data, self.pos, self.n = data, pos, 1

    def param(self, n: int) -> "Reader":
        self.n = n
        return self

    def take(self, k: int) -> bytes:
        if self.pos + k > len(self.data):
            raise TpmError(at_param(TPM_RC_INSUFFICIENT, self.n), "parameter area too short")
        v = self.data[self.pos:self.pos + k]
        self.pos += k
        return v

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return struct.unpack(">H", self.take(2))[0]

    def u32(self) -> int:
        return struct.unpack(">I", self.take(4))[0]

    def tpm2b(self, limit: int | None = None) -> bytes:
        """A TPM2B: UINT16 size and that many bytes; ``limit`` is the type's maximum size."""
        n = self.u16()
        if limit is not None and n > limit:
            raise TpmError(at_param(TPM_RC_SIZE, self.n), f"buffer of {n} bytes exceeds {limit}")
        return self.take(n)

    def rest(self) -> bytes:
        v = self.data[self.pos:]
        self.pos = len(self.data)
        return v

    def end(self) -> None:
        """Every parameter read: bytes left over are TPM_RC_SIZE, as on a TPM."""
        if self.pos != len(self.data):
            raise TpmError(TPM_RC_SIZE, "bytes left after the last parameter")


@dataclass(frozen=True)
class AuthSession:
    """One TPMS_AUTH_COMMAND of the command's authorization area."""

    handle: int
    nonce: bytes
    attributes: int
    hmac: bytes


@dataclass
class Command:
    """A parsed command frame, as a handler sees it."""

    code: int
    name: str
    tag: int
    handles: list[int]
    sessions: list[AuthSession]
    params: Reader
    raw: bytes
    auth_area: bytes = b""

    def require_password(self, index: int, auth_value: bytes | None, *, no_da: bool = False) -> None:
        """Check the password session for the ``index``-th (0-based) authorized handle.

        Only password sessions (TPM_RS_PW) are understood here: HMAC and policy
        sessions live inside the backend TPM, whose session keys the proxy never
        sees, so they are answered TPM_RC_AUTH_TYPE. A wrong password is
        TPM_RC_AUTH_FAIL (TPM_RC_BAD_AUTH for a noDA object) on that session.
        ``auth_value`` None checks only the session's form (so that a caller can test the TPM's
        lockout between form and password, as libtpms does). Counting a failure in the TPM's
        dictionary-attack state is the caller's (the PQC keys': :mod:`trustlab.devices.tpm2.pqc.lockout`).
        """
        if self.tag != TPM_ST_SESSIONS or len(self.sessions) <= index:
            raise TpmError(TPM_RC_AUTH_MISSING, "authorization session required")
        s = self.sessions[index]
        if s.handle != TPM_RS_PW:
            raise TpmError(TPM_RC_AUTH_TYPE, "only password sessions")
        if s.nonce:
            raise TpmError(at_session(TPM_RC_SIZE, index + 1), "password session with a nonce")
        if auth_value is None:  # the session's form only
            return
        if not hmac.compare_digest(s.hmac.rstrip(b"\x00"), auth_value.rstrip(b"\x00")):
            raise TpmError(at_session(TPM_RC_BAD_AUTH if no_da else TPM_RC_AUTH_FAIL, index + 1), "bad password")


def parse_command(frame: bytes, name: str, n_handles: int) -> Command:
    """Split a raw frame into header, handles, authorization area and parameters."""
    tag, size, code = struct.unpack_from(">HII", frame, 0)
    if tag not in (TPM_ST_NO_SESSIONS, TPM_ST_SESSIONS):
        raise TpmError(TPM_RC_BAD_TAG)
    if size != len(frame):
        raise TpmError(TPM_RC_COMMAND_SIZE)
    pos = HEADER_SIZE + 4 * n_handles
    if pos > len(frame):
        raise TpmError(at_handle(TPM_RC_INSUFFICIENT, 1))
    handles = [struct.unpack_from(">I", frame, HEADER_SIZE + 4 * i)[0] for i in range(n_handles)]
    sessions: list[AuthSession] = []
    auth_area = b""
    if tag == TPM_ST_SESSIONS:
        if pos + 4 > len(frame):
            raise TpmError(TPM_RC_AUTHSIZE)
        (auth_size,) = struct.unpack_from(">I", frame, pos)
        if auth_size < 9 or pos + 4 + auth_size > len(frame):
            raise TpmError(TPM_RC_AUTHSIZE)
        auth_area = frame[pos + 4:pos + 4 + auth_size]
        r = Reader(auth_area)
        while r.pos < len(auth_area):
            try:
                sessions.append(AuthSession(r.u32(), r.tpm2b(64), r.u8(), r.tpm2b(128)))
            except TpmError:
                raise TpmError(TPM_RC_AUTHSIZE) from None
        if len(sessions) > 3:
            raise TpmError(TPM_RC_AUTH_CONTEXT)
        pos += 4 + auth_size
    return Command(code, name, tag, handles, sessions, Reader(frame, pos), frame, auth_area)


# ---- answering ----------------------------------------------------------------


@dataclass
class Reply:
    """A handler's answer: response parameters/handles and what the command costs.

    ``terms``: component -> count, priced by the proxy's clock like the wire
    formula of any TPM 2.0 command (``ohc``, ``ohir``, ``ohor`` ...), or a
    function of (command bytes, response bytes) returning them.
    ``price``: called with (command bytes, response bytes), returns
    component -> ms already priced (e.g. by the PQC cost model).
    With neither, the command costs the wire formula: ``ohc`` + ``ohir`` x
    bytes in + ``ohor`` x bytes out.
    ``variant``: the key algorithm, shown in the trace (``mldsa65``).
    ``raw``: a complete response frame to send as is (e.g. the backend's own).
    """

    params: bytes = b""
    handles: list[int] = field(default_factory=list)
    terms: "dict[str, float] | Callable[[int, int], dict[str, float]] | None" = None
    price: Callable[[int, int], dict[str, float]] | None = None
    variant: str | None = None
    raw: bytes | None = None


@dataclass
class ExtensionResult:
    """What :func:`dispatch` hands back to the proxy for a claimed command."""

    response: bytes
    command: str
    code: int
    rc: int
    terms: dict[str, float]
    charges_ms: dict[str, float]
    variant: str | None = None
    fault: str | None = None
    """Set when the handler raised (a bug): the client saw TPM_RC_FAILURE; this says why."""
    priced_as: dict[str, Any] | None = None
    """What ``charges_ms`` prices, when the handler's price names it (the PQC model's algorithm and
    operation): the trace's ``pqc`` field, which ``trustlab replay`` prices on other chips."""

    def assessed(self, in_bytes: int) -> "cost.CommandCost":
        """The trace's view of this command, as :func:`cost.assess` gives it for forwarded ones."""
        return cost.CommandCost(self.command, self.code, self.variant, self.terms, in_bytes,
                                len(self.response), self.rc, modelled=True)


def build_response(cmd: Command, reply: Reply) -> bytes:
    """The response frame: handles, parameterSize (with sessions), parameters, session acks.

    Each password session is acknowledged with an empty nonce, its
    continueSession bit echoed and an empty HMAC, as Part 1 (19.6.5) specifies.
    """
    body = b"".join(struct.pack(">I", h) for h in reply.handles)
    if cmd.tag == TPM_ST_SESSIONS:
        body += struct.pack(">I", len(reply.params)) + reply.params
        body += b"".join(struct.pack(">HBH", 0, s.attributes & 0x01, 0) for s in cmd.sessions)
    else:
        body += reply.params
    return struct.pack(">HII", cmd.tag, HEADER_SIZE + len(body), 0) + body


# ---- registry and dispatch -----------------------------------------------------


Handler = Callable[[Command, "Context"], "Reply | None"]


@dataclass(frozen=True)
class Registration:
    code: int
    name: str
    handles: int
    handler: Handler
    claims: "Callable[[Command], bool] | Callable[[Command, Context], bool] | None" = None
    claims_in_context: bool = False
    """``claims`` takes the :class:`Context` too (to consult what the handler learnt in ``ctx.state``)."""
    passes: Callable[[bytes, "Context"], bool] | None = None
    """A cheap test of the raw frame, before it is parsed: True sends it to the backend untouched."""
    forwards: bool = False
    """The handler sends the command itself, unchanged, to the backend and answers its response: the
    command's sessions (HMAC, policy, audit ...) are the backend's, so every kind passes."""


_REGISTRY: dict[int, Registration] = {}
_CLOSE_HOOKS: list[Callable[["ExtensionState", Any], None]] = []
_RESET_HOOKS: list[Callable[["ExtensionState"], None]] = []
_PLUGINS = ("trustlab.devices.tpm2.pqc.handlers",)
_loaded = False
_load_lock = threading.Lock()
_version = 0


def tpm_command(code: int, name: str, *, handles: int,
                claims: "Callable[[Command], bool] | Callable[[Command, Context], bool] | None" = None,
                passes: "Callable[[bytes, Context], bool] | None" = None,
                forwards: bool = False) -> Callable[[Handler], Handler]:
    """Register ``handler`` for command ``code``; ``handles`` is the size of its handle area.

    ``claims``: for a command the backend also has, a side-effect-free test of
    the parsed command (e.g. "the template is ML-DSA"); False, or a frame it
    cannot parse, sends the command to the backend untouched. A ``claims``
    with a second parameter also gets the :class:`Context` (e.g. to pass on
    requests the handler found it leaves untouched, kept in ``ctx.state``).
    ``passes``: optionally, with ``claims``, a test of the raw frame that may
    say True only where ``claims`` would say False; it spares the commands
    the handler never wants (most of them, for a command as common as
    TPM2_GetCapability) the parsing. Without ``claims`` the command is always the handler's. Registering a code again
    replaces the handler (a what-if variant); handlers for one code are not
    chained.
    """
    def deco(fn: Handler) -> Handler:
        global _version
        in_context = claims is not None and len(inspect.signature(claims).parameters) >= 2
        _REGISTRY[code] = Registration(code, name, handles, fn, claims, in_context,
                                       passes if claims is not None else None, forwards)
        _version += 1
        return fn
    return deco


def registry_version() -> int:
    """A number that changes whenever a command is (re)registered: the key of caches derived from the registry."""
    return _version


def on_connection_closed(fn: Callable[["ExtensionState", Any], None]) -> Callable:
    """Register ``fn(state, conn_id)``: called when a client connection closes."""
    _CLOSE_HOOKS.append(fn)
    return fn


def on_tpm_reset(fn: Callable[["ExtensionState"], None]) -> Callable:
    """Register ``fn(state)``: called after a TPM Reset (a power cycle and the Startup(CLEAR) after it)."""
    _RESET_HOOKS.append(fn)
    return fn


def registered() -> dict[int, Registration]:
    """Code -> registration of every extension command (loads the shipped ones)."""
    _load_plugins()
    return dict(_REGISTRY)


def registration(code: int) -> Registration | None:
    """The registration of extension command ``code``, or None (no copy of the table: per-command use)."""
    if not _loaded:
        _load_plugins()
    return _REGISTRY.get(code)


def _load_plugins() -> None:
    global _loaded
    if _loaded:
        return
    with _load_lock:
        if not _loaded:
            for module in _PLUGINS:
                importlib.import_module(module)
            _loaded = True


class ExtensionState:
    """Per-proxy (per TPM instance) state of extension handlers: objects, sequences ...

    Handlers keep what they need as attributes (``state.get("pqc", factory)``);
    one lock serialises them, though the proxy already runs one command at a time.
    """

    def __init__(self, seed: int = 0, *, flush_on_close: bool = False) -> None:
        self.rng = random.Random(seed)
        self.flush_on_close = flush_on_close
        self._slots: dict[str, Any] = {}
        self.lock = threading.RLock()

    @property
    def per_client(self) -> bool:
        """Each client has extension objects of its own that no other client sees, uses or flushes (the
        resource manager's rule, set with ``flush_on_close``); False: one TPM shared as it is (``--no-rm``)."""
        return self.flush_on_close

    def get(self, key: str, factory: Callable[[], Any]) -> Any:
        if key not in self._slots:
            self._slots[key] = factory()
        return self._slots[key]


@dataclass
class Context:
    """What a handler may use besides the command: who asked, which chip, the real TPM."""

    conn_id: Any
    profile: Profile
    backend_transact: Callable[[bytes], bytes]
    state: ExtensionState
    max_command_size: int | None = None
    """The TPM's TPM_PT_MAX_COMMAND_SIZE (= MAX_RESPONSE_SIZE) for the commands handlers answer: a longer
    command is answered TPM_RC_COMMAND_SIZE, a longer response TPM_RC_SIZE (None: no bound of its own)."""
    backend_direct: Callable[[bytes], bytes] | None = None
    """The backend TPM itself, past the resource manager (None: ``backend_transact`` is that already): for
    a short-lived object of the extension's own that must take no slot of the client's space."""


def dispatch(command: bytes, ctx: Context) -> ExtensionResult | None:
    """Run ``command`` through its extension handler, or return None (forward it as usual)."""
    if len(command) < HEADER_SIZE or struct.unpack_from(">H", command, 0)[0] not in (TPM_ST_NO_SESSIONS,
                                                                                      TPM_ST_SESSIONS):
        return None  # not a TPM 2.0 command (a TPM 1.2 frame, garbage): the backend answers it
    reg = registration(struct.unpack_from(">I", command, 6)[0])
    if reg is None:
        return None
    return dispatch_registered(command, reg, ctx)


def dispatch_registered(command: bytes, reg: Registration, ctx: Context) -> ExtensionResult | None:
    """:func:`dispatch` for a TPM 2.0 frame whose code has the registration ``reg`` (the proxy has looked
    it up already, and builds ``ctx`` only then)."""
    if reg.passes is not None and reg.passes(command, ctx):
        return None
    limit = ctx.max_command_size
    if reg.claims is None and limit is not None and len(command) > limit:  # before parsing, as a TPM does
        return _result(command, reg, error_frame(TPM_RC_COMMAND_SIZE), Reply(), ctx)
    try:
        cmd = parse_command(command, reg.name, reg.handles)
    except TpmError as exc:
        if reg.claims is not None:
            return None  # the backend's own command, malformed: the backend answers it
        return _result(command, reg, error_frame(exc.rc), Reply(), ctx)
    try:
        if reg.claims is not None and not (reg.claims(cmd, ctx) if reg.claims_in_context else reg.claims(cmd)):
            return None
        if limit is not None and len(command) > limit:
            raise TpmError(TPM_RC_COMMAND_SIZE, f"{len(command)}-byte command over the TPM's {limit}")
        if not reg.forwards and any(s.handle != TPM_RS_PW for s in cmd.sessions):
            # HMAC, policy, audit and encrypt sessions live inside the backend, out of the handler's reach
            raise TpmError(TPM_RC_AUTH_TYPE, "extension commands take password sessions only")
        with ctx.state.lock:
            reply = reg.handler(cmd, ctx)
        if reply is None:
            return None
        response = reply.raw if reply.raw is not None else build_response(cmd, reply)
        if limit is not None and len(response) > limit:  # wolfTPM's fwTPM: a response overflowing its buffer
            raise TpmError(TPM_RC_SIZE, f"{len(response)}-byte response over the TPM's {limit}")
    except TpmError as exc:
        response, reply = error_frame(exc.rc), Reply()
    except Exception as exc:  # noqa: BLE001 - a handler bug must look like a TPM failure, not kill the proxy
        return _result(command, reg, error_frame(TPM_RC_FAILURE), Reply(), ctx,
                       fault=f"{reg.name} handler raised {type(exc).__name__}: {exc}")
    return _result(command, reg, response, reply, ctx)


def _result(command: bytes, reg: Registration, response: bytes, reply: Reply, ctx: Context,
            fault: str | None = None) -> ExtensionResult:
    """Price a claimed command: the handler's ``price``/``terms``, else the wire formula."""
    rc = struct.unpack_from(">I", response, 6)[0] if len(response) >= HEADER_SIZE else TPM_RC_FAILURE
    charges = dict(reply.price(len(command), len(response))) if reply.price is not None else {}
    terms = reply.terms(len(command), len(response)) if callable(reply.terms) else reply.terms
    if terms is None:
        terms = {} if charges else wire_terms(len(command), len(response))
    terms = {c: n for c, n in terms.items() if c in ctx.profile}
    return ExtensionResult(response, reg.name, reg.code, rc, terms, charges, reply.variant, fault,
                           getattr(reply.price, "priced_as", None) if charges else None)


def wire_terms(in_bytes: int, out_bytes: int) -> dict[str, float]:
    """The TPM 2.0 wire formula's terms (counts) for a command that does no modelled crypto."""
    return {"ohc": 1.0, "ohir": float(in_bytes), "ohor": float(out_bytes)}


def connection_closed(conn_id: Any, state: ExtensionState | None = None) -> None:
    """A client connection closed: flush the extension objects it loaded.

    Only when ``state.flush_on_close`` - set by a proxy whose resource manager
    flushes the connection's swtpm objects too. Without one, extension objects
    live like swtpm's own transient objects, until TPM2_FlushContext or a
    TPM2_Startup(CLEAR): ``tcti-swtpm`` opens a new connection per command.
    """
    if state is None or not state.flush_on_close:
        return
    with state.lock:
        for hook in _CLOSE_HOOKS:
            hook(state, conn_id)


def tpm_reset(state: ExtensionState) -> None:
    """The TPM was power-cycled (and started with Startup(CLEAR)): every extension object is gone, as the
    TPM's own transient objects and sequences are."""
    _load_plugins()
    with state.lock:
        for hook in _RESET_HOOKS:
            hook(state)

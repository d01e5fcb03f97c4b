"""The TPM 1.2 engine: state, key slots, sessions and the timed dispatcher.

``Engine.execute(frame)`` takes a marshalled TPM 1.2 command and returns the
marshalled response, exactly as a chip on the LPC bus would. Timing happens
in two places only (Gunupudi & Tate 2010, Sec. V-C):

* the dispatcher charges ``ohc`` once per command, ``ohir`` per byte of the
  request frame and ``ohor`` per byte of the response frame;
* the primitives (:mod:`.primitives`) charge ``rsa_enc``/``rsa_dec``/
  ``rsa_sign`` and ``sha1_byte`` for the blocks they hash, including the
  dispatcher's parameter digests and session HMACs.

A command wrapped in TPM_ExecuteTransport crossed the bus once, inside the
outer command; the inner dispatch therefore charges no overhead of its own,
only its crypto (charged to the inner command's name, rolled up to the outer).

Persistent state (owner secret, tpmProof, EK, SRK, monotonic counters,
hash-tree root) is saved through an :class:`~.nvstore.NVStore` before the
response of any command that changed it; everything else (PCRs, loaded keys,
sessions) is volatile and lost at TPM_Startup, as on a chip.

If saving fails, the in-memory state rolls back to the last durable one (the
command never happened). After a *successful* command the failure propagates
(the host must not read an acknowledgement that is not durable); after a
*failed* command, whose error answer was already due, the chip answers
TPM_FAIL instead. Injected power loss (a ``BaseException``, e.g. the fTPM's
``PowerLoss``) always propagates: nothing may keep running after it.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Callable

from cryptography.hazmat.primitives.asymmetric import rsa

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import flags, owner_evict, registry
from trustlab.devices.tpm12 import state_checks as checks
from trustlab.devices.tpm12.contexts import ContextState, session_from_json, session_to_json
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import LoadedKey, key_from_json, key_to_json, modulus_of, srk_blob
from trustlab.devices.tpm12.pc_client import PCR_DEFAULT, PCR_RESETTABLE
from trustlab.devices.tpm12.nvareas import nv_locked
from trustlab.devices.tpm12 import nvstore
from trustlab.devices.tpm12.nvstore import MemoryNVStore, NVStore
from trustlab.devices.tpm12.primitives import Primitives
from trustlab.devices.tpm12.parsed import AUTH_IN, AUTH_OUT, HEADER, Command, Reply
from trustlab.devices.tpm12.registry import CommandSpec, Request
from trustlab.devices.tpm12.sessions import AuthContext, Session, SessionUse
from trustlab.devices.tpm12.state import LOCKOUT_THRESHOLD, PersistentState
from trustlab.devices.tpm12.wire import Reader, Writer
from trustlab.timing.clock import Clock

_HEADER_IN = struct.Struct(">HII").unpack_from
_HEADER_OUT = struct.Struct(">HII").pack
_U32 = struct.Struct(">I").unpack_from
_AUTH_IN = struct.Struct(">I20sB20s").unpack_from  # authHandle, nonceOdd, continueAuthSession, authValue
_HANDLES = [struct.Struct(f">{n}I") for n in range(4)]
_BYTE = [bytes((i,)) for i in range(256)]
_RC_SUCCESS = struct.pack(">I", C.TPM_SUCCESS)
_REQUEST_TAGS = C.REQUEST_TAGS  # tag -> number of authorization trailers
_RESPONSE_TAGS = C.RESPONSE_TAG  # number of authorization trailers -> response tag
_RESPONSE_TAG_SESSIONS = {tag: n for n, tag in C.RESPONSE_TAG.items()}
_ORD_STARTUP = C.ORD["TPM_Startup"]
_ORD_RESET_LOCK_VALUE = C.ORD["TPM_ResetLockValue"]
_ORD_EXECUTE_TRANSPORT = C.ORD["TPM_ExecuteTransport"]
_SHA1_THREAD = {C.ORD[n] for n in ("TPM_SHA1Update", "TPM_SHA1Complete", "TPM_SHA1CompleteExtend")}
# Part 3, 4.2 (failure mode): only these answer; libtpms adds nothing else
_FAILURE_MODE_OK = {C.ORD["TPM_GetTestResult"], C.ORD["TPM_GetCapability"]}
SAVED_STATE = "saved_state"  # key in PersistentState.extra: what TPM_SaveState preserved
AUDITED, AUDIT_COUNT = "audited", "audit_counter"  # PersistentState.extra keys
_ORD_SAVE_STATE = struct.pack(">I", C.ORD["TPM_SaveState"])
_PACK_U32 = struct.Struct(">I").pack
# the commands that keep an exclusive transport session alive when it is their last session
_EXCLUSIVE_KEEPERS = ("TPM_ExecuteTransport", "TPM_ReleaseTransportSigned")
_OVERSIZED = _HEADER_OUT(C.TPM_TAG_RSP_COMMAND, HEADER, C.RC["TPM_BAD_PARAM_SIZE"])
"""The answer to a command longer than the TPM's command buffer: what ``trustlab serve`` (the front end,
``serving.wire.FrameReader``) sends for it and what swtpm/libtpms send once the frame outgrows swtpm's read
buffer (the first read's paramSize no longer matches: TPM_Process_GetCommandParams, TPM_BAD_PARAM_SIZE)."""


def _reply_of(frame: bytes) -> Reply:
    """A response frame as values (for a command the fast path sent the framed way)."""
    tag, _, rc = _HEADER_IN(frame)
    if rc:
        return Reply((rc, b"", b"", ()))
    n = len(frame) - AUTH_OUT * _RESPONSE_TAG_SESSIONS[tag]
    trailers = [(frame[at:at + 20], frame[at + 20:at + 21], frame[at + 21:at + AUTH_OUT])
                for at in range(n, len(frame), AUTH_OUT)]
    return Reply((0, b"", frame[HEADER:n], trailers))


def _shipped_oiap() -> tuple[CommandSpec | None, int]:
    """TPM_OIAP's spec while it is the shipped one (its handler, no handles, no sessions, no digests of
    its own), else None; and the session slots the shipped handler allows (``commands.auth``)."""
    from trustlab.devices.tpm12.commands import auth  # (loaded by registry.table(): no registration here)

    spec = registry.by_name("TPM_OIAP")
    shipped = (spec is not None and spec.handler is auth.oiap and spec.handles == 0 and spec.auth == (0,)
               and not spec.own_digests and spec.ordinal not in checks.NEEDS_OWNER)
    return (spec if shipped else None), auth.MAX_SESSIONS


def _handles_struct(n: int) -> struct.Struct:
    return _HANDLES[n] if n < len(_HANDLES) else struct.Struct(f">{n}I")


REQUIRED = ("ohc", "ohir", "ohor", "rsa_dec", "rsa_enc", "rsa_sign", "sha1_byte")
"""The components a profile needs to time the engine (what an experiment checks before it builds one)."""


class Engine:
    """A TPM 1.2 chip: call :meth:`execute` with command bytes."""

    def __init__(self, clock: Clock, nv: NVStore | None = None,
                 keygen: Callable[[int], rsa.RSAPrivateKey] | None = None, *, started: bool = True,
                 ek: bool = True) -> None:
        clock.require(*REQUIRED)
        self.clock = clock
        bus = [clock.fixed_cost(c) for c in ("ohc", "ohir", "ohor")]
        # the dispatcher's per-command charges, precomputed when none has a spread (else None: drawn)
        self._bus = None if None in bus else (1.0 * bus[0], bus[1], bus[2])
        self.keygen = keygen
        self.crypto = Primitives(clock, keygen)
        self._no_auth = AuthContext(self.crypto, b"", [])  # (the authorization of commands without sessions)
        self._specs = registry.table()  # ordinal -> CommandSpec, live (later registrations appear)
        self._oiap_spec, self._max_sessions = _shipped_oiap()  # (the lean TPM_OIAP: see _open_oiap)
        self.nv: NVStore = nv if nv is not None else MemoryNVStore()
        data = self.nv.load()
        if data is None:
            # manufacturing: the EK is created once, outside any timed command
            self.state = PersistentState(ek=self.crypto.make_key(2048) if ek else None)
            data = self.state.to_bytes()
            self.nv.save(data)
        else:
            self.state = PersistentState.from_bytes(data, nvstore.where(self.nv))
        self._persisted = data  # the last state known to be durable
        self._load_audited()
        self._dirty = False
        self.last_internal_error: Exception | None = None  # set if a handler raised a non-TPM error
        self._storage_failure: BaseException | None = None
        self.locality = 0  # the bus locality of the current command (a served TPM's host sets it)
        self.auth_fail_count = 0  # dictionary-attack counter (TPM_STCLEAR_DATA.authFailCount)
        self.auth_fail_ms = 0.0
        self.disable_reset_lock = False  # TPM_STCLEAR_DATA.disableResetLock (a failed TPM_ResetLockValue)
        self.max_command = C.TPM_BUFFER_MAX
        """The longest command frame the TPM takes (TPM_CAP_PROP_INPUT_BUFFER; the limit ``trustlab serve``
        enforces): a longer one never reaches the chip, framed or as values (:meth:`_refuse_oversized`)."""
        self.last_refusal = ""  # why the last command was refused before it reached the chip ("" if none)
        self.max_response = C.TPM_BUFFER_MAX
        """The longest response frame the TPM sends: a longer answer becomes TPM_SIZE (:meth:`_run_outer`)."""
        self.init()
        if started:
            self.startup()

    # ---- power cycle ------------------------------------------------------------
    def init(self) -> None:
        """_TPM_Init (power on, swtpm's CMD_INIT): volatile state lost, only TPM_Startup accepted.

        Part 1, 39 / Part 3, 3: until TPM_Startup every other command answers
        TPM_INVALID_POSTINIT. The in-process host (``Engine(started=True)``, the
        default) plays the BIOS and starts the TPM at once, uncharged, as before.
        """
        self.post_init = True
        self.failed = False  # failure mode (TPM_Startup(ST_STATE) with nothing to restore)
        self.deactivated = False
        self.disabled = flags.permanent(self, "disable")
        self._clear_volatile()
        self._nv_areas = None  # libtpms reloads its NV at _TPM_Init: released slots close up (nvareas)

    # ---- volatile state -------------------------------------------------------
    def _clear_volatile(self) -> None:
        """Part 3, 3.2 TPM_Startup(ST_CLEAR) 2.a-b: sessions and keys gone, PCRs at their defaults."""
        self.pcrs = list(PCR_DEFAULT)  # (one entry per PCR)
        self.keys: dict[int, LoadedKey] = owner_evict.stored_keys(self.state)  # they keep their slots
        self.sessions: dict[int, Session] = {}
        self.exclusive: int | None = None
        self.counter_this_boot: int | None = None
        self.tick_nonce = os.urandom(20)
        self.nv_stclear_locks: set[tuple[str, int]] = set()  # bReadSTClear / bWriteSTClear
        self.global_lock = False  # TPM_STCLEAR_FLAGS.bGlobalLock
        self.disable_force_clear = False  # TPM_STCLEAR_FLAGS.disableForceClear
        self.physical_presence = False  # TPM_STCLEAR_FLAGS.physicalPresence (TSC_PhysicalPresence)
        self.pp_lock = False  # TPM_STCLEAR_FLAGS.physicalPresenceLock
        self.sha1_context: bytes | None = None  # TPM_SHA1Start..Complete: the data hashed so far
        self.audit_digest = bytes(20)  # TPM_STANY_DATA.auditDigest: zeroed by TPM_Startup
        self.contexts = ContextState()  # contextNonceKey/Session, contextCount, contextList
        self._next_handle = {"key": 0x01000000, "auth": 0x02000000, "trans": 0x05000000}

    def startup(self, kind: int = C.TPM_ST_CLEAR) -> None:
        """TPM_Startup after _TPM_Init (Part 3, 3.2): ST_CLEAR, ST_STATE or ST_DEACTIVATED.

        ST_STATE restores what TPM_SaveState preserved (non-resettable PCRs,
        loaded keys); with nothing saved the TPM enters failure mode and
        answers TPM_FAILEDSELFTEST (3.2 step 4.a). Any saved state is
        invalidated by any Startup (step 5).
        """
        if not self.post_init:
            raise TpmError("TPM_INVALID_POSTINIT", "TPM_Startup was already run since _TPM_Init")
        saved = self.state.extra.pop(SAVED_STATE, None)
        if saved is not None:
            self.mark_dirty()
        self.post_init = False
        self._clear_volatile()
        self.auth_fail_count = 0
        self.disable_reset_lock = False
        if kind == C.TPM_ST_STATE:
            if saved is None:
                self.failed = True
                raise TpmError("TPM_FAILEDSELFTEST", "TPM_Startup(ST_STATE) but no state was saved")
            if self._restore(saved):  # the saved flags are the boot's (libtpms TPM_Startup_State)
                return
        elif kind == C.TPM_ST_DEACTIVATED:
            self.deactivated = True
        if flags.permanent(self, "deactivated"):  # Part 3, 3.2 step 3: stclear copies the permanent flag
            self.deactivated = True

    def save_state(self) -> None:
        """TPM_SaveState (Part 3, 3.3): preserve PCRs and loaded keys in NV for ST_STATE."""
        doc = {"pcrs": [p.hex() for p in self.pcrs],
               "keys": {str(h): key_to_json(k) for h, k in self.keys.items()},
               "next": self._next_handle, "counter": self.counter_this_boot}
        if self.sessions:  # libtpms keeps the sessions too (TPM_StclearData_Store: auth and transport)
            doc["sessions"] = [session_to_json(s) for s in self.sessions.values()]
        # and the TPM_STCLEAR_FLAGS, the dictionary-attack state and the NV areas' bReadSTClear /
        # bWriteSTClear (TPM_SaveState_Store: StclearFlags, StclearData, NVIndexEntries_StoreVolatile);
        # found by Startup(ST_DEACTIVATED), SaveState, Startup(ST_STATE): libtpms stays deactivated
        doc["stclear"] = {"deactivated": self.deactivated, "disable_force_clear": self.disable_force_clear,
                          "physical_presence": self.physical_presence, "pp_lock": self.pp_lock,
                          "global_lock": self.global_lock, "nv_locks": sorted(map(list, self.nv_stclear_locks)),
                          "da": [self.auth_fail_count, self.disable_reset_lock, self.auth_fail_ms]}
        self.state.extra[SAVED_STATE] = json.dumps(doc, sort_keys=True)
        self.mark_dirty()

    def _restore(self, saved: str) -> bool:
        """Back to the saved boot; True if the saved state held the TPM_STCLEAR_FLAGS too."""
        try:
            doc = json.loads(saved)
            self.pcrs = [PCR_DEFAULT[i] if PCR_RESETTABLE[i] else bytes.fromhex(v)
                         for i, v in enumerate(doc["pcrs"])]
            self.keys = {int(h): key_from_json(v) for h, v in doc["keys"].items()}
            self.keys.update(owner_evict.stored_keys(self.state))
            self._next_handle = {k: int(v) for k, v in doc["next"].items()}
            self.counter_this_boot = doc["counter"]
            self.sessions = {s.handle: s for s in map(session_from_json, doc.get("sessions", []))}
            stclear = doc.get("stclear")
            if stclear is not None:  # (a state saved before the flags were kept has none)
                self.deactivated = bool(stclear["deactivated"])
                self.disable_force_clear = bool(stclear["disable_force_clear"])
                self.physical_presence = bool(stclear["physical_presence"])
                self.pp_lock = bool(stclear["pp_lock"])
                self.global_lock = bool(stclear["global_lock"])
                self.nv_stclear_locks = {(kind, int(index)) for kind, index in stclear["nv_locks"]}
                count, reset_lock, fail_ms = stclear["da"]
                self.auth_fail_count, self.disable_reset_lock = int(count), bool(reset_lock)
                self.auth_fail_ms = float(fail_ms)
        except (ValueError, KeyError, TypeError, TpmError) as e:
            self.failed = True
            raise TpmError("TPM_FAILEDSELFTEST", f"saved state unreadable: {e}") from None
        return stclear is not None

    def invalidate_saved_state(self) -> None:
        """Part 3, 3.3: any command after TPM_SaveState other than Startup invalidates it."""
        if SAVED_STATE in self.state.extra:
            del self.state.extra[SAVED_STATE]
            self.mark_dirty()

    # ---- dictionary-attack mitigation (Part 1, 20) ------------------------------------
    da_now_ms: Callable[[], float] | None = None
    """The clock the dictionary-attack timer runs on: the modelled clock in process (None), the
    wall clock when served (``serving/tpm12/engine_backend``): a chip's lockout timer also runs while
    nobody sends it a command, as libtpms' does (TPM_GetTimeOfDay); modelled time only moves with
    commands, so a served lockout would never end for a user who waits."""

    def _da_now_ms(self) -> float:
        return self.da_now_ms() if self.da_now_ms is not None else self.clock.now_ms

    def auth_failed(self) -> None:
        """Count a wrong authorization; past the threshold the TPM defends for 2^k seconds."""
        self.auth_fail_count += 1
        if self.auth_fail_count > LOCKOUT_THRESHOLD:
            self.auth_fail_ms = self._da_now_ms()

    def lockout_remaining_s(self) -> float:
        """Seconds the lockout still runs (0: no lockout), on the clock of :attr:`da_now_ms`."""
        if self.auth_fail_count <= LOCKOUT_THRESHOLD:
            return 0.0
        wait_s = float(1 << min(self.auth_fail_count - LOCKOUT_THRESHOLD - 1, 31))
        return max(0.0, wait_s - (self._da_now_ms() - self.auth_fail_ms) / 1000.0)

    def new_handle(self, kind: str) -> int:
        h = self._next_handle[kind]
        while kind == "key" and h in self.keys:  # an owner-evict key keeps its handle across startups
            h += 1
        self._next_handle[kind] = h + 1
        return h

    def key(self, handle: int) -> LoadedKey:
        if handle == C.TPM_KH_SRK:
            if self.state.srk is None:
                raise TpmError("TPM_NOSRK", "the TPM has no owner (TPM_TakeOwnership first)")
            return self.srk_loaded()
        try:
            return self.keys[handle]
        except KeyError:
            raise TpmError("TPM_INVALID_KEYHANDLE", f"no key loaded at handle {handle:#010x}") from None

    def srk_loaded(self) -> LoadedKey:
        srk = self.state.srk
        assert srk is not None
        cached = getattr(self, "_srk_cache", None)
        if cached is not None and cached[0] is srk and cached[1] == (self.state.srk_auth, self.state.tpm_proof):
            return cached[2]
        loaded = LoadedKey(srk_blob(modulus_of(srk)), self.state.srk_auth, self.state.tpm_proof or b"\x00" * 20,
                           b"", private=srk)
        self._srk_cache = (srk, (self.state.srk_auth, self.state.tpm_proof), loaded)
        return loaded

    def owner_auth(self) -> bytes:
        """The owner's secret for an owner-authorized command. With no owner installed libtpms'
        TPM_AuthSessions_GetData answers TPM_AUTHFAIL (found by tpm_restrictsrk -a on an unowned chip)."""
        if self.state.owner_auth is None:
            raise TpmError("TPM_AUTHFAIL", "the TPM has no owner")
        return self.state.owner_auth

    # ---- auditing (Part 3, 8.1) -----------------------------------------------------
    @property
    def audited(self) -> frozenset[int]:
        """Ordinals whose successful execution extends the audit digest (set by the owner)."""
        return self._audited

    def set_audited(self, ordinals: frozenset[int]) -> None:
        self.state.extra[AUDITED] = ",".join(str(o) for o in sorted(ordinals))
        self._audited = frozenset(ordinals)
        self.mark_dirty()

    def _load_audited(self) -> None:
        self._audited = frozenset(int(x) for x in self.state.extra.get(AUDITED, "").split(",") if x)

    def audit_counter_value(self) -> bytes:
        """TPM_COUNTER_VALUE of auditMonotonicCounter (label all zeros)."""
        return struct.pack(">H4sI", C.TPM_TAG_COUNTER_VALUE, b"\x00" * 4, int(self.state.extra.get(AUDIT_COUNT, "0")))

    def _audit(self, ord_bytes: bytes, params: bytes, in_digest: bytes, out_digest: bytes, result) -> None:
        if self.audit_digest == bytes(20):  # step 2.a: a new audit session bumps the counter
            self.state.extra[AUDIT_COUNT] = str(int(self.state.extra.get(AUDIT_COUNT, "0")) + 1)
            self.mark_dirty()
        count = self.audit_counter_value()
        in_d = in_digest or self.crypto.sha1(ord_bytes, params)
        self.audit_digest = self.crypto.sha1(self.audit_digest, struct.pack(">H", 0x0012), in_d, count)
        if ord_bytes != _ORD_SAVE_STATE:  # corner case 3.a: SaveState audits its input only
            out_d = out_digest or self.crypto.sha1(_RC_SUCCESS, ord_bytes, result.params)
            self.audit_digest = self.crypto.sha1(self.audit_digest, struct.pack(">H", 0x0013), out_d, count)

    def end_session(self, handle: int) -> None:
        self.sessions.pop(handle, None)
        if handle == self.exclusive:
            self.exclusive = None

    def mark_dirty(self) -> None:
        """Persist the state before this command's response leaves the TPM."""
        self._dirty = True

    def current_ticks(self) -> bytes:
        """TPM_CURRENT_TICKS (Part 2, 15.1): tag, ticks in µs of modelled time, rate, nonce."""
        return (Writer().u16(0x0014).raw(struct.pack(">Q", int(self.clock.now_ms * 1000)))
                .u16(1).raw(self.tick_nonce).bytes())

    # ---- dispatch -------------------------------------------------------------
    def execute(self, frame: bytes | Command) -> bytes | Reply:
        """Run one marshalled command; always returns a response frame.

        In process, the host may hand a :class:`~.parsed.Command` instead of the
        frame (the fast path: no marshalling either way) and gets a
        :class:`~.parsed.Reply`: the same checks, digests, HMACs, charges (``ohir``
        and ``ohor`` for the frames' lengths) and state as the frame would give.
        """
        if type(frame) is not Command:
            if len(frame) > self.max_command:
                return self._refuse_oversized(len(frame), self._peek_name(frame), True)  # type: ignore[return-value]
            return self._execute_frame(frame)
        ordinal, handles, params, trailers = frame
        spec = self._specs.get(ordinal)
        if spec is None or len(handles) != spec.handles:
            # no single reading of these values without the frame (an unknown ordinal, a handle
            # count the command does not take): the frame, exactly as the framed path sends it
            return _reply_of(self._execute_frame(bytes(frame)))
        if spec is self._oiap_spec and not params and not trailers:
            return self._open_oiap(frame, spec)
        n = HEADER + 4 * len(handles) + len(params) + AUTH_IN * len(trailers)  # the frame's length
        if n > self.max_command:
            return self._refuse_oversized(n, spec.name, False)  # type: ignore[return-value]
        return self._run_outer(spec.name, n, None, frame, spec)

    def _refuse_oversized(self, n: int, name: str, framed: bool) -> bytes | Reply:
        """A command frame of ``n`` bytes, longer than :attr:`max_command`: TPM_BAD_PARAM_SIZE, and nothing
        else - no record on the clock, no state touched (no SHA-1 thread or exclusive transport ended).

        Why nothing is charged: the command never reaches the chip. ``trustlab serve`` refuses it at its
        front end without calling the engine, and a TPM's host cannot hand it over whole (libtpms has no
        input check of its own: swtpm reads at most TPM_BUFFER_MAX + 9 bytes, mainloop.c, so a longer
        frame reaches libtpms cut short and fails TPM_Process_GetCommandParams' paramSize check). Values
        (the fast path) and frames answer alike (tests/tpm12/test_command_buffer.py)."""
        self.last_refusal = f"{name}: a {n}-byte command exceeds the TPM's {self.max_command}-byte command buffer"
        return _OVERSIZED if framed else Reply((C.RC["TPM_BAD_PARAM_SIZE"], b"", b"", ()))

    def _response_too_long(self, name: str, size: int, framed: bool) -> bytes | Reply:
        """A command whose answer outgrew the response buffer: TPM_SIZE in its place, as libtpms answers
        (tpm_store.c TPM_Sbuffer_StoreFinalResponse: ``length > TPM12_GetBufferSize()`` -> TPM_SIZE, the
        parameters dropped). The command itself ran: its state changes and session nonces stay, as there
        (the check comes after the handler's work and its authorization HMAC); only the 10-byte answer
        crosses the bus. Found by TPM_NV_ReadValue of a 4083-byte area (tests/tpm12/test_command_buffer.py)."""
        self.last_refusal = f"{name}: a {size}-byte response exceeds the TPM's {self.max_response}-byte buffer"
        rc = C.RC["TPM_SIZE"]
        return _HEADER_OUT(C.TPM_TAG_RSP_COMMAND, HEADER, rc) if framed else Reply((rc, b"", b"", ()))

    def _open_oiap(self, cmd: Command, spec: CommandSpec) -> Reply:
        """TPM_OIAP as values (no parameters, no sessions) on a TPM in its everyday state, in one frame.

        Nearly half the commands of an application that authorizes with bare secrets are TPM_OIAP
        (46 of the oracle study's 99). Here what the dispatcher and the shipped handler do for it
        when none of the dispatcher's checks applies (started, not failed, enabled and activated,
        no SHA-1 thread, exclusive transport or saved state to end, TPM_OIAP not audited, a free
        session slot, fixed bus costs): the same charges in the same order (``ohc``, ``ohir`` for
        the 10-byte frame, the hashing taken, ``ohor`` for the 34-byte answer, as :meth:`_run_outer`),
        the same session (a new handle, 20 bytes of the RNG), the same :class:`Reply` - without the
        :class:`Request`, :class:`Reader`, :class:`Response` and the calls between them. Any other
        state takes the general path (tests/tpm12/test_fast_path.py holds both to the framed one).
        """
        bus = self._bus
        sessions = self.sessions
        if (bus is None or self.post_init or self.failed or self.sha1_context is not None
                or self.exclusive is not None or self.disabled or self.deactivated
                or SAVED_STATE in self.state.extra or spec.ordinal in self._audited
                or len(sessions) >= self._max_sessions):
            return self._run_outer(spec.name, HEADER, None, cmd, spec)  # type: ignore[return-value]
        clock, crypto = self.clock, self.crypto
        clock.begin_charged(spec.name, "ohc", bus[0], "ohir", HEADER * bus[1])
        try:
            try:
                handle = self.new_handle("auth")
                s = Session(handle, "OIAP", crypto.random(20))
                sessions[handle] = s
                self.last_out_handles = 0
                reply = Reply((0, b"", _PACK_U32(handle) + s.nonce_even, []))
            except Exception as e:  # (as _dispatch answers a handler's error)
                reply = self._failure(e, [], True, False)  # type: ignore[assignment]
            else:
                if self._dirty:
                    self._persist()
            size = reply.size()
        except BaseException:
            self._abandon()
            raise
        self._end_fused(size * bus[2])
        return reply

    def _abandon(self) -> None:
        """An outer command that raised: charge the hashing done so far and close its clock record, so
        the ledger stays balanced whatever escaped."""
        try:
            self.crypto.flush()
        finally:
            self.clock.end()

    def _end_fused(self, response_bus_ms: float) -> None:
        """Close an outer command opened with :meth:`Clock.begin_charged`: the hashing it did and the
        response frame on the bus, in one :meth:`Clock.end_charged` call."""
        clock = self.clock
        try:
            hashed_ms = self.crypto.take_hash_ms()  # (None: nothing hashed, or sha1_byte drawn and charged)
        except BaseException:
            clock.end()
            raise
        clock.end_charged(None if hashed_ms is None else "sha1_byte", hashed_ms or 0.0, "ohor", response_bus_ms)

    def _execute_frame(self, frame: bytes) -> bytes:
        """:meth:`execute` of a frame."""
        return self._run_outer(self._peek_name(frame), len(frame), frame, None, None)  # type: ignore[return-value]

    def _run_outer(self, name: str, n: int, frame: bytes | None, cmd: Command | None,
                   spec: CommandSpec | None) -> bytes | Reply:
        """One command from the host, as a frame or as values: its record on the clock, the bus both
        ways (``ohor`` for the response frame's length, also when it is returned as values).

        One shape for both kinds of profile: the command runs and its response's length is taken
        inside one guard, which on any exception charges the hashing done so far (``flush``) and
        closes the record; only then are the closing charges made. With fixed bus costs (every
        shipped profile) the opening and closing charges are each one clock call
        (:meth:`Clock.begin_charged` / :meth:`Clock.end_charged`: the same additions in the same
        order as the separate calls)."""
        clock = self.clock
        crypto = self.crypto
        bus = self._bus
        fused = bus is not None and n
        if fused:
            clock.begin_charged(name, "ohc", bus[0], "ohir", n * bus[1])
        else:
            clock.begin(name)  # (not the context manager: once per command)
            try:
                if bus is None:
                    clock.charge("ohc")
                    clock.charge("ohir", n)
                else:  # an empty frame: no ohir (charge_ms rather than charge: see Clock.fixed_cost)
                    clock.charge_ms("ohc", bus[0])
            except BaseException:
                clock.end()
                raise
        try:
            response = self._dispatch(frame, cmd, spec, True, None, None)[0]
            size = len(response) if cmd is None else response.size()  # the response frame's length
            if size > self.max_response:
                response, size = self._response_too_long(name, size, cmd is None), HEADER
        except BaseException:
            self._abandon()
            raise
        if fused:
            self._end_fused(size * bus[2])
            return response
        try:
            crypto.flush()
            if bus is None:
                clock.charge("ohor", size)
            else:
                clock.charge_ms("ohor", size * bus[2])
        finally:
            clock.end()
        return response

    def _peek_name(self, frame: bytes) -> str:
        if len(frame) >= HEADER:
            spec = self._specs.get(_U32(frame, 6)[0])
            if spec is not None:
                return spec.name
        return "TPM_(malformed)"

    def dispatch(self, frame: bytes, *, outer: bool, transport: int | None = None,
                 in_digest: bytes | None = None) -> tuple[bytes, bytes, bytes]:
        """Parse, authorize, run and answer one command (no bus overhead charged here).

        Returns the response frame and the SHA-1 input/output parameter
        digests (the transport log records them).
        """
        return self._dispatch(frame, None, None, outer, transport, in_digest)  # type: ignore[return-value]

    def _dispatch(self, frame: bytes | None, cmd: Command | None, spec: CommandSpec | None, outer: bool,
                  transport: int | None, in_digest: bytes | None) -> tuple[bytes | Reply, bytes, bytes]:
        """:meth:`dispatch` of a ``frame``, or of a ``cmd`` given as values whose ``spec`` the caller
        looked up (a canonical command: its handle count is the ordinal's). One body for both, so
        the checks, their order, the digests, HMACs and state changes are the same; only where the
        values come from and what is returned (a frame or a :class:`Reply`) differ."""
        ordinal = 0
        uses: list[SessionUse] = []
        try:
            if cmd is None:
                flen = len(frame)
                if flen < HEADER:
                    raise TpmError("TPM_BAD_PARAM_SIZE", f"frame of {flen} bytes is shorter than a header")
                tag, size, ordinal = _HEADER_IN(frame)
                if size != flen:
                    raise TpmError("TPM_BAD_PARAM_SIZE", f"paramSize {size} but frame has {flen} bytes")
                n_auth = _REQUEST_TAGS.get(tag)  # (None: not a request tag; checked with the ordinal's tags below)
                spec = self._specs.get(ordinal)
                if spec is None:
                    raise TpmError("TPM_BAD_ORDINAL", f"ordinal {ordinal:#x}")
            else:
                ordinal, n_auth = cmd[0], len(cmd[3])
            if self.post_init and ordinal != _ORD_STARTUP:  # Part 3, 3.1: only Startup after _TPM_Init
                raise TpmError("TPM_INVALID_POSTINIT", f"{spec.name} before TPM_Startup")
            if self.failed and ordinal not in _FAILURE_MODE_OK:
                raise TpmError("TPM_FAILEDSELFTEST", f"{spec.name}: the TPM is in failure mode")
            if n_auth is None:  # libtpms: an unknown ordinal first (TPM_BAD_ORDINAL; TrouSerS'
                # PhysicalDisable sends tag 0x00C4, ordinal 0), the tag in the ordinal's own handler
                raise TpmError("TPM_BADTAG", f"tag {tag:#06x}")
            if n_auth not in spec.auth:
                raise TpmError("TPM_BADTAG", f"{spec.name} takes {spec.auth} authorization session(s), not {n_auth}")
            if self.sha1_context is not None and ordinal not in _SHA1_THREAD and ordinal != _ORD_EXECUTE_TRANSPORT:
                self.sha1_context = None  # libtpms TPM_Check_SHA1Context: another command ends the thread
            if outer:
                if self.exclusive is not None and not (
                        self._inside_exclusive(spec.name, frame) if cmd is None
                        else spec.name in _EXCLUSIVE_KEEPERS and cmd[3][-1][0] == self.exclusive):
                    self.sessions.pop(self.exclusive, None)  # Part 1, 24.3: exclusivity is lost
                    self.exclusive = None
                if ordinal != _ORD_STARTUP and SAVED_STATE in self.state.extra:
                    self.invalidate_saved_state()
            if (self.disabled or self.deactivated) and not (ordinal in checks.NV_NOAUTH and not nv_locked(self)):
                if self.disabled and ordinal not in checks.SKIP_ENABLED:
                    raise TpmError("TPM_DISABLED", f"{spec.name}: the TPM is disabled")
                if self.deactivated and ordinal not in checks.SKIP_ACTIVATED:
                    raise TpmError("TPM_DEACTIVATED", f"{spec.name}: the TPM is deactivated")
            if ordinal in checks.NEEDS_OWNER and self.state.owner_auth is None:
                raise TpmError("TPM_NOSRK", f"{spec.name} needs an owner")
            if n_auth and self.auth_fail_count > LOCKOUT_THRESHOLD and self.lockout_remaining_s() > 0 \
                    and ordinal != _ORD_RESET_LOCK_VALUE:  # libtpms: "this command proceeds anyway"
                raise TpmError("TPM_DEFEND_LOCK_RUNNING",
                               f"{spec.name}: dictionary-attack lockout, {self.lockout_remaining_s():.1f} s left")
            if cmd is None:
                trail_at = flen - AUTH_IN * n_auth  # where the authorization trailers start
                if trail_at < HEADER:
                    raise TpmError("TPM_BAD_PARAM_SIZE", f"{spec.name}: frame too short for {n_auth} authorization(s)")
                body = frame[HEADER:trail_at]
                n_handles = spec.handles
                if len(body) < 4 * n_handles:
                    raise TpmError("TPM_BAD_PARAM_SIZE", f"{spec.name} needs {n_handles} handle(s)")
                if n_handles:
                    handles = list((_HANDLES[n_handles] if n_handles < 4 else _handles_struct(n_handles))
                                   .unpack_from(body))
                    params = body[4 * n_handles:]
                else:
                    handles, params = [], body
                ord_bytes = frame[6:10]
            else:
                handles, params, ord_bytes = list(cmd[1]), cmd[2], _PACK_U32(ordinal)
            if in_digest is None:  # (TPM_ExecuteTransport hands in H1, Part 3 24.2 step 6)
                in_digest = (self.crypto.sha1(ord_bytes, params) if (n_auth or transport) and not spec.own_digests
                             else b"")
            if n_auth:
                sessions = self.sessions
                if cmd is None:
                    for at in range(trail_at, flen, AUTH_IN):
                        handle, odd, cont, value = _AUTH_IN(frame, at)
                        # an unknown handle fails when the handler checks the session (TPM_INVALID_AUTHHANDLE),
                        # after the command's state checks, as in libtpms
                        uses.append(SessionUse(sessions.get(handle), odd, cont, value, None, handle))
                else:
                    for handle, odd, cont, value in cmd[3]:
                        uses.append(SessionUse(sessions.get(handle), odd, cont, value, None, handle))
                auth = AuthContext(self.crypto, in_digest, uses)
            else:  # no sessions, nothing to digest: one shared, immutable context serves every such command
                auth = self._no_auth if not in_digest else AuthContext(self.crypto, in_digest, uses)
            req = Request(spec.name, ordinal, handles, Reader(params, spec.name), params, auth, in_digest,
                          self.locality, transport is not None)
            if not outer:  # a wrapped command is a record of its own inside the outer one
                self.clock.begin(spec.name)
            try:
                try:
                    result = spec.handler(self, req)
                except BaseException:
                    if not outer:  # charge an inner command's hashing to it even when it fails
                        self.crypto.flush()
                    raise
                for u in uses:
                    if u.key is None:
                        i = next(i for i, x in enumerate(uses) if x is u)
                        raise TpmError("TPM_FAIL", f"{spec.name}: session #{i + 1} was never checked")
                crypto = self.crypto
                out_digest = (result.out_digest if result.out_digest is not None
                              else crypto.sha1(_RC_SUCCESS, ord_bytes, result.params)
                              if (n_auth or transport) else b"")
                if ordinal in self._audited:  # Part 1, 17 / Part 3, 8.1: audit a successful command
                    self._audit(ord_bytes, params, in_digest, out_digest, result)
                trailers = []
                for u in uses:
                    session = u.session
                    even = session.next_even or crypto.random(20)
                    session.nonce_even, session.next_even = even, None
                    cont = _BYTE[u.cont]
                    trailers.append((even, cont, crypto.hmac(u.key, out_digest, even, u.nonce_odd, cont)))
                    if not u.cont:  # continueAuthSession / continueTransSession FALSE ends the session
                        self.end_session(session.handle)
                self.last_out_handles = len(result.handles) // 4  # a count: TPM_ExecuteTransport's S2 follows them
                if cmd is None:
                    payload = b"".join([result.handles, result.params, *[b"".join(t) for t in trailers]])
                    response: bytes | Reply = (_HEADER_OUT(_RESPONSE_TAGS[n_auth], HEADER + len(payload), 0)
                                               + payload)  # TPM_SUCCESS
                else:
                    response = Reply((0, result.handles, result.params, trailers))
                if not outer:
                    crypto.flush()
            finally:
                if not outer:
                    self.clock.end()
        except Exception as e:  # a chip answers every frame; a handler bug becomes TPM_FAIL
            return self._failure(e, uses, outer, cmd is None), b"", b""
        # outside the try: a storage failure (or injected power loss) is not a TPM answer
        if self._dirty:  # (_persist's own first test, without the call on every clean command)
            self._persist()
        return response, in_digest, out_digest

    def _failure(self, e: Exception, uses: list[SessionUse], outer: bool, framed: bool) -> bytes | Reply:
        """The answer to a command that raised ``e`` (a :class:`TpmError`, or a handler bug that becomes
        TPM_FAIL): its sessions ended, changed state persisted, the error frame (or :class:`Reply`)."""
        if e is self._storage_failure:  # NV failed inside a wrapped command: no answer at all
            raise e
        if not isinstance(e, TpmError):
            self.last_internal_error = e
            e = TpmError("TPM_FAIL", f"internal error: {type(e).__name__}: {e}")
        elif e.dictionary:
            self.auth_failed()
        # a failed command ends its sessions (Part 1, 13.2; libtpms, transport too) - unless it did
        # not parse: libtpms sets authHandleValid FALSE for a paramSize that does not fit the
        # parameters ("do not terminate sessions if the command did not parse correctly"; found by
        # tpm_loadkey of an unparsable file, whose OIAP session TrouSerS then flushes)
        for u in (uses if e.parsed else ()):
            if u.session is not None and (u.session.kind != "TRANSPORT" or outer):
                self.end_session(u.session.handle)
        try:
            self._persist()  # a handler that changed state before failing still persists it
        except Exception as store_error:  # noqa: BLE001 - storage broke while answering: still an answer
            # The state was rolled back to the last durable one, so the command never
            # happened; the chip answers TPM_FAIL rather than leaving the host without a
            # response. Power loss (a BaseException, the fTPM's PowerLoss) is not caught.
            self._storage_failure = None
            self.last_internal_error = store_error
            e = TpmError("TPM_FAIL", f"state not saved: {type(store_error).__name__}: {store_error}")
        return _HEADER_OUT(C.TPM_TAG_RSP_COMMAND, HEADER, e.rc) if framed else Reply((e.rc, b"", b"", ()))

    def _persist(self) -> None:
        """Save changed state before the response; if saving fails, the command never happened."""
        if not self._dirty:
            return
        self._dirty = False
        data = self.state.to_bytes()
        try:
            self.nv.save(data)
        except BaseException as e:
            self.state = PersistentState.from_bytes(self._persisted, nvstore.where(self.nv))
            self._load_audited()
            self._storage_failure = e
            raise
        self._persisted = data

    def _inside_exclusive(self, name: str, frame: bytes) -> bool:
        """Commands that keep an exclusive transport session alive: its own wrapper/release."""
        if name not in _EXCLUSIVE_KEEPERS:
            return False
        # the transport session is the last authorization trailer
        if len(frame) < HEADER + AUTH_IN:
            return False
        handle = struct.unpack(">I", frame[len(frame) - AUTH_IN:len(frame) - AUTH_IN + 4])[0]
        return handle == self.exclusive


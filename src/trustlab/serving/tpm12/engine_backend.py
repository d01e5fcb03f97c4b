"""The TPM 1.2 engine as a backend of the timing proxy: ``trustlab serve`` for TPM 1.2.

DESIGN.md: "one transport layer serves TPM 1.2 and TPM 2.0 alike". The proxy
front end (swtpm's data port P, control port P+1, the realtime hold, the
trace, ``--virtual``) is the TPM 2.0 one; what differs is the backend.
:class:`EngineBackend` runs the in-process engine and

* answers ``transact`` with the engine's response bytes,
* reports through ``charged()`` exactly what the engine charged its own
  clock for that command, component by component (the proxy holds and traces
  that, instead of pricing the command from the wire as for TPM 2.0),
* answers swtpm's control channel itself (``control``), with the TPM 1.2
  power cycle behind it.

The power cycle, as a platform drives a TPM 1.2 (Part 1, 7.3 and 9):

* ``CMD_INIT`` powers the chip up (after powering it down if it was on): a
  fresh engine loads the persistent state from NV. Volatile state (PCRs,
  loaded keys, sessions) is gone unless the host ran ``TPM_SaveState`` before
  and now sends ``TPM_Startup(ST_STATE)``; that is the engine's business, the
  backend only cuts the power. With ``startup="clear"`` the backend plays the
  BIOS and sends ``TPM_Startup(ST_CLEAR)`` after every power-up, as swtpm's
  ``--flags startup-clear`` does (tcsd never sends TPM_Startup itself).
* ``CMD_SHUTDOWN`` powers it down; data commands then answer ``TPM_FAIL``
  until the next ``CMD_INIT`` (swtpm answers the same while uninitialised).
  Unlike swtpm, the serving process stays up. The proxy refuses it from
  clients (a shared TPM is never left off, :mod:`trustlab.serving.control`);
  :meth:`EngineBackend.control` still implements it for in-process users.
* ``CMD_HASH_START/DATA/END`` is the locality-4 DRTM sequence: it resets the
  dynamic PCRs 17-22, extends PCR 17 with SHA-1 of the data and sets the
  TPM-established flag, which ``CMD_GET_TPMESTABLISHED`` reports and
  ``CMD_RESET_TPMESTABLISHED`` (locality 3 or 4) clears. The flag is a
  permanent flag (Part 2, 7.1: tpmEstablished) and persists with the state.

Reply layouts follow swtpm's control channel byte for byte (a test compares
them with swtpm 0.7 running libtpms' TPM 1.2).
"""

from __future__ import annotations

import functools
import hashlib
import operator
import shutil
import struct
import tempfile
import threading
import time
from pathlib import Path

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import flags
from trustlab.devices.tpm12 import registry
from trustlab.devices.tpm12.engine import Engine
from trustlab.devices.tpm12.nvstore import FileNVStore, NVStore
from trustlab.serving import control, wire
from trustlab.serving.backend import Backend
from trustlab.errors import TrustlabError
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Profile

STATE_FILE = "tpm12-state.json"
"""The engine's persistent state inside ``--state DIR``."""

CAPABILITIES = functools.reduce(operator.or_, (control.PTM_CAP_BITS[c] for c in (
    wire.CMD_INIT, wire.CMD_SHUTDOWN, wire.CMD_GET_TPMESTABLISHED, wire.CMD_SET_LOCALITY, wire.CMD_HASH_START,
    wire.CMD_CANCEL_TPM_CMD, wire.CMD_RESET_TPMESTABLISHED, wire.CMD_GET_CONFIG, wire.CMD_SET_BUFFERSIZE)))
"""swtpm's PTM_CAP_* bits of what this control channel implements (the proxy clears those it refuses)."""

TPM_SUCCESS = 0
TPM_FAIL = C.RC["TPM_FAIL"]
TPM_BAD_ORDINAL = C.RC["TPM_BAD_ORDINAL"]  # swtpm's answer to control requests while off, and to unknown codes
TPM_BAD_LOCALITY = C.RC["TPM_BAD_LOCALITY"]
TPM_BAD_PARAMETER = C.RC["TPM_BAD_PARAMETER"]
TPM_INVALID_POSTINIT = C.RC["TPM_INVALID_POSTINIT"]
DRTM_PCRS = range(17, 23)
ESTABLISHED = flags.ESTABLISHED   # key in the engine's persistent ``extra`` map (TPM_PERMANENT_FLAGS reads it)

_RESULT = struct.Struct(">I").pack


def fail_response(rc: int = C.RC["TPM_FAIL"]) -> bytes:
    """A bare TPM 1.2 error response (tag TPM_TAG_RSP_COMMAND, 10 bytes)."""
    return struct.pack(">HII", C.TPM_TAG_RSP_COMMAND, 10, rc)


def _wall_ms() -> float:
    return time.monotonic() * 1000.0


def startup_frame(kind: int = C.TPM_ST_CLEAR) -> bytes:
    return struct.pack(">HIIH", C.TPM_TAG_RQU_COMMAND, 12, C.ORD["TPM_Startup"], kind)


class EngineBackend(Backend):
    """The in-process TPM 1.2 engine behind the proxy (family ``"tpm1.2"``).

    ``state_dir``: where the persistent state lives (``tpm12-state.json``);
    ``None`` uses a temporary directory that :meth:`close` removes.
    ``startup``: ``"clear"`` sends TPM_Startup(ST_CLEAR) after each power-up
    (the BIOS's job); ``"none"`` leaves it to the client (e.g. ST_STATE).
    ``nv`` replaces the file store (tests, in-memory runs).
    """

    family = "tpm1.2"
    ctrl_address = None
    extra_control = frozenset({wire.CMD_HASH_START, wire.CMD_HASH_DATA, wire.CMD_HASH_END})
    """Control codes beyond what the proxy lets clients send to any TPM: the DRTM sequence is harmless
    on an in-process engine (it would reset a shared swtpm's PCRs). ``CMD_SHUTDOWN`` stays refused, as
    for TPM 2.0: a served TPM is never left off (``CMD_INIT`` alone is the power cycle, which a
    ``TPM_SaveState`` + ``--startup none`` resume needs)."""
    plays_bios = True
    """The engine sends its own TPM_Startup(ST_CLEAR) after every power-up (``startup="clear"``)."""

    def __init__(self, profile: Profile, state_dir: str | Path | None = None, *, seed: int = 0,
                 startup: str = "clear", nv: NVStore | None = None, keygen=None) -> None:
        if startup not in ("clear", "none"):
            raise TrustlabError(f"startup {startup!r}: expected 'clear' or 'none'")
        if profile.family != "tpm1.2":
            raise TrustlabError(f"profile {profile.name!r} is of family {profile.family!r}, not tpm1.2")
        self.profile = profile
        self.startup = startup
        self.keygen = keygen
        self._owned_dir: Path | None = None
        if nv is not None:
            self.state_dir = None
            self.nv = nv
        else:
            if state_dir is None:
                self._owned_dir = Path(tempfile.mkdtemp(prefix="trustlab-tpm12-"))
                state_dir = self._owned_dir
            self.state_dir = Path(state_dir)
            if self.state_dir.exists() and not self.state_dir.is_dir():
                raise TrustlabError(f"--state {self.state_dir}: not a directory")
            self.nv = FileNVStore(self.state_dir / STATE_FILE)
        self.clock = Clock(profile, seed=seed)  # the engine's own ledger; the proxy holds, not this clock
        self.engine: Engine | None = None
        self.locality = 0
        self.buffersize = C.TPM_BUFFER_MAX  # swtpm's; set only while off, kept across power-up, and (as on
        # libtpms) not what TPM_CAP_PROP_INPUT_BUFFER reports
        self._hash: "hashlib._Hash | None" = None
        self._lock = threading.RLock()
        self._last_breakdown: dict[str, float] | None = None
        self.last_command = ""
        self.last_error: Exception | None = None  # why the last TPM_FAIL for a storage failure
        self.power_on()

    # ---- power -------------------------------------------------------------

    def power_on(self) -> None:
        """Power the chip up: a fresh engine on the same NV, then TPM_Startup(ST_CLEAR) if asked."""
        with self._lock:
            self.engine = Engine(self.clock, self.nv, self.keygen, started=False)  # _TPM_Init
            self.engine.locality = self.locality
            self.engine.da_now_ms = _wall_ms  # the lockout timer runs while the chip idles (Engine.da_now_ms)
            if self.startup == "clear":
                self.engine.execute(startup_frame())

    def power_off(self) -> None:
        """Cut the power: volatile state is lost (the NV state was saved command by command)."""
        with self._lock:
            self.engine = None
            self._hash = None

    @property
    def powered(self) -> bool:
        return self.engine is not None

    # ---- data channel ------------------------------------------------------

    def transact(self, command: bytes) -> bytes:
        with self._lock:
            if self.engine is None:
                self._last_breakdown = None
                self.last_command = "TPM_(powered off)"
                return fail_response(TPM_FAIL)
            try:
                response = self.engine.execute(command)
            except Exception as e:  # noqa: BLE001 - the state could not be saved (disk full ...): the
                # engine rolled back to its last durable state; a chip answers every frame
                self.last_error = e
                self._last_breakdown = {}
                self.last_command = "TPM_(state not saved)"
                return fail_response(TPM_FAIL)
            record = self.clock.last
            self._last_breakdown = dict(record.breakdown) if record is not None else {}
            self.last_command = record.name if record is not None else "TPM_(unknown)"
            return response

    def command_name(self, ordinal: int) -> str:
        """The TPM 1.2 command name of ``ordinal`` (the proxy's trace uses it)."""
        spec = registry.table().get(ordinal)
        return spec.name if spec is not None else f"TPM_ORD_{ordinal:#x}"

    def charged(self) -> dict[str, float] | None:
        """Component -> ms the engine charged for the last transact ({} if the TPM was off): a dict of the
        caller's own (each transact makes a new one)."""
        return self._last_breakdown if self._last_breakdown is not None else {}

    # ---- control channel ---------------------------------------------------

    def control(self, code: int, payload: bytes) -> bytes | None:
        """Answer one swtpm control request (``payload`` = the bytes after the code)."""
        with self._lock:
            return self._control(code, payload)

    def _control(self, code: int, payload: bytes) -> bytes:
        if code == wire.CMD_GET_CAPABILITY:
            return struct.pack(">Q", CAPABILITIES)
        if code == wire.CMD_GET_CONFIG:
            return struct.pack(">II", TPM_SUCCESS, 0)
        if code == wire.CMD_INIT:
            # INIT_FLAG_DELETE_VOLATILE deletes swtpm's CMD_STORE_VOLATILE blob, which this backend
            # never writes; the TPM_SaveState image survives it on libtpms too (a test checks).
            self.power_off()
            self.power_on()
            return _RESULT(TPM_SUCCESS)
        if code == wire.CMD_SHUTDOWN:
            self.power_off()
            return _RESULT(TPM_SUCCESS)
        if code == wire.CMD_SET_LOCALITY:
            loc = payload[0] if payload else 0
            if loc > 4:
                return _RESULT(TPM_BAD_LOCALITY)
            self.locality = loc
            if self.engine is not None:
                self.engine.locality = loc
            return _RESULT(TPM_SUCCESS)
        if code == wire.CMD_SET_BUFFERSIZE:
            return self._set_buffersize(payload)
        if self.engine is None or code not in _WHILE_ON:
            return _RESULT(TPM_BAD_ORDINAL)
        return _WHILE_ON[code](self, payload)

    def _set_buffersize(self, payload: bytes) -> bytes:
        """swtpm's ctrlchannel.c with libtpms' TPM12_SetBufferSize: 0 queries; a size is taken only while the
        TPM is off (TPM_BAD_ORDINAL while it runs, which a served TPM always does) and clamped to
        [TPM_BUFFER_MIN, TPM_BUFFER_MAX]; the reply is ``result, buffersize, minsize, maxsize``."""
        if len(payload) < 4:
            return _RESULT(TPM_BAD_PARAMETER)
        wanted = struct.unpack(">I", payload[:4])[0]
        if wanted:
            if self.engine is not None:
                return _RESULT(TPM_BAD_ORDINAL)
            self.buffersize = min(max(wanted, C.TPM_BUFFER_MIN), C.TPM_BUFFER_MAX)
        return struct.pack(">IIII", TPM_SUCCESS, self.buffersize, C.TPM_BUFFER_MIN, C.TPM_BUFFER_MAX)

    def _established(self, payload: bytes) -> bytes:
        assert self.engine is not None
        bit = 1 if self.engine.state.extra.get(ESTABLISHED) == "1" else 0
        return struct.pack(">IB3x", TPM_SUCCESS, bit)

    def _reset_established(self, payload: bytes) -> bytes:
        assert self.engine is not None
        loc = payload[0] if payload else 0
        if loc not in (3, 4):
            return _RESULT(TPM_BAD_LOCALITY)
        self._set_established(False)
        return _RESULT(TPM_SUCCESS)

    def _hash_start(self, payload: bytes) -> bytes:
        assert self.engine is not None
        if self.engine.post_init:  # libtpms refuses the DRTM sequence between _TPM_Init and TPM_Startup
            return _RESULT(TPM_INVALID_POSTINIT)
        for i in DRTM_PCRS:
            self.engine.pcrs[i] = b"\x00" * 20
        self._hash = hashlib.sha1()
        return _RESULT(TPM_SUCCESS)

    def _hash_data(self, payload: bytes) -> bytes:
        if self._hash is None or len(payload) < 4:
            return _RESULT(TPM_FAIL)
        n = struct.unpack(">I", payload[:4])[0]
        self._hash.update(payload[4:4 + n])
        return _RESULT(TPM_SUCCESS)

    def _hash_end(self, payload: bytes) -> bytes:
        assert self.engine is not None
        if self._hash is None:
            return _RESULT(TPM_FAIL)
        digest, self._hash = self._hash.digest(), None
        self.engine.pcrs[17] = hashlib.sha1(self.engine.pcrs[17] + digest).digest()
        self._set_established(True)
        return _RESULT(TPM_SUCCESS)

    def _cancel(self, payload: bytes) -> bytes:
        """libtpms' TPM 1.2 has no command cancellation (swtpm answers TPM_FAIL, checked against it)."""
        return _RESULT(TPM_FAIL)

    def _set_established(self, value: bool) -> None:
        assert self.engine is not None
        extra = self.engine.state.extra
        if (extra.get(ESTABLISHED) == "1") != value:
            extra[ESTABLISHED] = "1" if value else "0"
            self.engine.mark_dirty()
            self.engine._persist()

    # ---- life cycle --------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self.engine = None
        if self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            self._owned_dir = None

    def describe(self) -> str:
        where = f"state {self.state_dir}" if self.state_dir is not None and self._owned_dir is None else \
            "temporary state"
        return f"trustlab TPM 1.2 engine ({self.profile.name}, {where})"


_WHILE_ON = {
    wire.CMD_GET_TPMESTABLISHED: EngineBackend._established,
    wire.CMD_RESET_TPMESTABLISHED: EngineBackend._reset_established,
    wire.CMD_HASH_START: EngineBackend._hash_start,
    wire.CMD_HASH_DATA: EngineBackend._hash_data,
    wire.CMD_HASH_END: EngineBackend._hash_end,
    wire.CMD_CANCEL_TPM_CMD: EngineBackend._cancel,
}
"""Control commands that need the TPM powered (swtpm answers TPM_BAD_ORDINAL while it is off)."""

"""The ``--trace`` record: one command as the proxy saw and timed it, and the writer of its JSON lines.

Kept small and on its own: the trace format is what replay tools read
(``trustlab replay``; the format is documented in ``docs/trace-format.md``).
Version 2 adds what a replay on another chip needs beyond the priced terms of
the recording profile: the template of a created or loaded key, the key behind
every handle, the session types, the bytes a hashing command digests, the
resource manager's own commands, the client's process and the arrival time.
"""

from __future__ import annotations

import json
import os
import struct
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

TRACE_VERSION = 2
"""Version of the JSON-lines format (the ``v`` field of every line; version 1 had no ``v``)."""

OBJECT_SIGN, OBJECT_DECRYPT, OBJECT_RESTRICTED = 1 << 18, 1 << 17, 1 << 16
TEMPLATE_COMMANDS = {0x131: "TPM2_CreatePrimary", 0x153: "TPM2_Create", 0x191: "TPM2_CreateLoaded",
                     0x157: "TPM2_Load", 0x167: "TPM2_LoadExternal"}


@dataclass(slots=True)
class TraceRecord:
    """One command as the proxy saw and timed it (one JSONL line of ``--trace``).

    ``served_ms``: from the arrival of the command's last byte to the due time
    of its response (= ``modelled_ms`` unless the chip was busy with another
    client's command, or the backend alone took longer: then ``late``).
    ``rm_ms``: the part of ``modelled_ms`` charged for the resource manager's
    own ContextLoad/ContextSave/FlushContext commands (``rm_commands`` of them,
    each listed in ``rm`` as ``[command, in_bytes, out_bytes, rc]``).
    """

    seq: int
    command: str
    code: str
    variant: str | None
    framing: str
    in_bytes: int
    out_bytes: int
    rc: int
    modelled_ms: float
    backend_ms: float
    held_ms: float
    unmodelled: bool
    missing: list[str] = field(default_factory=list)
    breakdown: dict[str, float] = field(default_factory=dict)
    terms: dict[str, float] = field(default_factory=dict)
    served_ms: float = 0.0
    late: bool = False
    rm_ms: float = 0.0
    rm_commands: int = 0
    client: int = 0
    late_count: int = 0
    """Responses so far (this one included) where the backend alone exceeded the model."""
    v: int = TRACE_VERSION
    pid: int | None = None
    """The client's local process (None: a remote client, or no resource manager)."""
    hashed_bytes: int = 0
    key: dict[str, Any] | None = None
    """The template of the object a CreatePrimary/Create/CreateLoaded/Load/LoadExternal makes:
    ``{"alg", "sign", "decrypt", "restricted"}``."""
    handles: list[list] = field(default_factory=list)
    """``[handle, key algorithm or None]`` for each handle in the command's handle area."""
    sessions: list[str] = field(default_factory=list)
    """``password``, ``hmac`` or ``policy`` per authorization session (+``+dec``/``+enc`` for parameter
    encryption)."""
    rm: list[list] = field(default_factory=list)
    pqc: dict[str, Any] | None = None
    """For a command the post-quantum cost model priced (serve's 1.85 extension): ``{"alg", "op"}``
    (``ML-DSA-65``, ``sign``; ``absorb`` adds ``bytes``), what ``replay`` prices on every chip."""
    t_ms: float = 0.0
    """Arrival of the command's last byte, ms since the first command of this trace segment."""
    arrived: float = field(default=0.0, repr=False, compare=False)


def trace_line(record: TraceRecord, epoch: float | None = None) -> str:
    """``record`` as one JSON line (its in-process arrival time becomes ``t_ms`` since ``epoch``)."""
    data = {k: v for k, v in asdict(record).items() if k != "arrived"}
    if epoch is not None and record.arrived:
        data["t_ms"] = round((record.arrived - epoch) * 1000.0, 4)
    return json.dumps(data) + "\n"


TRACE_FIELDS = {"seq": int, "command": str, "modelled_ms": (int, float)}
"""Fields every trace line has had since version 1: what tells an earlier trace from another file."""
FIRST_LINE_MAX = 1 << 16
"""A trace line is ~500 bytes; a first line longer than this is not one."""


def is_trace_line(line: bytes) -> bool:
    """Is ``line`` a ``--trace`` record (a JSON object with :data:`TRACE_FIELDS` of their types)?"""
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(rec, dict) and all(isinstance(rec.get(k), kind) and not isinstance(rec.get(k), bool)
                                         for k, kind in TRACE_FIELDS.items())


def foreign_trace_file(path: "str | Path") -> bool:
    """True when ``path`` holds something other than an earlier trace: appending trace lines to it would
    corrupt it (``--trace notes.md``). A missing or empty file, or one whose first line is a trace record,
    is not foreign."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # never hangs on a FIFO
    except FileNotFoundError:
        return False
    try:
        head = os.read(fd, FIRST_LINE_MAX)
    finally:
        os.close(fd)
    if not head:
        return False
    first = head.split(b"\n", 1)[0]
    return not (len(first) < FIRST_LINE_MAX and is_trace_line(first))


class TraceWriter:
    """Append trace lines to a path (opened here, closed by :meth:`close`) or to a text stream.

    Every line carries the format version ``v``; ``t_ms`` counts from this writer's first command.
    Appending to an existing trace starts a new segment (``seq`` restarts at 1: times restart there);
    ``replace`` empties the file first (``serve --trace FILE --force`` over a file that is not a trace).
    A line that cannot be written whole (a full disk) is cut off again before the error is raised, so
    the file never ends in half a JSON line that a reader would choke on.
    """

    def __init__(self, target: "str | Path | IO[str]", replace: bool = False) -> None:
        self._own = isinstance(target, (str, Path))
        self.name = str(target) if self._own else getattr(target, "name", "the trace stream")
        # O_NOFOLLOW: a trace is never written through a symbolic link (serve replaces a link only with --force)
        flags = (os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
                 | (os.O_TRUNC if replace else 0))
        self._fd = os.open(target, flags, 0o666) if self._own else -1  # type: ignore[arg-type]
        if self._own:
            self._end_torn_line(target)  # type: ignore[arg-type]
        self._file: IO[str] | None = None if self._own else target  # type: ignore[assignment]
        self._epoch: float | None = None

    def _end_torn_line(self, path: "str | Path") -> None:
        """An earlier trace cut off mid-line (a crash) gets its line ended, so this segment's first record is a
        line of its own that readers can parse, not glued onto the torn one."""
        end = os.fstat(self._fd).st_size
        if not end:
            return
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:  # unreadable (write-only): nothing to check, appended as before
            return
        try:
            last = os.pread(fd, 1, end - 1)
        finally:
            os.close(fd)
        if last != b"\n":
            os.write(self._fd, b"\n")

    def write(self, record: TraceRecord) -> None:
        if self._epoch is None:
            self._epoch = record.arrived or time.perf_counter()
        line = trace_line(record, self._epoch)
        if self._file is not None:
            self._file.write(line)
            self._file.flush()
            return
        data = line.encode("utf-8")
        start = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            done = 0
            while done < len(data):
                done += os.write(self._fd, data[done:])
        except OSError:
            try:
                os.ftruncate(self._fd, start)  # no half line left behind
            except OSError:
                pass
            raise

    def close(self) -> None:
        if self._own and self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)


# ---- what a replay needs from the frames ------------------------------------

def template_key(command: bytes, code: int) -> dict[str, Any] | None:
    """Algorithm and use (sign / decrypt / restricted) of the object a key-making command makes."""
    from trustlab.devices.tpm2 import objects

    if code not in TEMPLATE_COMMANDS:
        return None
    r = objects.parameters(command, code)
    if r is None:
        return None
    try:
        r.tpm2b()  # inSensitive (create) or inPrivate (load)
        public = r.tpm2b()
        if len(public) < 8:
            return None
        attrs = struct.unpack_from(">I", public, 4)[0]
    except (ValueError, struct.error):
        return None
    return {"alg": objects.key_variant(public), "sign": bool(attrs & OBJECT_SIGN),
            "decrypt": bool(attrs & OBJECT_DECRYPT), "restricted": bool(attrs & OBJECT_RESTRICTED)}


def session_types(command: bytes, n_handles: int) -> list[str]:
    """The authorization sessions of a command: their kind by handle range, and parameter encryption."""
    from trustlab.devices.tpm2.commands import TPM_ST_SESSIONS

    out: list[str] = []
    try:
        if struct.unpack_from(">H", command, 0)[0] != TPM_ST_SESSIONS:
            return out
        pos = 10 + 4 * n_handles
        (size,) = struct.unpack_from(">I", command, pos)
        pos += 4
        end = min(pos + size, len(command))
        while pos + 4 <= end and len(out) < 3:
            (handle,) = struct.unpack_from(">I", command, pos)
            pos += 4
            (n,) = struct.unpack_from(">H", command, pos)
            pos += 2 + n
            attrs = command[pos]
            pos += 1
            (n,) = struct.unpack_from(">H", command, pos)
            pos += 2 + n
            kind = {0x02: "hmac", 0x03: "policy"}.get(handle >> 24, "password" if handle == 0x40000009 else
                                                      f"{handle:#x}")
            kind += "+dec" if attrs & 0x20 else ""
            kind += "+enc" if attrs & 0x40 else ""
            out.append(kind)
    except (struct.error, IndexError):
        pass
    return out


def details(command: bytes, code: int, name: str, table: Any, n_handles: int | None = None) -> dict[str, Any]:
    """The version-2 fields of one command, read before ``table`` observes it (a flushed key is still known).

    ``n_handles``: the size of its handle area when :data:`objects.COMMAND_HANDLES` does not know the code
    (a 1.85 command an extension registered with its handle count)."""
    from trustlab.devices.tpm2 import cost, objects
    from trustlab.timing.formula_sets import tpm2 as rules

    n = objects.COMMAND_HANDLES.get(code, n_handles)
    handles: list[list] = []
    if n is not None:
        try:
            handles = [[f"{h:#010x}", table.variant(h)] for h in objects.handles(command, n)]
        except (ValueError, struct.error):
            handles = []
    return {"hashed_bytes": cost.hashed_bytes(command, code) if name in rules.HASHING else 0,
            "key": template_key(command, code), "handles": handles,
            "sessions": session_types(command, n or 0) if n is not None else []}

"""Reading a ``serve --trace`` file (format: ``docs/trace-format.md``) into replayable commands.

A trace is user input: every line is checked, and anything wrong (not JSON, a
missing or mistyped field, a version this reader does not know, a file or line
beyond the limits of :mod:`trustlab.limits`) is a one-line error naming the
file and the line. Unknown command codes are not errors: they are replayed as
overhead + bytes and reported as "cannot price" (as ``serve`` flags them).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from trustlab import limits
from trustlab.errors import TrustlabError

SUPPORTED_VERSIONS = (2,)
MAX_TRACE_BYTES = 256 * limits.MiB
"""A trace of ~500,000 commands (a v2 line is ~500 bytes); a recording beyond that is split by time."""
MAX_COMMANDS = 1_000_000
MAX_FRAME = 1 << 24
TPM12_PREFIXES = ("TPM_", "TSC_")
"""Command names of a TPM 1.2 trace (TPM 2.0 ones are TPM2_..., the resource manager's RM_...)."""
MAX_RM = 64
"""Resource-manager commands one command may carry (a context load/save per handle and session)."""


class TraceError(TrustlabError):
    """A trace line that cannot be replayed."""


@dataclass(frozen=True, slots=True)
class Command:
    """One traced command, as replay needs it."""

    seq: int
    command: str
    variant: str | None
    in_bytes: int
    out_bytes: int
    rc: int
    hashed_bytes: int
    client: int
    t_ms: float
    served_ms: float
    modelled_ms: float
    segment: int = 0
    key: dict[str, Any] | None = None
    rm: tuple[tuple[str, int, int, int], ...] = ()
    sessions: tuple[str, ...] = ()
    pid: int | None = None
    pqc: tuple[str, str, int | None] | None = None
    """(algorithm, operation, absorbed bytes) of a command serve priced with the post-quantum cost model."""

    @property
    def ok(self) -> bool:
        return self.rc == 0


@dataclass
class Trace:
    path: str
    commands: list[Command] = field(default_factory=list)

    @property
    def clients(self) -> int:
        return len({(c.segment, c.client) for c in self.commands})


def _int(rec: dict, key: str, where: str, lo: int = 0, hi: int = MAX_FRAME, default: Any = ...) -> int:
    v = rec.get(key, default)
    if v is ...:
        raise TraceError(f"{where}: field {key!r} missing")
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise TraceError(f"{where}: field {key!r} must be an integer in {lo}..{hi}, got {str(v)[:40]!r}")
    return v


MAX_MS = 1e12
"""A time in a trace (ms since the segment began, or a command's duration): ~31 years."""


def _num(rec: dict, key: str, where: str, default: float = 0.0, lo: float = 0.0) -> float:
    """A time in ms, finite, in lo..MAX_MS: a duration is never negative (it would shorten the replay); an
    arrival ``t_ms`` may be (a command that arrived just before the one written first, served after it)."""
    v = rec.get(key, default)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or not lo <= v <= MAX_MS:
        raise TraceError(f"{where}: field {key!r} must be a number of ms in {lo:g}..{MAX_MS:g}, "
                         f"got {str(v)[:40]!r}")
    return float(v)


def _str(rec: dict, key: str, where: str, optional: bool = False) -> str | None:
    v = rec.get(key)
    if v is None and optional:
        return None
    if not isinstance(v, str) or not 0 < len(v) <= 64:
        raise TraceError(f"{where}: field {key!r} must be a short string, got {str(v)[:40]!r}")
    return v


def _rm(rec: dict, where: str) -> tuple[tuple[str, int, int, int], ...]:
    v = rec.get("rm", [])
    if not isinstance(v, list) or len(v) > MAX_RM:
        raise TraceError(f"{where}: field 'rm' must be a list of at most {MAX_RM} [command, in, out, rc]")
    out = []
    for item in v:
        if (not isinstance(item, list) or len(item) != 4 or not isinstance(item[0], str) or len(item[0]) > 64
                or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_FRAME
                           for x in item[1:3]) or not isinstance(item[3], int)):
            raise TraceError(f"{where}: field 'rm' must hold [command, in_bytes, out_bytes, rc] entries")
        out.append((item[0], item[1], item[2], item[3]))
    return tuple(out)


def _key(rec: dict, where: str) -> dict[str, Any] | None:
    v = rec.get("key")
    if v is None:
        return None
    if not isinstance(v, dict) or not all(isinstance(v.get(k), bool) for k in ("sign", "decrypt", "restricted")):
        raise TraceError(f"{where}: field 'key' must be {{alg, sign, decrypt, restricted}}")
    alg = v.get("alg")
    if alg is not None and (not isinstance(alg, str) or len(alg) > 32):
        raise TraceError(f"{where}: field 'key.alg' must be a short string")
    return {"alg": alg, "sign": v["sign"], "decrypt": v["decrypt"], "restricted": v["restricted"]}


PQC_OPERATIONS = ("keygen", "create", "load", "sign", "verify", "encapsulate", "decapsulate", "absorb")


def _pqc(rec: dict, where: str) -> tuple[str, str, int | None] | None:
    v = rec.get("pqc")
    if v is None:
        return None
    if (not isinstance(v, dict) or v.get("op") not in PQC_OPERATIONS
            or not (v.get("alg") is None and v.get("op") == "absorb" or isinstance(v.get("alg"), str)
                    and 0 < len(v["alg"]) <= 32)):
        raise TraceError(f"{where}: field 'pqc' must be {{alg, op}} with op one of {', '.join(PQC_OPERATIONS)}")
    command = rec.get("command")
    allowed = _pqc_operation_of(command)
    if v["op"] != allowed and not (allowed == "keygen" and v["op"] == "create"):
        raise TraceError(f"{where}: field 'pqc' says {v['op']} but serve prices "
                         + (f"{command} as {allowed}" if allowed else f"no post-quantum operation for {command}"))
    n = None
    if v["op"] == "absorb":
        n = _int(v, "bytes", f"{where}: field 'pqc'")
    return v["alg"], v["op"], n


def _pqc_operation_of(command: Any) -> str | None:
    """The one operation serve's 1.85 extension prices a command as (the handlers' table; an ML-DSA
    SequenceUpdate absorbs), or None: serve never writes a ``pqc`` field on that command."""
    from trustlab.devices.tpm2.pqc import operations

    if command == "TPM2_SequenceUpdate":
        return "absorb"
    return operations.OPERATIONS.get(command) if isinstance(command, str) else None


def parse_line(rec: Any, where: str, segment: int) -> Command:
    if not isinstance(rec, dict):
        raise TraceError(f"{where}: a trace line must be a JSON object")
    if "v" not in rec:
        raise TraceError(f"{where}: no format version 'v' (a version-1 trace from an older serve lacks the key and "
                         "session fields replay needs; record it again)")
    v = rec["v"]
    if v not in SUPPORTED_VERSIONS or isinstance(v, bool):
        raise TraceError(f"{where}: trace format version {json.dumps(v)[:20]} is not supported (this replay reads "
                         f"version {', '.join(map(str, SUPPORTED_VERSIONS))})")
    sessions = rec.get("sessions", [])
    if not isinstance(sessions, list) or len(sessions) > 3 or not all(isinstance(s, str) and len(s) <= 32
                                                                      for s in sessions):
        raise TraceError(f"{where}: field 'sessions' must be a list of at most 3 short strings")
    command = rec.get("command")
    if isinstance(command, str) and command.startswith(TPM12_PREFIXES):
        raise TraceError(f"{where}: {command[:40]} is a TPM 1.2 command (serve with a tpm1.2 profile); replay "
                         "prices TPM 2.0 traces")
    pid = rec.get("pid")
    if pid is not None and (not isinstance(pid, int) or isinstance(pid, bool)):
        raise TraceError(f"{where}: field 'pid' must be an integer or null")
    return Command(seq=_int(rec, "seq", where, 0, 1 << 53), command=_str(rec, "command", where) or "",
                   variant=_str(rec, "variant", where, optional=True), in_bytes=_int(rec, "in_bytes", where),
                   out_bytes=_int(rec, "out_bytes", where), rc=_int(rec, "rc", where, 0, 0xFFFFFFFF),
                   hashed_bytes=_int(rec, "hashed_bytes", where, default=0), client=_int(rec, "client", where, 0,
                                                                                        1 << 53, default=0),
                   t_ms=_num(rec, "t_ms", where, lo=-MAX_MS), served_ms=_num(rec, "served_ms", where),
                   modelled_ms=_num(rec, "modelled_ms", where), segment=segment, key=_key(rec, where),
                   rm=_rm(rec, where), sessions=tuple(sessions), pid=pid, pqc=_pqc(rec, where))


def read(path: str | Path, max_bytes: int = MAX_TRACE_BYTES, max_commands: int = MAX_COMMANDS) -> Trace:
    """Every command of a trace file; a one-line :class:`TraceError` at the first bad line."""
    name = limits.shown(path)
    trace = Trace(str(path))
    segment, last_seq = 0, None
    for lineno, line in limits.iter_lines(path, "trace", max_bytes=max_bytes, error=TraceError):
        if not line.strip():
            continue
        where = f"{name}:{lineno}"
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise TraceError(f"{where}: not a JSON line ({getattr(exc, 'msg', 'nested too deeply')})") from None
        except ValueError:  # an integer of more than 4300 digits
            raise TraceError(f"{where}: not a JSON line (a number is too long)") from None
        cmd = parse_line(rec, where, segment)
        if last_seq is not None and cmd.seq <= last_seq:
            if cmd.seq != 1:  # lines out of order, or two traces merged badly: the gaps would be wrong
                raise TraceError(f"{where}: seq {cmd.seq} after seq {last_seq} (seq increases within a "
                                 "recording; an appended recording restarts at 1)")
            segment += 1  # an appended recording: a new segment
            cmd = replace(cmd, segment=segment)  # the line is already checked: only its segment changes
        last_seq = cmd.seq
        trace.commands.append(cmd)
        if len(trace.commands) > max_commands:
            raise TraceError(f"{name}: more than {max_commands} commands; replay a part of it")
    if not trace.commands:
        raise TraceError(f"{name}: no commands in the trace")
    return trace

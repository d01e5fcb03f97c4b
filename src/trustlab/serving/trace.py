"""The ``--trace`` record: one command as the proxy saw and timed it, and the writer of its JSON lines.

Kept small and on its own: the trace format is what replay tools read.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO


@dataclass(slots=True)
class TraceRecord:
    """One command as the proxy saw and timed it (one JSONL line of ``--trace``).

    ``served_ms``: from the arrival of the command's last byte to the due time
    of its response (= ``modelled_ms`` unless the chip was busy with another
    client's command, or the backend alone took longer: then ``late``).
    ``rm_ms``: the part of ``modelled_ms`` charged for the resource manager's
    own ContextLoad/ContextSave/FlushContext commands (``rm_commands`` of them).
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
    arrived: float = field(default=0.0, repr=False, compare=False)


def trace_line(record: TraceRecord) -> str:
    """``record`` as one JSON line (without its in-process arrival time)."""
    return json.dumps({k: v for k, v in asdict(record).items() if k != "arrived"}) + "\n"


class TraceWriter:
    """Append trace lines to a path (opened here, closed by :meth:`close`) or to a text stream."""

    def __init__(self, target: "str | Path | IO[str]") -> None:
        self._own = isinstance(target, (str, Path))
        self.name = str(target) if self._own else getattr(target, "name", "the trace stream")
        self._file: IO[str] = open(target, "a", encoding="utf-8") if self._own else target  # type: ignore[arg-type]  # noqa: SIM115

    def write(self, record: TraceRecord) -> None:
        self._file.write(trace_line(record))
        self._file.flush()

    def close(self) -> None:
        if self._own:
            self._file.close()

"""Shared output helpers: JSON for scripts, aligned tables for people."""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Iterable, Sequence


def json_safe(data: Any) -> Any:
    """Replace NaN and infinities (not valid JSON) by null, recursively."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: json_safe(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [json_safe(v) for v in data]
    return data


def print_json(data: Any, indent: int | None = 2) -> None:
    """``indent=None``: one line, through json's C encoder (many times faster on 100k-row outputs)."""
    # dumps, not dump: only the one-shot path uses the C encoder
    sys.stdout.write(json.dumps(json_safe(data), indent=indent, sort_keys=False, default=str, allow_nan=False))
    sys.stdout.write("\n")


def format_cell(value: Any) -> str:
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:.1f}"
        if abs(value) >= 1:
            return f"{value:.2f}"
        return f"{value:.4g}"
    return "-" if value is None else str(value)


def table(rows: Iterable[Sequence[Any]], headers: Sequence[str]) -> str:
    """A plain-text table; numbers right-aligned."""
    raw = [list(r) for r in rows]
    body = [[format_cell(v) for v in row] for row in raw]
    widths = [len(h) for h in headers]
    for r in body:
        widths = [max(w, len(c)) for w, c in zip(widths, r)]
    numeric = [all(isinstance(r[i], (int, float)) or r[i] is None for r in raw) if raw else False
               for i in range(len(headers))]
    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    out = [line(list(headers)), line(["-" * w for w in widths])]
    out += [line(r) for r in body]
    return "\n".join(out)

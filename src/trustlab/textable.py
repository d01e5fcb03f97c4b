"""Aligned plain-text tables for people: the CLI, the experiments' text, validation and the report.

Below all of them (it imports nothing of trustlab), so none reaches up into ``cli`` for it.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence


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

"""Provenance said once: a table of texts keyed by id, and rows that name their texts by key.

A result whose rows carry long provenance strings that repeat from row to row (pqc-tpm: every row's
pricing says which benchmarks, core factors and assumptions it rests on, ~5 KB a row, 4.7 MB a run)
keeps each distinct piece once, in ``data["provenance"]`` (``{"p1": text, ...}``), and a row's field holds
the keys of its pieces in order. The full string is the pieces joined by :data:`JOIN`, exactly as it was
written, so nothing is lost:

    text = "; ".join(data["provenance"][key] for key in row["provenance"])

:func:`expand` gives back the data with every string restored (what the report draws and what
``tools/compare_results.py`` compares), so a record reads the same whichever way it was written.
"""

from __future__ import annotations

import re
from typing import Any

TABLE = "provenance"
"""The key of the table in a result's data."""
JOIN = "; "
"""What a field's pieces are joined with to give its text."""
_KEY = re.compile(r"p[1-9][0-9]*")


class Table:
    """Collects the distinct pieces of provenance texts, keyed ``p1``, ``p2``, ... in order of first use."""

    def __init__(self) -> None:
        self._keys: dict[str, str] = {}

    def refs(self, text: str) -> list[str]:
        """The keys of ``text``'s pieces (it split at :data:`JOIN`), each piece stored once."""
        return [self._keys.setdefault(piece, f"p{len(self._keys) + 1}") for piece in text.split(JOIN)]

    def as_dict(self) -> dict[str, str]:
        return {key: text for text, key in self._keys.items()}


def resolve(table: dict[str, str], refs: list[str]) -> str:
    """The text a field's keys stand for."""
    return JOIN.join(table[key] for key in refs)


def _is_refs(value: Any, table: dict[str, str]) -> bool:
    return (isinstance(value, list) and bool(value)
            and all(isinstance(k, str) and _KEY.fullmatch(k) and k in table for k in value))


def expand(data: Any) -> Any:
    """``data`` with every list of table keys replaced by its text and the table dropped (a copy; data
    without a table is returned as it is)."""
    if not isinstance(data, dict) or not isinstance(data.get(TABLE), dict):
        return data
    table = data[TABLE]

    def walk(value: Any) -> Any:
        if _is_refs(value, table):
            return resolve(table, value)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return {k: walk(v) for k, v in data.items() if k != TABLE}

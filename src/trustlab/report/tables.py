"""Tables from records: references beside model and simulation, and the data itself.

Tables are lists of rows (dicts) first, so the same rows feed the HTML page
and the CSV files; nothing here knows about HTML.
"""

from __future__ import annotations

import json
from typing import Any

MAX_ROWS = 500


def reference_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per published figure: model, simulation, reference, error, relative error, source."""
    rows = []
    for ref in record.get("references") or []:
        if not isinstance(ref, dict):
            continue
        reference = ref.get("reference")
        got = ref.get("simulated") if ref.get("simulated") is not None else ref.get("model")
        error = ref.get("error")
        if error is None and isinstance(got, (int, float)) and isinstance(reference, (int, float)):
            error = got - reference
        rel = (error / reference * 100.0
               if isinstance(error, (int, float)) and isinstance(reference, (int, float)) and reference
               else None)
        rows.append({"experiment": record.get("experiment"), "label": ref.get("label"),
                     "model": ref.get("model"), "simulated": ref.get("simulated"),
                     "reference": reference, "error": error, "error_pct": rel,
                     "unit": ref.get("unit", ""), "source": ref.get("source", "")})
    return rows


def _is_flat_dict(x: Any) -> bool:
    return isinstance(x, dict)


def _cell(v: Any) -> Any:
    if isinstance(v, (dict, list)):
        return json.dumps(v, default=str, separators=(", ", ": "))
    return v


def data_tables(data: Any, name: str = "data") -> list[tuple[str, list[dict[str, Any]]]]:
    """Named tables found in an experiment's ``data``.

    A list of objects is a table; an object's scalar fields form a key/value
    table and each of its list-of-objects fields is a table of its own (one
    level deep, which is how experiments lay out their JSON).
    """
    tables: list[tuple[str, list[dict[str, Any]]]] = []
    if isinstance(data, list) and data and all(_is_flat_dict(r) for r in data):
        tables.append((name, [{k: _cell(v) for k, v in r.items()} for r in data]))
    elif isinstance(data, dict):
        scalars = [{"field": k, "value": _cell(v)} for k, v in data.items()
                   if not (isinstance(v, list) and v and all(_is_flat_dict(r) for r in v))]
        if scalars:
            tables.append((name, scalars))
        for k, v in data.items():
            if isinstance(v, list) and v and all(_is_flat_dict(r) for r in v):
                tables.append((f"{name}.{k}", [{kk: _cell(vv) for kk, vv in r.items()} for r in v]))
    elif data is not None:
        tables.append((name, [{"value": _cell(data)}]))
    return tables


def columns(rows: list[dict[str, Any]]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def profile_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The profiles a result used, with version and provenance."""
    versions = (record.get("meta") or {}).get("profile_versions") or {}
    rows = []
    for name, prov in (record.get("profiles") or {}).items():
        v = versions.get(name) or {}
        rows.append({"profile": name, "version": v.get("version", ""), "family": v.get("family", ""),
                     "provenance": prov})
    return rows

"""A sweep's own figures: one metric of every point against a grid parameter.

Declared in the spec as ``[[plot]]`` tables::

    [[plot]]
    title = "RSA cost recovered by the fit vs measurement noise"
    x = "noise"                               # a grid parameter
    y = "summary.fit_max_rel_error_rsa"       # dotted path into each point's data
    series = "profile"                        # optional: one line per value of this parameter
    aggregate = "mean"                        # over the remaining dimensions (mean, max, min, median)
    kind = "line"                             # line | bar | loglog; logx / logy as in any plot

The result is an ordinary result record (experiment ``sweep:NAME``), so the
report writer draws it like any experiment's figures.
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

from trustlab.errors import TrustlabError

AGGREGATES = {"mean": statistics.fmean, "max": max, "min": min, "median": statistics.median}
_KEYS = {"title", "x", "y", "series", "aggregate", "kind", "logx", "logy", "xlabel", "ylabel"}


def check_plots(plots: Any, grid: dict[str, list[Any]], source: str) -> list[dict[str, Any]]:
    if plots is None:
        return []
    if not isinstance(plots, list) or not all(isinstance(p, dict) for p in plots):
        raise TrustlabError(f"{source}: [[plot]] entries must be tables")
    for i, p in enumerate(plots):
        where = f"{source}: plot {i + 1}"
        unknown = sorted(set(p) - _KEYS)
        if unknown:
            raise TrustlabError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_KEYS))})")
        for key in ("x", "y"):
            if not isinstance(p.get(key), str):
                raise TrustlabError(f"{where}: '{key}' must be given as a string")
        for key in ("x", "series"):
            if key in p and p[key] not in grid:
                raise TrustlabError(f"{where}: {key} = {p[key]!r} is not a grid parameter "
                                    f"(grid: {', '.join(grid) or 'empty'})")
        if p.get("aggregate", "mean") not in AGGREGATES:
            raise TrustlabError(f"{where}: aggregate must be one of {', '.join(AGGREGATES)}")
        if p.get("kind", "line") not in ("line", "bar", "loglog"):
            raise TrustlabError(f"{where}: kind must be line, bar or loglog")
    return plots


def _lookup(data: Any, path: str) -> float | None:
    for part in path.split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return float(data) if isinstance(data, (int, float)) and not isinstance(data, bool) else None


def _label(v: Any) -> str:
    return ",".join(map(str, v)) if isinstance(v, list) else str(v)


def summary_record(name: str, rows: Sequence[dict[str, Any]], plots: Sequence[dict[str, Any]],
                   grid: dict[str, list[Any]]) -> dict[str, Any]:
    """A result record holding the sweep's table and its declared figures."""
    specs = []
    notes = []
    for p in plots:
        xs = grid[p["x"]]
        groups = grid[p["series"]] if p.get("series") else [None]
        agg = AGGREGATES[p.get("aggregate", "mean")]
        series = []
        for g in groups:
            ys = []
            for x in xs:
                vals = [_lookup((r["record"] or {}).get("data"), p["y"]) for r in rows
                        if r["params"].get(p["x"]) == x and (g is None or r["params"].get(p["series"]) == g)
                        and r["record"] is not None and "data" in r["record"]]
                vals = [v for v in vals if v is not None]
                ys.append(agg(vals) if vals else None)
            if all(y is None for y in ys):
                notes.append(f"{p['y']}: no numeric values" + (f" for {p['series']}={_label(g)}" if g else ""))
            series.append({"label": f"{p['series']}={_label(g)}" if g is not None else p["y"],
                           "x": [x if isinstance(x, (int, float)) else _label(x) for x in xs], "y": ys})
        specs.append({"kind": p.get("kind", "line"), "title": p.get("title", f"{p['y']} vs {p['x']}"),
                      "xlabel": p.get("xlabel", p["x"]),
                      "ylabel": p.get("ylabel", f"{p['y']} ({p.get('aggregate', 'mean')})"),
                      "logx": bool(p.get("logx")), "logy": bool(p.get("logy")), "series": series})
    table = [{**{k: _label(v) if isinstance(v, list) else v for k, v in r["params"].items()},
              "status": "not run" if r["record"] is None else ("ok" if "data" in r["record"] else "failed"),
              **{p["y"]: _lookup((r["record"] or {}).get("data"), p["y"]) for p in plots}}
             for r in rows]
    return {"experiment": f"sweep:{name}", "params": {"grid": grid}, "data": table,
            "text": "\n".join(notes), "references": [], "profiles": {}, "plots": specs,
            "meta": {"points": len(rows)}}

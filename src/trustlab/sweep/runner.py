"""A whole sweep: points, cache, backend, progress bar, and the result files.

Output layout under ``out/<name>/``::

    points/<key>.json   the cache: one result record per finished point
    results.json        [{key, experiment, params, argv, record}] in spec order
    results.csv         one row per point: parameters, then the scalar fields of its data
    report/index.html   with [[plot]] in the spec: the sweep's figures and table
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from tqdm import tqdm

from trustlab.report.export import write_csv, write_json
from trustlab.safe_output import claim_dir
from trustlab.shared_provenance import expand
from trustlab.sweep import drawing, execute
from trustlab.sweep.cache import PointCache
from trustlab.sweep.spec import Point, SweepSpec


@dataclass
class SweepOutcome:
    spec: SweepSpec
    points: list[Point]
    records: dict[str, dict[str, Any]]
    cached: int = 0
    executed: int = 0
    failed: list[str] = field(default_factory=list)
    out_dir: Path = Path(".")
    parallel: str | None = None  # with --jobs above 1: one line on the workers started (or why none) and the report

    @property
    def violations(self) -> dict[str, list[str]]:
        """Points (cached or run now) whose result reports a violated safety property: key -> lines."""
        return {p.key: list(rec["violations"]) for p in self.points
                if (rec := self.records.get(p.key)) is not None and rec.get("violations")}

    def ordered(self) -> list[dict[str, Any]]:
        return [{"key": p.key, "experiment": p.experiment, "params": p.params, "argv": list(p.argv),
                 "record": self.records.get(p.key)} for p in self.points]


def run_sweep(spec: SweepSpec, out_dir: Path, jobs: int = 1, scheduler: str | None = None,
              progress: bool = True, on_result: Callable[[str, dict[str, Any]], None] | None = None,
              fresh: bool = False, points: list[Point] | None = None) -> SweepOutcome:
    """Run the points of ``spec`` not yet in the cache under ``out_dir/NAME``.

    ``fresh`` forgets this spec's cached points first (after changing an
    experiment's code without changing trustlab's version, say). ``points``:
    ``spec.points()`` if the caller has them already (checked before it wrote anything).
    """
    points = spec.points() if points is None else points
    unique = list({p.key: p for p in points}.values())
    by_key = {p.key: p for p in unique}
    out_dir = Path(out_dir) / spec.name
    cache = PointCache(out_dir / "points")
    cache.remove_stale_temps()  # a killed sweep's half-written points
    for name in ("results.json", "results.csv"):
        for tmp in out_dir.glob(f".{name}.*.tmp"):
            if tmp.is_file() and not tmp.is_symlink():
                tmp.unlink(missing_ok=True)
    records: dict[str, dict[str, Any]] = {}
    for p in unique:
        if fresh:
            cache.forget(p.key)
            continue
        rec = cache.get(p.key)
        if rec is not None and rec.get("experiment") == p.experiment:
            records[p.key] = rec
    pending = [p for p in unique if p.key not in records]
    outcome = SweepOutcome(spec, points, records, cached=len(records), out_dir=out_dir)
    drawers: list[drawing.ReportDrawer] = []

    def first_point_done() -> None:
        """Fork the report's drawer now: it inherits what the first point imported instead of importing
        it again, so it does no work the sweep would not have done itself (``sweep/drawing.py``)."""
        drawer = drawing.start(jobs, scheduler, bool(spec.plots), len(pending) - 1)
        if drawer is not None:
            drawers.append(drawer)

    decision = execute.Decision(jobs)
    try:
        stream: Iterator[tuple[str, dict[str, Any]]]
        if not pending:
            stream = iter(())
        elif scheduler:
            stream = execute.dask(pending, scheduler, jobs)
        elif jobs > 1 and len(pending) > 1:
            stream = execute.adaptive(pending, jobs, decision=decision)  # workers only when they pay off
        else:
            stream = execute.serial(pending)
        _run(stream, outcome, by_key, cache, progress, on_result, first_point_done)
        drawer = drawers[0] if drawers else None
        _write_results(outcome, drawer)
    finally:
        for drawer in drawers:
            drawer.close()
    if jobs > 1 and not scheduler and pending:
        notes = [decision.line()] if len(pending) > 1 else [f"--jobs {jobs}: one point to run, in this process"]
        if drawers:
            notes.append("report drawn on a second process" if drawers[0].drew else
                         "report drawn here (the second process failed)")
        outcome.parallel = "; ".join(notes)
    return outcome


def _run(stream: Iterator[tuple[str, dict[str, Any]]], outcome: SweepOutcome, by_key: dict[str, Point],
         cache: PointCache, progress: bool, on_result: Callable[[str, dict[str, Any]], None] | None,
         first_point_done: Callable[[], None]) -> None:
    """Cache each result as it arrives (in completion order), with the progress bar."""
    spec, records = outcome.spec, outcome.records
    bar = tqdm(total=len(by_key), initial=outcome.cached, desc=spec.name, unit="pt",
               disable=None if progress else True,  # None: no bar when stderr is not a terminal
               dynamic_ncols=True)
    try:
        for key, record in stream:
            outcome.executed += 1
            point = by_key[key]
            record.setdefault("meta", {})["sweep"] = {"name": spec.name, "key": key, "params": point.params}
            if "data" in record:
                cache.put(key, record, point.experiment, point.argv)
            else:
                outcome.failed.append(key)
            records[key] = record
            if on_result is not None:
                on_result(key, record)
            bar.update(1)
            if outcome.executed == 1:
                first_point_done()
    finally:
        bar.close()
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def _scalars(data: Any, prefix: str = "") -> dict[str, Any]:
    """Scalar leaves of nested dicts, as dotted columns (lists are left to results.json)."""
    out: dict[str, Any] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            out.update(_scalars(v, f"{prefix}{k}."))
    elif isinstance(data, (int, float, str, bool)) or data is None:
        out[prefix.rstrip(".") or "value"] = data
    return out


def _write_results(outcome: SweepOutcome, drawer: drawing.ReportDrawer | None = None) -> None:
    """results.json, results.csv and (with [[plot]]) the report: on ``drawer`` if it is ready, else here."""
    rows = outcome.ordered()
    report: tuple[list[dict[str, Any]], Path, str] | None = None
    handed = False
    if outcome.spec.plots:
        from trustlab.sweep.summary import summary_record

        summary = summary_record(outcome.spec.name, rows, outcome.spec.plots, outcome.spec.grid)
        failures = [r["record"] for r in rows if r["record"] is not None and "data" not in r["record"]]
        report = ([summary, *failures], outcome.out_dir / "report", f"sweep {outcome.spec.name}")
        # marked as 'trustlab report' output (the marker that command writes), so that redrawing the
        # sweep's report in place, as the spec's comments suggest, is not refused as a foreign directory
        claim_dir(report[1], "report", force=True)
        handed = drawer is not None and drawer.hand_over(*report)  # drawn there while the files below are written
    write_json(outcome.out_dir / "results.json", rows)
    table = []
    for r in rows:
        row: dict[str, Any] = {"experiment": r["experiment"]}
        row.update({k: json.dumps(v) if isinstance(v, list) else v for k, v in r["params"].items()})
        rec = r["record"]
        if rec is None:
            row["status"] = "not run"
        elif "data" not in rec:
            row["status"] = "failed"
            row["error"] = str(rec.get("error", "")).splitlines()[0] if rec.get("error") else ""
        else:
            row["status"] = "violations" if rec.get("violations") else "ok"
            # a provenance table (trustlab.shared_provenance) is not a point's figure: no column per text
            row.update({f"data.{k}": v for k, v in _scalars(expand(rec["data"])).items()})
        table.append(row)
    write_csv(outcome.out_dir / "results.csv", table)
    if report is not None and not (handed and drawer is not None and drawer.finished()):
        from trustlab.report import write_report

        records, directory, title = report
        write_report(records, directory, title=title)

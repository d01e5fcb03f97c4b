"""Assemble a report directory from result records.

Layout of ``out_dir``::

    index.html            the page (images embedded unless inline=False)
    results.json          every record, failures included
    references.csv        every published figure beside model/simulation, with error and source
    plots/<run>-<n>.png   each figure, also usable on its own
    tables/<run>-<t>.csv  each data table
"""

from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing
import os
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from trustlab import __version__
from trustlab.report import html as h
from trustlab.report.accuracy import accuracy_section
from trustlab.report.export import slug, write_csv, write_json
from trustlab.report.plots import PlotError, collector_frozen, forget_fonts, preload, render
from trustlab.report.records import ensure_dir, is_failure
from trustlab.report.tables import MAX_ROWS, columns, data_tables, profile_rows, reference_rows
from trustlab.shared_provenance import expand
from trustlab.safe_output import atomic_open

REF_COLS = ["label", "model", "simulated", "reference", "error", "error_pct", "unit", "source"]


def _run_ids(records: Sequence[dict[str, Any]]) -> list[str]:
    seen: dict[str, int] = {}
    ids = []
    for r in records:
        base = slug(str(r.get("experiment", "run")))
        seen[base] = seen.get(base, 0) + 1
        ids.append(f"{base}-{seen[base]}")
    return ids


def _describe_params(record: dict[str, Any]) -> str:
    if is_failure(record):
        return " ".join(record.get("argv") or []) or "(defaults)"
    params = record.get("params") or {}
    text = ", ".join(f"{k}={v}" for k, v in params.items()) or "(defaults)"
    return text if len(text) <= 400 else text[:400] + " …"


def _max_err(rows: list[dict[str, Any]]) -> float | None:
    errs = [abs(r["error_pct"]) for r in rows if isinstance(r.get("error_pct"), (int, float))]
    return max(errs) if errs else None


def _render_safe(spec: Any, png: Path) -> str | None:
    """Render one figure; the error message instead of an exception (shown in the page).

    Drawn into a temp file beside ``png`` and renamed, so a failure never leaves half a PNG.
    A full disk is not the figure's fault: it propagates (the report cannot be written).
    """
    tmp = png.with_name(f".{png.stem}.{os.getpid()}.tmp.png")
    try:
        png.parent.mkdir(parents=True, exist_ok=True)
        render(spec, tmp)
        os.replace(tmp, png)
    except PlotError as exc:
        return str(exc)
    except OSError:
        raise
    except Exception as exc:  # matplotlib refusing odd data must cost one figure, not the report
        return f"{type(exc).__name__}: {exc}"
    finally:
        tmp.unlink(missing_ok=True)
    return None


OVERVIEW = ("overview", 0)  # its key among the drawn figures (run ids end in -N, so none is "overview")


def _start_drawing(records: Sequence[dict[str, Any]], ids: list[str], out_dir: Path, jobs: int,
                   overview: dict[str, Any] | None = None) -> Callable[[bool], dict[tuple[str, int], str | None]]:
    """Start drawing every figure of every run (the ``overview`` spec first); call the result with
    False for (run id, figure n) -> drawing error (None: drawn) once they are all drawn, or with
    True to stop the drawing (the figures not begun are left out).

    ``jobs`` > 1 (and figures enough): ``jobs`` - 1 forked workers draw while this process writes
    the JSON, the tables and the page's text, and waits for them only to embed the figures. A
    worker costs its own text shaping, glyphs and math-text parses (~0.25 s of CPU for the
    flagship's figures): two drawing workers beside an idle parent cost more CPU, and on a
    busy machine more time too, than one worker beside a parent that works.
    A spec repeated (two runs asking for the same figure: the flagship's two timing-model
    runs share five) is drawn once and its PNG copied, byte for byte what drawing it again
    gives. The workers inherit matplotlib imported, not opened fonts (see below).
    """
    work = [(OVERVIEW, overview, out_dir / "plots" / "overview.png")] if overview is not None else []
    work += [((run_id, n), spec, out_dir / "plots" / f"{run_id}-{n}.png")
             for run_id, record in zip(ids, records) if not is_failure(record)
             for n, spec in enumerate(record.get("plots") or [], start=1)]
    first: dict[str, int] = {}
    same_as: dict[int, int] = {}  # index in work -> index of the identical spec drawn
    for i, (_, spec, _) in enumerate(work):
        key = _spec_key(spec)
        if key is not None and key in first:
            same_as[i] = first[key]
        elif key is not None:
            first[key] = i
    todo = [i for i in range(len(work)) if i not in same_as]
    specs, pngs = [work[i][1] for i in todo], [work[i][2] for i in todo]

    def collect(drawn: Iterable[str | None]) -> dict[tuple[str, int], str | None]:
        errors: dict[int, str | None] = dict(zip(todo, drawn))
        for i, j in same_as.items():
            errors[i] = errors[j] if errors[j] is not None else _copy_png(work[j][2], work[i][2])
        return {work[i][0]: errors[i] for i in range(len(work))}

    workers = jobs - 1
    if not specs:
        return lambda cancel: collect([])
    # matplotlib imported, then frozen while the figures are drawn (plots.collector_frozen): the
    # drawing's collections, here and in forked workers, leave its objects alone.
    preload()
    frozen = contextlib.ExitStack()
    frozen.enter_context(collector_frozen())
    if workers < 1 or len(todo) < 8 or "fork" not in multiprocessing.get_all_start_methods():
        with frozen:
            drawn = [_render_safe(spec, png) for spec, png in zip(specs, pngs)]
        return lambda cancel: collect(drawn)
    # Nothing is drawn here before forking: a font opened before a fork shares its file
    # offset with the workers, and their reads interleave (FT_Load_Glyph "invalid outline").
    # Frozen, the objects the workers inherit are left out of their garbage collections: not
    # scanned again in each worker, nor copied there page by page (copy-on-write) by the scan.
    try:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                                   initializer=_start_worker)
        try:
            # Runs of neighbouring figures per task: a run's figures share their labels, legend
            # and tick texts, and a worker shapes each text once (its renderer keeps it), so
            # scattering them over the workers had each shape and parse them again.
            pending = pool.map(_render_safe, specs, pngs, chunksize=-(-len(specs) // (2 * workers)))
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    except BaseException:
        frozen.close()
        raise

    def finish(cancel: bool) -> dict[tuple[str, int], str | None]:
        try:
            return {} if cancel else collect(list(pending))
        finally:
            pool.shutdown(cancel_futures=True)
            frozen.close()
    return finish


def _start_worker() -> None:
    """First thing in a forked drawing worker: the parent's math-text layouts dropped (see
    :func:`~trustlab.report.plots.forget_fonts`), and a young-object collection every 10,000
    new objects instead of every 700. Drawing allocates much and leaves little cyclic garbage;
    what it inherited is frozen (``gc.freeze`` before the fork), so a collection scans only what
    the drawing made: a tenth as many collections, about half of their CPU (~0.02 s of the flagship's)."""
    forget_fonts()
    gc.set_threshold(10_000, *gc.get_threshold()[1:])


def _spec_key(spec: Any) -> str | None:
    """The spec as canonical JSON, so identical figures are told apart from different ones (None: not JSON)."""
    try:
        return json.dumps(spec, sort_keys=True)
    except (TypeError, ValueError):
        return None


def _copy_png(source: Path, png: Path) -> None:
    """``source`` copied to ``png`` atomically, like a drawing (never half a PNG)."""
    with source.open("rb") as src, atomic_open(png, "wb") as dst:
        shutil.copyfileobj(src, dst)


def write_report(records: Sequence[dict[str, Any]], out_dir: Path, title: str = "trustlab report",
                 inline: bool = True, notes: Sequence[str] = (), jobs: int = 1) -> Path:
    """Write the report for ``records`` into ``out_dir``; returns the path of index.html.

    The caller has claimed ``out_dir`` (:func:`trustlab.safe_output.claim_dir`), so the old
    figures and tables removed here are an earlier report's own.

    ``jobs`` > 1: ``jobs`` - 1 processes draw the figures (the slow part of a big report) while
    this one writes the rest.
    """
    out_dir = Path(out_dir)
    ensure_dir(out_dir, "report directory")
    for sub, pattern in (("plots", "*.png"), ("tables", "*.csv")):  # no stale figures from an earlier report
        for old in (out_dir / sub).glob(pattern):
            old.unlink()
    ids = _run_ids(records)
    refs_by_run = {run_id: reference_rows(record) for run_id, record in zip(ids, records) if not is_failure(record)}
    all_refs = [dict(r, run=run_id) for run_id, refs in refs_by_run.items() for r in refs]
    overview = _overview_spec(all_refs)
    finish_drawing = _start_drawing(records, ids, out_dir, jobs, overview)
    try:
        summary_rows, parts = _text_parts(records, ids, refs_by_run, all_refs, out_dir)
    except BaseException:
        finish_drawing(True)  # the figures not started yet are not drawn for a report that fails
        raise
    rendered = finish_drawing(False)
    sections = [head + _figures(run_id, record, out_dir, inline, rendered) + tail if tail is not None else head
                for run_id, record, (head, tail) in zip(ids, records, parts)]
    failed = sum(1 for r in summary_rows if r["status"] != "ok")
    status = (f'<p class="bad">{failed} of {len(records)} runs failed; see below.</p>' if failed
              else f'<p class="ok">All {len(records)} runs finished.</p>')
    notes_html = "".join(f"<p>{h.esc(n)}</p>" for n in notes) + _environment(records)
    toc_rows = summary_rows
    intro = (f'<p class="small">trustlab {h.esc(__version__)} · generated '
             f'{h.esc(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))} · '
             'files: <a href="results.json">results.json</a>'
             + (' · <a href="references.csv">references.csv</a>' if all_refs else "") + "</p>"
             + notes_html + status
             + "<p>Published figures appear beside what trustlab computed: <b>model</b> is the analytic "
             "estimate from cost formulas and profiles, <b>simulated</b> comes from actually running the "
             "protocol on timed devices, <b>error</b> = (simulated, or model when there is no simulation) "
             "minus reference.</p>"
             + h.table(toc_rows, ["run", "experiment", "parameters", "status", "references",
                                  "max |error| %", "wall s"], anchor="run"))
    overview_html = (_overview(overview, rendered[OVERVIEW], out_dir, inline) if overview is not None else "") \
        + accuracy_section(records, ids, out_dir, inline, rendered)
    index = out_dir / "index.html"
    with atomic_open(index) as fh:
        fh.writelines(h.page(title, intro + overview_html, sections))
    return index


def _text_parts(records: Sequence[dict[str, Any]], ids: list[str], refs_by_run: dict[str, list[dict[str, Any]]],
                all_refs: list[dict[str, Any]], out_dir: Path
                ) -> tuple[list[dict[str, Any]], list[tuple[str, str | None]]]:
    """Everything but the figures, done while they are drawn: the summary rows, each run's
    section before and after its figures (a failed run's has no after: None), results.json,
    references.csv and the data tables' CSVs."""
    summary_rows: list[dict[str, Any]] = []
    parts: list[tuple[str, str | None]] = []
    for run_id, record in zip(ids, records):
        if is_failure(record):
            summary_rows.append({"run": run_id, "experiment": record["experiment"],
                                 "parameters": _describe_params(record), "status": "FAILED",
                                 "references": None, "max |error| %": None, "wall s": None})
            parts.append((
                f'<h2 id="{run_id}">{h.esc(record["experiment"])} — failed</h2>'
                f'<div class="fail"><p>argv: <code>{h.esc(_describe_params(record))}</code></p>'
                f'{h.pre(str(record.get("error", "")))}</div>', None))
            continue
        refs = refs_by_run[run_id]
        meta = record.get("meta") or {}
        summary_rows.append({"run": run_id, "experiment": record["experiment"],
                             "parameters": _describe_params(record),
                             "status": "VIOLATED: " + "; ".join(map(str, record["violations"]))
                             if record.get("violations") else "ok",
                             "references": len(refs), "max |error| %": _max_err(refs),
                             "wall s": meta.get("wall_s")})
        parts.append(_section(run_id, record, refs, out_dir))
    write_json(out_dir / "results.json", list(records))
    if all_refs:
        write_csv(out_dir / "references.csv", all_refs)
    return summary_rows, parts


def _environment(records: Sequence[dict[str, Any]]) -> str:
    """The tools the runs used (from their records), once for the page; per run under 'Run record'."""
    tools: dict[str, set[str]] = {}
    for r in records:
        for k, v in ((r.get("meta") or {}).get("tools") or {}).items():
            tools.setdefault(str(k), set()).add(str(v))
    if not tools:
        return ""
    text = " · ".join(f"{k} {' / '.join(sorted(v))}" for k, v in sorted(tools.items()))
    return f'<p class="small">Environment: {h.esc(text)}</p>'


def _overview_spec(refs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One log-log figure of every published figure against what trustlab computed, per experiment
    (None: no positive pair to draw)."""
    series: dict[str, dict[str, list[float]]] = {}
    for r in refs:
        got = r["simulated"] if r.get("simulated") is not None else r.get("model")
        ref = r.get("reference")
        if isinstance(got, (int, float)) and isinstance(ref, (int, float)) and got > 0 and ref > 0:
            s = series.setdefault(str(r["experiment"]), {"x": [], "y": []})
            s["x"].append(float(ref))
            s["y"].append(float(got))
    if not series:
        return None
    lo = min(min(s["x"] + s["y"]) for s in series.values())
    hi = max(max(s["x"] + s["y"]) for s in series.values())
    return {"kind": "loglog", "title": "Every published figure vs trustlab (simulated, else model)",
            "xlabel": "published value (paper's unit)", "ylabel": "trustlab value",
            "series": [{"label": name, "x": s["x"], "y": s["y"], "style": "points"}
                       for name, s in sorted(series.items())]
            + [{"label": "y = x", "x": [lo, hi], "y": [lo, hi], "style": "dashed"}]}


def _overview(spec: dict[str, Any], error: str | None, out_dir: Path, inline: bool) -> str:
    """The overview figure (drawn by :func:`_render_all`) with its caption, or why it could not be drawn."""
    if error is not None:
        return f'<p class="bad">Overview figure could not be drawn: {h.esc(error)}</p>'
    png = out_dir / "plots" / "overview.png"
    n = sum(len(s["x"]) for s in spec["series"][:-1])
    return (f'<figure>{h.image(png, out_dir, spec["title"], inline)}<figcaption>Overview: {n} published '
            'figures (positive values) against trustlab; points on the diagonal agree. Details and '
            'sources per run below · <a href="plots/overview.png">PNG</a></figcaption></figure>')


def _section(run_id: str, record: dict[str, Any], refs: list[dict[str, Any]], out_dir: Path) -> tuple[str, str]:
    """A run's section before its figures and after them (the figures are embedded once drawn)."""
    parts = [f'<h2 id="{run_id}">{h.esc(record["experiment"])} <span class="small">'
             f'{h.esc(_describe_params(record))}</span></h2>']
    description = (record.get("meta") or {}).get("description")
    if description:
        parts.append(f"<p><i>{h.esc(description)}</i></p>")
    if refs:
        parts.append("<h3>Reference comparison</h3>")
        parts.append(h.table(refs, REF_COLS))
    head = "".join(parts)
    parts = []
    profiles = profile_rows(record)
    if profiles:
        parts.append("<h3>Profiles (provenance)</h3>" + h.table(profiles, ["profile", "version", "family",
                                                                          "provenance"]))
    for name, rows in data_tables(expand(record.get("data"))):  # provenance said once: shown in full per row
        csv_path = write_csv(out_dir / "tables" / f"{run_id}-{slug(name)}.csv", rows)
        parts.append(f'<h3>{h.esc(name)} <span class="small"><a href="tables/{csv_path.name}">CSV</a>'
                     "</span></h3>" + h.table(rows, columns(rows), limit=MAX_ROWS))
    if record.get("text"):
        parts.append(h.details("Text output", h.pre(record["text"])))
    meta = record.get("meta") or {}
    if meta:
        parts.append(h.details("Run record: seed, versions, tools, wall time",
                               h.json_pre({"params": record.get("params"), **meta})))
    return head, "".join(parts)


def _figures(run_id: str, record: dict[str, Any], out_dir: Path, inline: bool,
             rendered: dict[tuple[str, int], str | None]) -> str:
    """A run's figures (drawn by :func:`_start_drawing`), each with its caption or why it could not be drawn."""
    parts = []
    for n, spec in enumerate(record.get("plots") or [], start=1):
        title = spec.get("title", f"figure {n}") if isinstance(spec, dict) else f"figure {n}"
        png = out_dir / "plots" / f"{run_id}-{n}.png"
        error = rendered.get((run_id, n), "not drawn")
        if error is not None:
            parts.append(f'<p class="bad">Figure {n} ({h.esc(title)}) could not be drawn: {h.esc(error)}</p>')
            continue
        parts.append(h.figure(png, out_dir, title, f"Figure {n}: {h.esc(title)}", inline))
    return "".join(parts)


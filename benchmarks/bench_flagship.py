"""The flagship (``make main``): total CPU of ``trustlab flagship --jobs 2`` (issue 24 target: <= 20 s;
the report's own <= 3 s).

Figures (one run): ``cpu_s`` (user + system of the flagship and every child it
waited for: the experiment runs, swtpm, the figure-drawing workers), ``wall_s``,
``runs``, ``failed``, and ``cpu_vs_python_pass`` (the same CPU in units of an
empty interpreter's start on this machine, so it compares across machines).
The key pool and the profile index are warmed first, as on any second run.
``--quick`` runs only the oracle and AE studies.

Where the CPU goes: ``by_experiment`` sums each run's own CPU (its record's
``meta.process_cpu_s``: the run's process and the children it waited for, e.g.
swtpm) per study, with the number of runs; ``runs_cpu_s`` is their total;
``report_cpu_s`` is writing the same report again from the saved records in a
separate process (``trustlab report --jobs 2``: the HTML, the tables and the
figures drawn by one forked worker while the parent writes the rest; the worker's CPU is
counted: the report waits for it, and a waited-for child's CPU is its parent's children's);
``report_cpu_one_process_s`` is the same report with ``--jobs 1`` (no child to miss: about
``report_cpu_s``, else the worker's CPU went uncounted); ``figures`` counts the report's PNGs (every
run's and the overview), ``figures_not_drawn`` the figures its page says could
not be drawn (0 unless something is wrong); ``rest_cpu_s`` = ``cpu_s`` - runs - report: the
flagship process itself (the run list, its fork server) and whatever the
separate measurements miss. PYTHONDONTWRITEBYTECODE (set in some environments)
makes every fresh interpreter compile what it imports; ``bytecode_writes`` says
whether it was set.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _cpu(before: resource.struct_rusage) -> float:
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(quick: bool) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    tl = [sys.executable, "-m", "trustlab"]
    subprocess.run(tl + ["run", "oracle", "--parties", "5"], env=env, check=True, capture_output=True)  # warm
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(5):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    python_pass = _cpu(before) / 5
    only = ["--only", "oracle", "--only", "ae"] if quick else []
    with tempfile.TemporaryDirectory(prefix="bench-flagship-") as tmp:
        out = Path(tmp) / "report"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.run(tl + ["flagship", "--out", str(out), "--jobs", "2", "--no-progress", *only],
                              env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        cpu = _cpu(before)
        records = json.loads((out / "results.json").read_text()) if (out / "results.json").exists() else []
        figures = len(list((out / "plots").glob("*.png")))
        page = (out / "index.html").read_text(encoding="utf-8") if (out / "index.html").exists() else ""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(tl + ["report", str(out / "records"), "--out", str(Path(tmp) / "again"), "--jobs", "2"],
                       env=env, check=True, capture_output=True)
        report_cpu = _cpu(before)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(tl + ["report", str(out / "records"), "--out", str(Path(tmp) / "alone"), "--jobs", "1"],
                       env=env, check=True, capture_output=True)
        report_cpu_one_process = _cpu(before)
    by_experiment = _by_experiment(records)
    runs_cpu = sum(e["cpu_s"] for e in by_experiment.values())
    return {"cpu_s": cpu, "wall_s": wall, "runs": len(records),
            "failed": sum(1 for r in records if "data" not in r), "exit_status": proc.returncode,
            "python_pass_cpu_s": python_pass, "cpu_vs_python_pass": cpu / python_pass if python_pass else None,
            "target_cpu_s": 20.0, "within_target": cpu <= 20.0,
            "target_report_cpu_s": 3.0, "report_within_target": report_cpu <= 3.0,
            "experiments": sorted({r["experiment"] for r in records}),
            "by_experiment": by_experiment, "runs_cpu_s": runs_cpu, "report_cpu_s": report_cpu,
            "report_cpu_one_process_s": report_cpu_one_process, "figures": figures,
            "figures_not_drawn": page.count("could not be drawn"),
            "rest_cpu_s": cpu - runs_cpu - report_cpu,
            "bytecode_writes": not os.environ.get("PYTHONDONTWRITEBYTECODE")}


def _by_experiment(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per study: runs and their summed CPU seconds (records without the figure count as 0), costliest first."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        entry = out.setdefault(r["experiment"], {"runs": 0, "cpu_s": 0.0})
        entry["runs"] += 1
        entry["cpu_s"] += float((r.get("meta") or {}).get("process_cpu_s") or 0.0)
    return dict(sorted(out.items(), key=lambda item: -item[1]["cpu_s"]))

"""``trustlab flagship``: regenerate every paper's tables and figures into one report.

Runs each registered experiment's ``flagship`` argv lists (the timing model's
own validation among them), each in its own ``trustlab run`` process so that
a crash, a hang or a stray swtpm in one study cannot take the others down;
saves every record; writes ``OUT/index.html``. A failed run is shown in the
report with its error, and the command exits non-zero at the end; so does a
run whose result reports a violated safety property (``Result.violations``),
as ``trustlab run`` does.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trustlab.argtypes import MAX_JOBS, jobs, real
from trustlab.errors import TrustlabError, excerpt
from trustlab.report.export import slug
from trustlab.report.records import check, ensure_dir, failure
from trustlab.safe_output import claim_dir, path_arg, reported, write_text

if TYPE_CHECKING:
    from trustlab.cli._forkserver import ForkServer

_ENTRY = "import sys; from trustlab.cli._flagship_run import child_main; sys.exit(child_main(sys.argv[1:]))"
_LIVE: set[subprocess.Popen] = set()  # running children, killed if the flagship itself is interrupted
_LIVE_LOCK = threading.Lock()
MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a week per run; beyond it threading's timeouts overflow


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "flagship", help="run every experiment's flagship configuration and write the full report",
        description="Regenerate the papers' tables and figures: every registered experiment's flagship "
        "runs, each in its own process, then one HTML report (OUT/index.html) with CSV/JSON beside it. "
        "A failing study is recorded in the report and makes the exit status non-zero; so does a run "
        "that reports a violated safety property (exit 1, like a failed run).",
        epilog="example: trustlab flagship --out out/report --jobs 2",
    )
    p.add_argument("--out", type=path_arg, default=None, metavar="DIR",
                   help="report directory (default out/report): new, empty, or an earlier flagship's")
    p.add_argument("--force", action="store_true",
                   help="write into a non-empty directory that is not an earlier flagship output")
    p.add_argument("--jobs", "-j", type=jobs(), default=None, metavar="N",
                   help="runs in parallel (default: one per CPU)")
    p.add_argument("--timeout", type=real("--timeout", 0, MAX_TIMEOUT_S, low_open=True), default=None, metavar="S",
                   help="seconds one run may take before it is stopped and recorded as failed (default 900)")
    p.add_argument("--only", action="append", metavar="NAME", help="run only these experiments (repeatable)")
    p.add_argument("--skip", action="append", metavar="NAME", help="leave these experiments out (repeatable)")
    p.add_argument("--list", action="store_true", help="print the runs and exit")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=run)


def planned_runs(only: list[str] | None, skip: list[str] | None) -> list[tuple[str, list[str]]]:
    from trustlab.experiments.registry import all_experiments, flagship_runs

    experiments = all_experiments()
    for name in (only or []) + (skip or []):
        if name not in experiments:
            raise TrustlabError(f"unknown experiment {excerpt(name)} (known: {', '.join(experiments)})")
    both = sorted(set(only or []) & set(skip or []))
    if both:  # the run would silently leave out what --only asked for
        raise TrustlabError(f"--only and --skip both name {', '.join(both)}; give each experiment to one of them")
    runs = []
    for name, spec in experiments.items():
        if (only and name not in only) or (skip and name in skip):
            continue
        try:
            argvs = flagship_runs(spec)
        except (TypeError, ValueError) as exc:
            raise TrustlabError(f"experiment {name!r}: malformed 'flagship' attribute ({exc})") from None
        runs += [(name, argv) for argv in argvs]
    return runs


def _child_env(jobs: int) -> dict[str, str]:
    env = os.environ.copy()
    env.setdefault("MPLBACKEND", "Agg")
    if jobs > 1:  # parallel runs, not parallel BLAS inside each: the machine has few cores
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(var, "1")
    return env


def run_one(name: str, argv: list[str], save: Path, timeout: float, env: dict[str, str],
            server: ForkServer | None = None) -> dict[str, Any]:
    """One run in its own process (forked by ``server``, else a fresh ``python``); a record or a failure."""
    from trustlab.cli._forkserver import ForkServerError

    save.unlink(missing_ok=True)
    started = time.perf_counter()
    if server is not None and server.alive:
        try:
            returncode, stderr, _ = server.run(save, name, argv, timeout)
        except ForkServerError as exc:
            return failure(name, argv, str(exc))
    else:
        returncode, stderr = _run_process(name, argv, save, timeout, env)
    if returncode is None:
        return failure(name, argv, f"timed out after {timeout:g} s")
    wall = time.perf_counter() - started
    tail = "\n".join((stderr or "").strip().splitlines()[-30:])
    if returncode != 0:
        return failure(name, argv, f"exit status {returncode} after {wall:.1f} s\n{tail}")
    try:
        record = check(json.loads(save.read_text(encoding="utf-8")), str(save))
    except (OSError, ValueError, TrustlabError) as exc:
        return failure(name, argv, f"no usable result record ({exc})\n{tail}")
    record.setdefault("meta", {})["argv"] = argv
    record["meta"]["process_wall_s"] = wall
    return record


def _run_process(name: str, argv: list[str], save: Path, timeout: float,
                 env: dict[str, str]) -> tuple[int | None, str]:
    """``python -c child_main SAVE NAME ARGV``: (exit status, or None on timeout; its stderr)."""
    cmd = [sys.executable, "-c", _ENTRY, str(save), name, *argv]
    # A session of its own: on timeout the whole group goes (swtpm children included).
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            text=True, env=env, start_new_session=True)
    with _LIVE_LOCK:
        _LIVE.add(proc)
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return None, ""
    finally:
        if proc.poll() is None:
            _kill_group(proc)
        with _LIVE_LOCK:
            _LIVE.discard(proc)
    return proc.returncode, stderr


def _fork_server(runs: list[tuple[str, list[str]]], env: dict[str, str], timeout: float) -> ForkServer | None:
    """A fork server preloading the runs' studies (saves each run an interpreter start and its
    imports); None where processes cannot fork or it does not start: then each run is a fresh python."""
    from trustlab.cli._forkserver import ForkServer, ForkServerError

    if not hasattr(os, "fork") or not runs:
        return None
    try:
        return ForkServer(sorted({name for name, _ in runs}), env, timeout)
    except (ForkServerError, OSError) as exc:
        print(f"trustlab flagship: running each study in a fresh interpreter ({exc})", file=sys.stderr)
        return None


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def _check_modes(args: argparse.Namespace) -> None:
    """--list runs and writes nothing: an option for the runs or the report is an error naming that
    (issue 23); then the defaults (None until here, so that "not given" is told apart) are filled in."""
    if args.list:
        for flag, given in (("--out", args.out is not None), ("--force", args.force), ("--jobs", args.jobs is not None),
                            ("--timeout", args.timeout is not None), ("--no-progress", args.no_progress)):
            if given:
                raise TrustlabError(f"{flag}: has no effect with --list (which runs and writes nothing); "
                                    "drop one of them")
    args.out = Path("out/report") if args.out is None else args.out
    args.jobs = min(os.cpu_count() or 1, MAX_JOBS) if args.jobs is None else args.jobs
    args.timeout = 900.0 if args.timeout is None else args.timeout


def run(args: argparse.Namespace) -> int:
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from tqdm import tqdm  # here, not at import: every flagship child imports this module

    from trustlab.experiments.registry import import_errors
    from trustlab.report import write_report
    from trustlab.report.plots import frozen_at_exit

    _check_modes(args)
    if args.jobs < 1:
        raise TrustlabError(f"--jobs {args.jobs}: need at least 1")
    if not math.isfinite(args.timeout) or args.timeout <= 0:
        raise TrustlabError(f"--timeout {args.timeout}: need a positive number of seconds")
    runs = planned_runs(args.only, args.skip)
    broken = {} if args.only else import_errors()
    if args.list:
        for name, argv in runs:
            print(f"{name} {' '.join(argv)}".rstrip())
        for module, error in broken.items():
            print(f"(module {module} does not import: {error})")
        return 0
    claim_dir(args.out, "flagship", force=args.force)
    records_dir = args.out / "records"
    ensure_dir(records_dir, "--out")
    for stale in records_dir.glob("*.json"):  # the directory must hold exactly this run's records
        stale.unlink()
    env = _child_env(args.jobs)
    started = time.perf_counter()
    results: list[dict[str, Any] | None] = [None] * len(runs)
    server = None  # SIGTERM unwinds as Ctrl-C does (trustlab.cli.main): the children are killed on the way out
    pool = ThreadPoolExecutor(max_workers=args.jobs)
    try:
        server = _fork_server(runs, env, args.timeout)
        # disable=None: no bar when stderr is not a terminal (a log file gets no carriage-return frames)
        with tqdm(total=len(runs), desc="flagship", unit="run", disable=True if args.no_progress else None) as bar:
            futures = {pool.submit(run_one, name, argv, records_dir / f"{i:02d}-{slug(name)}.json",
                                   args.timeout, env, server): i
                       for i, (name, argv) in enumerate(runs)}
            for fut in as_completed(futures):
                i = futures[fut]
                results[i] = fut.result()
                bar.set_postfix_str(runs[i][0])
                bar.update(1)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        if server is not None:
            server.close(kill=True)
        with _LIVE_LOCK:
            live = list(_LIVE)
        for proc in live:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        raise
    pool.shutdown()
    if server is not None:
        server.close()
    records = [r for r in results if r is not None]
    for module, error in broken.items():
        records.append(failure(f"module {module}", [], f"experiment module does not import: {error}"))
    for i, record in enumerate(records):  # failures too, so the records directory is the whole run
        if "data" not in record:
            with reported(args.out):
                write_text(records_dir / f"{i:02d}-{slug(record['experiment'])}.failed.json",
                           json.dumps(record, indent=2))
    wall = time.perf_counter() - started
    notes = [f"Flagship run: {len(runs)} runs of {len({n for n, _ in runs})} experiments, "
             f"{args.jobs} parallel, {wall:.0f} s wall clock. Regenerate with: trustlab flagship --out {args.out}"]
    with reported(args.out):
        index = write_report(records, args.out, title="trustlab — the papers' tables and figures, regenerated",
                             notes=notes, jobs=args.jobs)
    frozen_at_exit()  # the process ends now: its exit's collections skip what the report left
    failed = [r for r in records if "data" not in r]
    violated = [r for r in records if "data" in r and r.get("violations")]
    total = time.perf_counter() - started
    print(f"{index}: {len(records)} runs, {len(failed)} failed, {len(violated)} with violations; "
          f"runs {wall:.0f} s, with the report {total:.0f} s")
    for r in failed:
        first = str(r.get("error", "")).strip().splitlines()
        print(f"  FAILED {r['experiment']} {' '.join(r.get('argv') or [])}: {first[-1] if first else ''}")
    for r in violated:
        argv = " ".join(r.get("meta", {}).get("argv") or [])
        print(f"  VIOLATED {r['experiment']} {argv}: {'; '.join(map(str, r['violations']))}")
    return 1 if failed or violated else 0

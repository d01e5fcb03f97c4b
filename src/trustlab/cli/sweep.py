"""``trustlab sweep``: run a grid of experiment parameters, resumably, locally or on Dask."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from trustlab.argtypes import MAX_JOBS, jobs
from trustlab.errors import TrustlabError, excerpt
from trustlab.limits import shown
from trustlab.safe_output import check_path, claim_dir, path_arg, reported


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep", help="run the cartesian product of experiment parameters (resumable, parallel)",
        description="Run every point of a sweep spec (experiment x grid of parameters). Finished points "
        "are cached under OUT/NAME/points, so an interrupted sweep resumes where it stopped. Points run "
        "here and, when they pay off, on local worker processes, or on a Dask distributed cluster with --scheduler. Exit status 1 "
        "when a point failed or its result reports a violated safety property (both are listed).",
        epilog="example: trustlab sweep examples/sweeps/fit-noise.toml --jobs 2 --out out/sweeps",
    )
    p.add_argument("spec", type=Path, metavar="SPEC.toml", nargs="?")
    p.add_argument("--params", metavar="EXPERIMENT",
                   help="list the parameters a spec may set for EXPERIMENT, and exit")
    p.add_argument("--jobs", "-j", type=jobs(), default=None, metavar="N",
                   help="points at once. This process runs points from the first; up to N-1 worker "
                   "processes join it only once two timed points show that the rest outlasts a worker's "
                   "start-up, so light points all run here (one output line says how many workers "
                   "started, or why none). With [[plot]] a second process, forked before the points, "
                   "imports matplotlib while they run and draws the report. Default: one per CPU; "
                   "1 runs everything here")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="Dask scheduler address, e.g. tcp://127.0.0.1:8786; 'local' starts a cluster of "
                   "--jobs workers on 127.0.0.1 for this sweep")
    p.add_argument("--out", type=path_arg, default=None, metavar="DIR",
                   help="output directory; results go to DIR/NAME (default out/sweeps), which must be new, "
                   "empty or an earlier output of this sweep")
    p.add_argument("--force", action="store_true",
                   help="write into DIR/NAME even if it holds files that are not an earlier sweep's")
    p.add_argument("--fresh", action="store_true",
                   help="forget this spec's cached points and run them all again")
    p.add_argument("--dry-run", action="store_true", help="list the points and which are cached; run nothing")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    _check_modes(args)
    from trustlab.sweep import load, run_sweep  # here, not at the top: every CLI start imports this module
    from trustlab.sweep.cache import sweep_lock

    if args.params:
        return _print_params(args.params)
    if args.spec is None:
        raise TrustlabError("give a sweep spec (SPEC.toml); examples are in examples/sweeps/")
    if args.jobs < 1:
        raise TrustlabError(f"--jobs {args.jobs}: need at least 1")
    if args.scheduler is not None and not args.scheduler.strip():
        raise TrustlabError("--scheduler: an empty address (expected e.g. tcp://127.0.0.1:8786 or 'local')")
    if args.scheduler is not None and len(args.scheduler) > 300:  # a host name is at most 253 characters
        raise TrustlabError(f"--scheduler {excerpt(args.scheduler)}: not an address")
    spec = load(args.spec)
    check_path(args.out / spec.name, "--out")  # a name too long is one line, in a dry run too
    if args.dry_run:
        from trustlab.sweep.cache import PointCache

        from trustlab.experiments.registry import parse_args

        cache = PointCache(args.out / spec.name / "points", create=False)  # a dry run writes nothing
        invalid = 0
        for point in spec.points():
            state, error = "cached" if cache.get(point.key) is not None else "pending", ""
            if state == "pending":
                try:  # what the run does first with a point's arguments: a point it would fail is shown so
                    parse_args(point.experiment, point.argv)
                except TrustlabError as exc:
                    state, error, invalid = "invalid", f"  ({exc})", invalid + 1
            print(f"{point.key}  {state:7}  {point.experiment} {' '.join(point.argv)}{error}")
        return 1 if invalid else 0
    points = spec.points()  # a spec the run would refuse is refused before its directory is made
    target = claim_dir(args.out / spec.name, "sweep", force=args.force, inputs=[args.spec])
    for name in ("results.json", "results.csv"):  # checked before the points run, not after
        result = target / name
        if result.is_symlink() or (result.exists() and not result.is_file()):
            raise TrustlabError(f"--out {shown(target)}: {name} there is not a regular file; remove it, "
                                "or choose another directory")
    with sweep_lock(target), reported(target):
        outcome = run_sweep(spec, args.out, jobs=args.jobs, scheduler=args.scheduler,
                            progress=not args.no_progress, fresh=args.fresh, points=points)
    total = len({p.key for p in outcome.points})
    violated = outcome.violations
    print(f"{outcome.out_dir}: {total} points, {outcome.cached} from cache, {outcome.executed} run, "
          f"{len(outcome.failed)} failed, {len(violated)} with violations")
    if outcome.parallel:
        print(outcome.parallel)
    for key in outcome.failed:
        first = str(outcome.records[key].get("error", "")).splitlines()
        print(f"  failed {key}: {first[0] if first else ''}")
    for key, lines in violated.items():
        print(f"  violations {key}: {'; '.join(lines)}")
    cached = outcome.out_dir / "points"
    if spec.plots:
        report = outcome.out_dir / "report"
        print(f"results: {outcome.out_dir / 'results.csv'}; report: {report / 'index.html'} "
              f"(every point's record there instead: trustlab report {cached} --out {report})")
    else:
        print(f"results: {outcome.out_dir / 'results.csv'}; report: trustlab report {cached}")
    return 1 if outcome.failed or violated else 0


def _check_modes(args: argparse.Namespace) -> None:
    """Options that do nothing in the chosen mode are errors naming what they need (issue 23)."""
    if args.params and args.spec is not None:
        raise TrustlabError("--params lists an experiment's parameters and runs no spec; give --params or a "
                            "SPEC.toml, not both")
    if args.params:  # --jobs and --out default to None until here, so that "given" is told apart
        for flag, given in (("--out", args.out is not None), ("--jobs", args.jobs is not None),
                            ("--scheduler", args.scheduler), ("--force", args.force), ("--fresh", args.fresh),
                            ("--dry-run", args.dry_run), ("--no-progress", args.no_progress)):
            if given:
                raise TrustlabError(f"{flag}: has no effect with --params (which lists parameters and runs "
                                    "nothing); drop one of them")
    if args.dry_run:
        for flag, given in (("--fresh", args.fresh), ("--force", args.force), ("--scheduler", args.scheduler),
                            ("--jobs", args.jobs is not None), ("--no-progress", args.no_progress)):
            if given:
                raise TrustlabError(f"{flag}: has no effect with --dry-run (which runs and writes nothing)")
    args.out = Path("out/sweeps") if args.out is None else args.out
    args.jobs = min(os.cpu_count() or 1, MAX_JOBS) if args.jobs is None else args.jobs
    try:
        not_a_dir = args.out.exists() and not args.out.is_dir()
    except OSError:
        not_a_dir = False  # check_path names the problem below
    if not_a_dir:
        raise TrustlabError(f"--out {shown(args.out)}: is a file, not a directory")


def _print_params(experiment: str) -> int:
    from trustlab.textable import table
    from trustlab.experiments._params import schema

    rows = [[p["name"], p["type"], p["default"], ", ".join(map(str, p["choices"] or [])), p["help"]]
            for p in schema(experiment)]
    print(f"Parameters of {experiment!r} for [fixed] / [grid] in a sweep spec:")
    print(table(rows, ["name", "type", "default", "choices", "help"]))
    return 0

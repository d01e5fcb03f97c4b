"""Run benchmark modules and record their figures as JSON."""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import platform
import sys
import time
from pathlib import Path

import benchmarks


def main(argv: list[str] | None = None) -> int:
    names = sorted(i.name[len("bench_"):] for i in pkgutil.iter_modules(benchmarks.__path__)
                   if i.name.startswith("bench_"))
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("only", nargs="*", choices=names + [[]], metavar="NAME",
                        help=f"benchmarks to run (default all: {', '.join(names)})")
    parser.add_argument("--quick", action="store_true", help="smaller workloads, for a smoke run")
    parser.add_argument("--out", type=Path, default=Path("out/benchmarks"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    summary = {"machine": platform.platform(), "python": platform.python_version(),
               "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "results": {}}
    for name in args.only or names:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        print(f"== {name}", file=sys.stderr)
        started = time.perf_counter()
        figures = module.run(quick=args.quick)
        figures["bench_wall_s"] = time.perf_counter() - started
        (args.out / f"{name}.json").write_text(json.dumps(figures, indent=2), encoding="utf-8")
        summary["results"][name] = figures
        print(json.dumps(figures, indent=2))
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

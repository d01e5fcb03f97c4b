"""Compare two flagship ``results.json`` files figure by figure.

    .venv/bin/python tools/compare_results.py BEFORE/results.json AFTER/results.json

Speed work must change the host's work only, never a modelled figure. This is
the check behind that promise (issue 15): run the flagship before and after a
change, then compare. Runs are matched by experiment and parameters; every
value must be equal, except what the host measured about itself (wall and CPU
times, the wallet's ``host`` row and the column widths it sets), which differs
from run to run by nature. Exit status 0 when every figure matches, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HOST_MEASURED = {"host_s", "process_wall_s", "wall_s", "meta"}  # run records' own host timings


def _text_figures(text: str) -> list[str]:
    """A run's text without host-timing rows and the ruler lines whose widths they set."""
    return [" ".join(line.split()) for line in text.splitlines()
            if not line.startswith("host ") and set(line) - set("- ")]


def _walk(a: Any, b: Any, path: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key in HOST_MEASURED or (key == "host" and "/data" in path) \
                    or (key == "plots" and path.startswith("wallet")):  # the wallet plots its host row
                continue
            if key not in a or key not in b:
                out.append(f"{path}/{key}: only in {'after' if key in b else 'before'}")
            else:
                _walk(a[key], b[key], f"{path}/{key}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items before, {len(b)} after")
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{path}[{i}]", out)
    elif isinstance(a, str) and isinstance(b, str) and "\n" in a:
        if _text_figures(a) != _text_figures(b):
            out.append(f"{path}: text differs")
    elif a != b:
        out.append(f"{path}: {a!r} before, {b!r} after")


def differences(before: list[dict], after: list[dict]) -> list[str]:
    """Every figure that differs between two flagship record lists, as 'where: what' lines."""
    from trustlab.shared_provenance import expand

    def key(run: dict) -> str:
        return f"{run['experiment']} {json.dumps(run['params'], sort_keys=True)}"

    def full(run: dict) -> dict:  # provenance said once (a table and keys) compares as the strings it stands for
        return dict(run, data=expand(run["data"])) if "data" in run else run
    old, new = {key(r): full(r) for r in before}, {key(r): full(r) for r in after}
    out: list[str] = []
    for k in sorted(set(old) | set(new)):
        if k not in old or k not in new:
            out.append(f"{k}: run only {'after' if k in new else 'before'}")
        else:
            _walk(old[k], new[k], k, out)
    return out


def _load(path: Path) -> list[dict]:
    try:
        runs = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"compare_results: cannot read {path}: {exc}") from None
    if not isinstance(runs, list) or not all(isinstance(r, dict) and "experiment" in r and "params" in r
                                             for r in runs):
        raise SystemExit(f"compare_results: {path} is not a flagship results.json (a list of run records)")
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path, help="results.json of the reference flagship")
    parser.add_argument("after", type=Path, help="results.json of the flagship to check")
    parser.add_argument("--json", action="store_true", help="print the differences as a JSON list")
    args = parser.parse_args(argv)
    found = differences(_load(args.before), _load(args.after))
    if args.json:
        print(json.dumps(found, indent=2))
    else:
        print("\n".join(found) if found else "identical: every figure matches")
        print(f"{len(found)} difference(s)", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

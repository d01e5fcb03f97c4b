"""Issues 14 and 23: the CLI fuzz targets at length, the hostile-input campaign, and the input sizes
the limits promise to handle.

* tests/lab/test_fuzz_cli.py with TRUSTLAB_FUZZ_EXAMPLES (x3 quick, x20 full) and random
  (not derandomized) examples: passed or failed, and the wall time;
* ``fit`` of 100,000 component-column rows (design matrix, bounded least squares, the
  closed-form leave-one-out), in seconds, and rows per second;
* expanding a 100,000-point sweep spec (the limit), in seconds;
* the campaign of benchmarks/fuzz_campaign.py (3,000 cases, 300 quick): tracebacks, hangs,
  processes over 1 GB, wrong exits, user files changed (each must be 0).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _fuzz(scale: int) -> dict[str, Any]:
    env = dict(os.environ, TRUSTLAB_FUZZ_EXAMPLES=str(scale))
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-p", "no:cacheprovider",
                           str(ROOT / "tests" / "lab" / "test_fuzz_cli.py")],
                          env=env, cwd=ROOT, capture_output=True, text=True)
    tail = proc.stdout.strip().splitlines()[-1:] or [""]
    return {"scale": scale, "passed": proc.returncode == 0, "summary": tail[0],
            "wall_s": round(time.perf_counter() - t, 1)}


def _fit(rows: int) -> dict[str, Any]:
    from trustlab.timing.fit import fit
    from trustlab.timing.measurements import read_measurements

    rng = random.Random(1)
    with tempfile.TemporaryDirectory(prefix="bench-fuzz-") as tmp:
        csv = Path(tmp) / "big.csv"
        with csv.open("w") as fh:
            fh.write("ms,ohc,rsa_sign,sha1_byte\n")
            for _ in range(rows):
                a, b = rng.randint(0, 1), rng.randint(0, 4096)
                fh.write(f"{abs(1.5 + 300 * a + 0.01 * b + rng.gauss(0, 0.5)):.4f},1,{a},{b}\n")
        t = time.perf_counter()
        measurements = read_measurements(csv, None, lambda: {"ohc", "rsa_sign", "sha1_byte"})
        read_s = time.perf_counter() - t
        t = time.perf_counter()
        result = fit(measurements, weighting="none")
        fit_s = time.perf_counter() - t
    return {"rows": rows, "read_s": round(read_s, 2), "fit_s": round(fit_s, 2),
            "rows_per_s": round(rows / (read_s + fit_s)), "rsa_sign": round(result.params["rsa_sign"], 3)}


def _sweep_expansion(points: int) -> dict[str, Any]:
    from trustlab.sweep import parse

    side = int(points ** 0.5)
    spec = parse({"experiment": "timing-model", "grid": {"noise": [i / 10_000 for i in range(side)],
                                                         "seed": list(range(points // side))}}, "bench")
    t = time.perf_counter()
    n = len(spec.points())
    return {"points": n, "expand_s": round(time.perf_counter() - t, 2)}


def _campaign(cases: int) -> dict[str, Any]:
    """Issue 23's campaign (benchmarks/fuzz_campaign.py) in a process of its own: it forks per case."""
    proc = subprocess.run([sys.executable, "-m", "benchmarks.fuzz_campaign", "--cases", str(cases)],
                          cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)])))
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        return {"cases": cases, "error": proc.stderr.strip().splitlines()[-1:] or ["no output"]}
    return {k: v for k, v in result.items() if k != "examples"} | {"examples": result.get("examples", {})}


def run(quick: bool = False) -> dict[str, Any]:
    return {"fuzz": _fuzz(3 if quick else 20), "campaign": _campaign(300 if quick else 3000),
            "fit": _fit(20_000 if quick else 100_000), "sweep": _sweep_expansion(10_000 if quick else 100_000)}


if __name__ == "__main__":
    print(json.dumps(run("--quick" in sys.argv), indent=2))

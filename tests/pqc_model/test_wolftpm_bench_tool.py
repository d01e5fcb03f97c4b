"""tools/wolftpm_examples.py --bench: wolfTPM's bench lines read, runs pooled, the published figure beside.

The line format is wolfTPM examples/bench/bench.c's (bench_asym_done); the lines below are the ML-DSA /
ML-KEM rows of wolfTPM's published SEALSQ QVault run (README.md, reference values only).
"""

import runpy
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
PUBLISHED_RUN = """\
ML-DSA    65 key gen        8 ops took 16.357 sec, avg 2044.679 ms,  0.489 ops/sec
ML-DSA    65 sign           2 ops took 1.162 sec, avg 581.025 ms,   1.721 ops/sec
ML-KEM   768 decap          3 ops took 1.276 sec, avg 425.471 ms,   2.350 ops/sec
"""


@pytest.fixture(scope="module")
def tool():
    sys.path.insert(0, str(TOOLS))
    try:
        yield runpy.run_path(str(TOOLS / "wolftpm_examples.py"))
    finally:
        sys.path.remove(str(TOOLS))


def test_runs_are_pooled_as_total_time_over_total_operations(tool, monkeypatch):
    seeds = []

    def once(build, profile, seed, maxdur_ms):
        seeds.append(seed)
        return [(" ".join(m["op"].split()), int(m["n"]), float(m["sec"]))
                for m in tool["BENCH_LINE"].finditer(PUBLISHED_RUN)]

    monkeypatch.setitem(tool["run_bench"].__globals__, "bench_once", once)
    rows = {r.operation: r for r in tool["run_bench"](Path("."), "sealsq-qvault-pqc-tpm-wolftpm", runs=3, first_seed=5)}
    assert seeds == [5, 6, 7]  # every run draws anew: serve's default seed would repeat the same draws
    sign = rows["ML-DSA 65 sign"]
    assert sign.ops == 6 and sign.avg_ms == pytest.approx(581.0, abs=0.1)
    assert sign.published_ms == 581.0 and rows["ML-KEM 768 decap"].published_ms == 425.5
    assert rows["ML-DSA 65 key gen"].published_ms == 2044.7

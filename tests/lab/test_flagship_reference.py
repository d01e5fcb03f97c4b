"""Speed work must not move a figure (issue 15): a representative subset of the flagship's runs
against a stored reference of their results.

The reference (``data/flagship_reference.json``) holds these runs' figures; each speed change
was checked against it (and against a whole flagship run of the code without the change: every
figure equal, only the wallet's measured host wall times differ, run to run). Seeds fix every
draw, so the figures are reproducible; wall-clock measurements are left out. It is a regression
check of our own outputs, not a paper figure: a change that *means* to move a figure (a
recalibrated profile, a corrected model, the engine rework that last did) regenerates it with

    PYTHONPATH=src python tests/lab/test_flagship_reference.py

and says so in its commit.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

REFERENCE = Path(__file__).parent / "data" / "flagship_reference.json"
# (experiment, argv): the paths the speed work touched - host keys (oracle, timing model,
# counters/wallet provisioning), TPM_ExecuteHashTree and the runner (counters, wallet), the
# card meter (hbs)
RUNS = [
    ("oracle", ["--profile", "infineon-2010", "--parties", "3"]),
    ("counters", ["--scheme", "both", "--profile", "atmel-counters-2010", "--counters", "2,16",
                  "--workload", "roundrobin", "--op", "increment", "--deterministic"]),
    ("counters", ["--scheme", "both", "--profile", "atmel-counters-2010", "--counters", "1024",
                  "--workload", "zipf", "--op", "read", "--requests", "120", "--seed", "1"]),
    ("hbs", ["--profile", "jcop-2018", "--h", "20", "--d", "4", "--check"]),
    ("timing-model", ["--noise", "0.02", "--seed", "1"]),
    ("wallet", ["--profile", "atmel-counters-2010", "--merchants", "4", "--purchases", "12",
                "--workload", "zipf", "--scheme", "hashtree", "--cheat-rate", "0.2", "--seed", "1"]),
]
VOLATILE = ("wall", "host_s", "host")  # measured on the host, not modelled: differ run to run
REL = 1e-9  # float rounding only (aggregated charges sum in another order on other platforms)


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items()
                if not any(k == v_ or k.startswith(v_ + "_") or k.endswith("_" + v_) for v_ in VOLATILE)}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _figures(name: str, argv: list[str]) -> Any:
    from trustlab.experiments.registry import run_argv

    return _strip(json.loads(json.dumps(run_argv(name, argv).to_record()["data"])))


def _same(got: Any, want: Any, where: str) -> list[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        if got.keys() != want.keys():
            return [f"{where}: keys {sorted(set(got) ^ set(want))} differ"]
        return [m for k in want for m in _same(got[k], want[k], f"{where}/{k}")]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{where}: {len(got)} items, reference {len(want)}"]
        return [m for i, (g, w) in enumerate(zip(got, want)) for m in _same(g, w, f"{where}[{i}]")]
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        if got == want or (math.isnan(got) and math.isnan(want)) or math.isclose(got, want, rel_tol=REL):
            return []
    elif got == want and type(got) is type(want):
        return []
    return [f"{where}: {got!r}, reference {want!r}"]


@pytest.mark.parametrize("name,argv", RUNS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(RUNS)])
def test_figures_equal_the_reference(name: str, argv: list[str]) -> None:
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    key = " ".join([name, *argv])
    assert key in reference, f"no reference for {key!r}: regenerate (see the module docstring)"
    problems = _same(_figures(name, argv), reference[key], name)
    assert not problems, "\n".join(problems[:20])


if __name__ == "__main__":
    REFERENCE.parent.mkdir(exist_ok=True)
    out = {" ".join([n, *a]): _figures(n, a) for n, a in RUNS}
    REFERENCE.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {REFERENCE} ({len(out)} runs)", file=sys.stderr)

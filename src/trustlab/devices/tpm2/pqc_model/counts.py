"""The shipped operation counts (``data/op_counts.json``): per algorithm and operation, every run's units.

Made by ``tools/build_pqc_counts.py`` from the counting implementations. A
run is one operation on fresh random inputs; ML-DSA signing keeps 1000 runs
so that its rejection-loop distribution survives into the pricing.
"""

from __future__ import annotations

import functools
import json
import random
from importlib import resources

from trustlab.devices.tpm2.pqc_model.params import check_operation
from trustlab.errors import TrustlabError


@functools.cache
def _table() -> dict:
    try:
        text = (resources.files("trustlab.devices.tpm2.pqc_model") / "data" / "op_counts.json").read_text("utf-8")
    except FileNotFoundError:
        raise TrustlabError("pqc_model/data/op_counts.json is missing: run tools/build_pqc_counts.py") from None
    return json.loads(text)


def message_bytes() -> int:
    """The ML-DSA message length the shipped counts were taken with."""
    return int(_table()["message_bytes"])


@functools.cache
def runs(algorithm: str, operation: str) -> tuple[dict[str, int], ...]:
    """Every counted run of ``operation``: unit -> count."""
    check_operation(algorithm, operation)
    try:
        entry = _table()["counts"][algorithm][operation]
    except KeyError:
        raise TrustlabError(f"no shipped counts for {algorithm} {operation}: rerun tools/build_pqc_counts.py") from None
    return tuple(dict(zip(entry["units"], row)) for row in entry["runs"])


@functools.cache
def mean(algorithm: str, operation: str) -> dict[str, float]:
    """Mean count of every unit over the shipped runs."""
    rs = runs(algorithm, operation)
    units = sorted({u for r in rs for u in r})
    return {u: sum(r.get(u, 0) for r in rs) / len(rs) for u in units}


def draw(algorithm: str, operation: str, rng: random.Random) -> dict[str, int]:
    """One run's counts, drawn uniformly from the shipped runs (the empirical distribution)."""
    rs = runs(algorithm, operation)
    return rs[rng.randrange(len(rs))]

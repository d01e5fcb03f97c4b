"""Sweep specifications: which experiment, which parameters, which grid.

A spec is a TOML file::

    name = "fit-noise"                  # optional; default: the file's stem
    experiment = "timing-model"         # or a list: a grid dimension of its own
    [fixed]                             # parameters of every point
    repeats = 5
    [grid]                              # cartesian product, in the order written
    noise = [0.0, 0.01, 0.05]
    seed = [0, 1, 2]
    [[plot]]                            # optional figures of the sweep (trustlab.sweep.summary)
    x = "noise"
    y = "summary.fit_max_rel_error_rsa"

Parameter names are the experiment's own (``trustlab run NAME --help``); a
value that is itself a list (``profile = [["a", "b"], ["c"]]``) is passed whole
to a repeatable or multi-value option. Every point is checked against the
experiment's declaration before anything runs, so a typo fails at once.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from trustlab import __version__
from trustlab import limits
from trustlab.errors import TrustlabError
from trustlab.experiments._params import fragment, parameters
from trustlab.experiments.registry import get, parse_args
from trustlab.sweep.summary import check_plots


@dataclass(frozen=True)
class Point:
    """One run of a sweep: an experiment, its parameters, and the argv they become."""

    experiment: str
    params: dict[str, Any]
    argv: tuple[str, ...]
    key: str  # identifies the run for the cache: same experiment + argv + trustlab version


@dataclass
class SweepSpec:
    name: str
    experiments: list[str]
    fixed: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    source: str = ""
    plots: list[dict[str, Any]] = field(default_factory=list)  # [[plot]]: see trustlab.sweep.summary

    def count(self) -> int:
        return len(self.experiments) * math.prod(len(v) for v in self.grid.values())

    def points(self) -> list[Point]:
        """Every point, in spec order; refused beyond limits.MAX_SWEEP_POINTS.

        Each experiment's parser checks every distinct value once (the first point, then
        each grid value in turn with the other dimensions at their first value); a point's
        argv is the join of those per-parameter fragments, so 100k points take seconds.
        """
        where = self.source or self.name
        total = self.count()
        if total > limits.MAX_SWEEP_POINTS:
            raise TrustlabError(f"{where}: {total} points; the limit is {limits.MAX_SWEEP_POINTS} "
                                "(split the grid into several sweeps)")
        dims = list(self.grid)
        out = []
        for experiment in self.experiments:
            try:
                actions = parameters(experiment)
                fixed_pos, fixed_opts = [], []
                for key, value in self.fixed.items():
                    pos, opts = fragment(experiment, actions, key, value)
                    fixed_pos += pos
                    fixed_opts += opts
                frags = [[fragment(experiment, actions, d, v) for v in self.grid[d]] for d in dims]
                _refuse_repeats(dims, frags, self.grid)
                _validate(experiment, fixed_pos, fixed_opts, frags)
            except TrustlabError as exc:
                raise TrustlabError(f"{where}: {exc}") from None
            for combo in itertools.product(*(range(len(self.grid[d])) for d in dims)):
                argv = _join(fixed_pos, fixed_opts, frags, combo)
                params = dict(self.fixed)
                params.update((d, self.grid[d][j]) for d, j in zip(dims, combo))
                out.append(Point(experiment, params, argv, point_key(experiment, argv)))
        return out


def _join(fixed_pos: list[str], fixed_opts: list[str], frags: list[list[tuple[list[str], list[str]]]],
          combo: Sequence[int]) -> tuple[str, ...]:
    pos, opts = list(fixed_pos), list(fixed_opts)
    for i, j in enumerate(combo):
        pos += frags[i][j][0]
        opts += frags[i][j][1]
    return tuple(pos + opts)


def _refuse_repeats(dims: list[str], frags: list[list[tuple[list[str], list[str]]]],
                    grid: dict[str, list[Any]]) -> None:
    """A grid value given twice (or two that make the same arguments, 1 and 1.0) would be one run
    listed as two points: refused, naming the axis and the value."""
    for d, values in zip(dims, frags):
        seen: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}
        for j, (pos, opts) in enumerate(values):
            first = seen.setdefault((tuple(pos), tuple(opts)), j)
            if first != j:
                same = "" if grid[d][first] == grid[d][j] else f" (the same run as {_shown(grid[d][first])})"
                raise TrustlabError(f"grid.{d}: the value {_shown(grid[d][j])} is listed twice{same}; "
                                    "each value is one run, give it once")


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _validate(experiment: str, fixed_pos: list[str], fixed_opts: list[str],
              frags: list[list[tuple[list[str], list[str]]]]) -> None:
    """Parse the first point, then every other grid value once (other dimensions at their first)."""
    first = [0] * len(frags)
    parse_args(experiment, _join(fixed_pos, fixed_opts, frags, first))
    for i, values in enumerate(frags):
        for j in range(1, len(values)):
            combo = list(first)
            combo[i] = j
            parse_args(experiment, _join(fixed_pos, fixed_opts, frags, combo))


def point_key(experiment: str, argv: tuple[str, ...] | list[str]) -> str:
    doc = json.dumps({"experiment": experiment, "argv": list(argv), "trustlab": __version__})
    return hashlib.sha256(doc.encode()).hexdigest()[:20]


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_TOP = {"name", "experiment", "fixed", "grid", "description", "plot"}


def parse(doc: dict[str, Any], source: str, default_name: str = "sweep") -> SweepSpec:
    unknown = sorted(set(doc) - _TOP)
    if unknown:
        raise TrustlabError(f"{source}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_TOP))})")
    exp = doc.get("experiment")
    experiments = [exp] if isinstance(exp, str) else exp
    if not experiments or not isinstance(experiments, list) or not all(isinstance(e, str) for e in experiments):
        raise TrustlabError(f"{source}: 'experiment' must name a registered experiment (or a list of them)")
    repeated = sorted({e for e in experiments if experiments.count(e) > 1})
    if repeated:
        raise TrustlabError(f"{source}: 'experiment' lists {repeated[0]!r} twice; give each experiment once")
    for e in experiments:
        try:
            get(e)
        except TrustlabError as exc:
            raise TrustlabError(f"{source}: {exc}") from None
    fixed = doc.get("fixed", {})
    grid = doc.get("grid", {})
    if not isinstance(fixed, dict):
        raise TrustlabError(f"{source}: [fixed] must be a table of parameter = value")
    if not isinstance(grid, dict):
        raise TrustlabError(f"{source}: [grid] must be a table of parameter = [values]")
    for k, v in grid.items():
        if not isinstance(v, list) or not v:
            raise TrustlabError(f"{source}: grid.{k} must be a non-empty list of values")
    both = sorted(set(fixed) & set(grid))
    if both:
        raise TrustlabError(f"{source}: parameter(s) {', '.join(both)} both fixed and in the grid")
    name = doc.get("name", default_name)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise TrustlabError(f"{source}: 'name' = {str(name)[:40]!r} must be a plain name (it becomes a directory): "
                            "letters, digits, '.', '_', '-', starting with a letter or digit, at most 100")
    plots = check_plots(doc.get("plot"), grid, source)
    return SweepSpec(name=name, experiments=experiments, fixed=dict(fixed), grid=dict(grid), source=source,
                     plots=plots)


def load(path: Path) -> SweepSpec:
    doc = limits.parse_toml(limits.read_text(path, "sweep spec"), str(path))
    return parse(doc, str(path), default_name=path.stem)

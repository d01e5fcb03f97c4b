"""A sweep's dry run accepts a point exactly when the run's validation does, with the run's own words.

The points (``dry_run_points``) span every shipped experiment's parameters, valid and invalid. Each is
given to ``trustlab sweep --dry-run`` as a one-point spec; the run's validation is what ``trustlab run``
does before any work (``registry.parse_args``: argparse, then the experiment's ``check``). On a sample the
experiment's run itself - called directly, without the registry's check before it - refuses the points the
dry run refused, in the same words, and the points it accepted run to a result: each experiment's run
starts with the same function as its check, so the two cannot drift apart again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trustlab.cli import main
from trustlab.errors import TrustlabError
from trustlab.experiments._params import argv_from_params
from trustlab.experiments.registry import experiment_parser, get, parse_args, run_argv

from .dry_run_points import VARIATIONS, points

POINTS = points()


def _spec(path: Path, experiment: str, params: dict) -> Path:
    lines = [f'experiment = "{experiment}"', "[fixed]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in params.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def _dry_run(tmp_path: Path, capsys, experiment: str, params: dict) -> str | None:
    """None if ``trustlab sweep --dry-run`` accepts the one-point spec, else its one-line error."""
    spec = _spec(tmp_path / "point.toml", experiment, params)
    code = main(["sweep", str(spec), "--dry-run", "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    if code == 0:
        assert out.split()[1] == "pending", out
        return None
    if code == 1:  # listed as invalid: "KEY  invalid  EXPERIMENT ARGV  (error)"
        line = out.strip()
        assert "\n" not in line and line.split()[1] == "invalid", out
        return line.rsplit("  (", 1)[1][:-1]
    assert code == 2 and err.count("\n") == 1, (code, err)
    return err.strip().split(f"{spec}: ", 1)[1]


def _validation(experiment: str, argv: list[str]) -> str | None:
    try:
        parse_args(experiment, argv)
    except TrustlabError as exc:
        return str(exc)
    return None


def test_the_points_cover_every_experiment_both_ways():
    assert set(VARIATIONS) == {n for n in VARIATIONS if get(n)}  # every name is a registered experiment
    assert len(POINTS) >= 200
    refused = {e for e, params in POINTS if _validation(e, argv_from_params(e, params))}
    assert refused == set(VARIATIONS)  # each experiment has points refused, and (below) accepted


def test_dry_run_accepts_exactly_what_the_runs_validation_accepts(tmp_path, capsys):
    disagree, accepted = [], 0
    for experiment, params in POINTS:
        argv = argv_from_params(experiment, params)
        dry = _dry_run(tmp_path, capsys, experiment, params)
        run = _validation(experiment, argv)
        if dry != run:
            disagree.append(f"{experiment} {' '.join(argv)}: dry run {dry!r}, run {run!r}")
        if run is not None and ("\n" in run or len(run) > 600 or not run.startswith(f"trustlab run {experiment}: ")):
            disagree.append(f"{experiment} {' '.join(argv)}: not one readable line naming the experiment: {run!r}")
        accepted += run is None
    assert not disagree, "\n".join(disagree)
    assert 0.3 < accepted / len(POINTS) < 0.7


# the run, not only its check: the refused points of every experiment, and accepted points that run in
# well under a second each (those that start swtpm - ftpm-vs-dtpm, counters --tpm12 served/libtpms - and the
# slower analyses are left to their own tests)
QUICK = ("ae", "counters", "ftpm-crash", "oracle", "timing-model", "wallet", "workloads", "validate")


@pytest.mark.parametrize("experiment", sorted(VARIATIONS))
def test_the_run_itself_refuses_what_the_dry_run_refuses(experiment):
    """The experiment's own ``run`` (without the registry's check before it) refuses each point the dry run
    refused, with the same message: its run starts with the function its check is."""
    spec, parser = get(experiment), experiment_parser(experiment)
    for name, params in POINTS:
        if name != experiment:
            continue
        argv = argv_from_params(name, params)
        said = _validation(name, argv)
        if said is None:
            continue
        try:
            args = parser.parse_args(argv)  # argparse's own refusals are the dry run's too (same parser)
        except TrustlabError as exc:
            assert str(exc) == said
            continue
        args.experiment = name
        with pytest.raises(TrustlabError) as refused:
            spec.run(args)
        assert said == f"trustlab run {name}: {refused.value}" or said == str(refused.value), (argv, said)


def test_the_real_run_runs_what_the_dry_run_accepts():
    ran = 0
    for i, (experiment, params) in enumerate(POINTS):
        argv = argv_from_params(experiment, params)
        if experiment not in QUICK or "tpm12" in params or i % 2 or _validation(experiment, argv) is not None:
            continue
        result = run_argv(experiment, argv)
        assert result.experiment == experiment
        ran += 1
    assert ran >= 25

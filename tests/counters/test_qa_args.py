"""QA regressions: empty or meaningless selections are one-line errors (exit 2), not silent runs."""

from __future__ import annotations

import pytest

from trustlab.cli import main
from trustlab.experiments.registry import run_argv


@pytest.mark.parametrize("argv, message", [
    (["--profile", ","], "--profile: empty list"),
    (["--profile", "atmel-counters-2010,,stm-counters-2010"], "empty item in the list"),
    (["--counters", "2,,3"], "--counters '2,,3': empty item in the list"),
    (["--counters", ","], "--counters: empty list"),
    (["--counters", "2,x"], "expected comma-separated integers"),
    (["--scheme", "log", "--attest-every", "3"], "--attest-every 3: applies to the hash-tree scheme only"),
    (["--scheme", "log-tpm2", "--attest-every", "2"], "--attest-every 2: applies to the hash-tree scheme only"),
    (["--seed", "-1", "--counters", "2", "--workload", "zipf"], "--seed -1: must not be negative"),
    (["--counters", "100000000000000000000"], "at most 1048576 counters"),
    (["--counters", "2", "--requests", "100000000000000000000"], "--requests 100000000000000000000: at most"),
])
def test_bad_selection_is_one_line_error(argv, message, capsys):
    assert main(["run", "counters", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("trustlab: error: ") and err.count("\n") == 1, err
    assert message in err and "Traceback" not in err


def test_attest_every_still_applies_to_hashtree_in_both():
    r = run_argv("counters", ["--scheme", "both", "--profile", "stm-counters-2010", "--counters", "4",
                              "--attest-every", "2", "--deterministic"])
    assert {row["scheme"] for row in r.data} == {"log", "hashtree"}


def test_every_argument_has_help():
    import argparse

    from trustlab.experiments.registry import get

    parser = argparse.ArgumentParser()
    get("counters").add_arguments(parser)
    assert [a.dest for a in parser._actions if a.dest != "help" and not a.help] == []

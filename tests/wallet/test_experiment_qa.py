"""QA regressions for ``run wallet``: honest accounting, '-' for untimed stats, flag-named errors, help."""

from __future__ import annotations

import argparse
import json

import pytest

from trustlab.cli import main
from trustlab.experiments.registry import get, run_argv


def test_no_accepted_purchase_has_no_timing_and_no_phantom_double_spend():
    r = run_argv("wallet", ["--credit", "0", "--purchases", "5", "--deterministic"])
    d = r.data
    assert d["accepted"] == 0 and d["timed_purchases"] == 0
    for part in ("tpm", "verification", "host"):
        assert set(d["per_purchase_s"][part].values()) == {None}
    # a cheat refused for lack of balance never tested the double-spend defence
    ds = d["double_spends"]
    assert ds["attempted"] == ds["caught"] == ds["undetected"] == 0
    assert ds["not_reached"] == sum(1 for s in d["sales"] if s["cheat"])
    table_rows = [line for line in r.text.splitlines() if line.split()[:1] in (["tpm"], ["host"])]
    assert table_rows and all(line.split()[1:] == ["-"] * 5 for line in table_rows)
    assert " 0.0 " not in r.text
    assert r.plots == []
    json.dumps(d)


def test_accounting_adds_up_over_cheats():
    for ordering in ("fixed", "paper"):
        r = run_argv("wallet", ["--purchases", "40", "--cheat-rate", "0.5", "--credit", "600", "--seed", "3",
                                "--ordering", ordering, "--deterministic"])
        ds, sales = r.data["double_spends"], r.data["sales"]
        assert ds["attempted"] == ds["caught"] + ds["undetected"]
        skips = sum(s["cheat"] == "skip-increment" for s in sales)
        replays = sum(s["cheat"] == "replay-old-token" for s in sales)
        # every skip is resolved exactly once: caught, refused early, or accepted (then replayed or pending)
        accepted_skips = sum(s["cheat"] == "skip-increment" and s["accepted"] for s in sales)
        assert accepted_skips == replays + ds["pending"]
        # each double spend starts with one skip; it ends caught/undetected, refused early, or still pending
        assert skips == ds["attempted"] + ds["not_reached"] + ds["pending"]
        if ordering == "fixed":
            assert ds["undetected"] == 0


@pytest.mark.parametrize("argv, message", [
    (["--credit", "-10"], "--credit -10: must not be negative"),
    (["--seed", "-1"], "--seed -1: must not be negative"),
    (["--purchases", "0"], "--purchases 0: must be between 1 and"),
    (["--merchants", "100000000000000000000"], "--merchants 100000000000000000000: must be between 1 and"),
])
def test_bad_input_names_the_flag(argv, message, capsys):
    assert main(["run", "wallet", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"trustlab: error: {message}{err.split(message, 1)[1]}" and err.count("\n") == 1
    assert "Traceback" not in err


def test_every_argument_has_help():
    parser = argparse.ArgumentParser()
    get("wallet").add_arguments(parser)
    missing = [a.dest for a in parser._actions if a.dest != "help" and not a.help]
    assert missing == []

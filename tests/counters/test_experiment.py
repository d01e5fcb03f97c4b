"""`trustlab run counters` / `wallet`: JSON shape, paper-layout text, clear errors."""

import json
import pytest

from trustlab.experiments.registry import get, run_argv

ROW_KEYS = {"scheme", "op", "profile", "counters", "total_s", "per_op_s", "max_gap", "model_s"}


def test_counters_round_robin_rows_and_tables():
    r = run_argv("counters", ["--scheme", "both", "--profile", "winbond-counters-2010", "--counters", "2,4",
                              "--workload", "roundrobin", "--op", "increment", "--deterministic"])
    assert len(r.data) == 4
    for row in r.data:
        assert ROW_KEYS <= set(row)
        assert set(row["per_op_s"]) == {"min", "max", "avg", "median", "sd"}
        assert row["total_s"] == pytest.approx(row["model_s"], rel=1e-12)
    assert "Table III/IV layout" in r.text and "Table VII layout" in r.text
    json.dumps(r.data)


def test_counters_zipf_table_ix_and_references():
    r = run_argv("counters", ["--scheme", "log", "--profile", "atmel-counters-2010", "--counters", "64",
                              "--workload", "zipf", "--op", "read", "--requests", "60", "--seed", "2"])
    (row,) = r.data
    assert row["by_gap"] and row["max_gap"] == max(b["max_gap"] for b in row["by_gap"])
    assert "Table IX layout" in r.text
    assert r.plots


def test_counters_references_hold_paper_model_values():
    r = run_argv("counters", ["--scheme", "log", "--profile", "atmel-counters-2010", "--counters", "2",
                              "--op", "read", "--deterministic"])
    (ref,) = r.references
    assert ref.reference == 1.801 and ref.model == pytest.approx(r.data[0]["model_s"])


def test_flagship_lists_parse():
    for name in ("counters", "wallet"):
        spec = get(name)
        assert spec.flagship
        from trustlab.experiments.registry import parse_args
        for argv in spec.flagship:
            parse_args(name, argv)


def test_wallet_experiment_counts_double_spends():
    r = run_argv("wallet", ["--merchants", "3", "--purchases", "12", "--cheat-rate", "0.5", "--seed", "4",
                            "--ordering", "paper", "--deterministic"])
    ds = r.data["double_spends"]
    assert ds["attempted"] >= 1 and ds["undetected"] == ds["attempted"] and ds["caught"] == 0
    r = run_argv("wallet", ["--merchants", "3", "--purchases", "12", "--cheat-rate", "0.5", "--seed", "4"])
    ds = r.data["double_spends"]
    assert ds["attempted"] >= 1 and ds["caught"] == ds["attempted"] and ds["undetected"] == 0
    assert set(r.data["per_purchase_s"]) == {"tpm", "verification", "host"}


@pytest.mark.parametrize("argv,message", [
    (["run", "counters", "--profile", "atmel-2010", "--counters", "2"], "lacks component"),
    (["run", "counters", "--profile", "no-such-profile"], "no-such-profile"),
    (["run", "counters", "--counters", "0"], "positive integers"),
    (["run", "counters", "--requests", "0"], "--requests 0"),
    (["run", "wallet", "--scheme", "log", "--ordering", "arithmetic"], "needs --scheme hashtree"),
    (["run", "counters", "--trace", "/nonexistent/trace", "--counters", "2"], "cannot read trace"),
])
def test_cli_errors_are_one_line(argv, message, capsys):
    from trustlab.cli import main

    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own usage errors
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if "error" in line]) == 1


def test_counters_trace_replay_and_mix(tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_text("increment 1\nincrement 2\nread 1\nincrement 1\nread 2\n")
    r = run_argv("counters", ["--scheme", "log", "--profile", "stm-counters-2010", "--counters", "4",
                              "--trace", str(trace), "--op", "read", "--deterministic"])
    (row,) = r.data
    assert row["requests"] == 2 and row["workload"] == "trace" and row["max_gap"] == 1
    r = run_argv("counters", ["--scheme", "hashtree", "--profile", "stm-counters-2010", "--counters", "8",
                              "--workload", "uniform", "--read-fraction", "0.5", "--requests", "20"])
    assert {row["op"] for row in r.data} == {"read", "increment"}
    assert sum(row["requests"] for row in r.data) == 20

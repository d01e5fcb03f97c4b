"""The timing model's validation experiment: Table II model column and the fit round trip."""

from __future__ import annotations

import json

import pytest

from trustlab.cli import main
from trustlab.experiments.registry import run_argv

# Table II of Gunupudi & Tate (2010), the model column (ms), as printed: a reference, not code.
PAPER_TABLE_II = {
    ("TPM_Seal", "infineon-2010"): 180.8, ("TPM_Sign", "atmel-2010"): 788.8,
    ("TPM_ChangeAuth", "stm-2010"): 1035.7, ("TPM_UnBind", "winbond-2010"): 505.3,
    ("TPM_CreateMigrationBlob", "infineon-2010"): 486.9,
}


@pytest.fixture(scope="module")
def full():
    return run_argv("timing-model", [])


def test_table_ii_model_column_within_rounding_of_paper(full):
    result = full
    rows = {(r["command"], r["profile"]): r for r in result.data["table_ii"]}
    assert len(rows) == 32  # four vendors x eight commands
    for key, paper in PAPER_TABLE_II.items():
        assert rows[key]["model_ms"] == pytest.approx(paper, rel=0.01)
    # every reference is compared with what the formulas computed, and the error is small
    assert len(result.references) == 32
    for ref in result.references:
        assert ref.model is not None and abs(ref.error) / ref.reference < 0.01, ref


def test_engine_simulation_equals_model_on_deterministic_profiles(full):
    """The engine (dispatcher + primitives) and the formulas are independent; they must agree."""
    for row in full.data["table_ii"]:
        assert row["simulated_ms"] == pytest.approx(row["model_ms"], rel=1e-12), row["command"]
    assert all(ref.simulated is not None for ref in full.references)
    skipped = run_argv("timing-model", ["--no-simulate", "--profile", "stm-2010"])
    assert all(r["simulated_ms"] is None for r in skipped.data["table_ii"])


def test_no_withheld_columns_in_output(full):
    record = full.to_record()
    text = json.dumps(record).lower()
    assert "actual" not in text and "measured_ms" not in text


def test_fit_round_trip_exact_without_noise():
    data = run_argv("timing-model", ["--profile", "stm-2010", "--profile", "infineon-2010",
                                     "--no-simulate"]).data
    for f in data["fit_round_trip"]:
        for c in f["components"]:
            assert c["fitted"] == pytest.approx(c["true"], rel=1e-6, abs=1e-12)


def test_fit_round_trip_with_noise_is_seeded_and_pins_rsa_costs():
    a = run_argv("timing-model", ["--noise", "0.02", "--seed", "3", "--no-simulate"]).data
    b = run_argv("timing-model", ["--noise", "0.02", "--seed", "3", "--no-simulate"]).data
    assert a == b
    for f in a["fit_round_trip"]:
        rsa = [c for c in f["components"] if c["component"].startswith("rsa_")]
        assert all(abs(c["rel_error"]) < 0.2 for c in rsa)


def test_meta_records_provenance_versions_and_tools():
    result = run_argv("timing-model", ["--profile", "infineon-2010", "--no-simulate"])
    meta = result.meta
    assert meta["profile_versions"]["infineon-2010"]["version"] == "1"
    assert "Gunupudi" in meta["profile_versions"]["infineon-2010"]["provenance"]["source"]
    assert meta["trustlab_version"] and meta["tools"]["cryptography"]
    assert meta["wall_s"] >= 0


@pytest.mark.parametrize("argv, needle", [
    (["--noise", "2"], "--noise"),
    (["--profile", "no-such-chip"], "no-such-chip"),
    (["--command", "TPM_Frobnicate"], "TPM_Frobnicate"),
    (["--repeats", "0"], "--repeats"),
])
def test_bad_parameters_are_one_line_errors(argv, needle, capsys):
    assert main(["run", "timing-model", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err and "Traceback" not in err


def test_cli_json_is_data(capsys, tmp_path):
    save = tmp_path / "r.json"
    assert main(["run", "timing-model", "--profile", "atmel-2010", "--json", "--save", str(save),
                 "--no-simulate"]) == 0
    printed = json.loads(capsys.readouterr().out)
    record = json.loads(save.read_text())
    assert printed == json.loads(json.dumps(record["data"]))
    assert record["references"][0]["error"] is not None


def test_table_ii_fit_plain_and_relative_weights():
    """Both weightings are reported; relative weights hold every Table II command's relative error down."""
    from trustlab.experiments.registry import get

    spec = get("timing-model")
    parser = __import__("argparse").ArgumentParser()
    spec.add_arguments(parser)
    res = spec.run(parser.parse_args(["--noise", "0.02", "--seed", "1", "--no-simulate", "--profile", "stm-2010",
                                      "--profile", "winbond-2010"]))
    fits = {(w["profile"], w["weighting"]): w for w in res.data["table_ii_fit"]}
    assert set(fits) == {(p, w) for p in ("stm-2010", "winbond-2010") for w in ("none", "relative")}
    for p in ("stm-2010", "winbond-2010"):
        assert fits[(p, "relative")]["table_ii_max_rel_error"] <= fits[(p, "none")]["table_ii_max_rel_error"]
    refs = [r for r in res.references if "16%" in r.source]
    assert len(refs) == 2 and all(r.reference == 16.0 for r in refs)
    assert "relative (1/ms^2)" in res.text

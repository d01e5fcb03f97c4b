"""The CLI's promises: JSON for scripts, one-line errors and non-zero exits for bad input."""

import json
import subprocess
import sys

import pytest

from trustlab.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_profiles_list_json(capsys):
    code, out, _ = run(capsys, "profiles", "list", "--json")
    assert code == 0
    assert "infineon-2010" in {p["name"] for p in json.loads(out)}


def test_estimate_json_shape(capsys):
    code, out, _ = run(capsys, "estimate", "--profile", "winbond-2010", "TPM_Sign", "--json")
    (row,) = json.loads(out)
    assert code == 0 and set(row) >= {"command", "profile", "ms", "breakdown"}
    assert row["command"] == "TPM_Sign" and row["breakdown"]["rsa_sign"] == 492.0


def test_estimate_accepts_a_pro_file(tmp_path, capsys):
    pro = tmp_path / "chip.pro"
    pro.write_text("overconst: 1\noverinrate: 0\noveroutrate: 0\ndecrypt: 2 encrypt: 3 sign: 4\nhashrate: 0\n")
    code, out, _ = run(capsys, "estimate", "--profile", str(pro), "TPM_Sign", "--json")
    assert code == 0 and json.loads(out)[0]["ms"] == 5.0


def test_import_then_export_round_trip(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path / "home"))
    pro = tmp_path / "chip.pro"
    pro.write_text("# my chip\noverconst: 1.5\noverinrate: 0.01\noveroutrate: 0.02\n"
                   "decrypt: 200 encrypt: 30 sign: 210\nhashrate: 0.005\n")
    assert run(capsys, "profiles", "import", str(pro), "--name", "mychip")[0] == 0
    code, out, _ = run(capsys, "profiles", "export", "mychip", "--format", "pro")
    assert code == 0 and "decrypt: 200.0" in out and "overconst: 1.5" in out


def test_fit_cli_json(tmp_path, capsys):
    csv_path = tmp_path / "m.csv"
    csv_path.write_text("ms,ohc,rsa_sign\n10,1,0\n30,1,1\n31,1,1\n")
    out_profile = tmp_path / "fitted.toml"
    code, out, _ = run(capsys, "fit", str(csv_path), "--json", "--out", str(out_profile))
    data = json.loads(out)
    assert code == 0
    assert set(data) >= {"params", "stderr", "rows", "max_abs_residual_ms", "max_rel_residual"}
    assert set(data["rows"][0]) == {"command", "measured_ms", "fitted_ms", "residual_ms", "loo_ms"}
    assert data["params"]["ohc"] == pytest.approx(10.0) and out_profile.exists()


@pytest.mark.parametrize("argv,needle", [
    (["estimate", "--profile", "nope", "TPM_Seal"], "unknown profile 'nope'"),
    (["estimate", "--profile", "atmel-2010", "TPM_Frob"], "unknown command 'TPM_Frob'"),
    (["estimate", "TPM_Seal"], "give --profile"),
    (["profiles", "show", "/nonexistent/x.toml"], "no such profile file"),
    (["fit", "/nonexistent.csv"], "cannot read measurements"),
    (["fit", "m.csv", "--fix", "ohc"], "expected COMPONENT=NUMBER"),
])
def test_errors_are_one_line_with_nonzero_exit(capsys, tmp_path, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.csv").write_text("ms,ohc\n1,1\n")
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_console_script_reports_malformed_profile_without_traceback(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 'x'\n[components.ohc]\nmean = -1\n")
    proc = subprocess.run([sys.executable, "-m", "trustlab", "estimate", "--profile", str(bad), "TPM_Seal"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "bad.toml" in proc.stderr and "negative" in proc.stderr and "Traceback" not in proc.stderr


def test_all_profiles_skips_commands_a_data_profile_cannot_price(capsys):
    code, out, _ = run(capsys, "estimate", "--all-profiles", "tpm2", "--key", "ecc256", "--json")
    rows = json.loads(out)
    assert code == 0 and rows
    for row in rows:  # each row priced only with components its profile really has
        assert all(v >= 0 for v in row["breakdown"].values())


def test_explicit_tpm2_command_needing_a_missing_component_is_priced_as_serve_charges_it(capsys):
    """Issue 13: serve times it as overhead + bytes; estimate gives that figure, marked 'overhead only'."""
    code, out, _ = run(capsys, "estimate", "--profile", "nuvoton-npct750-wolftpm", "TPM2_NV_Increment", "--json")
    (row,) = json.loads(out)
    assert code == 0 and row["note"] == "overhead only (profile lacks nv_increment)"
    assert set(row["breakdown"]) == {"ohc", "ohir", "ohor"}


def test_fitted_profile_is_usable_by_estimate(tmp_path, capsys):
    """`fit --out` keeps the formula family and the components' units, so the result prices commands."""
    from trustlab.timing import formulas, registry
    truth = registry.load("winbond-2010")
    rows = ["command,ms"] + [f"{c},{formulas.estimate(truth, c)[0]!r}" for c in formulas.commands("tpm1.2")]
    (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "chip.toml"
    assert run(capsys, "fit", str(tmp_path / "m.csv"), "--out", str(out))[0] == 0
    fitted = registry.load(str(out))
    assert fitted.family == "tpm1.2" and fitted["ohir"].unit == "byte"
    code, text, _ = run(capsys, "estimate", "--profile", str(out), "TPM_Seal", "--json")
    assert code == 0 and json.loads(text)[0]["ms"] == pytest.approx(formulas.estimate(truth, "TPM_Seal")[0])


@pytest.mark.parametrize("argv,needle", [
    (["fit", "m.csv", "--out", "."], "is a directory"),
    (["fit", "m.csv", "--out", "/nonexistent/d/x.toml"], "does not exist"),
    (["profiles", "list", "--family", "nonsense"], "no profiles of family 'nonsense'"),
    (["estimate", "--all-profiles", "nonsense"], "no profiles of family 'nonsense'"),
    (["estimate", "--all-profiles", "javacard"], "has no command formulas"),
    (["estimate", "--profile", "infineon-2010", "TPM_Seal", "--key", "ecc256"], "--key does not apply"),
    (["profiles", "import", "m.csv", "--name", "../../evil"], "invalid profile name"),
    (["fit", "bin.csv"], "invalid UTF-8"),
])
def test_more_bad_input_gets_one_line_errors(capsys, tmp_path, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path / "home"))
    (tmp_path / "m.csv").write_text("ms,ohc\n1,1\n2,2\n")
    (tmp_path / "bin.csv").write_bytes(b"\x00\xff\xfe")
    code, _, err = run(capsys, *argv)
    assert code == 2 and needle in err and err.count("\n") == 1, err


def test_fit_json_never_prints_nan(tmp_path, capsys):
    (tmp_path / "s.csv").write_text("ohc,ms\n1,10\n")  # one row, one parameter: no degrees of freedom
    code, out, _ = run(capsys, "fit", str(tmp_path / "s.csv"), "--json")
    assert code == 0 and "NaN" not in out and json.loads(out)["stderr"]["ohc"] is None

import csv

import numpy as np
import pytest

from trustlab.errors import FitError
from trustlab.timing import formulas, registry
from trustlab.timing.fit import Measurement, fit
from trustlab.timing.measurements import read_measurements


def synthetic(profile_name, noise_ms, seed=0, repeats=3):
    rng = np.random.default_rng(seed)
    p = registry.load(profile_name)
    rows = []
    for command in formulas.commands("tpm1.2"):
        f = formulas.lookup("tpm1.2", command)
        for _ in range(repeats):
            ms = f.evaluate(p)[0] + rng.normal(0, noise_ms)
            rows.append(Measurement(command, f.all_terms, ms))  # a measured keygen command includes rsa_keygen
    return p, rows


def test_fit_recovers_the_large_components_of_a_known_profile():
    truth, rows = synthetic("infineon-2010", noise_ms=0.3)
    result = fit(rows, fixed={"ohir": truth.mean("ohir"), "ohor": truth.mean("ohor"),
                              "sha1_byte": truth.mean("sha1_byte")})
    for comp in ("ohc", "rsa_dec", "rsa_enc", "rsa_sign"):
        assert result.params[comp] == pytest.approx(truth.mean(comp), rel=0.02, abs=0.3), comp
        assert result.stderr[comp] < 1.0
    assert result.max_abs_residual_ms < 2.0
    assert all(r.loo_ms is not None and abs(r.loo_ms - r.measured_ms) < 3.0 for r in result.rows)


def test_fit_recovers_everything_without_noise():
    truth, rows = synthetic("atmel-2010", noise_ms=0.0, repeats=1)
    result = fit(rows)
    for comp, c in truth.components.items():
        if comp.startswith("raw."):  # a reference figure kept beside the model; no formula charges it
            continue
        assert result.params[comp] == pytest.approx(c.mean, rel=1e-6, abs=1e-9), comp


def test_fit_keeps_costs_non_negative():
    rows = [Measurement("a", {"x": 1, "y": 1}, 10.0), Measurement("b", {"x": 1, "y": 2}, 9.0),
            Measurement("c", {"x": 1, "y": 3}, 8.0)]
    result = fit(rows)
    assert result.params["y"] >= 0 and result.params["x"] >= 0


def test_rank_deficient_data_names_the_inseparable_components():
    rows = [Measurement("Seal", {"ohc": 1, "rsa_enc": 1}, 180.0),
            Measurement("Seal", {"ohc": 1, "rsa_enc": 1}, 181.0)]
    with pytest.raises(FitError, match=r"cannot separate.*ohc.*rsa_enc|cannot separate.*rsa_enc.*ohc"):
        fit(rows)


def test_fixing_a_component_resolves_rank_deficiency():
    rows = [Measurement("Seal", {"ohc": 1, "rsa_enc": 1}, 180.0)]
    result = fit(rows, fixed={"ohc": 19.0})
    assert result.params["rsa_enc"] == pytest.approx(161.0)


def test_fix_of_unknown_component_is_refused():
    with pytest.raises(FitError, match="not in any measurement: nope"):
        fit([Measurement("a", {"x": 1}, 1.0)], fixed={"nope": 1.0})


def write_csv(path, header, rows):
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def test_csv_by_command(tmp_path):
    path = write_csv(tmp_path / "m.csv", ["command", "ms", "sd"], [["TPM_Seal", "180", "1"], ["Sign", "329", "2"]])
    rows = read_measurements(path)
    assert rows[0].terms == formulas.lookup("tpm1.2", "TPM_Seal").terms


@pytest.mark.parametrize("header,row,needle", [
    (["command", "ms", "colour"], ["TPM_Seal", "1", "red"], "unknown column(s) colour"),
    (["command", "ms"], ["TPM_Frobnicate", "1"], "m.csv:2"),
    (["command", "ms"], ["TPM_Seal", "fast"], "m.csv:2: ms: expected a number"),
    (["command", "ms"], ["TPM_Seal", "-4"], "must not be negative"),
    (["command"], ["TPM_Seal"], "needs an 'ms' column"),
    (["ms", "ohc", "warp"], ["1", "1", "1"], "unknown column(s) warp"),
])
def test_csv_errors_are_specific(tmp_path, header, row, needle):
    path = write_csv(tmp_path / "m.csv", header, [row])
    with pytest.raises(FitError) as err:
        read_measurements(path, known_components=lambda: {"ohc", "rsa_enc"})
    assert needle in str(err.value)


@pytest.mark.parametrize("header", ["[" * 2000, ",".join(f"junk{i}" for i in range(400)), "a\\tb" * 500])
def test_a_junk_header_is_quoted_briefly_naming_the_file(tmp_path, header):
    """'fit' on a junk first line quoted up to 2,000 characters of it (D9): at most 80, with what was cut."""
    path = tmp_path / "junk.csv"
    path.write_text(header + "\n1,2\n")
    with pytest.raises(FitError) as err:
        read_measurements(path)
    message = str(err.value)
    assert message.startswith(f"{path}: needs an 'ms' column") and "\n" not in message
    assert len(message) < len(str(path)) + 200 and "characters, " in message, message

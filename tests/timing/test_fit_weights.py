"""Fit weights (given / relative / none), the CLI default, the center label, and the closed-form
leave-one-out against brute-force refits."""

import json

import numpy as np
import pytest

from trustlab.cli import main
from trustlab.errors import FitError
from trustlab.timing.fit import Measurement, _solve, fit


def _rows(weights=None):
    # ohc + rsa_sign; the slow row is off by 10 ms, the fast ones by 0.1 ms
    terms = [{"ohc": 1, "rsa_sign": 0}, {"ohc": 1, "rsa_sign": 0}, {"ohc": 1, "rsa_sign": 1}, {"ohc": 1, "rsa_sign": 1}]
    ms = [1.0, 1.2, 500.0, 520.0]
    weights = weights or [None] * 4
    return [Measurement(f"r{i}", t, m, weight=w) for i, (t, m, w) in enumerate(zip(terms, ms, weights))]


def test_none_and_given_without_weights_agree():
    a, b = fit(_rows(), weighting="none"), fit(_rows(), weighting="given")
    assert a.params == pytest.approx(b.params)
    assert a.weighting == "none" and b.weighting == "given"


def test_relative_weights_are_one_over_ms_squared():
    relative = fit(_rows(), weighting="relative")
    explicit = fit(_rows([1 / m.ms ** 2 for m in _rows()]), weighting="given")
    assert relative.params == pytest.approx(explicit.params)
    plain = fit(_rows(), weighting="none")
    assert relative.params != pytest.approx(plain.params)


def test_given_weights_change_the_fit():
    heavy_fast = fit(_rows([1e6, 1e6, 1.0, 1.0]), weighting="given")
    assert heavy_fast.params["ohc"] == pytest.approx(1.1, abs=1e-3)


def test_relative_weights_refuse_a_zero_time():
    rows = _rows()
    rows[0] = Measurement("zero", {"ohc": 1}, 0.0)
    with pytest.raises(FitError, match="relative.*'zero'"):
        fit(rows, weighting="relative")


def test_unknown_weighting_and_bad_weight_are_fit_errors():
    with pytest.raises(FitError, match="expected one of given, relative, none"):
        fit(_rows(), weighting="inverse")
    with pytest.raises(FitError, match="weight"):
        fit(_rows([1, 1, -1, 1]), weighting="given")


def test_closed_form_leave_one_out_matches_refits():
    rng = np.random.default_rng(3)
    a = rng.uniform(0.5, 3.0, size=(30, 3))
    truth = np.array([2.0, 5.0, 0.7])
    y = a @ truth + rng.normal(0, 0.05, 30)
    rows = [Measurement(f"r{i}", {"x": a[i, 0], "y": a[i, 1], "z": a[i, 2]}, float(y[i]), weight=float(w))
            for i, w in enumerate(rng.uniform(0.5, 2.0, 30))]
    result = fit(rows)
    sw = np.sqrt([m.weight for m in rows])
    for i in range(30):
        keep = np.arange(30) != i
        x = _solve(a[keep] * sw[keep, None], y[keep] * sw[keep])
        assert result.rows[i].loo_ms == pytest.approx(float(a[i] @ x), rel=1e-6)


def test_leave_one_out_is_none_for_a_row_that_alone_identifies_a_component():
    rows = [Measurement("a", {"x": 1}, 1.0), Measurement("b", {"x": 1}, 1.1), Measurement("c", {"x": 1, "y": 1}, 5.0)]
    result = fit(rows)
    assert result.rows[2].loo_ms is None and result.rows[0].loo_ms is not None


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_default_is_given_with_a_weight_column_else_none(tmp_path, capsys):
    plain = tmp_path / "plain.csv"
    plain.write_text("ms,ohc,rsa_sign\n1,1,0\n1.2,1,0\n500,1,1\n520,1,1\n")
    weighted = tmp_path / "weighted.csv"
    weighted.write_text("ms,weight,ohc,rsa_sign\n1,1e6,1,0\n1.2,1e6,1,0\n500,1,1,1\n520,1,1,1\n")
    code, out, _ = _cli(capsys, "fit", str(plain), "--json")
    assert code == 0 and json.loads(out)["weighting"] == "none"
    code, out, _ = _cli(capsys, "fit", str(weighted), "--json")
    data = json.loads(out)
    assert code == 0 and data["weighting"] == "given" and data["params"]["ohc"] == pytest.approx(1.1, abs=1e-3)
    code, out, _ = _cli(capsys, "fit", str(weighted), "--weights", "relative", "--json")
    assert code == 0 and json.loads(out)["weighting"] == "relative"


def test_cli_labels_a_median_column_as_a_median(tmp_path, capsys):
    csv = tmp_path / "m.csv"
    csv.write_text("ms,center,ohc,rsa_sign\n1,median,1,0\n1.2,median,1,0\n500,median,1,1\n")
    code, out, _ = _cli(capsys, "fit", str(csv))
    assert code == 0 and "measured median" in out and "weights: none" in out
    csv.write_text("ms,center,ohc\n1,average,1\n")
    code, _, err = _cli(capsys, "fit", str(csv))
    assert code != 0 and "m.csv:2: center 'average'" in err

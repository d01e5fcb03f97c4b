"""`trustlab run hbs`: the JSON contract, the paper's memory figures, clear errors; the profile's derivation."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

from trustlab.cli import main
from trustlab.experiments.registry import get
from trustlab.timing import registry

ROOT = Path(__file__).resolve().parents[2]


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_has_exactly_the_issue_keys(capsys):
    code, out, _ = run(capsys, "run", "hbs", "--profile", "jcop-2018", "--h", "20", "--d", "4", "--json")
    assert code == 0
    data = json.loads(out)
    assert list(data) == ["h", "d", "w", "sign_s", "prepare_s", "persistent_bytes", "signature_bytes", "signatures",
                          "responses", "assumptions"]
    assert (data["h"], data["d"], data["w"]) == (20, 4, 16)
    for key in ("sign_s", "prepare_s"):
        assert list(data[key]) == ["best", "avg", "worst"]
        assert 0 < data[key]["best"] <= data[key]["avg"] <= data[key]["worst"]
    assert data["persistent_bytes"] == 13600
    assert data["signature_bytes"] == 9251 and data["signatures"] == 2 ** 20


def test_anchor_and_drivers_are_stated(capsys):
    """hash_call rests on the 33 s signature alone; "~1 min" is a reported check; APDU readings both shown."""
    code, out, _ = run(capsys, "run", "hbs", "--h", "20", "--d", "4", "--json")
    a = json.loads(out)["assumptions"]
    assert a["anchor"]["anchor"]["model_s"] == pytest.approx(33.0, rel=1e-6)
    assert a["anchor"]["check"]["paper_s"] == 60.0 and a["anchor"]["check"]["model_s"] != pytest.approx(60.0, rel=1e-3)
    hc = {d["component"]: d for d in a["drivers"]}
    assert set(hc) == {"hash_call", "apdu", "persistent memory"}
    assert 0 < hc["hash_call"]["sign_best"]["share"] < 1
    # the default reading is the paper's published applet: SIGN_INIT + per layer 9 WOTS+ responses + 1 auth path
    assert hc["apdu"]["sign_best"]["count"] == 1 + 4 * (9 + 1) == a["responses"]["applet_exchanges"]
    assert 0 < hc["persistent memory"]["sign_best"]["share"] < hc["hash_call"]["sign_best"]["share"]
    assert a["responses"]["short_exchanges"] == 37 and a["responses"]["extended_exchanges"] == 8
    _, out5, _ = run(capsys, "run", "hbs", "--h", "20", "--d", "5", "--responses", "short", "--json")
    d5 = json.loads(out5)["assumptions"]
    assert d5["responses"]["short_exchanges"] == 45
    assert {d["component"]: d for d in d5["drivers"]}["apdu"]["sign_avg"]["count"] == 45
    _, text, _ = run(capsys, "run", "hbs", "--h", "20", "--d", "4")
    assert "anchor: hash_call" in text and "which assumption drives the figure" in text


def test_d5_signs_faster_in_the_best_case_but_worst_case_grows(capsys):
    """The paper: d = 5 gives a slightly shorter signing time, but needs new WOTS+ signatures more often."""
    _, out4, _ = run(capsys, "run", "hbs", "--h", "20", "--d", "4", "--json")
    _, out5, _ = run(capsys, "run", "hbs", "--h", "20", "--d", "5", "--json")
    d4, d5 = json.loads(out4), json.loads(out5)
    assert d5["sign_s"]["best"] < d4["sign_s"]["best"]
    assert d5["sign_s"]["best"] > 0.8 * d4["sign_s"]["best"]  # "slightly"
    assert d5["persistent_bytes"] == 8576 + 4608


def test_result_references_memory_and_calibration(capsys):
    import argparse
    spec = get("hbs")
    args = argparse.Namespace(profile="jcop-2018", h=20, d=5, w=16, grid=False, grid_h=None, grid_w=None,
                              sensitivity=0.1, check=False)
    res = spec.run(args)
    mem = [r for r in res.references if r.unit == "bytes"][0]
    assert mem.reference == mem.model == mem.simulated == 13184
    calib = [r for r in res.references if r.unit == "s"]
    assert len(calib) == 2 and all(abs(r.error) / r.reference < 0.15 for r in calib)
    assert "jcop-2018" in res.profiles
    assert res.plots and res.plots[0]["kind"] == "bar"


def test_grid_is_a_list_of_records_with_plots(capsys):
    code, out, _ = run(capsys, "run", "hbs", "--grid", "--grid-h", "8", "--grid-w", "16", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["d"] for r in rows] == [1, 2, 4]
    assert all(r["persistent_bytes"] == 32 * 67 * (r["d"] - 1) + 32 * (2 * r["d"] - 1) * 2 ** (8 // r["d"])
               for r in rows)


@pytest.mark.parametrize("argv,needle", [
    (["--h", "20", "--d", "3"], "d must divide h"),
    (["--profile", "infineon-2010"], "lacks the Java Card HBS component"),
    (["--profile", "no-such-profile"], "no-such-profile"),
    (["--h", "24", "--d", "1"], "beyond this analysis"),
    (["--sensitivity", "2"], "--sensitivity"),
    (["--set", "hash_cal=1"], "COMPONENT=MS"),
    (["--set", "hash_call=fast"], "not a number"),
    (["--set", "hash_call=-1"], "non-negative"),
    (["--set", "apdu=1e308", "--responses", "short"], "at most"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, "run", "hbs", *argv)
    assert code == 2
    assert needle in err and len(err.strip().splitlines()) == 1


def test_shipped_profile_is_what_the_calibration_tool_derives():
    data = ROOT.parent / "shared" / "data" / "jcalgtest" / "javacard"
    if not data.exists():
        pytest.skip("shared JCAlgTest data not present")
    tool = runpy.run_path(str(ROOT / "tools" / "calibrate_jcop_2018.py"))
    derived, report = tool["derive"](data)
    shipped = registry.load("jcop-2018")
    assert shipped.family == "javacard"
    for name, comp in derived.components.items():
        assert shipped.mean(name) == pytest.approx(comp.mean, rel=1e-6), name
        assert shipped[name].provenance.source  # every parameter says where it came from
    # one free parameter, two paper figures: both reproduced within 10 %
    assert all(abs(r["residual_ms"]) / r["measured_ms"] < 0.10 for r in report["fit"]["rows"])


def test_check_runs_the_card_for_real_and_json_stays_the_same(capsys):
    import argparse
    spec = get("hbs")
    args = argparse.Namespace(profile="jcop-2018", h=20, d=4, w=16, grid=False, grid_h=None, grid_w=None,
                              sensitivity=0.1, check=True)
    res = spec.run(args)
    checks = {r.label: r for r in res.references if r.label.startswith("functional check")}
    assert len(checks) == 2
    for r in checks.values():
        assert r.simulated == r.reference and r.reference > 0
    assert "torn mid-signature" in res.text and "ACCEPTED" not in res.text
    assert list(res.data) == ["h", "d", "w", "sign_s", "prepare_s", "persistent_bytes", "signature_bytes",
                              "signatures", "responses", "assumptions"]


def test_what_if_override_changes_time_not_memory(capsys):
    _, base, _ = run(capsys, "run", "hbs", "--json")
    _, fast, _ = run(capsys, "run", "hbs", "--json", "--set", "hash_call=0")
    _, text, _ = run(capsys, "run", "hbs", "--set", "hash_call=0")
    b, f = json.loads(base), json.loads(fast)
    assert f["sign_s"]["avg"] < b["sign_s"]["avg"]
    assert f["persistent_bytes"] == b["persistent_bytes"]
    assert "jcop-2018+hash_call=0" in text


def test_check_fits_the_smallest_key():
    """h=2, d=1 has four one-time keys: the check must not run the key out (it did: SW 6A84)."""
    from trustlab.experiments.hbs import functional_check
    from trustlab.apps.hbs.params import XMSSParams

    text, refs = functional_check(XMSSParams(2, 1, 4), registry.load("jcop-2018"))
    assert "torn mid-signature" in text and "ACCEPTED" not in text
    assert all(r.simulated == r.reference and r.reference > 0 for r in refs)


def test_calibration_tool_names_a_missing_data_directory(tmp_path, capsys):
    tool = runpy.run_path(str(ROOT / "tools" / "calibrate_jcop_2018.py"))
    with pytest.raises(SystemExit) as exc:
        tool["main"](["--data", str(tmp_path)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "NXP_JCOP_J3D081" in err and "Traceback" not in err

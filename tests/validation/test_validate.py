"""`trustlab validate`: checks, their kind, the accuracy a profile states, flagged inconsistencies."""

from __future__ import annotations

import json

import pytest

from trustlab.cli import main
from trustlab.validation import CALIBRATION, INDEPENDENT, Check, accuracy, profile_accuracy, run


@pytest.fixture(scope="module")
def full():
    return run()


def _cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_only_independent_rows_count(full):
    acc = full.accuracy()
    for name, a in acc.items():
        indep = [c for c in full.checks if c.profile == name and c.kind == INDEPENDENT]
        assert a.n == len(indep)
        if indep:
            assert a.worst == pytest.approx(max(abs(c.error) for c in indep))
    # calibration rows reproduce their source exactly (derivations are faithful)
    for c in full.checks:
        if c.kind == CALIBRATION and c.profile.endswith(("-wolftpm", "-jcalgtest")):
            assert c.error == pytest.approx(0.0, abs=1e-3), c


def test_accuracy_is_median_and_worst_of_abs_error():
    mk = lambda kind, pred: Check("p", "smart card", "x", pred, 1.0, "ms", kind, "src")  # noqa: E731
    a = accuracy([mk(INDEPENDENT, 1.1), mk(INDEPENDENT, 0.7), mk(INDEPENDENT, 1.2), mk(CALIBRATION, 5.0)])["p"]
    assert (a.n, a.calibration_n) == (3, 1)
    assert a.median == pytest.approx(0.2) and a.worst == pytest.approx(0.3)


def test_leave_one_source_out_pairs_the_same_chip_family(full):
    rows = [c for c in full.checks if c.profile == "st-st33tphf2xspi-wolftpm" and c.kind == INDEPENDENT]
    assert rows and all("STM_73.4" in c.source for c in rows)
    # the newer ST33KTPM2X generation has no second source: no independent row, never paired with 73.4
    assert not any(c.profile == "st-st33ktpm2xspi-wolftpm" for c in full.checks)
    nuv = {c.command for c in full.checks if c.profile == "nuvoton-npct75x-7.2.0.1-jcalgtest" and c.kind == INDEPENDENT}
    assert "TPM2_Sign ecc256" in nuv and "TPM2_GetRandom 32" not in nuv


def test_card_profiles_checked_against_the_oscilloscope(full):
    s3 = {c.command: c for c in full.checks if c.profile == "s3cc9e8-native"}
    xor = s3["block XOR (block_xor)"]
    assert xor.kind == INDEPENDENT and xor.reference == 0.0191
    sle = [c for c in full.checks if c.profile == "sle78-native"]
    assert sle and all(c.kind == CALIBRATION for c in sle)  # it charges Table XI itself
    hbs = {c.command: c for c in full.checks if c.profile == "jcop-2018"}
    assert hbs["WOTS+ signature (avg)"].kind == CALIBRATION
    assert hbs["WOTS+ key generation (PREPARE, one leaf)"].kind == INDEPENDENT


def test_inconsistencies_show_every_reading(full):
    by = {i.what: i for i in full.inconsistencies}
    xii = by["64 B at 13441 bit/s (contact, F=372 D=1)"]
    assert set(xii.readings.values()) >= {28.09} and len(xii.readings) == 2
    ftpm = by["blocks addressable with one extra level of indirection"]
    assert sorted(ftpm.readings.values()) == [1_048_576.0, 2_097_152.0, 4_194_304.0]
    ccm = [i for i in full.inconsistencies if i.what.startswith("CCM")]
    assert ccm and all(sorted(i.readings.values())[1] - sorted(i.readings.values())[0] == 1 for i in ccm)


def test_cli_text_json_and_errors(capsys):
    code, out, _ = _cli(capsys, "validate")
    assert code == 0 and "Accuracy per profile" in out and "FLAG" in out and "independent" in out
    code, out, _ = _cli(capsys, "validate", "jcop-2018", "--json")
    data = json.loads(out)
    assert code == 0 and list(data["accuracy"]) == ["jcop-2018"]
    assert {c["kind"] for c in data["checks"]} == {CALIBRATION, INDEPENDENT}
    code, out, _ = _cli(capsys, "validate", "jcop-2018", "--json", "--independent")  # as the text: was every kind
    assert code == 0 and {c["kind"] for c in json.loads(out)["checks"]} == {INDEPENDENT}
    code, _, err = _cli(capsys, "validate", "no-such-profile")
    assert code == 2 and err.count("\n") == 1 and "no-such-profile" in err


def test_profiles_show_prints_the_accuracy_line(capsys):
    code, out, _ = _cli(capsys, "profiles", "show", "s3cc9e8-native")
    assert code == 0 and "accuracy: median" in out and "independent reference" in out
    _, out, _ = _cli(capsys, "profiles", "show", "infineon-2010")
    assert "no independent reference" in out
    assert profile_accuracy("not-a-profile") is None


def test_experiment_and_report_accuracy_section(tmp_path, capsys):
    from trustlab.experiments.registry import get
    from trustlab.report import write_report

    spec = get("validate")
    assert spec.flagship == [[]]
    code, out, _ = _cli(capsys, "run", "validate", "--save", str(tmp_path / "v.json"))
    assert code == 0 and "Accuracy per profile" in out
    record = json.loads((tmp_path / "v.json").read_text())
    record = record[0] if isinstance(record, list) else record
    plot = record["plots"][0]
    assert plot["kind"] == "loglog" and any(s["label"].startswith("discrete TPM 2.0") for s in plot["series"])
    index = write_report([record], tmp_path / "rep")
    html = index.read_text()
    assert 'id="accuracy"' in html and "contradict themselves" in html
    assert html.count("validate-1-1.png") >= 2  # the figure drawn once, shown in Accuracy and in the run


def test_java_card_leave_one_card_out(full):
    rows = [c for c in full.checks if c.profile == "jcop-2018" and "arrayCopy" in c.command]
    own = [c for c in rows if "J3D081" in c.source]
    assert own and all(c.kind == CALIBRATION for c in own)
    others = [c for c in rows if "J3D081" not in c.source]
    assert others and all(c.kind == INDEPENDENT for c in others)


def test_profile_without_reference_says_so(capsys):
    code, out, _ = _cli(capsys, "validate", "swtpm-native")
    assert code == 0 and "swtpm-native: no reference to check it against" in out
    assert out.strip().splitlines() == ["swtpm-native: no reference to check it against"]  # no empty tables

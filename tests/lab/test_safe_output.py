"""Output paths never harm user files: no write over an input, no write into a foreign directory,
atomic writes that leave no temp file even when the disk fills up."""

import errno
import json
import os

import pytest

from trustlab import safe_output
from trustlab.cli import main
from trustlab.errors import TrustlabError


def _err(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def _record(path, experiment="demo"):
    path.write_text(json.dumps({"experiment": experiment, "data": {"x": 1}, "params": {}}))
    return path


def test_fit_refuses_to_write_over_its_measurements(tmp_path, capsys):
    csv = tmp_path / "meas.csv"
    text = "ms,ohc,rsa_sign\n10,1,0\n30,1,1\n31,1,1\n"
    csv.write_text(text)
    assert main(["fit", str(csv), "--out", str(csv)]) == 2
    assert "is an input of this command" in _err(capsys)
    assert csv.read_text() == text
    link = tmp_path / "link.toml"
    link.symlink_to(csv)
    assert main(["fit", str(csv), "--out", str(link)]) == 2
    assert csv.read_text() == text


def test_report_refuses_a_foreign_non_empty_directory(tmp_path, capsys):
    rec = _record(tmp_path / "r.json")
    out = tmp_path / "mine"
    (out / "plots").mkdir(parents=True)
    (out / "plots" / "holiday.png").write_bytes(b"photo")
    (out / "tables").mkdir()
    (out / "tables" / "budget.csv").write_text("a,b\n")
    (out / "results.json").write_text("precious")
    assert main(["report", str(rec), "--out", str(out)]) == 2
    assert "not an earlier output of 'trustlab report'" in _err(capsys)
    assert (out / "plots" / "holiday.png").read_bytes() == b"photo"
    assert (out / "tables" / "budget.csv").exists() and (out / "results.json").read_text() == "precious"
    assert main(["report", str(rec), "--out", str(out), "--force"]) == 0


def test_report_rewrites_its_own_earlier_output(tmp_path, capsys):
    rec = _record(tmp_path / "r.json")
    out = tmp_path / "rep"
    assert main(["report", str(rec), "--out", str(out)]) == 0
    assert (out / safe_output.MARKER).exists()
    assert main(["report", str(rec), "--out", str(out)]) == 0
    assert not [p for p in out.rglob("*") if ".tmp" in p.name]


def test_report_refuses_an_output_directory_holding_its_input(tmp_path, capsys):
    rec = tmp_path / "rep" / "results.json"
    assert main(["report", str(_record(tmp_path / "r.json")), "--out", str(tmp_path / "rep")]) == 0
    before = rec.read_text()
    assert main(["report", str(rec), "--out", str(tmp_path / "rep")]) == 2
    assert "holds the input" in _err(capsys) and rec.read_text() == before


def test_empty_out_is_refused_not_the_current_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rec = _record(tmp_path / "r.json")
    with pytest.raises(SystemExit) as exc:
        main(["report", str(rec), "--out", ""])
    assert exc.value.code == 2
    assert sorted(os.listdir(tmp_path)) == ["r.json"]


def test_sweep_refuses_a_foreign_directory(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\nexperiment = "lab-counting"\n[grid]\nx = [1]\n')
    (tmp_path / "out" / "s").mkdir(parents=True)
    (tmp_path / "out" / "s" / "thesis.tex").write_text("mine")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--jobs", "1", "--no-progress"]) == 2
    assert "not an earlier output of 'trustlab sweep'" in _err(capsys)


def test_run_save_refuses_to_overwrite_an_input(tmp_path, capsys):
    pro = tmp_path / "chip.pro"
    text = "overconst: 1\noverinrate: 0\noveroutrate: 0\ndecrypt: 2 encrypt: 3 sign: 4\nhashrate: 0\n"
    pro.write_text(text)
    code = main(["run", "timing-model", "--profile", str(pro), "--save", str(pro)])
    assert code == 2 and pro.read_text() == text
    assert "is an input of this command" in _err(capsys)


@pytest.mark.parametrize("fail_at", ["write", "fsync", "replace"])
def test_atomic_write_on_a_full_disk_keeps_the_old_file_and_leaves_no_temp(tmp_path, monkeypatch, fail_at):
    target = tmp_path / "results.json"
    target.write_text("old")
    full = OSError(errno.ENOSPC, "No space left on device")

    def boom(*a, **k):
        raise full
    if fail_at == "fsync":
        monkeypatch.setattr(safe_output.os, "fsync", boom)
    elif fail_at == "replace":
        monkeypatch.setattr(safe_output.os, "replace", boom)
    with pytest.raises(OSError):
        with safe_output.atomic_open(target) as fh:
            if fail_at == "write":
                raise full
            fh.write("new")
    assert target.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["results.json"]


def test_report_on_a_full_disk_is_one_line_and_leaves_no_temp(tmp_path, capsys, monkeypatch):
    rec = _record(tmp_path / "r.json")
    out = tmp_path / "rep"

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(safe_output.os, "fsync", full)
    assert main(["report", str(rec), "--out", str(out)]) == 2
    assert "No space left on device" in _err(capsys)
    assert not [p for p in out.rglob("*") if ".tmp" in p.name]


def test_fit_out_on_a_full_disk_is_one_line(tmp_path, capsys, monkeypatch):
    csv = tmp_path / "m.csv"
    csv.write_text("ms,ohc,rsa_sign\n10,1,0\n30,1,1\n31,1,1\n")
    (tmp_path / "p.toml").write_text("old")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(safe_output.os, "fsync", full)
    assert main(["fit", str(csv), "--out", str(tmp_path / "p.toml"), "--force"]) == 2
    assert "No space left" in _err(capsys)
    assert (tmp_path / "p.toml").read_text() == "old" and sorted(os.listdir(tmp_path)) == ["m.csv", "p.toml"]


def test_unwritable_trustlab_home_is_one_line(tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    home.write_text("a file, not a directory")
    monkeypatch.setenv("TRUSTLAB_HOME", str(home))
    pro = tmp_path / "chip.pro"
    pro.write_text("overconst: 1\noverinrate: 0\noveroutrate: 0\ndecrypt: 2 encrypt: 3 sign: 4\nhashrate: 0\n")
    assert main(["profiles", "import", str(pro), "--name", "mychip"]) == 2
    assert "cannot write profile" in _err(capsys)
    assert main(["profiles", "list"]) == 0


def test_claim_dir_marks_and_names_the_owner(tmp_path):
    d = safe_output.claim_dir(tmp_path / "o", "report")
    (d / "index.html").write_text("x")
    assert safe_output.marker_command(d) == "report"
    with pytest.raises(TrustlabError, match="output of 'trustlab report', not of 'trustlab sweep'"):
        safe_output.claim_dir(d, "sweep")

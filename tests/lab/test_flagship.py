"""The flagship run: every flagship argv list, isolated processes, failures shown, report renders."""

from __future__ import annotations

import json

from trustlab.cli import main


def test_flagship_tolerates_failing_and_hanging_studies(tmp_path, capsys):
    out = tmp_path / "report"
    rc = main(["flagship", "--out", str(out), "--jobs", "2", "--timeout", "12", "--no-progress",
               "--only", "lab-counting", "--only", "lab-broken"])
    assert rc == 1
    printed = capsys.readouterr().out
    assert "2 failed" in printed and "timed out after 12 s" in printed
    results = json.loads((out / "results.json").read_text())
    ok = [r["experiment"] for r in results if "data" in r]
    assert ok == ["lab-counting"]
    broken = [r for r in results if "data" not in r]
    assert any("this study is broken on purpose" in r["error"] for r in broken)
    page = (out / "index.html").read_text()
    assert "lab-broken — failed" in page and "2 of 3 runs failed" in page
    assert len(list((out / "records").glob("*.json"))) == 3
    assert page.count("<img ") == 1  # the report with failures renders in Chromium: see test_report


def test_flagship_exits_1_when_a_run_reports_violations(tmp_path, capsys):
    out = tmp_path / "report"
    rc = main(["flagship", "--out", str(out), "--jobs", "1", "--no-progress",
               "--only", "lab-counting", "--only", "lab-violating"])
    assert rc == 1
    printed = capsys.readouterr().out
    assert "2 runs, 0 failed, 1 with violations" in printed
    assert "VIOLATED lab-violating --violate: 3 torn writes; 1 lost update" in printed
    assert main(["flagship", "--out", str(out), "--jobs", "1", "--no-progress", "--only", "lab-counting"]) == 0
    assert "0 with violations" in capsys.readouterr().out


def test_flagship_list_and_errors(capsys):
    assert main(["flagship", "--list", "--only", "timing-model"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "timing-model" and len(lines) == 2
    assert main(["flagship", "--only", "nope"]) == 2
    assert main(["flagship", "--jobs", "0"]) == 2
    err = capsys.readouterr().err
    assert "unknown experiment 'nope'" in err and "--jobs 0" in err


def test_every_registered_experiment_declares_runnable_flagship_argv():
    """Each experiment's flagship argv must parse with its own declaration (no run needed)."""
    from trustlab.experiments.registry import all_experiments, flagship_runs, parse_args

    for name, spec in all_experiments().items():
        for argv in flagship_runs(spec):
            parse_args(name, argv)


def test_every_experiment_offers_json_and_save_on_the_cli(capsys):
    import pytest

    from trustlab.experiments.registry import all_experiments

    for name in all_experiments():
        with pytest.raises(SystemExit) as exit_:
            main(["run", name, "--help"])
        assert exit_.value.code == 0
        text = capsys.readouterr().out
        assert "--json" in text and "--save" in text, name


def test_flagship_replaces_stale_records_and_figures(tmp_path, capsys):
    out = tmp_path / "report"
    (out / "records").mkdir(parents=True)
    (out / "plots").mkdir()
    (out / "records" / "99-old.json").write_text("{}")
    (out / "plots" / "old-1.png").write_bytes(b"x")
    assert main(["flagship", "--out", str(out), "--no-progress", "--only", "lab-counting"]) == 2  # not marked ours
    assert (out / "plots" / "old-1.png").exists()
    (out / ".trustlab-output").write_text('{"command": "flagship"}')  # an earlier flagship's output
    assert main(["flagship", "--out", str(out), "--jobs", "1", "--no-progress", "--only", "lab-counting"]) == 0
    assert sorted(p.name for p in (out / "records").iterdir()) == ["00-lab-counting.json"]
    assert sorted(p.name for p in (out / "plots").iterdir()) == ["lab-counting-1-1.png"]


def test_unwritable_out_is_a_one_line_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["flagship", "--out", str(blocker), "--only", "lab-counting"]) == 2
    assert main(["report", str(tmp_path), "--out", str(blocker / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("cannot create directory" in e or "no *.json" in e for e in err)

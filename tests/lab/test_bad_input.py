"""Issue 14's listed tracebacks and unbounded inputs: each is now one line naming the file, line or field."""

import json
import time

import pytest

from trustlab import limits
from trustlab.cli import main


def one_line_error(capsys, argv, code=2):
    assert main([str(a) for a in argv]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def _profile(tmp_path, component_body, name="p.toml"):
    path = tmp_path / name
    path.write_text(f'name = "p"\nfamily = "tpm1.2"\n[components.ohc]\n{component_body}\n')
    return path


def test_ragged_csv_row_names_the_line(tmp_path, capsys):
    csv = tmp_path / "m.csv"
    csv.write_text("ms,ohc\n1,2\n1,2,3\n")
    assert "m.csv:3: 3 fields, but the header has 2" in one_line_error(capsys, ["fit", csv])


def test_fit_of_dev_zero_is_refused_as_a_device(capsys):
    assert "it is a character device, not a regular file" in one_line_error(capsys, ["fit", "/dev/zero"])


def test_fit_of_a_huge_file_stops_at_the_size_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(limits, "MAX_TEXT_BYTES", 1000)
    big = tmp_path / "m.csv"
    big.write_text("ms,ohc\n" + "1,1\n" * 1000)
    assert "larger than the limit of 1000 bytes" in one_line_error(capsys, ["fit", big])


def test_row_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(limits, "MAX_ROWS", 3)
    csv = tmp_path / "m.csv"
    csv.write_text("ms,ohc\n" + "1,1\n" * 4)
    assert "more than 3 measurement rows" in one_line_error(capsys, ["fit", csv])


@pytest.mark.parametrize("body, needle", [
    ("mean = " + "1" * 400, "[components.ohc] mean: expected a finite number"),
    ("mean = " + "1" * 4400, "a number is too long"),
    ("mean = 1\nsamples = 3", "[components.ohc] samples: expected a list of numbers, got 3"),
    ("mean = 1\nsamples = [1, 'x']", "samples: expected a number"),
    ("mean = " + "[" * 5000 + "]" * 5000, "nested more than 32 levels deep"),
    ("mean = " + "[" * 40 + "1" + "]" * 40, "nested more than 32 levels deep"),
])
def test_malformed_profile_toml(tmp_path, capsys, body, needle):
    path = _profile(tmp_path, body)
    for argv in (["profiles", "show", path], ["profiles", "import", path, "--name", "x"],
                 ["estimate", "--profile", path, "TPM_Sign"]):
        err = one_line_error(capsys, argv)
        assert needle in err and "p.toml" in err and len(err) < 300


def test_huge_profile_is_refused_and_does_not_slow_listing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(limits, "MAX_TEXT_BYTES", 4096)
    big = tmp_path / "big.toml"
    big.write_text('name = "big"\n[components.ohc]\nmean = 1\n' + "# padding\n" * 1000)
    assert "larger than the limit of 4096 bytes" in one_line_error(capsys, ["profiles", "import", big,
                                                                           "--name", "big"])
    (tmp_path / "home" / "profiles").mkdir(parents=True)
    (tmp_path / "home" / "profiles" / "big.toml").write_text(big.read_text())  # placed by hand
    assert main(["profiles", "list"]) == 0


def test_sweep_spec_nesting_nul_name_and_point_limit(tmp_path, capsys, monkeypatch):
    deep = tmp_path / "deep.toml"
    deep.write_text('experiment = "timing-model"\n[fixed]\nnoise = ' + "[" * 5000 + "]" * 5000 + "\n")
    assert "nested more than 32 levels deep" in one_line_error(capsys, ["sweep", deep, "--dry-run"])
    nul = tmp_path / "nul.toml"
    nul.write_text('name = "a\\u0000b"\nexperiment = "timing-model"\n')
    assert "'name'" in one_line_error(capsys, ["sweep", nul, "--dry-run", "--out", tmp_path / "o"])
    assert not (tmp_path / "o").exists()
    monkeypatch.setattr(limits, "MAX_SWEEP_POINTS", 1000)
    big = tmp_path / "big.toml"
    big.write_text('experiment = "timing-model"\n[grid]\nnoise = ' + str([i / 1000 for i in range(100)])
                   + "\nseed = " + str(list(range(100))) + "\n")
    assert "10000 points; the limit is 1000" in one_line_error(capsys, ["sweep", big, "--dry-run"])


def test_an_in_limit_sweep_is_expanded_once_per_value(tmp_path, monkeypatch):
    from trustlab.experiments import registry
    from trustlab.sweep import load

    calls = []
    real = registry.parse_args
    monkeypatch.setattr("trustlab.sweep.spec.parse_args", lambda *a: calls.append(a) or real(*a))
    spec = tmp_path / "s.toml"
    spec.write_text('experiment = "timing-model"\n[grid]\nnoise = ' + str([i / 1000 for i in range(50)])
                    + "\nseed = " + str(list(range(40))) + "\n")
    points = load(spec).points()
    assert len(points) == 2000 and len({p.key for p in points}) == 2000
    assert len(calls) == 1 + 49 + 39  # each distinct value parsed once, not each point
    assert points[41].argv == ("--noise=0.001", "--seed=1")


@pytest.mark.parametrize("patch, needle", [
    ({"meta": {"tools": ["a"]}}, "'meta.tools' must be a JSON object"),
    ({"meta": {"tools": "swtpm"}}, "'meta.tools' must be a JSON object"),
    ({"meta": {"profile_versions": [1]}, "profiles": {"a": "b"}}, "'meta.profile_versions' must be a JSON"),
    ({"meta": {"profile_versions": {"a": 1}}, "profiles": {"a": "b"}}, "'meta.profile_versions.a'"),
    ({"argv": [1, 2], "error": "x"}, "'argv' must be a list of strings"),
    ({"data": {"x": json.loads("[" * 40 + "]" * 40)}}, "nested more than 32"),
])
def test_report_records_with_odd_meta(tmp_path, capsys, patch, needle):
    record = {"experiment": "demo", "data": {"x": 1}}
    record.update(patch)
    if "error" in record:
        record.pop("data")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(record))
    assert needle in one_line_error(capsys, ["report", path, "--out", tmp_path / "rep"])


@pytest.mark.parametrize("value", ["nan", "-1", "0", "inf"])
def test_flagship_timeout_must_be_positive(tmp_path, capsys, value):
    err = one_line_error(capsys, ["flagship", "--timeout", value, "--out", tmp_path / "o", "--only", "timing-model"])
    assert "--timeout" in err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("scheduler", ["garbage://x", "tcp://", "tcp://127.0.0.1:99999", "tcp://[::1", " ", "ucx://",
                                       "tcp://a..b:1", "tcp://" + "9" * 100 + ":1", "9" * 5000])
def test_bad_scheduler_addresses_fail_fast(tmp_path, capsys, scheduler):
    spec = tmp_path / "s.toml"
    spec.write_text('experiment = "lab-counting"\n[grid]\nx = [1, 2]\n')
    started = time.monotonic()
    err = one_line_error(capsys, ["sweep", spec, "--out", tmp_path / "o", "--scheduler", scheduler, "--no-progress"])
    assert "--scheduler" in err and time.monotonic() - started < 20


SEEDED = ["ftpm-crash", "ftpm-vs-dtpm", "timing-model", "oracle", "counters", "wallet", "pqc-tpm", "hbs"]


@pytest.mark.parametrize("experiment", SEEDED)
@pytest.mark.parametrize("value", ["-1", str(2**64), "1.5"])
def test_one_seed_rule_for_every_experiment(capsys, experiment, value):
    from trustlab.experiments.registry import experiment_parser

    parser = experiment_parser(experiment)
    action = next(a for a in parser._actions if a.dest == "seed")
    from trustlab.experiments._params import seed
    assert action.type is seed, experiment
    err = one_line_error(capsys, ["run", experiment, f"--seed={value}"])
    assert f"--seed {value}: " in err and "4294967295" in err


@pytest.mark.parametrize("argv, needle", [
    (["run", "ftpm-crash", f"--commands={2**64}"], "--commands 18446744073709551616: expected a positive integer"),
    (["run", "ftpm-crash", f"--boots={2**64}"], "--boots"),
    (["run", "ftpm-vs-dtpm", f"--reps={2**64}"], "--reps"),
    (["run", "timing-model", f"--repeats={2**64}"], "--repeats"),
    (["run", "wallet", f"--credit={2**64}"], "--credit"),
    (["serve", "--profile", "atmel-2010", "--seed", "-1"], "--seed -1: must not be negative"),
    (["run", "timing-model", "--save", "x" * 5000], "unusable path (File name too long)"),
    (["report", "r.json", "--out", "x" * 5000], "unusable path (File name too long)"),
    (["profiles", "import-jcalgtest", "/dev/zero"], "it is a character device, not a regular file"),
])
def test_unbounded_counts_and_unusable_paths(tmp_path, capsys, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.json").write_text(json.dumps({"experiment": "demo", "data": {}}))
    assert needle in one_line_error(capsys, argv)

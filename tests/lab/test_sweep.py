"""Sweeps: grid expansion, resumable cache (counted executions), same results on 1, N jobs and Dask."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trustlab.cli import main
from trustlab.errors import TrustlabError
from trustlab.sweep import parse, run_sweep


def _spec(log: Path, **extra) -> dict:
    return {"name": "count", "experiment": "lab-counting",
            "fixed": {"log": str(log), **extra},
            "grid": {"x": [0, 1, 2, 3], "y": [0.5, 1.5], "seed": [7, 8]}}


def _executions(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _values(outcome) -> list:
    return [r["record"]["data"] for r in outcome.ordered()]


def test_grid_is_the_cartesian_product_in_spec_order(tmp_path):
    points = parse(_spec(tmp_path / "log"), "t").points()
    assert len(points) == 16 and len({p.key for p in points}) == 16
    assert points[0].params == {"log": str(tmp_path / "log"), "x": 0, "y": 0.5, "seed": 7}
    assert points[1].params["seed"] == 8 and points[2].params["y"] == 1.5
    assert "--x=0" in points[0].argv


def _small(log: Path) -> dict:
    return dict(_spec(log), grid={"x": [0, 1, 2, 3], "y": [0.5], "seed": [7, 8]})


@pytest.fixture(scope="module")
def serial_values(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serial")
    outcome = run_sweep(parse(_small(tmp / "log"), "t"), tmp, jobs=1, progress=False)
    assert outcome.executed == 8 and len(_executions(tmp / "log")) == 8
    return _values(outcome)


def test_same_results_serial_and_local_processes(tmp_path, serial_values, monkeypatch):
    # points long enough (1 s) that a worker pays off: two run here (timed), then a worker joins this
    # process (the machine's load stretches the expected worker start-up; not in this test)
    monkeypatch.setattr("trustlab.sweep.execute._busy", lambda: 1.0)
    doc = dict(_spec(tmp_path / "log", sleep=1.0), grid=_small(tmp_path / "log")["grid"])
    procs = run_sweep(parse(doc, "t"), tmp_path, jobs=2, progress=False)
    assert procs.executed == 8 and _values(procs) == serial_values
    pids = [e["pid"] for e in _executions(tmp_path / "log")]
    assert pids[:2] == [os.getpid()] * 2 and len(set(pids)) == 2  # this process and one worker
    assert pids.count(os.getpid()) >= 3  # which keeps running points beside the worker
    on_disk = json.loads((tmp_path / "count" / "results.json").read_text())
    assert [r["record"]["data"] for r in on_disk] == serial_values  # spec order, whatever finished first


def test_light_points_do_not_start_workers(tmp_path, serial_values):
    """Milliseconds per point never earn back a worker's start: --jobs 2 runs them here (issue 15)."""
    procs = run_sweep(parse(_small(tmp_path / "log"), "t"), tmp_path, jobs=2, progress=False)
    assert procs.executed == 8 and _values(procs) == serial_values
    assert {e["pid"] for e in _executions(tmp_path / "log")} == {os.getpid()}


def test_workers_only_when_they_pay_off():
    from trustlab.sweep.execute import _busy, batches, worth_workers

    assert not worth_workers(100, 0.005, 2, start_s=0.3)  # 0.5 s of work: a worker's start costs most of it
    assert not worth_workers(3, 0.2, 2, start_s=0.0)  # saves less than a point's time
    assert worth_workers(10, 0.5, 2, start_s=0.5) and worth_workers(6, 1.0, 4, start_s=0.3)
    assert not worth_workers(10, 0.5, 2, start_s=5.0)
    assert _busy() >= 1.0
    points = parse(_spec(Path("log")), "t").points()
    split = batches(points, 2)
    assert [k for b in split for k, _, _ in b] == [p.key for p in points]  # all, in order, once
    assert len(split) == 8 and all(len(b) == 2 for b in split)


def test_a_worker_that_dies_fails_its_point_only(tmp_path):
    """A worker killed under a point: that point is a failure record (retried on resume), the rest run."""
    from trustlab.sweep.execute import adaptive

    doc = dict(_spec(tmp_path / "log", sleep=0.3), grid={"x": list(range(8))})
    points = parse(doc, "t").points()
    results, killed = {}, []
    for key, record in adaptive(points, 2, start_s=0.0):
        results[key] = record
        others = [e["pid"] for e in _executions(tmp_path / "log") if e["pid"] != os.getpid()]
        if others and not killed:
            os.kill(others[0], signal.SIGKILL)  # most likely inside its second point
            killed.append(others[0])
    assert killed and set(results) == {p.key for p in points}
    failed = [r for r in results.values() if "data" not in r]
    assert len(failed) <= 1 and all("worker died" in r["error"] for r in failed)


def test_same_results_on_a_local_dask_cluster(tmp_path, serial_values):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=40) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        on_dask = run_sweep(parse(_small(tmp_path / "log"), "t"), tmp_path,
                            scheduler=cluster.scheduler_address, progress=False)
    assert on_dask.executed == 8 and _values(on_dask) == serial_values
    assert os.getpid() not in {e["pid"] for e in _executions(tmp_path / "log")}


def test_interrupted_sweep_resumes_without_recomputing(tmp_path):
    """Kill a running sweep halfway (SIGKILL: no clean-up), resume, and count executions."""
    log = tmp_path / "log"
    spec_path = tmp_path / "count.toml"
    spec_path.write_text(
        f'name = "count"\nexperiment = "lab-counting"\n[fixed]\nlog = "{log}"\nsleep = 0.25\n'
        '[grid]\nx = [0, 1, 2, 3]\ny = [0.5, 1.5]\nseed = [7, 8]\n')
    points_dir = tmp_path / "out" / "count" / "points"
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from trustlab.cli import main; sys.exit(main())",
                             "sweep", str(spec_path), "--jobs", "1",
                             "--out", str(tmp_path / "out"), "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ.copy())
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if points_dir.is_dir() and len(list(points_dir.glob("*.json"))) >= 5:
                break
            assert proc.poll() is None, proc.stderr.read().decode()[-1000:]
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    cached_before = {p.stem for p in points_dir.glob("*.json")}
    assert 5 <= len(cached_before) < 16, "the sweep should have been killed halfway"
    first_run = len(_executions(log))

    # the same points as the TOML file (sleep is a parameter, so it is part of each key)
    spec = parse({**_spec(log), "fixed": {"log": str(log), "sleep": 0.25}}, "t")
    keys = {p.key for p in spec.points()}
    assert cached_before <= keys
    executed_keys: list[str] = []
    outcome = run_sweep(spec, tmp_path / "out", jobs=2, progress=False,
                        on_result=lambda key, record: executed_keys.append(key))
    assert outcome.cached == len(cached_before)
    assert outcome.executed == 16 - len(cached_before) == len(_executions(log)) - first_run
    assert set(executed_keys).isdisjoint(cached_before)
    assert set(executed_keys) | cached_before == keys
    assert all(r["record"] is not None and "data" in r["record"] for r in outcome.ordered())
    again = run_sweep(spec, tmp_path / "out", jobs=2, progress=False)
    assert again.executed == 0 and again.cached == 16


def test_failed_points_are_reported_not_cached_and_retried(tmp_path, capsys):
    log = tmp_path / "log"
    spec = tmp_path / "s.toml"
    spec.write_text(f'name = "f"\nexperiment = "lab-counting"\n[fixed]\nlog = "{log}"\nfail-on = 2\n'
                    'user-error-on = 3\n[grid]\nx = [1, 2, 3]\n')
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(tmp_path), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "2 failed" in out and "deliberate failure at x=2" in out and "deliberately refused" in out
    assert len(list((tmp_path / "f" / "points").glob("*.json"))) == 1
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(tmp_path), "--no-progress"]) == 1
    assert [e["x"] for e in _executions(log)] == [1, 2, 3, 2, 3]  # only the failures re-ran
    csv_text = (tmp_path / "f" / "results.csv").read_text()
    assert "failed" in csv_text and "ok" in csv_text


def test_points_with_violations_are_listed_and_exit_1_also_from_cache(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "v"\nexperiment = "lab-counting"\n[fixed]\nviolate-on = 2\n[grid]\nx = [1, 2, 3]\n')
    for cached in (0, 3):  # the second run takes every point from the cache: still reported
        assert main(["sweep", str(spec), "--jobs", "1", "--out", str(tmp_path), "--no-progress"]) == 1
        out = capsys.readouterr().out
        assert f"3 points, {cached} from cache" in out and "0 failed, 1 with violations" in out
        assert "1 deliberate violation at x=2" in out
    assert (tmp_path / "v" / "results.csv").read_text().count("violations") == 1
    spec.write_text('name = "v"\nexperiment = "lab-counting"\n[grid]\nx = [1, 3]\n')
    assert main(["sweep", str(spec), "--jobs", "1", "--out", str(tmp_path), "--no-progress"]) == 0
    assert "0 with violations" in capsys.readouterr().out


def test_damaged_cache_file_is_recomputed(tmp_path):
    spec = parse(_spec(tmp_path / "log"), "t")
    run_sweep(spec, tmp_path, jobs=1, progress=False)
    victim = sorted((tmp_path / "count" / "points").glob("*.json"))[3]
    victim.write_text('{"experiment": "lab-counting", "da')
    again = run_sweep(spec, tmp_path, jobs=1, progress=False)
    assert again.executed == 1 and again.cached == 15


@pytest.mark.parametrize("doc, message", [
    ({"experiment": "nope"}, "unknown experiment 'nope'"),
    ({"experiment": "lab-counting", "grid": {"z": [1]}}, "no parameter 'z'"),
    ({"experiment": "lab-counting", "grid": {"x": 3}}, "grid.x must be a non-empty list"),
    ({"experiment": "lab-counting", "grid": {"x": ["a"]}}, "invalid int value"),
    ({"experiment": "lab-counting", "colour": 1}, "unknown key(s) colour"),
    ({"experiment": "lab-counting", "fixed": {"x": 1}, "grid": {"x": [1]}}, "both fixed and in the grid"),
    ({"experiment": "lab-counting", "name": "../up"}, "plain name"),
    ({"experiment": "lab-counting", "grid": {"x": [1, 2], "seed": [1, 1]}}, "grid.seed: the value 1 is listed twice"),
    ({"experiment": ["lab-counting", "lab-counting"]}, "lists 'lab-counting' twice"),
    ({"experiment": "oracle", "fixed": {"parties": 1001}}, "trustlab run oracle: --parties 1001: must be between 2"),
    ({"experiment": "wallet", "grid": {"purchases": [5, 0]}}, "trustlab run wallet: --purchases 0: must be between 1"),
])
def test_bad_specs_fail_before_running(doc, message):
    with pytest.raises(TrustlabError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(doc, "spec.toml").points()


def test_cli_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("experiment = [")
    assert main(["sweep", str(bad)]) == 2
    assert main(["sweep", str(tmp_path / "missing.toml")]) == 2
    assert main(["sweep", str(bad), "--jobs", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and "not valid TOML" in err[0] and "cannot read sweep spec: no such file" in err[1]


def test_dry_run_and_unreachable_scheduler(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('experiment = "lab-counting"\n[grid]\nx = [1, 2]\n')
    assert main(["sweep", str(spec), "--dry-run", "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out.count("pending") == 2
    assert main(["sweep", str(spec), "--out", str(tmp_path), "--scheduler", "tcp://127.0.0.1:9",
                 "--no-progress"]) == 2
    assert "cannot connect to a Dask scheduler" in capsys.readouterr().err


def test_example_specs_parse():
    for path in sorted(Path(__file__).parents[2].joinpath("examples", "sweeps").glob("*.toml")):
        from trustlab.sweep import load

        assert load(path).points(), path


@pytest.mark.swtpm
def test_each_swtpm_backed_point_gets_its_own_swtpm(tmp_path):
    import shutil

    if shutil.which("swtpm") is None:
        pytest.skip("swtpm is not installed")
    spec = parse({"name": "tpm", "experiment": "lab-swtpm", "grid": {"point": [1, 2, 3, 4]}}, "t")
    outcome = run_sweep(spec, tmp_path, jobs=2, progress=False)
    data = _values(outcome)
    assert [d["rc"] for d in data] == [0, 0, 0, 0] and all(d["random_len"] == 16 for d in data)
    assert len({d["swtpm_pid"] for d in data}) == 4 and len({d["state_dir"] for d in data}) == 4
    for d in data:  # each TPM went away with its point: no process, no state left behind
        assert not Path(d["state_dir"]).exists()
        try:
            os.kill(d["swtpm_pid"], 0)
            alive = Path(f"/proc/{d['swtpm_pid']}/cmdline").read_bytes().startswith(b"swtpm")
        except ProcessLookupError:
            alive = False
        assert not alive


def test_sweep_plots_aggregate_points_into_a_report(tmp_path, image_check):
    import numpy as np

    doc = {"name": "fig", "experiment": "lab-counting", "grid": {"x": [0, 1, 2], "y": [0.0, 10.0], "seed": [7, 8]},
           "plot": [{"x": "x", "y": "value", "series": "y", "aggregate": "mean", "title": "value vs x"},
                    {"x": "x", "y": "no.such.path", "kind": "bar"}]}
    outcome = run_sweep(parse(doc, "t"), tmp_path, jobs=1, progress=False)
    assert outcome.executed == 12
    summary = json.loads((tmp_path / "fig" / "report" / "results.json").read_text())[0]
    assert summary["experiment"] == "sweep:fig" and len(summary["data"]) == 12
    noise = np.mean([np.random.default_rng(s).random() for s in (7, 8)])
    first = summary["plots"][0]["series"]
    assert [s["label"] for s in first] == ["y=0.0", "y=10.0"]
    assert first[1]["y"] == pytest.approx([x * x + 10.0 + noise for x in (0, 1, 2)])
    assert "no.such.path: no numeric values" in summary["text"]
    page = tmp_path / "fig" / "report" / "index.html"
    assert image_check(page)["broken"] == []


@pytest.mark.parametrize("plot, message", [
    ({"x": "z", "y": "value"}, "'z' is not a grid parameter"),
    ({"x": "x"}, "'y' must be given"),
    ({"x": "x", "y": "value", "aggregate": "sum"}, "aggregate must be one of"),
    ({"x": "x", "y": "value", "colour": "red"}, "unknown key"),
])
def test_bad_sweep_plots_are_refused(plot, message):
    with pytest.raises(TrustlabError, match=message):
        parse({"experiment": "lab-counting", "grid": {"x": [1]}, "plot": [plot]}, "spec.toml")


def test_fresh_recomputes_everything_and_records_carry_their_point(tmp_path):
    log = tmp_path / "log"
    spec = parse(dict(_spec(log), grid={"x": [1, 2]}), "t")
    first = run_sweep(spec, tmp_path, jobs=1, progress=False)
    meta = first.ordered()[1]["record"]["meta"]["sweep"]
    assert meta["name"] == "count" and meta["params"]["x"] == 2 and meta["key"] == first.points[1].key
    again = run_sweep(spec, tmp_path, jobs=1, progress=False, fresh=True)
    assert again.executed == 2 and again.cached == 0 and len(_executions(log)) == 4


def test_params_lists_what_a_spec_may_set(capsys):
    assert main(["sweep", "--params", "lab-counting"]) == 0
    out = capsys.readouterr().out
    assert "fail_on" in out and "int" in out
    assert main(["sweep"]) == 2 and "give a sweep spec" in capsys.readouterr().err


# --- cache integrity (issue 14): a point file proves it is that point's result ---------------------------

def _points(tmp_path):
    return sorted((tmp_path / "count" / "points").glob("*.json"))


def test_a_point_file_copied_over_another_is_recomputed_and_reported(tmp_path, capsys):
    spec = parse(_spec(tmp_path / "log"), "t")
    first = run_sweep(spec, tmp_path, jobs=1, progress=False)
    good = {r["key"]: r["record"]["data"]["value"] for r in first.ordered()}
    a, b = _points(tmp_path)[:2]
    b.write_bytes(a.read_bytes())  # a's result under b's name
    capsys.readouterr()
    again = run_sweep(spec, tmp_path, jobs=1, progress=False)
    assert again.executed == 1 and again.cached == 15
    assert {r["key"]: r["record"]["data"]["value"] for r in again.ordered()} == good  # nothing wrong in results
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and b.name in err[0] and "another point's result" in err[0]
    assert len(list((tmp_path / "count" / "points" / "damaged").iterdir())) == 1  # kept, not deleted


def test_an_edited_point_file_fails_its_content_hash(tmp_path, capsys):
    spec = parse(_spec(tmp_path / "log"), "t")
    run_sweep(spec, tmp_path, jobs=1, progress=False)
    victim = _points(tmp_path)[5]
    doc = json.loads(victim.read_text())
    doc["data"]["value"] = 1e9
    victim.write_text(json.dumps(doc))
    capsys.readouterr()
    again = run_sweep(spec, tmp_path, jobs=1, progress=False)
    assert again.executed == 1 and all(r["record"]["data"]["value"] < 1e6 for r in again.ordered())
    assert "content hash mismatch" in capsys.readouterr().err


def test_damaged_file_and_directory_entries_are_reported_and_kept(tmp_path, capsys):
    spec = parse(_spec(tmp_path / "log"), "t")
    run_sweep(spec, tmp_path, jobs=1, progress=False)
    truncated, directory = _points(tmp_path)[:2]
    truncated.write_text('{"experiment": "lab-counting", "da')
    directory.unlink()
    directory.mkdir()
    (directory / "inside").write_text("x")
    capsys.readouterr()
    assert main(["sweep", "--dry-run", str(_write_spec(tmp_path)), "--out", str(tmp_path)]) == 0
    dry = capsys.readouterr()
    assert dry.out.count("pending") == 2 and dry.err.count("would be recomputed") == 2
    again = run_sweep(spec, tmp_path, jobs=1, progress=False)
    assert again.executed == 2
    damaged = sorted(p.name for p in (tmp_path / "count" / "points" / "damaged").iterdir())
    assert len(damaged) == 2 and (tmp_path / "count" / "points" / "damaged").joinpath(
        [d for d in damaged if d.startswith(directory.name)][0], "inside").exists()
    err = capsys.readouterr().err
    assert "unreadable" in err and "not a regular file" in err


def _write_spec(tmp_path):
    log = tmp_path / "log"
    path = tmp_path / "count.toml"
    path.write_text(f'name = "count"\nexperiment = "lab-counting"\n[fixed]\nlog = "{log}"\n'
                    '[grid]\nx = [0, 1, 2, 3]\ny = [0.5, 1.5]\nseed = [7, 8]\n')
    return path


def test_fresh_over_a_directory_entry_is_not_a_traceback(tmp_path):
    spec = parse(_spec(tmp_path / "log"), "t")
    run_sweep(spec, tmp_path, jobs=1, progress=False)
    victim = _points(tmp_path)[0]
    victim.unlink()
    victim.mkdir()
    again = run_sweep(spec, tmp_path, jobs=1, progress=False, fresh=True)
    assert again.executed == 16 and victim.is_file()


def test_a_second_sweep_on_the_same_directory_is_refused(tmp_path, capsys):
    from trustlab.sweep.cache import sweep_lock

    spec_path = _write_spec(tmp_path)
    with sweep_lock(tmp_path / "count"):
        assert main(["sweep", str(spec_path), "--out", str(tmp_path), "--jobs", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "another sweep" in err and f"pid {os.getpid()}" in err
    assert not (tmp_path / "log").exists()  # nothing ran
    assert main(["sweep", str(spec_path), "--out", str(tmp_path), "--jobs", "1", "--no-progress"]) == 0


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def test_no_process_outlives_a_killed_sweep_and_resume_leaves_no_temp_file(tmp_path):
    """Issue 23: after kill -9 of a sweep no process of it is left after 5 s; a resume removes the
    temporary files of writes the kill cut short."""
    log = tmp_path / "log"
    spec_path = tmp_path / "slow.toml"
    # two 1-s points run in the sweep's own process and show the rest is worth a worker (even on a
    # machine loaded to several times its CPUs); then both are inside 30-s points
    spec_path.write_text(f'name = "slow"\nexperiment = "lab-counting"\n[fixed]\nlog = "{log}"\n'
                         '[grid]\nsleep = [1.0, 30]\nx = [0, 1, 2, 3, 4, 5, 6, 7]\n'
                         '[[plot]]\nx = "x"\ny = "value"\n')  # a report: its drawing process must die too
    argv = [sys.executable, "-c", "import sys; from trustlab.cli import main; sys.exit(main())",
            "sweep", str(spec_path), "--jobs", "2", "--out", str(tmp_path / "out"), "--no-progress"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not {e["pid"] for e in _executions(log)} - {proc.pid}:
            assert proc.poll() is None
            time.sleep(0.05)
        family = _descendants(proc.pid)
        assert {e["pid"] for e in _executions(log)} - {proc.pid} <= family and len(family) >= 2  # + drawer
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(p) for p in family):
        time.sleep(0.1)
    left = [p for p in family if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, "processes of the killed sweep still alive 5 s later"
    points = tmp_path / "out" / "slow" / "points"
    done = sorted(points.glob("*.json"))
    assert done  # the finished 1-s points were cached
    # what a kill in the middle of a cache write or of results.json leaves (tempfile's names)
    stale = [points / f".{done[0].name}.k3j_x9a1.tmp", tmp_path / "out" / "slow" / ".results.json.ab12cd.tmp"]
    for path in stale:
        path.write_text("{")
    # resume the part that finished (cached: nothing runs, so this stays fast)
    xs = sorted(json.loads(f.read_text())["data"]["x"] for f in done)
    doc = {"name": "slow", "experiment": "lab-counting", "fixed": {"log": str(log), "sleep": 1.0},
           "grid": {"x": xs}}
    outcome = run_sweep(parse(doc, "t"), tmp_path / "out", jobs=2, progress=False)
    assert outcome.executed == 0 and outcome.cached == len(done)
    assert not [p for p in stale if p.exists()]
    assert not list((tmp_path / "out").rglob("*.tmp"))


def _canonical(path: Path) -> bytes:
    """A results file's bytes, with the run clock masked (each record's wall time and finish time:
    they differ between any two runs, on one job or many); everything else must match byte for byte."""
    rows = json.loads(path.read_bytes())
    for row in rows if isinstance(rows, list) else []:
        record = row.get("record", row) if isinstance(row, dict) else None
        meta = record.get("meta") if isinstance(record, dict) else None
        if isinstance(meta, dict):
            meta.pop("wall_s", None)
            meta.pop("finished_utc", None)
    return json.dumps(rows, indent=1).encode()


def _live_children() -> set[int]:
    return {p for p in _descendants(os.getpid()) if _alive(p)}


def test_jobs_1_and_2_write_identical_files_whichever_process_ran_a_point(tmp_path, monkeypatch, capsys):
    """--jobs 2 with a worker joining and the report drawn on the second process writes what --jobs 1
    writes: results.csv and the figures byte for byte, results.json but for the run clock; spec order;
    and no process of the sweep is left once it returns (issue 24)."""
    monkeypatch.setattr("trustlab.sweep.execute.worth_workers", lambda *a: True)  # whatever the load
    log = tmp_path / "log"
    spec_path = tmp_path / "same.toml"
    spec_path.write_text(f'name = "same"\nexperiment = "lab-counting"\n[fixed]\nlog = "{log}"\nsleep = 0.4\n'
                         '[grid]\nx = [0, 1, 2, 3, 4]\nseed = [7, 8]\n'
                         '[[plot]]\nx = "x"\ny = "value"\nseries = "seed"\n')
    before = _live_children()
    runs = {}
    for jobs in (1, 2):
        out = tmp_path / f"jobs{jobs}"
        assert main(["sweep", str(spec_path), "--jobs", str(jobs), "--out", str(out), "--no-progress"]) == 0
        runs[jobs] = (out / "same", capsys.readouterr().out)
    pids = [e["pid"] for e in _executions(log)]
    assert set(pids[:10]) == {os.getpid()}  # --jobs 1: all here
    assert len(set(pids[10:])) == 2  # --jobs 2: this process and a worker
    assert "--jobs" not in runs[1][1]
    note = [line for line in runs[2][1].splitlines() if line.startswith("--jobs 2:")]
    assert len(note) == 1 and "1 worker(s) joined after 2 of 10 points" in note[0], runs[2][1]
    assert "report drawn on a second process" in note[0]
    one, two = runs[1][0], runs[2][0]
    assert (one / "results.csv").read_bytes() == (two / "results.csv").read_bytes()
    assert _canonical(one / "results.json") == _canonical(two / "results.json")
    assert _canonical(one / "report" / "results.json") == _canonical(two / "report" / "results.json")
    pngs = sorted(p.name for p in (one / "report" / "plots").glob("*.png"))
    assert pngs and pngs == sorted(p.name for p in (two / "report" / "plots").glob("*.png"))
    for name in pngs:
        assert (one / "report" / "plots" / name).read_bytes() == (two / "report" / "plots" / name).read_bytes()
    rows = json.loads((two / "results.json").read_text())
    assert [(r["params"]["x"], r["params"]["seed"]) for r in rows] == [(x, s) for x in range(5) for s in (7, 8)]
    assert _live_children() <= before  # the worker and the drawer are gone


def test_light_points_say_why_no_worker_started(tmp_path, capsys):
    spec_path = tmp_path / "light.toml"
    spec_path.write_text('name = "light"\nexperiment = "lab-counting"\n[grid]\nx = [0, 1, 2, 3, 4, 5]\n')
    assert main(["sweep", str(spec_path), "--jobs", "2", "--out", str(tmp_path), "--no-progress"]) == 0
    note = [line for line in capsys.readouterr().out.splitlines() if line.startswith("--jobs")]
    assert len(note) == 1 and note[0].startswith("--jobs 2: no workers; the 6 points ran in this process (")
    assert "a worker's start ~" in note[0]


def test_a_drawer_that_dies_leaves_the_report_to_the_sweep(tmp_path, monkeypatch):
    """The second process killed before it draws: the sweep draws the report itself, same figures."""
    from trustlab.sweep import drawing

    real = drawing.ReportDrawer.hand_over

    def kill_first(self, *args, **kwargs):
        os.kill(self.pid, signal.SIGKILL)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(drawing.ReportDrawer, "hand_over", kill_first)
    doc = dict(_small(tmp_path / "log"), plot=[{"x": "x", "y": "value"}])
    outcome = run_sweep(parse(doc, "t"), tmp_path, jobs=2, progress=False)
    assert outcome.parallel is not None and outcome.parallel.endswith("report drawn here (the second process failed)")
    assert len(list((tmp_path / "count" / "report" / "plots").glob("*.png"))) == 1


def test_the_jobs_line_says_how_many_workers_and_why():
    from trustlab.sweep.execute import Decision

    assert "too few to time" in Decision(2, points=2).line()
    light = Decision(2, points=24, after_points=24, per_point_s=0.004, start_s=0.9).line()
    assert light.startswith("--jobs 2: no workers; the 24 points ran in this process (4 ms a point, a worker's "
                            "start ~0.90 s")
    assert Decision(3, points=10, workers=2, after_points=2, per_point_s=0.5, start_s=0.3).line() == \
        "--jobs 3: 2 worker(s) joined after 2 of 10 points (500 ms a point, a worker's start ~0.30 s)"
    assert "cannot start a process" in Decision(2, points=5, refused="cannot start a process: EAGAIN").line()


def test_the_sweeps_report_can_be_redrawn_in_place_as_its_last_line_says(tmp_path, capsys):
    """The sweep's report directory carries 'trustlab report''s marker: the command the last line (and the
    shipped specs' comments) give redraws it there instead of refusing a foreign directory (D3)."""
    spec_path = tmp_path / "redraw.toml"
    spec_path.write_text('name = "redraw"\nexperiment = "lab-counting"\n[grid]\nx = [0, 1]\n'
                         '[[plot]]\nx = "x"\ny = "value"\n')
    assert main(["sweep", str(spec_path), "--jobs", "1", "--out", str(tmp_path), "--no-progress"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    report = tmp_path / "redraw" / "report"
    assert f"report: {report / 'index.html'}" in last and (report / "index.html").is_file()
    redraw = last.split("instead: ", 1)[1].rstrip(")").split()
    assert redraw[:2] == ["trustlab", "report"]
    assert main(redraw[1:]) == 0, capsys.readouterr().err
    assert main(["sweep", str(spec_path), "--jobs", "1", "--out", str(tmp_path), "--no-progress"]) == 0  # and back


def _refused_by_dry_run_and_run(tmp_path, capsys, cases):
    """Each (spec body, message): refused with exit 2 and that one line by ``--dry-run`` and by the run, nothing
    written. Returns the spec's path for the caller's next body."""
    spec = tmp_path / "s.toml"
    for body, message in cases:
        spec.write_text(body)
        for extra in (["--dry-run"], ["--no-progress", "--jobs", "1"]):
            assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), *extra]) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "o").exists()
    return spec


def test_dry_run_refuses_what_the_run_refuses(tmp_path, capsys):
    """A dry run checks each point's arguments with the run's own checks (the experiment's ``check``):
    an out-of-range parameter is refused by both before anything runs, a grid value given twice too, and
    a point only its combination makes invalid is listed as invalid, not pending, with exit 1 (D6)."""
    spec = _refused_by_dry_run_and_run(tmp_path, capsys, (
        ('experiment = "oracle"\n[fixed]\nparties = 1001\n', "--parties 1001: must be between 2"),
        ('experiment = "lab-counting"\n[grid]\nseed = [1, 1]\n', "grid.seed: the value 1")))
    spec.write_text('experiment = "lab-counting"\n[grid]\nx = [1, -1]\ny = [1.0, -1.0]\n')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--dry-run"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == ["pending", "pending", "pending", "invalid"]
    assert lines[3].endswith("(trustlab run lab-counting: --x -1 with --y -1.0: not both negative)")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--no-progress", "--jobs", "1"]) == 1
    assert "failed" in capsys.readouterr().out


def test_dry_run_refuses_the_pqc_tpm_points_the_run_refuses(tmp_path, capsys):
    """pqc-tpm's checks (--draws range, --algorithms, --message-bytes, --focus, ...) are its ``check``, not
    the start of its run: a dry run no longer lists as pending a point the run then refuses."""
    from trustlab.experiments.registry import run_argv

    spec = _refused_by_dry_run_and_run(tmp_path, capsys, (
        ('experiment = "pqc-tpm"\n[fixed]\ndraws = 5\n', "--draws must be between 10 and 20000, got 5"),
        ('experiment = "pqc-tpm"\n[grid]\ndraws = [10, 20001]\n', "got 20001"),
        ('experiment = "pqc-tpm"\n[fixed]\nalgorithms = "ML-DSA-99"\n', "--algorithms: 'ML-DSA-99'")))
    # each grid value is valid with the others' first values; only their combination is not
    a, b = "infineon-slb9670-wolftpm", "infineon-slb9672-wolftpm"
    spec.write_text(f'experiment = "pqc-tpm"\n[fixed]\ndraws = 10\nalgorithms = "ML-KEM-768"\n'
                    f'[grid]\nprofiles = ["{a},{b}", "{a}"]\nfocus = ["{a}", "{b}"]\n')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--dry-run"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == ["pending", "pending", "pending", "invalid"]
    message = f"--focus: '{b}' is not among the priced --profiles"
    assert lines[3].endswith(f"(trustlab run pqc-tpm: {message})")
    argv = lines[3].split("  ")[2].split()[1:]  # key, state, "pqc-tpm ARGV...", "(error)"
    with pytest.raises(TrustlabError, match=message):  # the run refuses that point with the same words
        run_argv("pqc-tpm", argv)


def test_a_shared_provenance_table_is_no_csv_column(tmp_path):
    """results.csv has one column per scalar figure of a point's data; a provenance table (texts said once,
    trustlab.shared_provenance) is not a figure: expanded away, it adds no column per text, and a field of
    keys is written as the text it stands for."""
    import csv

    from trustlab.sweep import runner
    from trustlab.sweep.spec import Point, SweepSpec

    record = {"data": {"ms": 1.5, "note": ["p1", "p2"], "rows": [{"provenance": ["p1"]}],
                       "provenance": {"p1": "a source", "p2": "another"}}}
    point = Point("pqc-tpm", {}, ("pqc-tpm",), "k1")
    outcome = runner.SweepOutcome(SweepSpec("s", ["pqc-tpm"]), [point], {"k1": record}, out_dir=tmp_path)
    runner._write_results(outcome)
    with open(tmp_path / "results.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert {k: v for k, v in row.items() if k.startswith("data.")} == {"data.ms": "1.5",
                                                                         "data.note": "a source; another"}

"""The flagship's fork server (issue 15): each run a fork of one preloaded process, same records as a fresh one."""

from __future__ import annotations

import os
import signal

import pytest

from trustlab.cli._forkserver import ForkServer, ForkServerError
from trustlab.cli.flagship import _child_env, run_one

RUNS = [("lab-counting", ["--x", "3", "--seed", "5"]),
        ("ae", ["--platform", "sle78-aes"]),
        ("hbs", ["--profile", "jcop-2018", "--h", "4", "--d", "2", "--check"])]


def _figures(record: dict) -> dict:
    assert "data" in record, record.get("error")
    return {k: v for k, v in record.items() if k != "meta"}  # meta: host timings, finish time


@pytest.fixture
def server():
    env = _child_env(2)
    srv = ForkServer(sorted({name for name, _ in RUNS}), env, timeout=120)
    yield srv, env
    srv.close(kill=True)


def test_a_forked_run_records_what_a_fresh_process_records(server, tmp_path) -> None:
    srv, env = server
    for i, (name, argv) in enumerate(RUNS):
        forked = run_one(name, argv, tmp_path / f"f{i}.json", 120, env, srv)
        fresh = run_one(name, argv, tmp_path / f"p{i}.json", 120, env, None)
        assert _figures(forked) == _figures(fresh), name
        assert forked["meta"]["process_cpu_s"] > 0 and forked["meta"]["argv"] == argv


def test_failing_runs_report_their_exit_status_and_stderr(server, tmp_path) -> None:
    srv, env = server
    crashed = run_one("lab-counting", ["--x", "1", "--fail-on", "1"], tmp_path / "a.json", 120, env, srv)
    assert "exit status 1" in crashed["error"] and "deliberate failure at x=1" in crashed["error"]
    refused = run_one("lab-counting", ["--x", "1", "--user-error-on", "1"], tmp_path / "b.json", 120, env, srv)
    assert "exit status 2" in refused["error"] and "deliberately refused" in refused["error"]
    slow = run_one("lab-counting", ["--sleep", "30"], tmp_path / "c.json", 1, env, srv)
    assert slow["error"] == "timed out after 1 s"
    assert "data" in run_one("lab-counting", [], tmp_path / "d.json", 120, env, srv)  # the server carries on


def test_without_the_server_runs_fall_back_to_fresh_processes(server, tmp_path) -> None:
    srv, env = server
    os.killpg(srv._proc.pid, signal.SIGKILL)
    srv._proc.wait()
    first = run_one("lab-counting", [], tmp_path / "a.json", 120, env, srv)
    # the run in flight when the server died is a failure; once it is known dead, fresh processes
    assert "data" in first or "fork server" in first["error"]
    assert not srv.alive
    assert "data" in run_one("lab-counting", [], tmp_path / "b.json", 120, env, srv)
    with pytest.raises(ForkServerError):
        srv.run(tmp_path / "c.json", "lab-counting", [], 120)

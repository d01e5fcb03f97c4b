"""SIGTERM to ``trustlab run`` removes the swtpm's temporary state as Ctrl-C does; a run tidies what a
killed (SIGKILL) one left, as ``serve`` does."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trustlab.cli import main
from trustlab.serving.swtpm import OWNER_FILE, STATE_PREFIX

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")
@pytest.mark.parametrize("run", [
    ["counters", "--scheme", "log", "--tpm12", "libtpms", "--counters", "2,16,128", "--profile",
     "infineon-counters-2010"],
    ["ftpm-vs-dtpm"],
])
def test_sigterm_during_a_swtpm_run_removes_its_state(run, tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen([sys.executable, "-m", "trustlab", "run", *run],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(f"{STATE_PREFIX}*")):  # the swtpm is up: its state directory exists
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.strip().splitlines()[-1] == "trustlab: terminated", err
    assert "Traceback" not in err
    assert not list(tmp_path.glob(f"{STATE_PREFIX}*"))


def test_a_run_removes_the_state_a_killed_process_left(tmp_path, monkeypatch, capsys):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stale = tmp_path / f"{STATE_PREFIX}dead"
    stale.mkdir()
    (stale / OWNER_FILE).write_text("999999999 1 999999998\n")  # no such process
    live = tmp_path / f"{STATE_PREFIX}live"
    live.mkdir()
    (live / OWNER_FILE).write_text(f"{os.getpid()} {_start_time(os.getpid())} 0\n")
    assert main(["run", "timing-model", "--json"]) == 0
    assert not stale.exists() and live.exists()
    assert f"removed {stale}" in capsys.readouterr().err


def _start_time(pid: int) -> str:
    from trustlab.serving.peers import start_time

    return start_time(pid)

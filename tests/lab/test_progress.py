"""Long runs show a progress bar on stderr - in a terminal, under ``trustlab run`` only - and stdout stays the
table or the --json document; short runs, pipes, sweeps and ``--help`` never load tqdm."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from trustlab import progress
from trustlab.cli import main

SRC = Path(__file__).resolve().parents[2] / "src"
RUNS = {
    "oracle": (["--parties", "3", "--queries", "4"], "oracle"),
    "timing-model": (["--repeats", "2", "--profile", "stm-2010", "--no-simulate"], "timing-model:"),
    "wallet": (["--merchants", "2", "--purchases", "5"], "wallet"),
}


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(argv: list[str], err: io.StringIO) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(argv) == 0
    return out.getvalue()


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_long_run_in_a_terminal_shows_a_bar_on_stderr_only(name, monkeypatch):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)  # every run is long
    args, said = RUNS[name]
    err = _Terminal()
    out = _run(["run", name, *args, "--json"], err)
    json.loads(out)  # stdout is the JSON document alone
    assert err.getvalue().startswith(f"\r{said}") and "%|" in err.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", sorted(RUNS))
def test_no_bar_into_a_pipe_or_inside_a_sweep(name, monkeypatch):
    from trustlab.experiments.registry import run_argv

    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    args, _said = RUNS[name]
    err = io.StringIO()  # not a terminal
    _run(["run", name, *args, "--json"], err)
    assert err.getvalue() == ""
    terminal = _Terminal()
    with contextlib.redirect_stderr(terminal):  # a sweep's point (run_argv, not `trustlab run`): its own bar only
        run_argv(name, args)
    assert terminal.getvalue() == ""


def test_a_short_run_in_a_terminal_prints_nothing():
    err = _Terminal()
    _run(["run", "oracle", "--parties", "2", "--queries", "1"], err)
    assert err.getvalue() == ""


def test_help_and_piped_runs_do_not_import_tqdm():
    code = ("import sys, contextlib, io\n"
            "from trustlab.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    for argv in (['run', 'oracle', '--help'], ['run', 'wallet', '--help']):\n"
            "        try:\n"
            "            main(argv)\n"
            "        except SystemExit:\n"
            "            pass\n"
            "    main(['run', 'oracle', '--parties', '2', '--queries', '1'])\n"
            "print('tqdm' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"

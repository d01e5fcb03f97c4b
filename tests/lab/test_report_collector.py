"""The report freezes the garbage collector's view (gc.freeze) only while it draws: a library or
notebook caller's cyclic garbage alive meanwhile is collected after, and a freeze of the caller's
own is left as it was."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from trustlab.experiments.registry import run_argv
from trustlab.report import write_report

SRC = str(Path(__file__).resolve().parents[2] / "src")


class _Cycle:
    pass


def _cyclic_garbage() -> weakref.ref:
    """An object in a reference cycle that nothing else holds: only the cyclic collector frees it."""
    a, b = _Cycle(), _Cycle()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_importing_matplotlib_for_drawing_freezes_nothing():
    code = ("import gc; from trustlab.report.plots import preload; preload(); "
            "print(gc.get_freeze_count(), gc.isenabled())")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=SRC),
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "True"]


@pytest.fixture(scope="module")
def records():
    return [run_argv("lab-counting", ["--x", str(x)]).to_record() for x in range(8)]


@pytest.mark.parametrize("jobs", [1, 2])
def test_garbage_alive_while_the_report_draws_is_collected_after(tmp_path, records, jobs):
    if gc.get_freeze_count():
        pytest.skip("something in this test process froze objects already")
    garbage = _cyclic_garbage()
    write_report(records, tmp_path, jobs=jobs)
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    gc.collect()
    assert garbage() is None


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_freeze_of_the_callers_own_is_left_alone(tmp_path, records, jobs):
    if gc.get_freeze_count():
        pytest.skip("something in this test process froze objects already")
    garbage = _cyclic_garbage()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        write_report(records, tmp_path, jobs=jobs)
        gc.collect()
        assert garbage() is not None  # still frozen: not thawed by the report
        assert gc.get_freeze_count() <= frozen  # nor anything more frozen (some frozen objects died)
    finally:
        gc.unfreeze()
    gc.collect()
    assert garbage() is None


def test_the_report_command_freezes_only_at_its_exit(tmp_path):
    """``trustlab report`` owns its process: at exit (atexit, before the modules' teardown) what is
    alive is frozen, so the teardown's collections skip it; until then nothing is frozen."""
    (tmp_path / "r.json").write_text(json.dumps(run_argv("lab-counting", ["--x", "1"]).to_record()))
    code = ("import atexit, gc, sys\n"
            "atexit.register(lambda: print('at exit', gc.get_freeze_count() > 0))\n"  # runs after ours (LIFO)
            "from trustlab.cli import main\n"
            f"main(['report', {str(tmp_path / 'r.json')!r}, '--out', {str(tmp_path / 'out')!r}])\n"
            "print('after', gc.get_freeze_count())\n")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=SRC),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[-2:] == ["after 0", "at exit True"]

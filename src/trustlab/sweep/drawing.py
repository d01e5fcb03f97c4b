"""The sweep's report drawn on a second process, which imports matplotlib while the points run.

Drawing a sweep's figures costs about half a second of importing matplotlib and
the report writer before the first line is drawn, as long as the shipped sweeps'
points take together. With ``--jobs`` above 1 that import need not wait for the
points: once the first point is in, :class:`ReportDrawer` forks the sweep's
process (before any worker and its threads exist) and the child imports the
writer and matplotlib beside the remaining points, then waits for the report's
records. Forked after the first point, it inherits what the experiment imports
(numpy, say) rather than importing it a second time: it does only work the
sweep would otherwise do itself, so on a machine with no CPU to spare the
sweep spends no more CPU than with ``--jobs 1`` (a fork and its copied pages).

Never slower by construction: when the points are done the drawer has been
importing for as long as they ran, so what is left of its import is at most
what the sweep would do itself; the sweep waits for it to say it is ready
(one byte on a pipe; at most :data:`READY_WAIT_S`, against a drawer that
hangs) and hands the report over. If the drawer fails or dies, the sweep draws
the report itself, exactly as with ``--jobs 1``. The same writer draws the
same records, so the files are the ones ``--jobs 1`` writes.

The drawer dies with the sweep (``PR_SET_PDEATHSIG``, as the workers), ignores
Ctrl-C (the sweep's to handle), and is killed and reaped by :meth:`close`.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import sys
from pathlib import Path
from typing import Any, Sequence

from trustlab.sweep.children import die_with, receive, send

READY = b"R"
READY_WAIT_S = 30.0  # a drawer not ready by then is taken for hung: the sweep draws the report itself


class ReportDrawer:
    """A forked child that preloads the report writer and draws one report when asked."""

    def __init__(self) -> None:
        parent = os.getpid()
        from_child, to_parent = os.pipe()
        from_parent, to_child = os.pipe()
        for stream in (sys.stdout, sys.stderr):  # nothing buffered here is written twice by the child
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        try:
            pid = os.fork()
        except OSError:
            for fd in (from_child, to_parent, from_parent, to_child):
                os.close(fd)
            raise
        if pid == 0:  # the drawer: never returns into the sweep's code
            code = 1
            try:
                os.close(from_child)
                os.close(to_child)
                code = _drawer_main(parent, os.fdopen(from_parent, "rb"), os.fdopen(to_parent, "wb"))
            finally:
                os._exit(code)
        os.close(to_parent)
        os.close(from_parent)
        self.pid: int | None = pid
        self._answers = os.fdopen(from_child, "rb")
        self._requests = os.fdopen(to_child, "wb")
        self._ready = False
        self.drew = False  # True once the drawer has written the report

    def ready(self, wait: float = 0.0) -> bool:
        """Has the drawer finished its imports (waiting at most ``wait`` seconds)?"""
        if not self._ready and self.pid is not None:
            readable, _, _ = select.select([self._answers], [], [], wait)
            if readable:
                self._ready = self._answers.read(len(READY)) == READY
                if not self._ready:  # EOF: the drawer died
                    self.close()
        return self._ready

    def hand_over(self, records: Sequence[dict[str, Any]], out_dir: Path, title: str,
                  wait: float = READY_WAIT_S) -> bool:
        """Give the drawer the report to draw once it is ready; False (it died or hangs): draw it here."""
        if not self.ready(wait):
            return False
        try:
            send(self._requests, (list(records), str(out_dir), title))
        except (OSError, ValueError, pickle.PicklingError):
            return False
        return True

    def finished(self) -> bool:
        """Wait for the report handed over; True if the drawer wrote it (else draw it here)."""
        try:
            answer = receive(self._answers)
        except (OSError, ValueError, EOFError, pickle.UnpicklingError):
            answer = None
        self.drew = answer == "ok"
        return self.drew

    def close(self) -> None:
        """End the drawer (killed: it holds nothing worth finishing) and reap it."""
        if self.pid is None:
            return
        for stream in (self._requests, self._answers):
            try:
                stream.close()
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        self.pid = None


def _drawer_main(parent: int, requests: Any, answers: Any) -> int:
    """In the child: import the writer and matplotlib, say so, draw the one report sent, answer."""
    die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.dup2(2, 1)  # anything printed while drawing goes where the sweep's errors go
    from trustlab.report.plots import preload
    from trustlab.report.writer import write_report

    preload()
    answers.write(READY)
    answers.flush()
    job = receive(requests)
    if job is None:
        return 0
    records, out_dir, title = job
    try:
        write_report(records, Path(out_dir), title=title)
    except BaseException as exc:  # the sweep draws it again itself and meets the error there
        send(answers, f"failed: {type(exc).__name__}: {exc}")
        return 1
    send(answers, "ok")
    return 0


def start(jobs: int, scheduler: str | None, plots: bool, left: int) -> ReportDrawer | None:
    """A drawer when it can help: local ``--jobs`` above 1, a report to draw, and points ``left`` to
    run meanwhile (with none, the sweep would only wait for the drawer's imports)."""
    if jobs < 2 or scheduler or not plots or left < 1 or not hasattr(os, "fork"):
        return None
    try:
        return ReportDrawer()
    except OSError:  # no process to be had: the report is drawn here
        return None

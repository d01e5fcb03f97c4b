"""Local worker processes for a sweep: started on demand, fed one point at a time, dying with the sweep.

Why not a pool library: loky's workers and its resource tracker outlived a
``kill -9`` of the sweep (issue 23), a pool cannot take points from the same
queue as the sweep's own process, and its start-up was paid before a single
point had shown whether workers pay off. Here the sweep's process keeps running
points itself; each worker (a fresh interpreter, so it inherits no threads or
state of the sweep) takes the next pending point from the same queue, so a
worker that starts late or slowly costs nothing but its own start-up.

A worker dies with the sweep: the kernel sends it SIGKILL when the sweep's
process ends (``PR_SET_PDEATHSIG``, set before it reads its first point), and
it exits at EOF on its stdin; the swtpm processes its points start die with it
the same way (``serving/swtpm.py``). Protocol: length-prefixed pickles of
``(key, experiment, argv)`` in, ``(key, record)`` out, over the worker's
stdin/stdout (its own stdout, where experiments might print, goes to stderr).
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
from collections import deque
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import Any, Iterator, Sequence

from trustlab.sweep.children import die_with, receive, send
from trustlab.sweep.spec import Point

_ENTRY = "import sys; from trustlab.sweep.workers import worker_main; sys.exit(worker_main(int(sys.argv[1])))"
Result = tuple[str, dict[str, Any]]


# ---- in the worker -----------------------------------------------------------------------------

def worker_main(parent: int) -> int:
    """Run points sent on stdin until EOF; answers on the original stdout."""
    die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the sweep's to handle: it stops us
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever an experiment prints stays out of the protocol
    requests = sys.stdin.buffer
    from trustlab.sweep.point import run_point

    while (message := receive(requests)) is not None:
        key, experiment, argv = message
        send(answers, run_point(key, experiment, argv))
    return 0


# ---- in the sweep ------------------------------------------------------------------------------

class LocalWorkers:
    """Workers taking points from a queue shared with the sweep's own process.

    ``take()`` gives the sweep's process its next point (None when none is
    left); ``finished()`` the results workers have returned so far;
    ``rest()`` waits for all the results still to come from them.
    """

    def __init__(self, pending: deque[Point], count: int) -> None:
        import trustlab

        self._pending = pending
        self._lock = threading.Lock()
        self._results: SimpleQueue[Result | None] = SimpleQueue()
        self._procs: list[subprocess.Popen[bytes]] = []
        self._threads: list[threading.Thread] = []
        self._stopped = False
        self._feeders_done = 0
        src = str(Path(trustlab.__file__).resolve().parents[1])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [src, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]))
        for _ in range(count):  # from this (the main) thread: PR_SET_PDEATHSIG follows the forking thread
            try:
                proc = subprocess.Popen([sys.executable, "-c", _ENTRY, str(os.getpid())], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=env)
            except OSError:
                if self._procs:
                    break  # fewer workers than asked
                raise
            self._procs.append(proc)
            thread = threading.Thread(target=self._feed, args=(proc,), name="sweep-worker-feed", daemon=True)
            self._threads.append(thread)
            thread.start()

    @property
    def count(self) -> int:
        """Workers started (fewer than asked when the system refused more)."""
        return len(self._procs)

    def take(self) -> Point | None:
        with self._lock:
            return self._pending.popleft() if self._pending and not self._stopped else None

    def _feed(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        while True:
            with self._lock:
                if not self._pending or self._stopped:
                    break
                point = self._pending.popleft()
            try:
                send(proc.stdin, (point.key, point.experiment, list(point.argv)))
                answer = receive(proc.stdout)
            except (OSError, ValueError, pickle.UnpicklingError, EOFError):
                answer = None
            if answer is None:  # the worker died (or was stopped) on this point
                from trustlab.report.records import failure

                if not self._stopped:
                    self._results.put((point.key, failure(point.experiment, list(point.argv),
                                                          f"its sweep worker died (exit {proc.poll()})")))
                break
            self._results.put(answer)
        try:
            proc.stdin.close()  # EOF: the worker exits
        except OSError:
            pass
        self._results.put(None)  # this feeder is done

    def finished(self) -> Iterator[Result]:
        """Results the workers have returned so far (does not wait)."""
        while True:
            try:
                item = self._results.get_nowait()
            except Empty:
                return
            if item is not None:
                yield item
            else:
                self._feeders_done += 1

    def rest(self) -> Iterator[Result]:
        """Every result still to come, waiting for the workers to finish."""
        yield from self.finished()
        while self._feeders_done < len(self._threads):
            item = self._results.get()
            if item is None:
                self._feeders_done += 1
            else:
                yield item

    def close(self) -> None:
        """Stop handing out points, end the workers (killed if still busy) and reap them."""
        with self._lock:
            self._stopped = True
        for proc in self._procs:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
            except OSError:
                pass
        for proc in self._procs:
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for thread in self._threads:
            thread.join(timeout=5)
        for proc in self._procs:
            if proc.stdout is not None:
                proc.stdout.close()


def count_for(jobs: int, remaining: int) -> int:
    """Workers beside the sweep's own process: jobs - 1, never more than the points left for them."""
    return max(0, min(jobs - 1, remaining))


__all__: Sequence[str] = ("LocalWorkers", "worker_main", "count_for")

"""Running sweep points: in-process, on local worker processes beside it, or on Dask.

Every backend calls the same :func:`~trustlab.sweep.point.run_point` on the worker, which runs the
experiment exactly as ``trustlab run`` would and returns its record (or a
failure record). Results stream back in completion order and are cached by the
caller as they arrive; the final ordering is the spec's, so 1 job, N jobs and
a cluster give identical result files. Experiments that need a TPM start their
own swtpm inside the run, so each point — wherever it runs — has its own.

Parallel must never be slower than serial. Worker processes cost a start-up
(a fresh interpreter importing trustlab and the experiment, a tenth to half a
second), which light points (milliseconds each) never earn back. So
:func:`adaptive` keeps running points in the sweep's own process and starts
workers (``sweep/workers.py``) beside it only once two timed points show the
rest is long enough for them to pay off; they take points from the same queue,
so a late worker costs nothing but its own start. What it decided, with the
figures it decided on, is one line of the sweep's output (:class:`Decision`).
The sweep's report, the other part a light sweep spends its time on, is drawn
beside the points by ``sweep/drawing.py``. Dask gets points in batches, a few
per worker, not one task each.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from trustlab.errors import TrustlabError
from trustlab.sweep.point import run_point, run_points
from trustlab.sweep.spec import Point


INTERPRETER_START_S = 0.1  # a worker's fresh interpreter and trustlab's base imports, before the experiment's
TASKS_PER_WORKER = 4  # Dask: batches per worker: few round trips, yet a slow batch cannot hold up the end much


def batches(points: Sequence[Point], jobs: int) -> list[list[tuple[str, str, list[str]]]]:
    """Points in consecutive batches, about TASKS_PER_WORKER per worker."""
    size = max(1, math.ceil(len(points) / (jobs * TASKS_PER_WORKER)))
    items = [(p.key, p.experiment, list(p.argv)) for p in points]
    return [items[i:i + size] for i in range(0, len(items), size)]


def serial(points: Sequence[Point]) -> Iterator[tuple[str, dict[str, Any]]]:
    for p in points:
        yield run_point(p.key, p.experiment, p.argv)


def worth_workers(remaining: int, seconds_per_point: float, jobs: int, start_s: float) -> bool:
    """Would ``jobs - 1`` workers beside this process finish ``remaining`` points sooner than it alone?

    This process never stops running points, so a worker only adds: once it
    has started (``start_s``) the work left is shared ``jobs`` ways. Alone:
    ``W = remaining * t``; with workers: about ``start_s + (W - start_s) / jobs``,
    plus up to one point's time when a worker holds the last point. Workers
    start only if that saves more than two points' time and the start-up
    itself: on a shared machine a starting worker may take the CPU this
    process would have used, so the margin keeps "never slower" true there.
    """
    work = remaining * seconds_per_point
    return (work - start_s) * (1 - 1 / jobs) > start_s + 2 * seconds_per_point


def _busy() -> float:
    """How much a busy machine stretches a worker's start (load average per CPU, at least 1).

    Light points are not mistaken for heavy ones on a loaded machine, and
    workers that could not run any sooner are not started.
    """
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:
        return 1.0


@dataclass
class Decision:
    """What :func:`adaptive` decided about workers, and the figures it decided on (for one line of output)."""

    jobs: int
    points: int = 0  # to run
    workers: int = 0  # started
    after_points: int = 0  # points this process had run when they started
    per_point_s: float | None = None  # the fastest point timed here, at the last decision
    start_s: float | None = None  # a worker's expected start-up, at the last decision
    refused: str | None = None  # no process to be had

    def line(self) -> str:
        """One line for the user: how many workers, and why (none) or when (some)."""
        if self.refused:
            return f"--jobs {self.jobs}: no workers ({self.refused}); every point ran in this process"
        if self.per_point_s is None or self.start_s is None:
            return (f"--jobs {self.jobs}: no workers; the {self.points} points ran in this process "
                    "(too few to time and to repay a worker's start)")
        figures = f"{self.per_point_s * 1e3:.0f} ms a point, a worker's start ~{self.start_s:.2f} s"
        if self.workers:
            return (f"--jobs {self.jobs}: {self.workers} worker(s) joined after {self.after_points} of "
                    f"{self.points} points ({figures})")
        return (f"--jobs {self.jobs}: no workers; the {self.points} points ran in this process ({figures}: "
                "a worker would not have finished the rest sooner)")


def adaptive(points: Sequence[Point], jobs: int, start_s: float | None = None,
             decision: Decision | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Points here, one by one, timed; ``jobs - 1`` workers join in only when they pay off.

    Two points must have run before the decision: the first pays the
    experiment's lazy imports (scipy, say) that the second does not, so the
    second (the fastest so far) tells a point's cost, and the difference is
    part of what a worker's start would cost (``start_s``, measured unless
    given). Once started, workers take points from the same queue as this
    process, which keeps running points, so results come in completion order.
    """
    from collections import deque

    from trustlab.experiments.registry import get
    from trustlab.sweep.workers import LocalWorkers, count_for

    pending = deque(points)
    decision = decision if decision is not None else Decision(jobs)
    decision.points = len(pending)
    if not pending:
        return
    imported = time.perf_counter()
    try:
        get(pending[0].experiment)  # what every worker would import too
    except TrustlabError:
        pass  # run_point reports it as the point's failure
    imported = time.perf_counter() - imported
    times: list[float] = []
    pool: LocalWorkers | None = None
    try:
        while True:
            point = pool.take() if pool is not None else (pending.popleft() if pending else None)
            if point is None:
                break
            started = time.perf_counter()
            result = run_point(point.key, point.experiment, point.argv)
            times.append(time.perf_counter() - started)  # wall: a point may wait (swtpm, --realtime)
            if pool is None:
                decision.after_points = len(times)
            yield result
            if pool is not None:
                yield from pool.finished()
            elif jobs > 1 and len(times) >= 2 and len(pending) > 1:
                per_point = min(times)
                start = start_s if start_s is not None else \
                    (INTERPRETER_START_S + imported + times[0] - per_point) * _busy()
                decision.per_point_s, decision.start_s = per_point, start
                if worth_workers(len(pending), per_point, jobs, start):
                    try:
                        pool = LocalWorkers(pending, count_for(jobs, len(pending) - 1))
                    except OSError as exc:  # no processes to be had (a limit, no memory): carry on alone
                        jobs = 1
                        decision.refused = f"cannot start a process: {exc.strerror or exc}"
                    else:
                        decision.workers = pool.count
        if pool is not None:
            yield from pool.rest()
    finally:
        if pool is not None:
            pool.close()


def dask(points: Sequence[Point], address: str, jobs: int = 1) -> Iterator[tuple[str, dict[str, Any]]]:
    """A Dask distributed cluster at ``address`` (e.g. ``tcp://127.0.0.1:8786``).

    ``local`` starts a throw-away cluster of ``jobs`` worker processes on
    127.0.0.1 for this sweep (the same code path as a real cluster).
    """
    if address == "local":
        from distributed import LocalCluster

        with LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None, silence_logs=40) as cluster:
            yield from dask(points, cluster.scheduler_address)
        return
    from distributed import Client, as_completed

    _probe(address)
    try:
        client = Client(address, timeout="15s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise TrustlabError(f"--scheduler {address}: cannot connect to a Dask scheduler ({exc})") from None
    try:
        workers = max(jobs, len(client.scheduler_info().get("workers", {})), 1)
        futures = [client.submit(run_points, batch, pure=False, key=f"points-{batch[0][0]}-{len(batch)}")
                   for batch in batches(points, workers)]
        for fut in as_completed(futures, loop=client.loop):
            yield from fut.result()
    finally:
        client.close()


DASK_SCHEMES = ("tcp", "tls", "ws", "wss")  # what this build can reach (no UCX; inproc is in-process only)


def _probe(address: str, timeout: float = 3.0) -> None:
    """Fail fast, with a clear message, when nothing listens at a tcp:// scheduler address."""
    import socket
    from urllib.parse import urlsplit

    if "://" not in address:
        address = "tcp://" + address
    try:
        parts = urlsplit(address)
    except ValueError as exc:
        raise TrustlabError(f"--scheduler {address}: not an address ({exc})") from None
    if parts.scheme not in DASK_SCHEMES:
        raise TrustlabError(f"--scheduler {address}: unknown transport {parts.scheme!r} "
                            f"(expected {', '.join(s + '://' for s in DASK_SCHEMES)} or 'local')")
    try:
        host, port = parts.hostname, parts.port or 8786
    except ValueError as exc:  # a port out of range or not a number
        raise TrustlabError(f"--scheduler {address}: {exc}") from None
    if not host:
        raise TrustlabError(f"--scheduler {address}: no host (expected e.g. tcp://127.0.0.1:8786)")
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except (OSError, UnicodeError) as exc:  # UnicodeError: a host name IDNA cannot encode (a label over 63)
        raise TrustlabError(f"--scheduler {address}: cannot connect to a Dask scheduler ({exc})") from None

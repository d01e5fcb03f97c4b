"""Running sweep points: in-process, on local worker processes (joblib), or on Dask.

Every backend calls the same :func:`run_point` on the worker, which runs the
experiment exactly as ``trustlab run`` would and returns its record (or a
failure record). Results stream back in completion order and are cached by the
caller as they arrive; the final ordering is the spec's, so 1 job, N jobs and
a cluster give identical result files. Experiments that need a TPM start their
own swtpm inside the run, so each point — wherever it runs — has its own.

Parallel must never be slower than serial. Worker processes cost a start-up
(a fresh interpreter importing trustlab and the experiment, about half a
second) and each task a round trip, which light points (milliseconds each)
never earn back. So :func:`adaptive` runs the first point in-process, and
starts workers only if the rest is long enough for them to pay off; points go
to workers (and to Dask) in batches, a few per worker, not one task each.
"""

from __future__ import annotations

import math
import os
import threading
import time
import traceback
from typing import Any, Iterator, Sequence

from trustlab.errors import TrustlabError
from trustlab.sweep.spec import Point


def run_point(key: str, experiment: str, argv: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """Run one point (on a worker); never raises, so one bad point cannot sink a sweep."""
    from trustlab.experiments.registry import run_argv
    from trustlab.report.records import failure

    try:
        return key, run_argv(experiment, list(argv)).to_record()
    except TrustlabError as exc:
        return key, failure(experiment, list(argv), str(exc))
    except Exception as exc:  # an experiment's bug: keep the traceback for the report
        tb = traceback.format_exc(limit=8)
        return key, failure(experiment, list(argv), f"{type(exc).__name__}: {exc}\n{tb}")


WORKER_START_S = 0.5  # a worker process's start: interpreter, joblib/loky, trustlab (measured here: 0.3-0.6 s)
TASKS_PER_WORKER = 4  # batches per worker: few round trips, yet a slow batch cannot hold up the end much


def run_points(points: Sequence[tuple[str, str, Sequence[str]]]) -> list[tuple[str, dict[str, Any]]]:
    """A batch of points in one task (on a worker)."""
    return [run_point(key, experiment, argv) for key, experiment, argv in points]


def batches(points: Sequence[Point], jobs: int) -> list[list[tuple[str, str, list[str]]]]:
    """Points in consecutive batches, about TASKS_PER_WORKER per worker."""
    size = max(1, math.ceil(len(points) / (jobs * TASKS_PER_WORKER)))
    items = [(p.key, p.experiment, list(p.argv)) for p in points]
    return [items[i:i + size] for i in range(0, len(items), size)]


def serial(points: Sequence[Point]) -> Iterator[tuple[str, dict[str, Any]]]:
    for p in points:
        yield run_point(p.key, p.experiment, p.argv)


def local_processes(points: Sequence[Point], jobs: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """joblib's process pool (loky), points in batches; results as each batch completes."""
    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=jobs, backend="loky", return_as="generator_unordered")
    for results in parallel(delayed(_run_batch_in_worker)(batch) for batch in batches(points, jobs)):
        yield from results


_WATCHING = False


def _run_batch_in_worker(batch: Sequence[Point]) -> list[tuple[str, dict[str, Any]]]:
    """run_points in a local worker that exits within a second of the sweep's death (kill -9
    included): loky's workers otherwise run on, computing points nobody will collect."""
    global _WATCHING
    if not _WATCHING:
        _WATCHING = True
        parent = os.getppid()

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, name="trustlab-sweep-parent-watch", daemon=True).start()
    return run_points(batch)


def worth_workers(remaining: int, seconds_per_point: float, jobs: int, start_s: float = WORKER_START_S) -> bool:
    """Would ``jobs`` workers finish ``remaining`` points sooner than this process alone?

    Serial: ``remaining * t``; parallel: the start-up, then ``remaining * t / jobs``.
    """
    return remaining * seconds_per_point * (1 - 1 / jobs) > start_s


def _busy() -> float:
    """How much a busy machine stretches a worker's start (load average per CPU, at least 1).

    The probe point's wall time is stretched the same way, so on a loaded
    machine light points are not mistaken for heavy ones (and workers that
    could not run any sooner are not started).
    """
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:
        return 1.0


def adaptive(points: Sequence[Point], jobs: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """The first point here, timed; the rest on ``jobs`` workers only if that pays (see the module doc)."""
    if not points:
        return
    from trustlab.experiments.registry import get

    imported = time.perf_counter()
    try:
        get(points[0].experiment)  # what every worker would import too
    except TrustlabError:
        pass  # run_point reports it as the point's failure
    imported = time.perf_counter() - imported
    started = time.perf_counter()
    yield run_point(points[0].key, points[0].experiment, points[0].argv)
    per_point = time.perf_counter() - started  # wall time: a point may wait (swtpm, --realtime)
    rest = points[1:]
    if len(rest) > 1 and worth_workers(len(rest), per_point, jobs, (WORKER_START_S + imported) * _busy()):
        yield from local_processes(rest, jobs)
    else:
        yield from serial(rest)


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
    except OSError as exc:
        raise TrustlabError(f"--scheduler {address}: cannot connect to a Dask scheduler ({exc})") from None

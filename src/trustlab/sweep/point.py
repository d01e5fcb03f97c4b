"""One sweep point, run where a worker runs it: the same call in-process, in a local worker, on Dask.

Its own module so the backends (:mod:`.execute`) and the local worker processes
(:mod:`.workers`) both call it without importing each other.
"""

from __future__ import annotations

import traceback
from typing import Any, Sequence

from trustlab.errors import TrustlabError


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


def run_points(points: Sequence[tuple[str, str, Sequence[str]]]) -> list[tuple[str, dict[str, Any]]]:
    """A batch of points in one task (on a Dask worker)."""
    return [run_point(key, experiment, argv) for key, experiment, argv in points]

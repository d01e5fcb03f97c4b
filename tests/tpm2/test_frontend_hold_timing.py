"""A held response's wake-up is never left to epoll's millisecond rounding.

epoll counts whole milliseconds and CPython rounds a timeout up, so waiting for 3.4 ms sleeps 4 ms:
every held response went out up to 1 ms late (0.1-0.7 ms per command measured against realtime
serve, 2-8 % on short workloads). The loop must wake no later than the hold's spin window.
"""

from __future__ import annotations

import math

from trustlab.serving.frontend import POLL_GRAIN, FrontEnd
from trustlab.serving.realtime import SPIN


def _front(now: float, held_due: float | None) -> FrontEnd:
    fe = FrontEnd.__new__(FrontEnd)  # only the timeout computation's state
    fe._next_reap = now + 0.5
    fe._held = [(held_due, 0, None, b"", None)] if held_due is not None else []
    fe._partial, fe._stalled, fe._draining = set(), set(), False
    return fe


def test_a_held_response_wakes_on_a_whole_millisecond_before_its_spin_window():
    now = 100.0
    for wait_ms in (0.5, 1.19, 1.21, 3.4, 3.99, 17.3):
        due = now + wait_ms / 1000
        timeout = _front(now, due)._timeout(now)
        assert math.isclose(timeout / POLL_GRAIN, round(timeout / POLL_GRAIN), abs_tol=1e-9)  # whole ms
        assert now + timeout <= due - SPIN + 1e-12  # epoll cannot round it past the spin window


def test_without_a_held_response_the_timeout_is_not_rounded():
    now = 100.0
    assert math.isclose(_front(now, None)._timeout(now), 0.5)

"""The realtime hold: wake on time, on a loaded host too.

A held response must leave within ~0.1 ms of its due time. ``select`` wakes
~0.1 ms late, so the last :data:`SPIN` of a hold is spun; and on a loaded host
an ordinary thread wakes milliseconds late, so the waiting thread runs under
SCHED_FIFO where the process may (:class:`RealtimeScheduling`).
"""

from __future__ import annotations

import os
import threading
import time

SPIN = 0.0002
"""The last part of a hold is spun, not slept: ``select`` wakes ~0.1 ms late."""


def precise_sleep_until(deadline: float) -> None:
    """Sleep until ``time.perf_counter() >= deadline``; spin (without yielding) for the last 0.2 ms.

    The spin must not call ``sched_yield`` (``time.sleep(0)``): on a loaded
    host a yielding thread can lose the CPU for a whole time slice, several ms.
    """
    remaining = deadline - time.perf_counter()
    if remaining > SPIN:
        time.sleep(remaining - SPIN)
    while time.perf_counter() < deadline:
        pass


class RealtimeScheduling:
    """SCHED_FIFO for the loop thread while it waits and holds; normal while it runs jobs.

    On a loaded host a sleeping thread wakes several ms late under the
    ordinary scheduler - measured here: p99 ~3 ms lateness at load 3 on 2
    cores, even at nice -20 - which is the whole error budget. A SCHED_FIFO
    thread is woken within microseconds. Jobs (an in-process engine may
    compute for seconds) run at normal priority so they never starve the host.
    """

    def __init__(self, wanted: bool) -> None:
        self.active = False
        if not wanted:
            return
        try:
            self._normal = os.sched_getparam(0)
            self._policy = os.sched_getscheduler(0)
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))  # 0 = calling thread on Linux
            self.active = True
        except (OSError, AttributeError):
            try:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -10)
            except (OSError, AttributeError):
                pass

    def high(self) -> None:
        if self.active:
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
            except OSError:
                pass

    def normal(self) -> None:
        if self.active:
            try:
                os.sched_setscheduler(0, self._policy, self._normal)
            except OSError:
                pass

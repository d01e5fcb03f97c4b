"""The operator's log: one line per event, but never a flood.

A client can make serve log (a refused control request, a malformed frame);
a hostile or broken one could make it log without end - 1 MiB of garbage on
the control port once gave 16,384 lines. Each kind of message gets a burst of
:data:`BURST` lines per :data:`WINDOW` seconds; what is held back is counted
and summarised in one line when the window has passed (or at :meth:`flush`).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

BURST = 5
WINDOW = 10.0


class OperatorLog:
    """Rate-limited ``log(message, kind=...)`` in front of a line sink (stderr in ``trustlab serve``)."""

    def __init__(self, sink: Callable[[str], None] | None, *, burst: int = BURST, window: float = WINDOW,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._sink = sink
        self._burst = burst
        self._window = window
        self._clock = clock
        self._lock = threading.Lock()
        self._kinds: dict[str, list] = {}  # kind -> [window start, lines in window, held back]

    def __call__(self, message: str, kind: str | None = None) -> None:
        """Log ``message``; messages of the same ``kind`` share the rate limit (default: the message)."""
        if self._sink is None:
            return
        now = self._clock()
        lines = []
        with self._lock:
            state = self._kinds.setdefault(kind or message, [now, 0, 0])
            if now - state[0] >= self._window:
                lines += self._summary(kind or message, state)
                state[:] = [now, 0, 0]
            if state[1] < self._burst:
                state[1] += 1
                lines.append(message)
            else:
                state[2] += 1
        for line in lines:
            self._sink(line)

    def flush(self) -> None:
        """Say what was held back (at exit)."""
        if self._sink is None:
            return
        with self._lock:
            lines = [line for kind, state in self._kinds.items() for line in self._summary(kind, state)]
            for state in self._kinds.values():
                state[2] = 0
        for line in lines:
            self._sink(line)

    def _summary(self, kind: str, state: list) -> list[str]:
        if not state[2]:
            return []
        return [f"... {state[2]} more like the above in {self._window:.0f} s not shown ({kind[:60]})"]

"""What the sweep's child processes (its workers, its report's drawer) share with the sweep.

A message is a length-prefixed pickle on a pipe, and a child dies with the
sweep: the kernel sends it SIGKILL when the sweep's process ends, even on
``kill -9`` (``PR_SET_PDEATHSIG``; elsewhere a thread watches the parent).
Its own module so that ``workers.py`` and ``drawing.py`` use one copy.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import threading
from typing import IO, Any

_HEADER = struct.Struct(">I")


def send(stream: IO[bytes], obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream: IO[bytes]) -> Any:
    """The next message, or None at EOF (the other side has gone)."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    data = stream.read(_HEADER.unpack(header)[0])
    return pickle.loads(data) if data else None


def die_with(parent: int) -> None:
    """SIGKILL this process when ``parent`` ends (Linux); exit now if it already has.

    PR_SET_PDEATHSIG fires when the parent's *thread* that started this process ends: the sweep
    starts its children from the thread that runs it.
    """
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: watch the parent instead
        def watch() -> None:
            import time

            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, name="sweep-child-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the sweep died before the line above took effect
        os._exit(1)

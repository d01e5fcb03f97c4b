"""Replaying the clients' own time and the chip's queue: the workload's wall time on a chip.

Each command's client time ("gap") is read off the trace: from the end of the
command it followed (the same client's previous one, or for a client's first
command the last one that ended before it arrived - a script's next process)
to its arrival (the resource manager's own ``RM_...`` commands have none: they follow the client's
last command at once). On a replayed chip it arrives that long after its predecessor
ends there, and waits while the chip serves another client (one TPM serves one
command at a time), in the order the chip served them when recorded.
"""

from __future__ import annotations

import bisect

import numpy as np

from trustlab.replay.load import Command


def gaps(commands: list[Command]) -> tuple[list[int], list[float]]:
    """Per command: the index of its predecessor (-1: none) and the client's own time before it (ms)."""
    pred: list[int] = []
    gap: list[float] = []
    last_of: dict[tuple[int, int], int] = {}
    ends: list[tuple[float, int]] = []   # (recorded end, index), sorted, within the segment
    segment = None
    for i, c in enumerate(commands):
        if c.segment != segment:
            segment, ends, last_of = c.segment, [], {}
        key = (c.segment, c.client)
        if c.command.startswith("RM_"):
            # the resource manager's own work after a client's process ended (RM_FlushOnClose): it runs when
            # the resource manager notices, not as a client's next command; replayed at once after the
            # client's last command (no client time), and never a later command's predecessor
            p = last_of.get(key, i - 1)
            pred.append(p)
            gap.append(0.0)
            continue
        p = last_of.get(key)
        if p is None:
            k = bisect.bisect_right(ends, (c.t_ms, len(commands)))
            p = ends[k - 1][1] if k else (i - 1)  # a later segment follows the one before it
        if p >= 0:
            prev = commands[p]
            gap.append(max(0.0, c.t_ms - (prev.t_ms + prev.served_ms)))
        else:
            gap.append(0.0)
        pred.append(p)
        last_of[key] = i
        bisect.insort(ends, (c.t_ms + c.served_ms, i))
    return pred, gap


def wall_ms(pred: list[int], gap: list[float], cost: np.ndarray) -> float:
    """Makespan of the trace at per-command costs ``cost`` (ms): arrivals after predecessors, one chip."""
    end = [0.0] * len(pred)
    chip_free = 0.0
    costs = cost.tolist()
    finish = 0.0
    for i, p in enumerate(pred):
        arrival = (end[p] if p >= 0 else 0.0) + gap[i]
        start = arrival if arrival > chip_free else chip_free
        chip_free = end[i] = start + costs[i]
        if chip_free > finish:
            finish = chip_free
    return finish

"""Power-loss injection at frame granularity.

Every frame that crosses the eMMC bus passes two *crash points*: just before
it is sent and halfway through it. A :class:`PowerRail` counts the points as
they are reached and cuts power at the chosen one, so a workload can be
re-run with the crash moved to every point in turn (exhaustive crash-point
testing) -- the run is deterministic, so point *k* is the same moment each time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trustlab.devices.ftpm.errors import PowerLoss


@dataclass
class PowerRail:
    """Counts crash points; raises :class:`PowerLoss` at ``crash_at`` (if set)."""

    crash_at: int | None = None
    points: int = 0
    labels: list[str] = field(default_factory=list)
    record_labels: bool = False
    tripped: bool = False

    def point(self, label: str) -> bool:
        """Reach a crash point; True means power is lost *here*."""
        k = self.points
        self.points += 1
        if self.record_labels:
            self.labels.append(label)
        if self.crash_at is not None and k == self.crash_at and not self.tripped:
            self.tripped = True
            return True
        return False

    @staticmethod
    def lose_power(label: str) -> None:
        raise PowerLoss(f"power lost at {label}")

"""What a validation produces: checks (predicted vs reference) and flagged inconsistencies.

A :class:`Check` is one figure a profile predicts beside an independent
measurement of the same thing. ``kind`` says whether that measurement went
into building the profile ("calibration": agreement only shows the
derivation is faithful) or not ("independent": agreement is evidence of
accuracy). Only independent checks count toward a profile's stated accuracy.

An :class:`Inconsistency` is a place where a source contradicts itself (a
table cell against its own formula, arithmetic that does not multiply out).
It shows every reading and is never resolved silently.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import asdict, dataclass, field

CALIBRATION = "calibration"
INDEPENDENT = "independent"
HELD_OUT_SILICON = "held-out silicon"
"""A calibrated chip priced by the generic model with its calibration bypassed (validation.held_out_silicon):
evidence about the model, not about the profile (which serves the calibrated times), so not in its accuracy."""

DEVICE_CLASSES = ("TPM 1.2", "discrete TPM 2.0", "firmware TPM", "smart card", "Java Card")


def device_class(profile_name: str, family: str) -> str:
    """The class a profile's device belongs to (colours the accuracy plot)."""
    if family == "tpm1.2":
        return "TPM 1.2"
    if family == "tpm2":
        firmware = re.search(r"^intel-ptt|(^|-)ftpm(-|$)", profile_name)
        return "firmware TPM" if firmware else "discrete TPM 2.0"
    if family == "card":
        return "smart card"
    if family == "javacard":
        return "Java Card"
    return family


@dataclass(frozen=True)
class Check:
    """One predicted figure beside a reference measurement of the same operation."""

    profile: str
    device_class: str
    command: str
    predicted: float
    reference: float
    unit: str
    kind: str  # CALIBRATION, INDEPENDENT or HELD_OUT_SILICON
    source: str  # the reference's provenance
    note: str = ""
    low: float | None = None   # the prediction's interval, where the predictor gives one
    high: float | None = None
    flagged: bool = False  # shown beside the others, not counted (a post-quantum source's note says why)

    @property
    def error(self) -> float:
        """Relative error of the prediction, (predicted - reference) / reference."""
        return (self.predicted - self.reference) / self.reference if self.reference else float("nan")

    def to_dict(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k not in ("low", "high") or v is not None}
        d["error"] = self.error
        return d


@dataclass(frozen=True)
class Inconsistency:
    """A source that contradicts itself: every reading, side by side, flagged."""

    source: str
    what: str
    readings: dict[str, float]
    ours: float | None = None
    unit: str = ""
    note: str = ""
    profiles: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["profiles"] = list(self.profiles)
        return d


@dataclass(frozen=True)
class Accuracy:
    """A profile's stated accuracy: |error| over its independent checks only."""

    profile: str
    device_class: str
    n: int
    median: float | None
    worst: float | None
    calibration_n: int

    def describe(self) -> str:
        if not self.n:
            return (f"accuracy: no independent reference ({self.calibration_n} calibration "
                    f"check{'s' if self.calibration_n != 1 else ''} only)")
        return (f"accuracy: median {self.median:.1%}, worst {self.worst:.1%} over {self.n} independent "
                f"reference{'s' if self.n != 1 else ''} (trustlab validate)")

    def to_dict(self) -> dict:
        return asdict(self)


def accuracy(checks: list[Check]) -> dict[str, Accuracy]:
    """Per profile: median and worst |relative error| over the independent checks."""
    out: dict[str, Accuracy] = {}
    for name in dict.fromkeys(c.profile for c in checks):
        mine = [c for c in checks if c.profile == name]
        errs = [abs(c.error) for c in mine if c.kind == INDEPENDENT]
        out[name] = Accuracy(name, mine[0].device_class, len(errs),
                             statistics.median(errs) if errs else None, max(errs) if errs else None,
                             sum(1 for c in mine if c.kind == CALIBRATION))
    return out

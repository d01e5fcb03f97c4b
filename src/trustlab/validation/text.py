"""The validation as text (``trustlab validate``, the experiment's text) and as a plot spec."""

from __future__ import annotations

from trustlab.textable import table
from trustlab.validation.core import DEVICE_CLASSES, HELD_OUT_SILICON, INDEPENDENT
from trustlab.validation.run import Validation


def render(v: Validation, independent_only: bool = False) -> str:
    """The text report: accuracy per profile, every check, every inconsistency."""
    acc = v.accuracy()
    out = ["Accuracy per profile (independent references only)",
           table([[_label(a.profile), a.device_class, a.n, _pct(a.median), _pct(a.worst), a.calibration_n]
                  for a in acc.values()],
                 ["profile", "class", "n indep.", "median |err|", "worst |err|", "n calib."])]
    rows = [[_label(c.profile), c.command, c.predicted, c.reference, c.unit, f"{c.error:+.1%}", c.kind,
             c.source + (f" -- {c.note}" if c.note else "")]
            for c in v.checks if not independent_only or c.kind == INDEPENDENT]
    out += ["", "Checks", table(rows, ["profile", "command", "predicted", "reference", "unit", "error", "kind",
                                       "reference provenance"])]
    if v.held_out_silicon:
        from trustlab.validation import held_out_silicon

        out += ["", held_out_silicon.text(v.held_out_silicon)]
    if v.inconsistencies:
        irows = [["FLAG", i.source, i.what, "; ".join(f"{k} = {_num(val)}" for k, val in i.readings.items()),
                  "-" if i.ours is None else _num(i.ours), i.unit, i.note] for i in v.inconsistencies]
        out += ["", "Inconsistencies: a source contradicts itself; every reading shown, none picked",
                table(irows, ["", "source", "what", "readings", "trustlab", "unit", "note"])]
    return "\n".join(out)


LABEL_WIDTH = 60
"""A profile cell's width in the text tables: a measurement source's label names its whole platform (up to
~170 characters, e.g. the thesis's 'Hardware setup' quote), which widened every row of both tables to it. The
full label stays in --json and in the row's provenance."""


def _label(profile: str) -> str:
    return profile if len(profile) <= LABEL_WIDTH else profile[:LABEL_WIDTH - 3] + "..."


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def accuracy_rows(v: Validation) -> list[dict]:
    """One row per profile: the accuracy it may state."""
    return [{"profile": a.profile, "class": a.device_class, "independent refs": a.n,
             "median |error| %": None if a.median is None else 100 * a.median,
             "worst |error| %": None if a.worst is None else 100 * a.worst, "calibration refs": a.calibration_n}
            for a in v.accuracy().values()]


def accuracy_plot(v: Validation) -> dict:
    """Predicted vs reference over every independent reference, one colour per device class; the flagged
    post-quantum sources (shown, not counted: a Java Card applet, a run from flash) in a series of their own, so
    their distance from y = x is not read as the model's error on the class."""
    series = []
    pts = [c for c in v.checks if c.kind == INDEPENDENT and c.predicted > 0 and c.reference > 0]
    counted = [c for c in pts if not c.flagged]
    for cls in DEVICE_CLASSES + tuple(sorted({c.device_class for c in counted} - set(DEVICE_CLASSES))):
        mine = [c for c in counted if c.device_class == cls]
        if mine:
            series.append({"label": f"{cls} ({len(mine)})", "x": [c.reference for c in mine],
                           "y": [c.predicted for c in mine], "style": "points"})
    flagged = [c for c in pts if c.flagged]
    if flagged:
        series.append({"label": f"flagged, not counted ({len(flagged)})", "x": [c.reference for c in flagged],
                       "y": [c.predicted for c in flagged], "style": "points"})
    if not pts:
        return {}
    held = [c for c in v.checks if c.kind == HELD_OUT_SILICON and c.low is not None and c.high is not None]
    if held:  # the generic model on a calibrated chip, its calibration bypassed: with its 5-95% interval
        series.append({"label": f"held-out silicon, model only ({len(held)})", "x": [c.reference for c in held],
                       "y": [c.predicted for c in held], "ylow": [c.low for c in held],
                       "yhigh": [c.high for c in held], "style": "points"})
    lo = min([min(c.reference, c.predicted) for c in pts] + [min(c.reference, c.low) for c in held])
    hi = max([max(c.reference, c.predicted) for c in pts] + [max(c.reference, c.high) for c in held])
    series.append({"label": "y = x", "x": [lo, hi], "y": [lo, hi], "style": "dashed"})
    title = "Predicted vs independent reference, by device class"
    if held:
        title += " (held-out silicon: the generic PQC model, 5-95% interval)"
    return {"kind": "loglog", "title": title,
            "xlabel": "reference (its unit: ms, or s for Java Card HBS)", "ylabel": "trustlab prediction",
            "series": series}

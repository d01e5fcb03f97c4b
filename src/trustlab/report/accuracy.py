"""The report's "Accuracy" section: how far each profile's numbers can be trusted.

Drawn from the ``validate`` experiment's record (trustlab.experiments.validate):
per profile the median and worst |error| over references that were not used
to build it, the places where a source contradicts itself (every reading
shown), and one figure of predicted vs reference over all independent
references, coloured by device class. Without a validate record the section
is absent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from trustlab.report import html as h
from trustlab.report.records import is_failure

ACC_COLS = ["profile", "class", "independent refs", "median |error| %", "worst |error| %", "calibration refs"]
INC_COLS = ["source", "what", "readings", "ours", "unit", "note"]


def accuracy_section(records: Sequence[dict[str, Any]], ids: Sequence[str], out_dir: Path, inline: bool,
                     rendered: Mapping[tuple[str, int], str | None]) -> str:
    """HTML for the Accuracy section, or "" when no validate run is among ``records``.

    ``rendered``: the writer's (run id, figure n) -> drawing error (None: drawn), so the
    validate run's figure is shown here without drawing it twice.
    """
    found = [(i, r) for i, r in zip(ids, records) if r.get("experiment") == "validate" and not is_failure(r)]
    if not found:
        return ""
    run_id, record = found[0]
    data = record.get("data") or {}
    parts = ['<h2 id="accuracy">Accuracy</h2>',
             "<p>Each profile's stated accuracy: median and worst |relative error| of its predictions over "
             "references that were <b>not</b> used to build it (papers' printed figures, the same chip "
             "family measured by another source, other firmware versions: leave-one-source-out). "
             "Calibration references (used to build the profile) are counted but do not make accuracy. "
             f'Every row with its provenance: <a href="#{h.esc(run_id)}">validate</a>.</p>',
             h.table(data.get("accuracy") or [], ACC_COLS)]
    for n, spec in enumerate(record.get("plots") or [], start=1):
        png = out_dir / "plots" / f"{run_id}-{n}.png"
        error = rendered.get((run_id, n), "not drawn")
        if error is not None:
            parts.append(f'<p class="bad">Accuracy figure could not be drawn: {h.esc(error)}</p>')
            continue
        title = str(spec.get("title", ""))
        parts.append(h.figure(png, out_dir, title, f"{h.esc(title)}: points on the diagonal agree", inline))
    incs = data.get("inconsistencies") or []
    if incs:
        parts.append("<h3>Sources that contradict themselves (flagged; every reading shown, none picked)</h3>"
                     + h.table(incs, INC_COLS))
    return "".join(parts)

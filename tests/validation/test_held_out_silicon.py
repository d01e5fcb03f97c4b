"""`trustlab validate`'s held-out silicon check: the calibrated SEALSQ QVault priced by the generic model alone.

The check is worth something only if the published figures cannot reach the prediction: emptying or
changing the calibration table must leave every prediction as it was.
"""

from __future__ import annotations

import copy
import json

import pytest

from trustlab.cli import main
from trustlab.devices.tpm2.pqc_model import silicon
from trustlab.validation import held_out_silicon, run
from trustlab.validation.core import CALIBRATION, HELD_OUT_SILICON

SEALSQ = "sealsq-qvault-pqc-tpm-wolftpm"


def _predictions() -> list[tuple[float, float, float]]:
    out = []
    for pub in silicon.rows(SEALSQ):
        p = held_out_silicon.model_only(SEALSQ, pub.algorithm, pub.call)
        assert not p.calibrated
        out.append((p.median_ms, p.low_ms, p.high_ms))
    return out


@pytest.fixture
def table_swap(monkeypatch):
    """Replace the calibration table (silicon.toml) for one test; caches cleared both ways."""
    real = silicon._doc()

    def swap(doc: dict) -> None:
        monkeypatch.setattr(silicon, "_doc", lambda: doc)
        silicon.rows.cache_clear()

    yield real, swap
    silicon.rows.cache_clear()


def test_rows_cover_every_published_operation():
    rows = held_out_silicon.rows()
    published = {(r.algorithm, r.operation) for r in silicon.rows(SEALSQ)}
    mine = [r for r in rows if r["profile"] == SEALSQ]
    assert {(r["algorithm"], r["operation"]) for r in mine} == published and len(published) == 6
    for r in mine:
        assert r["kind"] == HELD_OUT_SILICON
        assert 0 < r["low_ms"] <= r["predicted_median_ms"] <= r["high_ms"]
        assert r["inside"] == (r["low_ms"] <= r["published_ms"] <= r["high_ms"])
        assert r["error"] == pytest.approx(r["predicted_median_ms"] / r["published_ms"] - 1)
        assert r["evidence"]["placed_by"] == "SHA-256 rate" and r["evidence"]["m4_equivalent_mhz"] > 0
        assert "calibration:" not in r["provenance"]  # the calibrated price's provenance starts so
        assert r["implied_m4_mhz"] > 0 and r["placed_m4_mhz"] > 0


def test_prediction_never_uses_the_calibration_table(table_swap):
    real, swap = table_swap
    before = _predictions()
    ops = [(r.algorithm, r.call) for r in silicon.rows(SEALSQ)]
    swap({})  # the calibration table emptied: the profile is uncalibrated
    assert not silicon.published(SEALSQ)
    after = [held_out_silicon.model_only(SEALSQ, a, c) for a, c in ops]
    assert [(p.median_ms, p.low_ms, p.high_ms) for p in after] == before
    changed = copy.deepcopy(real)  # ... or every published figure ten times larger
    for op in changed[SEALSQ]["ops"]:
        op["mean_ms"] *= 10
    swap(changed)
    assert _predictions() == before


def test_calibrated_path_differs_from_the_blind_one():
    from trustlab.devices.tpm2.pqc_model import predict

    pub = next(r for r in silicon.rows(SEALSQ) if r.call == "verify")
    calibrated = predict.price(pub.algorithm, pub.call, SEALSQ)
    blind = held_out_silicon.model_only(SEALSQ, pub.algorithm, pub.call)
    assert calibrated.calibrated and not blind.calibrated
    assert blind.median_ms != pytest.approx(calibrated.median_ms, rel=1e-3)


def test_validate_shows_them_apart_from_calibration_and_accuracy(capsys):
    v = run([SEALSQ])
    kinds = {c.kind for c in v.checks if c.profile == SEALSQ}
    assert kinds == {CALIBRATION, HELD_OUT_SILICON}
    held = [c for c in v.checks if c.kind == HELD_OUT_SILICON]
    assert len(held) == 6 and all(c.low is not None and c.high is not None for c in held)
    assert v.accuracy()[SEALSQ].n == 0  # the profile serves the calibrated times: not its accuracy
    assert "low" not in next(c for c in v.checks if c.kind == CALIBRATION).to_dict()
    assert main(["validate", SEALSQ]) == 0
    out = capsys.readouterr().out
    assert "Held-out silicon: sealsq-qvault-pqc-tpm-wolftpm" in out and "placement evidence: SHA-256" in out
    assert main(["validate", SEALSQ, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    held_doc = doc["held_out_silicon"]
    assert len(held_doc["rows"]) == 6 and held_doc["summary"]["rows"] == 6
    assert {"predicted_median_ms", "low_ms", "high_ms", "published_ms", "error", "inside", "evidence"} <= set(
        held_doc["rows"][0])


def test_unrelated_profile_has_no_held_out_section():
    v = run(["jcop-2018"])
    assert not v.held_out_silicon and "held_out_silicon" not in v.to_dict()


def test_accuracy_plot_shows_them_with_intervals():
    from trustlab.validation.text import accuracy_plot

    plot = accuracy_plot(run([SEALSQ, "jcop-2018"]))
    held = [s for s in plot["series"] if s["label"].startswith("held-out silicon")]
    assert len(held) == 1 and len(held[0]["ylow"]) == len(held[0]["y"]) == 6
    assert all(lo <= y <= hi for lo, y, hi in zip(held[0]["ylow"], held[0]["y"], held[0]["yhigh"]))


def test_text_tables_keep_the_profile_column_narrow():
    """The leave-one-source-out rows' platform labels (up to ~170 characters) set the profile column of
    both tables for every row; they are cut in the text, whole in --json."""
    from trustlab.validation.text import LABEL_WIDTH, render

    v = run()
    assert max(len(c.profile) for c in v.checks) > LABEL_WIDTH  # the case this is about
    lines = render(v).splitlines()
    for title in ("Accuracy per profile (independent references only)", "Checks"):
        header = lines[lines.index(title) + 1]
        assert header.startswith("profile") and header.index(" class" if "Accuracy" in title else " command") <= \
            LABEL_WIDTH + 2
    assert any(len(c["profile"]) > LABEL_WIDTH for c in v.to_dict()["checks"])


def test_accuracy_plot_draws_flagged_sources_apart():
    """The flagged post-quantum sources (a Java Card applet, one cold call from flash) were drawn in their device
    class's colour, their distance from y = x read as the model's error on smart cards and microcontrollers."""
    from trustlab.validation.text import accuracy_plot

    v = run()
    flagged = [c for c in v.checks if c.flagged]
    assert flagged and all(c.note.startswith("flagged, not counted") for c in flagged)
    plot = accuracy_plot(v)
    apart = [s for s in plot["series"] if s["label"].startswith("flagged, not counted")]
    assert len(apart) == 1 and len(apart[0]["x"]) == sum(1 for c in flagged if c.predicted > 0 and c.reference > 0)
    counted_points = sum(len(s["x"]) for s in plot["series"] if s is not apart[0]
                         and not s["label"].startswith(("held-out", "y = x")))
    assert counted_points == sum(1 for c in v.checks if c.kind == "independent" and not c.flagged
                                 and c.predicted > 0 and c.reference > 0)

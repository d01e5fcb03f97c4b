"""The unstated build's mixture is the base rate of the builds published benchmarks state, kept in step with them.

builds.toml [builds.unknown] stores the counts, the floor and the weights; these tests recount the sources of
pqc_measurements.toml with the model's own classifier (builds.build_kind) and fail when a source added or
re-read leaves the stored prior behind (update counts, weights and counted_on in builds.toml then)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trustlab.devices.tpm2.pqc_model import builds, classes
from trustlab.errors import TrustlabError


def _entry() -> dict:
    return builds._doc()["builds"][builds.UNKNOWN]


def test_the_unknown_builds_counts_are_those_of_the_measurement_sources():
    entry = _entry()
    counts = builds.base_rate_counts(s.get("build") for s in classes.measurements()["sources"])
    assert dict(zip(entry["mix"], entry["counts"])) == counts, (
        f"builds.toml [builds.unknown] counts are out of date: pqc_measurements.toml now gives {counts}")


def test_the_unknown_builds_weights_follow_its_counts_by_the_stated_rule():
    entry = _entry()
    expected = builds.base_rate_weights(dict(zip(entry["mix"], entry["counts"])), entry["floor"])
    assert entry["weights"] == pytest.approx([expected[k] for k in entry["mix"]], abs=5e-4), (
        f"builds.toml [builds.unknown] weights are out of date: the rule gives {expected}")
    assert set(entry["mix"]) == set(builds.stated_kinds())  # every kind a source can state is a part
    b = builds.build(builds.UNKNOWN)
    assert b.weights == pytest.approx(np.array(entry["weights"]) / sum(entry["weights"]))


def test_the_floor_lifts_rare_kinds_and_the_rest_stays_proportional():
    w = builds.base_rate_weights({"speed": 30, "size": 1, "debug": 0}, 0.05)
    assert w["size"] == w["debug"] == 0.05 and w["speed"] == pytest.approx(0.9)
    w = builds.base_rate_weights({"speed": 6, "o2": 3, "size": 1}, 0.05)
    assert w == pytest.approx({"speed": 0.6, "o2": 0.3, "size": 0.1})
    assert builds.base_rate_weights({"a": 0, "b": 0}, 0.05) == {"a": 0.5, "b": 0.5}
    with pytest.raises(TrustlabError, match="floor"):
        builds.base_rate_weights({k: 1 for k in "abcde"}, 0.25)


def test_a_weighted_mixture_is_centred_on_the_weighted_log_mean_and_draws_by_weight():
    """Unknown: the centre is the weighted geometric mean of its parts' centres (a nested mix counts at its own
    centre); the share of draws above the debug build's median is the debug weight's half plus the application
    mix's debug half's half. Application, with no weights, stays an equal mix."""
    for unit in builds.UNITS:
        b = builds.build(builds.UNKNOWN, unit)
        assert b.central(0.5) == b.mid == pytest.approx(
            math.exp(sum(w * math.log(p.mid) for p, w in zip(b.parts, b.weights))))
        assert np.all(np.diff(b.draw(np.linspace(0.001, 0.999, 200))) >= 0)
        w = dict(zip((p.kind for p in b.parts), b.weights))
        above = np.mean(b.draw(np.random.default_rng(1).random(40000)) > builds.build("debug", unit).mid)
        assert above == pytest.approx(w["debug"] / 2 + w["application"] / 4, abs=0.01)
    app = builds.build("application")
    assert app.weights == (0.5, 0.5)
    assert app.mid == pytest.approx(math.sqrt(builds.build("size").mid * builds.build("debug").mid))


def test_bad_weights_are_refused_with_the_kind_named(monkeypatch):
    doc = {"builds": dict(builds._doc()["builds"])}
    doc["builds"]["unknown"] = dict(doc["builds"]["unknown"], weights=[1.0, 2.0])
    monkeypatch.setattr(builds, "_doc", lambda: doc)
    builds.build.cache_clear()
    try:
        with pytest.raises(TrustlabError, match=r"\[builds.unknown\]: weights"):
            builds.build("unknown")
    finally:
        builds.build.cache_clear()

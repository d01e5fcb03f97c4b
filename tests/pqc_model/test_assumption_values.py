"""``pqc_assumptions``' ``values``: the numbers of each range as data, the same as the objects the text is built from.

Issue 27: scripts reading ``trustlab validate --json`` need numbers, not prose to parse."""

from __future__ import annotations

import json
import math
import re

import pytest

from trustlab.devices.tpm2.pqc_model import assumptions, builds, classes, keccak_engine, lineage

# a figure in the text: a digit not glued to a name (Cortex-M4, SHA-256, Keccak-f[1600]); "x0.45" counts
_NUMBER = re.compile(r"(?<![A-Za-wyz\d.\-\[])\d")


@pytest.fixture(scope="module")
def listing() -> list[dict]:
    return assumptions.listing()


def _by_name(listing: list[dict], name: str) -> dict:
    return next(e for e in listing if e["name"] == name)


def _leaves(values: dict, path: str = ""):
    """(path, leaf) of every range or exact figure in a values tree."""
    if "unit" in values:
        yield path, values
        return
    for key, sub in values.items():
        yield from _leaves(sub, f"{path}/{key}")


def test_every_entry_with_a_number_has_values_and_prose_only_rules_have_none(listing):
    with_numbers = [e for e in listing if _NUMBER.search(e["range"])]
    assert len(with_numbers) > 50
    for e in listing:
        assert ("values" in e) == bool(_NUMBER.search(e["range"])), e["name"]
    assert "values" not in _by_name(listing, "work per operation")
    assert "values" not in _by_name(listing, "bus: memory")


def test_every_range_is_ordered_and_every_leaf_has_a_unit(listing):
    for e in listing:
        for path, leaf in _leaves(e.get("values") or {}):
            where = f"{e['name']}{path}"
            assert leaf["unit"], where
            if "value" in leaf:
                assert math.isfinite(leaf["value"]), where
                continue
            lo, hi = leaf["low"], leaf["high"]
            assert lo <= leaf.get("centre", lo) <= hi, where
            assert lo <= hi, where
            if "bounds" in leaf:  # a mixture: its 5-95% inside its bounds, weights summing to 1
                assert leaf["interval"] == "5-95%"
                assert leaf["bounds"]["low"] <= lo and hi <= leaf["bounds"]["high"], where
                assert sum(leaf["weights"].values()) == pytest.approx(1.0), where


def test_the_text_states_the_values_it_carries(listing):
    """Every x range in values appears, rounded as printed, in the entry's text (they come from one place)."""
    for e in listing:
        for path, leaf in _leaves(e.get("values") or {}):
            if leaf["unit"] == "x" and "low" in leaf:
                assert f"x{leaf['low']:.3g}-x{leaf['high']:.3g}" in e["range"], f"{e['name']}{path}"


def test_values_are_the_model_objects(listing):
    c = classes.fit("cortex-m3")
    v = _by_name(listing, "core class cortex-m3")["values"]
    assert v["keccak"] == {"low": c.keccak.lo, "centre": c.keccak.mid, "high": c.keccak.hi, "unit": "x"}
    assert v["other"] == {"low": c.arith.lo, "centre": c.arith.mid, "high": c.arith.hi, "unit": "x"}

    f = classes.core_factor("zen1")
    v = next(e for e in listing if e["name"].startswith("named core zen1 "))["values"]
    assert v == {"low": f.lo, "centre": f.mid, "high": f.hi, "unit": "x"}

    k, a = builds.units("debug")
    v = _by_name(listing, "build: debug")["values"]
    assert (v["keccak"]["low"], v["keccak"]["centre"], v["keccak"]["high"]) == (k.lo, k.mid, k.hi)
    assert (v["other"]["low"], v["other"]["centre"], v["other"]["high"]) == (a.lo, a.mid, a.hi)

    s = builds.build("size")
    assert _by_name(listing, "build: size")["values"] == {"low": s.lo, "centre": s.mid, "high": s.hi, "unit": "x"}


def test_a_mixture_gives_its_quantiles_bounds_and_weights(listing):
    k, _ = builds.units("unknown")
    v = _by_name(listing, "build: unknown")["values"]["keccak"]
    assert (v["low"], v["high"]) == k.quantiles() and v["centre"] == k.mid
    assert v["bounds"] == {"low": k.lo, "high": k.hi}
    assert v["weights"] == {p.kind: w for p, w in zip(k.parts, k.weights)}


def test_lineage_and_engine_values_are_keyed_by_part(listing):
    v = _by_name(listing, "lineage: mlkem-native (ML-KEM)")["values"]
    for grp, core in (("microcontroller", "cortex-m4"), ("application", "host-x86")):
        for key, unit in zip(("keccak", "other"), lineage.UNITS):
            f = lineage.factor("mlkem-native", "ML-KEM", core, unit)
            assert v[grp][key] == {"low": f.lo, "centre": f.mid, "high": f.hi, "unit": "x"}
    assert _by_name(listing, "lineage: reference")["values"] == {"value": 1.0, "unit": "x"}
    e = keccak_engine.named("kmac")
    v = _by_name(listing, "Keccak engine: kmac")["values"]
    assert (v["permutation"]["low"], v["permutation"]["centre"], v["permutation"]["high"]) == e.perm_cycles


def test_values_survive_json(listing):
    assert json.loads(json.dumps(listing)) == listing

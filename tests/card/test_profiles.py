"""Shipped card and Java Card profiles: provenance on every component, and regenerable from sources."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from trustlab.data.jcalgtest_card import parse_card_csv
from trustlab.timing import registry

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "jcalgtest" / "javacard"


def _tool():
    spec = importlib.util.spec_from_file_location("build_card_profiles", ROOT / "tools" / "build_card_profiles.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_card_profiles_match_the_build_tool():
    built = {p.name: p for p in _tool().card_profiles()}
    assert set(built) == set(registry.names("card"))
    for name, want in built.items():
        got = registry.load(name)
        assert got.family == "card"
        assert {k: c.mean for k, c in got.components.items()} == {k: c.mean for k, c in want.components.items()}
        for c in got.components.values():
            assert c.provenance.source and c.provenance.table, f"{name}.{c.name} lacks provenance"


@pytest.mark.skipif(not DATA.is_dir(), reason="shared JCAlgTest data not present")
def test_one_javacard_profile_per_file_and_regenerable():
    files = sorted(DATA.glob("*.csv"))
    shipped = set(registry.names("javacard"))
    for f in files:
        p = parse_card_csv(f)
        assert p.name in shipped, f"{f.name} has no shipped profile"
        got = registry.load(p.name)
        assert {k: c.mean for k, c in got.components.items()} == {k: c.mean for k, c in p.components.items()}
    ours = sorted((ROOT / "src" / "trustlab" / "timing" / "profiles" / "javacard").glob("*.toml"))
    assert len(files) == len(ours)

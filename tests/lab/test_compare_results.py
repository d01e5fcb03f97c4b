"""tools/compare_results.py: host timings are ignored, every modelled figure is compared."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "compare_results", Path(__file__).parents[2] / "tools" / "compare_results.py")
compare = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(compare)


def _run(total: float, host: float, wall: float) -> dict:
    return {"experiment": "wallet", "params": {"seed": 1},
            "data": {"tpm_s": total, "host": {"avg": host}},
            "text": f"wallet\nrow        a\n---------  --\ntpm        {total}\nhost       {host}\n",
            "plots": [{"y": [total, host]}], "meta": {"wall_s": wall}}


def test_host_measurements_are_ignored() -> None:
    assert compare.differences([_run(2.5, 0.001, 1.0)], [_run(2.5, 0.0123456, 9.0)]) == []


def test_a_changed_figure_is_reported_with_where() -> None:
    found = compare.differences([_run(2.5, 0.001, 1.0)], [_run(2.6, 0.001, 1.0)])
    assert any("data/tpm_s" in f and "2.5 before, 2.6 after" in f for f in found)
    assert any("text differs" in f for f in found)


def test_missing_and_extra_runs_are_reported() -> None:
    other = dict(_run(1.0, 0.0, 0.0), params={"seed": 2})
    found = compare.differences([_run(2.5, 0.0, 0.0)], [other])
    assert sorted(f.rsplit(" ", 1)[1] for f in found) == ["after", "before"]


def test_cli_exit_status_and_bad_input(tmp_path: Path, capsys) -> None:
    a, b, bad = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "bad.json"
    a.write_text(json.dumps([_run(2.5, 0.001, 1.0)]))
    b.write_text(json.dumps([_run(2.7, 0.001, 1.0)]))
    bad.write_text("{not json")
    assert compare.main([str(a), str(a)]) == 0
    assert "identical" in capsys.readouterr().out
    assert compare.main([str(a), str(b), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)
    with pytest.raises(SystemExit, match="cannot read .*bad.json"):
        compare.main([str(a), str(bad)])
    bad.write_text(json.dumps({"runs": []}))
    with pytest.raises(SystemExit, match="not a flagship results.json"):
        compare.main([str(a), str(bad)])


def test_provenance_said_once_compares_as_the_strings_it_stands_for():
    """A record whose rows name shared provenance by key (trustlab.shared_provenance) matches the same record
    with the strings written out, and a changed text is still a difference."""
    from trustlab.shared_provenance import Table

    rows = [{"ms": 1.0, "provenance": "a; b"}, {"ms": 2.0, "provenance": "b; c"}]
    table = Table()
    shared = [dict(r, provenance=table.refs(r["provenance"])) for r in rows]
    before = [{"experiment": "x", "params": {}, "data": {"rows": rows}}]
    after = [{"experiment": "x", "params": {}, "data": {"rows": shared, "provenance": table.as_dict()}}]
    assert compare.differences(before, after) == []
    after[0]["data"]["provenance"]["p3"] = "changed"
    assert compare.differences(before, after) == ["x {}/data/rows[1]/provenance: 'b; c' before, 'b; changed' after"]

"""The profile index behind ``trustlab profiles list`` (issue 15): same listing, rebuilt on change."""

from __future__ import annotations

import json
import os

import pytest

from trustlab.cli import main
from trustlab.timing import registry

PRO = "# {desc}\noverconst: 1.5\noverinrate: 0.01\noveroutrate: 0.02\ndecrypt: 200 encrypt: 30 sign: 210\nhashrate: 0.005\n"


def _list(capsys, *extra: str) -> list[dict]:
    assert main(["profiles", "list", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_listing_equals_parsing_every_profile(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path))
    first = _list(capsys)  # builds the index
    assert (tmp_path / "cache" / registry.INDEX_FILE).is_file()
    second = _list(capsys)  # served from it
    assert first == second
    for row in second:
        p = registry.load(row["name"])
        assert row == {"name": row["name"], "family": p.family, "version": p.version, "description": p.description,
                       "components": len(p.components), "source": p.provenance.describe()}


def test_a_changed_profile_is_reread(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path))
    pro = tmp_path / "chip.pro"
    pro.write_text(PRO.format(desc="x"))
    assert main(["profiles", "import", str(pro), "--name", "mychip"]) == 0
    capsys.readouterr()
    toml = tmp_path / "profiles" / "mychip.toml"
    before = {r["name"]: r for r in _list(capsys)}["mychip"]
    text = toml.read_text()
    toml.write_text(text.replace(f'description = "{before["description"]}"', 'description = "edited, longer"')
                    if before["description"] else text.replace("[", 'description = "edited, longer"\n[', 1))
    os.utime(toml, ns=(1, 1))  # even with an old timestamp: the size changed
    assert {r["name"]: r for r in _list(capsys)}["mychip"]["description"] == "edited, longer"
    toml.unlink()
    assert "mychip" not in {r["name"] for r in _list(capsys)}


def test_broken_user_profile_is_reported_not_cached(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path))
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "bad.toml").write_text("this is [ not toml")
    for _ in range(2):
        rows = _list(capsys)
        assert "bad" not in {r["name"] for r in rows} and rows
    assert "bad" not in json.loads((tmp_path / "cache" / registry.INDEX_FILE).read_text())["files"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through read-only permissions")
def test_unwritable_cache_still_lists(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache").chmod(0o500)
    try:
        assert _list(capsys)
    finally:
        (tmp_path / "cache").chmod(0o700)


def test_cache_path_is_a_file_still_lists(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path))
    (tmp_path / "cache").write_text("not a directory")
    assert _list(capsys)


def test_corrupt_index_is_rebuilt(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path))
    (tmp_path / "cache").mkdir()
    index = tmp_path / "cache" / registry.INDEX_FILE
    index.write_text('{"version": 1, "files": {"x": {"stamp": 1, "summary": {"name": 3}}}}')
    rows = _list(capsys)
    assert rows and json.loads(index.read_text())["files"].keys() == {str(p) for p in registry.available().values()}

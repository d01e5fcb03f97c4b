import pytest

from trustlab.errors import ProfileError
from trustlab.timing import registry
from trustlab.timing.pro_format import export_pro, parse_pro
from trustlab.timing.profile import load_toml, profile_from_toml_dict

PAPER_LISTING = """# Infineon profile
overconst: 19.225
overinrate: 0.0025
overoutrate: 0.001

decrypt: 304.16 encrypt: 160.76 sign: 308.88

hashrate: 0.0001
"""


def test_shipped_tpm12_profiles_are_complete_and_sourced():
    names = registry.names("tpm1.2")
    for expected in ("atmel-2010", "winbond-2010", "infineon-2010", "stm-2010", "sim-2010"):
        assert expected in names
    for name in names:
        p = registry.load(name)
        for c in p.components.values():
            assert c.provenance.source, (name, c.name)
        assert {"ohc", "ohir", "ohor", "rsa_dec", "rsa_enc", "rsa_sign", "sha1_byte"} <= set(p.components)


def test_infineon_is_at_full_precision_of_the_paper_listing():
    shipped = registry.load("infineon-2010")
    listed = parse_pro(PAPER_LISTING, name="x", origin="paper")
    for comp in listed.components:
        assert shipped.mean(comp) == listed.mean(comp)


def test_pro_round_trip():
    p = registry.load("atmel-2010")
    back = parse_pro(export_pro(p), name="atmel-2010", origin="export")
    assert {k: c.mean for k, c in back.components.items()} == {k: p.mean(k) for k in back.components}


def test_toml_round_trip(tmp_path):
    p = registry.load("stm-2010")
    path = tmp_path / "p.toml"
    path.write_text(p.to_toml())
    q = load_toml(path)
    assert q.components == p.components and q.provenance == p.provenance


@pytest.mark.parametrize("text,needle", [
    ("overconst: 1\nbogus: 2\n", ":2: unknown key 'bogus'"),
    ("overconst: abc\n", ":1: overconst must be a number"),
    ("overconst: -1\n", ":1: overconst must be a non-negative number"),
    ("overconst: 1 overconst: 2\n", "repeated"),
    ("overconst: 1\n", "missing key(s) overinrate"),
    ("overconst: 1 garbage\n", ":1: cannot parse 'garbage'"),
])
def test_pro_errors_name_file_and_line(text, needle):
    with pytest.raises(ProfileError) as err:
        parse_pro(text, name="x", origin="chip.pro")
    assert "chip.pro" in str(err.value) and needle in str(err.value)


@pytest.mark.parametrize("doc,needle", [
    ({"components": {"a": {"mean": 1}}}, "missing 'name'"),
    ({"name": "x"}, "missing [components]"),
    ({"name": "x", "components": {"a": {"unit": "call"}}}, "[components.a]: missing 'mean'"),
    ({"name": "x", "components": {"a": {"mean": -3}}}, "must not be negative"),
    ({"name": "x", "components": {"a": {"mean": "fast"}}}, "expected a number"),
    ({"name": "x", "components": {"a": {"mean": 1, "unit": "furlong"}}}, "unit must be one of"),
    ({"name": "x", "components": {"a": {"mean": 1, "colour": 2}}}, "unknown key(s) colour"),
    ({"name": "x", "components": {"a": {"mean": 1, "sd": -1}}}, "sd must be"),
])
def test_toml_errors_are_specific(doc, needle):
    with pytest.raises(ProfileError) as err:
        profile_from_toml_dict(doc, "f.toml")
    assert needle in str(err.value) and "f.toml" in str(err.value)


def test_malformed_toml_names_file_and_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\n[components.a\nmean = 1\n')
    with pytest.raises(ProfileError) as err:
        load_toml(path)
    assert "bad.toml" in str(err.value) and "line 2" in str(err.value)


def test_unknown_profile_suggests_close_names():
    with pytest.raises(ProfileError) as err:
        registry.load("infineon-201")
    assert "did you mean infineon-2010" in str(err.value)


@pytest.mark.parametrize("name", ["../../evil", "", "a/b", ".hidden", "x.toml", "-rf"])
def test_install_refuses_names_that_are_not_plain_file_names(tmp_path, monkeypatch, name):
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path))
    from dataclasses import replace
    with pytest.raises(ProfileError, match="invalid profile name"):
        registry.install(replace(registry.load("atmel-2010"), name=name))
    assert not any(tmp_path.rglob("*.toml"))


def test_one_broken_user_profile_does_not_hide_the_others(tmp_path, monkeypatch):
    monkeypatch.setenv("TRUSTLAB_HOME", str(tmp_path))
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "broken.toml").write_bytes(b"\x00\xff[[[")
    assert "infineon-2010" in registry.names("tpm1.2")
    assert registry.family_of("broken") == registry.UNREADABLE
    with pytest.raises(ProfileError, match="broken.toml"):
        registry.load("broken")


def test_non_utf8_profile_files_are_reported_not_raised(tmp_path):
    from trustlab.timing.pro_format import load_pro
    for suffix, loader in ((".pro", load_pro), (".toml", load_toml)):
        path = tmp_path / f"bin{suffix}"
        path.write_bytes(b"\x00\xff\xfe")
        with pytest.raises(ProfileError, match="invalid UTF-8"):
            loader(path)


def test_missing_component_is_named():
    with pytest.raises(ProfileError, match="no component 'ecc_sign'"):
        registry.load("atmel-2010")["ecc_sign"]


def test_absurd_component_cost_is_a_one_line_error(tmp_path):
    """A finite but absurd cost (1.7e308 ms) would overflow every sum to inf: refused at load."""
    from trustlab.errors import ProfileError
    from trustlab.timing.profile import Component

    with pytest.raises(ProfileError, match="'ohc'.*above 1e\\+12 ms"):
        Component("ohc", 1.7e308)
    with pytest.raises(ProfileError, match="above"):
        Component("ohc", 1.0, sd=1e300)
    assert Component("ohc", 1e12).mean == 1e12

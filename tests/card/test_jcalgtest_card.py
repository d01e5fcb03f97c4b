"""JCAlgTest Java Card importer: real shipped data files and malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest

from trustlab.data.jcalgtest import import_jcalgtest
from trustlab.data.jcalgtest_card import component_name, parse_card_csv, parse_card_text
from trustlab.errors import ProfileError

DATA = Path("/work/shared/data/jcalgtest/javacard")
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="shared JCAlgTest data not present")


@needs_data
def test_fixed_file_new_format():
    p = import_jcalgtest(DATA / "NXP_JCOP4_J3R180_SECID_P71_fixed.csv")
    assert p.family == "javacard" and p.name == "nxp-jcop4-j3r180-secid-p71-fixed"
    c = p["ALG_SHA.MessageDigest_doFinal"]
    assert c.mean == pytest.approx(5.34) and "data length 256" in c.provenance.note
    assert "ALG_MD5.MessageDigest_doFinal" not in p  # NO_SUCH_ALGORITHM skipped
    assert all(comp.mean > 0 or ":" in n for n, comp in p.components.items())


@needs_data
def test_decimal_commas_and_old_method_lines():
    p = parse_card_csv(DATA / "NXP_JCOP21_v2.4.2R3_fixed.csv")
    assert p["ALG_SHA.MessageDigest_update"].mean == pytest.approx(8.84)
    v = parse_card_csv(DATA / "NXP_JCOP31_v2.4.1_72K_variable.csv")
    assert "ALG_SHA.MessageDigest_doFinal@32" in v and "ALG_SHA.MessageDigest_doFinal:per_byte" in v


@needs_data
def test_variable_file_fit():
    p = parse_card_csv(DATA / "NXP_JCOP4_J3R180_SECID_P71_variable.csv", name="jcop4")
    per_byte, base = p["ALG_SHA.MessageDigest_doFinal:per_byte"], p["ALG_SHA.MessageDigest_doFinal:base"]
    assert per_byte.unit == "byte" and 0 < per_byte.mean < 0.1
    # the line reproduces the 512-byte measurement within its own scatter
    assert base.mean + 512 * per_byte.mean == pytest.approx(p["ALG_SHA.MessageDigest_doFinal@512"].mean, rel=0.1)


def test_component_name():
    assert component_name("TYPE_AES LENGTH_AES_128 ALG_AES_BLOCK_128_CBC_NOPAD Cipher_doFinal()") == \
        "TYPE_AES.LENGTH_AES_128.ALG_AES_BLOCK_128_CBC_NOPAD.Cipher_doFinal"
    assert component_name("ALG_SHA MessageDigest_update()", 64) == "ALG_SHA.MessageDigest_update@64"


def test_malformed_inputs(tmp_path):
    with pytest.raises(ProfileError, match="not a JCAlgTest"):
        parse_card_text("hello;world\n", "x.csv")
    bad = "AlgTest applet version; 1\nmethod name:; ALG_X Foo()\noperation stats (ms/op):;avg op:;abc;\n"
    with pytest.raises(ProfileError, match="x.csv:3: expected a number"):
        parse_card_text(bad, "x.csv")
    empty = "AlgTest applet version; 1\nmethod name:; ALG_X Foo()\nNO_SUCH_ALGORITHM\n"
    with pytest.raises(ProfileError, match="no usable measurements"):
        parse_card_text(empty, "x.csv")
    with pytest.raises(ProfileError, match="cannot read"):
        parse_card_csv(tmp_path / "missing.csv")

"""``--chip`` findings of an outside evaluator: what a chip says about itself must be visible, a label must not
move a prediction, and every input form follows one rule with a one-line error."""

from __future__ import annotations

import json

import pytest

from trustlab.devices.tpm2.pqc_model import chipspec, keccak_impl, predict
from trustlab.devices.tpm2.pqc_model.chipspec import ChipSpec
from trustlab.errors import TrustlabError

from .cli_run import run

A53 = "core=cortex-a53,mhz=100"


def _price(text: str, algorithm: str = "ML-KEM-768", operation: str = "encapsulate") -> predict.Price:
    return predict.price(algorithm, operation, ChipSpec.parse(text), draws=400)


@pytest.mark.parametrize("core", ["cortex-a53", "x86", "rv32", "m0+"])
def test_asm_priced_as_c_is_said_not_silent(core):
    """keccak_impl=asm on a class with no sourced assembly speed-up is priced as C: the chip says so."""
    asm, c = ChipSpec.parse(f"core={core},mhz=100,keccak_impl=asm"), ChipSpec.parse(f"core={core},mhz=100,keccak_impl=c")
    assert keccak_impl.priced_as(asm.core, "asm") == "c"
    assert len(asm.notes) == 1 and "asm is priced as portable C" in asm.notes[0] and "keccak_asm" in asm.notes[0]
    assert c.notes == ()
    p = predict.price("ML-KEM-768", "encapsulate", asm, draws=400)
    assert "asm is priced as portable C" in p.provenance


def test_asm_on_a_class_with_a_sourced_speed_up_carries_no_note():
    for core in keccak_impl.sourced_classes():
        spec = ChipSpec.parse(f"core={core},mhz=100,keccak_impl=asm")
        assert spec.notes == () and keccak_impl.priced_as(spec.core, "asm") == "asm"


def test_cli_says_asm_is_priced_as_c_in_text_json_and_help():
    chip = f"{A53},keccak_impl=asm,name=n"
    rc, out, err = run("run", "pqc-tpm", "--chip", chip, "--algorithms", "ML-KEM-768", "--draws", "20")
    assert rc == 0, err
    lines = [line for line in out.splitlines() if "priced as portable C" in line]
    assert len(lines) == 1 and lines[0].startswith("Note: n: ") and "cortex-a53 (class a-class)" in lines[0]
    rc, out, err = run("run", "pqc-tpm", "--chip", chip, "--algorithms", "ML-KEM-768", "--draws", "20", "--json")
    assert rc == 0, err
    fact = next(f for f in json.loads(out)["chips"] if f["chip"] == "n")
    assert fact["keccak_impl"] == "asm" and fact["keccak_impl_priced_as"] == "c"
    assert any("priced as portable C" in n for n in fact["notes"])
    rc, out, _ = run("run", "pqc-tpm", "--help")
    flat = " ".join(out.split())
    assert "sourced only for cortex-m3, cortex-m4, cortex-m7, cortex-m33" in flat and "asm is priced as C" in flat


def test_the_name_does_not_change_a_prediction():
    a, b = _price(f"{A53},name=a"), _price(f"{A53},name=b")
    assert (a.median_ms, a.low_ms, a.high_ms) == (b.median_ms, b.low_ms, b.high_ms)
    # a file or the option, any label: one interval
    assert _price(f"{A53},name=" + "z" * 64).as_tuple()[:3] == (a.median_ms, a.low_ms, a.high_ms)


def test_chips_that_differ_in_one_fact_differ_by_that_fact_not_by_draw_noise():
    """Every chip is drawn with the same random numbers: twice the clock is exactly half the interval."""
    slow, fast = _price("core=cortex-a53,mhz=100,name=slow"), _price("core=cortex-a53,mhz=200,name=fast")
    assert (fast.low_ms, fast.high_ms) == pytest.approx((slow.low_ms / 2, slow.high_ms / 2), rel=1e-12)


@pytest.mark.parametrize("name, says", [
    ("a\x1b[31mred", "name 'a\\x1b[31mred' holds a control character (U+001B)"),
    ("row\nsplit", "holds a control character (U+000A)"),
    ("bidi\u202eevil", "holds a control character (U+202E)"),
    ("x" * 10_000, "name is 10000 characters long, at most 64"),
])
def test_a_name_is_short_printable_text(name, says):
    with pytest.raises(TrustlabError) as exc:
        ChipSpec.parse(f"core=m4,mhz=10,name={name}")
    message = str(exc.value)
    assert says in message and "\n" not in message and "\x1b" not in message and len(message) < 300
    assert ChipSpec.parse(f"core=m4,mhz=10,name={'x' * chipspec.NAME_MAX_CHARS}").name == "x" * 64
    assert ChipSpec.parse("core=m4,mhz=10,name=Pico 2 (RP2350) — µC").name == "Pico 2 (RP2350) — µC"


def test_a_control_character_in_a_toml_name_is_refused_too(tmp_path):
    f = tmp_path / "chip.toml"
    f.write_text('core = "m4"\nmhz = 10\nname = "a\\u001b[2Jb"\n')
    with pytest.raises(TrustlabError, match=r"name .* holds a control character \(U\+001B\)"):
        ChipSpec.parse(str(f))


@pytest.mark.parametrize("value, toml, expect", [
    ("0", "0", (0.0, 0.0, 0.0)),
    ("0-0", "[0, 0]", (0.0, 0.0, 0.0)),
    ("0-10", "[0, 10]", (0.0, 5.0, 10.0)),
    ("100", "100", (100.0, 100.0, 100.0)),
])
def test_zero_call_cycles_is_one_rule_in_every_form(tmp_path, value, toml, expect):
    """0 is a real engine's per-call cost (a driver that only feeds blocks), so 0, 0-10 and [0, 0] all mean it."""
    e = ChipSpec.parse(f"core=m4,mhz=10,keccak_cycles=500,keccak_call_cycles={value}").keccak_engine
    assert e.call_cycles == expect
    f = tmp_path / "chip.toml"
    f.write_text(f'core = "m4"\nmhz = 10\nkeccak_cycles = 500\nkeccak_call_cycles = {toml}\n')
    assert ChipSpec.parse(str(f)).keccak_engine.call_cycles == expect
    p = _price(f"core=m4,mhz=10,keccak_cycles=500,keccak_call_cycles={value}")
    assert 0 < p.low_ms <= p.median_ms <= p.high_ms


def test_a_range_from_zero_call_cycles_lies_between_none_and_its_high_end():
    none, zero_to = (_price(f"core=m4,mhz=10,keccak_cycles=500,keccak_call_cycles={v}") for v in ("0", "0-2000"))
    high = _price("core=m4,mhz=10,keccak_cycles=500,keccak_call_cycles=2000")
    assert none.median_ms < zero_to.median_ms < high.median_ms


@pytest.mark.parametrize("value", ["-1", "0--1", "[-1, 5]"])
def test_negative_call_cycles_are_refused_in_every_form(tmp_path, value):
    f = tmp_path / "chip.toml"
    toml = value if value.startswith("[") else f'"{value}"'
    f.write_text(f'core = "m4"\nmhz = 10\nkeccak_cycles = 500\nkeccak_call_cycles = {toml}\n')
    with pytest.raises(TrustlabError, match="keccak_call_cycles = '-1' must be a non-negative finite number"):
        ChipSpec.parse(str(f))


def test_toml_keys_are_case_insensitive_like_key_value(tmp_path):
    f = tmp_path / "chip.toml"
    f.write_text('Core = "m4"\nMHz = 100\nNAME = "x"\n')
    assert ChipSpec.parse(str(f)) == ChipSpec.parse("CORE=m4,Mhz=100,name=x")
    f.write_text('[Chip]\nCORE = "m4"\nmhz = 100\n')
    assert ChipSpec.parse(str(f)).mhz == (100.0, 100.0)
    f.write_text('core = "m4"\nmhz = 100\nMHZ = 50\n')
    with pytest.raises(TrustlabError, match="mhz given twice"):
        ChipSpec.parse(str(f))


def test_top_level_keys_beside_a_chip_table_are_refused(tmp_path):
    """The top-level mhz was ignored and the [chip] table then said 'mhz is required'."""
    f = tmp_path / "chip.toml"
    f.write_text('mhz = 100\n[chip]\ncore = "m4"\n')
    with pytest.raises(TrustlabError, match=r"top-level key 'mhz' beside a \[chip\] table"):
        ChipSpec.parse(str(f))
    rc, _, err = run("run", "pqc-tpm", "--chip", str(f))
    assert rc != 0 and err.count("\n") == 1 and "beside a [chip] table" in err


@pytest.mark.parametrize("chip", [
    "core=m4,mhz=" + "1" * 10_000,
    "core=m4,mhz=10,bus=" + "u" * 10_000,
    "core=" + "x" * 10_000 + ",mhz=10",
    "core=m4,mhz=10,build=" + "b" * 10_000,
    "core=m4,mhz=10,keccak_impl=" + "k" * 10_000,
    "core=m4,mhz=10," + "k" * 10_000 + "=1",
    "core=m4,mhz=10,certified=" + "y" * 10_000,
])
def test_a_huge_value_is_quoted_short(chip):
    """The 10,000-character value is cut to an excerpt. The bound leaves room for what the message must say
    besides: an unknown core lists every core class and named core (about 550 characters with eleven classes)."""
    rc, _, err = run("run", "pqc-tpm", "--chip", chip)
    assert rc != 0 and "(10000 characters)" in err and len(err) < 800 and err.count("\n") == 1, err[:300]


def test_two_chips_with_one_label_are_refused():
    """Rows are told apart by the chip's label: a repeated spec (or two with one name=) is a usage error."""
    rc, out, err = run("run", "pqc-tpm", "--chip", "core=m4,mhz=100", "--chip", "core=m4,mhz=100",
                       "--algorithms", "ML-KEM-768", "--draws", "20")
    assert rc == 2 and out == "" and "2 chips are labelled 'cortex-m4 @ 100 MHz'" in err and "name=LABEL" in err
    rc, _, err = run("run", "pqc-tpm", "--chip", "core=m4,mhz=100,name=a", "--chip", "core=m4,mhz=200,name=a",
                     "--algorithms", "ML-KEM-768", "--draws", "20")
    assert rc == 2 and "labelled 'a'" in err
    rc, _, err = run("run", "pqc-tpm", "--chip", "core=m4,mhz=100,name=a", "--chip", "core=m4,mhz=100,name=b",
                     "--algorithms", "ML-KEM-768", "--draws", "20")
    assert rc == 0, err


BIG = "1" + "0" * 400  # beyond a float: float(int) raised OverflowError (a traceback) for a TOML integer


@pytest.mark.parametrize("line, key", [
    (f"mhz = {BIG}", "mhz"),
    (f"mhz = [1, {BIG}]", "mhz"),
    (f"mhz = 100\nsha256_kbps = {BIG}", "sha256_kbps"),
    (f"mhz = 100\nohc_ms = {BIG}", "ohc_ms"),
    (f"mhz = 100\nkeccak_cycles = {BIG}", "keccak_cycles"),
    (f"mhz = 100\nkeccak_cycles = [1000, {BIG}]", "keccak_cycles"),
    (f"mhz = 100\nkeccak_cycles = 2000\nkeccak_call_cycles = {BIG}", "keccak_call_cycles"),
    (f"mhz = 100\nkeccak_cycles = 2000\nkeccak_call_cycles = [0, {BIG}]", "keccak_call_cycles"),
    ("mhz = 100\nsha256_kbps = nan", "sha256_kbps"),
    ("mhz = 100\nohc_ms = inf", "ohc_ms"),
    ("mhz = -inf", "mhz"),
    ("mhz = 100\nkeccak_cycles = nan", "keccak_cycles"),
    ("mhz = [true, 100]", "mhz"),
    ("mhz = 100\nohc_ms = true", "ohc_ms"),
    ("mhz = 100\nsha256_kbps = false", "sha256_kbps"),
    ("mhz = 100\nkeccak_cycles = [true, 2000]", "keccak_cycles"),
    ("mhz = 100\nkeccak_cycles = 2000\nkeccak_call_cycles = false", "keccak_call_cycles"),
])
def test_every_numeric_toml_field_refuses_overflow_bool_and_non_finite_in_one_line(tmp_path, line, key):
    """A TOML file's number follows the key=value rule: one line naming the field and the file, exit 2."""
    f = tmp_path / "chip.toml"
    f.write_text(f'core = "cortex-m4"\n{line}\n')
    rc, out, err = run("run", "pqc-tpm", "--chip", str(f), "--algorithms", "ML-KEM-768", "--draws", "20")
    assert rc == 2 and out == "" and err.count("\n") == 1, err[-400:]
    assert f"--chip {f}: {key} = " in err and ("finite number" in err or "is not a number" in err), err


def test_a_huge_toml_integer_is_refused_as_its_key_value_form_is():
    rc, _, err = run("run", "pqc-tpm", "--chip", f"core=cortex-m4,mhz={BIG}")
    assert rc == 2 and "mhz = " in err and "must be a positive finite number" in err


def test_a_security_controllers_core_says_so_in_its_label():
    """core=sc300 is priced as a certified TPM on the Cortex-M3 class (its documented defaults), where core=m3 is a
    bare microcontroller; both were labelled 'cortex-m3 @ 100 MHz' (second outside evaluation)."""
    assert ChipSpec.parse("core=sc300,mhz=100").name == "sc300 (cortex-m3 class, security controller) @ 100 MHz"
    assert ChipSpec.parse("core=m3,mhz=100").name == "cortex-m3 @ 100 MHz"
    assert ChipSpec.parse("core=secure-mcu,mhz=25-100").name == "secure-mcu (security controller) @ 25-100 MHz"

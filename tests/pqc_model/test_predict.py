"""price(algorithm, operation, chip): chips described by their facts, intervals, leave-one-source-out."""

import json
import re

import pytest

from trustlab.devices.tpm2.pqc_model import classes, estimate, predict, validation
from trustlab.devices.tpm2.pqc_model.chipspec import ChipSpec
from trustlab.errors import TrustlabError

from .cli_run import run


def test_price_is_median_low_high_provenance():
    p = predict.price("ML-KEM-768", "encapsulate", ChipSpec.parse("core=cortex-m4,mhz=100"))
    median, low, high, prov = p.as_tuple()
    assert 0 < low <= median <= high and "pqm4" in prov and "implementation" in prov
    # a Cortex-M4 at 100 MHz running portable C: pqm4 clean's cycles / 100 MHz (our counts of the same work)
    keccak, other = classes.m4_cycles("ML-KEM-768", "encapsulate")
    assert p.mean_ms == pytest.approx((keccak + other) / 100e3)


def test_clock_scales_and_slower_cores_take_longer():
    m4 = predict.price("ML-DSA-65", "verify", ChipSpec.parse("core=m4,mhz=100")).median_ms
    assert predict.price("ML-DSA-65", "verify", ChipSpec.parse("core=m4,mhz=50")).median_ms == pytest.approx(2 * m4)
    assert predict.price("ML-DSA-65", "verify", ChipSpec.parse("core=m0+,mhz=100")).median_ms > 1.5 * m4


def test_an_unknown_clock_widens_the_interval():
    known = predict.price("ML-KEM-768", "decapsulate", ChipSpec.parse("core=m3,mhz=50"))
    unknown = predict.price("ML-KEM-768", "decapsulate", ChipSpec.parse("core=m3,mhz=25-100"))
    assert unknown.high_ms / unknown.low_ms > known.high_ms / known.low_ms


def test_certified_chips_protect_secret_key_operations_only():
    plain = ChipSpec.parse("core=m3,mhz=50")
    certified = ChipSpec.parse("core=m3,mhz=50,certified=yes")
    for alg, op, slower in (("ML-KEM-768", "decapsulate", True), ("ML-DSA-65", "sign", True),
                            ("ML-KEM-768", "encapsulate", False), ("ML-DSA-65", "verify", False)):
        a, b = predict.price(alg, op, plain).median_ms, predict.price(alg, op, certified).median_ms
        assert (b > a) if slower else (b == a)
    off = predict.price("ML-KEM-768", "decapsulate", certified, protection=False).median_ms
    assert off == predict.price("ML-KEM-768", "decapsulate", plain).median_ms


def test_key_creation_is_keygen_plus_consistency_test_plus_wrapping():
    tpm = ChipSpec.parse("core=m3,mhz=50,tpm=yes")
    keygen = predict.price("ML-KEM-768", "keygen", tpm).mean_ms
    pct = sum(predict.price("ML-KEM-768", op, tpm).mean_ms for op in ("encapsulate", "decapsulate"))
    create = predict.price("ML-KEM-768", "create", tpm).mean_ms
    assert create > keygen + pct - 1e-9  # + wrapping
    assert "pairwise consistency" in predict.price("ML-DSA-65", "create", tpm).provenance


def test_sha256_rate_places_the_chip_unclamped():
    slow = ChipSpec.parse("core=m3,mhz=25-100,sha256_kbps=40")
    s = estimate.central_speed(slow)
    assert s.keccak_mhz < 4  # 40 KB/s of software SHA-256 = ~3.5 MHz of a Cortex-M4, below the class's clock range


def test_chip_from_toml_file_equals_the_option(tmp_path):
    f = tmp_path / "mychip.toml"
    f.write_text('[chip]\ncore = "cortex-m0plus"\nmhz = 133\nname = "pico"\n')
    a = predict.price("ML-KEM-512", "keygen", ChipSpec.parse(str(f)))
    b = predict.price("ML-KEM-512", "keygen", ChipSpec.parse("core=cortex-m0plus,mhz=133,name=pico"))
    assert a == b


def test_cli_chip_json_rows_have_intervals():
    rc, out, err = run("run", "pqc-tpm", "--chip", "core=cortex-m0plus,mhz=133", "--json")
    assert rc == 0, err
    rows = json.loads(out)["rows"]
    assert {r["algorithm"] for r in rows} >= {"ML-KEM-512", "ML-KEM-768", "ML-DSA-65"}
    for r in rows:
        assert r["profile"] is None and r["chip"] == "cortex-m0plus @ 133 MHz"
        assert 0 < r["low_ms"] <= r["median_ms"] <= r["high_ms"]


@pytest.mark.parametrize("chip, message", [
    ("core=cortex-m9,mhz=1", "--chip: unknown core class 'cortex-m9'"),
    ("core=m0+", "--chip: mhz is required"),
    ("mhz=3", "--chip: core is required"),
    ("core=m0+,mhz=-3", "mhz = '-3' must be a positive"),
    ("core=m0+,mhz=abc", "mhz = 'abc' is not a number"),
    ("core=m0+,mhz=100-10", "low above high"),
    ("core=m0+,mhz=10,bus=usb", "bus = 'usb'"),
    ("core=m0+,mhz=10,bus=spi", "needs its clock"),
    ("core=m0+,mhz=10,foo=1", "unknown key 'foo'"),
    ("core=m0+,mhz=10,certified=maybe", "not yes/no"),
    ("core=m0+,mhz=10,mhz=20", "mhz given twice"),
    ("/no/such/chip.toml", "neither key=value pairs nor an existing TOML file"),
])
def test_bad_chip_is_a_one_line_error(chip, message):
    with pytest.raises(TrustlabError, match=None) as exc:
        ChipSpec.parse(chip)
    assert message in str(exc.value)
    rc, out, err = run("run", "pqc-tpm", "--chip", chip)
    assert rc != 0 and message in err and "Traceback" not in err


def test_bad_toml_chip_file(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("core = \n")
    with pytest.raises(TrustlabError, match="not valid TOML"):
        ChipSpec.parse(str(f))


def test_every_row_is_predicted_without_its_own_source():
    for r in validation.loso_rows():
        assert r["source_id"] not in r["class_basis"]  # the class was rebuilt without the row's source


def test_the_measurements_span_enough_sources_and_classes():
    s = validation.summary()["overall"]
    assert s["rows"] >= 10 and s["sources"] >= 4 and s["core_classes"] >= 3


def test_leave_one_source_out_summary_is_reported_as_measured():
    """Issue 27's goals, as they stand with every published row found so far (the summary reports them; nothing
    is tuned to meet them). Median |error| <= 25%, every row within 2x and coverage >= 80% do not hold:
    - the three x86 sources disagree by up to 4x (mlkem-native's C on a c7i with -march=native, core cycles;
      itzmeanjan's C++ on an i7-1260P, core cycles; Xu's PQClean C on an unnamed desktop in rdtsc ticks, build
      type not stated): the fastest and the slowest, left out, are priced from the others and miss;
    - the RP2350 (Cortex-M33) runs PQClean at about 0.6-0.7 of a Cortex-M4's work per clock, below the M33
      prior's 1.0-1.18; its two sources (Xu's thesis data, Xu's pico-pqc) share the author and the board, so each
      predicts the other well, which says little about other M33 chips;
    - the STM32F446 application build is 4-4.5x slower than pqm4's code predicts (build options not stated), the
      FHNW STM32F407 -O0 build of the Kyber reference 5.5-7x (the model has no build factor yet);
    - Greconici et al.'s hand-optimised M3 keygen/verify fall below the portable-C interval."""
    s = validation.summary()["overall"]
    counted = [r for r in validation.loso_rows() if r["counted"]]
    misses = [r for r in counted if max(r["predicted"] / r["reference"], r["reference"] / r["predicted"]) > 2]
    assert s["within_2x"] == s["rows"] - len(misses)
    assert {r["source_id"] for r in misses} <= {"mlkem-native-c7i", "xu2025-x86", "wolfssl-examples-f446",
                                                "fhnw-kyber-f407-O0"}
    uncovered = {r["source_id"] for r in counted if not r["covered"]}
    assert uncovered <= {"mlkem-native-c7i", "xu2025-x86", "wolfssl-examples-f446", "greconici2021-m3",
                         "xu2025-rp2350", "fhnw-kyber-f407-O0"}
    assert s["coverage"] == sum(r["covered"] for r in counted) / len(counted)


def test_published_sources_cover_these_core_classes():
    """The RISC-V 32 rows found (liboqs on an ESP32-C3) are flagged, not counted (see their note); pqm4's clean
    figures (the M4 basis) are calibration, other M4 sources count."""
    measured = {r["core"] for r in validation.loso_rows() if r["counted"]}
    assert {"cortex-m0plus", "cortex-m3", "cortex-m33", "a-class", "riscv64", "host-x86"} <= measured


def test_a_published_median_is_compared_with_the_model_median_run():
    """ML-DSA signing's rejection loop puts its median run below its mean: a row of medians is compared with
    the model's median run, a row of means with its mean."""
    row = next(r for r in classes.measurements()["rows"]
               if r.get("statistic") == "median" and r["operation"] == "sign")
    p = validation.predict_row(row)
    as_mean = validation.predict_row({k: v for k, v in row.items() if k != "statistic"})
    assert p["predicted"] < as_mean["predicted"]
    k_med, o_med = classes.m4_median_run_cycles(row["algorithm"], "sign")
    k_mean, o_mean = classes.m4_cycles(row["algorithm"], "sign")
    assert k_med + o_med < k_mean + o_mean


@pytest.mark.parametrize("text, says", [
    ("core=m4,mhz=1e-300", "mhz = 1e-300 is outside"),        # an exponent is not a range
    ("core=m4,mhz=0.0001-5", "mhz = 0.0001 is outside"),
    ("core=m4,mhz=10,ohc_ms=1e308", "ohc_ms = 1e+308 is outside"),  # would overflow every price to inf
    ("core=m4,mhz=10,sha256_kbps=1e-300", "sha256_kbps = 1e-300 is outside"),
])
def test_chip_figures_outside_any_chip_are_one_line_errors(text, says):
    with pytest.raises(TrustlabError, match=re.escape(says)):
        ChipSpec.parse(text)


def test_a_clock_in_exponent_notation_is_a_number():
    assert ChipSpec.parse("core=m4,mhz=1.33e3").mhz == (1330.0, 1330.0)

"""price(algorithm, operation, chip): chips described by their facts, intervals, leave-one-source-out."""

import json
import statistics
import re

import pytest

from trustlab.devices.tpm2.pqc_model import builds, classes, estimate, keccak_impl, predict, validation
from trustlab.devices.tpm2.pqc_model.chipspec import ChipSpec
from trustlab.errors import TrustlabError

from .cli_run import run

M4_ASM = {"core": "cortex-m4", "keccak": "asm", "lineage": "reference"}
"""A measurement source on the calibration's own Keccak (pqm4's assembly on a Cortex-M4): no Keccak conversion."""
M4_C = {"core": "cortex-m4", "keccak": "c", "lineage": "reference"}
"""A Cortex-M4 source with a C Keccak: its Keccak per clock x the M4's C/asm ratio stands on the C basis."""


def test_price_is_median_low_high_provenance():
    p = predict.price("ML-KEM-768", "encapsulate", ChipSpec.parse("core=cortex-m4,mhz=100,build=speed,keccak_impl=asm"))
    median, low, high, prov = p.as_tuple()
    assert 0 < low <= median <= high and "pqm4" in prov and "implementation" in prov and "Keccak-f[1600]" in prov
    # a Cortex-M4 at 100 MHz running portable C built for speed with pqm4's assembly Keccak, as pqm4 'clean'
    # links it: pqm4 clean's cycles / 100 MHz (our counts)
    keccak, other = classes.m4_cycles("ML-KEM-768", "encapsulate")
    assert p.mean_ms == pytest.approx((keccak + other) / 100e3)


def test_the_keccak_implementation_is_explicit():
    """pqm4's 'clean' cycles (the calibration) link pqm4's assembly Keccak; the classes' Keccak is on a C basis. A C
    Keccak on a Cortex-M4 costs the calibration's Keccak x the M4's C/asm ratio (cores.toml keccak_asm, our cycle
    model); unknown (the default) is centred on C; a class with no sourced assembly prices asm as C."""
    keccak, other = classes.m4_cycles("ML-KEM-768", "encapsulate")
    a = keccak_impl.asm_speedup("cortex-m4")
    assert 1.5 < a.lo <= a.mid <= a.hi < 2.5

    def price(extra, core="m4"):
        return predict.price("ML-KEM-768", "encapsulate", ChipSpec.parse(f"core={core},mhz=100,build=speed{extra}"))
    c, unknown = price(",keccak_impl=c"), price("")
    assert c.mean_ms == pytest.approx((keccak * a.mid + other) / 100e3)
    assert unknown.mean_ms == pytest.approx(c.mean_ms) and unknown.low_ms < c.low_ms
    assert price(",keccak_impl=asm").high_ms < c.high_ms
    # the optimisation level moves a compiled Keccak, not an assembly one
    debug_asm = predict.price("ML-KEM-768", "encapsulate", ChipSpec.parse("core=m4,mhz=100,build=debug,keccak_impl=asm"))
    fo = builds.build("debug", "arith").mid
    assert debug_asm.mean_ms == pytest.approx((keccak + other * fo) / 100e3)
    assert ChipSpec.parse("core=m4,mhz=1,impl=optimized").keccak_impl == "asm"  # pqm4's m4f links pqm4's Keccak
    assert ChipSpec.parse("core=m4,mhz=1").keccak_impl == "unknown"
    assert price(",keccak_impl=asm", "m0+").mean_ms == pytest.approx(price(",keccak_impl=c", "m0+").mean_ms)
    assert keccak_impl.centre("cortex-m4", "asm") == 1.0 and keccak_impl.centre("cortex-m33", "asm") == 1.0
    # the M3's ARMv7-M assembly (pqm3's) is older than pqm4's: an M3 running it is a little slower than the basis
    assert 1.0 < keccak_impl.centre("cortex-m3", "asm") < keccak_impl.centre("cortex-m3", "c")


@pytest.mark.parametrize("text, says", [
    ("core=m4,mhz=1,keccak_impl=neon", "keccak_impl = 'neon': use one of asm, c, unknown"),
    ("core=m4,mhz=1,keccak_impl=c,keccak_engine=kmac", "keccak_impl = c and a Keccak engine both given"),
    ("core=m4,mhz=1,keccak_impl=asm,keccak_cycles=100", "keccak_impl = asm and a Keccak engine both given"),
])
def test_a_keccak_implementation_knob_misused_is_a_one_line_error(text, says):
    with pytest.raises(TrustlabError, match=re.escape(says)):
        ChipSpec.parse(text)


def test_every_measurement_source_states_its_keccak_and_is_brought_to_the_c_basis():
    """A source that ran C on a Cortex-M4 at the M4's C speed stands at 1 on the C basis; pqm4's assembly too."""
    doc = classes.measurements()
    assert all(keccak_impl.of_source(s) in keccak_impl.KINDS and s.get("keccak_evidence") for s in doc["sources"])
    kinds = {s["id"]: s["keccak"] for s in doc["sources"]}
    assert kinds["pqm3-f207"] == "asm" and kinds["fhnw-kyber-f407-O0"] == "c" and kinds["wolfssl-examples-f446"] == "c"
    a = keccak_impl.asm_speedup("cortex-m4").mid
    assert classes.keccak_basis({"core": "cortex-m4", "keccak": "c"}) == pytest.approx(a)
    assert classes.keccak_basis({"core": "cortex-m4", "keccak": "asm"}) == 1.0
    assert classes.keccak_basis({"core": "riscv32", "keccak": "c", "keccak_engine": "kmac"}) == 1.0
    with pytest.raises(TrustlabError, match="keccak is missing"):
        keccak_impl.of_source({"id": "x", "core": "cortex-m4"})


def test_the_build_moves_the_centre_by_its_published_factor():
    """-Os / -O0 / unknown builds are slower than the benchmark build by their factors (Embench-IoT; -O0 per
    counted unit, measured on the Kyber reference): the Keccak share of the work by the Keccak factor, the
    rest by the other one. An unstated build (the default) is the widest range, and the provenance names the
    source."""
    def price(build):
        return predict.price("ML-KEM-768", "encapsulate", ChipSpec.parse(f"core=m4,mhz=100,build={build},keccak_impl=c"))
    speed = price("speed")
    keccak, other = classes.m4_cycles("ML-KEM-768", "encapsulate")
    keccak *= keccak_impl.asm_speedup("cortex-m4").mid  # a compiled (C) Keccak: the build moves it
    for kind in ("size", "debug", "unknown", "application"):
        p = price(kind)
        fk, fo = (f.mid for f in builds.units(kind))
        assert p.mean_ms == pytest.approx(speed.mean_ms * (keccak * fk + other * fo) / (keccak + other))
        assert p.high_ms / p.low_ms > speed.high_ms / speed.low_ms
    default = predict.price("ML-KEM-768", "encapsulate", ChipSpec.parse("core=m4,mhz=100,keccak_impl=c"))
    assert default.mean_ms == price("unknown").mean_ms and "Embench-IoT" in default.provenance


def test_build_and_timer_fields_are_read_tolerantly():
    assert builds.build_kind(None) == builds.build_kind("Pico SDK default") == "unknown"
    assert builds.build_kind("-Os") == "size" and builds.build_kind("-O3 -march=native") == "speed"
    assert builds.build_kind("Debug") == "debug" and builds.build_kind("application (STM32CubeIDE)") == "application"
    assert builds.build_kind("-O0 -g3") == "debug" and builds.build_kind("gcc -Og -g") == "og"  # -Og keeps registers
    assert builds.build_kind("RelWithDebInfo (-O2 -g)") == "o2" and builds.build_kind("Release") == "speed"
    assert builds.timer_kind(None, "cycles") == "cycles" and builds.timer_kind(None, "ms") == "wall"
    assert builds.timer_kind("rdtsc", "cycles") == "tsc" and builds.timer_kind("PMU", "cycles") == "cycles"
    named = builds.timer("tsc", "Intel Core i7-1260P")
    assert named.lo == pytest.approx(2.1 / 4.7) and named.hi == 1.0 and "ARK" in named.source
    assert builds.timer("tsc", "x86-64 desktop").lo < 1.0 < builds.timer("tsc", "").hi + 1e-9


def test_a_measured_between_source_spread_widens_class_predictions():
    spread = classes.source_spread()
    assert spread.sigma > 0 and spread.dof >= 1 and len(spread.classes) >= 1
    p = predict.price("ML-KEM-768", "encapsulate", ChipSpec.parse("core=m33,mhz=150,build=speed"))
    assert "between-source spread" in p.provenance
    assert p.high_ms / p.low_ms > 1.2


def test_the_spread_is_pooled_from_sources_whose_build_and_timer_are_known_within_their_group():
    """A source of a debug, unstated or application build, or rdtsc on an unnamed CPU, would bring its build's
    or timer's uncertainty into the spread a second time; application cores (x86, A-class, RV64) do not set the
    spread of microcontrollers."""
    doc = classes.measurements()
    src = {s["id"]: s for s in doc["sources"]}
    row = {s: next(r for r in doc["rows"] if r["source"] == s) for s in src}
    exact = {s for s in src if classes.exact_basis(src[s], row[s])}
    assert "fhnw-kyber-f407-O0" not in exact and "wolfssl-examples-f446" not in exact
    assert "wolfssl-zcu102-a53" not in exact and "xu-pico-pqc-rp2350" in exact
    # unstated Keccak on a class where assembly and C differ: carried by its Keccak factor, not the spread
    assert "pqm4-pr401-mldsa-native-l4r5" not in exact
    # hand-written assembly is on no class's portable-C basis
    assert not {"greconici2021-m3", "huang2023-due-m3", "huang2023-fe310", "wolfboot-polarfire-u54"} & exact
    mcu, app = classes.source_spread(), classes.source_spread(frozenset(), "application")
    assert not set(mcu.classes) & {"host-x86", "a-class", "riscv64"} and "host-x86" in app.classes
    assert mcu.quantiles()[1] < app.quantiles()[1]
    # a centre of k sources is itself uncertain: sqrt(1 + 1/k) wider for a new chip
    assert mcu.quantiles(2)[1] > mcu.quantiles()[1]


def test_rows_of_unknown_code_base_stay_in_the_spread_with_their_lineage_variance_taken_out():
    """A row of unstated lineage (or one priced as unknown: mldsa-native's) is drawn over the unknown lineage's range
    when predicted, so its code base's part of its distance from the class must not count in the spread as well.
    Leaving such rows out (as the spread did) made the spread rest on one to three degrees of freedom (median
    interval x8.1 high/low, coverage 96% of a nominal 90%); they stay, and the known mean and variance of their
    lineage factor come out of the sum of squares (classes.lineage_doubt, classes.moments)."""
    doc = classes.measurements()
    src = {s["id"]: s for s in doc["sources"]}
    libcrux = [r for r in doc["rows"] if r["source"] == "libcrux-iot-l4r5"]
    kem = [r for r in libcrux if r["algorithm"].startswith("ML-KEM")]
    dsa = [r for r in libcrux if r["algorithm"].startswith("ML-DSA")]
    assert kem and dsa and all(classes.exact_basis(src["libcrux-iot-l4r5"], r) for r in kem + dsa)
    mu, var = classes.lineage_doubt(src["libcrux-iot-l4r5"], tuple(kem + dsa))
    # unknown: centre the reference (x1) and slow end, so the real code can only be faster: a positive mean shift
    assert mu > 0.03 and var > 0.005
    # a measured lineage is brought to the basis by its centre: a smaller doubt than the unknown's
    bpif3 = tuple(r for r in doc["rows"] if r["source"] == "mlkem-native-bpif3")
    kem_only = tuple(kem)
    assert classes.lineage_doubt(src["mlkem-native-bpif3"], bpif3)[1] < classes.lineage_doubt(
        src["libcrux-iot-l4r5"], kem_only)[1]
    # the reference lineage has none; nor has hand-written assembly (no C lineage)
    xu = tuple(r for r in doc["rows"] if r["source"] == "xu-pico-pqc-rp2350")
    assert classes.lineage_doubt(src["xu-pico-pqc-rp2350"], xu) == (0.0, 0.0)
    huang = tuple(r for r in doc["rows"] if r["source"] == "huang2023-fe310")
    assert classes.lineage_doubt(dict(src["huang2023-fe310"], implementation="optimized"), huang) == (0.0, 0.0)


def test_the_spread_estimator_subtracts_the_known_part_without_bias():
    """Simulated sources (between-source sd 0.1, plus a known lineage shift like the unknown ML-KEM's: 0 or
    uniform on [0, 0.6]): the method-of-moments estimate of sigma^2 is unbiased over many classes, where the plain
    sum of squares over-states it by the lineage's variance."""
    import numpy as np

    rng = np.random.default_rng(7)
    d = 0.6
    u = (np.arange(4000) + 0.5) / 4000
    shift = np.where(u < 0.5, d * (1 - 2 * u), 0.0)
    mu, var = float(shift.mean()), float(shift.var())
    est, plain = [], []
    for _ in range(3000):
        k = 4
        doubted = rng.random(k) < 0.5
        means = 0.1 * rng.standard_normal(k) + np.where(doubted, rng.choice(shift, k), 0.0)
        ss, known, dof = classes.moments(list(means), [mu if x else 0.0 for x in doubted],
                                         [var if x else 0.0 for x in doubted])
        est.append((ss - known) / dof)
        plain.append(ss / dof)
    assert statistics.fmean(est) == pytest.approx(0.01, rel=0.1)
    assert statistics.fmean(plain) > 0.02
    # about a fixed centre (the Cortex-M4 basis) every source is a degree of freedom
    ss, known, dof = classes.moments([0.2, -0.1], [0.1, 0.0], [0.01, 0.0], fixed_centre=True)
    assert dof == 2 and ss == pytest.approx(0.02) and known == pytest.approx(0.01)
    assert classes.moments([0.3], [0.0], [0.0]) == (0.0, 0.0, 0)


def test_the_known_mean_is_shifted_out_before_the_sum_of_squares():
    """Two sources whose means differ by exactly their known lineage shifts did not differ on their own: a zero sum
    of squares (subtracting sum (mu_i - mean mu)^2 afterwards left that spread in as noise)."""
    ss, known, dof = classes.moments([0.5, 0.2], [0.3, 0.0], [0.02, 0.0])
    assert ss == pytest.approx(0.0) and known == pytest.approx(0.01) and dof == 1


def test_no_leave_one_source_out_exclusion_estimates_a_zero_spread():
    """The moment estimate truncates at zero where the sum of squares is at or below its known part (it did for the
    application cores without xu2025-x86: sigma 0 on 4 degrees of freedom); the reference-lineage rows' own estimate
    is its floor, and a group with neither falls back to all groups."""
    ids = [s["id"] for s in classes.measurements()["sources"]]
    for excluded in [None, *ids]:
        exclude = frozenset([excluded]) if excluded else frozenset()
        for grp in ("microcontroller", "application"):
            spread = classes.source_spread(exclude, grp)
            assert spread.sigma > 0 and spread.dof >= 1, (excluded, grp)
            lo, hi = spread.quantiles()
            assert lo < 1.0 < hi, (excluded, grp)


def test_the_reference_lineage_rows_floor_the_spread():
    """A sum of squares below its known part would give zero; the reference-lineage sources alone (nothing
    subtracted) set the estimate then, with their own degrees of freedom, and the text says so."""
    ss, dof = classes._reference_only([0.1, None, -0.1], fixed_centre=False)
    assert ss == pytest.approx(0.02) and dof == 1
    assert classes._reference_only([0.1, None], fixed_centre=False) == (0.0, 0)
    assert classes._reference_only([0.1, None], fixed_centre=True) == (pytest.approx(0.01), 1)
    floored = [s for s in (classes.source_spread(frozenset([x]), g) for x in ("xu2025-x86", "libcrux-iot-l4r5")
                           for g in ("microcontroller", "application")) if s.floored]
    assert all("reference-lineage sources alone" in s.text() for s in floored)


def test_intervals_are_honest_and_not_over_wide():
    """Coverage of at least 80% is the issue's acceptance check; the rest is structure, not a score: every row's
    interval brackets its central prediction, and the summary's width is the rows' median high / low. (History: 96%
    at x8.1 high/low when rows of unknown lineage left the spread; about 90-95% at about x3.5-x3.9
    since their known lineage doubt is taken out of the sum of squares.)"""
    o = validation.summary()["overall"]
    assert o["coverage"] >= 0.8
    counted = [r for r in validation.loso_rows() if r["counted"]]
    assert all(r["low"] <= r["predicted"] <= r["high"] and r["high"] > r["low"] for r in counted)
    assert o["median_width"] == statistics.median(r["high"] / r["low"] for r in counted)


def test_x86_prices_signing_against_verification_as_the_reference_c_measures():
    """Reference values, not fitted: the Dilithium round-3 specification (2021-02-08) Table 1, the reference C's
    median cycles on Skylake, keygen / sign / verify (Dilithium2 300,751 / 1,081,174 / 327,362; Dilithium3 544,232 /
    1,713,783 / 522,267; Dilithium5 819,475 / 2,383,399 / 871,609). With one work per clock for Keccak and the rest
    the x86 class priced signing 23-31% low and sign / verify at 2.0-2.5; with the measured proportion
    (cores.toml keccak_per_arith, classes.unit_split) every figure and every sign / verify ratio is within 15%."""
    published = {"ML-DSA-44": (300751, 1081174, 327362), "ML-DSA-65": (544232, 1713783, 522267),
                 "ML-DSA-87": (819475, 2383399, 871609)}
    spec = ChipSpec.parse("core=skylake,mhz=1,build=speed,lineage=reference,keccak_impl=c,impl=portable")
    for algorithm, figures in published.items():
        kcycles = [predict.price(algorithm, op, spec, protection=False).run_median_ms * 1000
                   for op in ("keygen", "sign", "verify")]
        assert all(abs(k / f - 1) < 0.15 for k, f in zip(kcycles, figures)), (algorithm, kcycles)
        assert kcycles[1] / kcycles[2] == pytest.approx(figures[1] / figures[2], rel=0.15)
    assert classes.unit_split("host-x86") > 2.0 and classes.unit_split("cortex-m4") == 1.0


def test_a_left_out_cortex_m33_source_is_not_priced_from_one_unknown_lineage_source():
    """With one Cortex-M33 source left out, the microcontroller spread was libcrux's alone (one degree of freedom:
    intervals x20-x22 high/low, its lineage's doubt inside the spread). Its lineage's known mean and variance come
    out of its sum of squares (classes.lineage_doubt, classes.moments); what is left is at or below that known part,
    so no estimate rests on it: the group has no other degree of freedom and pools all groups (source_spread)."""
    libcrux = classes._source_lineage_doubt("libcrux-iot-l4r5")
    assert libcrux[0] > 0 and libcrux[1] > 0  # unknown lineage: a known doubt to take out
    for sid in ("xu-pico-pqc-rp2350", "xu2025-rp2350"):
        spread = classes.source_spread(frozenset({sid}), "microcontroller")
        assert spread.sigma > 0 and spread.dof >= 2 and "none of its own, so all" in spread.group
        assert spread.sources > 1


def test_a_mixed_build_is_a_mixture_not_the_envelope_of_its_parts():
    """Application = half a size and half a debug build: its 95th percentile lies well inside the slowest debug
    benchmark, its centre is the parts' geometric mean, and draws rise with the quantile. (Unknown, weighted by
    the sources' base rate: tests/pqc_model/test_build_prior.py.)"""
    import numpy as np

    for kind in ("application", "unknown"):
        b = builds.build(kind)
        lo, hi = b.quantiles()
        assert b.lo <= lo < b.mid < hi < b.hi
    b = builds.build("application")
    parts = [builds.build(k).mid for k in ("size", "debug")]
    assert b.central(0.5) == b.mid == pytest.approx((parts[0] * parts[1]) ** (1 / 2))
    u = np.linspace(0.001, 0.999, 200)
    assert np.all(np.diff(b.draw(u)) >= 0)
    # half of the weight is the debug build, so about a quarter lies above the debug build's median
    assert float(np.mean(b.draw(np.random.default_rng(1).random(20000)) > builds.build("debug").mid)) == \
        pytest.approx(1 / 4, abs=0.02)


def test_the_implementation_factor_follows_what_the_code_is():
    """Portable C is the classes' basis (x1); pqm4's Cortex-M4 assembly can only be the unstated code of a core
    that runs it, so an unstated-code Cortex-M0+ is never faster than pqm4's clean Cortex-M4 code at its clock."""
    m4 = ChipSpec.parse("core=m4,mhz=133")
    assert estimate.impl_factor(ChipSpec.parse("core=m4,mhz=133,impl=portable"), "ML-KEM-512", "keygen", 0.01) == (1.0, 1.0)
    k, o = estimate.impl_factor(m4, "ML-KEM-512", "keygen", 0.01)
    assert k == o < 1.0  # pqm4's factor is a whole-operation ratio
    assert estimate.impl_factor(ChipSpec.parse("core=m0+,mhz=133"), "ML-KEM-512", "keygen", 0.01) == (1.0, 1.0)
    p = predict.price("ML-KEM-512", "keygen", ChipSpec.parse("core=cortex-m0plus,mhz=133"))
    clean_m4 = sum(classes.m4_cycles("ML-KEM-512", "keygen")) / 133e3
    assert p.low_ms > clean_m4
    with pytest.raises(TrustlabError, match="impl = 'asm': use one of portable"):
        ChipSpec.parse("core=m4,mhz=10,impl=asm")
    # the model's assembly speed-ups are pqm4's Cortex-M4 code and a class's paired measurements (Cortex-M3):
    # refused on a core with neither
    with pytest.raises(TrustlabError, match="no sourced assembly speed-up for a host-x86"):
        ChipSpec.parse("core=host-x86,mhz=3000,impl=optimized")
    with pytest.raises(TrustlabError, match="no sourced assembly speed-up for a cortex-m0plus"):
        ChipSpec.parse("core=m0+,mhz=133,impl=mixed")
    with pytest.raises(TrustlabError, match="no sourced assembly speed-up for a riscv32 .*use impl=unknown"):
        ChipSpec.parse("core=rv32,mhz=100,impl=optimized")
    with pytest.raises(TrustlabError, match="build = assembly .* contradicts impl = portable"):
        ChipSpec.parse("core=m4,mhz=100,build=assembly,impl=portable")


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
    ("core=cortex-m9,mhz=1", "--chip: unknown core class or core 'cortex-m9'"),
    ("core=m0+", "--chip: mhz is required"),
    ("mhz=3", "--chip: core is required"),
    ("core=foo", "--chip: unknown core class or core 'foo'"),  # the misspelt core first, not 'mhz is required'
    ("core=m0+,mhz=-3", "mhz = '-3' must be a positive"),
    ("core=m0+,mhz=abc", "mhz = 'abc' is not a number"),
    ("core=m0+,mhz=100-10", "low above high"),
    ("core=m0+,mhz=10,bus=usb", "bus = 'usb'"),
    ("core=m0+,mhz=10,bus=spi", "needs its clock"),
    ("core=m0+,mhz=10,foo=1", "unknown key 'foo'"),
    ("core=m0+,mhz=10,certified=maybe", "not yes/no"),
    ("core=m0+,mhz=10,mhz=20", "mhz given twice"),
    ("core=m0+,mhz=10,build=O7", "build = 'O7': use one of speed, size, debug"),
    ("/no/such/chip.toml", "neither key=value pairs nor an existing TOML file"),
    ("core=m0+,mhz=10,tpm=yes,bus=i2c:1e-300", "bus clock = 1e-300 is outside"),
    ("core=m0+,mhz=10,name=", "name is empty"),  # was a chip row with a blank label
    ("core=m0+,mhz=-25-100", "mhz = '-25' must be a positive"),  # was "mhz = '' is not a number"
    ("core=m0+,mhz=25--100", "mhz = '-100' must be a positive"),
    ("core=m0+,mhz=10,tpm=yes,bus=spi:1e300", "bus clock = 1e+300 is outside"),
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


@pytest.mark.parametrize("text", ["chip = 5", 'chip = "cortex-m4"', "chip = [1]"])
def test_a_chip_key_that_is_not_a_table(tmp_path, text):
    """'chip = 5' was a TypeError traceback; a string was read letter by letter ("unknown key 'c'")."""
    f = tmp_path / "chip.toml"
    f.write_text(text + "\n")
    with pytest.raises(TrustlabError, match=r"chip = .* must be a table"):
        ChipSpec.parse(str(f))


def test_a_toml_file_whose_name_has_an_equals_sign(tmp_path):
    f = tmp_path / "speed=fast.toml"
    f.write_text('core = "m4"\nmhz = 10\n')
    assert ChipSpec.parse(str(f)).mhz == (10.0, 10.0)  # was "unknown key '.../speed'"
    assert ChipSpec.parse("core=m4,mhz=10,name=x.toml").name == "x.toml"


def test_a_range_may_use_exponents():
    assert ChipSpec.parse("core=m0+,mhz=1e-3-1e2").mhz == (0.001, 100.0)


@pytest.mark.parametrize("line, message", [
    ("mhz = true", "mhz = true is not a number"),
    ("mhz = 10\nohc_ms = false", "ohc_ms = false is not a number"),
    ("mhz = 10\nsha256_kbps = true", "sha256_kbps = true is not a number"),
])
def test_toml_booleans_are_not_numbers(tmp_path, line, message):
    """TOML's true is a Python bool, an int: float(True) took it as a 1 MHz clock."""
    f = tmp_path / "chip.toml"
    f.write_text(f'core = "cortex-m4"\n{line}\n')
    with pytest.raises(TrustlabError, match=message):
        ChipSpec.parse(str(f))


def test_every_row_is_predicted_without_its_own_source():
    for r in validation.loso_rows():
        assert r["source_id"] not in r["class_basis"]  # the class was rebuilt without the row's source


def test_the_measurements_span_enough_sources_and_classes():
    s = validation.summary()["overall"]
    assert s["rows"] >= 10 and s["sources"] >= 4 and s["core_classes"] >= 3


def test_leave_one_source_out_summary_is_reported_as_measured():
    """Issue 27's goals, as they stand with every published row found so far (the summary reports them; nothing
    is tuned to meet them). Every row within 2x does not hold; the known misses:
    - the three x86 sources disagree by up to 4x in core cycles after their timers are corrected (mlkem-native's
      C with -march=native on a Sapphire Rapids c7i, rdtsc at 2.4 GHz; itzmeanjan's C++ -march=native on an
      i7-1260P, libPFM core cycles; Xu's PQClean/wolfCrypt C at -O2 on a Ryzen 7 1700X (Zen 1), rdtsc): the
      fastest and the slowest, left out, are priced from the others and miss: the named-core factors (Zen 1 vs
      Golden Cove, from SPECint2006 per GHz and the vendors' IPC claims, data/microarch.toml) explain a part, and
      Xu's -O2 a little more (builds.toml 'o2', our own measurement); -march=native was measured and is no
      faster (no factor). mlkem-native's C is 1.6-2x faster than the reference C at the same flags on the
      same core: a code-base difference the model names since (pqc_model.lineage, data/lineage.toml: our own
      same-core measurement per counted unit, x86 for application classes, the Cortex-M4 cycle model for
      microcontrollers, rule fixed before validation). The c7i went from +126% (0/6 within 2x) to +68% (6/6, its
      ML-KEM-512 keygen at x2.00, at the edge; 4/6 inside): the factor is x0.43 on the other units but ~x1 on
      Keccak, and the x86 class, fitted on rows without a hashing share, keeps the Cortex-M4's Keccak share of the
      time, so the whole-operation speed-up (x0.50-x0.64 measured) is only partly applied. Brought to the
      reference lineage, the c7i no longer widens the pooled application-core spread, so Xu's Zen 1 rows (-42%)
      are outside their narrower intervals. Xu's code was read since (the thesis's wolfSSL fork): its ML-KEM is
      PQClean clean with PQClean's Keccak (reference lineage), its ML-DSA wolfCrypt's own C, whose factor is our
      same-core measurement (data/lineage.toml 'wolfcrypt': x0.54-x0.82 of the reference C's time on x86, whole
      operations). Put on the reference basis, Xu's ML-DSA rows lower the x86 class's work per clock: the c7i moves
      to +80% (ML-KEM-512 keygen x2.14, ML-KEM-768 keygen x2.00) and Xu's own ML-DSA rows, priced faster, to
      -31% to -69% (the three signing rows, medians of 5 runs of a rejection-sampled operation, beyond 2x up to
      x3.25; sign / verify is 3.8 in Xu's ML-DSA-44 and -65 data, 2.8 in the same code on our Zen 4). The other
      wolfCrypt sources, none used in the measurement, move towards their figures: the ZCU102 from +54% to -8%, the
      PolarFire U54 from +59% to +17%, the STM32H7 from +38% to +12%. With unknown ML-DSA now spanning
      wolfCrypt's range, rows of unknown lineage of both families left the between-source spread: fewer
      sources, wider intervals (median width x3.8 -> x8.1 high/low, coverage 0.90 -> 0.96 of a nominal 0.90;
      errors unchanged by it). They are back since, with their lineage factor's known mean and variance taken out
      of the spread's sum of squares (classes.lineage_doubt, method of moments as in a random-effects
      meta-analysis): counted once, on the full basis: width x3.9, coverage 0.89, errors unchanged.
      The x86 class was fitted on whole-operation rows (no hashing share) with one work per clock for Keccak and
      the rest, so it kept the Cortex-M4's proportion between them: x86 sign / verify came out 2.0-2.3 where the
      reference C measures 2.7-3.6 (our Zen 4; the Dilithium round-3 specification's Skylake table 2.7-3.3). On a
      64-bit core Keccak's 64-bit lanes gain what the NTT's 16/32-bit arithmetic does not: our same-core
      measurement of the reference C puts x86's Keccak work per clock at 2.3-4.0x its other units' proportion
      to the Cortex-M4's (3.35; the Skylake table fitted alike: 3.6), cores.toml keccak_per_arith, and the class
      splits whole-operation rows by it (classes.unit_split). Xu's ML-DSA rows went from -31% to -69% (its
      signing x2.2-x3.25) to a uniform -49% to -67% (signing x2.1-x3.0, key generation and verification now
      x1.96-x2.17): what is left is the source's level (its ML-KEM rows sit at -37% to -42%, Zen 1 at -O2 against
      -march=native code on newer cores), no longer the mix of operations; the c7i at +47% to +70%, all within 2x;
    - the STM32F446 application build (its STM32CubeIDE project has a Debug -O0 and a Release -Os configuration,
      the README does not say which ran) is priced at the mix of the two, below the -O0 run it fits (median -50%,
      one row of two just beyond 2x, both inside their intervals). It and the FHNW STM32F407 -O0 build of the Kyber
      reference run a C Keccak (their keccak field) where the Cortex-M4 calibration (pqm4's clean) links pqm4's
      assembly Keccak: since the Keccak is explicit (pqc_model.keccak_impl, a C/asm ratio from our cycle model,
      fixed before either was predicted again) FHNW is at median -16%, 9/9 inside (was -31%, 0/9) and the F446 at
      -50% (was -62%, 0/2 within 2x). The F446 stays a known miss (its source note): the same run's wolfCrypt C
      rates match wolfSSL's published -Os STM32F437 figures, so nothing published backs the -O0 reading its Kyber
      rows fit, and flash wait states are not the cause (5 wait states behind the ART cost mupq's C Keccak x1.004
      at -O0 and x1.04-x1.05 at -Os in our cycle model; FHNW's -O0 rows at 64 and 168 MHz have equal cycles);
    - sources that do not say which Keccak they ran on a class where asm and C differ are priced at the unknown
      rule (centred on C, the assembly as the fast end): pqm4 PR #401 (mldsa-native in pqm4's harness; median
      +63%, 2 of 3 rows outside, just above their low ends) and wolfSSL PR #7676 (an STM32H7 Cortex-M7) sit above
      their measurements, as they would if they linked an assembly Keccak; nothing says so, so they stay unknown.
      The Cortex-M7 was priced as the M4 class (+67%, one ML-DSA-65 sign row at +126%) until the cortex-m7 class
      (prior: Arm's CoreMark/MHz, 5.01 / 3.42 as the upper end, cores.toml): +38%, all 9 rows within 2x.
    - mldsa-native on zeroRISC Pavona's Ibex with SHAKE on the KMAC engine: its Keccak is priced on the engine
      (1-5% of each prediction), the rest is the riscv32 class, a prior with no counted portable-C RV32 source,
      at the unknown build, so it sits above its measurements (median +59%, all within 2x).
    - hand-written assembly on a core without pqm4's Cortex-M4 assembly (Huang et al. 2023's round-3 Kyber, RV32
      assembly arithmetic and a C Keccak on a SiFive FE310, and its Cortex-M3 code on an Arduino Due; Greconici et
      al.'s Dilithium on a Cortex-M3; wolfBoot's RISC-V assembly on a PolarFire U54) is priced as --chip prices it,
      impl=unknown (chipspec.priced_implementation: portable C at the class's speed there, no sourced assembly
      speed-up; the build flags, Keccak and lineage each states): it was priced with pqm4's Cortex-M4 assembly
      speed-up, which --chip refuses there. The FE310 went from -41% (8/9 within 2x, 4/9 inside) to -19% (9/9
      within 2x and inside: what its blind --chip prediction gave, its source note); the Cortex-M3 sources, faster
      than the class's C by their assembly, from +12% / +35% to +39% / +62%, all within 2x, 3/9 and 1/3 of their
      rows inside (the rest above); wolfBoot's U54 from +29% to +59%, 18/18 inside. The Cortex-M3 then got its own
      sourced assembly speed-up (data/asm_pairs.toml: mupq/pqm3's clean and m3 code on one STM32F207, the non-Keccak
      work x1.84-x2.52 for ML-KEM, x1.39-x2.04 for ML-DSA; pqc_model.asm_speedup), so its assembly sources are
      priced as stated, impl=optimized, by --chip and validate alike: Huang et al.'s Due from +39% to +8% (9/9
      inside), Greconici et al.'s Dilithium3 on the Due from +62% to +38% (1/3 inside: keygen and verify 4-6% above
      their intervals' low end; pqm3's own m3 Dilithium3 runs 1.10-1.30x slower on its F207, with flash wait states,
      than the same code on the Due, a board difference the M3 class, fitted on the F207 alone, does not know).
      But pqm3's m3 code is Greconici et al.'s own (asm_pairs.toml also_excludes): leaving that source out takes
      the pairs with it, so it is priced as unknown on the M3 again (+62%, within 2x).
    The between-source spread takes each source's code-base doubt out of its sum of squares (classes.lineage_doubt):
    libcrux's Rust on the STM32L4R5 of unknown lineage, which alone set the microcontroller spread with one degree
    of freedom when a Cortex-M33 source was left out (its intervals x20-x22 high/low, the lineage's doubt inside the
    spread), no longer does so (x4.2-x4.4; since each source's known mean is shifted out first, its remainder is
    below its known part and the group pools all groups: x3.3-x3.4); the FHNW -O0 rows stay at their intervals' 95%
    end.
    The unstated builds are the base rate of the builds the sources state (builds.toml [builds.unknown], recounted
    by test_build_prior.py; centre x1.18 Keccak / x1.22 other); with the equal mix of a benchmark, a size and a
    debug build they were before (centre x1.59 / x1.68) the ZCU102's and Pavona's rows passed 2x: no longer.
    The a-class names its cores (data/microarch.toml: per-clock factors against the Cortex-A72 from SPECint,
    Dhrystone and Geekbench, from 1 to the published ratio): every a-class row is within 2x since (Kyber's
    reference C on an Apple M1 was at +128% when the class held one work per clock for the in-order Cortex-A53
    to the 8-wide M1)."""
    s = validation.summary()["overall"]
    counted = [r for r in validation.loso_rows() if r["counted"]]
    misses = [r for r in counted if max(r["predicted"] / r["reference"], r["reference"] / r["predicted"]) > 2]
    assert s["within_2x"] == s["rows"] - len(misses)
    assert {r["source_id"] for r in misses} <= {"mlkem-native-c7i", "xu2025-x86", "wolfssl-examples-f446",
                                                "huang2023-fe310"}
    # the c7i within 2x since the x86 class splits whole operations by its measured Keccak / other proportion
    c7i = [r for r in counted if r["source_id"] == "mlkem-native-c7i"]
    assert all(max(r["predicted"] / r["reference"], r["reference"] / r["predicted"]) <= 2.0 for r in c7i)
    # Xu's x86 misses beyond 2x are ML-DSA rows (its level: its ML-KEM rows are within 2x), none beyond x3.1
    xu = [r for r in misses if r["source_id"] == "xu2025-x86"]
    assert all(r["algorithm"].startswith("ML-DSA") and r["reference"] / r["predicted"] <= 3.1 for r in xu)
    # the FHNW -O0 build's encapsulations sit at the interval's 95% end: covered or not was the Monte-Carlo draw's
    # noise there (it flipped when the draw seed stopped depending on the chip's label); with the spread's
    # unknown-lineage ML-KEM rows left out (narrower microcontroller spread) ML-KEM-512's is 7% beyond it
    edge = {"fhnw-kyber-f407-O0"}
    uncovered = {r["source_id"] for r in counted if not r["covered"]}
    assert uncovered <= {"mlkem-native-c7i", "xu2025-x86", "pqm4-pr401-mldsa-native-l4r5", "huang2023-fe310",
                         "greconici2021-m3", "huang2023-due-m3", "huang2023-vexriscv",
                         "vile13-esp32s3-mlkem-native"} | edge
    # Vile13's ESP32-S3 (mlkem-native v2.0.0 portable C, -Og, medians of 50 calls in core cycles at a set 240 MHz),
    # the first counted Xtensa source, priced from the xtensa prior alone: 0.64-0.76 of the prediction, its two key
    # generations below the interval's low end; within 2x, a known miss of the prior, no factor moved
    esp = [r for r in counted if r["source_id"] == "vile13-esp32s3-mlkem-native"]
    assert esp and all(0.6 <= r["reference"] / r["predicted"] <= 0.8 for r in esp)
    # Huang et al.'s VexRiscv (RV32IM, -O3): 1.5-2.0x slower than predicted, above the riscv32 prior's slow end
    # (no counted portable-C RV32 source sets the class); within 2x, a known miss of the prior, no factor moved
    vex = [r for r in counted if r["source_id"] == "huang2023-vexriscv"]
    assert vex and all(1.3 <= r["reference"] / r["predicted"] <= 2.0 for r in vex)
    fhnw = [r for r in counted if r["source_id"] == "fhnw-kyber-f407-O0"]
    # its C Keccak, priced as C (0/9 covered when the model had no Keccak kind): all 9 within 8% of the interval
    assert all(0.92 * r["low"] <= r["reference"] <= 1.08 * r["high"] for r in fhnw)
    assert sum(r["covered"] for r in fhnw) >= len(fhnw) - 2
    assert s["coverage"] >= 0.8
    assert s["coverage"] == sum(r["covered"] for r in counted) / len(counted)


def test_published_sources_cover_these_core_classes():
    """The portable-C RISC-V 32 rows found (liboqs on an ESP32-C3) are flagged, not counted (see their note); the
    counted RISC-V 32 rows are Pavona's (Keccak on its KMAC engine, the rest on the Ibex) and Huang et al.'s on a SiFive
    FE310 (RV32 assembly arithmetic, C Keccak); of the Xtensa rows, Vile13's ESP32-S3 counts, the other ESP32-S3 and
    the ESP32 are shown, not counted (see their notes); pqm4's clean figures
    (the M4 basis) are calibration, other M4 sources count."""
    measured = {r["core"] for r in validation.loso_rows() if r["counted"]}
    assert {"cortex-m0plus", "cortex-m3", "cortex-m33", "a-class", "riscv32", "riscv64", "host-x86",
            "xtensa"} <= measured


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


def test_a_security_controller_core_is_priced_like_a_tpm_profile():
    """--chip core=sc300 / secure-mcu: protection and key wrapping are on unless the chip says otherwise."""
    sc300, m3 = ChipSpec.parse("core=sc300,mhz=50"), ChipSpec.parse("core=m3,mhz=50")
    assert sc300.certified and sc300.tpm and not m3.certified and not m3.tpm
    assert not ChipSpec.parse("core=sc300,mhz=50,certified=no").certified
    assert predict.price("ML-KEM-768", "decapsulate", sc300).mean_ms > predict.price(
        "ML-KEM-768", "decapsulate", m3).mean_ms
    assert "wrapping" in predict.price("ML-DSA-65", "create", ChipSpec.parse("core=secure-mcu,mhz=25-100")).provenance


def test_validate_lists_every_assumption_with_its_source():
    """The closing note's list comes from the model: every build, timer, class, protection, bus entry has a
    range and a source, in validate's text and its --json."""
    from trustlab.devices.tpm2.pqc_model import assumptions
    from trustlab.validation import pqc_model

    listing = assumptions.listing()
    names = {e["name"] for e in listing}
    assert {f"build: {k}" for k in builds.kinds()} <= names
    assert {"between-source spread (microcontroller cores)", "between-source spread (application cores)"} <= names
    assert {f"core class {c}" for c in classes.names()} <= names
    assert all(e["range"] and e["source"] for e in listing)
    assert "Embench-IoT" in pqc_model.loso_text() and "Intel ARK" in pqc_model.loso_text()
    rc, out, _ = run("validate", "--json")
    assert rc == 0 and json.loads(out)["pqc_assumptions"] == listing


def test_class_rows_are_brought_to_the_benchmark_build_basis():
    """A -Os row did more work per clock than it shows (x the -Os centre); an rdtsc row counted fewer ticks
    than core cycles (x the TSC centre); assembly is not rescaled by flags."""
    row = {"unit": "cycles", "algorithm": "ML-KEM-768", "operation": "keygen"}
    m4, a = M4_C, keccak_impl.asm_speedup("cortex-m4").mid  # a C Keccak: x a to the C basis, besides the build
    size, tsc = builds.build("size").mid, builds.timer("tsc").mid
    assert classes.basis_scales(m4 | {"build": "-Os"}, row) == pytest.approx((size * a, size))
    assert classes.basis_scales(m4 | {"build": "-O3", "timer": "tsc"}, row) == pytest.approx((tsc * a, tsc))
    assert classes.basis_scales(M4_ASM | {"build": "-O0", "implementation": "optimized"}, row) == (1.0, 1.0)
    assert classes.basis_scales(M4_ASM | {"build": "-Os"}, row) == pytest.approx((1.0, size))  # flags: not asm
    uk, ua = (f.mid for f in builds.units("unknown"))
    assert classes.basis_scales(m4, row | {"unit": "ms"}) == pytest.approx((uk * a, ua))


def test_a_debug_build_scales_keccak_and_the_other_units_apart():
    """-O0 slows Keccak and the arithmetic by its two measured factors: a row without a hashing share takes their
    mix weighted by its Cortex-M4 work, a row with one is brought to the basis unit by unit."""
    keccak, other = classes.m4_cycles("ML-KEM-768", "keygen")
    fk, fo = (f.mid for f in builds.units("debug"))
    assert fk != fo and builds.per_unit("debug") and builds.per_unit("unknown") and not builds.per_unit("size")
    assert builds.per_unit("og") and builds.per_unit("o2") and builds.build("o2").hi > builds.build("speed").hi
    row = {"unit": "cycles", "algorithm": "ML-KEM-768", "operation": "keygen", "value": keccak + other}
    a = keccak_impl.asm_speedup("cortex-m4").mid
    assert classes.basis_scales(M4_C | {"build": "-O0"}, row) == pytest.approx((fk * a, fo))
    assert classes.basis_scale(M4_C | {"build": "-O0"}, row) == pytest.approx(
        (keccak * fk * a + other * fo) / (keccak + other))
    shared = row | {"hash_share": keccak / (keccak + other)}
    assert classes.row_ratios(shared, (fk, fo)) == pytest.approx((fk, fo))
    assert "Keccak" in builds.text("debug") and "other units" in builds.text("debug")
    with pytest.raises(TrustlabError, match="unknown counted unit"):
        builds.build("debug", "ntt")


def test_an_unknown_build_widens_a_validation_interval_against_a_known_one():
    rows = {r["source_id"]: r for r in validation.loso_rows()}
    doc = classes.measurements()
    kinds = {s["id"]: builds.build_kind(s.get("build")) for s in doc["sources"]}
    known = [r for r in validation.loso_rows() if kinds[r["source_id"]] == "speed" and r["core"] != "host-x86"]
    unknown = [r for r in validation.loso_rows() if kinds[r["source_id"]] == "unknown"]
    assert rows and known and unknown
    width = lambda rs: statistics.median(r["high"] / r["low"] for r in rs)  # noqa: E731
    assert width(unknown) > width(known)


def test_calibrated_price_is_the_published_mean_with_the_run_spread():
    """A calibrated operation's central value is the published mean itself (the exact expectation, not an
    average of draws: 400 draws of ML-DSA's skewed runs missed it by ~4%); low/high are the runs' spread."""
    from trustlab.devices.tpm2.pqc_model import silicon

    for row in silicon.rows("sealsq-qvault-pqc-tpm-wolftpm"):
        p = predict.price(row.algorithm, row.call, "sealsq-qvault-pqc-tpm-wolftpm")
        assert p.calibrated and p.median_ms == pytest.approx(row.mean_ms, rel=1e-9)
        assert p.low_ms <= p.median_ms <= p.high_ms


def test_counted_work_is_looked_up_in_one_place():
    """One lookup of an operation's counted Cortex-M4 cycles (the mean, or counted runs by index), which the placed
    compute time divides by the speed; the unused copy (estimate.compute_ms) is gone."""
    import numpy as np

    assert not hasattr(estimate, "compute_ms")
    s = estimate.Speed(keccak_mhz=50.0, arith_mhz=80.0)
    spec = ChipSpec.parse("core=m33,mhz=100")
    keccak, other = estimate.counted_cycles("ML-KEM-768", "encapsulate")
    assert (keccak, other) == classes.m4_cycles("ML-KEM-768", "encapsulate")
    assert estimate.placed_compute_ms(spec, "ML-KEM-768", "encapsulate", s, None, (1.0, 1.0), {}) == \
        pytest.approx((keccak / 50.0 + other / 80.0) / 1000.0)
    runs = np.arange(len(classes.run_cycles("ML-DSA-65", "sign")))
    k, o = estimate.counted_cycles("ML-DSA-65", "sign", runs)
    assert k.shape == o.shape == runs.shape
    ms = estimate.placed_compute_ms(spec, "ML-DSA-65", "sign", s, runs, (0.5, 2.0), {})
    assert ms == pytest.approx((k / 50.0 * 0.5 + o / 80.0 * 2.0) / 1000.0)


def test_an_espressif_xtensa_chip_is_its_own_class_fitted_on_its_one_counted_source():
    """ESP32 / ESP32-S2 / ESP32-S3 name the Xtensa LX6 / LX7 class (cores.toml), with a CoreMark/MHz prior. Two ESP32
    sources are shown, not counted (their published code contradicts their READMEs); the one counted source,
    Vile13's ESP32-S3 (mlkem-native's C, -Og, a set 240 MHz, medians of 50 calls), fits the class, and left out it
    is priced from the prior alone; the class has no sourced assembly speed-up, so hand-written assembly is
    refused."""
    for name in ("esp32", "ESP32-S3", "esp32s2", "lx6", "lx7", "xtensa"):
        assert classes.resolve(name) == "xtensa"
    for name in ("esp32-c3", "ESP32C6", "esp32-h2"):  # Espressif's RISC-V chips are not Xtensa
        assert classes.resolve(name) == "riscv32"
    assert classes.group("xtensa") == "microcontroller" and not classes.runs_pqm4_assembly("xtensa")
    fitted = classes.fit("xtensa")
    assert fitted.measured and fitted.sources == 1 and "vile13-esp32s3-mlkem-native" in fitted.basis
    prior = classes.fit("xtensa", exclude=frozenset({"vile13-esp32s3-mlkem-native"}))
    assert not prior.measured and (prior.arith.lo, prior.arith.hi) == (0.43, 0.85)
    shown = {r["source_id"] for r in validation.loso_rows() if r["core"] == "xtensa"}
    assert shown == {"aethyr-esp32s3-mlkem768", "upqc-lab-esp32-mlkem768", "vile13-esp32s3-mlkem-native"}
    assert {r["source_id"] for r in validation.loso_rows() if r["core"] == "xtensa" and r["counted"]} == {
        "vile13-esp32s3-mlkem-native"}
    with pytest.raises(TrustlabError, match="no sourced assembly speed-up for a xtensa"):
        ChipSpec.parse("core=esp32,mhz=240,impl=optimized")
    p = predict.price("ML-KEM-768", "keygen", ChipSpec.parse("core=esp32-s3,mhz=240,build=og,lineage=mlkem-native"))
    assert 0 < p.low_ms <= p.median_ms <= p.high_ms and "xtensa" in p.provenance.lower()

"""A hardware Keccak engine in --chip: parsing, pricing that moves only the Keccak units, the interval.

The engine (OpenTitan's KMAC on zeroRISC Pavona, or any engine given by its cycles per permutation) takes
the counted Keccak-f[1600] permutations and sponge calls off the core; the NTT and the other counted units
stay at the core's speed. These tests check that separation against the model's own software pricing.
"""

import json

import pytest

from tests.pqc_model.cli_run import run
from trustlab.devices.tpm2.pqc_model import assumptions, calibration, counts, estimate, keccak_engine, predict
from trustlab.devices.tpm2.pqc_model.chipspec import ChipSpec
from trustlab.errors import TrustlabError

BASE = "core=riscv32,mhz=100,build=speed"


def test_named_engine_parses_from_key_value_and_toml(tmp_path):
    kv = ChipSpec.parse(f"{BASE},keccak_engine=kmac")
    path = tmp_path / "chip.toml"
    path.write_text('[chip]\ncore = "riscv32"\nmhz = 100\nbuild = "speed"\nkeccak_engine = "kmac"\n')
    assert ChipSpec.parse(str(path)).keccak_engine == kv.keccak_engine == keccak_engine.named("kmac")
    assert ChipSpec.parse(BASE).keccak_engine is None
    assert ChipSpec.parse(f"{BASE},keccak_engine=none").keccak_engine is None


def test_kmac_is_built_from_its_mechanism_and_masking_costs_rounds():
    """Masked KMAC: 24 rounds x 3-4 cycles (OpenTitan docs); unmasked: 24 x 1. The rest is the same interface."""
    masked, plain = keccak_engine.named("kmac"), keccak_engine.named("kmac-unmasked")
    lo, mid, hi = masked.perm_cycles
    assert lo < mid < hi
    assert lo == 34 * 5 + 24 * 3 + 0 and hi == 42 * 30 + 24 * 4 + 21
    assert [m - p for m, p in zip(masked.perm_cycles, plain.perm_cycles)] == pytest.approx(
        [24 * 2, 24 * (12 ** 0.5 - 1), 24 * 3])
    assert masked.call_cycles == plain.call_cycles
    # far below the core's own software Keccak (about 1.1e4 Cortex-M4 cycles per permutation)
    assert hi < calibration.calibrate().keccak_cycles / 5


def test_given_cycles_and_call_cycles(tmp_path):
    e = ChipSpec.parse(f"{BASE},keccak_cycles=400-900,keccak_call_cycles=100").keccak_engine
    assert (e.kind, e.perm_cycles[0], e.perm_cycles[2], e.call_cycles) == ("given", 400.0, 900.0, (100.0, 100.0, 100.0))
    assert ChipSpec.parse(f"{BASE},keccak_cycles=500").keccak_engine.call_cycles == (0.0, 0.0, 0.0)
    path = tmp_path / "chip.toml"
    path.write_text('core = "riscv32"\nmhz = 100\nkeccak_cycles = [400, 900]\n')
    assert ChipSpec.parse(str(path)).keccak_engine.perm_cycles[::2] == (400.0, 900.0)
    named = ChipSpec.parse(f"{BASE},keccak_engine=kmac,keccak_call_cycles=0").keccak_engine
    assert named.perm_cycles == keccak_engine.named("kmac").perm_cycles and named.call_cycles == (0.0, 0.0, 0.0)


@pytest.mark.parametrize("extra, message", [
    ("keccak_engine=sha3x", "keccak_engine = 'sha3x' is not a known Keccak engine: use one of none, kmac"),
    ("keccak_engine=" + "k" * 5000, "(5000 characters)' is not a known Keccak engine"),
    ("keccak_engine=kmac,keccak_cycles=500", "keccak_cycles and keccak_engine = 'kmac' both given"),
    ("keccak_call_cycles=50", "keccak_call_cycles needs a Keccak engine"),
    ("keccak_cycles=-5", "keccak_cycles = '-5' must be a positive finite number"),
    ("keccak_cycles=0", "keccak_cycles = '0' must be a positive finite number"),
    ("keccak_cycles=900-400", "keccak_cycles range 900-400 has low above high"),
    ("keccak_cycles=fast", "keccak_cycles = 'fast' is not a number"),
    ("keccak_cycles=1e9", "keccak_cycles = 1e+09 is outside 1-1e+06 core cycles"),
    ("keccak_cycles=nan", "must be a positive finite number"),
    ("keccak_cycles=500,keccak_call_cycles=-1", "keccak_call_cycles = '-1' must be a non-negative"),
])
def test_bad_engine_input_is_one_clear_error(extra, message):
    with pytest.raises(TrustlabError) as info:
        ChipSpec.parse(f"{BASE},{extra}")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_bad_toml_engine_names_the_file(tmp_path):
    path = tmp_path / "chip.toml"
    path.write_text('core = "riscv32"\nmhz = 100\nkeccak_cycles = true\n')
    with pytest.raises(TrustlabError, match=r"--chip .*chip.toml: keccak_cycles = true is not a number"):
        ChipSpec.parse(str(path))


def _central(spec, algorithm, op):
    return float(estimate.one(spec, algorithm, op, predict.CENTRAL, protection=False))


@pytest.mark.parametrize("algorithm, op", [("ML-DSA-65", "verify"), ("ML-DSA-44", "sign"), ("ML-KEM-768", "keygen")])
def test_pricing_moves_only_the_keccak_units(algorithm, op):
    """Two engine rates differ by exactly permutations x cycles / clock; software Keccak at the core's own
    per-permutation cost, given as an engine rate, is the software price (the other units never move)."""
    clock = 100.0
    a = ChipSpec.parse(f"{BASE},keccak_cycles=300")
    b = ChipSpec.parse(f"{BASE},keccak_cycles=800")
    perms = counts.mean(algorithm, op)["keccak_f1600"]
    assert _central(b, algorithm, op) - _central(a, algorithm, op) == pytest.approx(perms * 500 / (clock * 1000))
    software = ChipSpec.parse(BASE)
    s = estimate.speed(software)
    own = float(calibration.calibrate().keccak_cycles * clock / s.keccak_mhz)  # core cycles per permutation in software
    same = ChipSpec.parse(f"{BASE},keccak_cycles={own!r}")
    assert _central(same, algorithm, op) == pytest.approx(_central(software, algorithm, op), rel=1e-9)
    # the core's part alone: what is left with a (nearly) free engine
    keccak_m4, other_m4 = estimate.classes.m4_cycles(algorithm, op)
    free = ChipSpec.parse(f"{BASE},keccak_cycles=1")
    assert _central(free, algorithm, op) == pytest.approx(other_m4 / s.arith_mhz / 1000 + perms / (clock * 1000))


def test_call_cycles_are_charged_per_counted_sponge_call():
    plain = ChipSpec.parse(f"{BASE},keccak_cycles=500")
    calls = ChipSpec.parse(f"{BASE},keccak_cycles=500,keccak_call_cycles=1000")
    n = counts.mean("ML-KEM-768", "keygen")["keccak_calls"]
    assert n == 1 + 9 + 6 + 1  # G, the 3x3 matrix A, 2k PRF samples, H(ek) (FIPS 203 Alg. 13)
    assert _central(calls, "ML-KEM-768", "keygen") - _central(plain, "ML-KEM-768", "keygen") == pytest.approx(
        n * 1000 / (100.0 * 1000))


def test_engine_makes_keccak_heavy_operations_faster_and_its_range_widens_the_interval():
    software = predict.price("ML-DSA-65", "verify", ChipSpec.parse(BASE), protection=False)
    kmac = predict.price("ML-DSA-65", "verify", ChipSpec.parse(f"{BASE},keccak_engine=kmac"), protection=False)
    assert kmac.median_ms < 0.6 * software.median_ms
    fixed = predict.price("ML-DSA-65", "verify", ChipSpec.parse(f"{BASE},keccak_cycles=1000"), protection=False)
    wide = predict.price("ML-DSA-65", "verify", ChipSpec.parse(f"{BASE},keccak_cycles=200-5000"), protection=False)
    assert wide.median_ms == pytest.approx(fixed.median_ms)  # same centre (sqrt(200 x 5000)), wider ends
    # wider: the engine's Keccak is a few % of the time, so at the low end its range moves the 5% point by about the
    # Monte-Carlo noise (its own stream); the interval's ratio and its high end show it
    assert wide.high_ms / wide.low_ms > fixed.high_ms / fixed.low_ms and wide.high_ms > fixed.high_ms
    assert kmac.low_ms <= kmac.median_ms <= kmac.high_ms
    assert "Keccak on an engine (kmac" in kmac.provenance and "theory_of_operation.md" in kmac.provenance


def test_a_chip_without_an_engine_prices_as_before():
    """The engine's draws come from their own stream: adding the engine input moved no other chip's interval."""
    spec = ChipSpec.parse(BASE)
    p = predict.price("ML-DSA-44", "sign", spec)
    assert "Keccak on an engine" not in p.provenance
    assert p == predict.price("ML-DSA-44", "sign", spec)


def test_engine_in_json_rows_chips_and_assumptions():
    rc, out, err = run("run", "pqc-tpm", "--draws", "10", "--json", "--algorithms", "ML-KEM-768",
                       "--chip", f"{BASE},keccak_engine=kmac,name=pavona-like", "--chip", f"{BASE},name=soft")
    assert rc == 0, err
    doc = json.loads(out)
    rows = {r["chip"]: r for r in doc["rows"] if r["operation"] == "encapsulate"}
    assert rows["pavona-like"]["keccak_engine"] == "kmac" and rows["soft"]["keccak_engine"] == "software"
    assert rows["pavona-like"]["median_ms"] < rows["soft"]["median_ms"]
    facts = {f["chip"]: f for f in doc["chips"]}
    assert facts["soft"]["keccak_engine"] is None
    assert facts["pavona-like"]["keccak_engine"]["cycles_per_permutation"] == list(
        keccak_engine.named("kmac").perm_cycles)
    names = [e["name"] for e in assumptions.listing()]
    assert "Keccak engine: kmac" in names and "Keccak engine: kmac-unmasked" in names


def test_help_names_the_engine_keys():
    rc, out, _ = run("run", "pqc-tpm", "--help")
    assert rc == 0
    flat = "".join(out.split())  # argparse wraps at spaces and hyphens
    assert "keccak_engine=none|kmac|kmac-unmasked" in flat and "keccak_cycles" in flat

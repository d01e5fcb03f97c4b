"""Named cores of a core class (data/microarch.toml): published per-clock factors, how the class is fitted on its
reference core's scale, and how a chip naming its core is priced."""

from __future__ import annotations

import math
import tomllib
from importlib import resources

import pytest

from trustlab.devices.tpm2.pqc_model import assumptions, chips, classes, predict
from trustlab.devices.tpm2.pqc_model.chipspec import ChipSpec
from trustlab.errors import TrustlabError


def _data() -> dict:
    text = (resources.files("trustlab.devices.tpm2.pqc_model") / "data" / "microarch.toml").read_text("utf-8")
    return tomllib.loads(text)


def test_every_named_core_has_a_class_a_sourced_range_and_the_reference_is_one():
    doc = _data()
    for name, e in doc["cores"].items():
        assert e["class"] in classes.names(), name
        lo, hi = e["factor"]
        assert 0 < lo <= hi, name
        assert len(e["source"]) > 20, name
    for cls, ref in doc["reference"].items():
        f = classes.core_factor(ref)
        assert (f.lo, f.mid, f.hi) == (1.0, 1.0, 1.0) and f.cls == cls


def test_no_name_denotes_both_a_class_and_a_core():
    class_names = {n for c, e in classes._cores().items() for n in [c, *e.get("aliases", [])]}
    core_names = [n for c, e in _data()["cores"].items() for n in [c, *e.get("aliases", [])]]
    assert not class_names & set(core_names) and len(core_names) == len(set(core_names))


def test_a_named_core_spans_one_to_its_published_ratio():
    """None to all of the published per-clock gap carries over; the centre is the geometric middle."""
    f = classes.core_factor("neoverse-n1")
    assert f.name == "cortex-a76" and (f.lo, f.hi) == (1.0, 1.7)
    assert f.mid == pytest.approx(math.sqrt(math.sqrt(1.6 * 1.7)))
    slow = classes.core_factor("a53")
    assert slow.hi == 1.0 and slow.lo == pytest.approx(0.475) and slow.mid < 1.0
    assert "published x0.475-x0.487" in slow.source


@pytest.mark.parametrize("given, core", [("cortex-a72", "cortex-a72"), ("A72", "cortex-a72"), ("apple-m1", "apple-m1"),
                                         ("firestorm", "apple-m1"), ("n1", "cortex-a76"), ("a78ae", "cortex-a78"),
                                         ("a-class", "a-class"), ("aarch64", "a-class"), ("m0+", "cortex-m0plus"),
                                         ("zen", "zen1"), ("sapphire-rapids", "golden-cove"), ("x86", "host-x86")])
def test_chip_core_names_a_core_or_a_class(given, core):
    spec = ChipSpec.parse(f"core={given},mhz=1000")
    assert spec.core == core
    assert classes.resolve(spec.core) == classes.resolve(given)


def test_an_unknown_core_is_one_line_naming_the_known_cores():
    with pytest.raises(TrustlabError) as exc:
        ChipSpec.parse("core=cortex-a99,mhz=1000")
    text = str(exc.value)
    assert "\n" not in text and "'cortex-a99'" in text
    for known in ("a-class", "cortex-a53", "cortex-a72", "cortex-a78", "apple-m1", "neoverse-n2"):
        assert known in text


def test_wider_cores_are_priced_faster_at_the_same_clock():
    times = {core: predict.price("ML-KEM-768", "keygen", ChipSpec.parse(f"core={core},mhz=1000"),
                                 protection=False).mean_ms
             for core in ("cortex-a53", "cortex-a72", "neoverse-n1", "cortex-a78", "apple-m1")}
    order = ["cortex-a53", "cortex-a72", "neoverse-n1", "cortex-a78", "apple-m1"]
    assert [times[c] for c in order] == sorted(times.values(), reverse=True)


def test_a_chip_naming_only_the_class_gets_the_reference_centre_and_every_cores_range():
    generic, ref = classes.fit("a-class"), classes.fit("cortex-a72")
    assert generic.keccak.mid == pytest.approx(ref.keccak.mid)
    f = classes.core_factor("a-class")
    members = [classes.core_factor(c) for c in classes.microarch_names("a-class")]
    published = [_data()["cores"][c]["factor"] for c in classes.microarch_names("a-class")]
    assert f.lo == min(p[0] for p in published) and f.hi == max(p[1] for p in published)
    assert f.lo <= min(m.lo for m in members) and f.hi >= max(m.hi for m in members)
    assert generic.keccak.hi / generic.keccak.lo > ref.keccak.hi / ref.keccak.lo


def test_the_class_is_fitted_on_the_reference_scale():
    """A source on a named core is divided by its core's factor: left alone, the M1 source's class centre is its
    own work per clock / the M1 factor's centre, and a chip naming the M1 gets that work back."""
    doc = classes.measurements()
    a_class = [s["id"] for s in doc["sources"] if s["core"] == "a-class" and s["counted"]
               and s["implementation"] == classes.PORTABLE]
    keep = "mlkem-c-aarch64-m1"
    exclude = frozenset(a_class) - {keep}
    only = classes.fit_class("a-class", exclude)
    raw = [r for r in doc["rows"] if r["source"] == keep]
    source = next(s for s in doc["sources"] if s["id"] == keep)
    logs = [math.log(classes.row_ratios(r)[0] * classes.basis_scale(source, r)) for r in raw]
    own = math.exp(sum(logs) / len(logs))
    assert only.keccak.mid == pytest.approx(own / classes.core_factor("apple-m1").mid)
    assert classes.fit("apple-m1", exclude).keccak.mid == pytest.approx(own)
    assert "reference core cortex-a72" in only.basis


def test_a_source_naming_a_core_of_another_class_is_refused():
    with pytest.raises(TrustlabError, match="microarch 'cortex-a72' is a a-class core, not cortex-m4"):
        classes.source_factor({"id": "x", "core": "cortex-m4", "microarch": "cortex-a72"})


def test_jetson_orin_fTPM_is_priced_as_a_cortex_a78():
    chip = chips.chip_for("nvidia-jetson-orin-op-tee-ftpm-wolftpm")
    assert chip.core == "cortex-a78ae"
    assert classes.core_factor(chip.core).name == "cortex-a78"


def test_every_named_core_is_an_assumption_with_its_source():
    listed = {e["name"]: e for e in assumptions.listing()}
    for core in classes.microarch_names():
        entry = next(e for n, e in listed.items() if n.startswith(f"named core {core} "))
        assert entry["source"] == classes.core_factor(core).source


def test_the_x86_sources_name_their_cores_and_a_golden_cove_does_more_per_clock_than_a_zen_1():
    sources = {s["id"]: s for s in classes.measurements()["sources"]}
    assert sources["xu2025-x86"]["microarch"] == "zen1"
    assert sources["mlkem-native-c7i"]["microarch"] == sources["itzmeanjan-mlkem-i7-1260p"]["microarch"] == "golden-cove"
    assert classes.core_factor("zen1").mid < 1.0 < classes.core_factor("golden-cove").mid
    assert classes.fit("golden-cove").arith.mid > classes.fit("host-x86").arith.mid > classes.fit("zen1").arith.mid


def test_the_cortex_x_generations_chain_arms_iso_clock_claims_from_the_x1():
    """X2 = X1 x 1.16, X3 = X2 x 1.11 (Arm, same process and clock), X4 = X3 x 1.14-1.15 with the 3.4 / 3.25 GHz
    clock ratio taken out: each link's published ratio, rounded outward to the stored two decimals."""
    doc = _data()["cores"]
    links = [("cortex-x1", "cortex-x2", 1.16, 1.16), ("cortex-x2", "cortex-x3", 1.11, 1.11),
             ("cortex-x3", "cortex-x4", 1.14 * 3.25 / 3.4, 1.15 * 3.25 / 3.4)]
    for older, newer, lo, hi in links:
        (olo, ohi), (nlo, nhi) = doc[older]["factor"], doc[newer]["factor"]
        assert nlo == pytest.approx(olo * lo, abs=0.01) and nhi == pytest.approx(ohi * hi, abs=0.01), newer
    for core, alias in (("cortex-x2", "x2"), ("cortex-x3", "x3"), ("cortex-x4", "x4")):
        assert ChipSpec.parse(f"core={alias},mhz=3000").core == core
        assert classes.core_factor(alias).cls == "a-class"


def test_new_x_cores_sit_between_the_x1_and_the_m1_and_leave_the_unnamed_a_class_range_alone():
    """A chip naming only the a-class is priced over the envelope of the named cores: the X2-X4 factors lie inside
    it (A35 0.377 to Apple M1 4.08), so adding them changes no unnamed a-class price."""
    mids = [classes.core_factor(c).mid for c in ("cortex-x1", "cortex-x2", "cortex-x3", "cortex-x4", "apple-m1")]
    assert mids == sorted(mids)
    generic = classes.core_factor("a-class")
    assert (generic.lo, generic.hi) == pytest.approx((0.377, 4.08))
    times = [predict.price("ML-KEM-768", "keygen", ChipSpec.parse(f"core={c},mhz=3000"), protection=False).mean_ms
             for c in ("x1", "x2", "x3", "x4")]
    assert times == sorted(times, reverse=True)

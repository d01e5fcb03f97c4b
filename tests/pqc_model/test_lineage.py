"""The implementation-lineage factor (pqc_model.lineage): every source states its code base, the factor is the
measured one where measured and unknown elsewhere, and a chip's lineage moves its price the way the data says."""

import re

import pytest

from trustlab.devices.tpm2.pqc_model import classes, lineage, predict, validation
from trustlab.devices.tpm2.pqc_model.chipspec import ChipSpec
from trustlab.errors import TrustlabError


def test_every_measurement_source_states_its_lineage_and_where_it_was_read():
    doc = classes.measurements()
    assert all(lineage.of_source(s, fam) in lineage.kinds() and s.get("lineage_evidence")
               for s in doc["sources"] for fam in lineage.FAMILIES)
    kinds = {s["id"]: s["lineage"] for s in doc["sources"]}
    assert kinds["mlkem-native-c7i"] == kinds["mlkem-native-bpif3"] == "mlkem-native"
    assert kinds["pqm3-f207"] == kinds["fhnw-kyber-f407-O0"] == kinds["mlkem-c-aarch64-m1"] == "reference"
    # Xu's thesis: on the RP2350 PQClean clean ML-KEM (with PQClean's Keccak) beside wolfCrypt's own ML-DSA; the
    # x86 server build selects PQClean clean ML-DSA behind wc_dilithium_* (PQCLEAN_DILITHIUM), which our same-core
    # measurement (lineage.toml, harness kept outside the repository) confirms: reference lineage for both families
    assert kinds["xu2025-rp2350"] == {"ML-KEM": "reference", "ML-DSA": "wolfcrypt"}
    assert kinds["xu2025-x86"] == "reference"


def test_a_source_without_a_lineage_is_a_clear_error():
    with pytest.raises(TrustlabError, match="lineage is missing"):
        lineage.of_source({"id": "x"}, "ML-KEM")


@pytest.mark.parametrize("table", [{"ML-KEM": "reference"}, {"ML-KEM": "reference", "ML-DSA": "wolfcrypt", "X": "y"}])
def test_a_lineage_table_names_both_families(table):
    with pytest.raises(TrustlabError, match="lineage table needs exactly the families ML-KEM, ML-DSA"):
        lineage.of_source({"id": "x", "lineage": table}, "ML-DSA")


def test_a_lineage_table_naming_a_family_twice_is_refused():
    """ML-KEM and ml-kem are two TOML keys but one family: two answers for it, not the last one silently."""
    table = {"ML-KEM": "mlkem-native", "ml-kem": "reference", "ML-DSA": "reference"}
    with pytest.raises(TrustlabError, match="names ML-KEM more than once"):
        lineage.statement(table, "--chip chip.toml")


def test_a_per_family_source_is_priced_per_family():
    row = {"source": "xu2025-rp2350", "unit": "cycles"}
    source = next(s for s in classes.measurements()["sources"] if s["id"] == "xu2025-rp2350")
    assert validation.spec_of(source, row | {"algorithm": "ML-KEM-768"}).lineage == "reference"
    assert validation.spec_of(source, row | {"algorithm": "ML-DSA-65"}).lineage == "wolfcrypt"


@pytest.mark.parametrize("family", lineage.FAMILIES)
@pytest.mark.parametrize("core", ["cortex-m4", "host-x86"])
def test_wolfcrypt_is_measured_for_both_families_and_faster_on_the_other_units(family, core):
    """Our same-core measurement (data/lineage.toml): wolfCrypt's own C took 0.35-0.72 of the reference C's time
    on the units other than Keccak, on every operation measured."""
    assert lineage.priced_as("wolfcrypt", family) == "wolfcrypt"
    other = lineage.factor("wolfcrypt", family, core, "arith")
    assert other.lo <= other.mid <= other.hi < 1.0
    keccak = lineage.factor("wolfcrypt", family, core, "keccak")
    assert keccak.lo <= keccak.mid <= keccak.hi and keccak.mid < 1.0


def test_measured_lineage_is_faster_on_the_other_units_and_unmeasured_ones_are_unknown():
    for core in ("cortex-m4", "host-x86"):
        ml = lineage.factor("mlkem-native", "ML-KEM", core, "arith")
        assert ml.hi < 1.0  # every measured operation ran faster than the reference C
        wc = lineage.factor("wolfcrypt", "ML-KEM", core, "arith")
        unknown = lineage.factor("unknown", "ML-KEM", core, "arith")
        # the fast end is the fastest measured lineage's centre
        assert (unknown.lo, unknown.mid, unknown.hi) == (pytest.approx(min(ml.mid, wc.mid)), 1.0, 1.0)
    # the x86 speed-up is larger than the Cortex-M4's (the measured mechanism on two cores, per group)
    assert lineage.factor("mlkem-native", "ML-KEM", "host-x86", "arith").mid < \
        lineage.factor("mlkem-native", "ML-KEM", "cortex-m4", "arith").mid
    assert lineage.priced_as("mldsa-native", "ML-DSA") == "unknown"
    assert lineage.priced_as("mlkem-native", "ML-DSA") == "unknown"  # named for the other family
    # ML-DSA's fast end is wolfCrypt's centre (the only faster lineage measured for it)
    wc = lineage.factor("wolfcrypt", "ML-DSA", "cortex-m4", "arith")
    assert lineage.factor("unknown", "ML-DSA", "cortex-m4", "arith").lo == pytest.approx(wc.mid)


def test_a_chips_lineage_moves_its_families_and_not_assembly():
    def ms(extra, alg="ML-KEM-768", op="keygen"):
        return predict.price(alg, op, ChipSpec.parse(f"core=m4,mhz=100,build=speed{extra}"), draws=200).median_ms
    ref, native, unknown = ms(",lineage=reference"), ms(",lineage=mlkem-native"), ms("")
    assert native < 0.9 * ref and unknown == pytest.approx(ref)  # the unknown lineage is centred on the reference
    assert ms(",lineage=mlkem-native", "ML-DSA-65") == pytest.approx(ms(",lineage=reference", "ML-DSA-65"))
    assert ms(",lineage=wolfcrypt", "ML-DSA-65") < 0.9 * ms(",lineage=reference", "ML-DSA-65")
    assert ms(",lineage=wolfcrypt") < 0.9 * ref
    assert ms(",impl=optimized,lineage=mlkem-native") == pytest.approx(ms(",impl=optimized,lineage=reference"))


def test_the_provenance_names_the_lineage():
    p = predict.price("ML-KEM-768", "keygen", ChipSpec.parse("core=x86,mhz=3000,lineage=mlkem-native"), draws=200)
    assert "lineage mlkem-native on an application class" in p.provenance


@pytest.mark.parametrize("text", ["core=m4,mhz=1,lineage=pqclean", "core=m4,mhz=1,lineage="])
def test_a_bad_lineage_is_a_one_line_error(text):
    with pytest.raises(TrustlabError, match=re.escape("lineage = ")):
        ChipSpec.parse(text)


@pytest.mark.parametrize("table, said", [
    ({"ML-KEM": 3}, "needs exactly the families ML-KEM, ML-DSA (got ML-KEM; ML-DSA missing)"),
    ({"ML-KEM": 3, "ML-DSA": "reference"}, "lineage.ML-KEM = "),
    ({"ML-KEM": "reference", "ML-DSA": "pqclean"}, "lineage.ML-DSA = 'pqclean'"),
])
def test_a_bad_lineage_table_names_the_family(table, said):
    """A one-family table is refused whichever family is asked for (it said 'exactly' and accepted one), and a bad
    entry names its family."""
    for family in lineage.FAMILIES:
        with pytest.raises(TrustlabError, match=re.escape(said)):
            lineage.of_source({"id": "x", "lineage": table}, family)


def test_a_chip_toml_states_a_lineage_per_family(tmp_path):
    """A chip whose ML-KEM is reference C and whose ML-DSA is wolfCrypt's (as Xu's thesis builds) says so in its
    TOML file: each family priced as the chip of that one lineage; the comma form says where a table goes."""
    path = tmp_path / "chip.toml"
    path.write_text('core = "m33"\nmhz = 150\nbuild = "speed"\n'
                    'lineage = { ML-KEM = "reference", ml-dsa = "wolfcrypt" }\n')
    both = ChipSpec.parse(str(path))
    assert both.lineage == (("ML-KEM", "reference"), ("ML-DSA", "wolfcrypt"))
    for algorithm, operation, kind in (("ML-KEM-768", "encapsulate", "reference"), ("ML-DSA-65", "sign", "wolfcrypt")):
        one = ChipSpec.parse(f"core=m33,mhz=150,build=speed,lineage={kind}")
        assert predict.price(algorithm, operation, both).as_tuple()[:3] == \
            predict.price(algorithm, operation, one).as_tuple()[:3]
        assert f"lineage {kind}" in predict.price(algorithm, operation, both).provenance
    with pytest.raises(TrustlabError, match=re.escape("in a --chip TOML file, lineage = {ML-KEM")):
        ChipSpec.parse("core=m33,mhz=150,lineage=ML-KEM:reference")

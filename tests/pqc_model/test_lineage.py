"""The implementation-lineage factor (pqc_model.lineage): every source states its code base, the factor is the
measured one where measured and unknown elsewhere, and a chip's lineage moves its price the way the data says."""

import re

import pytest

from trustlab.devices.tpm2.pqc_model import classes, lineage, predict
from trustlab.devices.tpm2.pqc_model.chipspec import ChipSpec
from trustlab.errors import TrustlabError


def test_every_measurement_source_states_its_lineage_and_where_it_was_read():
    doc = classes.measurements()
    assert all(lineage.of_source(s) in lineage.kinds() and s.get("lineage_evidence") for s in doc["sources"])
    kinds = {s["id"]: s["lineage"] for s in doc["sources"]}
    assert kinds["mlkem-native-c7i"] == kinds["mlkem-native-bpif3"] == "mlkem-native"
    assert kinds["pqm3-f207"] == kinds["fhnw-kyber-f407-O0"] == kinds["mlkem-c-aarch64-m1"] == "reference"
    assert kinds["xu2025-x86"] == "wolfcrypt"


def test_a_source_without_a_lineage_is_a_clear_error():
    with pytest.raises(TrustlabError, match="lineage is missing"):
        lineage.of_source({"id": "x"})


def test_measured_lineage_is_faster_on_the_other_units_and_unmeasured_ones_are_unknown():
    for core in ("cortex-m4", "host-x86"):
        ml = lineage.factor("mlkem-native", "ML-KEM", core, "arith")
        assert ml.hi < 1.0  # every measured operation ran faster than the reference C
        unknown = lineage.factor("unknown", "ML-KEM", core, "arith")
        assert (unknown.lo, unknown.mid, unknown.hi) == (pytest.approx(ml.mid), 1.0, 1.0)
    # the x86 speed-up is larger than the Cortex-M4's (the measured mechanism on two cores, per group)
    assert lineage.factor("mlkem-native", "ML-KEM", "host-x86", "arith").mid < \
        lineage.factor("mlkem-native", "ML-KEM", "cortex-m4", "arith").mid
    assert lineage.priced_as("wolfcrypt", "ML-KEM") == lineage.priced_as("mldsa-native", "ML-DSA") == "unknown"
    assert lineage.priced_as("mlkem-native", "ML-DSA") == "unknown"  # named for the other family
    assert lineage.time_factors("unknown", "ML-DSA", "cortex-m4", 0.01) == (1.0, 1.0)  # nothing faster measured


def test_a_chips_lineage_moves_ml_kem_not_ml_dsa_and_not_assembly():
    def ms(extra, alg="ML-KEM-768", op="keygen"):
        return predict.price(alg, op, ChipSpec.parse(f"core=m4,mhz=100,build=speed{extra}"), draws=200).median_ms
    ref, native, unknown = ms(",lineage=reference"), ms(",lineage=mlkem-native"), ms("")
    assert native < 0.9 * ref and unknown == pytest.approx(ref)  # the unknown lineage is centred on the reference
    assert ms(",lineage=mlkem-native", "ML-DSA-65") == pytest.approx(ms(",lineage=reference", "ML-DSA-65"))
    assert ms(",impl=optimized,lineage=mlkem-native") == pytest.approx(ms(",impl=optimized,lineage=reference"))


def test_the_provenance_names_the_lineage():
    p = predict.price("ML-KEM-768", "keygen", ChipSpec.parse("core=x86,mhz=3000,lineage=mlkem-native"), draws=200)
    assert "lineage mlkem-native on an application class" in p.provenance


@pytest.mark.parametrize("text", ["core=m4,mhz=1,lineage=pqclean", "core=m4,mhz=1,lineage="])
def test_a_bad_lineage_is_a_one_line_error(text):
    with pytest.raises(TrustlabError, match=re.escape("lineage = ")):
        ChipSpec.parse(text)

"""A class's assembly speed-up from paired published C / assembly measurements (data/asm_pairs.toml).

The pairs are mupq/pqm3's 'clean' and 'm3' code on one NUCLEO-F207ZG (Cortex-M3), both linking pqm3's assembly
Keccak: the speed-up is on the non-Keccak work only, the hashing drops out. Reference values below are the
published figures' own arithmetic (benchmarks-nucleo-f207zg.md @ 08b5a42b), recomputed here by hand.
"""

from __future__ import annotations

import pytest

from trustlab.devices.tpm2.pqc_model import asm_speedup, chipspec, estimate, predict
from trustlab.devices.tpm2.pqc_model.chipspec import ChipSpec


def test_each_pair_is_the_published_non_keccak_ratio_and_the_hashing_drops_out():
    kyber768 = next(p for p in asm_speedup.pairs() if p["scheme"] == "kyber768")
    # keygen: 1,134,574 x (1 - 0.540) / (886,498 x (1 - 0.691))
    assert asm_speedup.pair_speedup(kyber768, "keygen") == pytest.approx(1134574 * 0.46 / (886498 * 0.309))
    for p in asm_speedup.pairs():
        for op in p["clean"]:
            hashing = p["clean"][op] * p["clean_hash_share"][op] / (p["asm"][op] * p["asm_hash_share"][op])
            assert 0.9 < hashing < 1.15, (p["scheme"], op)  # one Keccak on both sides (ML-DSA sign: its rejection loop)
            assert asm_speedup.pair_speedup(p, op) > 1.0


def test_factor_per_family_and_operation_with_the_family_spread_as_range():
    kem = {op: asm_speedup.factor("cortex-m3", "ML-KEM-768", op) for op in ("keygen", "encapsulate", "decapsulate")}
    dsa = {op: asm_speedup.factor("sc300", "ML-DSA-65", op) for op in ("keygen", "sign", "verify")}
    for f in (*kem.values(), *dsa.values()):
        assert 1.0 < f.lo <= f.mid <= f.hi
    assert len({(f.lo, f.hi) for f in kem.values()}) == 1 and kem["keygen"].mid < kem["decapsulate"].mid
    assert kem["keygen"].lo == pytest.approx(1.84, abs=0.01) and kem["keygen"].hi == pytest.approx(2.52, abs=0.01)
    assert dsa["keygen"].lo == pytest.approx(1.39, abs=0.01) and dsa["verify"].mid == pytest.approx(2.04, abs=0.01)
    assert "mupq/pqm3" in kem["keygen"].text
    assert asm_speedup.factor("riscv32", "ML-KEM-768", "keygen") is None
    assert asm_speedup.factor("cortex-m3", "ML-KEM-768", "keygen", frozenset({"pqm3-f207"})) is None
    assert asm_speedup.has("m3") and not asm_speedup.has("m3", frozenset({"pqm3-f207"})) and not asm_speedup.has("rv32")


def test_impl_factor_on_a_paired_class_speeds_up_the_arithmetic_only():
    m3 = {impl: ChipSpec.parse(f"core=m3,mhz=100,impl={impl}") for impl in chipspec.IMPLEMENTATIONS}
    f = asm_speedup.factor("cortex-m3", "ML-KEM-768", "decapsulate")
    assert estimate.impl_factor(m3["portable"], "ML-KEM-768", "decapsulate", 0.01) == (1.0, 1.0)
    assert estimate.impl_factor(m3["optimized"], "ML-KEM-768", "decapsulate", 0.5) == (1.0, pytest.approx(1 / f.mid))
    assert estimate.impl_factor(m3["optimized"], "ML-KEM-768", "decapsulate", 0.0)[1] == pytest.approx(1 / f.hi)
    assert estimate.impl_factor(m3["optimized"], "ML-KEM-768", "decapsulate", 1.0)[1] == pytest.approx(1 / f.lo)
    assert estimate.impl_factor(m3["mixed"], "ML-KEM-768", "decapsulate", 1.0)[1] == pytest.approx(1.0)
    # not stated: portable C at the centre, the assembly as the fast end (as pqm4's classes)
    assert estimate.impl_factor(m3["unknown"], "ML-KEM-768", "decapsulate", 0.5) == (1.0, 1.0)
    assert estimate.impl_factor(m3["unknown"], "ML-KEM-768", "decapsulate", 0.0)[1] == pytest.approx(1 / f.hi)
    # leave-one-source-out: without the pairs' source no speed-up
    assert estimate.impl_factor(m3["optimized"], "ML-KEM-768", "decapsulate", 0.0, frozenset({"pqm3-f207"})) == \
        (1.0, 1.0)


def test_optimized_on_a_cortex_m3_is_faster_and_says_where_its_speedup_comes_from():
    c = predict.price("ML-KEM-768", "decapsulate", ChipSpec.parse("core=m3,mhz=100,impl=portable,build=speed"))
    a = predict.price("ML-KEM-768", "decapsulate", ChipSpec.parse("core=m3,mhz=100,impl=optimized"))
    assert a.median_ms < 0.8 * c.median_ms and a.low_ms < a.median_ms < a.high_ms
    assert "cortex-m3 assembly arithmetic on ML-KEM" in a.provenance
    assert "cortex-m3 assembly arithmetic" not in c.provenance
    # the Keccak share is untouched: asm arithmetic cannot make the operation faster than its hashing
    assert a.median_ms > 0.3 * c.median_ms


DUE_M3_KYBER = {"ML-KEM-512": (541e3, 650e3, 622e3), "ML-KEM-768": (878e3, 1054e3, 1010e3),
                "ML-KEM-1024": (1388e3, 1602e3, 1543e3)}
"""Reference values, not a fit: pqm3's own 'm3' Kyber (the code of the pairs) on another board, an Arduino Due
(SAM3X8E, 0 flash wait states), mean cycles of 100 runs: JunhaoHuang/pqm3 benchmarks.txt @ 73b67dcd, block
'2023-03-03 ... iterations=100', crypto_kem_kyber{512,768,1024}_m3 keygen / encaps / decaps. Neither a validation
row nor a pair: a blind check of the factor through --chip (ratios 0.92-1.12 when added; as portable C 1.24-1.64)."""


def test_blind_check_pqm3_m3_kyber_on_another_board_through_chip():
    spec = ChipSpec.parse("core=cortex-m3,mhz=1,impl=optimized,keccak_impl=asm,lineage=reference")
    for alg, measured in DUE_M3_KYBER.items():
        for op, v in zip(("keygen", "encapsulate", "decapsulate"), measured):
            p = predict.price(alg, op, spec, protection=False, draws=400)
            assert 0.8 < p.mean_ms * 1000 / v < 1.25, (alg, op)
            assert p.low_ms * 1000 <= v <= p.high_ms * 1000, (alg, op)


def test_a_source_is_not_predicted_from_a_pair_whose_assembly_is_its_own_code():
    """pqm3's m3 Dilithium (and Kyber) is Greconici et al.'s code, whose Dilithium3 figures are the greconici2021-m3
    validation source: leaving that source out drops the pairs (also_excludes), so leave-one-source-out prices it
    without a speed-up measured on its own code."""
    own = frozenset({"greconici2021-m3"})
    assert all("greconici2021-m3" in p.get("also_excludes", ()) for p in asm_speedup.pairs()
               if p["algorithm"].startswith("ML-DSA"))
    assert asm_speedup.factor("cortex-m3", "ML-DSA-65", "sign") is not None
    assert asm_speedup.factor("cortex-m3", "ML-DSA-65", "sign", own) is None
    assert not asm_speedup.has("m3", own)
    assert asm_speedup.excluded({"source": "a", "also_excludes": ["b"]}, frozenset({"b"}))
    assert not asm_speedup.excluded({"source": "a"}, frozenset({"b"}))
    # validate prices it as --chip would without those pairs: no sourced assembly speed-up on the class
    from trustlab.devices.tpm2.pqc_model import validation

    src = next(s for s in validation_sources() if s["id"] == "greconici2021-m3")
    assert validation.implementation_of(src, own)[1] == "unknown"
    assert validation.implementation_of(src)[1] == "optimized"


def validation_sources() -> list[dict]:
    from trustlab.devices.tpm2.pqc_model import classes

    return classes.measurements()["sources"]


def test_a_class_with_pairs_for_one_family_prices_the_others_assembly_as_unknown(monkeypatch):
    """asm_speedup.factor is per family; whether assembly is priced is too once the algorithm is known: a class
    whose pairs cover ML-KEM only accepts impl=optimized (a chip prices both families) but prices ML-DSA's as
    unknown and says so, as validate does for a source."""
    kem_only = tuple(p for p in asm_speedup.pairs() if p["algorithm"].startswith("ML-KEM"))
    monkeypatch.setattr(asm_speedup, "pairs", lambda: kem_only)
    asm_speedup.factor.cache_clear()
    try:
        assert asm_speedup.has("m3") and asm_speedup.has("m3", algorithm="ML-KEM-768")
        assert not asm_speedup.has("m3", algorithm="ML-DSA-65")
        assert chipspec.priced_implementation("cortex-m3", "optimized") == "optimized"
        assert chipspec.priced_implementation("cortex-m3", "optimized", algorithm="ML-DSA-65") == "unknown"
        spec = ChipSpec.parse("core=m3,mhz=100,impl=optimized")
        dsa = predict.price("ML-DSA-65", "sign", spec)
        kem = predict.price("ML-KEM-768", "encapsulate", spec)
        said = chipspec.repriced_text("optimized", "unknown", "cortex-m3", "ML-DSA-65")
        assert said in dsa.provenance and "on ML-DSA" in said
        assert "priced as unknown" not in kem.provenance
        assert chipspec.for_algorithm(spec, "ML-DSA-65").implementation == "unknown"
        assert chipspec.for_algorithm(spec, "ML-KEM-768") is spec
    finally:
        asm_speedup.factor.cache_clear()


@pytest.mark.parametrize("change, said", [
    (lambda p: p.pop("asm"), "asm is missing"),
    (lambda p: p["asm_hash_share"].update(keygen=1.0), "asm_hash_share.keygen = 1.0 is outside [0, 1)"),
    (lambda p: p["clean_hash_share"].update(keygen=-0.1), "clean_hash_share.keygen = -0.1 is outside [0, 1)"),
    (lambda p: p["clean_hash_share"].update(keygen="0.5"), "clean_hash_share.keygen = '0.5' is outside [0, 1)"),
    (lambda p: p["asm"].pop("decapsulate"), "asm has no decapsulate"),
    (lambda p: p["asm"].update(keygen=0), "asm.keygen = 0 is not a positive cycle count"),
    (lambda p: p["clean"].update(sign=1), "has no operation 'sign'"),
    (lambda p: p.update(algorithm="ML-KEM-9"), "ML-KEM-9"),
    (lambda p: p.update(asm=3), "asm is not a table of operations"),
])
def test_a_malformed_pair_is_a_one_line_error_naming_its_scheme(change, said):
    import copy

    from trustlab.errors import TrustlabError

    pair = copy.deepcopy(next(p for p in asm_speedup.pairs() if p["scheme"] == "kyber768"))
    change(pair)
    with pytest.raises(TrustlabError) as err:
        asm_speedup.check(pair)
    text = str(err.value)
    assert "\n" not in text and "'kyber768'" in text and said in text, text


def test_the_shipped_pairs_pass_their_check():
    assert all(asm_speedup.check(dict(p)) == p for p in asm_speedup.pairs())

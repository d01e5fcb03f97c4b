"""``trustlab validate`` prices each published source exactly as ``--chip`` prices that chip.

The leave-one-source-out figures are our evidence for what outsiders score through ``run pqc-tpm --chip``, so
they only count if the two paths agree: one implementation rule (:func:`.chipspec.priced_implementation`), and
for every counted source the spec validate builds is one a user could type, priced to the same numbers.
"""

from __future__ import annotations

import pytest

from trustlab.devices.tpm2.pqc_model import asm_speedup, chipspec, classes, predict, validation
from trustlab.devices.tpm2.pqc_model.chipspec import ChipSpec
from trustlab.errors import TrustlabError

REPRICED = {"huang2023-fe310", "huang2023-vexriscv", "wolfboot-polarfire-u54"}
"""Sources of hand-written assembly (implementation optimized / mixed) on cores without a sourced assembly speed-up
(neither pqm4's Cortex-M4 assembly nor paired measurements of the class: RISC-V 32 and 64): ``--chip`` refuses their
impl, validate prices them as it tells the user."""
PAIRED = {"greconici2021-m3", "huang2023-due-m3"}
"""Sources of hand-written assembly on a class whose speed-up comes from its own paired C / assembly measurements
(Cortex-M3: data/asm_pairs.toml, mupq/pqm3 clean vs m3): priced as stated, by --chip and validate alike."""


def _sources() -> dict[str, dict]:
    return {s["id"]: s for s in classes.measurements()["sources"]}


def _first_row(sid: str) -> dict:
    return next(r for r in classes.measurements()["rows"] if r["source"] == sid)


def _as_chip(spec: ChipSpec) -> str:
    """The --chip text of a validation spec: the facts a user of that chip would type."""
    lo, hi = spec.mhz
    parts = [f"core={spec.core}", f"mhz={lo:g}" + (f"-{hi:g}" if hi != lo else ""), f"build={spec.build}",
             f"impl={spec.implementation}", f"lineage={spec.lineage}", "certified=no", "tpm=no"]
    if spec.keccak_engine is not None:
        parts.append(f"keccak_engine={spec.keccak_engine.kind}")
    else:
        parts.append(f"keccak_impl={spec.keccak_impl}")
    return ",".join(parts)


def test_the_repriced_sources_are_those_with_assembly_on_a_core_without_a_sourced_speedup():
    found = {sid for sid, s in _sources().items()
             if s["implementation"] in chipspec.ASSEMBLY_IMPLEMENTATIONS
             and not chipspec.assembly_priced(s.get("microarch") or s["core"])}
    assert found == REPRICED
    paired = {sid for sid, s in _sources().items()
              if s["implementation"] in chipspec.ASSEMBLY_IMPLEMENTATIONS
              and not classes.runs_pqm4_assembly(s.get("microarch") or s["core"])} - found
    assert paired == PAIRED
    # the STM32F446's mixed wolfCrypt runs on a Cortex-M4: pqm4's assembly is its to run, nothing repriced
    assert validation.implementation_of(_sources()["wolfssl-examples-f446"]) == ("mixed", "mixed")


@pytest.mark.parametrize("sid", sorted(REPRICED))
def test_cli_refuses_what_validate_reprices_and_names_the_same_answer(sid):
    source = _sources()[sid]
    stated, priced = validation.implementation_of(source)
    assert stated in chipspec.ASSEMBLY_IMPLEMENTATIONS and priced == "unknown"
    assert chipspec.priced_implementation(source["core"], stated) == priced
    refused = f"no sourced assembly speed-up for a {source['core']} .*; use impl={priced}"
    with pytest.raises(TrustlabError, match=refused):
        ChipSpec.parse(f"core={source['core']},mhz=100,impl={stated}")
    spec = validation.spec_of(source, _first_row(sid))
    assert spec.implementation == priced and any("priced as unknown" in n for n in spec.notes)
    row = next(r for r in validation.rows() if r.get("source_id") == sid)
    assert f"implementation {stated} priced as unknown" in row["note"]


@pytest.mark.parametrize("sid", sorted(PAIRED))
def test_cli_and_validate_price_paired_assembly_as_stated(sid):
    """On a class with paired C / assembly measurements, impl=optimized is accepted by --chip and priced as
    stated by validate (no 'priced as unknown' note); leaving out the source of the pairs takes it away."""
    source = _sources()[sid]
    assert validation.implementation_of(source) == (source["implementation"], source["implementation"])
    for core in ("cortex-m3", "m3", "sc300"):
        assert ChipSpec.parse(f"core={core},mhz=100,impl={source['implementation']}").implementation == \
            source["implementation"]
    spec = validation.spec_of(source, _first_row(sid), frozenset({sid}))
    own_code = any(sid in p.get("also_excludes", ()) for p in asm_speedup.pairs())
    assert own_code == (sid == "greconici2021-m3")  # the pairs' assembly is Greconici et al.'s code
    if own_code:  # its own code's pairs leave with it: no speed-up left on the class
        assert spec.implementation == "unknown" and any("priced as unknown" in n for n in spec.notes)
    else:
        assert spec.implementation == source["implementation"] and not spec.notes
    # leave-one-source-out honesty: without the pairs' own source, the class has no speed-up, as on a RISC-V core
    pairs_source = frozenset({"pqm3-f207"})
    assert validation.implementation_of(source, pairs_source) == (source["implementation"], "unknown")


def test_every_counted_source_is_priced_as_its_chip_through_cli():
    """Each counted source's validation spec, typed as --chip (rows whose timer is no core-cycle / wall clock
    reading, rdtsc, carry a timer factor that belongs to the measurement, not the chip: left out), prices its
    first row to the same median and interval (same draws: the seed is the question's, not the chip's)."""
    compared = 0
    for sid, source in _sources().items():
        if not source["counted"]:
            continue
        row = _first_row(sid)
        spec = validation.spec_of(source, row)
        if spec.timer is not None and (spec.timer.lo, spec.timer.hi) != (1.0, 1.0):
            continue
        cli = ChipSpec.parse(_as_chip(spec))
        a = predict.price(row["algorithm"], row["operation"], spec, protection=False, draws=400)
        b = predict.price(row["algorithm"], row["operation"], cli, protection=False, draws=400)
        assert (a.median_ms, a.low_ms, a.high_ms) == pytest.approx((b.median_ms, b.low_ms, b.high_ms), rel=1e-12), sid
        compared += 1
    assert compared >= 15


def test_the_class_fit_takes_no_assembly_rows_even_where_they_are_priced_as_portable():
    """Hand-written assembly taken as C would make a class's C faster than it is: the fit (and the spread) leave
    every optimized / mixed source out, so leaving them out by hand changes nothing."""
    asm = frozenset(sid for sid, s in _sources().items() if s["implementation"] in chipspec.ASSEMBLY_IMPLEMENTATIONS)
    assert REPRICED <= asm
    for cls in classes.names():
        assert classes.fit(cls) == classes.fit(cls, asm)
        assert not any(sid in classes.fit(cls).basis for sid in asm)
    assert classes.source_spread() == classes.source_spread(asm)

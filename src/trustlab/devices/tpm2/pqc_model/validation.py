"""The PQC cost model beside published measurements: leave-one-source-out, with intervals and coverage.

Every row of ``trustlab/validation/data/pqc_measurements.toml`` is predicted by the model rebuilt
*without the row's source* (:func:`.classes.fit` with that source excluded: a class whose only source
it was falls back to its prior), on the row's core class and clock, unprotected (these are
microcontroller benchmarks) and without TPM overheads. Most published figures are averages, compared with
the model's mean (``mean_ms``); a source that publishes medians of runs (``statistic = "median"``) is
compared with the model's median run (``run_median_ms``). A row counts as covered when the measured
value lies inside the prediction's 5-95% interval. Sources marked ``counted = false`` are shown and
flagged but kept out of the summary (they measure something else: the SLE 78 row is a pre-standard
Kyber variant on an RSA co-processor with no clock stated).

Calibration rows (the model was built from them, so agreement only shows the derivation is faithful):
pqm4's own Cortex-M4 figures, and the SEALSQ QVault's published 1.85 command times (wolfTPM
docs/benchmarks.md), served through :mod:`.silicon`.
"""

from __future__ import annotations

import functools
import statistics
from typing import Callable

from trustlab.devices.tpm2.pqc_model import builds, calibration, chips, chipspec, classes, keccak_engine, keccak_impl, \
    lineage, predict, silicon
from trustlab.devices.tpm2.pqc_model.chipspec import ChipSpec
from trustlab.devices.tpm2.pqc_model.params import family
from trustlab.timing import registry

INDEPENDENT = "independent"
CALIBRATION = "calibration"


def _row(profile, device_class, command, predicted, reference, unit, kind, source, note, flagged=False,
         **extra) -> dict:
    return {"profile": profile, "device_class": device_class, "command": command, "predicted": predicted,
            "reference": reference, "unit": unit, "kind": kind, "source": source, "note": note,
            "flagged": flagged, **extra}


def spec_of(source: dict, row: dict, exclude: frozenset[str] = frozenset()) -> ChipSpec:
    """The chip a measurement ran on: its core (the named core, ``microarch``, where the source gives one; else
    its core class) at its clock (1 MHz for cycle counts: ms = kcycles),
    built as its source says (``build``; absent: unknown), read with its source's timer (``timer``), running the
    Keccak it states (``keccak``: asm, c or unknown)."""
    if row["unit"] == "cycles":
        mhz = (1.0, 1.0)
    elif "clock_mhz" in row:
        mhz = classes.row_clock(row)
    else:  # no clock stated: the class's chips.toml range (the secure controllers' 25-100 MHz)
        mhz = chips.chip_for("").clock_mhz
    engine = source.get("keccak_engine")  # Keccak on a hardware engine (a chips.toml [keccak_engines] name)
    core = source.get("microarch") or source["core"]
    stated, impl = implementation_of(source, exclude, row["algorithm"])
    # the build is read as for the implementation priced: code priced as portable C is moved by its stated flags
    build, timer = builds.of_source(dict(source, implementation=impl), row["unit"])
    notes = () if impl == stated else (chipspec.repriced_text(stated, impl, source["core"], row["algorithm"]),)
    return ChipSpec(name=source["platform"], core=core, mhz=mhz,
                    clock_source="as measured",
                    build=build.kind, timer=timer, implementation=impl,
                    keccak_engine=keccak_engine.named(engine) if engine else None,
                    keccak_impl=keccak_impl.of_source(source),
                    lineage=lineage.of_source(source, family(row["algorithm"])), notes=notes)


def implementation_of(source: dict, exclude: frozenset[str] = frozenset(),
                      algorithm: str | None = None) -> tuple[str, str]:
    """(stated, priced) implementation of a measurement source: its ``implementation`` as a ``--chip`` impl (a
    co-processor or bytecode is 'unknown'), and what the model prices it as on its core
    (:func:`.chipspec.priced_implementation`, the rule ``--chip`` refuses by: hand-written assembly on a core
    with no sourced assembly speed-up, neither pqm4's Cortex-M4 assembly nor the class's paired C / assembly
    measurements without the sources in ``exclude`` (:mod:`.asm_speedup`), is priced as 'unknown', as a user told
    so by ``--chip`` would ask; with ``algorithm``, a speed-up for its family).
    Everything else is what the source states, as that user would type it: its build flags (``build``: the
    assembly build, whose flags move nothing, belongs to code priced as assembly; priced as C on its core, the
    code is moved by its flags as C is, and ``--chip`` refuses build=assembly beside portable C), its Keccak
    (``keccak``: ``--chip keccak_impl``) and its lineage."""
    impl = source.get("implementation", "unknown")
    stated = impl if impl in chipspec.IMPLEMENTATIONS else "unknown"
    return stated, chipspec.priced_implementation(source.get("microarch") or source["core"], stated, exclude,
                                                  algorithm)


def predict_row(row: dict, exclude_own: bool = True,
                restate: Callable[[dict, ChipSpec], ChipSpec] | None = None) -> dict:
    """One measurement predicted leave-one-source-out: predicted, low, high in the row's unit. ``restate`` (source,
    chip) -> chip prices it with other facts than its source states (tools/pqc_facts_sensitivity.py)."""
    doc = classes.measurements()
    source = next(s for s in doc["sources"] if s["id"] == row["source"])
    exclude = frozenset({row["source"]}) if exclude_own else frozenset()
    spec = spec_of(source, row, exclude)
    if restate is not None:
        spec = restate(source, spec)
    p = predict.price(row["algorithm"], row["operation"], spec, protection=False, exclude=exclude)
    k = 1000.0 if row["unit"] == "cycles" else 1.0  # at 1 MHz, ms x 1000 = cycles
    ref = float(row["value"])
    median = row.get("statistic", "mean") == "median" and p.run_median_ms is not None
    central = p.run_median_ms if median else p.mean_ms  # a published median is compared with the median run
    low, high = p.low_ms * k, p.high_ms * k
    return {"source_id": row["source"], "core": source["core"], "platform": source["platform"],
            "algorithm": row["algorithm"], "operation": row["operation"], "unit": row["unit"],
            "reference": ref, "predicted": central * k, "low": low, "high": high,
            "error": central * k / ref - 1.0, "covered": low <= ref <= high,
            "counted": bool(source["counted"]), "implementation": source["implementation"],
            "implementation_priced": spec.implementation,
            "citation": source["citation"], "where": source["where"], "note": row.get("note", source.get("note", "")),
            "class_basis": classes.fit(source["core"], exclude).basis, "build": spec.build,
            "timer": spec.timer.kind if spec.timer is not None else "cycles"}


@functools.cache
def loso_rows() -> tuple[dict, ...]:
    return tuple(predict_row(r) for r in classes.measurements()["rows"])


def summary(rows: list[dict] | tuple[dict, ...] | None = None) -> dict:
    """Per source and overall (counted sources only): median |error|, worst ratio, coverage."""
    rows = list(loso_rows() if rows is None else rows)
    per: dict[str, dict] = {}
    for sid in dict.fromkeys(r["source_id"] for r in rows):
        rs = [r for r in rows if r["source_id"] == sid]
        per[sid] = _stats(rs) | {"core": rs[0]["core"], "counted": rs[0]["counted"], "build": rs[0]["build"],
                                 "timer": rs[0]["timer"],
                                 "class_from": "prior" if rs[0]["class_basis"].startswith("prior") else "other sources"}
    counted = [r for r in rows if r["counted"]]
    overall = _stats(counted) | {"sources": len({r["source_id"] for r in counted}),
                                 "core_classes": len({r["core"] for r in counted})}
    return {"sources": per, "overall": overall}


def _stats(rs: list[dict]) -> dict:
    if not rs:
        return {"rows": 0}
    ratios = [max(r["predicted"] / r["reference"], r["reference"] / r["predicted"]) for r in rs]
    return {"rows": len(rs), "median_abs_error": statistics.median(abs(r["error"]) for r in rs),
            "median_error": statistics.median(r["error"] for r in rs), "worst_ratio": max(ratios),
            "within_2x": sum(x <= 2.0 for x in ratios), "coverage": sum(r["covered"] for r in rs) / len(rs),
            "median_width": statistics.median(r["high"] / r["low"] for r in rs)}


def platform_class(core: str) -> str:
    """The device class a measurement platform is shown under: its cores.toml group (a Raspberry Pi 4 or a
    Xeon is no microcontroller), a security controller as a smart card."""
    if core == "secure-mcu":
        return "smart card"
    return "microcontroller" if classes.group(core) == "microcontroller" else "application processor"


def rows() -> list[dict]:
    """Every check row for ``trustlab validate`` and ``run pqc-tpm`` (independent LOSO + calibration)."""
    out: list[dict] = []
    for r in loso_rows():
        out.append(_row(f"({r['core']}: {r['platform']})", platform_class(r["core"]), f"{r['algorithm']} {r['operation']}", r["predicted"], r["reference"], r["unit"],
                        INDEPENDENT, f"{r['citation']} [{r['where']}]",
                        f"leave-one-source-out ({r['class_basis']}); interval {r['low']:.4g}-{r['high']:.4g}"
                        f" {'covers' if r['covered'] else 'MISSES'} the measurement" + _repriced(r)
                        + (f"; {r['note']}" if r["note"] else ""),
                        flagged=not r["counted"], low=r["low"], high=r["high"], covered=r["covered"],
                        source_id=r["source_id"], counted=r["counted"]))
    out += silicon_rows()
    cal = calibration.calibrate()
    for (algorithm, op) in [(a, o) for a in ("ML-KEM-768", "ML-DSA-65") for o in counts_ops(a)]:
        keccak, other = classes.m4_cycles(algorithm, op)
        ref = calibration.pqm4()["schemes"][algorithm]["clean"][op]["cycles"]["AVG"]
        out.append(_row("(Cortex-M4, pqm4 'clean')", "microcontroller", f"{algorithm} {op}", (keccak + other) / 1e6,
                        ref / 1e6, "Mcycles", CALIBRATION, calibration.pqm4_source("clean"),
                        f"the unit costs are fitted on these figures (Keccak {cal.keccak_cycles:.0f} cycles/permutation)"))
    return out


def _repriced(r: dict) -> str:
    """A row whose stated implementation the model prices as another (:func:`implementation_of`) says so."""
    if r["implementation"] not in chipspec.ASSEMBLY_IMPLEMENTATIONS:
        return ""
    text = chipspec.repriced_text(r["implementation"], r["implementation_priced"], r["core"], r["algorithm"])
    return f"; {text}" if text else ""


def silicon_rows() -> list[dict]:
    """The published 1.85 silicon figures beside the calibrated profile's mean (calibration rows)."""
    from trustlab.devices.tpm2.pqc_model import cost, frames

    out = []
    for name in sorted(n for n in registry.available() if silicon.published(n)):
        tpm2 = registry.load(name)
        ohc = tpm2.mean("ohc") if "ohc" in tpm2 else 0.0
        for row in silicon.rows(name):
            f = frames.keygen_frames(row.algorithm)[0] if row.call == "create" else frames.use_frames(row.algorithm,
                                                                                                      row.call)
            mean = row.other_commands * ohc + sum(cost.operation_cost(
                tpm2, row.algorithm, row.call, in_bytes=f.in_bytes, out_bytes=f.out_bytes).values())
            out.append(_row(name, "discrete TPM 2.0", f"{row.algorithm} {row.operation}", mean,
                            row.mean_ms, "ms", CALIBRATION, row.source,
                            "the profile is calibrated on this figure (expected mean of the benchmark's commands); "
                            "the mean served through `serve` is checked by tests/pqc_model/test_sealsq_calibration.py"))
    return out


def counts_ops(algorithm: str) -> tuple[str, ...]:
    return ("keygen", "encapsulate", "decapsulate") if "KEM" in algorithm else ("keygen", "sign", "verify")


def per_source_lines(s: dict) -> list[str]:
    """The per-source table and the overall line of :func:`summary` (validate and the pqc-tpm report).

    'class from': what the row's core class was built from with the source left out: its other sources'
    measurements, or (a class measured by this source alone) its prior from data/cores.toml. 'build' and
    'timer': the source's build and timer kinds (:mod:`.builds`; unknown when the source does not say)."""
    from trustlab.textable import table

    body = [[sid, v["core"], v["class_from"], v.get("build", "-"), v.get("timer", "-"), v["rows"], v.get("median_error"), v.get("median_abs_error"),
             v.get("worst_ratio"), f"{v.get('within_2x', 0)}/{v['rows']}", v.get("coverage"), v.get("median_width"),
             "yes" if v["counted"] else "no (flagged)"] for sid, v in s["sources"].items()]
    o = s["overall"]
    return [table(body, ["source", "core class", "class from", "build", "timer", "rows", "median error", "median |error|",
                         "worst ratio", "within 2x", "coverage", "median width (high/low)", "counted"]),
            f"Overall ({o['rows']} counted rows, {o.get('sources', 0)} sources, {o.get('core_classes', 0)} core "
            f"classes): median |error| {100 * o.get('median_abs_error', 0):.1f}%, {o.get('within_2x', 0)}/{o['rows']} "
            f"within 2x (worst {o.get('worst_ratio', 0):.2f}x), coverage {100 * o.get('coverage', 0):.0f}%, median interval "
            f"width x{o.get('median_width', 0):.2f} (high/low)."]

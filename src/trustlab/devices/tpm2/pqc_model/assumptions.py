"""Every assumption of the post-quantum cost model, with its range and its source, in one list.

``trustlab validate`` prints it under the leave-one-source-out summary (``--json``: ``pqc_assumptions``),
so the list a closing note or a reviewer needs is generated from the figures the model uses, never
copied by hand. Each entry: what it is, its range (low..high, centre where there is one), what it
applies to, and where the figure comes from.

``values`` carries the range's numbers as data, built from the same objects as the ``range`` text (never parsed
from it): a range is ``{low, centre (where there is one), high, unit}`` (``interval: "5-95%"`` when low/high are
quantiles, and for a mixture its ``bounds`` and ``weights``), an exact figure ``{value, unit}``; an entry with
several ranges is keyed by part (``keccak``/``other``; lineage: ``microcontroller``/``application`` first). An
entry whose range is a prose-only rule has no ``values`` key.
"""

from __future__ import annotations

import math

from trustlab.devices.tpm2.pqc_model import builds, calibration, chips, classes, estimate, keccak_engine, \
    keccak_impl, lineage, wolftpm_hash_bench


Stated = tuple[str, "dict | None"]
"""A range as text and the same numbers as data (``values``), built together from one object."""

IMPL_ASM_CLEAN = (0.48, 0.79)
"""pqm4's fastest assembly over its clean C, per operation: the implementation entry's stated span."""


def _entry(name: str, value: str | Stated, applies: str, source: str) -> dict:
    """One listed assumption; ``values`` only where the range has numbers (a prose-only rule has no key)."""
    text, values = (value, None) if isinstance(value, str) else value
    return {"name": name, "range": text, **({"values": values} if values is not None else {}),
            "applies_to": applies, "source": source}


def _rng(lo: float, hi: float, mid: float | None = None) -> Stated:
    return (f"x{lo:.3g}-x{hi:.3g}" + (f" (centre x{mid:.3g})" if mid is not None else ""),
            {"low": float(lo), **({"centre": float(mid)} if mid is not None else {}), "high": float(hi), "unit": "x"})


def _exact(value: float, unit: str) -> dict:
    return {"value": value, "unit": unit}


def _then(stated: Stated, suffix: str) -> Stated:
    """The same numbers with more words after them."""
    return stated[0] + suffix, stated[1]


def _parts(sep: str, parts: list[tuple[str, str, Stated]]) -> Stated:
    """Several ranges in one entry: text ``prefix + text`` joined by ``sep``; values keyed by part."""
    return sep.join(prefix + text for _, prefix, (text, _) in parts), {key: v for key, _, (_, v) in parts}


def _build_range(b: builds.Factor) -> Stated:
    if not b.parts:
        return _rng(b.lo, b.hi, b.mid)
    mix = list(zip(b.parts, b.weights))
    text, values = _rng(*b.quantiles(), b.mid)
    return (f"{text} 5-95% of a mix of {', '.join(f'{p.kind} {100 * w:.0f}%' for p, w in mix)} "
            f"(bounds x{b.lo:.3g}-x{b.hi:.3g})",
            {**values, "interval": "5-95%", "bounds": {"low": float(b.lo), "high": float(b.hi)},
             "weights": {p.kind: float(w) for p, w in mix}})


def listing() -> list[dict]:
    out = [_entry("work per operation", "our counted units x Cortex-M4 cycles per unit",
                  "every prediction", calibration.pqm4_source("clean"))]
    for name in classes.names():
        c = classes.fit(name)
        out.append(_entry(f"core class {name}", _then(_parts(", ", [
            ("keccak", "Keccak ", _rng(c.keccak.lo, c.keccak.hi, c.keccak.mid)),
            ("other", "other ", _rng(c.arith.lo, c.arith.hi, c.arith.mid))]), " of a Cortex-M4's work per clock"),
                          "chips priced by class x clock", c.basis))
    for core in classes.microarch_names():
        f = classes.core_factor(core)
        out.append(_entry(f"named core {core} ({f.cls}, {f.tier})", _then(_rng(f.lo, f.hi, f.mid), " of the reference "
                          "core's work per clock"), f"chips naming this core (--chip core={core}, chips.toml), and the "
                          f"{f.cls} sources that ran on it (divided by the centre before the class is fitted)", f.source))
    for kind in builds.kinds():
        b = builds.build(kind)
        rng = _parts(" / ", [(key, name, _build_range(f)) for key, name, f in zip(
            ("keccak", "other"), ("Keccak ", "other units "), builds.units(kind))]) if builds.per_unit(kind) \
            else _build_range(b)
        out.append(_entry(f"build: {kind}", rng, f"time of {b.label} vs the benchmark build; "
                          "class x clock chips (--chip build=, default unknown) and measurement sources", b.source))
    for kind in ("cycles", "wall", "tsc"):
        t = builds.timer(kind)
        out.append(_entry(f"timer: {kind}", _rng(t.lo, t.hi, t.mid), "reported units per core cycle "
                          "(validation rows)", t.source))
    for name, cpu in builds._doc().get("cpus", {}).items():
        out.append(_entry(f"timer: rdtsc on {name}", _rng(cpu["base_ghz"] / cpu["turbo_ghz"], 1.0),
                          "validation rows on that CPU", cpu["source"]))
    for grp in dict.fromkeys(classes.group(c) for c in classes.names()):
        spread = classes.source_spread(frozenset(), grp)
        lo, hi = spread.quantiles()
        text, values = _rng(lo, hi, 1.0)
        out.append(_entry(f"between-source spread ({grp} cores)", (text + " (5-95%, before the "
                          "sqrt(1 + 1/k) of a centre of k sources)", {**values, "interval": "5-95%"}),
                          f"class x clock chips of {grp} classes (a new "
                          "chip is a new source)", spread.text()))
    asm_lo, asm_hi = IMPL_ASM_CLEAN
    out.append(_entry("implementation", (f"pqm4's fastest assembly / clean (per operation, x{asm_lo:g}-x{asm_hi:g}) .. x1",
                                         {"assembly_vs_clean": _rng(asm_lo, asm_hi)[1], "portable_c": _exact(1.0, "x")}),
                      "every prediction", estimate.IMPL_SOURCE))
    for name in classes.names():
        a = keccak_impl.asm_speedup(name)
        if a.hi > 1.0:
            out.append(_entry(f"Keccak implementation: {name} C / assembly", _rng(a.lo, a.hi, a.mid),
                              f"Keccak-f[1600] time of a {name} running C vs assembly (--chip keccak_impl=, sources' "
                              "keccak field; the Cortex-M4's bridges pqm4's assembly calibration to the classes' C basis)",
                              a.source))
    m4 = keccak_impl.asm_speedup(keccak_impl.BASIS)
    out.append(_entry("Keccak implementation: unknown", _then(_rng(m4.mid / m4.mid, m4.hi, m4.mid), " on a Cortex-M4's "
                      "Keccak time vs pqm4's assembly (other classes: their own asm ratio; none sourced: C)"),
                      "chips that do not say (--chip default; sources whose keccak is unknown)", keccak_impl.UNKNOWN_RULE))
    for kind in lineage.kinds():
        for fam in ("ML-KEM", "ML-DSA"):
            if lineage.priced_as(kind, fam) != kind or (kind == lineage.REFERENCE and fam == "ML-DSA"):
                continue  # priced as another lineage (said in its source) or already listed
            by_group = []
            for grp, core in (("microcontroller", "cortex-m4"), ("application", "host-x86")):
                k, a = (lineage.factor(kind, fam, core, unit) for unit in lineage.UNITS)
                by_group.append((grp, f"{grp}: ", _parts(", ", [("keccak", "Keccak ", _rng(k.lo, k.hi, k.mid)),
                                                                ("other", "other ", _rng(a.lo, a.hi, a.mid))])))
            out.append(_entry(f"lineage: {kind}" + ("" if kind == lineage.REFERENCE else f" ({fam})"),
                              ("x1", _exact(1.0, "x")) if kind == lineage.REFERENCE else _parts("; ", by_group),
                              "time of the lineage's portable C vs the reference C on the same core (--chip lineage=, "
                              "sources' lineage field; not hand-written assembly)", lineage._doc()[kind]["source"]))
    for kind in lineage.kinds():
        if all(lineage.priced_as(kind, fam) != kind for fam in ("ML-KEM", "ML-DSA")):
            out.append(_entry(f"lineage: {kind}", "priced as unknown", "--chip lineage= and sources naming it",
                              lineage._doc()[kind]["source"]))
    sha_text, sha_spread = _rng(*estimate.SHA_PLACEMENT)
    out.append(_entry("SHA-256 placement", (f"{estimate.SHA256_M4_CYCLES_PER_BYTE:g} Cortex-M4 cycles/byte, {sha_text}",
                      {"m4_cycles_per_byte": _exact(float(estimate.SHA256_M4_CYCLES_PER_BYTE), "Cortex-M4 cycles/byte"),
                       "placement": sha_spread}), "chips with a measured SHA-256 rate",
                      f"{estimate.SHA256_M4_SOURCE}; {estimate.SHA_PLACEMENT_SOURCE}"))
    out.append(_entry("SHA-256 rate read from wolfTPM's bench", (f"per counted KB: {wolftpm_hash_bench.COMMANDS} "
                      f"commands (the profile's 3 x ohc), no ticket or session HMAC, "
                      f"{wolftpm_hash_bench.EXTRA_WIRE_BYTES} bytes on the bus beyond the 3 ohc, "
                      f"{wolftpm_hash_bench.COMPRESSED_BYTES} bytes compressed (exact, no range)",
                      {"commands": _exact(wolftpm_hash_bench.COMMANDS, "commands per counted KB"),
                       "extra_wire_bytes": _exact(wolftpm_hash_bench.EXTRA_WIRE_BYTES, "bytes per counted KB"),
                       "compressed_bytes": _exact(wolftpm_hash_bench.COMPRESSED_BYTES, "bytes per counted KB")}),
                      "profiles placed by wolfTPM's published SHA-256 rate", wolftpm_hash_bench.SOURCE))
    ecdsa_text, ecdsa_spread = _rng(*estimate.ECDSA_SPREAD)
    out.append(_entry("ECDSA placement", (f"{estimate.ECDSA_M4_SIGN_CYCLES:,.0f} Cortex-M4 cycles, {ecdsa_text}",
                      {"m4_sign_cycles": _exact(float(estimate.ECDSA_M4_SIGN_CYCLES), "Cortex-M4 cycles"),
                       "spread": ecdsa_spread}), "software-crypto TPMs with a measured ECDSA P-256 sign",
                      f"{estimate.ECDSA_M4_SOURCE}; the x range is an assumption"))
    for name, rng, values, source in keccak_engine.listing():
        out.append(_entry(f"Keccak engine: {name}", (rng, values), "chips whose SHAKE / SHA-3 run on that engine (--chip "
                          "keccak_engine=NAME; keccak_cycles=N for another engine): their counted Keccak "
                          "permutations and sponge calls, at the core clock; the rest stays on the core", source))
    for fam, ops in estimate.SECRET_OPS.items():
        for op in ops:
            cm = chips.countermeasure(fam, op)
            if cm:
                out.append(_entry(f"protection: {fam} {op}", _rng(*cm[0]), "certified chips (profiles; --chip "
                                  "certified=yes, default for sc000/sc300/secure-mcu)", cm[1]))
    out.append(_entry("key creation", ("keygen + pairwise consistency test + wrapping "
                      f"({estimate.WRAP_SHA256_BYTES} bytes of SHA-256)",
                      {"wrap_sha256_bytes": _exact(estimate.WRAP_SHA256_BYTES, "bytes")}), "TPM2_Create on TPMs",
                      f"{estimate.PCT_SOURCE}; {estimate.WRAP_SOURCE}"))
    doc = chips._doc()
    for bus, entry in doc["buses"].items():
        out.append(_entry(f"bus: {bus}", _rng(*entry["efficiency"]) if entry["efficiency"][1] else "none",
                          "TPM profiles and --chip bus=", entry["source"]))
    for cls, entry in doc["classes"].items():
        lo, hi = entry["clock_mhz"]
        out.append(_entry(f"clock: {cls}", (f"{lo:g}-{hi:g} MHz", {"low": float(lo), "high": float(hi), "unit": "MHz"}),
                          f"profiles of class {cls}", entry["clock_source"]))
        if not entry.get("core"):
            out.append(_entry(f"work per clock: {cls}", _rng(*entry["per_clock"]), f"profiles of class {cls}",
                              entry["per_clock_source"]))
    return out


def lines() -> list[str]:
    """The listing as text: one entry per line, then its source indented."""
    out = ["Post-quantum cost model assumptions (range; applies to; source):"]
    for e in listing():
        out.append(f"- {e['name']}: {e['range']}; {e['applies_to']}")
        out.append(f"    source: {e['source']}")
    return out

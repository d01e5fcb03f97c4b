"""Reference source: a calibrated PQC TPM priced by the generic model as if it had no PQC figures.

Why: the SEALSQ QVault is the only TPM in silicon with published TCG 1.85 ML-DSA / ML-KEM times
(wolfTPM docs/benchmarks.md). Its profile answers at those times (calibration, :mod:`trustlab.devices.
tpm2.pqc_model.silicon`), so the calibration rows say nothing about how well the generic model prices a
TPM-class chip -- and that model is what prices every chip without PQC figures (``--chip``, the other
profiles). Here the same chip is priced through :func:`~trustlab.devices.tpm2.pqc_model.predict.price`
with the calibration bypassed: its facts only (chips.toml class, bus and certification; its classical
rates from its profile -- wolfTPM's published classical SEALSQ figures -- as the placement evidence),
and the result is set beside the published PQC figures the model did not see.

Kind ``held-out silicon``: not calibration (the figures did not build the price) and not counted in a
profile's stated accuracy (the profile itself serves the calibrated times; this judges the generic
model). One caveat is stated on every row: the low ends of two protection-factor ranges in chips.toml
(ML-KEM decapsulate x1.65, ML-DSA sign x1.0) were read off these same SEALSQ ratios when the ranges were
set, so the check is blind to the figures but not entirely to two ratios between them.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from trustlab.devices.tpm2.pqc_model import chipspec, classes, estimate, predict, silicon
from trustlab.devices.tpm2.pqc_model.chipspec import ChipSpec
from trustlab.timing import registry
from trustlab.validation.core import HELD_OUT_SILICON as HELD_OUT
from trustlab.validation.core import Check, Inconsistency, device_class

PROFILES = silicon.profiles()
CAVEAT = ("the model did not see these figures; caveat: the low ends of the ML-KEM decapsulate (x1.65) and ML-DSA "
          "sign (x1.0) protection ranges in chips.toml were read off this chip's decapsulate/encapsulate and "
          "sign/verify ratios")


def blind_spec(profile: str) -> ChipSpec:
    """The chip's facts as the generic model sees an unprofiled chip: the calibration link removed."""
    return replace(chipspec.for_profile(registry.load(profile)), calibrated_profile=None)


def model_only(profile: str, algorithm: str, call: str, protection: bool = True) -> predict.Price:
    """The generic model's price of one command on ``profile``'s chip, never the published figures."""
    return predict.price(algorithm, call, blind_spec(profile), protection=protection)


def evidence(profile: str) -> dict:
    """What placed the chip's speed, and what else the price rests on (for the table and --json)."""
    tpm2 = registry.load(profile)
    spec = blind_spec(profile)
    out: dict = {"core_class": spec.core, "certified": spec.certified, "bus": spec.bus,
                 "bus_mhz": spec.bus_hz / 1e6, "bus_framing": list(spec.bus_efficiency), "ohc_ms": spec.ohc_ms,
                 "clock_mhz": list(spec.mhz), "clock_source": spec.clock_source}
    if spec.core:
        cls = classes.fit(spec.core)
        out["class_keccak_per_clock"] = [cls.keccak.lo, cls.keccak.hi]
        out["class_other_per_clock"] = [cls.arith.lo, cls.arith.hi]
    if spec.sha256_bytes_per_ms:
        out |= {"placed_by": "SHA-256 rate", "sha256_ms_per_byte_profile": tpm2.mean("sha256_byte"),
                "sha256_compute_bytes_per_ms": spec.sha256_bytes_per_ms,
                "m4_equivalent_mhz": estimate.SHA256_M4_CYCLES_PER_BYTE * spec.sha256_bytes_per_ms / 1000.0,
                "placement_range": list(estimate.SHA_PLACEMENT), "placement_source": spec.sha256_source}
    elif spec.ecdsa_sign_ms:
        out |= {"placed_by": "ECDSA P-256 sign", "ecdsa_sign_ms": spec.ecdsa_sign_ms,
                "m4_equivalent_mhz": estimate.ECDSA_M4_SIGN_CYCLES / (spec.ecdsa_sign_ms * 1000.0)}
    else:
        out["placed_by"] = "core class x clock"
    unused = [f"{c} = {tpm2.mean(c):g} ms" for c in ("ecc256_sign", "rsa2048_dec") if c in tpm2]
    if unused and out["placed_by"] == "SHA-256 rate":
        out["not_used"] = (f"{', '.join(unused)} (profile): a TPM's ECC/RSA run on its public-key accelerator, so "
                           "the model places the core by SHA-256 only (estimate.speed)")
    out["notes"] = list(spec.notes)
    return out


def evidence_text(ev: dict) -> str:
    if ev["placed_by"] == "SHA-256 rate":
        return (f"SHA-256 {ev['sha256_ms_per_byte_profile']:.4g} ms/B (profile sha256_byte: wolfTPM's published classical "
                f"rate less the per-command overhead); less the bus, per compressed byte {ev['sha256_compute_bytes_per_ms']:.1f} B/ms = "
                f"{ev['m4_equivalent_mhz']:.1f} MHz of a Cortex-M4 at {estimate.SHA256_M4_CYCLES_PER_BYTE:g} cycles/B "
                f"(x{ev['placement_range'][0]:g}-x{ev['placement_range'][1]:g}); class {ev['core_class']}; "
                f"{ev['bus']} {ev['bus_mhz']:g} MHz; ohc {ev['ohc_ms']:.2f} ms")
    if ev["placed_by"] == "ECDSA P-256 sign":
        return f"ECDSA sign {ev['ecdsa_sign_ms']:g} ms = {ev['m4_equivalent_mhz']:.1f} MHz of a Cortex-M4"
    return f"class {ev['core_class']} at {ev['clock_mhz'][0]:g}-{ev['clock_mhz'][1]:g} MHz"


def implied_speed(profile: str, algorithm: str, call: str, published_ms: float, other_commands: int) -> float | None:
    """Diagnostic, never fed back: the Cortex-M4-equivalent MHz at which the model's unprotected work for this
    operation gives the published time (published less the per-command overheads, bus and wrapping the model
    charges). Set beside the placed speed it shows where a miss comes from: speed, or something per operation."""
    spec = blind_spec(profile)
    bare = replace(spec, tpm=False, bus="none", ohc_ms=0.0)
    compute = float(estimate.one(bare, algorithm, call, predict.CENTRAL, protection=False))
    whole = float(estimate.one(spec, algorithm, call, predict.CENTRAL, protection=False))
    published_compute = published_ms - other_commands * spec.ohc_ms - (whole - compute)
    if published_compute <= 0:
        return None
    return float(_general_mhz(spec)) * compute / published_compute


def _general_mhz(spec) -> float:
    """The placed Cortex-M4-equivalent speed on portable C (before the Keccak implementation's factor)."""
    s = estimate.central_speed(spec)
    return s.keccak_mhz if s.general_mhz is None else s.general_mhz


@functools.cache
def rows(profiles: tuple[str, ...] | None = None) -> tuple[dict, ...]:
    """Per published operation: the model-only prediction of the whole benchmark operation (the priced command
    plus the benchmark's other commands at the profile's per-command overhead) beside the published mean."""
    out = []
    for name in profiles if profiles is not None else PROFILES:
        if name not in registry.available():
            continue
        ev = evidence(name)
        others_ohc = ev["ohc_ms"]
        for pub in silicon.rows(name):
            p = model_only(name, pub.algorithm, pub.call)
            bare = model_only(name, pub.algorithm, pub.call, protection=False)
            extra = pub.other_commands * others_ohc
            median, low, high = p.median_ms + extra, p.low_ms + extra, p.high_ms + extra
            out.append({"profile": name, "algorithm": pub.algorithm, "operation": pub.operation, "command": pub.call,
                        "predicted_median_ms": median, "low_ms": low, "high_ms": high,
                        "unprotected_median_ms": bare.median_ms + extra, "published_ms": pub.mean_ms,
                        "error": median / pub.mean_ms - 1.0, "ratio": median / pub.mean_ms,
                        "inside": low <= pub.mean_ms <= high, "other_commands": pub.other_commands,
                        "implied_m4_mhz": implied_speed(name, pub.algorithm, pub.call, pub.mean_ms,
                                                        pub.other_commands),
                        "placed_m4_mhz": float(_general_mhz(blind_spec(name))),
                        "published_source": pub.source, "evidence": ev, "provenance": p.provenance,
                        "kind": HELD_OUT, "note": CAVEAT})
    return tuple(out)


def checks() -> list[Check]:
    out = []
    for r in rows():
        out.append(Check(r["profile"], device_class(r["profile"], "tpm2"), f"{r['algorithm']} {r['operation']}",
                         r["predicted_median_ms"], r["published_ms"], "ms", HELD_OUT, r["published_source"],
                         f"generic model, calibration bypassed; interval {r['low_ms']:.4g}-{r['high_ms']:.4g} "
                         f"{'covers' if r['inside'] else 'MISSES'} the published mean; {CAVEAT}",
                         low=r["low_ms"], high=r["high_ms"]))
    return out


def inconsistencies() -> list[Inconsistency]:
    return []


def summary(rs: tuple[dict, ...] | list[dict]) -> dict:
    """Median |error|, rows within 2x, coverage (the issue's bar for independent rows, for comparison)."""
    import statistics

    if not rs:
        return {"rows": 0}
    return {"rows": len(rs), "median_abs_error": statistics.median(abs(r["error"]) for r in rs),
            "median_error": statistics.median(r["error"] for r in rs),
            "within_2x": sum(max(r["ratio"], 1 / r["ratio"]) <= 2.0 for r in rs),
            "worst_ratio": max(max(r["ratio"], 1 / r["ratio"]) for r in rs),
            "coverage": sum(r["inside"] for r in rs) / len(rs)}


def text(rs: tuple[dict, ...] | list[dict]) -> str:
    """validate's section: one table per profile, the placement evidence, a summary line."""
    from trustlab.textable import table

    out = []
    for name in dict.fromkeys(r["profile"] for r in rs):
        mine = [r for r in rs if r["profile"] == name]
        ev = mine[0]["evidence"]
        out += [f"Held-out silicon: {name} priced by the generic model with its calibration bypassed "
                "(the model did not see these figures; the calibration rows above are separate)",
                f"placement evidence: {evidence_text(ev)}" + (f"; not used: {ev['not_used']}" if ev.get("not_used")
                                                              else ""),
                table([[f"{r['algorithm']} {r['operation']}", r["predicted_median_ms"], r["low_ms"], r["high_ms"],
                        r["unprotected_median_ms"], r["published_ms"], f"{r['error']:+.0%}",
                        f"x{r['ratio']:.2f}", "yes" if r["inside"] else "NO", r["implied_m4_mhz"]] for r in mine],
                      ["operation", "predicted median ms", "low ms", "high ms", "unprotected ms", "published ms",
                       "error", "model/published", "inside", "implied M4 MHz"]),
                f"implied M4 MHz (a diagnostic, not fed back): the Cortex-M4-equivalent speed at which the model's "
                f"unprotected work gives the published time; the model placed this chip at "
                f"{mine[0]['placed_m4_mhz']:.1f} MHz (central) for every operation"]
        s = summary(mine)
        out.append(f"{s['rows']} operations: median |error| {100 * s['median_abs_error']:.0f}% (median error "
                   f"{100 * s['median_error']:+.0f}%), {s['within_2x']}/{s['rows']} within 2x (worst x"
                   f"{s['worst_ratio']:.2f}), {100 * s['coverage']:.0f}% inside their 5-95% interval. "
                   f"Published: {mine[0]['published_source']}. Caveat: {CAVEAT.split('caveat: ', 1)[1]}.")
    return "\n".join(out)

"""An operation's time on a chip estimated from the chip's facts: work / speed x factors, every assumption a range.

The model behind :func:`.predict.price` (which also answers chips with published
figures, :mod:`.silicon`) and behind the TPM command pricing (:mod:`.cost`) and the
companion profiles (:mod:`.model`): the chip's Cortex-M4-equivalent speed (core class
x clock, or its own measured SHA-256 rate / ECDSA sign time), the implementation and
protection factors, the raw operations a priced operation runs (key creation adds the
FIPS 140-3 pairwise consistency test and wrapping), the bus, and the provenance text
naming every assumption. Nothing here knows about published chip figures, so the
layers above can all use it.
"""

from __future__ import annotations

import functools
import math
import zlib
from dataclasses import dataclass

import numpy as np

from trustlab.devices.tpm2.pqc_model import asm_speedup, builds, calibration, chips, classes, counts, frames, keccak_impl, lineage
from trustlab.devices.tpm2.pqc_model.chipspec import ChipSpec
from trustlab.devices.tpm2.pqc_model.params import check_operation, family

SHA256_M4_CYCLES_PER_BYTE = 86.0
SHA256_M4_SOURCE = ("MicroPython forum thread 587 ('sha256 and the cortex M4'): B-Con crypto-algorithms sha256.c "
                    "at 1950 KB/s on a 168 MHz STM32F4 (Cortex-M4) = 86 cycles/byte")
SHA_PLACEMENT = (0.66, 1.4)
"""How far a chip's SHA-256 code may be from B-Con's portable C per clock: down to an optimised C SHA-256
(wolfCrypt's, 56.6 cycles/byte on a Cortex-M4: 56.6 / 86 = 0.66), up to a hashing engine with command
overhead (1.4, an assumption)."""
SHA_PLACEMENT_SOURCE = ("low end: wolfCrypt's SHA-256 at 2.832 MB/s (2^20 bytes) on a 168 MHz NUCLEO-F446ZE Cortex-M4 = "
                        "56.6 cycles/byte (wolfSSL/wolfssl-examples pq/stm32/README.md benchmark), 0.66 of B-Con's 86; "
                        "high end x1.4: a hashing engine with command overhead (assumption)")
ECDSA_M4_SIGN_CYCLES = 7_856_436.0
ECDSA_M4_SOURCE = ("newAM/p256-cm4 README, 'Comparisons' (STM32WLE5, Cortex-M4): RustCrypto portable P-256 "
                   "ECDSA signing ~7,856,436 cycles")
ECDSA_SPREAD = (0.5, 2.0)
"""Portable P-256 implementations differ by about this factor either way (assumption)."""
IMPL_SLOW = 1.0
IMPL_SOURCE = ("implementation: portable C = 1 (the classes are fitted on portable C); hand-written assembly "
               "('optimized', or 'mixed' with portable parts): on a class with paired published C / assembly "
               "measurements (data/asm_pairs.toml: Cortex-M3 / SC300 from mupq/pqm3's clean and m3 code on one board) the "
               "non-Keccak work is divided by that class's measured speed-up (optimized: its range over the family's "
               "operations and parameter sets, centred on the operation's own; mixed: log-uniform from its fastest to 1), "
               "Keccak being the Keccak implementation's; elsewhere on cores that run pqm4's DSP assembly (cores.toml "
               "'assembly') log-uniform from pqm4's best assembly for the operation (pqm4 m4f/m4fspeed vs clean, "
               "Cortex-M4) to 1 on the whole operation; not stated ('unknown', the --chip default): portable C at the "
               "centre, the class's assembly as the fast end, on those classes; portable elsewhere (no published assembly "
               "speed-up for the class is in the model: chipspec.priced_implementation); how the code was built is the "
               "build factor's (builds.toml)")
IMPLEMENTATIONS = ("portable", "optimized", "mixed", "unknown")
WRAP_SHA256_BYTES = 512
WRAP_SOURCE = ("TPM 2.0 Library Part 1, 'Protected Storage': the private part is encrypted (AES-CFB) under a "
               "KDFa-derived key and integrity-protected by an HMAC; about 512 bytes of SHA-256 work (KDFa + HMAC "
               "blocks + the sensitive area) is an assumption")
PCT_SOURCE = ("FIPS 140-3 IG 10.3.A: a pairwise consistency test on every generated key pair (ML-DSA: sign + "
              "verify; ML-KEM: encapsulate + decapsulate)")
SECRET_OPS = {"ML-KEM": ("decapsulate", "keygen"), "ML-DSA": ("sign", "keygen")}


piecewise = builds.piecewise


@functools.cache
def impl_fast(algorithm: str, operation: str) -> float:
    """pqm4's fastest implementation of the operation over its 'clean' one (Cortex-M4 cycles)."""
    schemes = calibration.pqm4()["schemes"][algorithm]
    clean = schemes["clean"][operation]["cycles"]["AVG"]
    return min(f[operation]["cycles"]["AVG"] for f in schemes.values() if operation in f) / clean


@functools.cache
def plan(algorithm: str, operation: str) -> tuple[str, ...]:
    """The raw operations a priced operation runs: 'create' adds the pairwise consistency test."""
    if operation == "create":
        return ("keygen", "sign", "verify") if family(algorithm) == "ML-DSA" else ("keygen", "encapsulate", "decapsulate")
    if operation == "load":
        return ("keygen",)
    ops = classes.operations(operation)
    for op in ops:
        check_operation(algorithm, op)
    return ops


@functools.cache
def check(algorithm: str, operation: str) -> None:
    if operation not in ("create", "load"):
        for op in classes.operations(operation):
            check_operation(algorithm, op)
    else:
        check_operation(algorithm, "keygen")


@dataclass(frozen=True)
class Speed:
    keccak_mhz: float  # M4-equivalent MHz on Keccak-f[1600] (the calibration's cycles: pqm4's assembly Keccak)
    arith_mhz: float   # ... on the other counted units
    general_mhz: float | None = None  # ... on portable C hashing (SHA-256 for key wrapping); None: keccak_mhz


def clock_mhz(spec: ChipSpec, u_clock=0.5):
    """The chip's core clock at quantile ``u_clock`` of its range (log-uniform about the geometric middle): the
    one draw the core's speed and a Keccak engine's cycles (which run on the same clock) share."""
    lo, hi = spec.mhz
    return piecewise(lo, math.sqrt(lo * hi), hi, u_clock)


def speed(spec: ChipSpec, u_ratio: float = 0.5, u_clock: float = 0.5, u_place: float = 0.5,
          exclude: frozenset[str] = frozenset(), u_build: float = 0.5, u_source: float = 0.5,
          u_keccak: float = 0.5) -> Speed:
    """The chip's M4-equivalent speed at the given quantiles of its assumptions (0.5 = central).

    A speed from clock x class is divided by the build factor, Keccak's by the build's Keccak factor and
    the rest's by its other-units factor (the class is a benchmark build; the chip's code may be -Os, -O0
    or unknown: :mod:`.builds`) and, for a core class, by the measured
    between-source spread (:func:`.classes.source_spread`: a new chip is a new source). A speed placed
    by the chip's own measured rate already shows its firmware's build, so neither applies there.

    Keccak's speed is also divided by the factor of the chip's Keccak implementation (:mod:`.keccak_impl`: the
    classes are on a C Keccak basis, the calibration's cycles are pqm4's assembly), on every path: a placed
    speed is a general-C speed too (a SHA-256 or ECDSA rate does not show which Keccak the firmware links)."""
    slow_impl = keccak_impl.time_factor(spec.core or "secure-mcu", spec.keccak_impl, u_keccak)
    if spec.core is not None:
        cls = classes.fit(spec.core, exclude)
        k = piecewise(cls.keccak.lo, cls.keccak.mid, cls.keccak.hi, u_ratio)
        a = piecewise(cls.arith.lo, cls.arith.mid, cls.arith.hi, u_ratio)
    else:
        lo, hi = spec.per_clock or (1.0, 1.0)
        k = a = piecewise(lo, math.sqrt(lo * hi), hi, u_ratio)
    if spec.sha256_bytes_per_ms:
        placed = SHA256_M4_CYCLES_PER_BYTE * spec.sha256_bytes_per_ms / 1000.0
        placed *= piecewise(SHA_PLACEMENT[0], math.sqrt(SHA_PLACEMENT[0] * SHA_PLACEMENT[1]), SHA_PLACEMENT[1], u_place)
        return Speed(placed / slow_impl, placed * a / k, placed)
    if spec.ecdsa_sign_ms:
        placed = ECDSA_M4_SIGN_CYCLES / (spec.ecdsa_sign_ms * 1000.0)
        placed *= piecewise(ECDSA_SPREAD[0], 1.0, ECDSA_SPREAD[1], u_place)
        return Speed(placed / slow_impl, placed * a / k, placed)
    clock = clock_mhz(spec, u_clock)
    build_k, build_a = builds.units(spec.build)  # one build, so one quantile for both units
    slow_k, slow_a = build_k.central(u_build), build_a.central(u_build)
    if not keccak_impl.compiled(spec.core or "secure-mcu", spec.keccak_impl):  # assembly: flags do not move it
        slow_k = 1.0
    if spec.core is not None:
        spread = classes.source_spread(exclude, classes.group(spec.core)).draw(u_source, classes.fit(
            spec.core, exclude).sources)
        slow_k, slow_a = slow_k * spread, slow_a * spread
    return Speed(clock * k / (slow_k * slow_impl), clock * a / slow_a, clock * k / slow_k)


@functools.cache
def _runs_array(algorithm: str, operation: str) -> np.ndarray:
    return np.array(classes.run_cycles(algorithm, operation))


def counted_cycles(algorithm: str, operation: str, run=None):
    """(Keccak, other) Cortex-M4 'clean' cycles of one raw operation: the mean counted work, or counted run
    number(s) ``run`` (an index or an array of them)."""
    if run is None:
        return classes.m4_cycles(algorithm, operation)
    cycles = _runs_array(algorithm, operation)[run]
    return cycles[..., 0], cycles[..., 1]


@functools.cache
def _engine_units(algorithm: str, operation: str) -> np.ndarray:
    """(Keccak-f[1600] permutations, sponge calls) of every counted run of one raw operation."""
    perm = calibration.calibrate().keccak_cycles
    calls = [run.get("keccak_calls", 0) for run in counts.runs(algorithm, operation)]
    return np.array([(k / perm, c) for (k, _), c in zip(classes.run_cycles(algorithm, operation), calls)])


def engine_ms(spec: ChipSpec, algorithm: str, operation: str, u_engine, u_clock, run=None):
    """ms the core spends on the operation's Keccak when an engine runs it (:mod:`.keccak_engine`): the
    counted permutations and sponge calls at the engine's core cycles, over the core clock (the engine runs
    on it; the clock range's quantile ``u_clock`` is the one :func:`speed` draws)."""
    units = _engine_units(algorithm, operation)
    perms, calls = (units[:, 0].mean(), units[:, 1].mean()) if run is None else (units[run, 0], units[run, 1])
    e = spec.keccak_engine
    return (perms * e.per_permutation(u_engine) + calls * e.per_call(u_engine)) / (clock_mhz(spec, u_clock) * 1000.0)


def placed_compute_ms(spec: ChipSpec, algorithm: str, operation: str, s: Speed, run, impl, u: dict):
    """ms of one raw operation's counted work with the implementation factors ``impl`` = (on Keccak, on the rest):
    all on the core, or with a Keccak engine the Keccak units at the engine's rate and only the rest on the core
    (the implementation's assembly speed-up then applies to the core's part)."""
    impl_k, impl_o = impl
    keccak, other = counted_cycles(algorithm, operation, run)
    core_other = other / s.arith_mhz / 1000.0 * impl_o
    if spec.keccak_engine is None:
        return keccak / s.keccak_mhz / 1000.0 * impl_k + core_other
    return core_other + engine_ms(spec, algorithm, operation, u.get("engine", 0.5), u["clock"], run)


def impl_factor(spec: ChipSpec, algorithm: str, operation: str, u, exclude: frozenset[str] = frozenset()):
    """What the code's implementation multiplies the portable-C time by, as (on Keccak, on the rest) (see
    ``IMPL_SOURCE``): a class with paired C / assembly measurements (:mod:`.asm_speedup`, without the sources in
    ``exclude``) speeds up the rest only (its pairs link one Keccak on both sides); pqm4's Cortex-M4 factor is a
    whole-operation ratio, so it multiplies both."""
    kind = spec.implementation
    paired = asm_speedup.factor(spec.core, algorithm, operation, exclude) if spec.core is not None else None
    if paired is not None:
        fast = 1.0 / paired.hi
        if kind == "portable":
            return 1.0, 1.0
        if kind == "unknown":
            return 1.0, piecewise(fast, IMPL_SLOW, IMPL_SLOW, u)
        if kind == "mixed":
            return 1.0, piecewise(fast, math.sqrt(fast * IMPL_SLOW), IMPL_SLOW, u)
        return 1.0, piecewise(fast, 1.0 / paired.mid, 1.0 / paired.lo, u)
    fast = impl_fast(algorithm, operation)
    if spec.core is not None and not classes.runs_pqm4_assembly(spec.core):
        return 1.0, 1.0  # no sourced speed-up here (chipspec.priced_implementation prices such code as unknown)
    if kind == "unknown":
        kind = "unknown-asm"
    if kind == "portable":
        return 1.0, 1.0
    if kind == "unknown-asm":
        f = piecewise(fast, IMPL_SLOW, IMPL_SLOW, u)
    else:
        f = piecewise(fast, math.sqrt(fast * IMPL_SLOW), IMPL_SLOW, u)
    return f, f


def protection_factor(spec: ChipSpec, algorithm: str, operation: str, u: float, protection: bool) -> float:
    if not (protection and spec.certified):
        return 1.0
    cm = chips.countermeasure(family(algorithm), operation)
    if cm is None:
        return 1.0
    lo, hi = cm[0]
    return piecewise(lo, math.sqrt(lo * hi), hi, u)


def _bus_bytes(algorithm: str, operation: str) -> int:
    if operation in ("create", "load", "keygen"):
        create, load = frames.keygen_frames(algorithm)
        f = load if operation == "load" else create
        return f.in_bytes + f.out_bytes
    total = 0
    for op in classes.operations(operation):
        f = frames.use_frames(algorithm, op)
        total += f.in_bytes + f.out_bytes
    return total


def _commands(operation: str) -> int:
    return len(classes.operations(operation)) if operation not in ("create", "load") else 1


def lineage_speed(spec: ChipSpec, algorithm: str, s: Speed, u) -> Speed:
    """The speed on ``algorithm`` of the chip's code base (:mod:`.lineage`): the classes are on reference-lineage C,
    so each unit's speed is divided by its lineage factor at quantile ``u``; on every path (a SHA-256 or ECDSA rate
    does not show which PQC code the firmware runs), not for hand-written assembly (no C lineage). The general
    (SHA-256) speed is no PQC code's."""
    if spec.implementation == "optimized":
        return s
    fam = family(algorithm)
    fk, fa = lineage.time_factors(lineage.for_family(spec.lineage, fam), fam, spec.core or "secure-mcu", u)
    return Speed(s.keccak_mhz / fk, s.arith_mhz / fa, s.keccak_mhz if s.general_mhz is None else s.general_mhz)


def one(spec: ChipSpec, algorithm: str, operation: str, u: dict, *, protection: bool = True,
        exclude: frozenset[str] = frozenset(), rng: np.random.Generator | None = None, n: int = 1):
    """ms of one operation with every assumption at quantile ``u[name]`` (0.5 = central; numpy arrays of
    ``n`` draws allowed); with ``rng`` each raw operation's work is a drawn counted run (ML-DSA signing's
    rejection loop), else the mean work."""
    s = lineage_speed(spec, algorithm, speed(spec, u["ratio"], u["clock"], u["place"], exclude, u.get("build", 0.5),
                                             u.get("source", 0.5), u.get("keccak", 0.5)), u.get("lineage", 0.5))
    total = 0.0
    for op in plan(algorithm, operation):
        impl = impl_factor(spec, algorithm, op, u["impl"], exclude)
        run = rng.integers(len(classes.run_cycles(algorithm, op)), size=n) if rng is not None else None
        total = total + (placed_compute_ms(spec, algorithm, op, s, run, impl, u)
                         * protection_factor(spec, algorithm, op, u["protect"], protection))
    if spec.timer is not None:  # what the reported figure counts per core cycle (validation: rdtsc)
        total = total * spec.timer.central(u.get("timer", 0.5))
    if spec.tpm and operation in ("create", "load"):
        per_byte = (1.0 / spec.sha256_bytes_per_ms if spec.sha256_bytes_per_ms
                    else SHA256_M4_CYCLES_PER_BYTE / ((s.keccak_mhz if s.general_mhz is None else s.general_mhz)
                                                      * 1000.0))
        total += WRAP_SHA256_BYTES * per_byte
    if spec.tpm:
        total += spec.ohc_ms * _commands(operation)
        if spec.bus not in ("none", "memory") and spec.bus_hz > 0:
            bits = 8.0 * 68.0 / 64.0 if spec.bus == "spi" else 9.0
            lo, hi = spec.bus_efficiency
            total = total + _bus_bytes(algorithm, operation) * bits / spec.bus_hz * 1000.0 * piecewise(
                lo, math.sqrt(lo * hi), hi, u["bus"])
    return total


def provenance(spec: ChipSpec, algorithm: str, operation: str, protection: bool,
               exclude: frozenset[str] = frozenset()) -> str:
    """Every assumption behind a price, with its source and range."""
    parts = [f"work: our counted units of {algorithm} {operation} x {calibration.pqm4_source('clean')}"]
    if spec.core:
        cls = classes.fit(spec.core, exclude)
        parts.append(f"core class {cls.name} ({cls.label}): work per clock vs Cortex-M4 Keccak {cls.keccak.lo:.2f}-"
                     f"{cls.keccak.hi:.2f}, other {cls.arith.lo:.2f}-{cls.arith.hi:.2f}; {cls.basis}")
    elif spec.per_clock:
        parts.append(f"work per clock vs Cortex-M4 {spec.per_clock[0]:g}-{spec.per_clock[1]:g} (chips.toml class)")
    if spec.sha256_bytes_per_ms:
        placed = SHA256_M4_CYCLES_PER_BYTE * spec.sha256_bytes_per_ms / 1000.0
        parts.append(f"speed placed by the chip's own SHA-256 rate ({spec.sha256_source}) = {placed:.1f} MHz of a "
                     f"Cortex-M4 at {SHA256_M4_SOURCE}, x{SHA_PLACEMENT[0]:g}-x{SHA_PLACEMENT[1]:g} ({SHA_PLACEMENT_SOURCE}), "
                     "not clamped to the class")
    elif spec.ecdsa_sign_ms:
        parts.append(f"software crypto: speed placed by the measured ECDSA P-256 sign ({spec.ecdsa_sign_ms:g} ms) "
                     f"against {ECDSA_M4_SOURCE}, x{ECDSA_SPREAD[0]:g}-x{ECDSA_SPREAD[1]:g}")
    else:
        parts.append(f"clock {spec.mhz[0]:g}-{spec.mhz[1]:g} MHz ({spec.clock_source})")
        parts.append(f"build: {builds.text(spec.build)}")
        if spec.core:
            parts.append(classes.source_spread(exclude, classes.group(spec.core)).text(
                classes.fit(spec.core, exclude).sources))
    if spec.timer is not None and (spec.timer.lo, spec.timer.hi) != (1.0, 1.0):
        parts.append(f"timer: {spec.timer.text()}")
    parts += list(spec.notes)
    if spec.keccak_engine is not None:
        parts.append(spec.keccak_engine.text())
    else:
        parts.append(keccak_impl.text(spec.core or "secure-mcu", spec.keccak_impl))
    parts.append(f"implementation {spec.implementation}; {IMPL_SOURCE}")
    if spec.core is not None and spec.implementation != "portable":
        paired = [asm_speedup.factor(spec.core, algorithm, op, exclude) for op in plan(algorithm, operation)]
        parts += list(dict.fromkeys(p.text for p in paired if p is not None))
    if spec.implementation != "optimized":
        fam = family(algorithm)
        parts.append(lineage.text(lineage.for_family(spec.lineage, fam), fam, spec.core or "secure-mcu"))
    if spec.certified and protection:
        fam = family(algorithm)
        for op in SECRET_OPS[fam]:
            cm = chips.countermeasure(fam, op)
            if cm:
                parts.append(f"protection of {fam} {op} x{cm[0][0]:g}-x{cm[0][1]:g} ({cm[1]})")
    elif spec.certified:
        parts.append("protection off")
    if operation == "create":
        parts.append(f"key creation = keygen + pairwise consistency test ({PCT_SOURCE}) + wrapping ({WRAP_SOURCE})")
    if spec.tpm and spec.bus not in ("none", "memory"):
        parts.append(f"bus {spec.bus} at {spec.bus_hz / 1e6:g} MHz, framing factor "
                     f"{spec.bus_efficiency[0]:g}-{spec.bus_efficiency[1]:g}")
    return "; ".join(parts)


def central_speed(spec: ChipSpec) -> Speed:
    return speed(spec)


QUANTILE_DRAWS = 8000


def speed_quantiles(spec: ChipSpec, n: int) -> list[Speed]:
    """n quantiles of the chip's speed, for the companion profiles: every assumption drawn independently
    (as :func:`.predict.price` draws them), the joint (Keccak, other) draws ranked by their geometric mean,
    and the n evenly spaced ones taken. Drawing every assumption at one shared quantile instead would
    multiply extremes, and pair a fast core with a slow build (the build and spread factors slow a chip
    as their quantile rises, the ratio and clock speed it up)."""
    rng = np.random.default_rng(zlib.crc32(f"speed-quantiles|{spec.name}".encode()))
    u = {k: rng.random(QUANTILE_DRAWS) for k in ("ratio", "clock", "place", "build", "source", "keccak")}
    s = speed(spec, u["ratio"], u["clock"], u["place"], u_build=u["build"], u_source=u["source"],
              u_keccak=u["keccak"])
    k = np.broadcast_to(np.asarray(s.keccak_mhz, dtype=float), (QUANTILE_DRAWS,))
    a = np.broadcast_to(np.asarray(s.arith_mhz, dtype=float), (QUANTILE_DRAWS,))
    order = np.argsort(np.log(k) + np.log(a), kind="stable")
    picks = order[((np.arange(n) + 0.5) / n * QUANTILE_DRAWS).astype(int)]
    return [Speed(float(k[i]), float(a[i])) for i in picks]

"""A chip's post-quantum unit costs as a trustlab profile (family ``pqc``), with provenance and spread.

For a TPM 2.0 profile this builds the companion profile ``<name>-pqc``:

* ``pqc_keccak_f1600`` and the arithmetic units ``pqc_{kem,dsa}_{transform,basemul,poly}`` (ms per
  unit) = Cortex-M4 cycles per unit (:mod:`.calibration`, from pqm4) / the chip's
  Cortex-M4-equivalent speed (:func:`.estimate.speed`, the same speed ``predict.price`` uses): the chip's
  own measured SHA-256 rate (the tpm2 profile's ``sha256_byte`` less the bus time per byte) at
  86 Cortex-M4 cycles/byte, not clamped to any class range, with the core class's Keccak : other
  ratio for the arithmetic; software-crypto TPMs by their measured ECDSA sign; chips without a
  measured rate by clock x the core class's work per clock (:mod:`.classes`).
* ``pqc_bus_byte`` (ms per byte on the chip's bus): bits per byte / bus clock x the
  framing and polling factor of the bus protocol.

Every spread is 32 quantiles; the compute units share one speed quantile per draw
(a fast chip is fast at everything), the bus is independent. Protection factors, key creation's
consistency test and wrapping are the pricing's (:mod:`.cost`), not the unit costs'.
"""

from __future__ import annotations

import statistics

from trustlab.devices.tpm2.pqc_model import calibration, chips
from trustlab.timing.profile import Component, Profile, Provenance

COMPUTE_UNITS = ("transform", "basemul", "poly")
TPM2_INPUTS = ("sha256_byte", "ecc256_sign", "ohc")
"""The tpm2 profile components a build reads (SHA-256 rate; ECDSA sign for software-crypto TPMs; overhead)."""
FAMILY_KEYS = {"ML-KEM": "kem", "ML-DSA": "dsa"}


def companion_name(tpm2_name: str) -> str:
    return f"{tpm2_name}-pqc"


def speed_note(spec) -> str:
    """How the chip's speed was found (the provenance the unit costs carry)."""
    from trustlab.devices.tpm2.pqc_model import estimate

    return estimate.provenance(spec, "ML-KEM-768", "encapsulate", protection=False).split("; ", 1)[1]


def bus_ms_per_byte(chip: chips.Chip) -> list[float]:
    if chip.bus_hz <= 0:
        return [0.0] * chips.N_QUANTILES
    bits = 8.0 * 68.0 / 64.0 if chip.bus == "spi" else 9.0
    return [bits / chip.bus_hz * 1000.0 * f for f in chips.log_uniform_quantiles(*chip.bus_efficiency)]


def _component(name: str, samples: list[float], unit: str, source: str, table: str, note: str) -> Component:
    samples = [float(f"{s:.6g}") for s in samples]
    spread = () if len(set(samples)) == 1 else tuple(samples)
    return Component(name, statistics.fmean(samples), unit, samples=spread,
                     provenance=Provenance(source=source, table=table, note=note))


def build(tpm2: Profile, impl: str = "clean") -> Profile:
    """The ``pqc`` companion profile of a TPM 2.0 profile: unit costs at 32 comonotonic speed quantiles."""
    from trustlab.devices.tpm2.pqc_model import chipspec, estimate

    chip = chips.chip_for(tpm2.name)
    cal = calibration.calibrate(impl)
    spec = chipspec.for_profile(tpm2)
    speeds = estimate.speed_quantiles(spec, chips.N_QUANTILES)
    mid = estimate.central_speed(spec)
    note = f"{speed_note(spec)}; M4-equivalent speed median Keccak {mid.keccak_mhz:.1f} MHz, other {mid.arith_mhz:.1f} MHz"
    pq_src = calibration.pqm4_source(impl)
    comps: dict[str, Component] = {}
    comps["pqc_keccak_f1600"] = _component(
        "pqc_keccak_f1600", [cal.keccak_cycles / (s.keccak_mhz * 1000.0) for s in speeds], "op", pq_src,
        "Hashing Evaluation x Speed Evaluation, with our Keccak-f[1600] counts",
        f"{cal.keccak_cycles:.0f} Cortex-M4 cycles per permutation (median over the 18 pqm4 rows); {note}")
    for family, key in FAMILY_KEYS.items():
        for unit in COMPUTE_UNITS:
            cycles = cal.arith[family][unit]
            name = f"pqc_{key}_{unit}"
            comps[name] = _component(
                name, [cycles / (s.arith_mhz * 1000.0) for s in speeds], "op", pq_src,
                f"Speed Evaluation non-hashing cycles, NNLS fit on our counts ({family})",
                f"{cycles:.0f} Cortex-M4 cycles per {unit} ({'+'.join(calibration.ARITH_UNITS[unit])}); {note}")
    comps["pqc_bus_byte"] = _component(
        "pqc_bus_byte", bus_ms_per_byte(chip), "byte", chip.bus_source,
        f"{chip.bus} at {chip.bus_hz / 1e6:g} MHz" if chip.bus_hz else chip.bus,
        f"framing/polling factor {chip.bus_efficiency[0]:g}-{chip.bus_efficiency[1]:g}: {chip.bus_efficiency_source}")
    return Profile(name=companion_name(tpm2.name), components=comps, family="pqc", version="2",
                   description=f"post-quantum unit costs for {tpm2.name} ({chip.label})",
                   provenance=Provenance(source="trustlab pqc_model (tools/build_pqc_profiles.py)",
                                         table=f"companion of tpm2 profile {tpm2.name}",
                                         note=f"chip facts: pqc_model/data/chips.toml entry '{chip.prefix or 'default'}'"))

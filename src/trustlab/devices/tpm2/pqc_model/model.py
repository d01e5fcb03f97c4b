"""A chip's post-quantum unit costs as a trustlab profile (family ``pqc``), with provenance and spread.

For a TPM 2.0 profile this builds the companion profile ``<name>-pqc``:

* ``pqc_keccak_f1600`` and the arithmetic units ``pqc_{kem,dsa}_{transform,basemul,poly}`` (ms per
  unit) = Cortex-M4 cycles per unit (:mod:`.calibration`, from pqm4) / the chip's
  Cortex-M4-equivalent speed. The speed is clock x work-per-clock of the chip's
  processor class (:mod:`.chips`; vendor figures where public, stated ranges where not).
  Keccak is then *placed* by the chip's measured SHA-256 rate (the tpm2 profile's
  ``sha256_byte`` less the bus time per byte): its speed is moved half-way (in log scale)
  toward the speed at which a Cortex-M4 hashing SHA-256 in software (86 cycles/byte) would
  reach the measured rate, kept within the class's range.
* ``pqc_bus_byte`` (ms per byte on the chip's bus): bits per byte / bus clock x the
  framing and polling factor of the bus protocol.

Every spread is 32 quantiles; the compute units share one speed quantile per draw
(a fast chip is fast at everything), the bus is independent.
"""

from __future__ import annotations

import math
import statistics

from trustlab.devices.tpm2.pqc_model import calibration, chips
from trustlab.timing.profile import Component, Profile, Provenance

SHA256_M4_CYCLES_PER_BYTE = 86.0
SHA256_M4_SOURCE = ("MicroPython forum thread 587 ('sha256 and the cortex M4'): B-Con crypto-algorithms sha256.c "
                    "at 1950 KB/s on a 168 MHz STM32F4 (Cortex-M4) = 86 cycles/byte")
ECDSA_M4_SIGN_CYCLES = 7_856_436.0
ECDSA_M4_SOURCE = ("newAM/p256-cm4 README, 'Comparisons' (STM32WLE5, Cortex-M4): RustCrypto portable P-256 "
                   "ECDSA signing ~7,856,436 cycles")
ECDSA_SPREAD = (0.5, 2.0)
"""Portable P-256 implementations differ by about this factor either way (assumption)."""
COMPUTE_UNITS = ("transform", "basemul", "poly")
TPM2_INPUTS = ("sha256_byte", "ecc256_sign")
"""The tpm2 profile components a build reads (SHA-256 rate; ECDSA sign for software-crypto TPMs)."""
FAMILY_KEYS = {"ML-KEM": "kem", "ML-DSA": "dsa"}


def companion_name(tpm2_name: str) -> str:
    return f"{tpm2_name}-pqc"


def speed_quantiles(chip: chips.Chip, tpm2: Profile | None = None) -> tuple[list[float], str]:
    """Cortex-M4-equivalent MHz of the chip's processor (quantiles), and how it was found.

    A TPM whose crypto runs in software on its core (firmware and software TPMs) is placed
    by its own measured ECDSA P-256 signing time against portable P-256 code on a Cortex-M4:
    that is the speed its firmware's crypto actually reaches, which the core's clock
    overstates (the OP-TEE fTPM signs in 45 ms on a 2.2 GHz Cortex-A78AE).
    """
    cpu = (f"{chip.cpu} ({chip.cpu_source}); clock {chip.clock_mhz[0]:g}-{chip.clock_mhz[1]:g} MHz "
           f"({chip.clock_source}); work per clock vs Cortex-M4 {chip.per_clock[0]:g}-{chip.per_clock[1]:g} "
           f"({chip.per_clock_source})")
    if chip.software_crypto and tpm2 is not None and "ecc256_sign" in tpm2 and tpm2.mean("ecc256_sign") > 0:
        placed = ECDSA_M4_SIGN_CYCLES / (tpm2.mean("ecc256_sign") * 1000.0)
        qs = [placed * f for f in chips.log_uniform_quantiles(*ECDSA_SPREAD)]
        return qs, (f"software crypto: placed by the measured ECDSA P-256 sign ({tpm2.name} ecc256_sign = "
                    f"{tpm2.mean('ecc256_sign'):g} ms = {placed:.0f} MHz Cortex-M4 running portable P-256 code, "
                    f"{ECDSA_M4_SOURCE}; spread x{ECDSA_SPREAD[0]:g}-x{ECDSA_SPREAD[1]:g}); core: {cpu}")
    qs = chips.product_quantiles(chip.clock_mhz, chip.per_clock)
    return qs, cpu


def hash_placed_mhz(tpm2: Profile, chip: chips.Chip) -> float | None:
    """The M4-equivalent MHz at which software SHA-256 would match the chip's measured rate.

    The measured per-byte time includes moving the byte over the bus (wolfTPM and
    JCAlgTest time the command from the host), so the chip's median bus time per
    byte is taken off first. None if the profile has no separable SHA-256 rate.
    """
    if "sha256_byte" not in tpm2 or tpm2.mean("sha256_byte") <= 0:
        return None
    compute = tpm2.mean("sha256_byte") - statistics.median(bus_ms_per_byte(chip))
    if compute <= 0:
        return None
    return SHA256_M4_CYCLES_PER_BYTE / (compute * 1000.0)


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
    """The ``pqc`` companion profile of a TPM 2.0 profile."""
    chip = chips.chip_for(tpm2.name)
    cal = calibration.calibrate(impl)
    speed, how = speed_quantiles(chip, tpm2)
    speed_mid = statistics.median(speed)
    speed_note = f"{how}; M4-equivalent speed median {speed_mid:.0f} MHz"
    placed = hash_placed_mhz(tpm2, chip)
    if placed is not None:  # a chip is no slower or faster than its class allows
        placed = min(max(placed, min(speed)), max(speed))
    if placed is None:
        keccak_speed = speed
        hash_note = f"{tpm2.name} has no separable SHA-256 rate (sha256_byte = 0 or absent): Keccak priced on the CPU estimate alone"
    else:
        shift = math.sqrt(placed / speed_mid)
        keccak_speed = [s * shift for s in speed]
        hash_note = (f"placed by the measured SHA-256 rate ({tpm2.name} sha256_byte = {tpm2.mean('sha256_byte'):g} ms/B "
                     f"= software SHA-256 on a {placed:.0f} MHz Cortex-M4, {SHA256_M4_SOURCE}): speed moved half-way "
                     f"(log scale) from {speed_mid:.0f} to {placed:.0f} MHz (bus time per byte taken off the measured rate; "
                     f"placement kept within the class range)")
    pq_src = calibration.pqm4_source(impl)
    comps: dict[str, Component] = {}
    comps["pqc_keccak_f1600"] = _component(
        "pqc_keccak_f1600", [cal.keccak_cycles / (s * 1000.0) for s in keccak_speed], "op", pq_src,
        "Hashing Evaluation x Speed Evaluation, with our Keccak-f[1600] counts",
        f"{cal.keccak_cycles:.0f} Cortex-M4 cycles per permutation (median over the 18 pqm4 rows); {hash_note}; {speed_note}")
    for family, key in FAMILY_KEYS.items():
        for unit in COMPUTE_UNITS:
            cycles = cal.arith[family][unit]
            name = f"pqc_{key}_{unit}"
            comps[name] = _component(
                name, [cycles / (s * 1000.0) for s in speed], "op", pq_src,
                f"Speed Evaluation non-hashing cycles, NNLS fit on our counts ({family})",
                f"{cycles:.0f} Cortex-M4 cycles per {unit} ({'+'.join(calibration.ARITH_UNITS[unit])}); {speed_note}")
    comps["pqc_bus_byte"] = _component(
        "pqc_bus_byte", bus_ms_per_byte(chip), "byte", chip.bus_source,
        f"{chip.bus} at {chip.bus_hz / 1e6:g} MHz" if chip.bus_hz else chip.bus,
        f"framing/polling factor {chip.bus_efficiency[0]:g}-{chip.bus_efficiency[1]:g}: {chip.bus_efficiency_source}")
    return Profile(name=companion_name(tpm2.name), components=comps, family="pqc", version="1",
                   description=f"post-quantum unit costs for {tpm2.name} ({chip.label})",
                   provenance=Provenance(source="trustlab pqc_model (tools/build_pqc_profiles.py)",
                                         table=f"companion of tpm2 profile {tpm2.name}",
                                         note=f"chip facts: pqc_model/data/chips.toml entry '{chip.prefix or 'default'}'"))

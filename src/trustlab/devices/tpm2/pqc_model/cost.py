"""The price of one post-quantum TPM command on a chip: component -> ms.

This is the pricing API the TPM 2.0 PQC command handlers call
(``trustlab.devices.tpm2.pqc``). One command's cost is

* ``ohc``: the chip's per-command overhead, from its tpm2 profile;
* ``pqc_keccak`` + ``pqc_arith``: the operation's counted units (:mod:`.counts`, one
  counted run drawn per call, so ML-DSA signing keeps its rejection-loop spread)
  priced with the chip's unit costs (the ``<name>-pqc`` companion profile, :mod:`.model`;
  one speed quantile drawn per call);
* ``pqc_bus``: the command and response bytes over the chip's bus.

Messages longer than the counted one (32 bytes, a digest) add the Keccak
permutations of absorbing the extra bytes.
"""

from __future__ import annotations

import functools
import math
import random

from trustlab.devices.tpm2.pqc_model import calibration, chips, chipspec, counts, estimate, frames, model, silicon
from trustlab.devices.tpm2.pqc_model.params import MLDSAParams, check_operation
from trustlab.errors import TrustlabError
from trustlab.timing import registry
from trustlab.timing.profile import Component, Profile

SHAKE256_RATE = 136
FRAME_OVERHEAD = 64
"""Bytes of a sign/verify command frame that are not message (header, handles, auth area, sizes), taken
off ``in_bytes`` before charging extra message hashing."""


@functools.cache
def _companion_cached(name: str) -> Profile | None:
    shipped = model.companion_name(name)
    return registry.load(shipped) if shipped in registry.available() else None


def unit_costs(profile: Profile) -> Profile:
    """The chip's ``pqc`` companion profile: the shipped one, or built now for an unshipped tpm2 profile."""
    if profile.family != "tpm2":
        raise TrustlabError(f"profile {profile.name!r} is a {profile.family!r} profile; PQC pricing needs a tpm2 profile")
    return _companion_cached(profile.name) or _built(profile)


_BUILT: dict[tuple, Profile] = {}


def _built(profile: Profile) -> Profile:
    """Build a companion profile, once per name and the tpm2 figures the build reads."""
    key = (profile.name,) + tuple(profile.mean(c) if c in profile else None for c in model.TPM2_INPUTS)
    if key not in _BUILT:
        _BUILT[key] = model.build(profile)
    return _BUILT[key]


def _pick(c: Component, index: int | None, rng: random.Random | None) -> float:
    if index is not None and c.samples:
        return c.samples[index % len(c.samples)]
    if rng is not None and c.sd:
        return max(0.0, rng.gauss(c.mean, c.sd))
    return c.mean


@functools.cache
def extra_message_permutations(algorithm: str, operation: str, in_bytes: int) -> int:
    """Keccak permutations for message bytes beyond the counted 32-byte message (sign/verify only)."""
    p = check_operation(algorithm, operation)
    if not isinstance(p, MLDSAParams) or operation == "keygen":
        return 0
    message = max(0, in_bytes - FRAME_OVERHEAD - (p.sig_bytes if operation == "verify" else 0))
    counted = counts.message_bytes()
    absorbed = 64 + 2 + message  # mu = H(tr || M'), M' = 0 || |ctx| || M
    return max(0, math.ceil((absorbed + 1) / SHAKE256_RATE) - math.ceil((64 + 2 + counted + 1) / SHAKE256_RATE))


def compute_ms(pqc: Profile, algorithm: str, unit_counts: dict[str, float], index: int | None) -> dict[str, float]:
    """Keccak and arithmetic milliseconds of these counts at speed quantile ``index`` (None = means)."""
    regs = calibration.regressors(unit_counts)
    keccak, arith = _unit_ms(pqc, algorithm, index, unit_counts.get("keccak_f1600", 0),
                             tuple(regs[unit] for unit in model.COMPUTE_UNITS))
    return {"pqc_keccak": keccak, "pqc_arith": arith}


def _unit_ms(pqc: Profile, algorithm: str, index: int | None, keccak_count: float,
             regs: tuple[float, ...]) -> tuple[float, float]:
    """(Keccak ms, arithmetic ms): ``keccak_count`` permutations and the regressors ``regs`` (model.COMPUTE_UNITS
    order) at the chip's unit costs of quantile ``index``, summed in the same order as always."""
    keccak_unit, arith_units = _unit_picks(pqc, calibration.family_of(algorithm), index)
    return keccak_unit * keccak_count, sum(p * r for p, r in zip(arith_units, regs))


_HELD: dict[tuple[int, int], tuple[Profile, Profile, dict]] = {}


def _held(profile: Profile, pqc: Profile) -> dict:
    """Figures computed once per (tpm2 profile, companion profile) pair, held with the two profiles (so their
    ids stay their own while the figures live)."""
    held = _HELD.get((id(profile), id(pqc)))
    if held is None or held[0] is not profile or held[1] is not pqc:
        held = _HELD[(id(profile), id(pqc))] = (profile, pqc, {})
    return held[2]


_PICKS: dict[int, tuple[Profile, dict]] = {}


def _unit_picks(pqc: Profile, family: str, index: int | None) -> tuple[float, tuple[float, ...]]:
    """The chip's Keccak and arithmetic unit costs at quantile ``index``, read once per companion profile
    (held here with the profile, so its id stays its own)."""
    held = _PICKS.get(id(pqc))
    if held is None or held[0] is not pqc:
        held = _PICKS[id(pqc)] = (pqc, {})
    memo = held[1]
    got = memo.get((family, index))
    if got is None:
        key = model.FAMILY_KEYS[family]
        got = memo[(family, index)] = (_pick(pqc["pqc_keccak_f1600"], index, None),
                                       tuple(_pick(pqc[f"pqc_{key}_{unit}"], index, None)
                                             for unit in model.COMPUTE_UNITS))
    return got


@functools.cache
def _run_units(algorithm: str, op: str, run: int | None, extra: int | None) -> tuple[float, tuple[float, ...]]:
    """(Keccak permutations, regressors) of counted run ``run`` (None = the mean counts) plus ``extra``
    permutations of message: pure in its arguments, so computed once per run."""
    unit_counts = dict(counts.runs(algorithm, op)[run] if run is not None else counts.mean(algorithm, op))
    if extra is not None:
        unit_counts["keccak_f1600"] = unit_counts.get("keccak_f1600", 0) + extra
    regs = calibration.regressors(unit_counts)
    return unit_counts.get("keccak_f1600", 0), tuple(regs[unit] for unit in model.COMPUTE_UNITS)


def operation_cost(profile: Profile, algorithm: str, operation: str, *, in_bytes: int, out_bytes: int,
                   rng: random.Random | None = None, protection: bool = True) -> dict[str, float]:
    """What one whole TPM command doing ``operation`` with ``algorithm`` costs on ``profile``'s chip.

    ``operation``: keygen, sign, verify, encapsulate, decapsulate (the bare operation), ``create``
    (key creation: keygen + the FIPS 140-3 pairwise consistency test + wrapping the private part)
    or ``load`` (the seed expanded again + unwrapping). On a certified chip (chips.toml) secret-key
    operations carry their published protection factor unless ``protection`` is off. A profile with
    published 1.85 figures (:mod:`.silicon`) answers at them. The components are the command's entire
    cost (``ohc`` included: a caller adds nothing): ``ohc``, ``pqc_keccak``, ``pqc_arith``,
    ``pqc_wrap``, ``pqc_bus``. With ``rng`` the counted runs, the speed quantile, the protection factor
    and the bus factor are drawn; without, means.
    """
    estimate.check(algorithm, operation)
    if in_bytes < 0 or out_bytes < 0:
        raise TrustlabError(f"in_bytes and out_bytes must not be negative (got {in_bytes}, {out_bytes})")
    pqc = unit_costs(profile)
    calibrated = silicon.for_operation(profile.name, algorithm, operation) if protection else None
    n = len(pqc["pqc_keccak_f1600"].samples) or 1
    index = rng.randrange(n) if rng is not None and calibrated is None else None
    u_protect = rng.random() if rng is not None and calibrated is None else 0.5
    compute = _compute(profile, pqc, algorithm, operation, in_bytes, rng, index, u_protect, protection)
    bus = pqc["pqc_bus_byte"]
    bus_index = rng.randrange(len(bus.samples) or 1) if rng is not None else None
    cost = {"ohc": _pick(profile["ohc"], None, rng) if "ohc" in profile else 0.0}
    if calibrated is not None:
        memo = _held(profile, pqc)
        key = ("scale", algorithm, operation, in_bytes, out_bytes, calibrated)
        scale = memo.get(key)
        if scale is None:  # a pure function of the arguments: the same for every draw
            scale = memo[key] = _calibration_scale(profile, pqc, algorithm, operation, in_bytes, out_bytes,
                                                   *calibrated)
        compute = {k: v * scale for k, v in compute.items()}
    cost.update(compute)
    cost["pqc_bus"] = (in_bytes + out_bytes) * _pick(bus, bus_index, None)
    return {k: float(v) for k, v in cost.items()}  # plain floats: numpy scalars leak np.bool_ into traces


def _compute(profile: Profile, pqc: Profile, algorithm: str, operation: str, in_bytes: int,
             rng: random.Random | None, index: int | None, u_protect: float, protection: bool) -> dict[str, float]:
    """Keccak, arithmetic and wrapping ms of the operation's raw operations (protection applied)."""
    spec = _protection_spec(profile.name)
    out = {"pqc_keccak": 0.0, "pqc_arith": 0.0, "pqc_wrap": 0.0}
    for op in estimate.plan(algorithm, operation):
        # one counted run drawn exactly as counts.draw draws it (the same generator call)
        run = rng.randrange(len(counts.runs(algorithm, op))) if rng is not None else None
        # the command's own message (the PCT signs a fixed one)
        extra = extra_message_permutations(algorithm, op, in_bytes) if op == operation else None
        keccak_count, regs = _run_units(algorithm, op, run, extra)
        factor = estimate.protection_factor(spec, algorithm, op, u_protect, protection)
        keccak, arith = _unit_ms(pqc, algorithm, index, keccak_count, regs)
        out["pqc_keccak"] += keccak * factor
        out["pqc_arith"] += arith * factor
    if operation in ("create", "load"):
        out["pqc_wrap"] = estimate.WRAP_SHA256_BYTES * _sha256_ms_per_byte(profile, pqc)
    return out


@functools.cache
def _protection_spec(name: str) -> chipspec.ChipSpec:
    """What the protection factor needs of the profile's chip (its chips.toml entry), once per profile."""
    chip = chips.chip_for(name)
    return chipspec.ChipSpec(name=name, core=chip.core, mhz=chip.clock_mhz, certified=chip.certified)


def _sha256_ms_per_byte(profile: Profile, pqc: Profile) -> float:
    """The chip's SHA-256 compute time per byte: its measured rate less the bus, else software SHA-256
    at the speed its Keccak cost implies."""
    bus = pqc.mean("pqc_bus_byte") if "pqc_bus_byte" in pqc else 0.0
    if "sha256_byte" in profile and profile.mean("sha256_byte") - bus > 0:
        return profile.mean("sha256_byte") - bus
    keccak_m4 = calibration.calibrate().keccak_cycles
    return estimate.SHA256_M4_CYCLES_PER_BYTE * pqc.mean("pqc_keccak_f1600") / keccak_m4


def _mean_compute(profile: Profile, pqc: Profile, algorithm: str, operation: str, in_bytes: int) -> float:
    return sum(_compute(profile, pqc, algorithm, operation, in_bytes, None, None, 0.5, True).values())


def _calibration_scale(profile: Profile, pqc: Profile, algorithm: str, operation: str, in_bytes: int,
                       out_bytes: int, row: silicon.Published, extrapolated: bool) -> float:
    """The factor on the model's compute that makes the published operation's mean come out exactly."""
    ohc = profile.mean("ohc") if "ohc" in profile else 0.0
    bus = pqc.mean("pqc_bus_byte")
    if extrapolated:
        f = frames.use_frames(row.algorithm, row.call) if row.call not in ("create", "load") else \
            frames.keygen_frames(row.algorithm)[0]
        ref_in, ref_out = f.in_bytes, f.out_bytes
    else:
        ref_in, ref_out = in_bytes, out_bytes
    target = row.mean_ms - (row.other_commands + 1) * ohc - bus * (ref_in + ref_out)
    return target / _mean_compute(profile, pqc, row.algorithm, row.call, ref_in if not extrapolated else FRAME_OVERHEAD)


def calibrated_totals(profile: Profile, algorithm: str, operation: str, row: silicon.Published,
                      draws: int = 400) -> list[float]:
    """Totals of the whole published operation (its other commands at the per-command overhead)."""
    if operation in ("create", "load"):
        f = frames.keygen_frames(algorithm)[operation == "load"]
    else:
        f = frames.use_frames(algorithm, operation)
    others = row.other_commands if operation == row.call else 0  # a load has no benchmark sequence
    ohc = profile.mean("ohc") if "ohc" in profile else 0.0
    rng = random.Random(f"calibrated|{profile.name}|{algorithm}|{operation}")
    return [others * ohc + sum(operation_cost(profile, algorithm, operation, in_bytes=f.in_bytes,
                                                          out_bytes=f.out_bytes, rng=rng).values())
            for _ in range(draws)]


def calibrated_mean(profile: Profile, algorithm: str, operation: str, row: silicon.Published) -> float:
    """The expected total of the whole published operation, exactly (no draws): the same sum as
    :func:`calibrated_totals` at mean work, mean overhead and mean bus, which is what the calibration scale
    makes equal to the published mean (a 400-draw average of ML-DSA's skewed runs is off by a few %)."""
    if operation in ("create", "load"):
        f = frames.keygen_frames(algorithm)[operation == "load"]
    else:
        f = frames.use_frames(algorithm, operation)
    others = row.other_commands if operation == row.call else 0
    ohc = profile.mean("ohc") if "ohc" in profile else 0.0
    return others * ohc + sum(operation_cost(profile, algorithm, operation, in_bytes=f.in_bytes,
                                             out_bytes=f.out_bytes).values())


def absorb_ms(profile: Profile, n_bytes: int) -> dict[str, float]:
    """Keccak time of absorbing ``n_bytes`` more message into ML-DSA's SHAKE256 (a SequenceUpdate of a
    sign/verify sequence): n / 136 permutations at the chip's mean Keccak cost."""
    if n_bytes < 0:
        raise TrustlabError(f"n_bytes must not be negative (got {n_bytes})")
    return {"pqc_keccak": unit_costs(profile).mean("pqc_keccak_f1600") * n_bytes / SHAKE256_RATE}

"""Core classes: each class's work per clock on the counted units, from published per-core measurements.

The unit of work is pqm4's portable C ("clean") on a Cortex-M4 (:mod:`.calibration`):
a class that does ``r`` times that work per clock runs an operation of ``c``
Cortex-M4 cycles in ``c / r`` of its own. Two ratios per class: Keccak-f[1600]
and the rest (NTT, base multiplications, polynomial passes), because cores
differ most on Keccak (64-bit lanes on 32-bit registers).

The Keccak ratio is on one declared basis, portable C: 1 = a Cortex-M4 running a C Keccak-f[1600] (-O3).
pqm4's 'clean' cycles link pqm4's assembly permutation, so each source's Keccak per clock is first brought to
that basis by the Keccak it states (``keccak``: :func:`keccak_basis`, :mod:`.keccak_impl`), and a chip's Keccak
time is the class's C time over its own implementation's speed-up.

Where a ratio comes from: the portable-C rows of the class in
``trustlab/validation/data/pqc_measurements.toml``. For each row, the Cortex-M4
cycles of the same operation (our counts x pqm4's unit costs) divided by the
measured cycles; a row with a hashing share gives Keccak and the rest apart, a
row without gives one ratio for both. Each ratio is first brought to the classes' basis, a
speed-optimised benchmark build counting core cycles, by the centre of its source's build and timer
factors (:mod:`.builds`: a -Os row did more work per clock than it shows). The class value is the
geometric mean of its rows; its range is the scatter of the rows about their own source's mean (how
far one operation strays from its source's work per clock), not the spread between sources: a new
chip's distance from the class centre is the between-source spread (:func:`source_spread`), drawn
apart so that it is counted once. With no row (a class nobody measured, or its only source left out
by ``validate``'s leave-one-source-out), the class falls back to its prior (``data/cores.toml``), a
range with a source per end.

Named cores (``data/microarch.toml``): one class spans cores of very different width (the a-class runs
from the in-order Cortex-A53 to the 8-wide Apple M1), so a class may name its cores, each with its
published per-clock ratio against the class's reference core (Cortex-A72) from a general benchmark
(SPECint, Dhrystone, Geekbench), never from the PQC rows. A source that names its core (``microarch``)
is divided by that core's factor before its class pools it, so the class is fitted on the reference
core's scale; a chip that names its core is priced from the class x the core's factor
(:func:`core_factor`).
"""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass
from importlib import resources

import numpy as np
from scipy import special  # not scipy.stats: t.ppf is special.stdtrit, and scipy.stats takes ~0.3 s to import

from trustlab.devices.tpm2.pqc_model import builds, calibration, counts
from trustlab.devices.tpm2.pqc_model.coredata import (  # noqa: F401 - resolve is part of this module's interface
    _core_key, _cores, _microarchs, _references, resolve)
from trustlab.devices.tpm2.pqc_model.params import check_operation, family
from trustlab.errors import TrustlabError

PORTABLE = "portable"


@dataclass(frozen=True)
class Ratio:
    """Work per clock relative to a Cortex-M4 running pqm4 'clean' (Keccak: relative to a Cortex-M4 running a C
    Keccak, :mod:`.keccak_impl`): central value and range."""

    mid: float
    lo: float
    hi: float


@dataclass(frozen=True)
class CoreClass:
    name: str
    label: str
    keccak: Ratio
    arith: Ratio
    basis: str  # where the ratios come from (measured rows, or the prior and its source)
    measured: bool
    sources: int = 0  # measurement sources the centre is the mean of (0: a prior, or the Cortex-M4 basis)


@functools.cache
def measurements() -> dict:
    """The published measurements (sources and rows), as stored under trustlab/validation/data."""
    text = (resources.files("trustlab.validation") / "data" / "pqc_measurements.toml").read_text("utf-8")
    return tomllib.loads(text)


def names() -> tuple[str, ...]:
    return tuple(_cores())


def group(name: str) -> str:
    """'microcontroller' or 'application' (cores.toml): whose sources a class's between-source spread pools."""
    return _cores()[resolve(name)]["group"]


def runs_pqm4_assembly(name: str) -> bool:
    """Whether the class runs pqm4's Cortex-M4 assembly (DSP extension): cores.toml 'assembly'."""
    return bool(_cores()[resolve(name)].get("assembly", False))


def canonical(name: str) -> str:
    """What a chip's ``core=`` names, kept as precise as it was given: a named core ('a72' -> 'cortex-a72'),
    else its class ('m0+' -> 'cortex-m0plus'). Unknown names are an error (:func:`resolve`)."""
    key = name.strip().lower()
    cls = resolve(key)
    if key == cls or key in _cores()[cls].get("aliases", []):
        return cls
    return _core_key(key) or cls


def microarch_names(cls: str | None = None) -> tuple[str, ...]:
    """The named cores (of class ``cls``, or all)."""
    return tuple(k for k, e in _microarchs().items() if cls is None or e["class"] == cls)


@dataclass(frozen=True)
class CoreFactor:
    """A named core's work per clock relative to its class's reference core (data/microarch.toml)."""

    name: str
    cls: str
    lo: float
    mid: float
    hi: float
    tier: str
    source: str

    def text(self) -> str:
        if self.lo == self.hi == 1.0 and self.name == self.cls:
            return ""
        return (f"core {self.name} ({self.tier}): x{self.lo:.3g}-x{self.hi:.3g} the per-clock work of the class's "
                f"reference core {_references().get(self.cls, '?')} ({self.source})")


ONE = "no named cores in this class: factor 1"
TRANSFER = ("how much of a general benchmark's per-clock gap carries over to ML-KEM / ML-DSA portable C is not "
            "published: anywhere from none (x1) to all of it, log-uniform, centre the geometric middle (an "
            "assumption: the gaps of SPECint / Geekbench / Dhrystone come partly from caches, memory-level "
            "parallelism and branch prediction, which L1-resident, branch-poor Keccak and NTT loops use little)")
"""The factor a named core applies is the range from 1 to its published per-clock ratio (data/microarch.toml)."""


@functools.cache
def core_factor(name: str) -> CoreFactor:
    """The per-clock factor of what ``name`` denotes against its class's reference core: for a named core,
    from 1 (none of its published per-clock gap carries over) to its published ratio (all of it), centred on
    the geometric middle (:data:`TRANSFER`); a class with named cores but no core given: the reference core's
    centre (1) and the envelope of every named core of the class (nobody said which core); a class without
    named cores: 1."""
    key = name.strip().lower()
    cls = resolve(key)
    core = _core_key(key)
    if core is not None and not (key == cls or key in _cores()[cls].get("aliases", [])):
        e = _microarchs()[core]
        lo, hi = (float(x) for x in e["factor"])
        return CoreFactor(core, cls, min(1.0, lo), math.sqrt(math.sqrt(lo * hi)), max(1.0, hi), e["tier"],
                          f"published x{lo:.3g}-x{hi:.3g}: {e['source']}; {TRANSFER}")
    members = microarch_names(cls)
    if not members:
        return CoreFactor(cls, cls, 1.0, 1.0, 1.0, "class", ONE)
    lo = min(float(_microarchs()[m]["factor"][0]) for m in members)
    hi = max(float(_microarchs()[m]["factor"][1]) for m in members)
    return CoreFactor(cls, cls, lo, 1.0, hi, "not named", f"no core named: the reference core "
                      f"{_references()[cls]}'s centre, the range of the class's named cores ({', '.join(members)}; "
                      "data/microarch.toml)")


def source_factor(source: dict) -> float:
    """The centre of the per-clock factor of the core a measurement source ran on (its ``microarch``;
    absent: the class's reference, 1): what its work per clock is divided by before its class pools it."""
    core = source.get("microarch")
    if not core:
        return 1.0
    f = core_factor(core)
    if f.cls != resolve(source["core"]):
        raise TrustlabError(f"measurement source {source['id']}: microarch {core!r} is a {f.cls} core, "
                            f"not {source['core']}")
    return f.mid


def operations(spec: str) -> tuple[str, ...]:
    """'keygen+encapsulate' -> ('keygen', 'encapsulate')."""
    return tuple(op.strip() for op in spec.split("+"))


@functools.cache
def m4_cycles(algorithm: str, operation: str) -> tuple[float, float]:
    """(Keccak, other) Cortex-M4 'clean' cycles of one operation or a '+'-sum of operations."""
    cal = calibration.calibrate()
    keccak = other = 0.0
    for op in operations(operation):
        check_operation(algorithm, op)
        k, o = cal.cycles(algorithm, counts.mean(algorithm, op))
        keccak, other = keccak + k, other + o
    return keccak, other


@functools.cache
def run_cycles(algorithm: str, operation: str) -> tuple[tuple[float, float], ...]:
    """(Keccak, other) Cortex-M4 'clean' cycles of every counted run of one raw operation."""
    cal = calibration.calibrate()
    return tuple(cal.cycles(algorithm, run) for run in counts.runs(algorithm, operation))


@functools.cache
def m4_median_run_cycles(algorithm: str, operation: str) -> tuple[float, float]:
    """(Keccak, other) Cortex-M4 'clean' cycles of the median counted run (by total) of one raw operation:
    what a published median compares with (ML-DSA signing's rejection loop puts it below the mean)."""
    runs = sorted(run_cycles(algorithm, operation), key=sum)
    mid = len(runs) // 2
    pair = runs[mid - 1:mid + 1] if len(runs) % 2 == 0 else runs[mid:mid + 1]
    return sum(k for k, _ in pair) / len(pair), sum(o for _, o in pair) / len(pair)


def row_m4_cycles(row: dict) -> tuple[float, float]:
    """The Cortex-M4 work a row is compared with: the mean, or for a row of medians (``statistic = "median"``)
    of one raw operation, the median counted run."""
    ops = operations(row["operation"])
    if row.get("statistic", "mean") == "median" and len(ops) == 1:
        return m4_median_run_cycles(row["algorithm"], ops[0])
    return m4_cycles(row["algorithm"], row["operation"])


def row_clock(row: dict) -> tuple[float, float]:
    """The row's clock in MHz: one figure, or the [low, high] range a source leaves open."""
    c = row["clock_mhz"]
    return (float(c[0]), float(c[1])) if isinstance(c, list) else (float(c), float(c))


def measured_cycles(row: dict) -> float:
    if row["unit"] == "cycles":
        return float(row["value"])
    lo, hi = row_clock(row)
    return float(row["value"]) * math.sqrt(lo * hi) * 1000.0


def row_ratios(row: dict, scales: tuple[float, float] = (1.0, 1.0), split: float = 1.0) -> tuple[float, float]:
    """(Keccak ratio, other ratio) one measurement implies for its core, each multiplied by its unit's
    basis scale (:func:`basis_scales`). A row without a hashing share gives the two in the class's sourced
    proportion ``split`` (Keccak ratio / other ratio on the classes' bases, :func:`unit_split`; 1 where none is
    sourced: one ratio for both): the measured time is Keccak's work over its ratio plus the rest's over its own,
    each with its scale, cycles = (K fk / split + O fo) / other ratio."""
    keccak, other = row_m4_cycles(row)
    cycles = measured_cycles(row)
    share = row.get("hash_share")
    fk, fo = scales
    if share is None:
        r = (keccak * fk / split + other * fo) / cycles
        return r * split, r
    return keccak / (share * cycles) * fk, other / ((1.0 - share) * cycles) * fo


def unit_split(name: str) -> float:
    """The centre of a class's sourced Keccak-to-other work-per-clock proportion (cores.toml ``keccak_per_arith``:
    Keccak ratio on the C-Keccak basis over the other units' ratio on pqm4 clean's), with which a measurement that
    gives one time for a whole operation is split between the two units; 1 for a class without one (the
    operation's units then share one ratio). Why it matters: a class fitted on ML-KEM rows alone (Keccak about half
    of the Cortex-M4 C time) and applied to ML-DSA signing (a quarter) misprices signing against verification by the
    proportion wherever it is far from 1: on a 64-bit core Keccak-f[1600]'s 64-bit lanes take one instruction where
    a 32-bit core takes two, and the NTT's 16- and 32-bit arithmetic gains nothing from the width."""
    entry = _cores()[resolve(name)]
    return float(entry["keccak_per_arith"][1]) if "keccak_per_arith" in entry else 1.0


def basis_scales(source: dict, row: dict) -> tuple[float, float]:
    """What a row's work per clock on Keccak and on the other units is multiplied by to stand for a benchmark
    build of reference-lineage C counting core cycles: its source's build factor on that unit x its timer factor
    (:mod:`.builds`) x its code base's factor (:mod:`.lineage`), at their centres."""
    from trustlab.devices.tpm2.pqc_model import keccak_impl  # it reads the classes' data: imported late

    from trustlab.devices.tpm2.pqc_model import lineage  # it reads the classes' data: imported late

    build, timer = builds.of_source(source, row["unit"])
    keccak, arith = builds.units(build.kind)
    fk = keccak.mid if source.get("keccak_engine") or keccak_impl.compiled(
        source["core"], keccak_impl.of_source(source)) else 1.0  # flags do not move an assembly Keccak
    lk, la = lineage.basis(source, family(row["algorithm"]))  # its code base on the reference lineage's
    # an engine's Keccak is no C lineage's (as keccak_basis)
    lk = 1.0 if source.get("keccak_engine") else lk
    return fk * timer.mid * keccak_basis(source) * lk, arith.mid * timer.mid * la


def keccak_basis(source: dict) -> float:
    """What a source's Keccak work per clock is multiplied by to stand on the classes' Keccak basis, portable C
    (:mod:`.keccak_impl`): the centre of its Keccak's factor on the calibration's assembly Keccak time (a source
    that ran C on a Cortex-M4 shows 1/A of the calibration's per-clock work; x A makes it 1)."""
    from trustlab.devices.tpm2.pqc_model import keccak_impl  # it reads the classes' data: imported late

    if source.get("keccak_engine"):  # its Keccak ran on an engine: no software Keccak in the row to convert
        return 1.0
    return keccak_impl.centre(source["core"], keccak_impl.of_source(source))


def basis_scale(source: dict, row: dict) -> float:
    """:func:`basis_scales` as one number for the row's whole operation: weighted by its Cortex-M4 work
    on each unit."""
    keccak, other = row_m4_cycles(row)
    fk, fo = basis_scales(source, row)
    return (keccak * fk + other * fo) / (keccak + other)


@functools.cache
def fit(name: str, exclude: frozenset[str] = frozenset()) -> CoreClass:
    """What ``name`` does per clock, leaving out the sources in ``exclude``: its class built from its
    portable-C rows (:func:`fit_class`, on the reference core's scale) x the named core's factor
    (:func:`core_factor`; 1 for a class without named cores)."""
    base = fit_class(resolve(name), exclude)
    f = core_factor(name)
    if f.lo == f.mid == f.hi == 1.0:
        return base
    k, a = base.keccak, base.arith
    return CoreClass(base.name, f"{base.label}, {f.name}", Ratio(k.mid * f.mid, k.lo * f.lo, k.hi * f.hi),
                     Ratio(a.mid * f.mid, a.lo * f.lo, a.hi * f.hi), f"{base.basis}; x {f.text() or f.source}",
                     base.measured, base.sources)


@functools.cache
def fit_class(name: str, exclude: frozenset[str] = frozenset()) -> CoreClass:
    """Class ``name`` built from its portable-C rows, leaving out the sources in ``exclude``; each source's
    work per clock divided by its core's factor (:func:`source_factor`), so a class with named cores is on
    its reference core's scale. Rows of hand-written assembly (``implementation`` optimized / mixed) never enter,
    also on a core where the model prices such code as portable (:func:`.chipspec.priced_implementation`): their
    speed is the assembly's, and taken as C they would make the class's C faster than it is."""
    cls = resolve(name)
    entry = _cores()[cls]
    doc = measurements()
    sources = {s["id"]: s for s in doc["sources"]}
    used = [r for r in doc["rows"] if r["source"] not in exclude and sources[r["source"]]["core"] == cls
            and sources[r["source"]]["implementation"] == PORTABLE and sources[r["source"]]["counted"]]
    if cls == "cortex-m4" or not used:
        k, a = entry["prior_keccak"], entry["prior_arith"]
        mid_k, mid_a = math.sqrt(k[0] * k[1]), math.sqrt(a[0] * a[1])
        return CoreClass(cls, entry["label"], Ratio(mid_k, k[0], k[1]), Ratio(mid_a, a[0], a[1]),
                         f"prior: {entry['prior_source']}", measured=False)
    per: dict[str, list[tuple[float, float]]] = {}
    split = unit_split(cls)
    for r in used:
        sf = source_factor(sources[r["source"]])
        fk, fo = basis_scales(sources[r["source"]], r)
        k, o = row_ratios(r, (fk / sf, fo / sf), split)
        per.setdefault(r["source"], []).append((math.log(k), math.log(o)))
    ks = [k for rows in per.values() for k, _ in rows]
    os_ = [o for rows in per.values() for _, o in rows]
    mid_k, mid_a = math.exp(sum(ks) / len(ks)), math.exp(sum(os_) / len(os_))
    # scatter of each row about its own source's mean: the per-operation part of the class's range
    dk = [k - sum(x for x, _ in rows) / len(rows) for rows in per.values() for k, _ in rows]
    da = [o - sum(x for _, x in rows) / len(rows) for rows in per.values() for _, o in rows]
    ids = sorted(per)
    ref = _references().get(cls)
    basis = (f"measured: {len(used)} portable-C rows of " + ", ".join(ids)
             + (f", each divided by its core's per-clock factor against the reference core {ref} "
                "(data/microarch.toml)" if ref else "")
             + " (work per clock vs Cortex-M4 clean" + (f" on the {ref} scale" if ref else "")
             + f": Keccak {mid_k:.2f}, other {mid_a:.2f}; range = the rows' scatter about their own source's mean"
             + (f"; a whole-operation row split between the units at Keccak / other = {split:g}, "
                f"{_cores()[cls]['keccak_per_arith_source']}" if split != 1.0 else "") + ")")
    return CoreClass(cls, entry["label"], Ratio(mid_k, mid_k * math.exp(min(dk)), mid_k * math.exp(max(dk))),
                     Ratio(mid_a, mid_a * math.exp(min(da)), mid_a * math.exp(max(da))), basis, measured=True,
                     sources=len(ids))


def exact_basis(source: dict, row: dict) -> bool:
    """Whether a source's figures are on the classes' basis with no large factor of its own to doubt: a
    stated speed-optimised benchmark build, read with a stated core-cycle counter, a wall clock at a
    stated fixed clock, or rdtsc on a named CPU (its base / turbo range is at most x1.33 wide). Only such
    sources measure the between-source spread: any other source's distance from its class would also hold
    an unstated build's or an unnamed CPU's uncertainty, which their own factors already carry (counting
    it in the spread as well would count it twice). Likewise the Keccak: a source that does not say which Keccak
    it ran, on a class where assembly and C differ (cores.toml keccak_asm), carries that in its Keccak factor
    (:mod:`.keccak_impl`), not in the spread. A row's code base (:mod:`.lineage`) does not take it off the basis:
    its lineage factor's known variance is taken out of the spread instead (:func:`lineage_doubt`). Hand-written
    assembly (``implementation`` optimized / mixed) is never on the basis: its rows are no class's portable-C speed,
    even on a core where the model prices such code as portable (:func:`.chipspec.priced_implementation`)."""
    from trustlab.devices.tpm2.pqc_model import keccak_impl  # it reads the classes' data: imported late

    if (not source.get("keccak_engine") and keccak_impl.of_source(source) == keccak_impl.UNKNOWN
            and keccak_impl.asm_speedup(source["core"]).hi > 1.0):
        return False
    build, timer = builds.of_source(source, row["unit"])
    stated_timer = str(source.get("timer", "unknown")).strip().lower() not in ("", "unknown")
    fixed_clock = row["unit"] == "cycles" or not isinstance(row.get("clock_mhz"), list)
    known_timer = timer.lo == timer.hi == 1.0 or timer.label.startswith("rdtsc on a named CPU")
    return (source["implementation"] == PORTABLE and bool(source["counted"]) and build.kind in builds.SPEED
            and stated_timer and known_timer and fixed_clock)


LINEAGE_GRID = 2000
"""Quantiles a lineage factor is integrated over (:func:`lineage_doubt`; midpoints of equal steps)."""


def lineage_doubt(source: dict, rows: tuple[dict, ...]) -> tuple[float, float]:
    """(mean, variance) of what a source's code base adds to its mean log work per clock on the classes' basis
    (over ``rows``, its rows in the spread): the log of its lineage factor's centre (what :func:`basis_scales`
    multiplied by) over the factor it really had, drawn as a prediction draws it (:func:`.lineage.time_factors`:
    one quantile for both units; each row weights Keccak and the rest by its Cortex-M4 work). Zero for the
    reference lineage; for an unknown one (unstated, or a lineage without a measured factor) its range runs to the
    fastest measured lineage of the family. A source that states one lineage runs one code base for both families
    (one draw); one that states a lineage per family, two independent draws.

    Why: a chip's prediction draws its lineage factor (the ``--chip`` default: unknown), so the part of a source's
    distance from its class that its own code base makes must not enter the between-source spread as well. Leaving
    such rows out (as the spread did) counts the doubt once but rests the spread on a handful of sources (one to
    three degrees of freedom, whose Student-t 5-95% quantiles are 1.8-3.9x the normal's); taking their known
    expected share out of the sum of squares (:func:`_pool`) counts it once and keeps their degrees of freedom."""
    from trustlab.devices.tpm2.pqc_model import lineage  # it reads the classes' data: imported late

    u = (np.arange(LINEAGE_GRID) + 0.5) / LINEAGE_GRID
    shifts: dict[str, np.ndarray] = {}
    for r in rows:
        fam = family(r["algorithm"])
        kind = lineage.of_source(source, fam)
        if source.get("implementation") == "optimized" or lineage.priced_as(kind, fam) == lineage.REFERENCE:
            continue  # no C lineage (hand-written assembly), or the basis itself: nothing to doubt
        keccak, other = row_m4_cycles(r)
        ck, ca = lineage.basis(source, fam)
        fk, fa = lineage.time_factors(kind, fam, source["core"], u)
        shifts[fam] = shifts.get(fam, 0.0) + (math.log(keccak * ck + other * ca)
                                              - np.log(keccak * fk + other * fa)) / len(rows)
    if not shifts:
        return 0.0, 0.0
    if not isinstance(source.get("lineage"), dict):  # one code base: one draw for both families
        total = sum(shifts.values())
        return float(np.mean(total)), float(np.var(total))
    return float(sum(np.mean(v) for v in shifts.values())), float(sum(np.var(v) for v in shifts.values()))


TAIL = 0.005
"""The Student-t draw is cut at its 0.5% and 99.5% points: with one or two degrees of freedom its far
tail would otherwise put a chip orders of magnitude from every measured one. The cut is outside the
5-95% interval, which it does not move."""


@dataclass(frozen=True)
class Spread:
    """How far a new source's work per clock lies from its class's centre: the pooled between-source
    log standard deviation of the sources on an exact basis (:func:`exact_basis`), with its degrees of
    freedom. A new chip is drawn from the Student-t predictive distribution, sigma x sqrt(1 + 1/k) x t(dof)
    for a class centre that is the mean of k sources (k = 0: a prior or the Cortex-M4 basis, whose own
    uncertainty is carried elsewhere): few sources give few degrees of freedom and so heavy tails, rather
    than a confident width from two numbers."""

    sigma: float
    dof: int
    classes: tuple[str, ...]
    sources: int
    group: str
    floored: bool = False  # set by the reference-lineage sources alone (:func:`_pool`)

    def scale(self, k: int = 0) -> float:
        return self.sigma * math.sqrt(1.0 + 1.0 / k) if k else self.sigma

    def draw(self, u, k: int = 0):
        """The factor on the time at quantile ``u`` (1 at the median; a number or an array)."""
        if not self.dof or not self.sigma:
            return np.ones_like(u) if isinstance(u, np.ndarray) else 1.0
        if not isinstance(u, np.ndarray):  # the central estimate asks for the same number again and again
            return _scalar_draw(self, u, k)
        z = special.stdtrit(self.dof, np.clip(u, TAIL, 1 - TAIL))
        return np.exp(self.scale(k) * z)

    def quantiles(self, k: int = 0, p: float = 0.05) -> tuple[float, float]:
        return float(self.draw(p, k)), float(self.draw(1.0 - p, k))

    def text(self, k: int = 0) -> str:
        if not self.dof:
            return "between-source spread: no class has two portable-C sources on an exact basis, so none is applied"
        lo, hi = self.quantiles(k)
        return (f"between-source spread x{lo:.2f}-x{hi:.2f} (5-95%: Student-t with {self.dof} degrees of freedom, "
                f"log standard deviation {self.sigma:.3f}" + (f" x sqrt(1 + 1/{k}) for a centre of {k} sources" if k
                                                               else "") +
                f", pooled over {self.sources} portable-C sources of a stated benchmark build and a stated timer (cycle "
                f"counter, or rdtsc on a named CPU) in {', '.join(self.classes)} ({self.group} cores); a source whose build or timer is "
                "uncertain carries that in its own factors instead, and the known variance of each source's code base "
                "(its lineage factor) is taken out of the pooled sum of squares: counted once, in that factor"
                + ("; here the estimate of the reference-lineage sources alone, the floor under that subtraction"
                   if self.floored else "") + ")")


@functools.cache
def _scalar_draw(spread: Spread, u: float, k: int):
    """:meth:`Spread.draw` at one quantile (scipy's ppf costs far more than the cache lookup)."""
    z = special.stdtrit(spread.dof, np.clip(u, TAIL, 1 - TAIL))
    return np.exp(spread.scale(k) * z)


def _pool(exclude: frozenset[str], groups: tuple[str, ...]) -> tuple[float, int, list[str], int, bool]:
    """(sigma, degrees of freedom, classes, sources, whether the reference-lineage floor set it) of the pooled
    between-source spread, by the method of moments with known per-source variances (as the between-study variance
    of a random-effects meta-analysis: DerSimonian & Laird, Controlled Clinical Trials 7 (1986) 177-188). A source's
    mean log work per clock is its class's centre + its own deviation (variance sigma^2: what a new chip draws) + its
    code base's (:func:`lineage_doubt`: mean mu_i, variance v_i, known). Each source's mean is first shifted by its
    known mu_i (:func:`moments`), and the known variance is subtracted from the pooled sum of squares, so a code
    base's doubt is counted once (in its lineage factor) and its source keeps its degree of freedom.

    Where the sum of squares is at or below its known part, the moment estimate would be zero (DerSimonian-Laird
    truncates there; with few studies that truncation is known to under-state the between-study variance and to give
    boundary estimates of zero often: Veroniki et al., Research Synthesis Methods 7 (2016) 55-79; Chung et al.,
    Psychometrika 78 (2013) 685-709). Paule-Mandel and REML truncate at zero in the same case (their estimating
    equation has no positive root when the dispersion at zero is below its expectation), so they do not answer it.
    The rule here rests on what the known part is: the v_i are the variances of assumed lineage ranges (an unknown
    code base's runs to the fastest measured lineage of its family: an envelope), so subtracting them can take out
    more than the code bases really added, whereas rows of the reference lineage (mu_i = v_i = 0) estimate sigma^2
    with nothing assumed. So the estimate is never below that of the sources' reference-lineage rows alone
    (:func:`_reference_only`: a source with one family on the reference lineage counts with those rows); when that
    floor sets it, so do its degrees of freedom (the heavier tails of the fewer sources it rests on)."""
    doc = measurements()
    sources = {s["id"]: s for s in doc["sources"]}
    per: dict[str, dict[str, list[dict]]] = {}
    for r in doc["rows"]:
        s = sources[r["source"]]
        if r["source"] in exclude or group(s["core"]) not in groups or not exact_basis(s, r):
            continue
        per.setdefault(resolve(s["core"]), {}).setdefault(r["source"], []).append(r)
    ss, known, dof, used, n = 0.0, 0.0, 0, [], 0
    ref_ss, ref_dof = 0.0, 0
    for cls, by_source in sorted(per.items()):
        means = [sum(math.log(_basis_ratio(sources[sid], r)) for r in rows) / len(rows)
                 for sid, rows in by_source.items()]
        mus, vs = zip(*(_source_lineage_doubt(sid) for sid in by_source))
        # the basis: pqm4's clean code is the Cortex-M4's centre (ratio 1), not these sources' mean
        fixed = cls == "cortex-m4"
        c_ss, c_known, c_dof = moments(means, mus, vs, fixed_centre=fixed)
        if not c_dof:
            continue
        ss, known, dof = ss + c_ss, known + c_known, dof + c_dof
        used.append(cls)
        n += len(means)
        r_ss, r_dof = _reference_only([_reference_mean(sources[sid], rows) for sid, rows in by_source.items()], fixed)
        ref_ss, ref_dof = ref_ss + r_ss, ref_dof + r_dof
    if not dof:
        return 0.0, 0, used, n, False
    var = max(0.0, ss - known) / dof
    if ref_dof and ref_ss / ref_dof > var:
        return math.sqrt(ref_ss / ref_dof), ref_dof, used, n, True
    return math.sqrt(var), dof, used, n, False


def _reference_only(means: list[float | None], fixed_centre: bool) -> tuple[float, int]:
    """(sum of squares, degrees of freedom) of one class's sources over their rows of the reference lineage alone
    (:func:`_reference_mean`; None: a source without such rows): nothing known to subtract, the floor of
    :func:`_pool`."""
    ref = [m for m in means if m is not None]
    ss, _, dof = moments(ref, [0.0] * len(ref), [0.0] * len(ref), fixed_centre)
    return ss, dof


def _reference_mean(source: dict, rows: list[dict]) -> float | None:
    """A source's mean log work per clock on the classes' basis over its rows with no lineage doubt (reference
    lineage, or hand-written assembly: :func:`lineage_doubt` zero), or None if it has none."""
    logs = [math.log(_basis_ratio(source, r)) for r in rows if lineage_doubt(source, (r,)) == (0.0, 0.0)]
    return sum(logs) / len(logs) if logs else None


def moments(means, mus, vs, fixed_centre: bool = False) -> tuple[float, float, int]:
    """(sum of squares, its known expected part, degrees of freedom) of one class's source means (logs), each first
    shifted by its known mean part ``mus`` (:func:`lineage_doubt`), about their mean, or about 0 for a
    ``fixed_centre`` (the Cortex-M4 basis); ``vs``: the variance of each source's known part. Shifting first keeps
    the spread of the known means out of the sum of squares (subtracting it afterwards, in expectation, left it in
    as noise), so E[sum of squares - known part] = dof x sigma^2 with less scatter. A class with one source and no
    fixed centre has no degree of freedom: (0, 0, 0)."""
    k = len(means)
    shifted = [m - mu for m, mu in zip(means, mus)]
    if fixed_centre:
        return sum(m * m for m in shifted), float(sum(vs)), k
    if k < 2:
        return 0.0, 0.0, 0
    centre = sum(shifted) / k
    return sum((m - centre) ** 2 for m in shifted), (1.0 - 1.0 / k) * sum(vs), k - 1


def _basis_ratio(source: dict, row: dict) -> float:
    """A row's whole-operation work per clock on the classes' basis, on its class's reference-core scale."""
    keccak, other = row_m4_cycles(row)
    return (keccak + other) / measured_cycles(row) * basis_scale(source, row) / source_factor(source)


@functools.cache
def _source_lineage_doubt(source_id: str) -> tuple[float, float]:
    """:func:`lineage_doubt` over a source's rows on an exact basis (the rows :func:`_pool` takes of it: leaving
    other sources out does not change them)."""
    source = next(s for s in measurements()["sources"] if s["id"] == source_id)
    return lineage_doubt(source, tuple(r for r in measurements()["rows"]
                                       if r["source"] == source_id and exact_basis(source, r)))


@functools.cache
def source_spread(exclude: frozenset[str] = frozenset(), of_group: str = "microcontroller") -> Spread:
    """The between-source spread for classes of ``of_group`` (without the sources in ``exclude``): pooled
    over that group's classes with two or more sources on an exact basis (Cortex-M4: one or more, against
    pqm4's clean basis), each source's geometric-mean work per clock taken about its class's mean of
    sources. If the group has no such pair, or its estimate is zero (no reference-lineage floor under a sum of
    squares at or below its known part), all groups are pooled (said in the text): a new chip is never drawn as if
    sources did not differ. Applied to every prediction priced from a class (a new chip is a new source)."""
    sigma, dof, used, n, floored = _pool(exclude, (of_group,))
    label = of_group
    if not dof or not sigma:
        sigma, dof, used, n, floored = _pool(exclude, tuple(dict.fromkeys(c["group"] for c in _cores().values())))
        label = f"{of_group}: none of its own, so all"
    return Spread(sigma, dof, tuple(used), n, label, floored)

"""Core classes: each class's work per clock on the counted units, from published per-core measurements.

The unit of work is pqm4's portable C ("clean") on a Cortex-M4 (:mod:`.calibration`):
a class that does ``r`` times that work per clock runs an operation of ``c``
Cortex-M4 cycles in ``c / r`` of its own. Two ratios per class: Keccak-f[1600]
and the rest (NTT, base multiplications, polynomial passes), because cores
differ most on Keccak (64-bit lanes on 32-bit registers).

Where a ratio comes from: the portable-C rows of the class in
``trustlab/validation/data/pqc_measurements.toml``. For each row, the Cortex-M4
cycles of the same operation (our counts x pqm4's unit costs) divided by the
measured cycles; a row with a hashing share gives Keccak and the rest apart, a
row without gives one ratio for both. Each ratio is first brought to the classes' basis, a
speed-optimised benchmark build counting core cycles, by the centre of its source's build and timer
factors (:mod:`.builds`: a -Os row did more work per clock than it shows). The class value is the
geometric mean of its rows, its range their min..max. With no row (a class nobody measured, or
its only source left out by ``validate``'s leave-one-source-out), the class
falls back to its prior (``data/cores.toml``), a range with a source per end.
"""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass
from importlib import resources

from trustlab.devices.tpm2.pqc_model import builds, calibration, counts
from trustlab.devices.tpm2.pqc_model.params import check_operation
from trustlab.errors import TrustlabError

PORTABLE = "portable"


@dataclass(frozen=True)
class Ratio:
    """Work per clock relative to a Cortex-M4 running pqm4 'clean': central value and range."""

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


@functools.cache
def _cores() -> dict:
    text = (resources.files("trustlab.devices.tpm2.pqc_model") / "data" / "cores.toml").read_text("utf-8")
    return tomllib.loads(text)["classes"]


@functools.cache
def measurements() -> dict:
    """The published measurements (sources and rows), as stored under trustlab/validation/data."""
    text = (resources.files("trustlab.validation") / "data" / "pqc_measurements.toml").read_text("utf-8")
    return tomllib.loads(text)


def names() -> tuple[str, ...]:
    return tuple(_cores())


def resolve(name: str) -> str:
    """The class a name or alias ('cortex-m0plus', 'm0+', 'sc300', ...) denotes; unknown names are an error."""
    key = name.strip().lower()
    for cls, entry in _cores().items():
        if key == cls or key in entry.get("aliases", []):
            return cls
    raise TrustlabError(f"unknown core class {name!r} (known: {', '.join(_cores())}; aliases like m0+, m3, sc300, "
                        "a72, rv32, rv64, x86)")


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


def row_ratios(row: dict) -> tuple[float, float]:
    """(Keccak ratio, other ratio) one measurement implies for its core."""
    keccak, other = row_m4_cycles(row)
    cycles = measured_cycles(row)
    share = row.get("hash_share")
    if share is None:
        r = (keccak + other) / cycles
        return r, r
    return keccak / (share * cycles), other / ((1.0 - share) * cycles)


def basis_scale(source: dict, row: dict) -> float:
    """What a row's work per clock is multiplied by to stand for a benchmark build counting core cycles:
    its source's build factor x timer factor, at their centres (:mod:`.builds`)."""
    build, timer = builds.of_source(source, row["unit"])
    return build.mid * timer.mid


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


@functools.cache
def fit(name: str, exclude: frozenset[str] = frozenset()) -> CoreClass:
    """Class ``name`` built from its portable-C rows, leaving out the sources in ``exclude``."""
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
    ks, os_ = zip(*((k * f, o * f) for r in used for f in [basis_scale(sources[r["source"]], r)]
                    for k, o in [row_ratios(r)]))
    ids = sorted({r["source"] for r in used})
    basis = (f"measured: {len(used)} portable-C rows of " + ", ".join(ids)
             + f" (work per clock vs Cortex-M4 clean: Keccak {_geomean(list(ks)):.2f}, other {_geomean(list(os_)):.2f})")
    return CoreClass(cls, entry["label"], Ratio(_geomean(list(ks)), min(ks), max(ks)),
                     Ratio(_geomean(list(os_)), min(os_), max(os_)), basis, measured=True)


@dataclass(frozen=True)
class Spread:
    """How far a new source's work per clock lies from its class's centre: a measured between-source
    spread (log standard deviation), pooled over the classes that have several sources."""

    sigma: float
    classes: tuple[str, ...]
    sources: int

    @property
    def half_width(self) -> float:
        """Half-width of the log-uniform range with that standard deviation (sqrt(3) sigma)."""
        return math.sqrt(3.0) * self.sigma

    def text(self) -> str:
        if not self.classes:
            return "between-source spread: no class has two portable-C sources, so none is applied"
        w = math.exp(self.half_width)
        return (f"between-source spread x{1 / w:.2f}-x{w:.2f} (log-uniform with the pooled standard deviation "
                f"{self.sigma:.2f} of the per-source work per clock about their class centre, {self.sources} "
                f"portable-C sources of a stated build in {', '.join(self.classes)}, each brought to the "
                f"benchmark-build basis)")


@functools.cache
def source_spread(exclude: frozenset[str] = frozenset()) -> Spread:
    """The pooled between-source spread of the classes with two or more portable-C sources of a stated
    build (without ``exclude``; a source whose build is unknown or an unstated application build carries
    that uncertainty in its build factor already, so counting its deviation here would count it twice):
    each source's geometric-mean work per clock (build and timer brought to the basis),
    its log deviation from its class's mean of sources, pooled with n_class - 1 degrees of freedom.
    Applied to every prediction priced from a class (a new chip is a new source), it is the measured
    answer to "how different is another build of the same code on another board of the same class"."""
    doc = measurements()
    sources = {s["id"]: s for s in doc["sources"]}
    per: dict[str, dict[str, list[float]]] = {}
    for r in doc["rows"]:
        s = sources[r["source"]]
        if (r["source"] in exclude or s["implementation"] != PORTABLE or not s["counted"]
                or builds.build_kind(s.get("build")) in builds.UNSTATED):
            continue
        keccak, other = row_m4_cycles(r)
        ratio = (keccak + other) / measured_cycles(r) * basis_scale(s, r)
        per.setdefault(s["core"], {}).setdefault(r["source"], []).append(math.log(ratio))
    ss, dof, used, n = 0.0, 0, [], 0
    for cls, by_source in sorted(per.items()):
        if len(by_source) < 2:
            continue
        means = [sum(v) / len(v) for v in by_source.values()]
        centre = sum(means) / len(means)
        ss += sum((m - centre) ** 2 for m in means)
        dof += len(means) - 1
        used.append(cls)
        n += len(means)
    return Spread(math.sqrt(ss / dof) if dof else 0.0, tuple(used), n)

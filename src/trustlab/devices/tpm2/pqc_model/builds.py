"""How a measurement's build and timer move its figure: factors from published comparisons, with ranges.

The core classes (:mod:`.classes`) are work per clock of a speed-optimised benchmark build counting core
cycles (pqm4, pqm3, mlkem-native). A figure from a size-optimised or debug build, an application build,
or one read with ``rdtsc`` (TSC ticks at the nominal clock, not core cycles) is not that: each moves
it by a factor whose centre and range come from ``data/builds.toml`` (Embench-IoT's same-code
comparisons of optimisation levels; our own instruction-level measurement of the same PQC reference C
at -O0 and -O3; Intel ARK's base and turbo clocks), never from the validation rows.

A build factor is per counted unit where the data file gives one per unit (``keccak``, ``arith``): an
unoptimised build slows Keccak-f[1600] (25 64-bit lanes, each kept on the stack as two words at -O0)
and the NTT / modular arithmetic by different factors, and an operation's time is its Keccak share
times the one plus the rest times the other. A kind with one ``factor`` applies it to both.

A measurement source says its build and timer in ``pqc_measurements.toml`` (``build``, ``timer``:
free text such as "-Os", "application (STM32CubeIDE)", "rdtsc", "PMU"); a missing or unrecognised field
is "unknown", which for the build is the widest range and for the timer follows the row's unit
(cycles: a cycle counter; ms: wall clock). A chip priced with ``--chip`` has ``build=`` (default
unknown: nobody said how the code a new chip runs was built).
"""

from __future__ import annotations

import functools
import math
import re
import tomllib
from dataclasses import dataclass
from importlib import resources

import numpy as np

from trustlab.errors import TrustlabError

UNKNOWN = "unknown"
KECCAK, ARITH = "keccak", "arith"
UNITS = (KECCAK, ARITH)
"""The counted units a build factor may differ on: Keccak-f[1600] and the rest (NTT, reductions, sampling)."""
SPEED = ("speed", "o2")
"""Build kinds that are speed-optimised benchmark builds of a stated level (the classes' basis or next to it)."""
UNSTATED = ("unknown", "application")
"""Build kinds that do not name an optimisation level (their factor is a mix of levels)."""


def piecewise(lo: float, mid: float, hi: float, u):
    """Log-uniform on [lo, mid] for u < 0.5 and on [mid, hi] above: the median stays at ``mid``.
    ``u`` may be a number or a numpy array (one value per draw)."""
    if lo == hi:
        return lo * np.ones_like(u) if isinstance(u, np.ndarray) else lo
    a, m, b = math.log(lo), math.log(mid), math.log(hi)
    return np.exp(np.where(u < 0.5, a + (m - a) * 2 * u, m + (b - m) * (2 * u - 1)))


def _piecewise_cdf(lo: float, mid: float, hi: float, x: np.ndarray) -> np.ndarray:
    """The distribution function of :func:`piecewise` at ``x`` (log space)."""
    if lo == hi:
        return (x >= math.log(lo)).astype(float)
    a, m, b = math.log(lo), math.log(mid), math.log(hi)
    low = 0.5 * (x - a) / (m - a) if m > a else np.where(x >= m, 0.5, 0.0)
    high = 0.5 + 0.5 * (x - m) / (b - m) if b > m else np.ones_like(x)
    return np.clip(np.where(x < m, low, high), 0.0, 1.0)


@dataclass(frozen=True)
class Factor:
    """A multiplicative factor: centre and range (low..high), what it stands for and its source.

    A factor with ``parts`` is a mixture: one of the parts, with probability its ``weights`` entry (equal
    when the data file gives none), then a value within it. It is drawn from the mixture's own quantile
    function, so a mix of a benchmark, a size and a debug build puts each part's weight on that part
    rather than spreading evenly over the envelope of the parts (which would make the slowest debug build
    as likely as the whole benchmark range). ``mid`` is then the weighted geometric mean of the parts'
    centres (the mixture's mean in log space), which the central estimate takes (:func:`central`); draws
    come from the mixture. A part may itself be a mixture."""

    kind: str
    label: str
    lo: float
    mid: float
    hi: float
    source: str
    parts: tuple["Factor", ...] = ()
    weights: tuple[float, ...] = ()

    def text(self) -> str:
        lo, hi = self.quantiles()
        return (f"{self.label} x{lo:.3g}-x{hi:.3g} (5-95%; centre x{self.mid:.3g}, bounds x{self.lo:.3g}-x{self.hi:.3g}; "
                f"{self.source})")

    def draw(self, u):
        """The factor at quantile ``u`` (a number or an array of draws)."""
        if not self.parts:
            return piecewise(self.lo, self.mid, self.hi, u)
        grid, cdf = _mixture_table(self.parts, self.weights)
        return np.exp(np.interp(u, cdf, grid))

    def central(self, u):
        """The factor for the central estimate (``u`` the scalar 0.5) or a draw: a mixture's centre is its
        geometric mean, not its median."""
        if self.parts and np.isscalar(u) and u == 0.5:
            return self.mid
        return self.draw(u)

    def quantiles(self, p: float = 0.05) -> tuple[float, float]:
        return float(self.draw(p)), float(self.draw(1.0 - p))


def _cdf(factor: Factor, x: np.ndarray) -> np.ndarray:
    """The distribution function of a factor at ``x`` (log space): piecewise, or its parts' weighted sum."""
    if not factor.parts:
        return _piecewise_cdf(factor.lo, factor.mid, factor.hi, x)
    return sum(w * _cdf(p, x) for p, w in zip(factor.parts, _weights(factor.parts, factor.weights)))


def _weights(parts: tuple[Factor, ...], weights: tuple[float, ...]) -> tuple[float, ...]:
    """A mixture's weights summing to 1: as given, or equal."""
    w = weights or (1.0,) * len(parts)
    return tuple(x / sum(w) for x in w)


@functools.cache
def _mixture_table(parts: tuple[Factor, ...], weights: tuple[float, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    """(log grid, distribution function) of a mixture of piecewise log-uniform parts (or of mixtures),
    weighted as given or equally."""
    grid = np.linspace(math.log(min(p.lo for p in parts)), math.log(max(p.hi for p in parts)), 4001)
    cdf = sum(w * _cdf(p, grid) for p, w in zip(parts, _weights(parts, weights)))
    cdf, keep = np.unique(cdf, return_index=True)  # strictly increasing for the inverse
    return grid[keep], cdf


@functools.cache
def _doc() -> dict:
    text = (resources.files("trustlab.devices.tpm2.pqc_model") / "data" / "builds.toml").read_text("utf-8")
    return tomllib.loads(text)


def kinds() -> tuple[str, ...]:
    return tuple(_doc()["builds"])


@functools.cache
def build(kind: str, unit: str = ARITH) -> Factor:
    """The factor of one build kind on one counted unit (``keccak`` or ``arith``: the data file's per-unit
    ranges, or its one ``factor`` for both); a mix is a mixture of its parts weighted by the data file's
    ``weights`` (equal where it gives none), bounded by the envelope of the parts, centred on the weighted
    geometric mean of the parts' centres (the mean of the mixture in log space, where the classes' centres
    are taken too)."""
    entry = _doc()["builds"].get(kind)
    if entry is None:
        raise TrustlabError(f"unknown build {kind!r} (known: {', '.join(kinds())})")
    if unit not in UNITS:
        raise TrustlabError(f"unknown counted unit {unit!r} (known: {', '.join(UNITS)})")
    if "mix" in entry:
        parts = tuple(build(k, unit) for k in entry["mix"])
        given = tuple(float(w) for w in entry.get("weights", ()))
        if given and (len(given) != len(parts) or min(given) < 0 or sum(given) <= 0):
            raise TrustlabError(f"builds.toml [builds.{kind}]: weights {list(given)} must be one non-negative "
                                f"number per mix part {entry['mix']}")
        weights = _weights(parts, given)
        mid = math.exp(sum(w * math.log(p.mid) for p, w in zip(parts, weights)))
        return Factor(kind, entry["label"], min(p.lo for p in parts), mid, max(p.hi for p in parts),
                      entry["source"], parts, weights)
    lo, mid, hi = entry[unit] if unit in entry else entry["factor"]
    return Factor(kind, entry["label"], float(lo), float(mid), float(hi), entry["source"])


def units(kind: str) -> tuple[Factor, Factor]:
    """(Keccak, arithmetic) factors of one build kind."""
    return build(kind, KECCAK), build(kind, ARITH)


def per_unit(kind: str) -> bool:
    """Whether the kind moves Keccak and the other units by different factors."""
    entry = _doc()["builds"][kind]
    return any(per_unit(k) for k in entry["mix"]) if "mix" in entry else KECCAK in entry


def text(kind: str) -> str:
    """The build kind's factors as provenance text: one range, or one per counted unit."""
    keccak, arith = units(kind)
    if not per_unit(kind):
        return arith.text()
    lo_k, hi_k = keccak.quantiles()
    lo_a, hi_a = arith.quantiles()
    return (f"{arith.label}: Keccak x{lo_k:.3g}-x{hi_k:.3g} (centre x{keccak.mid:.3g}), other units "
            f"x{lo_a:.3g}-x{hi_a:.3g} (centre x{arith.mid:.3g}) (5-95%; {arith.source})")


_LEVEL = re.compile(r"-o(fast|[0-3sgz])\b")


def build_kind(text: str | None) -> str:
    """The build kind a free-text build field names: an explicit -O level first, then words."""
    if not text:
        return UNKNOWN
    t = str(text).strip().lower()
    if t in _doc()["builds"]:
        return t
    m = _LEVEL.search(t)
    if m:
        level = m.group(1)
        return {"0": "debug", "g": "og", "s": "size", "z": "size", "2": "o2"}.get(level, "speed")
    if re.search(r"\bdebug\b", t):
        return "debug"
    if "minsizerel" in t:
        return "size"
    if re.search(r"\b(release|relwithdebinfo|benchmark)\b", t):
        return "speed"
    if re.search(r"application|\bide\b|cubeide|\bproject\b", t):  # an IDE / RTOS project, level unstated
        return "application"
    return UNKNOWN


NOT_A_LEVEL = (UNKNOWN, "assembly")
"""Build kinds that are no build a source can report: unknown (nothing said) and hand-written assembly (an
implementation, set by a source's ``implementation``, not by its build text)."""


def stated_kinds() -> tuple[str, ...]:
    """The build kinds a source's build text can name (:func:`build_kind`): the parts of the unknown build."""
    return tuple(k for k in kinds() if k not in NOT_A_LEVEL)


def base_rate_counts(build_texts) -> dict[str, int]:
    """How many of the given build fields name each stated kind, read by :func:`build_kind` (absent or
    unrecognised: unknown, not counted); every stated kind is listed, with 0 where none names it."""
    named = [build_kind(t) for t in build_texts]
    return {k: named.count(k) for k in stated_kinds()}


def base_rate_weights(counts: dict[str, int], floor: float) -> dict[str, float]:
    """Mixture weights proportional to the counts, no kind below ``floor``: a kind whose share would be below
    it gets the floor, the others share the rest in proportion to their counts (repeated until no share is
    below the floor). A rare kind is under-sampled by a handful of sources (one more source can double its
    count), so a count of 0 or 1 is no evidence that a new chip's build is almost never of that kind."""
    if floor * len(counts) > 1.0:
        raise TrustlabError(f"a floor of {floor} for each of {len(counts)} build kinds is more than the whole")
    floored: set[str] = set()
    while True:
        free = {k: n for k, n in counts.items() if k not in floored}
        rest, total = 1.0 - floor * len(floored), sum(free.values())
        shares = {k: rest * (n / total if total else 1.0 / len(free)) for k, n in free.items()}
        low = {k for k, w in shares.items() if w < floor}
        if not low:
            return {k: shares.get(k, floor) for k in counts}
        floored |= low


def timer_kind(text: str | None, unit: str) -> str:
    """The timer kind a free-text timer field names; absent or unrecognised: by the row's unit."""
    t = str(text or "").strip().lower()
    if "tsc" in t:  # rdtsc, __rdtsc, TSC
        return "tsc"
    if re.search(r"dwt|cyccnt|pmu|perf|pfm|cycle|systick", t):
        return "cycles"
    if re.search(r"wall|clock|time|millis|micros|\bms\b|\bus\b", t):
        return "wall"
    return "cycles" if unit == "cycles" else "wall"


def timer(kind: str, platform: str = "") -> Factor:
    """What the timer reports per core cycle. rdtsc on a CPU named in ``platform`` (data file's
    ``cpus``) spans base / max turbo .. 1; an unnamed CPU takes the data file's generic range."""
    entry = _doc()["timers"][kind]
    if kind == "tsc":
        key = platform.lower()
        for name, cpu in _doc().get("cpus", {}).items():
            if name in key:
                lo = cpu["base_ghz"] / cpu["turbo_ghz"]
                return Factor(kind, f"rdtsc on a named CPU ({name})", lo, math.sqrt(lo), 1.0,
                              f"TSC ticks per core cycle base / running clock = {lo:.2f}-1: {cpu['source']}")
    lo, mid, hi = entry["factor"]
    return Factor(kind, entry["label"], float(lo), float(mid), float(hi), entry["source"])


ASSEMBLY = "optimized"
"""A source's ``implementation`` for hand-written assembly: the compiler's level does not change it."""


def of_source(source: dict, unit: str) -> tuple[Factor, Factor]:
    """(build, timer) factors of one measurement source (fields ``build``, ``timer`` may be absent); the
    build factor returned is the one on the arithmetic units, its ``kind`` names both (:func:`units`).
    Hand-written assembly (``implementation = "optimized"``) takes the assembly build whatever the flags."""
    kind = "assembly" if source.get("implementation") == ASSEMBLY else build_kind(source.get("build"))
    return (build(kind),
            timer(timer_kind(source.get("timer"), unit), str(source.get("platform", ""))))

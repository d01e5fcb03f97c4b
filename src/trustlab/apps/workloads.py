"""Request sequences for virtual counters: who is asked for what, in which order.

The counters paper (Section IV) drives 1024 virtual counters with two request
sequences: round-robin, and "randomized" requests drawn from Zipf's law. How a
sequence interleaves counters is what decides the log-based scheme's cost (a
READ must carry every increment issued since the counter's own last one), so
the generators here are exact, seeded and reproducible, and the gap statistics
the paper reports (Section V-D) are computed from the sequence itself.

Distributions of counter IDs (all return a ``numpy`` array of ints in
``[0, n)``):

* :func:`round_robin` - 0, 1, ..., n-1, 0, 1, ...
* :func:`uniform` - independent uniform draws.
* :func:`zipf_bounded` - the paper's bounded Zipf law: counter ``k`` (1-based
  rank) drawn with probability ``k^-(rho+1) / H(n, rho+1)``, the finite form of
  the paper's ``D(x) = H(x, rho+1) / zeta(rho+1)``. Exact inverse-CDF sampling.
* :func:`zipf_ycsb` - YCSB's ``ZipfianGenerator`` (Gray et al.'s rejection-free
  method) with Zipf constant 0.99 by default, optionally *scrambled* exactly as
  YCSB's ``ScrambledZipfianGenerator`` does (draw over 10^10 items, FNV-1 64-bit
  hash, modulo n), so popular counters are spread over the ID space.

A request stream is then built with :func:`make_requests`: ``increment`` (every
draw increments), ``read`` (every draw is a purchase: READ the counter, then
INCREMENT it - the wallet's pattern, so a read sees the counter's real increment
gap), or a read/increment mix. :func:`load_trace` replays a trace file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from trustlab.errors import TrustlabError

READ = "read"
INCREMENT = "increment"
OPS = (READ, INCREMENT)

YCSB_ZIPFIAN_CONSTANT = 0.99
"""YCSB's default Zipf constant (``ZipfianGenerator.ZIPFIAN_CONSTANT``)."""
YCSB_ITEM_COUNT = 10_000_000_000
"""Items the scrambled generator draws over before hashing (YCSB's ITEM_COUNT)."""
YCSB_ZETAN = 26.46902820178302
"""YCSB's precomputed zeta(10^10, 0.99) used by ScrambledZipfianGenerator."""
FNV_OFFSET_BASIS_64 = 0xCBF29CE484222325
FNV_PRIME_64 = 1099511628211

DISTRIBUTIONS = ("roundrobin", "zipf", "uniform")
ZIPF_MODES = ("bounded", "ycsb", "scrambled")


@dataclass(frozen=True)
class Request:
    """One request to the prover: a counter ID and READ or INCREMENT.

    ``timed`` is False for requests that only move the system to the state a
    measured request needs (the INCREMENT after a measured READ).
    """

    counter: int
    op: str
    timed: bool = True


# ---- counter-ID distributions ------------------------------------------------


def _check(n: int, requests: int) -> None:
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise TrustlabError(f"number of counters must be a positive integer, got {n!r}")
    if not isinstance(requests, (int, np.integer)) or requests < 0:
        raise TrustlabError(f"number of requests must be a non-negative integer, got {requests!r}")


def round_robin(n: int, requests: int) -> np.ndarray:
    """Counters in order, wrapping around: the paper's round-robin sequence."""
    _check(n, requests)
    return np.arange(requests, dtype=np.int64) % n


def uniform(n: int, requests: int, seed: int = 0) -> np.ndarray:
    """Independent uniform counter IDs."""
    _check(n, requests)
    return np.random.default_rng(seed).integers(0, n, size=requests, dtype=np.int64)


def zipf_pmf(n: int, exponent: float) -> np.ndarray:
    """Probabilities of ranks 1..n under a bounded Zipf law ``k^-exponent``."""
    if not math.isfinite(exponent) or exponent <= 0:
        raise TrustlabError(f"Zipf exponent must be a positive number, got {exponent!r}")
    weights = np.arange(1, n + 1, dtype=np.float64) ** -exponent
    return weights / weights.sum()


def zipf_bounded(n: int, requests: int, rho: float | None = None, seed: int = 0,
                 exponent: float | None = None) -> np.ndarray:
    """The paper's Zipf law bounded to ``n`` counters; counter 0 is rank 1.

    The paper writes the law with a positive parameter ``rho`` and exponent
    ``rho + 1``; pass either ``rho`` or the exponent itself (default: YCSB's
    constant 0.99 as the exponent, so both modes compare like for like).
    """
    _check(n, requests)
    if rho is not None and exponent is not None:
        raise TrustlabError("give the Zipf law either rho or exponent, not both")
    if rho is not None:
        if not math.isfinite(rho) or rho <= 0:
            raise TrustlabError(f"Zipf parameter rho must be positive (paper, Sec. IV), got {rho!r}")
        exponent = rho + 1.0
    if exponent is None:
        exponent = YCSB_ZIPFIAN_CONSTANT
    cdf = np.cumsum(zipf_pmf(n, exponent))
    cdf[-1] = 1.0
    u = np.random.default_rng(seed).random(requests)
    return np.searchsorted(cdf, u, side="right").astype(np.int64)


def _zeta(n: int, theta: float) -> float:
    """sum_{i=1..n} i^-theta; exact up to 10^6 terms, Euler-Maclaurin tail beyond."""
    head = min(n, 1_000_000)
    total = float(np.sum(np.arange(1, head + 1, dtype=np.float64) ** -theta))
    if n > head:
        a, b = float(head), float(n)
        if theta == 1.0:
            integral = math.log(b / a)
        else:
            integral = (b ** (1 - theta) - a ** (1 - theta)) / (1 - theta)
        # sum_{a+1..b} f ~= integral_a^b f + (f(b) - f(a))/2 - (f'(b) - f'(a))/12
        total += integral + (b ** -theta - a ** -theta) / 2 \
            + theta * (b ** (-theta - 1) - a ** (-theta - 1)) / 12
    return total


def _ycsb_ranks(items: int, u: np.ndarray, theta: float, zetan: float) -> np.ndarray:
    """YCSB ZipfianGenerator.nextLong for uniform draws ``u`` (ranks from 0)."""
    if not 0 < theta < 1:
        raise TrustlabError(f"YCSB Zipf constant must be in (0, 1), got {theta!r}")
    alpha = 1.0 / (1.0 - theta)
    zeta2 = 1.0 + 0.5 ** theta
    # two items: zetan is zeta2 and YCSB's eta is 0/0 (NaN in Java), but then every draw is rank 0 or 1 below
    eta = (1 - (2.0 / items) ** (1 - theta)) / (1 - zeta2 / zetan) if zetan != zeta2 else 0.0
    uz = u * zetan
    ranks = (items * np.power(eta * u - eta + 1, alpha)).astype(np.int64)
    ranks = np.where(uz < 1.0 + 0.5 ** theta, 1, ranks)
    ranks = np.where(uz < 1.0, 0, ranks)
    return ranks


def fnv1_64(values: np.ndarray) -> np.ndarray:
    """YCSB's ``Utils.fnvhash64``: FNV-1 over the 8 little-endian bytes, then abs()."""
    v = values.astype(np.uint64)
    h = np.full(v.shape, FNV_OFFSET_BASIS_64, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for _ in range(8):
            h = (h ^ (v & np.uint64(0xFF))) * np.uint64(FNV_PRIME_64)
            v = v >> np.uint64(8)
    signed = h.view(np.int64)
    # Java's Math.abs(Long.MIN_VALUE) stays negative; that value is 1 in 2^64.
    return np.abs(signed)


def zipf_ycsb(n: int, requests: int, constant: float = YCSB_ZIPFIAN_CONSTANT, seed: int = 0,
              scrambled: bool = False) -> np.ndarray:
    """YCSB's Zipfian (or ScrambledZipfian) generator over ``n`` counters."""
    _check(n, requests)
    u = np.random.default_rng(seed).random(requests)
    if not scrambled:
        return np.minimum(_ycsb_ranks(n, u, constant, _zeta(n, constant)), n - 1)
    zetan = YCSB_ZETAN if constant == YCSB_ZIPFIAN_CONSTANT else _zeta(YCSB_ITEM_COUNT + 1, constant)
    ranks = _ycsb_ranks(YCSB_ITEM_COUNT + 1, u, constant, zetan)
    return fnv1_64(ranks) % n


def counter_ids(distribution: str, n: int, requests: int, *, seed: int = 0,
                zipf_mode: str = "bounded", zipf_constant: float = YCSB_ZIPFIAN_CONSTANT,
                rho: float | None = None) -> np.ndarray:
    """Dispatch by name (the experiments' ``--workload``)."""
    if distribution == "roundrobin":
        return round_robin(n, requests)
    if distribution == "uniform":
        return uniform(n, requests, seed)
    if distribution == "zipf":
        if zipf_mode == "bounded":
            if rho is not None:
                return zipf_bounded(n, requests, rho=rho, seed=seed)
            return zipf_bounded(n, requests, exponent=zipf_constant, seed=seed)
        if zipf_mode in ("ycsb", "scrambled"):
            return zipf_ycsb(n, requests, zipf_constant, seed, scrambled=zipf_mode == "scrambled")
        raise TrustlabError(f"unknown Zipf mode {zipf_mode!r} (known: {', '.join(ZIPF_MODES)})")
    raise TrustlabError(f"unknown workload {distribution!r} (known: {', '.join(DISTRIBUTIONS)})")


# ---- request streams ---------------------------------------------------------


class RequestStream:
    """The requests :func:`make_requests` lists, made one at a time from the IDs.

    A 10^6-request run must not hold 10^6 request objects (about 100 MB):
    this keeps the IDs (4 bytes each where they fit) and yields each :class:`Request` when
    the runner asks for it. It can be iterated again (each scheme of an
    experiment replays the same stream), and its length is known.
    """

    def __init__(self, ids: Iterable[int], op: str, read_fraction: float | None = None, seed: int = 0) -> None:
        wide = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids), dtype=np.int64).reshape(-1)
        # 4 bytes an ID where they fit (counter IDs below 2^32: 4 MiB less at 10^6 requests); .tolist()
        # gives the same Python ints either way
        fits = wide.size == 0 or (int(wide.min()) >= 0 and int(wide.max()) <= 0xFFFFFFFF)
        self.ids = wide.astype(np.uint32) if fits else wide
        if read_fraction is not None:
            if not 0.0 <= read_fraction <= 1.0:
                raise TrustlabError(f"read fraction must be in [0, 1], got {read_fraction}")
            self.coins: np.ndarray | None = np.random.default_rng(seed ^ 0x5EED).random(len(self.ids))
        elif op not in OPS:
            raise TrustlabError(f"unknown operation {op!r} (known: {', '.join(OPS)})")
        else:
            self.coins = None
        self.op = op
        self.read_fraction = read_fraction

    def __len__(self) -> int:
        return len(self.ids) * (2 if self.coins is None and self.op == READ else 1)

    def __iter__(self) -> Iterator[Request]:
        step = 1 << 12  # IDs become Python ints a chunk at a time (a small one: 160 KB of ints)
        for start in range(0, len(self.ids), step):
            ids = self.ids[start:start + step].tolist()
            if self.coins is not None:
                fraction = self.read_fraction
                for c, r in zip(ids, self.coins[start:start + step].tolist()):
                    yield Request(c, READ if r < fraction else INCREMENT)
            elif self.op == INCREMENT:
                for c in ids:
                    yield Request(c, INCREMENT)
            else:
                for c in ids:
                    yield Request(c, READ)
                    yield Request(c, INCREMENT, timed=False)


def make_requests(ids: Iterable[int], op: str, read_fraction: float | None = None,
                  seed: int = 0) -> list[Request]:
    """Turn counter IDs into requests.

    ``op="increment"``: each ID is an INCREMENT. ``op="read"``: each ID is a
    purchase - a timed READ followed by an untimed INCREMENT, so reads see the
    increment gaps the distribution produces (paper, Sec. V-C/D). With
    ``read_fraction`` the stream is a mix: each ID is a READ with that
    probability, else an INCREMENT, all timed. :class:`RequestStream` gives
    the same requests without holding them all.
    """
    return list(RequestStream(ids, op, read_fraction, seed))


_OP_ALIASES = {"read": READ, "r": READ, "inc": INCREMENT, "increment": INCREMENT, "i": INCREMENT,
               "update": INCREMENT}


def load_trace(path: Path | str, n: int | None = None) -> list[Request]:
    """Replay a trace: one request per line, ``OP COUNTER`` (comma or space separated).

    OP is read/increment (also r, i, inc, update, any case); ``#`` starts a
    comment. With ``n`` every counter must lie in ``[0, n)``. Errors name the
    file and line.
    """
    from trustlab import limits
    from trustlab.errors import excerpt

    name = limits.shown(path)
    out: list[Request] = []
    # a line at a time, bounded (a regular file only): a 20 MB line of NULs or /dev/zero is one short error
    for lineno, raw in limits.iter_lines(path, "trace", limits.MAX_TRACE_BYTES, max_line=4096):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.replace(",", " ").split()
        if len(fields) != 2:
            raise TrustlabError(f"{name}:{lineno}: expected 'OP COUNTER', got {excerpt(raw.strip())}")
        op = _OP_ALIASES.get(fields[0].lower())
        if op is None:
            raise TrustlabError(f"{name}:{lineno}: unknown operation {excerpt(fields[0])} (use read or increment)")
        try:
            counter = int(fields[1]) if len(fields[1]) <= 20 else None
        except ValueError:
            counter = None
        if counter is None:
            raise TrustlabError(f"{name}:{lineno}: counter must be an integer, got {excerpt(fields[1])}")
        if counter < 0 or (n is not None and counter >= n):
            raise TrustlabError(f"{path}:{lineno}: counter {counter} outside 0..{(n or 1) - 1}")
        out.append(Request(counter, op))
    return out


def save_trace(requests: Sequence[Request], path: Path | str) -> None:
    """Write requests in the format :func:`load_trace` reads."""
    Path(path).write_text("".join(f"{r.op} {r.counter}\n" for r in requests), encoding="utf-8")


# ---- statistics --------------------------------------------------------------


def update_gaps(requests: Sequence[Request]) -> list[int]:
    """For every request, |U_t|: updates of other counters since its counter's last update.

    This is the paper's ``U_t`` (Sec. III-B) - the number of increment
    certificates a log-based READ must carry besides the counter's own. For a
    counter never updated, ``p_t = 0`` and every earlier update counts.
    """
    last: dict[int, int] = {}
    updates = 0
    gaps = []
    for r in requests:
        gaps.append(updates - last.get(r.counter, 0))
        if r.op == INCREMENT:
            updates += 1
            last[r.counter] = updates
    return gaps


def increment_gaps(ids: Iterable[int]) -> np.ndarray:
    """The paper's "increment gap" (Sec. V-D) of every repeat increment in a stream.

    For each increment of counter x that follows an earlier increment of x: the
    number of increments of other counters in between.
    """
    # Vectorised (a 10^6-request stream made a dict and a list of a million Python ints, whose
    # memory the process kept): positions grouped by counter in time order, then the gap of each
    # repeat, ordered by when the repeat happened - the same array a loop over the stream builds.
    arr = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids), dtype=np.int64).reshape(-1)
    if arr.size < 2:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(arr, kind="stable")
    ordered = arr[order]
    repeat = ordered[1:] == ordered[:-1]
    later, earlier = order[1:][repeat], order[:-1][repeat]
    return (later - earlier - 1)[np.argsort(later, kind="stable")]


@dataclass(frozen=True)
class GapStats:
    """Summary of increment gaps: the paper reports the largest (700 of 1024)."""

    count: int
    max: int
    mean: float
    median: float
    p99: float
    distinct_counters: int

    def to_dict(self) -> dict[str, float]:
        return {"count": self.count, "max": self.max, "mean": self.mean, "median": self.median,
                "p99": self.p99, "distinct_counters": self.distinct_counters}


def gap_stats(ids: Sequence[int] | np.ndarray) -> GapStats:
    arr = np.asarray(ids, dtype=np.int64)
    gaps = increment_gaps(arr)
    distinct = int(np.unique(arr).size) if arr.size else 0
    if gaps.size == 0:
        return GapStats(0, 0, 0.0, 0.0, 0.0, distinct)
    return GapStats(int(gaps.size), int(gaps.max()), float(gaps.mean()), float(np.median(gaps)),
                    float(np.percentile(gaps, 99)), distinct)

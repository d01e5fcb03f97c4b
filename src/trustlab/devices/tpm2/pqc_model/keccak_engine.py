"""A hardware Keccak engine beside the core: what SHAKE / SHA-3 cost the CPU when an engine runs them.

Many security chips (OpenTitan / zeroRISC Pavona's KMAC, secure controllers with a hash engine) run the
Keccak-f[1600] permutations on an engine while the NTTs, sampling and the rest of ML-KEM / ML-DSA run on
the CPU. Priced in software, those permutations are the largest part of an ML-DSA key generation or
verification; on the engine, what the CPU pays is the data it moves through the engine's register
interface and the time it waits for the rounds. So a chip with an engine prices its counted Keccak units
here, in cycles of the core clock, and everything else at the core's speed as before (:mod:`.estimate`).

Two ways to say it (``--chip``): a named engine of ``data/chips.toml`` ``[keccak_engines]`` whose per-
permutation cost is built from its sourced mechanism (rate words x cycles per word moved + 24 rounds x
cycles per round + the block's load into the state), or ``keccak_cycles=N`` (or a range) when the user
knows the cycles per permutation including the interface; ``keccak_call_cycles`` adds a per-sponge-call
set-up cost. Every figure is a range; one quantile draws the whole engine (its ends go together). The
cycles are the engine's and its driver's own: neither the core class's work per clock nor the build
factor scales them (the driver's range is read off its code as built).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from trustlab.devices.tpm2.pqc_model import builds
from trustlab.errors import TrustlabError

ROUNDS = 24
"""Keccak-f[1600] has 24 rounds (FIPS 202 Sec. 3.3: 12 + 2l, l = 6)."""
NONE = "none"
GIVEN = "given"
CYCLES_RANGE = (1.0, 1e6)
"""Cycles per permutation or per call a chip can take (beyond: a typo; software Keccak is ~1e4)."""


@dataclass(frozen=True)
class KeccakEngine:
    """Core-clock cycles the CPU spends per Keccak-f[1600] permutation and per sponge call (low, centre, high)."""

    kind: str
    label: str
    perm_cycles: tuple[float, float, float]
    call_cycles: tuple[float, float, float]
    source: str

    def per_permutation(self, u):
        return builds.piecewise(*self.perm_cycles, u)

    def per_call(self, u):
        lo, mid, hi = self.call_cycles
        if hi == 0:
            return lo
        if lo == 0:  # 'between none and HI' (keccak_call_cycles=0-HI): uniform, a log-uniform draw cannot reach 0
            return hi * u
        return builds.piecewise(lo, mid, hi, u)

    def text(self) -> str:
        lo, mid, hi = self.perm_cycles
        c_lo, _, c_hi = self.call_cycles
        return (f"Keccak on an engine ({self.kind}: {self.label}): {lo:.4g}-{hi:.4g} core cycles per permutation "
                f"(centre {mid:.4g}), {c_lo:.4g}-{c_hi:.4g} per sponge call, at the core clock (not scaled by the "
                f"class or the build); the NTT and the other counted units stay on the core; {self.source}")


def _doc() -> dict:
    from trustlab.devices.tpm2.pqc_model import chips

    return chips._doc().get("keccak_engines", {})


def names() -> tuple[str, ...]:
    return tuple(_doc())


def _mid(lo: float, hi: float) -> float:
    return math.sqrt(lo * hi) if lo > 0 else (lo + hi) / 2


def _entry(name: str) -> dict:
    doc = _doc()
    entry = dict(doc[name])
    like = entry.pop("like", None)
    return {**doc[like], **entry} if like else entry


_ENDS = (lambda r: r[0], lambda r: _mid(*r), lambda r: r[1])
"""(low, centre, high) of a [lo, hi] range: its ends and the middle :func:`_mid` takes."""


def _call_range(call: tuple[float, float]) -> tuple[float, float, float]:
    """The user's per-call cycles (LO, HI) as (low, centre, high); (0, 0) is no per-call cost."""
    c_lo, c_hi = call
    return c_lo, _mid(c_lo, c_hi) if c_hi else 0.0, c_hi


@functools.cache
def named(name: str) -> KeccakEngine:
    """A chips.toml engine: per permutation = rate words x cycles per word + 24 x cycles per round + state load."""
    if name not in _doc():
        raise TrustlabError(f"unknown Keccak engine {name!r}: use one of {', '.join((NONE,) + names())}, or "
                            "keccak_cycles=N (core cycles per permutation, interface included)")
    e = _entry(name)
    ends = tuple(pick(e["rate_words"]) * pick(e["word_cycles"]) + ROUNDS * pick(e["round_cycles"])
                 + pick(e["state_load_cycles"]) for pick in _ENDS)
    call = tuple(pick(e["call_cycles"]) for pick in _ENDS)
    source = "; ".join(f"{what}: {e[key]}" for what, key in (
        ("engine", "source"), ("words per block", "rate_source"), ("cycles per round", "round_source"),
        ("state load", "state_load_source"), ("cycles per word moved", "word_source"),
        ("per call", "call_source")))
    return KeccakEngine(name, e["label"], ends, call, source)


def given(perm: tuple[float, float], call: tuple[float, float] = (0.0, 0.0)) -> KeccakEngine:
    """``keccak_cycles=N`` (or LO-HI) and ``keccak_call_cycles``: the user's own figures."""
    lo, hi = perm
    return KeccakEngine(GIVEN, "cycles per permutation as given", (lo, math.sqrt(lo * hi), hi), _call_range(call),
                        "given (--chip keccak_cycles)")


def with_calls(engine: KeccakEngine, call: tuple[float, float]) -> KeccakEngine:
    """The engine with the user's per-call cycles in place of its own."""
    return KeccakEngine(engine.kind, engine.label, engine.perm_cycles, _call_range(call),
                        engine.source + "; per call: given (--chip keccak_call_cycles)")


def listing() -> list[tuple[str, str, dict, str]]:
    """(name, range text, the same numbers as data, source) of every named engine, for the assumptions list.

    Text and numbers are read from the same engine tuples here, so a script reading the numbers never
    has to parse the text."""
    out = []
    for name in names():
        e = named(name)
        (p_lo, p_mid, p_hi), (c_lo, c_mid, c_hi) = e.perm_cycles, e.call_cycles
        values = {"permutation": {"low": float(p_lo), "centre": float(p_mid), "high": float(p_hi), "unit": "core cycles"},
                  "sponge_call": {"low": float(c_lo), "centre": float(c_mid), "high": float(c_hi), "unit": "core cycles"}}
        out.append((name, f"{p_lo:.4g}-{p_hi:.4g} core cycles per Keccak-f[1600] permutation "
                          f"(centre {p_mid:.4g}), {c_lo:.4g}-{c_hi:.4g} per sponge call", values, e.source))
    return out

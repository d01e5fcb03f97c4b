"""Hand-written assembly's speed-up on the arithmetic, per core class, from paired published measurements.

Why its own module: pqm4's Cortex-M4 assembly (the implementation factor of :mod:`.estimate` on classes with
cores.toml ``assembly = true``) needs the DSP extension, so a Cortex-M3 (SecurCore SC300) or a RISC-V core had no
sourced speed-up at all, and assembly code there was priced as portable C. Where a publication measures the same
scheme on the same board once as portable C and once with assembly arithmetic, linking the same Keccak
(``data/asm_pairs.toml``), the pair gives that class's speed-up on the non-Keccak work directly:
clean x (1 - clean hash share) / (asm x (1 - asm hash share)).

Per family and operation: the centre is the geometric mean of the operation's pairs (one per parameter set); the
range is the whole family's spread over its operations and parameter sets (from its slowest to its fastest
speed-up), since another assembly code base on another board may sit anywhere the measured code does across
operations (one publication per class: no between-source spread is measured). Leave-one-source-out: pairs of an
excluded source are dropped (:func:`factor`), and so are pairs whose assembly side is an excluded source's own code
(a pair's ``also_excludes``: :func:`excluded`); a class left without pairs has no speed-up.
"""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass
from importlib import resources

from trustlab.devices.tpm2.pqc_model.coredata import resolve
from trustlab.devices.tpm2.pqc_model.params import check_operation, family
from trustlab.errors import TrustlabError


@dataclass(frozen=True)
class Speedup:
    """The assembly's speed-up on the non-Keccak work (C time / assembly time) of one family's operation."""

    lo: float
    mid: float
    hi: float
    pairs: int
    text: str


@functools.cache
def pairs() -> tuple[dict, ...]:
    text = (resources.files("trustlab.devices.tpm2.pqc_model") / "data" / "asm_pairs.toml").read_text("utf-8")
    return tuple(check(p) for p in tomllib.loads(text)["pairs"])


PAIR_KEYS = ("class", "source", "where", "scheme", "algorithm", "clean", "asm", "clean_hash_share", "asm_hash_share")


def check(pair: dict) -> dict:
    """``pair`` if its data can price a speed-up, else a one-line error naming its scheme and what is wrong: every
    key present, a known class and algorithm, each operation of the clean side on the assembly side with both
    hashing shares, cycles positive and shares in [0, 1) (a share of 1 leaves no non-Keccak work to divide)."""
    where = f"data/asm_pairs.toml pair {pair.get('scheme', '(no scheme)')!r}"
    missing = [k for k in PAIR_KEYS if k not in pair]
    if missing:
        raise TrustlabError(f"{where}: {missing[0]} is missing")
    try:
        resolve(str(pair["class"]))
        check_operation(pair["algorithm"], "keygen")
    except TrustlabError as exc:
        raise TrustlabError(f"{where}: {exc}") from None
    table = next((k for k in PAIR_KEYS[5:] if not isinstance(pair[k], dict)), None)
    if table is not None:
        raise TrustlabError(f"{where}: {table} is not a table of operations")
    if not pair["clean"]:
        raise TrustlabError(f"{where}: clean has no operation")
    for op in pair["clean"]:
        try:
            check_operation(pair["algorithm"], op)
        except TrustlabError as exc:
            raise TrustlabError(f"{where}: {exc}") from None
        for side in ("asm", "clean_hash_share", "asm_hash_share"):
            if op not in pair[side]:
                raise TrustlabError(f"{where}: {side} has no {op} (clean has)")
        for side in ("clean", "asm"):
            value = pair[side][op]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise TrustlabError(f"{where}: {side}.{op} = {value!r} is not a positive cycle count")
        for side in ("clean_hash_share", "asm_hash_share"):
            value = pair[side][op]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise TrustlabError(f"{where}: {side}.{op} = {value!r} is outside [0, 1)")
    return pair


def pair_speedup(pair: dict, operation: str) -> float:
    """One pair's speed-up on the non-Keccak work of ``operation`` (both sides' own hashing shares removed)."""
    clean = pair["clean"][operation] * (1.0 - pair["clean_hash_share"][operation])
    asm = pair["asm"][operation] * (1.0 - pair["asm_hash_share"][operation])
    return clean / asm


def excluded(pair: dict, exclude: frozenset[str]) -> bool:
    """Whether leaving out the sources in ``exclude`` drops ``pair``: it belongs to one of them (``source``), or its
    assembly side is one of them's own code (``also_excludes``: a source must not be predicted from a measurement of
    its own code)."""
    return pair["source"] in exclude or any(s in exclude for s in pair.get("also_excludes", ()))


def _of(cls: str, fam: str, exclude: frozenset[str]) -> list[dict]:
    return [p for p in pairs() if p["class"] == cls and family(p["algorithm"]) == fam and not excluded(p, exclude)]


def has(core: str, exclude: frozenset[str] = frozenset(), algorithm: str | None = None) -> bool:
    """Whether the core's class has a sourced assembly speed-up without ``exclude``: a pair of ``algorithm``'s family
    (as :func:`factor` prices it), or with no algorithm of any family (a chip's statement, before it is priced)."""
    cls = resolve(core)
    fam = family(algorithm) if algorithm is not None else None
    return any(p["class"] == cls and not excluded(p, exclude) and (fam is None or family(p["algorithm"]) == fam)
               for p in pairs())


@functools.cache
def factor(core: str, algorithm: str, operation: str, exclude: frozenset[str] = frozenset()) -> Speedup | None:
    """The class's assembly speed-up on ``operation``'s non-Keccak work (None: no pair for the family)."""
    cls, fam = resolve(core), family(algorithm)
    found = _of(cls, fam, exclude)
    if not found:
        return None
    every = [pair_speedup(p, op) for p in found for op in p["clean"]]
    own = [pair_speedup(p, operation) for p in found if operation in p["clean"]]
    mid = math.exp(sum(math.log(x) for x in own) / len(own)) if own else math.sqrt(min(every) * max(every))
    sources = sorted({p["where"] for p in found})
    schemes = ", ".join(p["scheme"] for p in found)
    return Speedup(min(every), mid, max(every), len(found),
                   f"{cls} assembly arithmetic on {fam}: x{mid:.2f} faster non-Keccak work on {operation} (range "
                   f"x{min(every):.2f}-x{max(every):.2f} over the family's operations and parameter sets), from the "
                   f"paired portable-C / assembly measurements of {schemes} ({'; '.join(sources)}; "
                   "data/asm_pairs.toml)")

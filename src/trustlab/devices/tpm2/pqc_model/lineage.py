"""Implementation lineage: which code base a chip's portable C comes from, and what that does to its time.

Why this is its own factor: the core classes (:mod:`.classes`) are fitted on portable-C rows and the Cortex-M4
basis is pqm4 'clean' (PQClean clean): reference-lineage C (pq-crystals ref and what derives from it).
mlkem-native's C runs the same counted work faster on the same core (its own arithmetic, caches and sampling):
a code-base difference that neither the build (:mod:`.builds`) nor the implementation (portable / assembly)
names. So the model states one basis, the reference lineage, and converts every figure to it:

* a measurement source says which code base it ran (``lineage = "reference" | "mlkem-native" | "mldsa-native" |
  "wolfcrypt" | "unknown"`` in pqc_measurements.toml, or a table by family when its ML-KEM and its ML-DSA come
  from different code bases: ``lineage = {ML-KEM = "reference", ML-DSA = "wolfcrypt"}``) and its work per clock
  is brought to the reference basis (x the lineage's centre) before its class pools it;
* a chip says it with ``--chip lineage=...`` (default unknown: :func:`unknown_rule`), or in a ``--chip`` TOML file
  with the same table by family (:func:`statement`).

The factors are our own same-core measurements (``data/lineage.toml``: the Cortex-M4 cycle model for
microcontroller classes, an x86-64 core for application classes, per counted unit), never the validation rows.
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources

from trustlab.devices.tpm2.pqc_model import builds, coredata
from trustlab.errors import TrustlabError, choice

REFERENCE, UNKNOWN = "reference", "unknown"
UNITS = (builds.KECCAK, builds.ARITH)


@functools.cache
def _doc() -> dict:
    text = (resources.files("trustlab.devices.tpm2.pqc_model") / "data" / "lineage.toml").read_text("utf-8")
    return tomllib.loads(text)["lineages"]


def kinds() -> tuple[str, ...]:
    return tuple(_doc())


def unknown_rule() -> str:
    return "lineage not stated (the --chip default): " + _doc()[UNKNOWN]["source"]


def check(kind, where: str) -> str:
    return choice(kind, kinds(), "lineage", where)


FAMILIES = ("ML-KEM", "ML-DSA")


Statement = str | tuple[tuple[str, str], ...]
"""A lineage as stated: one code base for both families, or (family, code base) for each of :data:`FAMILIES`."""


def statement(value, where: str) -> Statement:
    """A lineage statement read from a source or a ``--chip`` TOML file: one name, or a table naming the code base
    of each family, exactly ML-KEM and ML-DSA (a chip prices both, so a table must say both; one code base for
    both is one name). A bad entry is an error naming its family."""
    if not isinstance(value, dict):
        return check(value, where)
    names = [str(k).strip().upper() for k in value]  # ml-kem as ML-KEM
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # ML-KEM and ml-kem both given: two answers for one family
        raise TrustlabError(f"{where}: lineage table names {', '.join(twice)} more than once (keys differ only in "
                            "case or spaces)")
    value = dict(zip(names, value.values()))
    unknown = sorted(set(value) - set(FAMILIES))
    missing = [f for f in FAMILIES if f not in value]
    if unknown or missing:
        raise TrustlabError(f"{where}: lineage table needs exactly the families {', '.join(FAMILIES)} "
                            f"(got {', '.join(sorted(value)) or 'none'}"
                            + (f"; {', '.join(missing)} missing" if missing else "") + ")")
    return tuple((fam, choice(value[fam], kinds(), f"lineage.{fam}", where)) for fam in FAMILIES)


def for_family(stated: Statement, family: str) -> str:
    """The code base a statement gives ``family``."""
    return stated if isinstance(stated, str) else dict(stated)[family]


def shown(stated: Statement) -> str | dict[str, str]:
    """A statement as JSON shows it: the name, or the table by family."""
    return stated if isinstance(stated, str) else dict(stated)


def of_source(source: dict, family: str) -> str:
    """The code base a measurement source ran for ``family`` (its ``lineage`` field, one name or a table by
    family; every source must state one)."""
    kind, where = source.get("lineage"), f"measurement source {source.get('id')!r}"
    if kind is None:
        raise TrustlabError(f"{where}: lineage is missing ({', '.join(kinds())})")
    return for_family(statement(kind, where), family)


def _group(core: str) -> str:
    return coredata._cores()[coredata.resolve(core)]["group"]


def _table(kind: str, family: str) -> dict | None:
    """``kind``'s measured factors for ``family`` by group of core classes, or None: a per-family sub-table
    (``[lineages.K.ML-DSA]``) or, for a lineage of one family, the entry itself (``family = ...``)."""
    entry = _doc()[kind]
    if isinstance(entry.get(family), dict):
        return entry[family]
    return entry if entry.get("family") == family and "microcontroller" in entry else None


def measured(kind: str, family: str, group: str | None = None) -> bool:
    """Whether ``kind`` has a measured factor for an algorithm of ``family`` ('ML-KEM' / 'ML-DSA'), on
    ``group`` of core classes when one is given (else on any)."""
    table = _table(kind, family)
    return table is not None and (group is None or group in table)


def priced_as(kind: str, family: str, group: str | None = None) -> str:
    """The lineage a chip's ``kind`` is priced as for ``family`` (on ``group`` of core classes when given): the
    reference as itself; a lineage measured for this family (and group) as itself; anything else (not measured,
    or named for the other family) as unknown."""
    if kind == REFERENCE or measured(kind, family, group):
        return kind
    return UNKNOWN


@functools.cache
def factor(kind: str, family: str, core: str, unit: str) -> builds.Factor:
    """What ``kind``'s C multiplies the reference C's time by on ``unit`` of a ``family`` algorithm on class
    ``core`` (its group's measurement)."""
    group = _group(core)
    kind = priced_as(kind, family, group)
    entry = _doc()[kind]
    if kind == REFERENCE:
        return builds.Factor(kind, entry["label"], 1.0, 1.0, 1.0, entry["source"])
    if kind == UNKNOWN:
        fast = [k for k in _doc() if k != UNKNOWN and measured(k, family, group)]
        if not fast:
            return builds.Factor(kind, entry["label"], 1.0, 1.0, 1.0, entry["source"])
        mids = [float(_table(k, family)[group][unit][1]) for k in fast]
        return builds.Factor(kind, entry["label"], min(mids + [1.0]), 1.0, max(mids + [1.0]), entry["source"])
    lo, mid, hi = (float(x) for x in _table(kind, family)[group][unit])
    return builds.Factor(kind, entry["label"], lo, mid, hi, entry["source"])


def time_factors(kind: str, family: str, core: str, u=0.5):
    """(Keccak, other) factors on the time at quantile ``u`` (a number or an array; higher = slower): one
    quantile for both units (the same code's two parts move together)."""
    return tuple(factor(kind, family, core, unit).central(u) for unit in UNITS)


def basis(source: dict, family: str) -> tuple[float, float]:
    """What a source's (Keccak, other) work per clock is multiplied by to stand on the reference lineage: the
    centres of its lineage's factors (code that took x0.6 of the reference's time shows 1/0.6 of its work per
    clock; x0.6 brings it back). Hand-written assembly (``implementation = "optimized"``) is no C lineage: 1."""
    if source.get("implementation") == "optimized":
        return 1.0, 1.0
    kind = of_source(source, family)
    return tuple(factor(kind, family, source["core"], unit).mid for unit in UNITS)


def text(kind: str, family: str, core: str) -> str:
    """Provenance: the chip's code base and the factors it puts on the reference C's time."""
    as_kind = priced_as(kind, family, _group(core))
    k, a = (factor(kind, family, core, unit) for unit in UNITS)
    said = kind if as_kind == kind else f"{kind}, priced as {as_kind} for {family}"
    if k.lo == k.hi == a.lo == a.hi == 1.0:
        return f"lineage {said}: x1 (the classes' reference basis; {k.source})"
    group = _group(core)
    article = "an" if group[0] in "aeiou" else "a"
    return (f"lineage {said} on {article} {group} class: Keccak x{k.lo:.3g}-x{k.hi:.3g} (centre x{k.mid:.3g}), "
            f"other units x{a.lo:.3g}-x{a.hi:.3g} (centre x{a.mid:.3g}) on the reference C's time ({k.source})")

"""Performance profiles: the measured component costs of one chip.

A profile is the only place where a chip's speed lives. Devices never hold
numbers of their own; they charge named components of a profile to a clock, so
swapping the profile swaps the chip. Every component carries its provenance,
because a figure whose origin is unknown cannot be trusted or corrected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

import tomli_w

from trustlab import limits
from trustlab.errors import ProfileError
from trustlab.safe_output import write_text

UNITS = ("call", "byte", "block", "bit", "op")
"""What one count of a component means: a whole call, a byte, a block, ..."""


@dataclass(frozen=True)
class Provenance:
    """Where a figure came from: a paper and table, a data file, a measurement."""

    source: str = ""
    table: str = ""
    note: str = ""

    def describe(self) -> str:
        parts = [p for p in (self.source, self.table, self.note) if p]
        return "; ".join(parts) if parts else "unspecified"

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in (("source", self.source), ("table", self.table), ("note", self.note)) if v}


@dataclass(frozen=True)
class Component:
    """One cost: a mean in milliseconds per unit, optionally with a spread.

    The spread is either a standard deviation (normal, truncated at zero) or an
    empirical list of observed values (resampled). Key generation on real chips
    is random, so its cost is a distribution rather than a number.
    """

    name: str
    mean: float
    unit: str = "call"
    sd: float = 0.0
    samples: tuple[float, ...] = ()
    provenance: Provenance = field(default_factory=Provenance)

    def __post_init__(self) -> None:
        where = f"component {self.name!r}"
        if not isinstance(self.mean, (int, float)) or isinstance(self.mean, bool) or not math.isfinite(self.mean):
            raise ProfileError(f"{where}: mean must be a finite number, got {self.mean!r}")
        if self.mean < 0:
            raise ProfileError(f"{where}: mean must not be negative, got {self.mean}")
        if self.unit not in UNITS:
            raise ProfileError(f"{where}: unit must be one of {', '.join(UNITS)}, got {self.unit!r}")
        if not math.isfinite(self.sd) or self.sd < 0:
            raise ProfileError(f"{where}: sd must be a non-negative number, got {self.sd}")
        if any((not math.isfinite(s)) or s < 0 for s in self.samples):
            raise ProfileError(f"{where}: samples must be non-negative numbers")
        if max((self.mean, self.sd, *self.samples)) > limits.MAX_COMPONENT_MS:
            raise ProfileError(f"{where}: costs above {limits.MAX_COMPONENT_MS:g} ms per {self.unit} are not accepted "
                               f"(mean {self.mean:g}, sd {self.sd:g}); is the unit right?")

    @property
    def deterministic(self) -> bool:
        return self.sd == 0 and not self.samples


@dataclass(frozen=True)
class Profile:
    """A named, versioned set of component costs for one chip."""

    name: str
    components: Mapping[str, Component]
    family: str = "tpm1.2"
    version: str = "1"
    description: str = ""
    provenance: Provenance = field(default_factory=Provenance)

    def __getitem__(self, component: str) -> Component:
        try:
            return self.components[component]
        except KeyError:
            raise ProfileError(
                f"profile {self.name!r} has no component {component!r} "
                f"(it has: {', '.join(sorted(self.components)) or 'none'})"
            ) from None

    def __contains__(self, component: object) -> bool:
        return component in self.components

    def mean(self, component: str) -> float:
        return self[component].mean

    @property
    def deterministic(self) -> bool:
        return all(c.deterministic for c in self.components.values())

    def with_means(self, means: Mapping[str, float], provenance: Provenance | None = None) -> "Profile":
        """A copy with some means replaced, e.g. by a fit or a what-if tweak."""
        comps = dict(self.components)
        for name, value in means.items():
            base = comps.get(name, Component(name=name, mean=0.0))
            comps[name] = replace(base, mean=float(value), provenance=provenance or base.provenance)
        return replace(self, components=comps)

    def without_spread(self) -> "Profile":
        comps = {n: replace(c, sd=0.0, samples=()) for n, c in self.components.items()}
        return replace(self, components=comps)

    # ---- TOML -------------------------------------------------------------

    def to_toml_dict(self) -> dict:
        doc: dict = {"name": self.name, "family": self.family, "version": self.version}
        if self.description:
            doc["description"] = self.description
        if self.provenance.to_dict():
            doc["provenance"] = self.provenance.to_dict()
        comps: dict = {}
        for name, c in self.components.items():
            entry: dict = {"mean": c.mean, "unit": c.unit}
            if c.sd:
                entry["sd"] = c.sd
            if c.samples:
                entry["samples"] = list(c.samples)
            entry.update(c.provenance.to_dict())
            comps[name] = entry
        doc["components"] = comps
        return doc

    def to_toml(self) -> str:
        return tomli_w.dumps(self.to_toml_dict())


_COMPONENT_KEYS = {"mean", "unit", "sd", "samples", "source", "table", "note"}
_PROFILE_KEYS = {"name", "family", "version", "description", "provenance", "components"}


def profile_from_toml_dict(doc: Mapping, where: str) -> Profile:
    """Build a profile from parsed TOML, naming the file and key of any fault."""
    unknown = set(doc) - _PROFILE_KEYS
    if unknown:
        raise ProfileError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        raise ProfileError(f"{where}: missing 'name'")
    raw_components = doc.get("components")
    if not isinstance(raw_components, Mapping) or not raw_components:
        raise ProfileError(f"{where}: missing [components] table")
    prov = _provenance(doc.get("provenance", {}), f"{where}: [provenance]")
    components: dict[str, Component] = {}
    for cname, entry in raw_components.items():
        cwhere = f"{where}: [components.{cname}]"
        if not isinstance(entry, Mapping):
            raise ProfileError(f"{cwhere}: must be a table with at least 'mean'")
        bad = set(entry) - _COMPONENT_KEYS
        if bad:
            raise ProfileError(f"{cwhere}: unknown key(s) {', '.join(sorted(bad))}")
        if "mean" not in entry:
            raise ProfileError(f"{cwhere}: missing 'mean'")
        try:
            components[cname] = Component(
                name=cname,
                mean=_number(entry["mean"], f"{cwhere} mean"),
                unit=str(entry.get("unit", "call")),
                sd=_number(entry.get("sd", 0.0), f"{cwhere} sd"),
                samples=_numbers(entry.get("samples", []), f"{cwhere} samples"),
                provenance=_provenance(entry, cwhere),
            )
        except ProfileError as exc:
            raise ProfileError(str(exc) if str(exc).startswith(where) else f"{where}: {exc}") from None
    return Profile(
        name=name,
        components=components,
        family=str(doc.get("family", "tpm1.2")),
        version=str(doc.get("version", "1")),
        description=str(doc.get("description", "")),
        provenance=prov,
    )


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProfileError(f"{where}: expected a number, got {_short(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ProfileError(f"{where}: expected a finite number, got {_short(value)}")
    return number


def _numbers(value: object, where: str) -> tuple[float, ...]:
    if not isinstance(value, list):
        raise ProfileError(f"{where}: expected a list of numbers, got {_short(value)}")
    return tuple(_number(v, where) for v in value)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def _provenance(entry: object, where: str) -> Provenance:
    if not isinstance(entry, Mapping):
        raise ProfileError(f"{where}: must be a table")
    return Provenance(
        source=str(entry.get("source", "")),
        table=str(entry.get("table", "")),
        note=str(entry.get("note", "")),
    )


def read_profile_text(path: Path) -> str:
    """A profile file's text (at most limits.MAX_TEXT_BYTES), or a ProfileError naming the file."""
    return limits.read_text(path, "profile", error=ProfileError)


def load_toml(path: Path) -> Profile:
    return profile_from_toml_dict(limits.parse_toml(read_profile_text(path), str(path), ProfileError), str(path))


def save_toml(profile: Profile, path: Path) -> None:
    """Write atomically: a reader never sees half a profile."""
    write_text(path, profile.to_toml())


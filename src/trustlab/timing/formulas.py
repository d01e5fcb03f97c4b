"""Analytic cost formulas: a command's time as a linear combination of components.

Formulas serve two purposes: quick estimates without running anything, and the
design matrix for fitting a profile to measurements. Devices do *not* use them
(they charge primitives as they run); a test holds the two to agreement.

Formulas are grouped by profile family (``tpm1.2``, ``tpm2`` ...). A formula
may have variants chosen by an option, e.g. ``TPM2_Sign`` with ``key=ecc256``;
variants are registered as ``NAME[option]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from trustlab.errors import FormulaError
from trustlab.timing.profile import Profile


@dataclass(frozen=True)
class Formula:
    command: str
    terms: Mapping[str, float]
    family: str
    source: str = ""
    optional: Mapping[str, float] = field(default_factory=dict)
    """Terms charged only on profiles that define the component (as the engine does, e.g. ``rsa_keygen``
    where a profile has a key-generation figure); never fitted."""

    @property
    def all_terms(self) -> dict[str, float]:
        """Every term, optional ones included: what a measurement on a chip that has them contains."""
        return {**self.terms, **self.optional}

    def evaluate(self, profile: Profile) -> tuple[float, dict[str, float]]:
        """Total ms and ms per component, using the profile's means."""
        breakdown = {comp: coeff * profile.mean(comp) for comp, coeff in self.terms.items()}
        breakdown.update({comp: coeff * profile.mean(comp) for comp, coeff in self.optional.items()
                          if comp in profile})
        return sum(breakdown.values()), breakdown


_REGISTRY: dict[str, dict[str, Formula]] = {}
_ALIASES: dict[str, dict[str, str]] = {}


def register(family: str, command: str, terms: Mapping[str, float], source: str = "",
             aliases: tuple[str, ...] = (), optional: Mapping[str, float] | None = None) -> Formula:
    if not terms:
        raise FormulaError(f"formula for {command} has no terms")
    formula = Formula(command=command, terms=dict(terms), family=family, source=source,
                      optional=dict(optional or {}))
    _REGISTRY.setdefault(family, {})[command] = formula
    for alias in aliases:
        _ALIASES.setdefault(family, {})[alias] = command
    return formula


def families() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def commands(family: str) -> list[str]:
    """Commands with a formula, in registration order (variants excluded)."""
    _load_builtin()
    return [c for c in _REGISTRY.get(family, {}) if "[" not in c]


def variants(family: str, command: str) -> list[str]:
    """The variant names registered for ``command`` (empty if it has none)."""
    _load_builtin()
    name = _ALIASES.get(family, {}).get(command, command)
    return sorted(k[len(name) + 1:-1] for k in _REGISTRY.get(family, {}) if k.startswith(name + "["))


def lookup(family: str, command: str, variant: str | None = None) -> Formula:
    """The formula for ``command`` (or its alias), with an optional variant."""
    _load_builtin()
    table = _REGISTRY.get(family)
    if table is None:
        raise FormulaError(f"no formulas for profile family {family!r} (known: {', '.join(sorted(_REGISTRY))})")
    name = _ALIASES.get(family, {}).get(command, command)
    if variant is not None:
        key = f"{name}[{variant}]"
        if key in table:
            return table[key]
        variants = sorted(k[len(name) + 1:-1] for k in table if k.startswith(name + "["))
        if variants:
            raise FormulaError(f"{command}: unknown variant {variant!r} (known: {', '.join(variants)})")
    if name in table:
        return table[name]
    variants = sorted(k for k in table if k.startswith(name + "["))
    if variants:
        raise FormulaError(f"{command} needs a variant: one of {', '.join(variants)}")
    raise FormulaError(
        f"unknown command {command!r} for family {family!r} (known: {', '.join(commands(family))})"
    )


def estimate(profile: Profile, command: str, variant: str | None = None) -> tuple[float, dict[str, float]]:
    return lookup(profile.family, command, variant).evaluate(profile)


_BUILTIN_LOADED = False


def _load_builtin() -> None:
    """Import the modules that register formulas; they self-register on import."""
    global _BUILTIN_LOADED
    if _BUILTIN_LOADED:
        return
    _BUILTIN_LOADED = True
    import trustlab.timing.formula_sets as sets
    from trustlab.plugins import import_submodules

    import_submodules(sets)

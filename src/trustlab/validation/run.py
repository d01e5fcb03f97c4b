"""Collect every source's checks and inconsistencies; the accuracy each profile can state."""

from __future__ import annotations

from dataclasses import dataclass, field

from trustlab.errors import TrustlabError
from trustlab.timing import registry
from trustlab.validation.core import HELD_OUT_SILICON, Accuracy, Check, Inconsistency, accuracy

SOURCES = ("mayes2017", "vanderlaan2018", "jcalgtest_javacard", "gunupudi2010", "raj2016", "tpm2", "pqc_model",
           "held_out_silicon")


@dataclass
class Validation:
    checks: list[Check] = field(default_factory=list)
    inconsistencies: list[Inconsistency] = field(default_factory=list)
    held_out_silicon: list[dict] = field(default_factory=list)  # validation.held_out_silicon.rows, in detail

    def accuracy(self) -> dict[str, Accuracy]:
        return accuracy(self.checks)

    def to_dict(self) -> dict:
        doc = {"accuracy": {k: v.to_dict() for k, v in self.accuracy().items()},
               "checks": [c.to_dict() for c in self.checks],
               "inconsistencies": [i.to_dict() for i in self.inconsistencies]}
        if self.held_out_silicon:
            from trustlab.validation import held_out_silicon

            doc["held_out_silicon"] = {"rows": self.held_out_silicon,
                                       "summary": held_out_silicon.summary(self.held_out_silicon),
                                       "note": held_out_silicon.CAVEAT}
        return doc


def _source(name: str, wanted: set[str] | None) -> tuple[list[Check], list[Inconsistency]]:
    import importlib

    if name == "tpm2":
        from trustlab.validation import jcalgtest, tpm2_pairs, wolftpm

        if wanted is not None and not any(tpm2_pairs.family_of(n) for n in wanted):
            return [], []
        return tpm2_pairs.checks(wolftpm.observations() + jcalgtest.observations(), wanted), []
    mod = importlib.import_module(f"trustlab.validation.{name}")
    if wanted is not None and not wanted & set(mod.PROFILES):
        return [], []
    checks = [c for c in mod.checks() if wanted is None or c.profile in wanted]
    incs = [i for i in mod.inconsistencies()
            if wanted is None or wanted & set(i.profiles)]
    return checks, incs


def check_profiles(profiles: list[str] | None, where: str = "validate") -> None:
    """Refuse an unknown profile name (before any check runs); ``where`` names the command or flag."""
    if profiles:
        known = set(registry.names())
        for name in profiles:
            if name not in known:
                raise TrustlabError(f"{where}: unknown profile {name!r} (see `trustlab profiles list`)")


def run(profiles: list[str] | None = None) -> Validation:
    """Every check that has a reference (for ``profiles`` only, if given: unknown names are an error)."""
    wanted = None
    check_profiles(profiles)
    if profiles:
        wanted = set(profiles)
    out = Validation()
    for src in SOURCES:
        checks, incs = _source(src, wanted)
        out.checks += checks
        out.inconsistencies += incs
    if any(c.kind == HELD_OUT_SILICON for c in out.checks):
        from trustlab.validation import held_out_silicon

        out.held_out_silicon = [r for r in held_out_silicon.rows() if wanted is None or r["profile"] in wanted]
    return out


def profile_accuracy(name: str) -> Accuracy | None:
    """The stated accuracy of one registered profile (None: no check of any kind, or not registered)."""
    if name not in registry.names():
        return None
    return run([name]).accuracy().get(name)

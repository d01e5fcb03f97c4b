"""Leave-one-source-out for TPM 2.0: every profile of a chip family predicts every raw measurement of it.

The raw measurements (:class:`Observation`) come from the source modules
(:mod:`.wolftpm`, :mod:`.jcalgtest`), copied into this package. A profile
built from the observation's own file gives a *calibration* check (the
derivation reproduces its input); a profile built from another source or
another firmware version of the same family gives an *independent* one.
Predictions go through the same TPM 2.0 formulas ``trustlab estimate`` uses.

Families are matched by profile name, the way :data:`FAMILIES` says; a chip
family measured by one source only (Infineon SLB967x: wolfTPM alone) has no
pair and no check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trustlab.errors import TrustlabError
from trustlab.timing import formulas, registry
from trustlab.validation.core import CALIBRATION, INDEPENDENT, Check, device_class

FAMILIES = {
    # family: regex over profile names (both sources' naming)
    "Nuvoton NPCT75x": r"^nuvoton-npct75",
    # JCAlgTest's STM file is firmware 73.4, the ST33TPHF2E generation; wolfTPM's ST33KTPM2X is the
    # newer generation and has no second source
    "STMicroelectronics ST33TPHF2X": r"^(st-st33tphf2x|stm-st33-73\.)",
    "Intel PTT": r"^intel-ptt",
}

OPERATIONS = (("TPM2_Sign", "ecc256"), ("TPM2_VerifySignature", "ecc256"), ("TPM2_RSA_Decrypt", "rsa2048"),
              ("TPM2_RSA_Encrypt", "rsa2048"), ("TPM2_Sign", "rsa2048"), ("TPM2_Create", "ecc256"))
"""(command, variant) pairs compared (what the sources share). Left out: RSA key generation (one run is
a random draw of a prime search, no reference for another chip's mean); GetRandom (it is the host
stack's per-command overhead - wolfTPM's bare SPI 1-2 ms vs JCAlgTest's OS stack 5-12 ms - not the
chip's); ECC TPM2_Create against wolfTPM profiles (their keygen component is Create + Load)."""


@dataclass(frozen=True)
class Observation:
    """One raw published figure: which device (profile it builds), which operation, how long."""

    family: str
    profile: str  # the profile built from this file/row
    command: str
    variant: str
    ms: float
    source: str  # file / row / column / entry
    note: str = ""


def family_of(profile_name: str) -> str | None:
    for family, pattern in FAMILIES.items():
        if re.search(pattern, profile_name):
            return family
    return None


def predict(profile, command: str, variant: str) -> float | None:  # type: ignore[no-untyped-def]
    """The profile's estimate for one command, or None when it lacks a component the formula needs."""
    try:
        ms, _ = formulas.lookup(profile.family, command, variant).evaluate(profile)
    except TrustlabError:
        return None
    return float(ms)


def checks(observations: list[Observation], wanted: set[str] | None = None) -> list[Check]:
    """Every (profile of the family) x (observation of the family) pair the profile can price."""
    out: list[Check] = []
    names = [n for n in registry.names("tpm2") if family_of(n)]
    for name in names:
        if wanted is not None and name not in wanted:
            continue
        profile = registry.load(name)
        fam = family_of(name)
        for obs in observations:
            if obs.family != fam or (obs.command, obs.variant) not in OPERATIONS:
                continue
            if obs.command == "TPM2_Create" and name.endswith("-wolftpm"):
                continue
            ms = predict(profile, obs.command, obs.variant)
            if ms is None:
                continue
            own = obs.profile == name
            note = obs.note
            if not own:
                note = (f"leave-one-source-out: {name} predicts {obs.profile}'s measurement"
                        + (f"; {note}" if note else ""))
            out.append(Check(name, device_class(name, profile.family), f"{obs.command} {obs.variant}", ms, obs.ms,
                             "ms", CALIBRATION if own else INDEPENDENT, obs.source, note))
    return out

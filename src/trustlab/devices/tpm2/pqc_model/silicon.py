"""Chips with published TCG 1.85 post-quantum command times: their profiles answer at those times.

``data/silicon.toml`` holds, per profile, the published mean of each benchmarked operation and the
commands the benchmark issues for it (wolfTPM's ``bench``: key gen = CreatePrimary + FlushContext,
sign = SignSequenceStart + SignSequenceComplete, ...). Serving such a profile prices the one
post-quantum command of each operation so that the whole operation's mean is the published figure:
its compute part is the model's, scaled by one factor per (algorithm, operation), so the counted-run
spread (ML-DSA's rejection loop) survives and the mean is exact. The other parameter sets of the same
family take the factor of the published one ("extrapolated": the same chip and code, more work).
These rows are calibration, never independent validation.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from importlib import resources

from trustlab.devices.tpm2.pqc_model.params import family


@dataclass(frozen=True)
class Published:
    profile: str
    algorithm: str           # the published parameter set
    operation: str           # the benchmark's operation name (keygen, sign, ...)
    call: str                # the priced command's operation (create, sign, verify, encapsulate, decapsulate)
    mean_ms: float           # the whole benchmark operation
    other_commands: int      # commands of the operation besides the priced one
    source: str
    commands: tuple[str, ...] = ()  # the benchmark's commands of one operation, the priced one first


@functools.cache
def _doc() -> dict:
    text = (resources.files("trustlab.devices.tpm2.pqc_model") / "data" / "silicon.toml").read_text("utf-8")
    return tomllib.loads(text).get("profiles", {})


def published(profile: str) -> bool:
    return profile in _doc()


def profiles() -> tuple[str, ...]:
    """Every profile with published 1.85 figures (the calibrated ones)."""
    return tuple(_doc())


@functools.cache
def rows(profile: str) -> tuple[Published, ...]:
    entry = _doc().get(profile)
    if entry is None:
        return ()
    return tuple(Published(profile, o["algorithm"], o["operation"], o["call"], float(o["mean_ms"]),
                           len(o["bench_commands"]) - 1, entry["source"], tuple(o["bench_commands"]))
                 for o in entry["ops"])


def lookup(profile: str, algorithm: str, call: str) -> tuple[Published, bool] | None:
    """The published row for this call (exact parameter set, else the family's: extrapolated=True)."""
    exact = [r for r in rows(profile) if r.algorithm == algorithm and r.call == call]
    if exact:
        return exact[0], False
    same = [r for r in rows(profile) if family(r.algorithm) == family(algorithm) and r.call == call]
    return (same[0], True) if same else None


@functools.cache
def for_operation(profile: str, algorithm: str, operation: str) -> tuple[Published, bool] | None:
    """The published row that calibrates a priced operation. Loading a key (the seed expanded again, not
    benchmarked) takes the factor of the family's public-key operation (verify / encapsulate): the
    chip's unprotected speed on that code."""
    found = lookup(profile, algorithm, operation)
    if found is None and operation == "load":
        public = lookup(profile, algorithm, "verify" if family(algorithm) == "ML-DSA" else "encapsulate")
        return None if public is None else (public[0], True)
    return found


def label(row: Published, algorithm: str, extrapolated: bool, operation: str = "") -> str:
    base = (f"calibration: {row.algorithm} {row.operation} = {row.mean_ms:g} ms mean ({row.source}); "
            f"the {row.call} command takes that less {row.other_commands} per-command overhead(s)")
    if extrapolated:
        base += f"; {algorithm} {operation} extrapolated from it by the counted work (same chip and code)"
    return base


#END

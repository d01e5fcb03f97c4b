"""The core classes' and named cores' data files (data/cores.toml, data/microarch.toml) and what a name denotes.

Why its own module: both the class fit (:mod:`.classes`) and the Keccak implementation factor
(:mod:`.keccak_impl`, which the fit uses) read these files; here neither has to import the other.
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources

from trustlab.errors import TrustlabError, excerpt


@functools.cache
def _cores() -> dict:
    text = (resources.files("trustlab.devices.tpm2.pqc_model") / "data" / "cores.toml").read_text("utf-8")
    return tomllib.loads(text)["classes"]


@functools.cache
def _microarch_doc() -> dict:
    text = (resources.files("trustlab.devices.tpm2.pqc_model") / "data" / "microarch.toml").read_text("utf-8")
    return tomllib.loads(text)


def _microarchs() -> dict:
    """Named cores: class, tier, aliases, published per-clock factor against the class's reference, source."""
    return _microarch_doc()["cores"]


def _references() -> dict:
    """Each class with named cores -> its reference core (factor 1)."""
    return _microarch_doc()["reference"]


def _core_key(key: str) -> str | None:
    for core, entry in _microarchs().items():
        if key == core or key in entry.get("aliases", []):
            return core
    return None


def resolve(name: str) -> str:
    """The class a name or alias ('cortex-m0plus', 'm0+', 'sc300', ...) or a named core of a class
    ('cortex-a72', 'apple-m1': data/microarch.toml) denotes; unknown names are an error."""
    key = name.strip().lower()
    for cls, entry in _cores().items():
        if key == cls or key in entry.get("aliases", []):
            return cls
    core = _core_key(key)
    if core is not None:
        return _microarchs()[core]["class"]
    raise TrustlabError(f"unknown core class or core {excerpt(name)} (core classes: {', '.join(_cores())}; named cores: "
                        f"{', '.join(_microarchs())}; aliases like m0+, m3, sc300, a53, a72, n1, rv32, rv64, x86)")

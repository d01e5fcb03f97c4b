"""Optional mypyc builds of hot pure-Python modules, used only while they match their source.

A few modules on every simulated command's path (today :mod:`trustlab.devices.tpm12.merkle`,
the hash-tree counters' Merkle loops) may be compiled with mypyc by ``make setup``
(``tools/build_compiled.py``): the build puts an extension module beside the ``.py``
and, beside both, a stamp holding the SHA-256 of the source it was built from.
Python would import such an extension instead of the ``.py`` even after the
source changed, so the package that holds a compiled module calls :func:`prefer_fresh`
before anything imports it: the build is used only if the stamp names the source
as it is now, and never with ``TRUSTLAB_PURE_PYTHON=1`` set. Otherwise the ``.py``
is imported, exactly as on a machine where nothing was compiled. Compiled and
pure give the same results (``tests/tpm12/test_compiled_merkle.py`` runs both).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

# What tools/build_compiled.py compiles. Only merkle, whose loops are all its own work. Compiling the
# command path too (engine, sessions, registry, wire, client and the hash-tree handler as one mypyc
# group, type errors silenced) was measured in issue 24's third session: 61.4 against 64.9 us a 2^20
# hash-tree increment, one bench_speed run each, within the shared machine's noise. Their time goes
# to calls into the clock, the primitives, hashlib and struct, which compiling does not shorten; and
# it would forbid the wrappers of Engine.execute that benchmarks and tests use, and let one stale
# module's build reach the others (they call each other natively).
COMPILED_MODULES = ("trustlab.devices.tpm12.merkle",)
PURE_ENV = "TRUSTLAB_PURE_PYTHON"  # set (non-empty, not "0"): never use a compiled build
STAMP_SUFFIX = ".mypyc-source-sha256"


def source_digest(source: Path) -> str:
    """SHA-256 (hex) of a module's source file, as the build stamp records it."""
    return hashlib.sha256(source.read_bytes()).hexdigest()


def stamp_path(source: Path) -> Path:
    """Where the build records which source it compiled (``merkle.py`` -> ``merkle.mypyc-source-sha256``)."""
    return source.with_name(source.stem + STAMP_SUFFIX)


def pure_requested() -> bool:
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def build_is_fresh(source: Path) -> bool:
    """True when the stamp beside ``source`` names its current content."""
    try:
        return stamp_path(source).read_text().strip() == source_digest(source)
    except OSError:
        return False


def prefer_fresh(fullname: str) -> None:
    """Import ``fullname`` from its ``.py`` now if the extension Python would pick is stale or unwanted.

    Call from the module's package, before anything imports the module; a no-op when
    it is already imported, when nothing was compiled, or when the build is fresh
    (then the normal import finds the extension).
    """
    if fullname in sys.modules:
        return
    parent, _, leaf = fullname.rpartition(".")
    package = sys.modules[parent]
    spec = importlib.machinery.PathFinder.find_spec(fullname, list(package.__path__))
    if spec is None or spec.origin is None or not spec.origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        return
    source = Path(spec.origin).with_name(leaf + ".py")
    if not source.is_file() or (not pure_requested() and build_is_fresh(source)):
        return
    pure = importlib.util.spec_from_file_location(fullname, source)
    assert pure is not None and pure.loader is not None
    module = importlib.util.module_from_spec(pure)
    sys.modules[fullname] = module
    try:
        pure.loader.exec_module(module)
    except BaseException:
        del sys.modules[fullname]
        raise
    setattr(package, leaf, module)


def is_compiled(module: object) -> bool:
    """True when ``module`` was loaded from an extension (a compiled build), not from its source."""
    origin = getattr(module, "__file__", None) or ""
    return origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))

"""Self-registering modules: import every public module of a package.

Formula sets, TPM 1.2 commands, experiments and CLI subcommands all register
themselves on import, so a new one is a new file, never an edit to a shared
list. This is the one place that finds and imports them.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
from types import ModuleType
from typing import Callable, Iterable


def import_submodules(package: ModuleType, *, skip: Iterable[str] = (),
                      on_error: Callable[[str, Exception], None] | None = None) -> list[ModuleType]:
    """Import the package's modules (not ``_private`` ones, not ``skip``), sorted by name.

    With ``on_error``, a module that fails to import is reported to it and the
    rest still load; without it, the error propagates.
    """
    skipped = set(skip)
    modules = []
    for name in module_names(package):
        if name.startswith("_") or name in skipped:
            continue
        try:
            modules.append(importlib.import_module(f"{package.__name__}.{name}"))
        except Exception as exc:
            if on_error is None:
                raise
            on_error(name, exc)
    return modules


def module_names(package: ModuleType) -> list[str]:
    """The names of a package's modules and subpackages, sorted: what ``pkgutil.iter_modules`` lists
    for source, bytecode-only and extension modules, without importing ``pkgutil`` (and ``inspect``
    with it: a tenth of the CLI's start)."""
    suffixes = sorted(importlib.machinery.all_suffixes(), key=len, reverse=True)
    names: set[str] = set()
    for directory in package.__path__:
        try:
            entries = os.listdir(directory)
        except OSError:
            continue
        for entry in entries:
            path = os.path.join(directory, entry)
            if os.path.isdir(path):
                if entry.isidentifier() and os.path.isfile(os.path.join(path, "__init__.py")):
                    names.add(entry)
                continue
            suffix = next((s for s in suffixes if entry.endswith(s)), None)
            if suffix is not None:
                name = entry[:-len(suffix)]
                if name.isidentifier() and name != "__init__":
                    names.add(name)
    return sorted(names)

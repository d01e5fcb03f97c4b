"""Self-registering modules: import every public module of a package.

Formula sets, TPM 1.2 commands, experiments and CLI subcommands all register
themselves on import, so a new one is a new file, never an edit to a shared
list. This is the one place that finds and imports them.
"""

from __future__ import annotations

import importlib
import pkgutil
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
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in skipped:
            continue
        try:
            modules.append(importlib.import_module(f"{package.__name__}.{info.name}"))
        except Exception as exc:
            if on_error is None:
                raise
            on_error(info.name, exc)
    return modules

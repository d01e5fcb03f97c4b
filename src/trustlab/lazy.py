"""Modules imported on first use, so the command line starts without what a subcommand never touches.

``trustlab --help`` imports every subcommand's module to list it; a module that
names ``formulas = lazy_module("trustlab.timing.formulas")`` at the top pays
for that import only when a function of it runs (issue 24: the CLI's start
went from 0.17 s to under 0.1 s of CPU). Uses the standard library's
``importlib.util.LazyLoader``; an already imported module is returned as is.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """The module ``name``; its code runs on the first attribute access (its packages' code now)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module

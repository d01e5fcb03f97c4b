"""The experiment registry and the result record every experiment returns.

Results are flat records with their provenance (trustlab version, profiles with
their sources, seed, tool versions, wall time), so that a report made months
later still says where each number came from.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import platform
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Protocol

from trustlab import __version__
from trustlab.errors import TrustlabError


@dataclass
class Reference:
    """A published figure an experiment reproduces, compared with what we computed."""

    label: str
    reference: float
    model: float | None = None
    simulated: float | None = None
    unit: str = "ms"
    source: str = ""

    @property
    def error(self) -> float | None:
        got = self.simulated if self.simulated is not None else self.model
        return None if got is None else got - self.reference


@dataclass
class Result:
    """What an experiment produced: ``data`` is exactly what ``--json`` prints."""

    experiment: str
    params: dict[str, Any]
    data: Any
    text: str = ""
    references: list[Reference] = field(default_factory=list)
    profiles: dict[str, str] = field(default_factory=dict)  # name -> provenance
    plots: list[dict[str, Any]] = field(default_factory=list)  # {"kind", "title", "series"...}
    meta: dict[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        record = asdict(self)
        record["references"] = [dict(asdict(r), error=r.error) for r in self.references]
        return record


class ExperimentSpec(Protocol):
    name: str
    help: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...
    def run(self, args: argparse.Namespace) -> Result: ...


_EXPERIMENTS: dict[str, ExperimentSpec] = {}


def experiment(name: str, help: str) -> Callable[[type], type]:
    """Class decorator: register an experiment under ``name``."""

    def decorate(cls: type) -> type:
        if name in _EXPERIMENTS:
            raise RuntimeError(f"experiment {name!r} registered twice")
        instance = cls()
        instance.name = name
        instance.help = help
        _EXPERIMENTS[name] = instance
        return cls

    return decorate


_LOADED = False


def all_experiments() -> dict[str, ExperimentSpec]:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        import trustlab.experiments as pkg

        for info in pkgutil.iter_modules(pkg.__path__):
            if info.name not in ("registry",) and not info.name.startswith("_"):
                importlib.import_module(f"{pkg.__name__}.{info.name}")
    return dict(sorted(_EXPERIMENTS.items()))


def get(name: str) -> ExperimentSpec:
    experiments = all_experiments()
    if name not in experiments:
        raise TrustlabError(f"unknown experiment {name!r} (known: {', '.join(experiments)})")
    return experiments[name]


def tool_versions() -> dict[str, str]:
    """Versions of the real parts a result depends on."""
    import cryptography
    import numpy
    import scipy

    versions = {"python": platform.python_version(), "cryptography": cryptography.__version__,
                "numpy": numpy.__version__, "scipy": scipy.__version__}
    import shutil
    import subprocess

    swtpm = shutil.which("swtpm")
    if swtpm:
        try:
            out = subprocess.run([swtpm, "--version"], capture_output=True, text=True, timeout=5).stdout
            versions["swtpm"] = out.strip().splitlines()[0] if out.strip() else "unknown"
        except (OSError, subprocess.SubprocessError):
            versions["swtpm"] = "unavailable"
    return versions


def run_experiment(name: str, args: argparse.Namespace) -> Result:
    spec = get(name)
    started = time.perf_counter()
    result = spec.run(args)
    result.meta.update({
        "trustlab_version": __version__,
        "wall_s": time.perf_counter() - started,
        "seed": getattr(args, "seed", None),
        "tools": tool_versions(),
        "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    return result

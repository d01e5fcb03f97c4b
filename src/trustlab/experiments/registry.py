"""The experiment registry and the result record every experiment returns.

Results are flat records with their provenance (trustlab version, profiles with
their versions and sources, seed, tool versions, wall time), so that a report
made months later still says where each number came from.

An experiment is a class registered with :func:`experiment`; it declares its
parameters with argparse (``add_arguments``), so the same declaration serves
``trustlab run NAME``, sweeps (a sweep point is an experiment name plus
parameters, turned into argv by :mod:`trustlab.experiments._params`) and the
flagship run (the class's ``flagship`` argv lists).

Extra experiment modules outside the package (a user's own study, a test's
instrumented one) are loaded from ``$TRUSTLAB_EXPERIMENT_MODULES``: module
names or ``.py`` paths separated by ``os.pathsep``. Being an environment
variable, it reaches worker processes of sweeps too.
"""

from __future__ import annotations

import argparse
import copy
import functools
import importlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from trustlab import __version__
from trustlab.argtypes import LiteralDashDash
from trustlab.errors import TrustlabError
from trustlab.plugins import import_submodules
from trustlab.safe_output import path_arg

EXTRA_MODULES_ENV = "TRUSTLAB_EXPERIMENT_MODULES"


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
    # The verdict of an experiment that checks a safety property: one line per violated
    # property, with its count ("20 torn writes"). Non-empty makes `trustlab run` exit 1.
    violations: list[str] = field(default_factory=list)

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
            if type(_EXPERIMENTS[name]).__qualname__ == cls.__qualname__:
                return cls  # the same module imported twice (e.g. by path and by name)
            raise RuntimeError(f"experiment {name!r} registered twice")
        instance = cls()
        instance.name = name
        instance.help = help
        _EXPERIMENTS[name] = instance
        return cls

    return decorate


_LOADED = False
_IMPORT_ERRORS: dict[str, str] = {}


def _load_extra_modules() -> None:
    """Import the modules named in ``$TRUSTLAB_EXPERIMENT_MODULES``."""
    for entry in filter(None, os.environ.get(EXTRA_MODULES_ENV, "").split(os.pathsep)):
        try:
            if entry.endswith(".py"):
                path = Path(entry)
                if not path.is_file():
                    raise TrustlabError(f"${EXTRA_MODULES_ENV}: {entry}: no such file")
                mod_name = f"trustlab_extra_{path.stem}"
                if mod_name in sys.modules:
                    continue
                spec = importlib.util.spec_from_file_location(mod_name, path)
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                sys.modules[mod_name] = module
                spec.loader.exec_module(module)
            else:
                importlib.import_module(entry)
        except ImportError as exc:
            raise TrustlabError(f"${EXTRA_MODULES_ENV}: cannot import {entry!r}: {exc}") from exc


def all_experiments() -> dict[str, ExperimentSpec]:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        import trustlab.experiments as pkg

        def record(name: str, exc: Exception) -> None:  # one broken study must not hide the others
            _IMPORT_ERRORS[name] = f"{type(exc).__name__}: {exc}"

        import_submodules(pkg, skip=("registry",), on_error=record)
        _load_extra_modules()
    return dict(sorted(_EXPERIMENTS.items()))


def import_errors() -> dict[str, str]:
    """Experiment modules that failed to import: module name -> error (reported by the flagship)."""
    all_experiments()
    return dict(_IMPORT_ERRORS)


def unavailable(name: str) -> str | None:
    """Why experiment ``name`` cannot run, if its module is one that failed to import (else None).

    A broken module registers nothing, so its experiments are known only by the
    module's name (``pqc_tpm`` for ``pqc-tpm``) or the ``@experiment("NAME"``
    lines in its source.
    """
    for module, error in import_errors().items():
        if module == name.replace("-", "_") or name in _declared_names(module):
            return (f"experiment {name} is not available: module trustlab.experiments.{module} "
                    f"failed to import: {' '.join(error.split())}")
    return None


def _declared_names(module: str) -> set[str]:
    """The names a (broken) experiment module would register, read from its source."""
    try:
        spec = importlib.util.find_spec(f"trustlab.experiments.{module}")
        source = Path(spec.origin).read_text(encoding="utf-8") if spec and spec.origin else ""
    except (ImportError, OSError, ValueError, UnicodeDecodeError):
        return set()
    return set(re.findall(r"@experiment\(\s*[\"']([^\"']+)[\"']", source))


def get(name: str) -> ExperimentSpec:
    if name not in _EXPERIMENTS and not _LOADED:
        # Fast path for one run (a sweep worker, a flagship child): the module
        # named like the experiment, without importing every other study.
        try:
            importlib.import_module(f"trustlab.experiments.{name.replace('-', '_')}")
        except Exception:  # not there or broken: the full scan below reports it properly
            pass
    if name in _EXPERIMENTS:
        return _EXPERIMENTS[name]
    experiments = all_experiments()
    if name not in experiments and (reason := unavailable(name)) is not None:
        raise TrustlabError(reason)
    if name not in experiments:
        broken = "; ".join(f"module {m} failed to import: {e}" for m, e in _IMPORT_ERRORS.items())
        raise TrustlabError(f"unknown experiment {name!r} (known: {', '.join(experiments)})"
                            + (f" [{broken}]" if broken else ""))
    return experiments[name]


def flagship_runs(spec: ExperimentSpec) -> list[list[str]]:
    """The argv lists the flagship report runs for ``spec`` (default: one run, no arguments)."""
    runs = getattr(spec, "flagship", None)
    if runs is None:
        return [[]]
    return [list(map(str, argv)) for argv in runs]


class _RaisingParser(LiteralDashDash):
    """An argparse parser that raises instead of exiting, for argv built by programs."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        raise TrustlabError(f"{self.prog}: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> Any:  # type: ignore[override]
        raise TrustlabError(f"{self.prog}: {message.strip() if message else f'exit {status}'}")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        try:
            return super().parse_known_args(args, namespace)
        except TrustlabError as exc:  # an argument type's own error (e.g. --seed): name the experiment
            raise TrustlabError(str(exc) if str(exc).startswith(self.prog) else f"{self.prog}: {exc}") from None


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json`` (unless the experiment declared it) and ``--save``, on every experiment."""
    if not any(a.dest == "json" for a in parser._actions):
        parser.add_argument("--json", action="store_true", help="machine-readable output")
    if not any(a.dest == "save" for a in parser._actions):
        parser.add_argument("--save", type=path_arg, metavar="RESULT.json",
                            help="also write the full result record (data, references, provenance) "
                            "for 'trustlab report'")


_PARSERS: dict[str, tuple[ExperimentSpec, argparse.ArgumentParser]] = {}


def experiment_parser(name: str) -> argparse.ArgumentParser:
    """A parser for one experiment's parameters that raises :class:`TrustlabError` on bad argv.

    Built once per registered experiment and shared (building one costs more
    than a light run's parsing; parsing does not change a parser): read it, do
    not add to it.
    """
    spec = get(name)
    cached = _PARSERS.get(name)
    if cached is not None and cached[0] is spec:
        return cached[1]
    parser = _RaisingParser(prog=f"trustlab run {name}", description=spec.help, add_help=False)
    spec.add_arguments(parser)
    add_common_arguments(parser)
    _PARSERS[name] = (spec, parser)
    return parser


def parse_args(name: str, argv: Sequence[str]) -> argparse.Namespace:
    parser = experiment_parser(name)
    args = parser.parse_args(list(argv))
    for action in parser._actions:  # the shared parser's mutable defaults must not leak between runs
        value = getattr(args, action.dest, None)
        if value is action.default and isinstance(value, (list, dict, set)):
            setattr(args, action.dest, copy.copy(value))
    args.experiment = name
    try:
        check_args(name, args)
    except TrustlabError as exc:  # named like the parser's own errors
        raise TrustlabError(str(exc) if str(exc).startswith("trustlab run ") else f"trustlab run {name}: {exc}") from None
    return args


def check_args(name: str, args: argparse.Namespace) -> None:
    """The experiment's own checks of parsed parameters (its optional ``check(args)``): everything its run
    refuses before doing any work - ranges argparse does not express, combinations, profile and name
    lookups. Run before every run and on every sweep point, so a sweep's dry run and its check before
    anything runs refuse exactly what the run would.

    The check gets a copy of ``args``: one that fills in defaults to check them (counters' modes) cannot
    change what the run sees, nor make a second check (parse, then run) refuse what the first accepted."""
    check = getattr(get(name), "check", None)
    if check is not None:
        check(argparse.Namespace(**vars(args)))


def run_argv(name: str, argv: Sequence[str]) -> Result:
    """Run experiment ``name`` as ``trustlab run NAME ARGV...`` would (without printing)."""
    return run_experiment(name, parse_args(name, argv))


def swtpm_capabilities() -> dict[str, Any] | None:
    """``swtpm socket --print-capabilities`` (features and version), or None without swtpm."""
    caps = _swtpm_capabilities()
    return None if caps is None else json.loads(json.dumps(caps))


@functools.cache
def _swtpm_capabilities() -> dict[str, Any] | None:
    swtpm = shutil.which("swtpm")
    if not swtpm:
        return None
    try:
        out = subprocess.run([swtpm, "socket", "--print-capabilities"], capture_output=True,
                             text=True, timeout=5).stdout
        return json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError):
        return {"error": "swtpm --print-capabilities failed"}


def tool_versions() -> dict[str, str]:
    """Versions of the real parts a result depends on (a fresh copy per call)."""
    return dict(_tool_versions())


@functools.cache
def _tool_versions() -> dict[str, str]:
    import platform
    from importlib import metadata

    versions = {"python": platform.python_version(), "platform": platform.platform()}
    for dist in ("cryptography", "numpy", "scipy", "matplotlib", "tpm2-pytss", "pycryptodome"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    swtpm = shutil.which("swtpm")
    if swtpm:
        try:
            out = subprocess.run([swtpm, "--version"], capture_output=True, text=True, timeout=5).stdout
            versions["swtpm"] = out.strip().splitlines()[0] if out.strip() else "unknown"
        except (OSError, subprocess.SubprocessError):
            versions["swtpm"] = "unavailable"
    return versions


def profile_versions(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Version, family and provenance of each named profile a result used.

    Names that are not loadable profiles (an experiment may key ``profiles`` by a
    platform label) are recorded as such rather than failing the run.
    """
    from trustlab.timing import registry as profiles

    out: dict[str, dict[str, Any]] = {}
    for name in names:
        try:
            p = profiles.load(name)
        except TrustlabError:
            out[name] = {"loadable": False}
            continue
        out[name] = {"version": p.version, "family": p.family,
                     "provenance": p.provenance.to_dict(), "components": len(p.components)}
    return out


def run_experiment(name: str, args: argparse.Namespace) -> Result:
    spec = get(name)
    check_args(name, args)
    started = time.perf_counter()
    result = spec.run(args)
    result.meta.update({
        "trustlab_version": __version__,
        "description": result.meta.get("description") or spec.help,  # a run may say what it did itself
        "wall_s": time.perf_counter() - started,
        "seed": getattr(args, "seed", None),
        "tools": tool_versions(),
        "swtpm_capabilities": swtpm_capabilities(),
        "profile_versions": profile_versions(list(result.profiles)),
        "args": _jsonable_args(args),
        "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    return result


_JSON_SCALARS = (str, int, float, bool)


def _jsonable_args(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed parameters, so a record says exactly how to run it again."""
    out: dict[str, Any] = {}
    for key, value in vars(args).items():
        if key in ("handler", "save", "json", "subcommand") or callable(value):
            continue
        if isinstance(value, Path):
            value = str(value)
        if value is None or type(value) in _JSON_SCALARS:  # no trial encoding needed
            out[key] = value
            continue
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            value = repr(value)
        out[key] = value
    return out

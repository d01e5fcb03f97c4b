"""``trustlab run NAME``: run a registered experiment."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from trustlab.cli._output import print_json
from trustlab.argtypes import OneLineParser
from trustlab.errors import TrustlabError, one_line


class _LazyRunParser(OneLineParser):
    """``trustlab run``'s parser, which adds the experiments only when ``run`` is parsed or shown.

    Registering the experiments imports every study and what it needs (numpy,
    scipy, the device models); ``trustlab --help`` or ``trustlab estimate`` must
    not pay for that on every start.
    """

    _populated = False

    def _populate(self, argv: Any = None) -> None:
        """Add the experiments; for ``run NAME ...`` with a known NAME, only that one (one import)."""
        if self._populated:
            return
        self._populated = True
        from trustlab.experiments import registry
        from trustlab.safe_output import add_force

        first = next(iter(argv), None) if isinstance(argv, (list, tuple)) else None
        specs = None
        if isinstance(first, str) and not first.startswith("-"):
            try:
                specs = {first: registry.get(first)}
            except TrustlabError:  # unknown: argparse lists the known ones below
                reason = registry.unavailable(first)
                if reason is not None:  # known, but its module does not import: say so, not "invalid choice"
                    raise TrustlabError(reason) from None
                specs = None
        if specs is None and _asks_for_help(argv):
            index = _declared_help()
            if index is not None:  # a help page lists names and help lines: no study needs importing
                esub = self.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True,
                                           parser_class=argparse.ArgumentParser)
                for name, help_ in index.items():
                    esub.add_parser(name, help=help_, description=help_)
                return
        if specs is None:
            specs = registry.all_experiments()
            broken = registry.import_errors()
            if broken:
                self.epilog = ("not available (module failed to import): "
                               + "; ".join(f"{m}: {e}" for m, e in broken.items()))
        esub = self.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True,
                                   parser_class=OneLineParser)
        for name, spec in specs.items():
            ep = esub.add_parser(name, help=spec.help, description=spec.help)
            spec.add_arguments(ep)
            registry.add_common_arguments(ep)
            if not any(a.dest == "force" for a in ep._actions):
                add_force(ep, "--save")
            ep.set_defaults(handler=_run)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._populate(args)
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._populate()
        return super().format_help()

    def format_usage(self) -> str:
        self._populate()
        return super().format_usage()


def _asks_for_help(argv: Any) -> bool:
    """``run --help`` (or format_help's call, argv None): no experiment named before the help flag."""
    if not isinstance(argv, (list, tuple)):
        return argv is None
    for arg in argv:
        if arg in ("-h", "--help"):
            return True
        if not str(arg).startswith("-"):
            return False
    return False


def _declared_help() -> dict[str, str] | None:
    """Every experiment's name and help, read from the ``@experiment(NAME, help=...)`` lines of the
    study modules (and of $TRUSTLAB_EXPERIMENT_MODULES' files) without importing them: importing
    every study (numpy, the device models) made ``run --help`` cost 0.4 s. None, so that the
    caller imports them after all, where a module cannot be read that way.

    A module that would fail to import is listed all the same; running its experiment says why.
    """
    import ast
    import os
    import re

    import trustlab.experiments as pkg
    from trustlab.experiments.registry import EXTRA_MODULES_ENV
    from trustlab.plugins import module_names

    files = [Path(pkg.__path__[0]) / f"{name}.py" for name in module_names(pkg)
             if not name.startswith("_") and name != "registry"]
    for entry in filter(None, os.environ.get(EXTRA_MODULES_ENV, "").split(os.pathsep)):
        if not entry.endswith(".py"):
            return None  # a module name: its file is found by importing
        files.append(Path(entry))
    found: dict[str, str] = {}
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        starts = [m.start() for m in re.finditer(r"^@experiment\(", source, re.MULTILINE)]  # at a line's start
        if not starts:
            return None  # registers its experiments some other way
        for start in starts:
            call = _first_call(source, start + 1)
            if call is None or not call.args or not isinstance(call.args[0], ast.Constant):
                return None
            helps = [k.value for k in call.keywords if k.arg == "help"]
            if not isinstance(call.args[0].value, str) or len(helps) != 1 \
                    or not isinstance(helps[0], ast.Constant) or not isinstance(helps[0].value, str):
                return None
            found[call.args[0].value] = helps[0].value
    return dict(sorted(found.items()))


def _first_call(source: str, start: int) -> Any:
    """The shortest ``experiment(...)`` call expression at ``start`` that parses (its ``)`` may be
    any of the next ones: the help text can hold parentheses)."""
    import ast

    end = start
    while (end := source.find(")", end) + 1) > 0:
        try:
            node = ast.parse(source[start:end], mode="eval").body
        except SyntaxError:
            continue
        return node if isinstance(node, ast.Call) else None
    return None


def register(sub: argparse._SubParsersAction) -> None:
    parser_class = sub._parser_class
    sub._parser_class = _LazyRunParser
    try:
        sub.add_parser("run", help="run a named experiment (a study from the papers)",
                       description="Run one of the registered experiments. "
                       "'trustlab run NAME --help' explains each one's parameters.")
    finally:
        sub._parser_class = parser_class


def _remove_stale_swtpm_state() -> None:
    """What a run killed with SIGKILL left (a swtpm's state under /tmp/trustlab-swtpm-*) goes, as ``serve``
    tidies it: only directories whose owner file names a process that no longer runs."""
    from trustlab.serving.swtpm import remove_stale_state

    for stale in remove_stale_state():
        print(f"trustlab run: removed {stale} (left by a process that no longer runs)", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    from trustlab.experiments.registry import run_experiment
    from trustlab.report.records import write_json_atomic
    from trustlab.safe_output import check_outputs, reported

    # checked before the run: never over an input file (a profile, a trace ...), never an existing file
    # without --force (safe_output's one rule for every file output)
    values = [v for k, v in vars(args).items() if k != "save"]
    check_outputs({"--save": args.save}, force=getattr(args, "force", False), make_parents=True,
                  inputs=[x for v in values for x in (v if isinstance(v, list) else [v]) if isinstance(x, (str, Path))])
    _remove_stale_swtpm_state()
    from trustlab import progress

    with progress.watched():  # a long run shows a bar on stderr (a terminal only; never in a sweep or flagship)
        result = run_experiment(args.experiment, args)
    if args.save:
        with reported(args.save, "--save"):
            write_json_atomic(args.save, result.to_record())
    if args.json:
        print_json(result.data)
    else:
        print(result.text)
    if result.violations:
        print(f"trustlab: {args.experiment}: safety property violated: "
              f"{one_line('; '.join(map(str, result.violations)))}", file=sys.stderr)
        return 1
    return 0

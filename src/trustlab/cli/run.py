"""``trustlab run NAME``: run a registered experiment."""

from __future__ import annotations

import argparse

from trustlab.cli._output import print_json
from trustlab.errors import TrustlabError
from trustlab.experiments.registry import add_common_arguments, all_experiments, import_errors, run_experiment
from trustlab.report.records import write_json_atomic


def register(sub: argparse._SubParsersAction) -> None:
    broken = import_errors()
    p = sub.add_parser("run", help="run a named experiment (a study from the papers)",
                       description="Run one of the registered experiments. "
                       "'trustlab run NAME --help' explains each one's parameters.",
                       epilog=("not available (module failed to import): "
                               + "; ".join(f"{m}: {e}" for m, e in broken.items())) if broken else None)
    esub = p.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    for name, spec in all_experiments().items():
        ep = esub.add_parser(name, help=spec.help, description=spec.help)
        spec.add_arguments(ep)
        add_common_arguments(ep)
        ep.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    result = run_experiment(args.experiment, args)
    if args.save:
        try:
            write_json_atomic(args.save, result.to_record())
        except OSError as exc:
            raise TrustlabError(f"--save {args.save}: cannot write ({exc.strerror or exc})") from None
    if args.json:
        print_json(result.data)
    else:
        print(result.text)
    return 0

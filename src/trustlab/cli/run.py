"""``trustlab run NAME``: run a registered experiment."""

from __future__ import annotations

import argparse
from pathlib import Path

from trustlab.cli._output import print_json
from trustlab.experiments.registry import add_common_arguments, all_experiments, import_errors, run_experiment
from trustlab.report.records import write_json_atomic
from trustlab.safe_output import check_file, reported


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
    if args.save:  # checked before the run: never over an input file (a profile, a trace ...)
        values = [v for k, v in vars(args).items() if k != "save"]
        check_file(args.save, flag="--save", make_parents=True, inputs=[x for v in values for x in (v if isinstance(v, list) else [v])
                                                      if isinstance(x, (str, Path))])
    result = run_experiment(args.experiment, args)
    if args.save:
        with reported(args.save, "--save"):
            write_json_atomic(args.save, result.to_record())
    if args.json:
        print_json(result.data)
    else:
        print(result.text)
    return 0

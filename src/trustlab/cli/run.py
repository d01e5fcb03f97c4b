"""``trustlab run NAME``: run a registered experiment."""

from __future__ import annotations

import argparse
import json

from trustlab.cli._output import print_json
from trustlab.experiments.registry import add_common_arguments, all_experiments, run_experiment


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a named experiment (a study from the papers)",
                       description="Run one of the registered experiments. "
                       "'trustlab run NAME --help' explains each one's parameters.")
    esub = p.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    for name, spec in all_experiments().items():
        ep = esub.add_parser(name, help=spec.help, description=spec.help)
        spec.add_arguments(ep)
        add_common_arguments(ep)
        ep.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    result = run_experiment(args.experiment, args)
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(json.dumps(result.to_record(), indent=2, default=str), encoding="utf-8")
    if args.json:
        print_json(result.data)
    else:
        print(result.text)
    return 0

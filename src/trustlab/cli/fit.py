"""``trustlab fit``: measurements in, profile out."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from trustlab.cli._output import print_json, table
from trustlab.errors import TrustlabError
from trustlab.timing import registry
from trustlab.timing.profile import Component, Profile, Provenance, save_toml


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fit", help="fit a profile to measured command times",
        description="Bounded (non-negative) least squares of measured times against cost formulas. "
        "The CSV has columns 'command,ms' (command = a known formula; optional 'variant', 'weight') "
        "or 'ms' plus one column per component giving that row's coefficients.",
        epilog="example: trustlab fit measured.csv --fix ohir=0.0025 --out mychip.toml",
    )
    p.add_argument("csv", type=Path, metavar="MEASUREMENTS.csv")
    p.add_argument("--fix", action="append", default=[], metavar="COMPONENT=VALUE",
                   help="hold a component at a known value (repeatable)")
    p.add_argument("--family", help="formula family for the 'command' column (default: search all)")
    p.add_argument("--name", help="name of the fitted profile (default: the CSV's stem)")
    p.add_argument("--out", type=Path, metavar="PROFILE.toml", help="write the fitted profile")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def _parse_fix(items: list[str]) -> dict[str, float]:
    fixed = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not sep or not name or not math.isfinite(number):
            raise TrustlabError(f"--fix {item!r}: expected COMPONENT=NUMBER")
        fixed[name.strip()] = number
    return fixed


def _known_components() -> set[str]:
    known: set[str] = set()
    for name in registry.names():
        known |= set(registry.load(name).components)
    return known


def run(args: argparse.Namespace) -> int:
    from trustlab.timing.fit import fit  # scipy is slow to import; only `fit` needs it
    from trustlab.timing.measurements import read_measurements

    measurements = read_measurements(args.csv, args.family, _known_components())
    result = fit(measurements, _parse_fix(args.fix))
    if args.out:
        name = args.name or args.csv.stem
        prov = Provenance(source=str(args.csv), note="fitted by trustlab fit (bounded least squares)")
        comps = {c: Component(name=c, mean=v, unit="call", provenance=Provenance(
            source=str(args.csv), note=("held fixed" if c in result.fixed else
                                         f"fitted, stderr {result.stderr.get(c, float('nan')):.3g} ms")))
                 for c, v in result.params.items()}
        save_toml(Profile(name=name, components=comps, family=args.family or "fitted", provenance=prov), args.out)
    if args.json:
        print_json(result.to_dict())
        return 0
    print(table([[c, v, result.stderr.get(c), "fixed" if c in result.fixed else ""]
                 for c, v in result.params.items()], ["component", "ms", "stderr", ""]))
    print()
    print(table([[r.command, r.measured_ms, r.fitted_ms, r.residual_ms, r.loo_ms] for r in result.rows],
                ["command", "measured", "fitted", "residual", "leave-one-out"]))
    print(f"\nmax |residual| {result.max_abs_residual_ms:.3f} ms, max relative {result.max_rel_residual:.2%}")
    if args.out:
        print(f"wrote {args.out}")
    return 0

"""``trustlab fit``: measurements in, profile out."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING

from trustlab.cli._output import print_json
from trustlab.errors import TrustlabError, excerpt
from trustlab.lazy import lazy_module
from trustlab.textable import table
from trustlab.safe_output import add_force, check_outputs, path_arg, reported, write_text

registry = lazy_module("trustlab.timing.registry")  # when a fit runs, not on every CLI start

if TYPE_CHECKING:
    from trustlab.timing.profile import Profile
    from trustlab.timing.fit import FitResult, Measurement


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
    p.add_argument("--name", help="with --out: name of the fitted profile (default: the CSV's stem)")
    p.add_argument("--weights", choices=("given", "relative", "none"), default=None,
                   help="row weights: 'given' = the CSV's weight column (trustlab measure writes 1/variance), "
                   "'relative' = 1/ms^2 (every row's relative error counts alike; stops slow commands "
                   "swamping fast ones), 'none' = all 1 (default: given if the CSV has a weight column, else none)")
    p.add_argument("--out", type=path_arg, metavar="PROFILE.toml",
                   help="write the fitted profile (never over the measurements)")
    add_force(p, "--out")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def _parse_fix(items: list[str]) -> dict[str, float]:
    fixed: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        try:
            number = float(value) if len(value) <= 400 else math.nan
        except ValueError:
            number = math.nan
        if not sep or not name or not math.isfinite(number):
            raise TrustlabError(f"--fix {excerpt(item)}: expected COMPONENT=NUMBER (a finite number)")
        if name in fixed:  # which one would hold? neither answer is what the user meant
            raise TrustlabError(f"--fix {excerpt(item)}: {excerpt(name)} is already held at {fixed[name]:g}; "
                                "give each component once")
        fixed[name] = number
    return fixed


def _check_names(args: argparse.Namespace) -> None:
    """An empty --family or --name would silently mean "search all" / "the CSV's stem"."""
    for flag, value in (("--family", args.family), ("--name", args.name)):
        if value is not None and not value.strip():
            raise TrustlabError(f"{flag}: empty; name one, or leave the option out")
    if args.name is not None and args.out is None:  # the name goes into the written profile only
        raise TrustlabError(f"--name {excerpt(args.name)}: names the profile written by --out; add --out "
                            "PROFILE.toml or drop --name")


def _shipped_units(family: str | None = None) -> dict[str, str]:
    """The unit of every component of readable profiles (of one family), from the profile index
    (``profiles list``'s), so a fit does not parse every profile for them."""
    units: dict[str, str] = {}
    for summary in registry.summaries(family)[0]:
        for component, unit in summary.components.items():
            units.setdefault(component, unit)
    return units


def _component_names() -> set[str]:
    """Component names of every readable profile, for checking CSV columns (from the profile
    index, which re-reads a profile only when its file changes)."""
    return {component for summary in registry.summaries()[0] for component in summary.components}


def _fitted_profile(result: FitResult, measurements: list[Measurement], args: argparse.Namespace) -> Profile:
    from trustlab.timing.profile import Component, Profile, Provenance

    families = {m.family for m in measurements if m.family}
    family = args.family or (families.pop() if len(families) == 1 else "fitted")
    units = _shipped_units(family if family != "fitted" else None)
    comps = {}
    for c, v in result.params.items():
        note = "held fixed" if c in result.fixed else f"fitted, stderr {result.stderr.get(c, math.nan):.3g} ms"
        unit = units.get(c, "call")
        comps[c] = Component(name=c, mean=v, unit=unit, provenance=Provenance(source=str(args.csv), note=note))
    prov = Provenance(source=str(args.csv), note=f"fitted by trustlab fit (bounded least squares, "
                      f"weights {result.weighting})")
    return Profile(name=args.name or args.csv.stem, components=comps, family=family, provenance=prov)


def run(args: argparse.Namespace) -> int:
    from trustlab.timing.fit import fit  # scipy is slow to import; only `fit` needs it
    from trustlab.timing.measurements import read_measurements

    _check_names(args)
    fixed = _parse_fix(args.fix)  # before reading: a bad --fix is the user's first error to hear about
    # refused before the fit: a directory, a missing parent, the measurements, an existing file without --force
    check_outputs({"--out": args.out}, force=args.force, inputs=[args.csv])
    measurements = read_measurements(args.csv, args.family, _component_names)
    weighting = args.weights or ("given" if any(m.weight is not None for m in measurements) else "none")
    result = fit(measurements, fixed, weighting=weighting)
    if args.out:
        with reported(args.out):
            write_text(args.out, _fitted_profile(result, measurements, args).to_toml())
    if args.json:
        print_json({**result.to_dict(), "center": sorted({m.center for m in measurements})},
                   indent=2 if len(result.rows) <= 10_000 else None)
        return 0
    print(table([[c, v, result.stderr.get(c), "fixed" if c in result.fixed else ""]
                 for c, v in result.params.items()], ["component", "ms", "stderr", ""]))
    print()
    centers = {m.center for m in measurements}
    measured = f"measured {centers.pop()}" if len(centers) == 1 else "measured (mixed centers)"
    print(table([[r.command, r.measured_ms, r.fitted_ms, r.residual_ms, r.loo_ms] for r in result.rows],
                ["command", measured, "fitted", "residual", "leave-one-out"]))
    print(f"weights: {weighting}")
    print(f"\nmax |residual| {result.max_abs_residual_ms:.3f} ms, max relative {result.max_rel_residual:.2%}")
    if args.out:
        print(f"wrote {args.out}")
    return 0

"""``trustlab validate``: how far each profile's numbers can be trusted, from references it was not built from."""

from __future__ import annotations

import argparse

from trustlab.cli._output import print_json, table


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate", help="check profiles against independent references; state each profile's accuracy",
        description="Run every check that has a reference: the papers' printed figures and cross-source pairs "
        "(the same chip family measured by JCAlgTest and by wolfTPM, Intel PTT firmware versions against each "
        "other, leave-one-source-out). Each row is predicted vs reference with the reference's provenance and "
        "whether it was used to build the profile ('calibration') or not ('independent'); only independent rows "
        "count toward a profile's stated accuracy (median and worst |error|). Places where a source contradicts "
        "itself are listed with every reading, flagged, never resolved.")
    p.add_argument("profiles", nargs="*", metavar="PROFILE", help="profiles to validate (default: every one with a "
                   "reference)")
    p.add_argument("--independent", action="store_true", help="list only the independent rows")
    p.add_argument("--json", action="store_true",
                   help="machine-readable: {accuracy, checks, inconsistencies}")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from trustlab.validation import run

    v = run(args.profiles or None)
    if args.json:
        print_json(v.to_dict())
        return 0
    print(render(v, independent_only=args.independent))
    return 0


def render(v, independent_only: bool = False) -> str:  # type: ignore[no-untyped-def]
    """The text report: accuracy per profile, every check, every inconsistency."""
    from trustlab.validation import INDEPENDENT

    acc = v.accuracy()
    out = ["Accuracy per profile (independent references only)",
           table([[a.profile, a.device_class, a.n, _pct(a.median), _pct(a.worst), a.calibration_n]
                  for a in acc.values()],
                 ["profile", "class", "n indep.", "median |err|", "worst |err|", "n calib."])]
    rows = [[c.profile, c.command, c.predicted, c.reference, c.unit, f"{c.error:+.1%}", c.kind,
             ("FLAG " if c.flagged else "") + c.source + (f" -- {c.note}" if c.note else "")]
            for c in v.checks if not independent_only or c.kind == INDEPENDENT]
    out += ["", "Checks", table(rows, ["profile", "command", "predicted", "reference", "unit", "error", "kind",
                                       "reference provenance"])]
    if v.inconsistencies:
        irows = [["FLAG", i.source, i.what, "; ".join(f"{k} = {_num(val)}" for k, val in i.readings.items()),
                  "-" if i.ours is None else _num(i.ours), i.unit, i.note] for i in v.inconsistencies]
        out += ["", "Inconsistencies: a source contradicts itself; every reading shown, none picked",
                table(irows, ["", "source", "what", "readings", "trustlab", "unit", "note"])]
    return "\n".join(out)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"

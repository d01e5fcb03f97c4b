"""``trustlab validate``: how far each profile's numbers can be trusted, from references it was not built from."""

from __future__ import annotations

import argparse

from trustlab.cli._output import print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate", help="check profiles against independent references; state each profile's accuracy",
        description="Run every check that has a reference: the papers' printed figures and cross-source pairs "
        "(the same chip family measured by JCAlgTest and by wolfTPM, Intel PTT firmware versions against each "
        "other, leave-one-source-out). Each row is predicted vs reference with the reference's provenance and "
        "whether it was used to build the profile ('calibration') or not ('independent'); only independent rows "
        "count toward a profile's stated accuracy (median and worst |error|). A chip with published post-quantum "
        "figures is also priced by the generic model with its calibration bypassed ('held-out silicon': evidence "
        "about the model, shown apart). Places where a source contradicts "
        "itself are listed with every reading, flagged, never resolved.")
    p.add_argument("profiles", nargs="*", metavar="PROFILE", help="profiles to validate (default: every one with a "
                   "reference)")
    p.add_argument("--independent", action="store_true", help="list only the independent rows")
    p.add_argument("--json", action="store_true",
                   help="machine-readable: {accuracy, checks, inconsistencies}, and for the PQC profiles "
                   "held_out_silicon (the calibrated chip priced by the generic model alone), pqc_leave_one_source_out, "
                   "pqc_assumptions (a list of {name, range (text), values, applies_to, source}; values holds the range's numbers: "
                   "{low, centre, high, unit}, with interval \"5-95%%\", bounds and weights for a mixture, {value, unit} "
                   "for an exact figure, keyed by part (keccak/other; microcontroller/application for a lineage) when "
                   "there are several; absent where the range is a prose-only rule)")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from trustlab.devices.tpm2.pqc_model import validation as pqc_validation
    from trustlab.validation import pqc_model, run
    from trustlab.validation.core import INDEPENDENT
    from trustlab.validation.text import render

    v = run(args.profiles or None)
    pqc = not args.profiles or any(c.profile == n for n in args.profiles for c in v.checks
                                   if c.profile in pqc_model.PROFILES)
    if args.json:
        doc = v.to_dict()
        if args.independent:  # as the text: only the independent rows (the JSON listed every kind)
            doc["checks"] = [c for c in doc["checks"] if c["kind"] == INDEPENDENT]
        if pqc:
            from trustlab.devices.tpm2.pqc_model import assumptions

            doc["pqc_leave_one_source_out"] = pqc_validation.summary()
            doc["pqc_assumptions"] = assumptions.listing()
        print_json(doc)
        return 0
    if v.checks or v.inconsistencies:  # (no empty tables when nothing asked for has a reference)
        print(render(v, independent_only=args.independent))
    if pqc:
        print()
        print(pqc_model.loso_text())
    checked = {c.profile for c in v.checks}
    for name in dict.fromkeys(args.profiles):
        if name not in checked:
            print(f"{name}: no reference to check it against")
    return 0

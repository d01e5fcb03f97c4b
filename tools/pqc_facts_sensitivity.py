"""Leave-one-source-out again, with facts taken away: what an outsider who types less than a source states gets.

``trustlab validate`` prices each published measurement with every fact its source states (build, code lineage,
implementation, Keccak). Someone scoring the model through ``--chip`` may give only a core and a clock. This
prints the leave-one-source-out summary (median |error|, median error, rows within 2x, coverage) for:

- every stated fact (what ``validate`` reports);
- each fact in turn left at the ``--chip`` default (unknown);
- all four left unknown, with the source's named core (``microarch``) and with only its core class.

Usage: ``PYTHONPATH=src .venv/bin/python tools/pqc_facts_sensitivity.py [--per-source]``
"""

from __future__ import annotations

import argparse
import dataclasses

from trustlab.devices.tpm2.pqc_model import builds, classes, keccak_impl, lineage
from trustlab.devices.tpm2.pqc_model import validation as v

UNKNOWN_FACTS = {"build": builds.UNKNOWN, "implementation": "unknown", "lineage": lineage.UNKNOWN,
                 "keccak_impl": keccak_impl.UNKNOWN}


def rows_with(unknown: tuple[str, ...], class_only: bool) -> list[dict]:
    """Every row leave-one-source-out (``validation.predict_row``) with the facts in ``unknown`` at the default
    and, with ``class_only``, the source's core class instead of its named core."""
    def restate(source: dict, spec):
        changes: dict = {f: UNKNOWN_FACTS[f] for f in unknown}
        if unknown:
            changes["notes"] = ()
        if class_only:
            changes["core"] = source["core"]
        return dataclasses.replace(spec, **changes)

    return [v.predict_row(row, restate=restate) for row in classes.measurements()["rows"]]


def line(label: str, rows: list[dict]) -> str:
    o = v.summary(rows)["overall"]  # counted sources only, as validate
    return (f"{label:44s} median |err| {o['median_abs_error']:6.1%}  median {o['median_error']:+6.1%}  "
            f"within 2x {o['within_2x']}/{o['rows']}  coverage {o['coverage']:5.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-source", action="store_true", help="also each source's median error with no facts")
    args = ap.parse_args()
    print(line("every stated fact (validate)", rows_with((), False)))
    for fact in UNKNOWN_FACTS:
        print(line(f"{fact} unknown", rows_with((fact,), False)))
    every = tuple(UNKNOWN_FACTS)
    print(line("all four unknown, named core", rows_with(every, False)))
    bare = rows_with(every, True)
    print(line("all four unknown, core class only", bare))
    if args.per_source:
        for sid, o in v.summary(bare)["sources"].items():
            if o["counted"]:
                print(f"  {sid:34s} {o['median_error']:+6.0%}  within 2x {o['within_2x']}/{o['rows']}")


if __name__ == "__main__":
    main()

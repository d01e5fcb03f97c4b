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
import statistics

from trustlab.devices.tpm2.pqc_model import builds, classes, keccak_impl, lineage, predict
from trustlab.devices.tpm2.pqc_model import validation as v

UNKNOWN_FACTS = {"build": builds.UNKNOWN, "implementation": "unknown", "lineage": lineage.UNKNOWN,
                 "keccak_impl": keccak_impl.UNKNOWN}


def scored_rows(unknown: tuple[str, ...], class_only: bool) -> list[tuple[str, float, float, bool]]:
    """(source, error, worst-way ratio, covered) per counted row, with the facts in ``unknown`` at the default."""
    doc = classes.measurements()
    sources = {s["id"]: s for s in doc["sources"]}
    out = []
    for row in doc["rows"]:
        source = sources[row["source"]]
        if not source["counted"]:
            continue
        exclude = frozenset({row["source"]})
        spec = v.spec_of(source, row, exclude)
        changes: dict = {f: UNKNOWN_FACTS[f] for f in unknown}
        if unknown:
            changes["notes"] = ()
        if class_only:
            changes["core"] = source["core"]
        spec = dataclasses.replace(spec, **changes)
        p = predict.price(row["algorithm"], row["operation"], spec, protection=False, exclude=exclude)
        k = 1000.0 if row["unit"] == "cycles" else 1.0  # at 1 MHz, ms x 1000 = cycles
        median = row.get("statistic", "mean") == "median" and p.run_median_ms is not None
        predicted = (p.run_median_ms if median else p.mean_ms) * k
        ref = float(row["value"])
        out.append((row["source"], predicted / ref - 1.0, max(predicted / ref, ref / predicted),
                    p.low_ms * k <= ref <= p.high_ms * k))
    return out


def line(label: str, rows: list[tuple[str, float, float, bool]]) -> str:
    return (f"{label:44s} median |err| {statistics.median(abs(r[1]) for r in rows):6.1%}  "
            f"median {statistics.median(r[1] for r in rows):+6.1%}  within 2x {sum(r[2] <= 2 for r in rows)}/"
            f"{len(rows)}  coverage {sum(r[3] for r in rows) / len(rows):5.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-source", action="store_true", help="also each source's median error with no facts")
    args = ap.parse_args()
    print(line("every stated fact (validate)", scored_rows((), False)))
    for fact in UNKNOWN_FACTS:
        print(line(f"{fact} unknown", scored_rows((fact,), False)))
    every = tuple(UNKNOWN_FACTS)
    print(line("all four unknown, named core", scored_rows(every, False)))
    bare = scored_rows(every, True)
    print(line("all four unknown, core class only", bare))
    if args.per_source:
        for sid in dict.fromkeys(r[0] for r in bare):
            rs = [r for r in bare if r[0] == sid]
            print(f"  {sid:34s} {statistics.median(r[1] for r in rs):+6.0%}  within 2x "
                  f"{sum(r[2] <= 2 for r in rs)}/{len(rs)}")


if __name__ == "__main__":
    main()

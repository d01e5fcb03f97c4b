"""``trustlab run validate``: the accuracy of every profile, as a study the flagship report shows.

The same checks as ``trustlab validate`` (trustlab.validation): each
profile's predictions beside references it was not built from (independent)
or was (calibration); only independent rows make a profile's stated
accuracy. The report's "Accuracy" section is drawn from this record.
"""

from __future__ import annotations

import argparse

from trustlab.experiments.registry import Result, experiment


@experiment("validate", help="every profile's accuracy against independent references (papers, cross-source "
            "pairs, leave-one-source-out); flagged self-contradictions of the sources")
class Validate:
    flagship = [[]]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--profile", action="append", metavar="NAME",
                            help="validate only this profile (repeatable; default every one with a reference)")

    def check(self, args: argparse.Namespace) -> None:
        """Each --profile exists (what the validation refuses first; the registry runs this before a run and
        on every sweep point)."""
        from trustlab.validation.run import check_profiles

        check_profiles(args.profile, where="--profile")

    def run(self, args: argparse.Namespace) -> Result:
        from trustlab.timing import registry
        from trustlab.validation import run
        from trustlab.validation.text import accuracy_plot, accuracy_rows, render

        self.check(args)  # the run starts with its check (a sweep's dry run): the same words for an unknown name
        v = run(args.profile or None)
        checks = [c.to_dict() for c in v.checks]
        incs = [dict(i.to_dict(), readings="; ".join(f"{k} = {val:g}" for k, val in i.readings.items()),
                     profiles=", ".join(i.profiles)) for i in v.inconsistencies]
        plot = accuracy_plot(v)
        # rows may name a reference platform rather than a shipped profile (e.g. pqm4's Cortex-M4)
        names = sorted({c.profile for c in v.checks if c.profile in registry.available()})
        return Result(experiment="validate", params={"profiles": args.profile or "all"},
                      data={"accuracy": accuracy_rows(v), "checks": checks, "inconsistencies": incs},
                      text=render(v),
                      profiles={n: registry.load(n).provenance.describe() for n in names},
                      plots=[plot] if plot else [])

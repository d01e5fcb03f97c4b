"""``trustlab report``: result records in, an HTML report with plots, CSV and JSON out."""

from __future__ import annotations

import argparse
from pathlib import Path

from trustlab.argtypes import jobs
from trustlab.errors import TrustlabError
from trustlab.safe_output import claim_dir, path_arg, reported


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report", help="write an HTML report (tables, plots, CSV/JSON) from saved results",
        description="Collect result records (from 'trustlab run NAME --save FILE', a sweep's points "
        "directory or a flagship run) and write one self-contained HTML page with the published "
        "figures beside model and simulation, plots, data tables and provenance, plus CSV/JSON files.",
        epilog="example: trustlab run timing-model --save out/r/tm.json && trustlab report out/r --out out/report",
    )
    p.add_argument("results", nargs="+", type=Path, metavar="RESULTS",
                   help="result JSON files, or directories holding them")
    p.add_argument("--out", type=path_arg, default=Path("out/report"), metavar="DIR",
                   help="report directory (default out/report): new, empty, or an earlier report's")
    p.add_argument("--force", action="store_true",
                   help="write into a non-empty directory that is not an earlier report")
    p.add_argument("--title", default="trustlab report")
    p.add_argument("--link-images", action="store_true",
                   help="link the PNG files beside the page instead of embedding them")
    p.add_argument("--jobs", "-j", type=jobs(), default=1, metavar="N",
                   help="N processes: N-1 draw the figures while one writes the rest (default 1: one does all)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from trustlab.report import write_report  # here, not at the top: every CLI start imports this module
    from trustlab.report.plots import frozen_at_exit
    from trustlab.report.records import collect

    records = collect(args.results)
    if args.jobs < 1:
        raise TrustlabError(f"--jobs {args.jobs}: need at least 1")
    claim_dir(args.out, "report", force=args.force, inputs=args.results)
    with reported(args.out):
        index = write_report(records, args.out, title=args.title, inline=not args.link_images, jobs=args.jobs)
    frozen_at_exit()  # the process ends now: its exit's collections skip what the report left
    failed = sum(1 for r in records if "data" not in r)
    print(f"{index} ({len(records)} runs, {failed} failed)")
    return 1 if failed else 0

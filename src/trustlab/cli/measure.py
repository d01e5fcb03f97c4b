"""``trustlab measure``: time a TPM 2.0 over any TCTI and write rows ``trustlab fit`` reads."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trustlab.argtypes import count
from trustlab.cli._output import print_json
from trustlab.textable import table
from trustlab.safe_output import add_force, path_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "measure", help="run the TPM 2.0 benchmark suite over a TCTI",
        description="Repeat each command of a suite (tpm2-pytss) against a TPM and write per-command mean, "
        "sd and percentiles, including error-aborted variants that isolate the overheads. The CSV feeds "
        "'trustlab fit --family tpm2' directly.",
        epilog="example: trustlab measure --tcti swtpm:port=2321 --suite full --repeat 20 --out chip.csv",
    )
    p.add_argument("--tcti", required=True, metavar="TCTI",
                   help="swtpm:port=P, mssim:port=P, device:/dev/tpmrm0 ...")
    p.add_argument("--suite", default="small", choices=("small", "full"),
                   help="small: the commands 'trustlab fit' needs; full: every variant (default small)")
    p.add_argument("--repeat", type=count(1, 1_000_000, "--repeat"), default=10, metavar="N", help="timed repetitions per command")
    p.add_argument("--warmup", type=count(0, 1_000_000, "--warmup"), default=1, metavar="N", help="untimed repetitions first")
    p.add_argument("--center", choices=("mean", "median", "min"), default="mean",
                   help="what the ms column holds; host noise only adds time, so median or min "
                   "estimate the TPM better on a busy host")
    p.add_argument("--subtract-client-overhead", action="store_true",
                   help="first time this host's own TSS/socket overhead per command (a local swtpm behind a "
                   "virtual proxy) and take it off every sample")
    p.add_argument("--out", type=path_arg, required=True, metavar="FILE.csv",
                   help="CSV to write (checked before measuring: not a directory, parent exists and is writable)")
    add_force(p, "--out")
    p.add_argument("--json", action="store_true", help="also print the rows as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from trustlab.devices.tpm2 import harness
    from trustlab.errors import TrustlabError
    from trustlab.safe_output import check_outputs

    # a name too long, a FIFO, an unwritable place, an existing file without --force: one line, before measuring
    check_outputs({"--out": args.out}, force=args.force)
    harness.check_output(args.out)
    if args.repeat < 1:
        raise TrustlabError(f"--repeat {args.repeat}: must be at least 1")
    if args.warmup < 0:
        raise TrustlabError(f"--warmup {args.warmup}: must not be negative")
    subtract = None
    if args.subtract_client_overhead:
        print("timing this host's client overhead against a local swtpm ...", file=sys.stderr, flush=True)
        subtract = harness.client_overhead(args.suite, repeat=max(args.repeat, 5), center=args.center)
    rows = harness.measure(args.tcti, suite=args.suite, repeat=args.repeat, warmup=args.warmup,
                           center=args.center, subtract=subtract, progress=lambda c, v: print(f"  {c}[{v}]", file=sys.stderr, flush=True))
    harness.write_csv(rows, args.out)
    if args.json:
        print_json([{k: v for k, v in r.__dict__.items() if k != "samples"} for r in rows])
    else:
        print(table([[r.command, r.variant, r.ms, r.sd, r.n, r.p50, r.p99] for r in rows],
                    ["command", "variant", f"{args.center} ms", "sd", "n", "p50", "p99"]))
        print(f"wrote {args.out}")
    return 0

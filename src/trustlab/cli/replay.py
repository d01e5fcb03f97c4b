"""``trustlab replay``: a recorded ``serve --trace`` workload priced on every chip, without swtpm."""

from __future__ import annotations

import argparse

from trustlab.argtypes import count
from trustlab.experiments._params import seed
from trustlab.safe_output import path_arg

MAX_DRAWS = 20000


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay", help="price a recorded serve --trace workload on every TPM 2.0 profile (and with PQC keys)",
        description="Read a trace written by `trustlab serve --trace` (format: docs/trace-format.md) and price its "
        "command stream on each profile with the rules serve charges: total TPM time (median and p95 over draws "
        "of the profiles' spreads), wall time with the clients' recorded own time, the bus share, the top "
        "commands, and what a profile cannot price. Needs neither swtpm nor the network.",
        epilog="examples: trustlab replay examples/workloads/attestation.jsonl --profiles all;  "
        "trustlab replay w.jsonl --profiles infineon-slb9670-wolftpm,st-st33ktpm2xspi-wolftpm "
        "--pqc sign=ML-DSA-65,kem=ML-KEM-768 --json",
    )
    p.add_argument("trace", metavar="TRACE.jsonl", help="a serve --trace file (format version 2)")
    p.add_argument("--profiles", default="all", metavar="all|FAMILY|NAME[,NAME...]",
                   help="TPM 2.0 profiles to price on (default all)")
    p.add_argument("--draws", type=count(1, MAX_DRAWS, "--draws"), default=200, metavar="N",
                   help=f"draws of the profiles' spreads (key generation) for median and p95 (default 200, at "
                   f"most {MAX_DRAWS}); draw 0 repeats serve's own draws for the same --seed")
    p.add_argument("--seed", type=seed, default=0, help="seed of the draws (default 0, "
                   "serve's default)")
    p.add_argument("--pqc", metavar="sign=ML-DSA-65,kem=ML-KEM-768",
                   help="also price the workload with post-quantum keys (TPM 2.0 Library 1.85): signing keys "
                   "become ML-DSA, RSA decryption / ECDH ML-KEM")
    p.add_argument("--top", type=count(1, 100, "--top"), default=5, help="top commands listed per profile (default 5)")
    p.add_argument("--plot", metavar="FILE.png", type=path_arg, help="write a bar plot of workload time per chip")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from trustlab.cli._output import print_json
    from trustlab.replay import load, pqc
    from trustlab.replay import run as replaying
    from trustlab.replay import text

    choice = pqc.parse_choice(args.pqc) if args.pqc is not None else None
    names = replaying.select_profiles(args.profiles)
    trace = load.read(args.trace)
    result = replaying.replay(trace, names, draws=args.draws, seed=args.seed, choice=choice, top=args.top)
    if args.plot:
        from pathlib import Path

        from trustlab.report.plots import render

        render(text.plot(result), Path(args.plot))
    if args.json:
        print_json(result)
    else:
        print(text.render(result))
        if args.plot:
            print(f"plot: {args.plot}")
    return 0

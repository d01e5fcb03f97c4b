"""``trustlab replay``: a recorded ``serve --trace`` workload priced on every chip, without swtpm."""

from __future__ import annotations

import argparse

from trustlab.argtypes import count
from trustlab.experiments._params import seed
from trustlab.safe_output import add_force, path_arg

MAX_DRAWS = 20000


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay", help="price a recorded serve --trace workload on every TPM 2.0 profile (and with PQC keys)",
        description="Read a trace written by `trustlab serve --trace` (format: docs/trace-format.md) and price its "
        "command stream on each profile with the rules serve charges: total TPM time (median and p95 over draws "
        "of the profiles' spreads), wall time with the clients' recorded own time, the bus share, the top "
        "commands, what a profile cannot price, and the commands whose frames exceed a chip's buffer (does not "
        "fit). serve's own 1.85 post-quantum commands are priced by the PQC cost model exactly as serve charged "
        "them (draw 0 with serve's --seed gives the recorded total back). Profiles are shown by their full names. "
        "Needs neither swtpm nor the network.",
        epilog="examples:\n"
        "  trustlab replay w.jsonl                                   every TPM 2.0 profile (= --profiles all)\n"
        "  trustlab replay w.jsonl --profiles tpm2                   a family (replay prices tpm2 only)\n"
        "  trustlab replay w.jsonl --profiles infineon-slb9670-wolftpm,swtpm-native\n"
        "  trustlab replay w.jsonl --profiles my-chip.toml,swtpm-native   a profile file beside shipped ones\n"
        "  trustlab replay w.jsonl --draws 1000 --seed 7             more draws; draw 0 = serve --seed 7's\n"
        "  trustlab replay w.jsonl --pqc sign=ML-DSA-65,kem=ML-KEM-768   post-quantum what-if beside\n"
        "  trustlab replay w.jsonl --pqc sign=ML-DSA-44              signing keys only\n"
        "  trustlab replay w.jsonl --top 10 --plot w.png             10 top commands; bar plot per chip\n"
        "  trustlab replay w.jsonl --json | jq '.profiles[] | [.profile, .tpm_median_ms]'\n"
        "record one: trustlab serve --profile swtpm-native --virtual --trace w.jsonl --port 2321 &\n"
        "            TPM2TOOLS_TCTI=swtpm:port=2321 tpm2_getrandom 8   (any client; stop serve, then replay)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("trace", metavar="TRACE.jsonl", help="a serve --trace file (format version 2)")
    p.add_argument("--profiles", default="all", metavar="all|FAMILY|NAME[,NAME...]",
                   help="TPM 2.0 profiles to price on: all (default), the family tpm2, or a comma-separated list "
                   "of shipped/user profile names and .toml profile files")
    p.add_argument("--draws", type=count(1, MAX_DRAWS, "--draws"), default=200, metavar="N",
                   help=f"draws of the profiles' spreads (key generation) for median and p95 (default 200, at "
                   f"most {MAX_DRAWS}); draw 0 repeats serve's own draws for the same --seed")
    p.add_argument("--seed", type=seed, default=0, help="seed of the draws (default 0, "
                   "serve's default)")
    p.add_argument("--pqc", metavar="sign=ML-DSA-65,kem=ML-KEM-768",
                   help="also price the workload with post-quantum keys (TPM 2.0 Library 1.85): signing keys "
                   "become ML-DSA-44/65/87, RSA decryption / ECDH ML-KEM-768/1024; either part may be left out")
    p.add_argument("--top", type=count(1, 100, "--top"), default=5, metavar="N",
                   help="top commands listed per profile (default 5, at most 100)")
    p.add_argument("--plot", metavar="FILE.png", type=path_arg,
                   help="write a bar plot of workload time per chip (log scale; with --pqc the post-quantum bar "
                   "beside each; * marks a profile that cannot price every command, ! one whose buffer the trace's "
                   "frames exceed)")
    add_force(p, "--plot")
    p.add_argument("--json", action="store_true", help="machine-readable output: the tables' numbers as JSON "
                   "numbers (ms, shares as fractions), keys listed in docs/trace-format.md")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from trustlab.cli._output import print_json
    from trustlab.replay import load, pqc
    from trustlab.replay import run as replaying
    from trustlab.replay import text

    choice = pqc.parse_choice(args.pqc) if args.pqc is not None else None
    names = replaying.select_profiles(args.profiles)
    # before any work: never over the trace or a profile file, a directory, a missing directory, nor an
    # existing file without --force (the rule of every file output)
    from trustlab.safe_output import check_outputs

    check_outputs({"--plot": args.plot}, force=args.force,
                  inputs=[args.trace, *(n for n in names if replaying.is_path(n))])
    trace = load.read(args.trace)
    result = replaying.replay(trace, names, draws=args.draws, seed=args.seed, choice=choice, top=args.top)
    if args.plot:
        _plot(text.plot(result), args.plot)
    if args.json:
        print_json(result)
    else:
        print(text.render(result))
        if args.plot:
            print(f"plot: {args.plot}")
    return 0


def _plot(spec: dict, path) -> None:
    """Write the plot atomically (safe_output's rule): a failure leaves no half-written PNG."""
    from trustlab.report.plots import render
    from trustlab.safe_output import atomic_open, reported

    with reported(path, "--plot"), atomic_open(path, "wb") as fh:
        render(spec, fh)

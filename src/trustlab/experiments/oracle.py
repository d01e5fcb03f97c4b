"""``trustlab run oracle``: the TPM random-oracle study of Gunupudi & Tate (2010, Sec. VI).

Model column: the paper's formulas evaluated on the profile (the analytic
model). Simulated column: what the engine charged while actually running the
protocol (apps.oracle). The paper's printed Infineon figures (T1-T7,
``672 + 508 n`` for the source, ``T7 + T3`` for a destination, and the
``4.5 (b_i + 3) b_o`` ms query estimate) appear only as references.

JSON: ``operations`` (ref, command, model_ms, simulated_ms; T3/T5/T6/T7 are
means over their calls), ``source_total_ms`` / ``destination_total_ms`` (the
paper's operations only, as simulated; ``*_model_ms`` beside them),
``auth_session_ms`` ({"source", "destination"}: TPM_OIAP/TPM_OSAP time during
setup and migration, which the paper reports apart), ``query_ms`` (mean
TPM_HMAC time per query and party), ``answers_identical``.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Iterable

from trustlab.apps import oracle
from trustlab.progress import bar as progress_bar, phased
from trustlab.textable import table
from trustlab.errors import TrustlabError
from trustlab.experiments._params import load_profile, seed
from trustlab.devices.tpm12.commands.hmac import MAX_OUTPUT_BLOCKS
from trustlab.devices.tpm12.constants import TPM_BUFFER_MAX
from trustlab.experiments.registry import Reference, Result, experiment
from trustlab.devices.tpm12.engine import REQUIRED as ENGINE_REQUIRED
from trustlab.timing import formulas
from trustlab.timing.profile import Profile

PAPER = "Gunupudi & Tate 2010, Sec. VI-B"
# printed model values for the Infineon profile (Sec. VI-B table; the simulator column is withheld)
PAPER_INFINEON = {"T1": 20, "T2": 181, "T3": 325, "T4": 329, "T5": 487, "T6": 21, "T7": 487}

# Upper bounds keep a typo from turning into an hours-long (or endless) run:
# each party costs a simulated TPM with its own RSA keys, each query block an HMAC.
SOURCE_ONLY = oracle.SOURCE_OPS - {"TPM_LoadKey2"}  # the operations reported from the source's calls
MAX_PARTIES = max(n for n in range(2, 1001) if oracle.cmk_create_blob_bytes(n) <= TPM_BUFFER_MAX)
"""The source's msaList names every destination; beyond this many parties TPM_CMK_CreateBlob no longer fits
libtpms' 4096-byte command buffer (172 parties with 2048-bit keys)."""
MAX_QUERIES = 100_000
MAX_INPUT_BLOCKS = max(b for b in range(1, 1025) if oracle.tpm_hmac_bytes(b) <= TPM_BUFFER_MAX)
"""A query's TPM_HMAC frame (its input is 64 b_i - 9 bytes, apps/oracle) must fit the TPM's 4096-byte command
buffer: 63 blocks. (The bound was 1024, from the TPM's 64 KiB sized-buffer allocation limit, which no frame
reaches; 64..1024 now fail in the TPM with TPM_BAD_PARAM_SIZE, as they would on libtpms.) The output blocks go
up to the command's own limit."""


def mean(values: Iterable[float]) -> float:
    """``statistics.mean``, bit for bit, without its Fraction arithmetic (10 means per run).

    A finite float is an integer over a power of two, so scaled to the largest
    denominator the values sum exactly as integers, and ``int / int`` rounds
    once, correctly, as ``statistics.mean`` rounds its exact Fraction. Anything
    but finite floats takes ``statistics.mean`` itself.
    """
    values = list(values)
    if not values or any(type(v) is not float for v in values):
        return statistics.mean(values)
    first = values[0]
    # one repeated finite non-zero value (the usual case: the parties' identical calls) is its own exact
    # mean (zero is left to the sum, which makes -0.0 into 0.0 as statistics.mean does)
    if first != 0.0 and first - first == 0.0 and values.count(first) == len(values):
        return first
    try:
        ratios = [v.as_integer_ratio() for v in values]
    except (OverflowError, ValueError):  # inf, nan
        return statistics.mean(values)
    den = max(d for _, d in ratios)
    return sum(n * (den // d) for n, d in ratios) / (den * len(values))


def check_range(flag: str, value: int, lo: int, hi: int) -> None:
    """One-line error naming the flag when ``value`` is outside ``lo..hi``."""
    if not lo <= value <= hi:
        raise TrustlabError(f"{flag} {value}: must be between {lo} and {hi}")


def select(args: argparse.Namespace) -> Profile:
    """The profile a run times, every parameter checked: the ranges, and the profile (it exists and has
    what the TPM 1.2 engine charges). The experiment's ``check`` and the start of its run are this function."""
    check_range("--parties", args.parties, 2, MAX_PARTIES)
    check_range("--queries", args.queries, 1, MAX_QUERIES)
    check_range("--input-blocks", args.input_blocks, 1, MAX_INPUT_BLOCKS)
    check_range("--output-blocks", args.output_blocks, 1, MAX_OUTPUT_BLOCKS)
    return load_profile("--profile", args.profile, *ENGINE_REQUIRED)


@experiment("oracle", help="TPM random oracle: CMK setup, direct migration to n-1 parties, HMAC queries")
class OracleStudy:
    flagship = [["--profile", "infineon-2010", "--parties", "2"],
                ["--profile", "infineon-2010", "--parties", "5"],
                ["--profile", "atmel-2010", "--parties", "2"],
                ["--profile", "winbond-2010", "--parties", "2"],
                ["--profile", "stm-2010", "--parties", "2"],
                ["--profile", "sim-2010", "--parties", "2"]]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--profile", default="infineon-2010", help="tpm1.2 profile (default infineon-2010)")
        parser.add_argument("--parties", type=int, default=2, metavar="N",
                            help=f"parties incl. the source, 2..{MAX_PARTIES} (default 2)")
        parser.add_argument("--input-blocks", type=int, default=3, metavar="BI",
                            help=f"SHA-1 blocks of a query input, 1..{MAX_INPUT_BLOCKS} (default 3 = 1024-bit inputs)")
        parser.add_argument("--output-blocks", type=int, default=1, metavar="BO",
                            help=f"160-bit output blocks per query, 1..{MAX_OUTPUT_BLOCKS} (default 1)")
        parser.add_argument("--queries", type=int, default=3, metavar="Q",
                            help=f"queries answered by every party, 1..{MAX_QUERIES} (default 3)")
        parser.add_argument("--realtime", action="store_true",
                            help="each TPM command returns after its modelled time")
        parser.add_argument("--seed", type=seed, default=0,
                            help="seed of the timing spread draws; party i uses SEED+i (default 0)")

    def check(self, args: argparse.Namespace) -> None:
        """Everything the run refuses before a TPM runs (the registry runs this before a run and on every sweep
        point)."""
        select(args)

    def run(self, args: argparse.Namespace) -> Result:
        profile = select(args)
        with progress_bar(oracle.steps(args.parties, args.queries), "oracle", "step") as bar:
            run = oracle.run(profile, args.parties, input_blocks=args.input_blocks,
                             output_blocks=args.output_blocks, queries=args.queries,
                             realtime=args.realtime, seed=args.seed, step=phased(bar, "oracle"))
        n = args.parties
        dests = [p for p in run.calls if p != "source"]
        model = {cmd: formulas.estimate(profile, cmd)[0] for _, cmd in oracle.OPERATIONS}
        rows = []
        at_source, at_dests = run.by_command(["source"]), run.by_command(dests)
        for ref, cmd in oracle.OPERATIONS:
            sims = (at_source if cmd in SOURCE_ONLY else at_dests).get(cmd, [])
            rows.append({"ref": ref, "command": cmd, "model_ms": model[cmd],
                         "simulated_ms": mean(sims), "calls": len(sims)})
        m = {r["ref"]: r["model_ms"] for r in rows}
        source_model = m["T1"] + m["T2"] + 2 * m["T3"] + m["T4"] + (n - 1) * (m["T5"] + m["T6"])
        dest_model = m["T7"] + m["T3"]
        source_sim = run.ms("source", oracle.SOURCE_OPS)
        dest_sim = mean(run.ms(d, oracle.DEST_OPS) for d in dests)
        setup_auth = {p: run.setup_ms(p, oracle.SESSION_COMMANDS) for p in run.calls}
        identical = all(len(set(a)) == 1 for a in run.answers)
        data = {
            "profile": profile.name, "parties": n,
            "operations": [{k: r[k] for k in ("ref", "command", "model_ms", "simulated_ms")} for r in rows],
            "source_total_ms": source_sim, "source_model_ms": source_model,
            "destination_total_ms": dest_sim, "destination_model_ms": dest_model,
            "auth_session_ms": {"source": setup_auth["source"],
                                "destination": mean(setup_auth[d] for d in dests)},
            "query_ms": mean(run.query_ms), "queries": args.queries,
            "input_blocks": args.input_blocks, "output_blocks": args.output_blocks,
            "answers_identical": identical, "realtime": bool(args.realtime),
        }
        refs = []
        if profile.name == "infineon-2010":
            for r in rows:
                refs.append(Reference(f"{r['ref']} {r['command']}", PAPER_INFINEON[r["ref"]],
                                      model=r["model_ms"], simulated=r["simulated_ms"], source=PAPER))
            refs.append(Reference(f"source total, n={n} (672 + 508n)", 672 + 508 * n,
                                  model=source_model, simulated=source_sim, source=PAPER))
            refs.append(Reference("destination total (T7 + T3)", PAPER_INFINEON["T7"] + PAPER_INFINEON["T3"],
                                  model=dest_model, simulated=dest_sim, source=PAPER))
            # The paper's query figure is an upper bound from an Infineon SHA-1 measurement
            # (1.15 s per 16 KiB): it says nothing about other chips.
            refs.append(Reference(
                f"query upper bound, b_i={args.input_blocks} b_o={args.output_blocks} (4.5(b_i+3)b_o)",
                4.5 * (args.input_blocks + 3) * args.output_blocks,
                simulated=data["query_ms"], source=f"{PAPER}, 3) TPM-Oracle Queries (Infineon, upper bound)"))
        text_rows = [[r["ref"], r["command"], f"{r['model_ms']:.1f}", f"{r['simulated_ms']:.1f}"] for r in rows]
        text_rows += [["", "source total", f"{source_model:.1f}", f"{source_sim:.1f}"],
                      ["", "destination total", f"{dest_model:.1f}", f"{dest_sim:.1f}"],
                      ["", "auth sessions (source)", "", f"{data['auth_session_ms']['source']:.1f}"],
                      ["", "auth sessions (destination)", "", f"{data['auth_session_ms']['destination']:.1f}"],
                      ["", "query (TPM_HMAC)", "", f"{data['query_ms']:.1f}"]]
        text = (f"TPM oracle on {profile.name}, n={n} parties (ms)\n"
                + table(text_rows, ["ref", "operation", "model", "simulated"])
                + f"\nall parties' answers identical: {identical}")
        plots = [{"kind": "bar", "title": f"TPM oracle operations on {profile.name}", "xlabel": "operation",
                  "ylabel": "ms", "logx": False, "logy": False,
                  "series": [{"label": "model", "x": [r["ref"] for r in rows], "y": [r["model_ms"] for r in rows]},
                             {"label": "simulated", "x": [r["ref"] for r in rows],
                              "y": [r["simulated_ms"] for r in rows]}]}]
        return Result("oracle", vars_params(args), data, text, refs,
                      {profile.name: profile.provenance.describe()}, plots)


def vars_params(args: argparse.Namespace) -> dict:
    return {k: v for k, v in vars(args).items() if k not in ("handler", "json", "save")}

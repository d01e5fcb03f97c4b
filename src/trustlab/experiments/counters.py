"""``trustlab run counters``: virtual monotonic counters, log-based vs hash-tree.

Reproduces the experiments of the counters/wallet paper (Sec. V): round-robin
INCREMENT and READ over 2..1024 counters (its Tables III-VIII: log-based and
hash-tree, per vendor profile) and Zipf-distributed requests (Table IX: per-op
min/max/avg/median/sd by increment gap). Every request runs for real on the
TPM 1.2 engine (real AIK signatures, real transport logs, real Merkle paths)
and is verified by an independent verifier; its cost is what the engine
charged. ``model_s`` is the paper's analytic formula for the same requests
(:mod:`trustlab.apps.counters.model`), computed from the profile alone.

The paper's measured tables are withheld; the only paper figures used are the
worked examples of its Sec. V-B (model values), set beside ours in
``Result.references``.
"""

from __future__ import annotations

import argparse
from array import array
from pathlib import Path
from typing import Sequence

import numpy as np

from trustlab.apps import workloads
from trustlab.apps.counters import schemes
from trustlab.apps.counters.base import VerificationError
from trustlab.apps.counters.runner import OpRecord, describe, run, summarize
from trustlab.textable import table
from trustlab.errors import TrustlabError
from trustlab.experiments._params import comma_items, count, load_profile, name_list, real, seed
from trustlab.experiments.registry import Reference, Result, experiment
from trustlab.timing.profile import Profile

PAPER = "Counters/wallet paper (2010), Sec. V-B worked example (model values)"
# The paper's own model arithmetic for log-based READ on Atmel (Sec. V-B):
# 2 * (0.060 + 0.041 + 0.8) = 1.801 s and 1024 * (...) = 922.624 s.
_PAPER_LOG_READ_ATMEL = {2: 1.801, 1024: 922.624}

TABLES = {
    ("log", "increment"): "Table III/IV layout: log-based INCREMENT",
    ("log", "read"): "Table V/VI layout: log-based READ",
    ("hashtree", "increment"): "Table VII layout: hash-tree INCREMENT",
    ("hashtree", "read"): "Table VIII layout: hash-tree READ",
    ("log-tpm2", "increment"): "log-based INCREMENT on TPM 2.0 (swtpm + timing proxy)",
    ("log-tpm2", "read"): "log-based READ on TPM 2.0 (swtpm + timing proxy)",
}


# Bounds keep a typo from becoming an endless run or a numpy allocation error; 2^20
# counters is the largest hash tree the batch mode (--attest-every) is meant for.
MAX_COUNTERS = 1 << 20
MAX_REQUESTS = 1 << 24
MAX_ZIPF = 100.0  # a Zipf exponent beyond this sends every request to counter 0


def _int_list(text: str, flag: str = "--counters") -> list[int]:
    """``2,16,128`` -> [2, 16, 128]; an empty list or an empty item is an error, not skipped."""
    items = comma_items(text, flag)
    try:
        values = [int(v) for v in items]
    except ValueError:
        raise TrustlabError(f"{flag} {text!r}: expected comma-separated integers") from None
    if any(v < 1 for v in values):
        raise TrustlabError(f"{flag} {text!r}: counts must be positive integers")
    if any(v > MAX_COUNTERS for v in values):
        raise TrustlabError(f"{flag} {text!r}: at most {MAX_COUNTERS} counters")
    return values


@experiment("counters", help="virtual monotonic counters (log-based / hash-tree) on TPM 1.2: "
            "round-robin and Zipf workloads, model beside simulation (paper Tables III-IX)")
class CountersExperiment:
    flagship = [
        ["--scheme", "both", "--profile", "atmel-counters-2010", "--counters", "2,16,128",
         "--workload", "roundrobin", "--op", "increment", "--deterministic"],
        ["--scheme", "both", "--profile", "atmel-counters-2010", "--counters", "2,16,128",
         "--workload", "roundrobin", "--op", "read", "--deterministic"],
        ["--scheme", "both", "--profile", "atmel-counters-2010", "--counters", "1024",
         "--workload", "zipf", "--op", "read", "--requests", "400", "--seed", "1"],
    ]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--scheme", choices=["log", "hashtree", "both", "log-tpm2"], default="both",
                            help="log-tpm2: the log-based scheme on TPM 2.0 (swtpm behind the timing proxy; "
                            "give a TPM 2.0 --profile, e.g. infineon-slb9672-wolftpm)")
        parser.add_argument("--profile", default="atmel-counters-2010", metavar="NAME[,NAME...]",
                            help="TPM profile(s) with counter components (default atmel-counters-2010; "
                            "shipped: atmel/infineon/stm/winbond-counters-2010)")
        parser.add_argument("--counters", default="2,4,8,16,32,64,128,256,512,1024",
                            metavar="N[,N...]", help="numbers of virtual counters (default 2..1024, doubling)")
        parser.add_argument("--workload", choices=list(workloads.DISTRIBUTIONS), default=None,
                            help="which counter each request goes to (default roundrobin, as the paper's "
                            "Tables III-VIII; zipf for Table IX)")
        parser.add_argument("--op", choices=list(workloads.OPS), default=None,
                            help="operation to time (default increment); 'read' issues READ-then-INCREMENT "
                            "purchases and times the READs (they see the counter's increment gap); not with "
                            "--read-fraction, which times both")
        parser.add_argument("--requests", type=int, default=None, metavar="R",
                            help="requests per run (default: one per counter, as in the paper)")
        parser.add_argument("--seed", type=seed, default=0,
                            help="seed (>= 0) of the request stream and the timing spread draws (default 0)")
        parser.add_argument("--zipf-mode", choices=list(workloads.ZIPF_MODES), default=None,
                            help="with --workload zipf: bounded (paper's law, exact; the default), ycsb, "
                            "or scrambled (YCSB ScrambledZipfian)")
        parser.add_argument("--zipf-constant", type=real("--zipf-constant", 0, MAX_ZIPF, low_open=True), default=None,
                            help="with --workload zipf: Zipf constant/exponent (default 0.99, YCSB's; "
                            "ycsb/scrambled need it below 1)")
        parser.add_argument("--zipf-rho", type=real("--zipf-rho", 0, MAX_ZIPF, low_open=True), default=None,
                            help="with --workload zipf --zipf-mode bounded: the paper's rho, exponent rho+1 "
                            "(instead of --zipf-constant)")
        parser.add_argument("--read-fraction", type=real("--read-fraction", 0, 1), default=None, metavar="F",
                            help="mixed stream: each request is a READ with probability F, else INCREMENT")
        parser.add_argument("--trace", type=Path, default=None, help="replay a trace file instead")
        parser.add_argument("--deterministic", action="store_true",
                            help="drop the profile's spreads (the model then equals the simulation exactly)")
        parser.add_argument("--tpm12", choices=list(schemes.TPM12_MODES), default=None,
                            help="where the TPM 1.2 of the log and hash-tree schemes runs: inproc (the engine in "
                            "this process, default); served (the same engine behind the timing proxy, as "
                            "'trustlab serve' runs it, spoken to over swtpm's TCP protocol; the modelled times "
                            "are the served engine's charges, equal to inproc's); libtpms (log scheme: every operation "
                            "runs on libtpms' TPM 1.2 in swtpm and is verified against its AIK, and is timed by an "
                            "in-process twin engine doing the same operation). Recorded in every row as 'tpm12'")
        parser.add_argument("--attest-every", type=count(1, MAX_REQUESTS, "--attest-every"), default=None, metavar="K",
                            help="hash-tree only: sign the root on every K-th request (default 1 = every "
                            "request, as the paper); K>1 is the batch mode used at 2^20 counters. Rejected "
                            "with --scheme log/log-tpm2; with 'both' it applies to the hash-tree runs")

    def check(self, args: argparse.Namespace) -> None:
        """Everything the run refuses before it builds a TPM (the registry runs this before a run, on a copy of
        the arguments, and on every sweep point)."""
        _settle(args)

    def run(self, args: argparse.Namespace) -> Result:
        profiles = _settle(args)
        scheme_names = _scheme_names(args.scheme)
        rows: list[dict] = []
        violations: list[str] = []
        per_gap: dict[tuple[str, str, int], Sequence[OpRecord]] = {}
        gap_info: dict[int, dict] = {}
        for n in args.counters:
            requests, ids = self._requests(args, n)
            for p in profiles:
                for s in scheme_names:
                    scheme = schemes.build(s, p, n, seed=args.seed, attest_every=args.attest_every,
                                           tpm12=args.tpm12)
                    try:
                        records = run(scheme, requests, seed=args.seed)
                    except VerificationError as exc:  # the verifier refused an honest answer: a verdict
                        violations.append(f"counter verification failed ({s}, {p.name}, {n} counters): {exc}")
                        continue
                    finally:
                        scheme.close()
                    where = scheme.extra.get("tpm12_where", "in-process engine")
                    del scheme  # the host tree (tens of MiB at 2^20) goes before the summaries' work
                    ops = [args.op] if args.read_fraction is None else list(workloads.OPS)
                    for op in ops:
                        row = summarize(records, scheme=s, op=op, profile=p.name, counters=n)
                        row["workload"] = "trace" if args.trace else args.workload
                        row["seed"] = args.seed
                        if s != "log-tpm2":
                            row["tpm12"] = where
                        rows.append(row)
                    per_gap[(s, p.name, n)] = records
            # after the runs: its sorting scratch (tens of MiB at 10^6 requests) must not sit under
            # the host tree's memory
            gap_info[n] = workloads.gap_stats(ids).to_dict() if ids is not None else {}
        params = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                  if k not in ("handler", "json", "save", "experiment")}
        if not rows:
            return Result(experiment="counters", params=params, data=[], text="\n".join(violations),
                          violations=violations)
        table_ix = _table_ix(per_gap) if (args.workload != "roundrobin" or args.trace) else None
        for row in rows:
            row["increment_gaps"] = gap_info.get(row["counters"], {})
            if table_ix is not None:
                row["by_gap"] = [{k: v for k, v in t.items() if k not in ("scheme", "profile")}
                                 for t in table_ix if t["scheme"] == row["scheme"] and t["profile"] == row["profile"]
                                 and t["counters"] == row["counters"]]
        return Result(
            experiment="counters",
            params=params,
            violations=violations,
            data=rows,
            text=_text(rows, table_ix, args),
            references=_references(rows),
            profiles={p.name: p.provenance.describe() for p in profiles},
            plots=_plots(rows, table_ix),
        )

    @staticmethod
    def _requests(args: argparse.Namespace, n: int) -> tuple[Sequence[workloads.Request] | workloads.RequestStream,
                                                             np.ndarray | None]:
        if args.trace:
            reqs = workloads.load_trace(args.trace, n)
            return reqs, np.array([r.counter for r in reqs if r.op == workloads.INCREMENT])
        count = args.requests if args.requests is not None else n
        constant = workloads.YCSB_ZIPFIAN_CONSTANT if args.zipf_constant is None else args.zipf_constant
        ids = workloads.counter_ids(args.workload, n, count, seed=args.seed, zipf_mode=args.zipf_mode or "bounded",
                                    zipf_constant=constant, rho=args.zipf_rho)
        # a stream, not a list: 10^6 request objects would be ~100 MB (replayed once per scheme)
        stream = workloads.RequestStream(ids, args.op, args.read_fraction, seed=args.seed)
        return stream, stream.ids  # its compact copy: the 8-byte IDs are not kept through the run


def _scheme_names(scheme: str) -> list[str]:
    return ["log", "hashtree"] if scheme == "both" else [scheme]


def _settle(args: argparse.Namespace) -> list[Profile]:
    """Check every parameter and fill in the defaults on ``args``; the profiles the run prices.

    The experiment's ``check`` (on the registry's copy of the arguments) and the start of its run are this
    one function, so a sweep's dry run refuses exactly what the run refuses: modes, ranges, the counter
    list, the profiles (they exist and have what each scheme needs) and a --trace's requests.
    """
    _check_modes(args)
    if args.requests is not None and args.requests < 1:
        raise TrustlabError(f"--requests {args.requests}: need at least one request")
    if args.requests is not None and args.requests > MAX_REQUESTS:
        raise TrustlabError(f"--requests {args.requests}: at most {MAX_REQUESTS}")
    if args.attest_every < 1:
        raise TrustlabError(f"--attest-every {args.attest_every}: must be >= 1")
    if isinstance(args.counters, str):
        args.counters = _int_list(args.counters)
    profiles = []
    for n in name_list(args.profile):
        p = load_profile("--profile", n)
        for scheme in _scheme_names(args.scheme):
            try:
                schemes.check_profile(scheme, p)
            except TrustlabError as exc:
                raise TrustlabError(f"--profile {n}: {exc}") from None
        profiles.append(p.without_spread() if args.deterministic else p)
    if args.trace:
        try:
            _check_trace(args.trace, args.counters)
        except TrustlabError as exc:
            raise TrustlabError(f"--trace: {exc}") from None
    return profiles


def _check_trace(path: Path, counters: list[int]) -> None:
    """The trace is read and every counter it names is checked against each --counters value, in the run's
    order (a trace naming counter 7 is refused for --counters 4 before any run, not after the first)."""
    requests = workloads.load_trace(path)
    largest = max((r.counter for r in requests), default=-1)
    for n in counters:
        if largest >= n:
            workloads.load_trace(path, n)  # its error names the line


def _check_modes(args: argparse.Namespace) -> None:
    """Refuse an option that would have no effect in the chosen mode, naming the option it needs.

    Why: ``--zipf-constant nan`` under the default round-robin workload used to run and exit 0,
    the option silently ignored; a user who typed it meant something that did not happen."""
    given = lambda name: getattr(args, name) is not None  # noqa: E731
    if args.trace:
        for name, flag in (("requests", "--requests"), ("read_fraction", "--read-fraction"),
                           ("zipf_mode", "--zipf-mode"), ("zipf_constant", "--zipf-constant"),
                           ("zipf_rho", "--zipf-rho")):
            if given(name):
                raise TrustlabError(f"{flag}: has no effect with --trace (the trace gives the requests); "
                                    "drop one of them")
        if args.workload is not None:
            raise TrustlabError(f"--workload {args.workload}: has no effect with --trace (the trace gives the "
                                "requests); drop one of them")
    _check_tpm_modes(args)
    if args.trace:
        args.workload = "trace"
        _resolve_defaults(args)
        return
    args.workload = args.workload or "roundrobin"
    for name, flag in (("zipf_mode", "--zipf-mode"), ("zipf_constant", "--zipf-constant"), ("zipf_rho", "--zipf-rho")):
        if given(name) and args.workload != "zipf":
            raise TrustlabError(f"{flag}: applies only with --workload zipf (the workload is {args.workload})")
    if given("zipf_rho"):
        if (args.zipf_mode or "bounded") != "bounded":
            raise TrustlabError(f"--zipf-rho: applies only with --zipf-mode bounded (not {args.zipf_mode}); "
                                "use --zipf-constant")
        if given("zipf_constant"):
            raise TrustlabError("--zipf-rho and --zipf-constant both set the exponent; give one of them")
    if given("zipf_constant") and args.zipf_mode in ("ycsb", "scrambled") and not args.zipf_constant < 1:
        raise TrustlabError(f"--zipf-constant {args.zipf_constant:g}: --zipf-mode {args.zipf_mode} needs a "
                            "constant in (0, 1)")
    if args.op is not None and args.read_fraction is not None:
        raise TrustlabError(f"--op {args.op}: has no effect with --read-fraction (a mixed stream times both READs "
                            "and INCREMENTs); drop one of them")
    _resolve_defaults(args)


def _check_tpm_modes(args: argparse.Namespace) -> None:
    """--tpm12 and --attest-every apply to some schemes only; given with another, they are errors
    (their defaults are None so that an explicit ``--tpm12 inproc`` is told apart from none)."""
    if args.attest_every is not None and args.scheme in ("log", "log-tpm2"):
        raise TrustlabError(f"--attest-every {args.attest_every}: applies to the hash-tree scheme only, "
                            f"not --scheme {args.scheme} (use --scheme hashtree or both)")
    if args.tpm12 is not None and args.scheme == "log-tpm2":
        raise TrustlabError(f"--tpm12 {args.tpm12}: applies to the TPM 1.2 schemes (log, hashtree, both), not "
                            "--scheme log-tpm2, which runs on a TPM 2.0")
    if args.tpm12 == "libtpms" and args.scheme != "log":
        raise TrustlabError(f"--tpm12 libtpms: applies to --scheme log only (libtpms has no TPM_ExecuteHashTree), "
                            f"not --scheme {args.scheme}")


def _resolve_defaults(args: argparse.Namespace) -> None:
    """The defaults of the options whose "not given" had to be told apart from their default value."""
    args.op = args.op or "increment"
    args.attest_every = 1 if args.attest_every is None else args.attest_every
    args.tpm12 = args.tpm12 or "inproc"


_GAP_EDGES = [0, 3, 10, 30, 100, 300, 700, 10 ** 9]


def _bucket(gap: int) -> str:
    for lo, hi in zip(_GAP_EDGES, _GAP_EDGES[1:]):
        if lo <= gap < hi:
            return f"{lo}-{hi - 1}" if hi < 10 ** 9 else f">={lo}"
    return "?"


def _table_ix(per_gap: dict[tuple[str, str, int], Sequence[OpRecord]]) -> list[dict]:
    """Per increment-gap bucket: per-op statistics for each scheme (paper Table IX).

    Streams the records (a 10^6-request run keeps them on disk): per bucket only
    the times and model values, in request order, so the sums are as over lists.
    """
    out = []
    for (scheme, profile, counters), records in per_gap.items():
        buckets: dict[str, tuple[array, array, list]] = {}  # label -> ms, model ms, [max gap, any model None]
        for r in records:
            label = _bucket(r.ut)
            b = buckets.get(label)
            if b is None:
                b = buckets[label] = (array("d"), array("d"), [r.ut, False])
            b[0].append(r.ms)
            if r.model_ms is None:
                b[2][1] = True
            else:
                b[1].append(r.model_ms)
            b[2][0] = max(b[2][0], r.ut)
        for lo, hi in zip(_GAP_EDGES, _GAP_EDGES[1:]):
            label = _bucket(lo)
            if label not in buckets:
                continue
            ms, model, (max_gap, model_missing) = buckets[label]
            out.append({"scheme": scheme, "profile": profile, "counters": counters, "gap": label, "requests": len(ms),
                        "max_gap": max_gap, "per_op_s": describe(ms),
                        "model_avg_s": None if model_missing else sum(model) / len(ms) / 1000.0})
    return out


def _err(sim: float, model: float | None) -> float:
    """Relative difference; the paper prints <= 0.005 % as 0."""
    if not model:
        return 0.0
    e = (sim - model) / model
    return 0.0 if abs(e) <= 5e-5 else e


def _text(rows: list[dict], table_ix: list[dict] | None, args: argparse.Namespace) -> str:
    parts = []
    for (scheme, op), title in TABLES.items():
        chosen = [r for r in rows if r["scheme"] == scheme and r["op"] == op]
        if not chosen:
            continue
        profiles = list(dict.fromkeys(r["profile"] for r in chosen))
        headers = ["Counters"]
        for p in profiles:
            headers += [f"{p} model (s)", "paper formula (s)", "sim (s)", "error"]
        body = []
        for n in dict.fromkeys(r["counters"] for r in chosen):
            line: list = [n]
            for p in profiles:
                r = next(x for x in chosen if x["counters"] == n and x["profile"] == p)
                err = "-" if r["model_s"] is None else f"{100 * _err(r['total_s'], r['model_s']):.3f}%"
                line += [r["model_s"], r.get("paper_formula_s"), r["total_s"], err]
            body.append(line)
        parts.append(f"{title} ({args.workload}, total seconds)\n" + table(body, headers))
    if parts:
        parts.append("model: the paper's formula with the TPM's real hash-block and signature-check counts "
                     "(equals sim. without spread); paper formula: as printed (one Tth, |Ut| checks)")
    if table_ix:
        body = [[r["scheme"], r["profile"], r["counters"], r["gap"], r["requests"], r["per_op_s"]["max"], r["per_op_s"]["min"],
                 r["per_op_s"]["avg"], r["per_op_s"]["median"], r["per_op_s"]["sd"], r["model_avg_s"]]
                for r in table_ix]
        parts.append("Table IX layout: per-operation time (s) by increment gap\n" + table(
            body, ["Scheme", "Profile", "Counters", "Gap", "Ops", "Max", "Min", "Avg", "Median", "SD", "Model avg"]))
    return "\n\n".join(parts)


def _references(rows: list[dict]) -> list[Reference]:
    refs = []
    for r in rows:
        paper = _PAPER_LOG_READ_ATMEL.get(r["counters"])
        if (r["scheme"], r["op"], r["profile"]) == ("log", "read", "atmel-counters-2010") and paper is not None:
            refs.append(Reference(label=f"log-based READ, {r['counters']} counters, Atmel", reference=paper,
                                  model=r["model_s"], simulated=r["total_s"], unit="s",
                                  source=f"{PAPER}; ours: profile atmel-counters-2010, |Ut| of our stream"))
    return refs


def _plots(rows: list[dict], table_ix: list[dict] | None) -> list[dict]:
    plots = []
    for op in ("increment", "read"):
        series = []
        for scheme in ("log", "hashtree"):
            for p in dict.fromkeys(r["profile"] for r in rows):
                chosen = [r for r in rows if r["scheme"] == scheme and r["op"] == op and r["profile"] == p]
                if len(chosen) > 1:
                    series.append({"label": f"{scheme} {p}", "x": [r["counters"] for r in chosen],
                                   "y": [r["total_s"] for r in chosen]})
        if series:
            plots.append({"kind": "loglog", "title": f"{op}: log-based vs hash-tree (paper Fig. 2)",
                          "xlabel": "virtual counters", "ylabel": "total time (s)", "logx": True, "logy": True,
                          "series": series})
    if table_ix:
        series = []
        for scheme in ("log", "hashtree"):
            chosen = [r for r in table_ix if r["scheme"] == scheme]
            if chosen:
                series.append({"label": scheme, "x": [r["max_gap"] for r in chosen],
                               "y": [r["per_op_s"]["avg"] for r in chosen]})
        plots.append({"kind": "line", "title": "time per request by increment gap (paper Fig. 3)",
                      "xlabel": "increment gap (largest in bucket)", "ylabel": "avg time (s)",
                      "logx": False, "logy": True, "series": series})
    return plots

"""``trustlab run workloads``: the shipped workloads on every TPM 2.0 chip, classical and post-quantum.

Four workloads recorded once through ``serve --trace`` with real clients
(``examples/workloads/``: tpm2-tools remote attestation, a PCR-sealed disk
key, a TLS-style key signing 100 handshakes through tpm2-pytss, a measured
boot of 30 PCR extends and a quote) are replayed on every TPM 2.0 profile
(:mod:`trustlab.replay`): the TPM time per chip (median, p95 of the profiles'
spreads), and beside it the same workload with ML-DSA signing keys and ML-KEM
decryption keys (TCG Library 1.85) priced by the post-quantum cost model with
its 5-95% interval - the same per-operation prices as ``trustlab run pqc-tpm``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from trustlab.errors import TrustlabError
from trustlab.experiments._params import name_list, seed
from trustlab.experiments.registry import Reference, Result, experiment
from trustlab.textable import table

WORKLOAD_DIR = Path(__file__).resolve().parents[1] / "data" / "workloads"
WORKLOADS = ("attestation", "seal-unseal", "tls-key", "measured-boot")
LABELS = {"attestation": "attestation (tpm2-tools: EK, AK, quote)", "seal-unseal": "disk unlock (seal to PCRs, unseal)",
          "tls-key": "TLS key (create + 100 ECDSA signs)", "measured-boot": "measured boot (30 extends + quote)"}
CHROME_SIGN = Reference(
    "ECDSA P-256 TPM signature latency, median over Chrome's fleet (chips unnamed; independent, not chip-matched)",
    200.0, unit="ms", source="Chrome's study of TPM ECDSA P-256 signatures as cited by S. Kristiansen, 'TPM "
    "performance' (stiankri.substack.com/p/tpm-performance): 200 ms at the 50th, 600 ms at the 95th percentile")


def _short(name: str) -> str:
    return name.replace("-jcalgtest", "").replace("-wolftpm", "")


def select(args: argparse.Namespace) -> tuple[list[str], list[str], Any]:
    """The profile names, the workloads and the post-quantum choice a run prices, every parameter checked.

    The experiment's ``check`` (a sweep's dry run) and the start of its run are this one function: --draws,
    --profiles (each exists and is TPM 2.0), --workloads (each shipped; an empty list or item is an error,
    not a run over nothing) and --pqc.
    """
    from trustlab.replay import pqc
    from trustlab.replay import run as replaying

    if not 10 <= args.draws <= 20000:
        raise TrustlabError(f"--draws must be between 10 and 20000, got {args.draws}")
    names = replaying.select_profiles(args.profiles)
    workloads = name_list(args.workloads, "--workloads")
    for w in workloads:
        if w not in WORKLOADS:
            raise TrustlabError(f"--workloads: {w!r} is not one of {', '.join(WORKLOADS)}")
    return names, workloads, pqc.parse_choice(args.pqc)


@experiment("workloads", help="the shipped workloads (attestation, disk unlock, TLS key, measured boot) replayed on "
            "every TPM 2.0 profile: TPM time per chip, and with ML-DSA / ML-KEM keys (interval)")
class WorkloadsExperiment:
    flagship = [["--draws", "50"]]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--profiles", default="all", metavar="all|NAME[,NAME...]",
                            help="TPM 2.0 profiles (default all)")
        parser.add_argument("--workloads", default=",".join(WORKLOADS), metavar="NAME[,NAME...]",
                            help=f"of {', '.join(WORKLOADS)} (default all)")
        parser.add_argument("--pqc", default="sign=ML-DSA-65,kem=ML-KEM-768", metavar="sign=ALG,kem=ALG",
                            help="the post-quantum column's algorithms (default sign=ML-DSA-65,kem=ML-KEM-768)")
        parser.add_argument("--draws", type=int, default=200, help="draws of the profiles' spreads (10..20000)")
        parser.add_argument("--seed", type=seed, default=0, help="seed of the draws (default 0)")

    def check(self, args: argparse.Namespace) -> None:
        """Everything the run refuses before it replays a trace (the registry runs this before a run and on
        every sweep point)."""
        select(args)

    def run(self, args: argparse.Namespace) -> Result:
        from trustlab.replay import load
        from trustlab.replay import run as replaying

        names, workloads, choice = select(args)
        results = {}
        for w in workloads:
            trace = load.read(WORKLOAD_DIR / f"{w}.jsonl")
            results[w] = replaying.replay(trace, names, draws=args.draws, seed=args.seed, choice=choice, top=3)
        rows = []
        for w, res in results.items():
            for r in res["profiles"]:
                q = r["pqc"]
                rows.append({"workload": w, "profile": r["profile"], "commands": res["commands"],
                             "tpm_median_ms": r["tpm_median_ms"], "tpm_p95_ms": r["tpm_p95_ms"],
                             "tpm_mean_ms": r["tpm_mean_ms"], "wall_ms": r["wall_ms"], "bus_share": r["bus_share"],
                             "not_fully_priced": len(r["cannot_price"]),
                             "pqc_median_ms": q["median_ms"], "pqc_low_ms": q["low_ms"], "pqc_high_ms": q["high_ms"],
                             "pqc_bus_share": q["bus_share"], "pqc_not_fitting": q["not_fitting"],
                             "top": r["top"], "cannot_price": r["cannot_price"], "pqc_rewritten": q["rewritten"]})
        text = self._text(rows, workloads, names, choice.label(), args.draws)
        refs = self._references(results)
        plots = [self._plot(rows, w, names, choice.label()) for w in workloads]
        from trustlab.timing import registry

        return Result(experiment="workloads",
                      params={"profiles": names, "workloads": workloads, "pqc": args.pqc, "draws": args.draws,
                              "seed": args.seed},
                      data={"rows": rows, "client_ms": {w: r["client_ms"] for w, r in results.items()},
                            "commands": {w: r["commands"] for w, r in results.items()}},
                      text=text, references=refs, plots=plots,
                      profiles={n: registry.load(n).provenance.describe() for n in names})

    @staticmethod
    def _text(rows, workloads, names, label, draws) -> str:
        out = [f"Workloads x chips: TPM time of each shipped workload (median ms over {draws} draws of the profiles' "
               f"spreads) and with post-quantum keys ({label}: central estimate [5-95% interval] of the PQC cost "
               "model); '*' = some commands not fully priced (lower bound), '!' = a post-quantum frame exceeds the "
               "chip's TPM_PT_MAX_COMMAND_SIZE.", ""]
        cell = {(r["workload"], r["profile"]): r for r in rows}
        head = ["profile"] + [f"{w} {kind}" for w in workloads for kind in ("classical", "PQC")]
        body = []
        for n in names:
            line: list = [_short(n)]
            for w in workloads:
                r = cell[(w, n)]
                line.append(f"{r['tpm_median_ms']:.1f}" + ("*" if r["not_fully_priced"] else ""))
                line.append(f"{r['pqc_median_ms']:.1f} [{r['pqc_low_ms']:.0f}-{r['pqc_high_ms']:.0f}]"
                            + ("*" if r["not_fully_priced"] else "") + ("!" if r["pqc_not_fitting"] else ""))
            body.append(line)
        out += [table(body, head), ""]
        out += ["Workloads: " + "; ".join(f"{w} = {LABELS[w]}" for w in workloads), ""]
        return "\n".join(out)

    @staticmethod
    def _references(results) -> list[Reference]:
        """Independent whole-operation figures: none published for a named chip; the fleet sign latency."""
        res = results.get("tls-key")
        if res is None:
            return []
        import statistics

        per_sign = [next((t["ms"] / t["count"] for t in r["top"] if t["command"] == "TPM2_Sign"), None)
                    for r in res["profiles"]]
        per_sign = [x for x in per_sign if x]
        if not per_sign:
            return []
        return [Reference(CHROME_SIGN.label, CHROME_SIGN.reference, model=statistics.median(per_sign),
                          unit="ms", source=CHROME_SIGN.source + "; model = median over the replayed profiles of "
                          "TPM2_Sign in the tls-key workload")]

    @staticmethod
    def _plot(rows, workload, names, label) -> dict:
        x = [_short(n) for n in names]
        by = {r["profile"]: r for r in rows if r["workload"] == workload}
        return {"kind": "bar", "title": f"{LABELS[workload]}: TPM time per chip, classical vs {label}",
                "xlabel": "TPM 2.0 profile", "ylabel": "ms (log)", "logx": False, "logy": True,
                "series": [{"label": "classical (median)", "x": x, "y": [max(by[n]["tpm_median_ms"], 1e-3) for n in names]},
                           {"label": f"post-quantum ({label})", "x": x, "y": [max(by[n]["pqc_median_ms"], 1e-3)
                                                                             for n in names]}]}

"""``trustlab run ftpm-vs-dtpm``: the paper's command set on firmware and discrete TPMs.

The fTPM paper (USENIX Security 2016, Sec. 10) compares create RSA-2048 key,
seal/unseal, sign/verify, encrypt/decrypt and load on four fTPMs and three
discrete TPM 2.0 chips; its per-device figures are graphs without published
numbers, so no paper figure is reproduced here. What we compute instead:

* **compute time** of each command per device, from the shipped TPM 2.0
  profiles (JCAlgTest: Intel PTT = a firmware TPM, Nuvoton, ST; wolfTPM:
  eleven chips and the OP-TEE fTPM on a Jetson Orin) through the ``tpm2``
  cost formulas;
* **storage cost** a firmware TPM adds, *measured*: the commands run on swtpm
  (the TCG reference code), the NV image it persists after each command is
  saved through the fTPM's RPMB atomic store, and the frames written
  (changed blocks + the bit-vector commit) are charged under an eMMC RPMB
  profile. A discrete TPM has on-chip NV and pays nothing extra.

Firmware vs discrete is read off the profile name (``ptt``/``ftpm`` = firmware;
the IBM software TPM is left out unless named).
"""

from __future__ import annotations

import argparse
import statistics

from trustlab.textable import table
from trustlab.devices.ftpm import DEFAULT_STORAGE_PROFILE
from trustlab.devices.ftpm.storage_cost import EXTRA_COMMANDS, PAPER_COMMANDS, measure
from trustlab.errors import TrustlabError
from trustlab.experiments.registry import Result, experiment
from trustlab.devices.ftpm.platform import STORAGE_COMPONENTS
from trustlab.experiments._params import count, load_profile, name_list, seed
from trustlab.timing import formulas, registry
from trustlab.timing.profile import Profile

DEFAULT_PROFILES = (
    "intel-ptt-302.12.0.0-jcalgtest", "intel-ptt-11.6.0.1126-jcalgtest", "nvidia-jetson-orin-op-tee-ftpm-wolftpm",
    "infineon-slb9670-wolftpm", "nuvoton-npct750-wolftpm", "st-st33ktpm2xspi-wolftpm",
    "nuvoton-npct75x-7.2.0.1-jcalgtest", "stm-st33-73.4.17568.4452-jcalgtest",
)


def kind_of(name: str) -> str:
    tokens = set(name.lower().split("-"))
    if "swtpm" in tokens:
        return "software"
    return "fTPM" if tokens & {"ptt", "ftpm"} else "dTPM"  # not "wolftpm": that is the data source


def _compute_ms(profile, command: str, variant: str) -> float | None:
    try:
        ms, _ = formulas.estimate(profile, command, variant or None)
    except TrustlabError:
        return None
    return ms


def select(args: argparse.Namespace) -> tuple[list[Profile], list[tuple[Profile, dict[str, float | None]]], Profile]:
    """The profiles, those that can time a command with their computed times, and the storage profile.

    The experiment's ``check`` (a sweep's dry run) and the start of its run are this one function: --reps,
    each profile (it exists, is TPM 2.0, can time a paper command) and the storage profile - all before
    swtpm starts.
    """
    if args.reps < 1:
        raise TrustlabError(f"--reps must be at least 1, got {args.reps}")
    if args.profiles is None:
        known = set(registry.names("tpm2"))
        names = [n for n in DEFAULT_PROFILES if n in known] or sorted(known)
    elif args.profiles == "all":
        names = registry.names("tpm2")
    else:
        names = name_list(args.profiles, "--profiles")  # an empty list or item is refused, naming the flag
    profiles = [load_profile("--profiles", n) for n in names]
    for p in profiles:
        if p.family != "tpm2":
            raise TrustlabError(f"--profiles: {p.name!r} is a {p.family!r} profile, not tpm2")
    if args.profiles in (None, "all"):
        profiles = [p for p in profiles if kind_of(p.name) != "software"]
    storage = load_profile("--storage-profile", args.storage_profile, *STORAGE_COMPONENTS)
    computed = []
    for p in profiles:
        compute = {label: _compute_ms(p, cmd, var) for label, cmd, var in PAPER_COMMANDS + EXTRA_COMMANDS}
        if any(v is not None for v in compute.values()):  # else no usable components (e.g. keygen-only imports)
            computed.append((p, compute))
    if not computed:
        raise TrustlabError("none of the chosen profiles can time the paper's commands")
    return profiles, computed, storage


@experiment("ftpm-vs-dtpm", help="the fTPM paper's command set (create RSA-2048, seal/unseal, sign/verify, "
            "encrypt/decrypt, load) on firmware vs discrete TPM 2.0 profiles, plus measured RPMB storage cost")
class FtpmVsDtpmExperiment:
    flagship = [["--reps", "2"]]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--profiles", default=None, metavar="NAME[,NAME...]|all",
                            help="TPM 2.0 profiles to compare ('all' = every tpm2 profile; default: three "
                            "firmware and five discrete TPMs, those of them that are installed)")
        parser.add_argument("--storage-profile", default=DEFAULT_STORAGE_PROFILE,
                            help=f"eMMC RPMB cost profile for the fTPM's storage (default {DEFAULT_STORAGE_PROFILE})")
        parser.add_argument("--reps", type=count(1, 100_000, "--reps"), default=3, help="repetitions per command on swtpm (default 3)")
        parser.add_argument("--seed", type=seed, default=0)

    def check(self, args: argparse.Namespace) -> None:
        """Everything the run refuses before it starts swtpm (the registry runs this before a run and on every
        sweep point)."""
        select(args)

    def run(self, args: argparse.Namespace) -> Result:
        profiles, computed, storage = select(args)
        costs = {c.label: c for c in measure(storage, reps=args.reps, seed=args.seed)}
        commands = PAPER_COMMANDS + EXTRA_COMMANDS
        devices = []
        for p, compute in computed:
            kind = kind_of(p.name)
            total = {label: (None if v is None else v + (costs[label].storage_ms if kind == "fTPM" else 0.0))
                     for label, v in compute.items()}
            devices.append({"profile": p.name, "kind": kind, "compute_ms": compute, "total_ms": total})
        summary = []
        for label, cmd, var in commands:
            row = {"label": label, "command": cmd, "variant": var,
                   "rpmb_frames": costs[label].rpmb_frames, "nv_bytes_changed": costs[label].nv_bytes_changed,
                   "storage_ms": costs[label].storage_ms}
            for kind in ("fTPM", "dTPM"):
                vals = [d["total_ms"][label] for d in devices if d["kind"] == kind and d["total_ms"][label] is not None]
                row[f"{kind}_median_ms"] = statistics.median(vals) if vals else None
            summary.append(row)
        data = {"storage_profile": storage.name, "reps": args.reps, "commands": summary, "devices": devices}
        short = {d["profile"]: d["profile"].replace("-jcalgtest", "").replace("-wolftpm", "") for d in devices}
        headers = ["command", "RPMB frames", "storage ms"] + [f"{short[d['profile']]} ({d['kind']})" for d in devices]
        rows = [[s["label"], s["rpmb_frames"], s["storage_ms"]] + [d["total_ms"][s["label"]] for d in devices]
                for s in summary]
        text = (f"Command latency in ms (fTPM = compute + RPMB storage on {storage.name}; dTPM = compute; "
                f"'-' = profile lacks a component). RPMB frames measured on swtpm (TCG reference code), "
                f"mean of {args.reps} runs after warm-up.\n" + table(rows, headers) + "\n\n" +
                table([[s["label"], s["fTPM_median_ms"], s["dTPM_median_ms"]] for s in summary],
                      ["command", "fTPM median ms", "dTPM median ms"]))
        plots = [{"kind": "bar", "title": "fTPM vs discrete TPM: paper command set", "xlabel": "command",
                  "ylabel": "ms (log)", "logx": False, "logy": True,
                  "series": [{"label": f"{short[d['profile']]} ({d['kind']})",
                              "x": [label for label, _, _ in PAPER_COMMANDS],
                              "y": [d["total_ms"][label] for label, _, _ in PAPER_COMMANDS]} for d in devices
                             if all(d["total_ms"][label] is not None for label, _, _ in PAPER_COMMANDS)]},
                 {"kind": "bar", "title": "RPMB frames written per command (fTPM)", "xlabel": "command",
                  "ylabel": "frames", "logx": False, "logy": False,
                  "series": [{"label": storage.name, "x": [s["label"] for s in summary],
                              "y": [s["rpmb_frames"] for s in summary]}]}]
        provs = {p.name: p.provenance.describe() for p in profiles}
        provs[storage.name] = storage.provenance.describe()
        return Result(experiment="ftpm-vs-dtpm",
                      params={"profiles": [d["profile"] for d in devices], "storage_profile": storage.name,
                              "reps": args.reps, "seed": args.seed},
                      data=data, text=text, references=[], profiles=provs, plots=plots)

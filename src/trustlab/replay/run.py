"""One replay: a trace priced on a list of profiles (and with ``--pqc``, rewritten first)."""

from __future__ import annotations

from typing import Any

import numpy as np

from trustlab.errors import TrustlabError
from trustlab.replay import price as pricing
from trustlab.replay import schedule
from trustlab.replay.load import Trace
from trustlab.replay.pqc import Choice

P95 = 0.95


def is_path(spec: str) -> bool:
    """A ``--profiles`` entry naming a profile file rather than a shipped or user profile (as ``registry.load``)."""
    import os

    return spec.endswith((".toml", ".pro")) or os.sep in spec


def select_profiles(spec: str) -> list[str]:
    """``all`` (every TPM 2.0 profile), a family name, or NAME,NAME,... where each is a tpm2 profile's name
    or a ``.toml`` file (read through the bounded readers of :mod:`trustlab.limits`, like ``--profile``)."""
    from trustlab.timing import registry

    spec = spec.strip()
    if spec in ("all", "tpm2"):
        return registry.names("tpm2")
    if spec in registry.families():
        raise TrustlabError(f"--profiles {spec}: replay prices TPM 2.0 traces; family {spec!r} is not tpm2")
    names = list(dict.fromkeys(n.strip() for n in spec.split(",") if n.strip()))
    if not names:
        raise TrustlabError("--profiles: no profile named")
    for n in names:
        if not is_path(n) and n not in registry.available():
            raise TrustlabError(f"--profiles: unknown profile {n!r} (see `trustlab profiles list --family tpm2`, "
                                "or give a .toml path)")
        fam = registry.load(n).family
        if fam != "tpm2":
            raise TrustlabError(f"--profiles: {n!r} is a {fam} profile; replay prices TPM 2.0 traces")
    return names


def replay(trace: Trace, profile_names: list[str], *, draws: int = 200, seed: int = 0,
           choice: Choice | None = None, top: int = 5) -> dict[str, Any]:
    """Per profile: total median/p95 (draws of the spreads), mean, wall time with the clients' own time,
    bus share, top commands, what it cannot price; with ``choice`` the post-quantum rewrite beside it."""
    from trustlab.replay import pqc
    from trustlab.timing import registry

    commands = trace.commands
    matrix = pricing.TermMatrix.build(commands)
    pred, gap = schedule.gaps(commands)
    rewrites: dict[int, pqc.Rewrite] = {}
    own = None
    if choice is not None:
        memo: dict[tuple, pqc.Rewrite | None] = {}  # a workload repeats few distinct commands
        for i, c in enumerate(commands):
            sig = (c.command, c.variant, c.in_bytes, c.out_bytes, c.rc,
                   None if c.key is None else tuple(c.key.values()))
            r = memo[sig] if sig in memo else memo.setdefault(sig, pqc.rewrite(c, choice))
            if r is not None:
                rewrites[i] = r
        # the replaced commands' own classical price (their resource-manager commands stay)
        own = pricing.TermMatrix.build([commands[i] for i in rewrites], with_rm=False)
        plan = _Plan(commands, rewrites)
    bus_bytes = sum(c.in_bytes + c.out_bytes + sum(r[1] + r[2] for r in c.rm) for c in commands)
    names = np.array([c.command for c in commands], dtype=object)
    kinds, kind_of = np.unique(names, return_inverse=True)
    rows = []
    for name in profile_names:
        profile = registry.load(name)
        p = pricing.price(matrix, profile, draws=draws, seed=seed)
        mean = p.mean_ms
        p.bus_ms = bus_bytes * _bus_ms_per_byte(name)
        by_kind = np.bincount(kind_of, weights=p.per_command_ms, minlength=len(kinds))
        count = np.bincount(kind_of, minlength=len(kinds))
        order = np.argsort(-by_kind)[:top]
        max_command = _max_command_size(profile)
        row: dict[str, Any] = {
            "profile": name,
            "tpm_median_ms": float(np.median(p.total_draws)),
            "tpm_p95_ms": float(np.quantile(p.total_draws, P95)),
            "tpm_mean_ms": mean,
            "tpm_seed_draw_ms": float(p.total_draws[0]),
            "wall_ms": schedule.wall_ms(pred, gap, p.per_command_ms),
            "wall_seed_draw_ms": schedule.wall_ms(pred, gap, p.per_command_ms if p.seed_draw_ms is None
                                                  else p.seed_draw_ms),
            "bus_ms": p.bus_ms,
            "bus_share": _share(p.bus_ms, mean),
            "bus_exceeds_priced": p.bus_ms > mean,
            "top": [{"command": str(kinds[k]), "count": int(count[k]), "ms": float(by_kind[k]),
                     "share": float(by_kind[k] / mean) if mean > 0 else None} for k in order if by_kind[k] > 0],
            "cannot_price": p.notes,
            "max_command_size": max_command,
            "does_not_fit": _does_not_fit(commands, max_command),
        }
        if choice is not None:
            row["pqc"] = _pqc_row(name, profile, plan, own, p, gap, pred)
            row["pqc"]["not_fitting"] = sorted(set(row["pqc"]["not_fitting"])
                                               | {u["command"] for u in row["does_not_fit"]})
        rows.append(row)
    return {"trace": trace.path, "commands": len(commands), "clients": trace.clients,
            "client_ms": schedule.wall_ms(pred, gap, np.zeros(len(commands))), "draws": draws, "seed": seed,
            "pqc": None if choice is None else {"sign": choice.sign, "kem": choice.kem}, "profiles": rows}


class _Plan:
    """The rewrite, profile-independent: which commands, their distinct rewrites, their groups for the table."""

    def __init__(self, commands, rewrites) -> None:
        self.idx = np.array(list(rewrites), dtype=np.int64)
        self.kinds = list(dict.fromkeys(rewrites.values()))
        kind_of = {r: k for k, r in enumerate(self.kinds)}
        self.which = np.array([kind_of[rewrites[i]] for i in self.idx.tolist()], dtype=np.int64)
        self.bytes = np.array([commands[i].in_bytes + commands[i].out_bytes for i in self.idx.tolist()], dtype=float)
        groups: dict[tuple, list] = {}
        for i, k in zip(self.idx.tolist(), self.which.tolist()):
            key = (commands[i].command, commands[i].variant, k)
            groups.setdefault(key, [0])[0] += 1
        self.groups = [(cmd, var, k, n[0]) for (cmd, var, k), n in groups.items()]


def _pqc_row(name, profile, plan: "_Plan", own, p, gap, pred) -> dict[str, Any]:
    """The rewritten workload on one chip: replaced commands' own classical cost out, their PQC price in."""
    from trustlab.replay import pqc

    own_ms = pricing.price(own, profile, draws=1).per_command_ms if len(plan.idx) else np.zeros(0)
    priced = [pqc.price(r, name) for r in plan.kinds]
    col = {f: np.array([getattr(x, f) for x in priced]) for f in ("median_ms", "low_ms", "high_ms", "bus_ms")}
    per_byte = _bus_ms_per_byte(name)
    per_command = p.per_command_ms.copy()
    med = lo = hi = bus = 0.0
    if len(plan.idx):
        per_command[plan.idx] += col["median_ms"][plan.which] - own_ms
        med = float((col["median_ms"][plan.which] - own_ms).sum())
        lo = float((col["low_ms"][plan.which] - own_ms).sum())
        hi = float((col["high_ms"][plan.which] - own_ms).sum())
        bus = float((col["bus_ms"][plan.which] - plan.bytes * per_byte).sum())
    groups = []
    for cmd, var, k, n in plan.groups:
        r, pr = plan.kinds[k], priced[k]
        groups.append({"command": cmd, "variant": var, "becomes": pr.plan, "algorithm": r.algorithm,
                       "operation": r.operation, "count": n, "median_ms": pr.median_ms, "low_ms": pr.low_ms,
                       "high_ms": pr.high_ms, "in_bytes": r.in_bytes, "out_bytes": r.out_bytes, "fits": pr.fits,
                       "provenance": pr.provenance})
    classical = float(np.median(p.total_draws))
    total = classical + med
    return {"median_ms": total, "low_ms": classical + lo, "high_ms": classical + hi,
            "classical_median_ms": classical, "wall_ms": schedule.wall_ms(pred, gap, per_command),
            "bus_ms": p.bus_ms + bus,
            "bus_share": _share(p.bus_ms + bus, total),
            "max_command_size": pqc.max_command_size(name),
            "rewritten": groups,
            "not_fitting": sorted({g["becomes"] for g in groups if not g["fits"]})}


def _max_command_size(profile) -> int:
    """The chip's TPM_PT_MAX_COMMAND_SIZE (= MAX_RESPONSE_SIZE), the bound serve enforces for the profile
    (:func:`trustlab.serving.tpm2.limits.for_profile`)."""
    from trustlab.serving.tpm2 import limits

    return limits.for_profile(profile.name).command


def _does_not_fit(commands, limit: int) -> list[dict[str, Any]]:
    """The recorded commands whose command or response frame exceeds the chip's buffer: on that chip they
    are answered TPM_RC_COMMAND_SIZE / TPM_RC_SIZE instead of running (their price is then not what the
    workload would cost: it cannot run there as recorded)."""
    out: dict[tuple, dict[str, Any]] = {}
    for c in commands:
        # the command's own frames, and those of the resource manager's commands it caused (a context blob)
        for name, variant, n_in, n_out in ((c.command, c.variant, c.in_bytes, c.out_bytes),
                                           *((r[0], None, r[1], r[2]) for r in c.rm)):
            for frame, n in (("command", n_in), ("response", n_out)):
                if n > limit:
                    u = out.setdefault((name, variant, frame), {"command": name, "variant": variant, "frame": frame,
                                                                "count": 0, "bytes": 0, "limit": limit})
                    u["count"] += 1
                    u["bytes"] = max(u["bytes"], n)
    return list(out.values())


def _share(bus_ms: float, total_ms: float) -> float | None:
    """The bus's part of the priced time, at most 1.

    Why capped: a profile whose per-command overhead has no per-byte part (the wolfTPM profiles: ohir = ohor
    = 0) charges a large frame no more than a small one, while the bus time of its bytes (chips.toml) can
    exceed the whole price (an I2C chip moving ContextSave blobs); a share above 100% would be read as
    nonsense. The uncapped bus time is ``bus_ms``, and ``bus_exceeds_priced`` says the total is then low."""
    return min(1.0, bus_ms / total_ms) if total_ms > 0 else None


def _bus_ms_per_byte(profile_name: str) -> float:
    """The chip's bus time per byte (chips.toml: bus, clock, framing factor; the PQC model's own figure):
    the part of each command's modelled time spent moving its frames, whatever the profile's formula."""
    from trustlab.replay import pqc

    return pqc.bus_ms_per_byte(profile_name)

"""Pricing a trace's commands on one profile with the rules ``serve`` charges them by.

Each command becomes the terms of :func:`trustlab.timing.formula_sets.tpm2.command_terms`
(overhead + bytes + the primitive its key and size imply), plus the terms of the
resource manager's own commands it carried. The trace is one matrix (commands x
components), so a profile is priced by one product with its component means;
spreads (key generation) are drawn per charge exactly as :class:`~trustlab.timing.clock.Clock`
draws them: draw 0 with ``seed`` repeats, charge for charge, what ``serve --seed`` drew
for the same command stream; the other draws are independent (numpy).
Terms whose component the profile lacks are dropped, as ``serve`` drops them, and
reported (the ``estimate`` notes: "overhead only", "profile lacks X: not charged").
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from trustlab.replay import served_pqc
from trustlab.replay.load import Command
from trustlab.timing.formula_sets import tpm2 as rules
from trustlab.timing.profile import Profile

BUS_COMPONENTS = ("ohir", "ohor")
DRAW_CHUNK = 4_000_000
"""Random numbers drawn at once (a chunk of draws x charges) for a spread component."""


def own_terms(c: Command) -> dict[str, float]:
    """The command's own formula (a resource-manager pseudo-command ``RM_...`` has none; a command serve's
    post-quantum extension priced has the wire terms it charged beside the PQC model, :mod:`.served_pqc`)."""
    if c.command.startswith("RM_"):
        return {}
    op = served_pqc.operation(c)
    if op is not None:
        return served_pqc.own_terms(c, op)
    name = served_pqc.CLASSICAL_AS.get(c.command, c.command) if c.ok else c.command
    return rules.command_terms(name, c.variant, c.in_bytes, c.out_bytes, c.hashed_bytes, ok=c.ok)


def _modelled(name: str) -> bool:
    """Has a price of its own: a formula, or it is a 1.85 command serve prices (PQC model, or as the 1.83
    command doing the work on an RSA/ECC key)."""
    return name.startswith("RM_") or rules.is_modelled(name) or name in served_pqc.NEW_IN_185


def rm_terms(c: Command) -> dict[str, float]:
    terms: dict[str, float] = {}
    for name, n_in, n_out, rc in c.rm:
        for comp, n in rules.command_terms(name, None, n_in, n_out, 0, ok=rc == 0).items():
            terms[comp] = terms.get(comp, 0.0) + n
    return terms


@dataclass
class TermMatrix:
    """The trace as counts: ``counts[i, j]`` units of ``components[j]`` charged by command ``i``."""

    components: list[str]
    counts: np.ndarray
    names: list[str]            # command name per distinct (command, variant)
    group: np.ndarray           # group index per command
    group_keys: list[tuple[str, str | None]]
    modelled: list[bool]        # per group: the command has a formula beyond overhead + bytes
    pqc_rows: list[served_pqc.Row]  # the commands serve priced with the post-quantum cost model
    segment: np.ndarray | None = None  # per command, its trace segment (one serve run each)

    @classmethod
    def build(cls, commands: list[Command], with_rm: bool = True) -> "TermMatrix":
        """``with_rm=False``: the commands' own terms only, without their resource-manager commands."""
        comp_index: dict[str, int] = {}
        rows: list[dict[int, float]] = []
        cache: dict[tuple, dict[int, float]] = {}
        groups: dict[tuple[str, str | None], int] = {}
        group = np.empty(len(commands), dtype=np.int64)
        for i, c in enumerate(commands):
            sig = (c.command, c.variant, c.in_bytes, c.out_bytes, c.hashed_bytes, c.ok, c.pqc,
                   c.rm if with_rm else ())
            row = cache.get(sig)
            if row is None:
                terms = own_terms(c)
                for comp, n in (rm_terms(c) if with_rm else {}).items():
                    terms[comp] = terms.get(comp, 0.0) + n
                row = {comp_index.setdefault(comp, len(comp_index)): float(n) for comp, n in terms.items() if n}
                cache[sig] = row
            rows.append(row)
            group[i] = groups.setdefault((c.command, c.variant), len(groups))
        counts = np.zeros((len(commands), len(comp_index)))
        for i, row in enumerate(rows):
            for j, n in row.items():
                counts[i, j] = n
        keys = list(groups)
        return cls(list(comp_index), counts, [k[0] for k in keys], group, keys, [_modelled(k[0]) for k in keys],
                   served_pqc.rows(commands), np.array([c.segment for c in commands], dtype=np.int64))


@dataclass
class Priced:
    """One profile's prices: per-command means, draws of the total, notes for what it cannot price."""

    profile: str
    per_command_ms: np.ndarray
    bus_ms: float
    total_draws: np.ndarray
    notes: list[dict]
    seed_draw_ms: np.ndarray | None = None
    """Per command, draw 0 (what ``serve --seed`` charged it); None: no spreads, the means."""

    @property
    def mean_ms(self) -> float:
        return float(self.per_command_ms.sum())


def _draw_fn(comp):
    if comp.samples:
        samples = np.asarray(comp.samples)
        return lambda rng, shape: rng.choice(samples, size=shape)
    return lambda rng, shape: np.maximum(0.0, rng.normal(comp.mean, comp.sd, size=shape))


def price(m: TermMatrix, profile: Profile, draws: int = 200, seed: int = 0) -> Priced:
    """Means, ``draws`` totals (draw 0 = ``serve --seed seed``'s own draws) and notes on ``profile``."""
    means = np.array([profile.mean(c) if c in profile else 0.0 for c in m.components])
    per_command = m.counts @ means if m.components else np.zeros(len(m.group))
    q = served_pqc.price(m.pqc_rows, profile, draws, seed) if m.pqc_rows else None
    pqc_index = np.array([r.index for r in m.pqc_rows], dtype=np.int64)
    if q is not None:
        per_command = per_command + np.bincount(pqc_index, weights=q.mean, minlength=len(per_command))
    bus_cols = [j for j, c in enumerate(m.components) if c in BUS_COMPONENTS]
    bus_ms = float((m.counts[:, bus_cols] @ means[bus_cols]).sum()) if bus_cols else 0.0
    total = np.full(max(1, draws), float(per_command.sum()))
    spread = [(j, profile[c]) for j, c in enumerate(m.components) if c in profile and not profile[c].deterministic]
    if spread:
        # draw 0: Clock's own sequence (one random.Random(seed) per serve run = trace segment, charges in
        # command order)
        rng0, segment = random.Random(seed), None
        seed_draw = per_command.copy()
        rows = np.nonzero(m.counts[:, [j for j, _ in spread]].any(axis=1))[0]
        for i in rows:
            if m.segment is not None and m.segment[i] != segment:
                rng0, segment = random.Random(seed), m.segment[i]
            for j, comp in spread:
                n = m.counts[i, j]
                if n:
                    x = rng0.choice(comp.samples) if comp.samples else max(0.0, rng0.gauss(comp.mean, comp.sd))
                    seed_draw[i] += n * (x - comp.mean)
        total[0] = float(seed_draw.sum())
        if draws > 1:
            rng = np.random.default_rng(seed + 1)
            for j, comp in spread:
                n = m.counts[:, j]
                n = n[n != 0]
                draw = _draw_fn(comp)
                step = max(1, DRAW_CHUNK // max(1, len(n)))
                for lo in range(1, draws, step):
                    hi = min(draws, lo + step)
                    total[lo:hi] += (draw(rng, (hi - lo, len(n))) - comp.mean) @ n
    if q is None:
        return Priced(profile.name, per_command, bus_ms, total, notes(m, profile), seed_draw if spread else None)
    # the post-quantum commands: draw 0 is serve's own draws (served_pqc), the others independent
    seed_draw = (seed_draw if spread else per_command.copy())
    seed_draw += np.bincount(pqc_index, weights=q.seed_draw - q.mean, minlength=len(per_command))
    total[0] = float(seed_draw.sum())
    total[1:] += q.draws
    return Priced(profile.name, per_command, bus_ms, total, notes(m, profile) + _pqc_notes(m, q), seed_draw)


def _pqc_notes(m: TermMatrix, q: served_pqc.PqcPrices) -> list[dict]:
    """The post-quantum commands the model cannot price on this profile (by command and key), with its reason."""
    out: dict[tuple, dict] = {}
    for row in m.pqc_rows:
        why = q.unpriceable.get(row.kind)
        if why is not None:
            name, variant = m.group_keys[m.group[row.index]]
            note = out.setdefault((name, variant, why), {"command": name, "variant": variant, "count": 0,
                                                         "note": f"cannot price: {why}"})
            note["count"] += 1
    return list(out.values())


def notes(m: TermMatrix, profile: Profile) -> list[dict]:
    """The (command, variant) groups a profile cannot fully price, marked as ``estimate`` marks them:
    "overhead only" (no model of its own, or the profile lacks its primitive), "profile lacks X: not
    charged", and "cannot price" when nothing of it can be charged."""
    out = []
    present = m.counts != 0
    pqc_groups = {int(m.group[r.index]) for r in m.pqc_rows}  # priced by the PQC model besides any terms
    for g, (name, variant) in enumerate(m.group_keys):
        rows = m.group == g
        used = [m.components[j] for j in np.nonzero(present[rows].any(axis=0))[0]]
        lacking = [c for c in used if c not in profile]
        kept = [c for c in used if c in profile]
        if lacking and g in pqc_groups:
            note = f"profile lacks {', '.join(lacking)}: not charged (the post-quantum operation is)"
        elif used and not kept:
            note = f"cannot price: profile lacks {', '.join(lacking)}"
        elif not m.modelled[g]:
            note = "overhead only (no model for this command)"
        elif lacking and set(kept) <= set(rules.OVERHEAD_COMPONENTS):
            note = f"overhead only (profile lacks {', '.join(lacking)})"
        elif lacking:
            note = f"profile lacks {', '.join(lacking)}: not charged"
        else:
            continue
        out.append({"command": name, "variant": variant, "count": int(rows.sum()), "note": note})
    return out

"""Hash-based signatures on a Java Card: XMSS^MT signing time, preparation and memory.

For one parameter set (``--h --d --w``) it prices, on a Java Card profile,
the operation counts of the simulated applet over the key's whole lifetime
(trustlab.apps.hbs.model): signing best / average / worst (every
2^(h/d)-th signature re-signs one subtree root, every 2^(2h/d)-th two, ...),
the preparation step that keeps the next subtrees' leaves coming, the
persistent memory (32·l·(d−1) + 32·(2d−1)·2^(h/d) bytes), the signature size
and the number of signatures — and how much each profile parameter moves the
time (±10 %). ``--grid`` tabulates and plots the h/d/w trade-off.

The profile's hash-call cost is anchored on the paper's one unambiguous
figure (a WOTS+ signature takes ~33 s); its "~1 min" WOTS+ key generation is
a check, shown as a reference and never fitted. The output states the anchor
and how much of each figure hash_call and the APDU cost account for, with
the other reading of the link (``--responses short``: no extended-length
responses, so a ~9 KB signature needs ceil(bytes/256) exchanges instead of
eight). The paper's h = 20 signing and preparation times are withheld and
are not used.
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import replace

from trustlab.apps.hbs.applet import Card
from trustlab.apps.hbs.costs import COMPONENTS
from trustlab.apps.hbs.costs import price
from trustlab.apps.hbs.model import (DEFAULT_RESPONSES, check_analysable, PUBLISHED_APPLET, RESPONSES, Analysis, Stats, analyse,
                                     drivers, prepare_work, response_alternative, sensitivity, wots_keygen_counts,
                                     wots_signature_counts)
from trustlab.apps.hbs.params import XMSSParams
from trustlab.textable import table
from trustlab.errors import TrustlabError
from trustlab.experiments._params import count, load_profile, real, seed
from trustlab.experiments.registry import Reference, Result, experiment
from trustlab.timing.profile import Profile, Provenance

PAPER = "van der Laan et al. (2018), Java Card hash-based signatures, excerpt 'Memory Usage and Benchmarks'"
MAX_TREE_HEIGHT = 12  # the scratch card hashes a whole subtree per layer and signature


def _profile(name: str) -> Profile:
    prof = load_profile("--profile", name)
    missing = [c for c in COMPONENTS if c not in prof]
    if missing:
        raise TrustlabError(f"--profile: profile {name!r} lacks the Java Card HBS component(s) {', '.join(missing)} "
                            f"(it is a {prof.family!r} profile; try jcop-2018)")
    return prof


MAX_SET_MS = 1e9  # ~11.6 days per unit: far beyond any card, small enough that lifetime totals stay finite


def _what_if(prof: Profile, settings: list[str]) -> Profile:
    """The profile with ``COMPONENT=MS`` overrides, named so that results say they are hypothetical."""
    if not settings:
        return prof
    means: dict[str, float] = {}
    for item in settings:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in COMPONENTS:
            raise TrustlabError(f"--set {item!r}: give COMPONENT=MS with COMPONENT one of {', '.join(COMPONENTS)}")
        try:
            ms = float(value)
        except ValueError:
            raise TrustlabError(f"--set {item!r}: {value.strip()!r} is not a number") from None
        if not ms >= 0 or ms == float("inf"):
            raise TrustlabError(f"--set {item!r}: a cost must be a finite non-negative number")
        if ms > MAX_SET_MS:
            raise TrustlabError(f"--set {item!r}: at most {MAX_SET_MS:g} ms per unit "
                                "(larger costs overflow the totals)")
        means[name] = ms
    label = ",".join(f"{k}={v:g}" for k, v in means.items())
    tweaked = prof.with_means(means, Provenance("what-if", "--set", f"set on the command line: {label}"))
    return replace(tweaked, name=f"{prof.name}+{label}",
                   provenance=Provenance(prof.provenance.source, prof.provenance.table,
                                         f"{prof.provenance.note}; what-if overrides {label}".strip("; ")))


def _params(h: int, d: int, w: int) -> XMSSParams:
    try:
        p = XMSSParams(h, d, w)
    except TrustlabError as exc:  # named by the flags (with the defaults of those not given) it came from
        raise TrustlabError(f"--h {h} --d {d}: {exc}") from None
    if p.tree_height > MAX_TREE_HEIGHT:
        raise TrustlabError(f"--h {h} --d {d}: subtrees of height {p.tree_height} are beyond this analysis "
                            f"(at most {MAX_TREE_HEIGHT}; use a larger d)")
    return p


def steady_state(a: Analysis) -> Analysis:
    """Preparation best/avg/worst over ONE population: the preparations that compute a leaf.

    The model's best and worst already skip the idle preparations at the very
    end of a key's life (else best would be trivially ~0), but its average
    includes them, so avg could print below best. Here the average (and its
    operation counts, which the sensitivity table prices) is taken over the
    same busy preparations; the lifetime mean per signature stays available
    as ``lifetime_prepare_ms``.
    """
    busy = [r for r in a.prepare_classes if r["leaves"] > 0]
    total = sum(r["indices"] for r in busy)
    if not total:
        return a
    counts: Counter = Counter()
    for r in busy:
        for k, v in r["counts"].items():
            counts[k] += v * r["indices"] / total
    best, worst = a.prepare_ms.best, a.prepare_ms.worst
    avg = sum(r["ms"] * r["indices"] for r in busy) / total
    avg = min(max(avg, best), worst)  # a weighted mean lies between its extremes; keep rounding from saying otherwise
    return replace(a, prepare_ms=Stats(best, avg, worst), prepare_counts={**a.prepare_counts, "avg": counts})


def lifetime_prepare_ms(a: Analysis) -> tuple[float, int, int]:
    """(mean ms per signature over every preparation of the key's life, idle preparations, all preparations)."""
    n = sum(r["indices"] for r in a.prepare_classes)
    idle = sum(r["indices"] for r in a.prepare_classes if r["leaves"] == 0)
    mean = sum(r["ms"] * r["indices"] for r in a.prepare_classes) / n if n else 0.0
    return mean, idle, n


MAX_H = 64  # total tree height: RFC 8391's largest XMSS^MT sets have h = 60


DEFAULT_SENSITIVITY = 0.10  # --sensitivity when not given (None until run, so --grid can refuse it)


def _check_modes(args: argparse.Namespace) -> None:
    """An option that has no effect in the chosen mode is an error naming the option it needs (issue 23)."""
    given = lambda name: getattr(args, name, None) is not None  # noqa: E731
    if getattr(args, "grid", False):
        for name in ("h", "d", "w"):
            if given(name):
                raise TrustlabError(f"--{name}: has no effect with --grid (which covers --grid-h x --grid-w); "
                                    "drop one of them")
        if getattr(args, "check", False):
            raise TrustlabError("--check: has no effect with --grid; run it without --grid")
        if given("sensitivity"):
            raise TrustlabError("--sensitivity: has no effect with --grid (the trade-off table has no sensitivity "
                                "table); run it without --grid")
    else:
        for name, flag in (("grid_h", "--grid-h"), ("grid_w", "--grid-w")):
            if given(name):
                raise TrustlabError(f"{flag}: applies only with --grid")
    if given("seed") and not getattr(args, "check", False):
        raise TrustlabError("--seed: applies only with --check (the key of the functional check derives from it)")


def _grid_points(hs: list[int], ws: list[int]) -> list[XMSSParams]:
    return [XMSSParams(h, d, w) for h in hs for w in ws for d in range(1, h + 1)
            if h % d == 0 and 2 <= h // d <= 10]


def _settle(args: argparse.Namespace) -> tuple[Profile, list[XMSSParams]]:
    """Check every parameter and fill in the defaults on ``args``: the profile (with --set) and the parameter
    sets the run analyses (one, or the --grid's).

    The experiment's ``check`` (on the registry's copy of the arguments: a sweep's dry run) and the start of
    its run are this one function: modes, the profile and its components, --set, and each (h, d, w) -
    d divides h, the subtree height, the analysis's largest h - before any analysis runs.
    """
    _check_modes(args)
    prof = _what_if(_profile(args.profile), getattr(args, "set", []) or [])
    args.sensitivity = DEFAULT_SENSITIVITY if args.sensitivity is None else args.sensitivity
    if not 0 < args.sensitivity < 1:
        raise TrustlabError(f"--sensitivity {args.sensitivity}: give a fraction in (0, 1)")
    if args.grid:
        args.grid_h = args.grid_h or [10, 20]
        args.grid_w = args.grid_w or [4, 16]
        for w in args.grid_w:
            if w not in (4, 16):
                raise TrustlabError(f"--grid-w {w}: RFC 8391 allows w = 4 or 16")
        try:
            points = _grid_points(args.grid_h, args.grid_w)
        except TrustlabError as exc:
            raise TrustlabError(f"--grid-h: {exc}") from None
        if not points:
            raise TrustlabError("--grid-h: no h has a divisor d with 2 <= h/d <= 10")
        for p in points:
            try:
                check_analysable(p)
            except TrustlabError as exc:
                raise TrustlabError(f"--grid-h {p.h}: {exc}") from None
        return prof, points
    p = _params(20 if args.h is None else args.h, 4 if args.d is None else args.d, 16 if args.w is None else args.w)
    try:
        check_analysable(p)
    except TrustlabError as exc:
        raise TrustlabError(f"--h {p.h}: {exc}") from None
    return prof, [p]


@experiment("hbs", help="XMSS^MT on a Java Card: signing/preparation time over the key's lifetime, "
            "persistent memory, signature size, sensitivity; --grid for the h/d/w trade-off")
class HBS:
    flagship = [
        ["--profile", "jcop-2018", "--h", "20", "--d", "4", "--check"],
        ["--profile", "jcop-2018", "--h", "20", "--d", "5", "--check"],
        ["--profile", "jcop-2018", "--grid"],
    ]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--profile", default="jcop-2018", metavar="NAME",
                            help="Java Card profile (default jcop-2018)")
        parser.add_argument("--h", type=count(1, MAX_H, "--h"), default=None, help="total tree height (default 20)")
        parser.add_argument("--d", type=count(1, MAX_H, "--d"), default=None, help="layers; must divide h (default 4)")
        parser.add_argument("--w", type=int, default=None, choices=(4, 16), help="Winternitz parameter (default 16)")
        parser.add_argument("--grid", action="store_true",
                            help="trade-off table and plots over --grid-h x --grid-w x every d with 2 <= h/d <= 10")
        parser.add_argument("--grid-h", type=count(1, MAX_H, "--grid-h"), nargs="+", default=None, metavar="H",
                            help="total heights the --grid covers (default 10 20)")
        parser.add_argument("--grid-w", type=int, nargs="+", default=None, metavar="W",
                            help="Winternitz parameters the --grid covers, 4 and/or 16 (default 4 16)")
        parser.add_argument("--set", action="append", default=[], metavar="COMPONENT=MS",
                            help="what-if: replace one profile cost (repeatable), e.g. --set hash_call=2.7 "
                            f"(components: {', '.join(COMPONENTS)})")
        parser.add_argument("--check", action="store_true",
                            help="also run the applet for real on a small key with the same d and w (h = 2d): "
                            "sign across a subtree switch, tear the card mid-signature, verify every signature "
                            "off-card, try to reuse a one-time key")
        parser.add_argument("--seed", type=seed, default=None,
                            help="--check: the card's secret key seeds (and the clock's draws) derive from it, so "
                            "repeated runs sign the same messages with the same key in the same times (default 0)")
        parser.add_argument("--responses", choices=RESPONSES, default=DEFAULT_RESPONSES,
                            help="how the signature leaves the card: 'applet' = as the paper's published applet "
                            "(joostrijneveld/javacard-xmss) does it: SIGN_INIT, then per layer 256-byte responses of "
                            "8 WOTS+ chains and one authentication path (41 commands for h=20 d=4, 51 for d=5), its "
                            "signing state in persistent fields, one atomic update per command (default); "
                            "'extended' = the excerpt's eight APDUs with extended-length responses (~1.2 KB each); "
                            "'short' = the bytes in as few <= 256-byte responses as they fill (37 for d=4, 45 for "
                            "d=5)")
        parser.add_argument("--sensitivity", type=real("--sensitivity", 0, 1, low_open=True, high_open=True), default=None,
                            metavar="REL",
                            help="relative change of each profile parameter in the sensitivity table (default 0.10)")

    def check(self, args: argparse.Namespace) -> None:
        """Everything the run refuses before its analysis (the registry runs this before a run and on every
        sweep point)."""
        _settle(args)

    def run(self, args: argparse.Namespace) -> Result:
        prof, points = _settle(args)
        provenance = {prof.name: prof.provenance.describe()}
        if args.grid:
            return self._grid(args, prof, provenance, points)
        p = points[0]
        responses = getattr(args, "responses", DEFAULT_RESPONSES)
        a = steady_state(analyse(p, prof, responses))
        sens = sensitivity(a, prof, args.sensitivity)
        drive = drivers(a, prof, args.sensitivity)
        alt = response_alternative(p, prof)
        work = prepare_work(p, a.prepare_counts["best"], prof)
        text = _text(a, sens, args.sensitivity) + "\n\n" + _drivers_text(prof, drive, alt, responses,
                                                                          args.sensitivity)
        text += "\n\n" + _prepare_work_text(a, work)
        refs = _references(p, prof, responses)
        data = a.record()
        data["responses"] = responses
        data["assumptions"] = {"anchor": _anchor(prof, responses), "drivers": drive, "responses": alt,
                               "prepare_work": work}
        key_seed = getattr(args, "seed", None) or 0
        if args.check:
            check_text, check_refs = functional_check(XMSSParams(2 * p.d, p.d, p.w), prof, key_seed)
            text += "\n\n" + check_text
            refs += check_refs
        params = {"profile": prof.name, "h": p.h, "d": p.d, "w": p.w, "sensitivity": args.sensitivity,
                  "check": args.check, "set": list(getattr(args, "set", []) or []), "responses": responses}
        if args.check:  # the only draw: the check's key (without --check the seed changes nothing)
            params["seed"] = key_seed
        return Result(
            experiment="hbs", params=params,
            data=data, text=text, references=refs,
            profiles=provenance, plots=[_sensitivity_plot(a, sens, args.sensitivity)])

    def _grid(self, args: argparse.Namespace, prof: Profile, provenance: dict, points: list[XMSSParams]) -> Result:
        records = [steady_state(analyse(p, prof, getattr(args, "responses", DEFAULT_RESPONSES))).record()
                   for p in points]
        rows = [[r["h"], r["d"], r["w"], r["sign_s"]["best"], r["sign_s"]["avg"], r["sign_s"]["worst"],
                 r["prepare_s"]["best"], r["prepare_s"]["avg"], r["prepare_s"]["worst"],
                 r["persistent_bytes"], r["signature_bytes"], r["signatures"]] for r in records]
        text = (f"XMSS^MT trade-off on {prof.name} (times in s over each key's lifetime)\n"
                + table(rows, ["h", "d", "w", "sign best", "sign avg", "sign worst", "prep best", "prep avg",
                               "prep worst", "NVM bytes", "sig bytes", "signatures"])
                + "\nprep: over the preparations that compute a leaf (the idle ones at the end of a key's "
                "life excluded from best, avg and worst alike)")
        plots = []
        for key, title, ylabel, logy in (
                (lambda r: r["sign_s"]["avg"], "average signing time vs layers", "s", False),
                (lambda r: r["prepare_s"]["avg"], "average preparation time vs layers", "s", False),
                (lambda r: r["persistent_bytes"], "persistent memory vs layers", "bytes", True),
                (lambda r: r["signature_bytes"], "signature size vs layers", "bytes", False)):
            series = []
            for h in args.grid_h:
                for w in args.grid_w:
                    pts = [r for r in records if r["h"] == h and r["w"] == w]
                    if pts:
                        series.append({"label": f"h={h}, w={w}", "x": [r["d"] for r in pts],
                                       "y": [key(r) for r in pts]})
            plots.append({"kind": "line", "title": f"{title} ({prof.name})", "xlabel": "d (layers)",
                          "ylabel": ylabel, "logx": False, "logy": logy, "series": series})
        return Result(experiment="hbs", params={"profile": prof.name, "grid_h": args.grid_h, "grid_w": args.grid_w},
                      data=records, text=text, profiles=provenance, plots=plots)


def _text(a: Analysis, sens: list[dict], rel: float) -> str:
    p = a.params
    s, q = a.sign_ms, a.prepare_ms
    head = table([["sign", s.best / 1e3, s.avg / 1e3, s.worst / 1e3],
                  ["prepare", q.best / 1e3, q.avg / 1e3, q.worst / 1e3]], ["step (s)", "best", "avg", "worst"])
    life, idle, n_prep = lifetime_prepare_ms(a)
    head += (f"\nprepare best/avg/worst: over the {n_prep - idle} preparations that compute a leaf; over all "
             f"{n_prep} (incl. {idle} idle at the end of the key's life) the mean is {life / 1e3:.4g} s")
    l = p.wots_len
    mem = (f"persistent memory: 32·l·(d−1) + 32·(2d−1)·2^(h/d) = {32 * l * (p.d - 1)} + "
           f"{32 * (2 * p.d - 1) * p.leaves_per_tree} = {p.persistent_bytes} bytes "
           f"({p.persistent_bytes / 1024:.2f} KiB; plus {p.key_state_bytes} bytes of keys and index)\n"
           f"signature: {p.signature_bytes} bytes; signatures per key: {p.signatures}")
    classes = table([[r["switching_subtrees"], r["indices"], r["ms"] / 1e3] for r in a.sign_classes],
                    ["subtrees switching", "signatures", "sign s"])
    prep = table([[r["leaves"], "".join(".-+"[x] for x in r["layers"]) or "-", r["indices"], r["ms"] / 1e3]
                  for r in a.prepare_classes],
                 ["leaves computed", "layers (+ leaf, - idle, . none left)", "preparations", "prepare s"])
    pct = f"{rel:.0%}"
    srows = [[r["component"], r["mean"], r["sign_best_ms_per_10pct"] / 1e3, r["sign_avg_ms_per_10pct"] / 1e3,
              r["sign_worst_ms_per_10pct"] / 1e3, r["prepare_best_ms_per_10pct"] / 1e3,
              r["prepare_avg_ms_per_10pct"] / 1e3] for r in sens]
    sens_t = table(srows, ["parameter", "mean (ms/unit)", f"sign best ±s", f"sign avg ±s", f"sign worst ±s",
                           f"prep best ±s", f"prep avg ±s"])
    return (f"XMSS^MT h={p.h} d={p.d} w={p.w} (l={l}) on {a.profile}: counted operations of the simulated "
            f"applet, priced with the profile\n{head}\n\n{mem}\n\nsignature cost classes over the lifetime\n"
            f"{classes}\n\npreparation cost classes\n{prep}\n\n"
            f"sensitivity: change in seconds when one parameter changes by {pct} (time is linear in each)\n{sens_t}")


def _anchor(prof: Profile, responses: str = DEFAULT_RESPONSES) -> dict:
    """What hash_call rests on, and the one figure that checks it."""
    means = {c: prof.mean(c) for c in COMPONENTS}
    p = XMSSParams(20, 4, 16)
    return {"component": "hash_call", "mean_ms": means["hash_call"],
            "provenance": prof["hash_call"].provenance.describe(),
            "anchor": {"figure": "WOTS+ signature, average", "paper_s": 33.0,
                       "model_s": price(wots_signature_counts(p, responses), means) / 1e3},
            "check": {"figure": "WOTS+ key generation (PREPARE with one leaf)", "paper_s": 60.0,
                      "model_s": price(wots_keygen_counts(p, responses), means) / 1e3}}


def _drivers_text(prof: Profile, drive: list[dict], alt: dict, responses: str, rel: float) -> str:
    anc = _anchor(prof, responses)
    chk = anc["check"]
    lines = [f"anchor: hash_call = {anc['mean_ms']:.4g} ms per hash call, from the paper's ~33 s WOTS+ signature "
             f"(model {anc['anchor']['model_s']:.1f} s); check, not fitted: WOTS+ key generation model "
             f"{chk['model_s']:.1f} s vs the paper's '~1 min' ({chk['model_s'] / chk['paper_s'] - 1:+.0%})"]
    rows = []
    for r in drive:
        for what in ("sign", "prepare"):
            cells = [r["component"] if what == "sign" else "", what]
            for case in ("best", "avg", "worst"):
                c = r[f"{what}_{case}"]
                cells.append(f"{c['count']:.0f} x -> {c['ms'] / 1e3:.3g} s ({c['share']:.0%}), "
                             f"±{c['ms_per_rel'] / 1e3:.3g} s")
            rows.append(cells)
    lines.append(f"which assumption drives the figure (count x mean -> seconds (share of the figure), change at "
                 f"±{rel:.0%})\n" + table(rows, ["assumption", "step", "best", "avg", "worst"]))
    exchanges = {r: alt[f"{r}_exchanges"] for r in RESPONSES}
    added = {"extended": 0.0, "short": alt["short_extra_ms"], "applet": alt["applet_extra_ms"]}
    rows = [[r + (" (used)" if r == responses else ""), exchanges[r], (added[r] - added[responses]) / 1e3]
            for r in RESPONSES]
    lines.append(f"responses: the signature of {alt['signature_bytes']} bytes leaves the card in '{responses}' "
                 "exchanges; each reading, and what it changes in every signature:\n"
                 + table(rows, ["reading", "exchanges", "sign ±s vs used"])
                 + f"\n  applet: the paper's published applet (github.com/joostrijneveld/javacard-xmss, XMSS.java): "
                 "SIGN_INIT, then per layer 256-byte responses of 8 WOTS+ chains and one authentication path, its "
                 "signing state in persistent short fields (one atomic update per command, priced as JCAlgTest's "
                 f"atomic Util.arrayCopy); +{alt['applet_prepare_extra_ms'] / 1e3:.3f} s per preparation (its "
                 "state reset). extended: the excerpt's 'eight APDUs' (~1.2 KB extended-length responses). "
                 f"short: as few 256-byte responses as the bytes fill. APDU baseline {prof.mean('apdu'):.4g} ms "
                 "(JCAlgTest). The excerpt and the published code disagree (eight vs nine WOTS+ responses per "
                 "layer, and the upper layers' signatures); every reading is shown.")
    return "\n".join(lines)


def _prepare_work_text(a: Analysis, work: list[dict]) -> str:
    """What one best-case preparation computes, ours beside the published applet's, and the paper's 'minute'."""
    ours, pub = sum(r["ours_ms"] for r in work), sum(r["published_ms"] for r in work)
    keygen = sum(r["ours_ms"] for r in work if r["wots_keygen"])
    rows = [[r["work"], r["ours"], r["ours_ms"] / 1e3, r["published"], r["published_ms"] / 1e3] for r in work]
    rows.append(["total", "", ours / 1e3, "", pub / 1e3])
    return (f"what a best-case preparation computes (one leaf; {a.prepare_ms.best / 1e3:.4g} s), ours beside the "
            f"published applet's signPrepNext ({PUBLISHED_APPLET}), s\n"
            + table(rows, ["work", "ours", "s", "published applet", "s"])
            + f"\n  a WOTS+ key generation proper (chains and their seeds; the L-tree makes the XMSS leaf): "
            f"{keygen / 1e3:.3g} s vs the excerpt's 'approximately a minute' ({keygen / 60e3 - 1:+.0%}); the "
            "preparation adds the L-tree, the leaf's persistent write and the command. The published applet "
            "computes no tree-hash nodes, authentication-path updates or transactions in a preparation (its "
            "authentication paths are rehashed from the stored leaves at signing time): counted, its best case "
            f"is {pub / 1e3:.4g} s ({pub / ours - 1:+.1%}), priced with the same hash_call.")


def _references(p: XMSSParams, prof: Profile, responses: str = DEFAULT_RESPONSES) -> list[Reference]:
    means = {c: prof.mean(c) for c in COMPONENTS}
    refs = [
        Reference("WOTS+ signature, average (anchor of hash_call)", 33.0,
                  model=price(wots_signature_counts(p, responses), means) / 1e3, unit="s", source=PAPER),
        Reference("WOTS+ key generation = best-case preparation (check, not fitted)", 60.0,
                  model=price(wots_keygen_counts(p, responses), means) / 1e3, unit="s", source=PAPER + " ('~1 min')"),
    ]
    paper_memory = {(20, 4, 16): 6432 + 7168, (20, 5, 16): 8576 + 4608}
    if (p.h, p.d, p.w) in paper_memory:
        refs.append(Reference(f"persistent memory, h={p.h} d={p.d}", paper_memory[(p.h, p.d, p.w)],
                              model=p.persistent_bytes, simulated=Card(p).persistent_state_bytes,
                              unit="bytes", source=PAPER))
    return refs


def _sensitivity_plot(a: Analysis, sens: list[dict], rel: float) -> dict:
    p = a.params
    names = [r["component"] for r in sens]
    return {"kind": "bar", "title": f"h={p.h} d={p.d} w={p.w} on {a.profile}: +{rel:.0%} per parameter",
            "xlabel": "profile parameter", "ylabel": "change (s)", "logx": False, "logy": False,
            "series": [{"label": "sign avg", "x": names, "y": [r["sign_avg_ms_per_10pct"] / 1e3 for r in sens]},
                       {"label": "sign worst", "x": names, "y": [r["sign_worst_ms_per_10pct"] / 1e3 for r in sens]},
                       {"label": "prepare avg", "x": names,
                        "y": [r["prepare_avg_ms_per_10pct"] / 1e3 for r in sens]}]}


def functional_check(p: XMSSParams, prof: Profile, seed: int = 0) -> tuple[str, list[Reference]]:
    """Run the applet for real: sign past the first subtree switch with a tear mid-signature.

    Every completed signature must verify with the independent verifier; the index a torn
    signature had reserved must stay used; asking for an already used index must be refused.
    The key's seeds derive from ``seed`` (``SecretSeeds.from_int``): the WOTS+ chain lengths,
    and so the signing times, depend on the message digests under that key, so a fresh random
    key would make every run's times differ. It is a test key, not a secret one.
    """
    from trustlab.apps.hbs.costs import CardTear
    from trustlab.apps.hbs.host import CardError, CardSigner, personalize
    from trustlab.apps.hbs.keys import SecretSeeds
    from trustlab.apps.hbs.verify import Verifier
    from trustlab.timing.clock import Clock

    clock = Clock(prof, seed=seed)
    card, pk = personalize(p, SecretSeeds.from_int(seed), clock)
    signer, verifier = CardSigner(card), Verifier(p.h, p.d, p.w)
    lines, verified, signed, indices = [], 0, 0, []
    # past the first switch of the bottom subtree, keeping one index free for the last prepare
    # (h=2, d=1 has only 4 one-time keys)
    target = min(p.leaves_per_tree + 2, 2 ** p.h - 1)
    torn_at = 1
    while signer.index() < target:
        if signer.index() == torn_at:
            card.meter.tear_after = 500  # power cut in the middle of the WOTS+ chains
            try:
                signer.sign(b"torn")
            except CardTear:
                lines.append(f"index {torn_at}: card torn mid-signature; index now {signer.index()} (not rolled back)")
            card.meter.tear_after = None
            signer.prepare()
            continue
        msg = b"document %d" % signer.index()
        t0 = clock.now_ms
        sig = signer.sign(msg)
        ms = clock.now_ms - t0
        idx = int.from_bytes(sig[:p.idx_bytes], "big")
        ok = verifier.verify(pk.to_bytes(), msg, sig)
        indices.append(idx)
        signed += 1
        verified += ok
        lines.append(f"index {idx}: {len(sig)}-byte signature in {ms / 1e3:.1f} s (8 APDUs), "
                     f"off-card verify: {'ok' if ok else 'FAILED'}")
        signer.prepare()
    for attempt in (torn_at, indices[-1]):
        try:
            signer.sign(b"replay", expect_index=attempt)
            lines.append(f"reuse of index {attempt}: ACCEPTED (bug)")
        except CardError as exc:
            lines.append(f"reuse of index {attempt}: refused ({exc})")
    refused = sum("refused" in line for line in lines)
    text = (f"functional check on the card (h={p.h} d={p.d} w={p.w}, test key from seed {seed}, {prof.name}):\n  "
            + "\n  ".join(lines))
    refs = [Reference("functional check: completed signatures that verify off-card", signed, simulated=verified,
                      unit="signatures", source="trustlab.apps.hbs.verify (independent verifier)"),
            Reference("functional check: reuse attempts refused (incl. the torn index)", 2, simulated=refused,
                      unit="attempts", source="applet SIGN_BEGIN with P1=1")]
    return text, refs

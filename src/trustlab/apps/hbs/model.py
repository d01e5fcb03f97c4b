"""Lifetime time and memory of XMSS^MT on the card, from counted operations.

Nothing here is a formula for time. The applet's own code is run, on a
scratch card with the real NVM layout for (h, d, w), once per *cost class*:

* a signature's cost depends only on how many subtrees switch at its index
  (k = 0 .. d−1: every 2^(h/d)-th signature re-signs one root, every
  2^(2h/d)-th two, ...) and on the digits of the signed digests;
* a preparation's cost depends only on which layers compute a leaf and which
  layers still have a next subtree.

Each class's operation counts (hash calls, blocks, NVM bytes, APDUs ...) are
measured by running the real APDUs; chain steps are then set to their exact
expectation over uniformly random digests (WOTS+ cost varies with the
message). How many of the 2^h indices fall in each class is exact
combinatorics (signatures) or an exact vectorised pass over every index
(preparations). Pricing the counts with a profile gives best/avg/worst; since
time is linear in the component means, sensitivities are exact too.

The functional simulation and this model agree exactly on small keys when the
profile has no spread (tests/hbs/test_model.py runs every index of a key).
"""

from __future__ import annotations

import functools
import math
import os
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from trustlab.apps.hbs import wots
from trustlab.apps.hbs.address import Address
from trustlab.apps.hbs.applet import DEFAULT_LINK, STAGES, Card, next_fill_target, rollover_layers, stage_chains
from trustlab.apps.hbs.costs import COMPONENTS, LINK, CardMeter, price
from trustlab.apps.hbs.hashes import Hasher, sha256_blocks
from trustlab.apps.hbs.host import CardSigner
from trustlab.apps.hbs.keys import split_index
from trustlab.apps.hbs.params import XMSSParams
from trustlab.errors import TrustlabError
from trustlab.timing.profile import Profile

MESSAGE_BYTES = 32  # the host sends a SHA-256 digest of the document, as the paper's host does
MAX_ANALYSIS_H = 26  # the exact per-index pass over preparations; beyond that it takes too long
SHORT_RESPONSE = 256  # ISO 7816-4 short Le: at most 256 response bytes per exchange
RESPONSES = ("applet", "extended", "short")
DEFAULT_RESPONSES = "applet"
"""How the signature leaves the card. ``applet``: as the paper's published applet does it
(github.com/joostrijneveld/javacard-xmss, xmss/smartcard/applet/XMSS.java): SIGN_INIT, then per
layer its WOTS+ signature in responses of 8 chains (256 bytes) and its authentication path in
one, and the signing state machine kept in persistent ``short`` fields, one atomic update per
command; ``extended``: the excerpt's "eight APDUs" with extended-length responses; ``short``:
the same bytes in as few <= 256-byte responses as they fill."""
GET_RESPONSE_BYTES = 5  # a GET RESPONSE command header (ISO 7816-4), no data
APPLET_RESPONSE = 256  # XMSS.java signWOTS: "Send 8x32 bytes for normal chains, 3x32 for the checksum"
STATE_FIELD_BYTES = 2  # a Java Card short field (signingState, signingIdxHigh/Low, indexHigh/Low)


@functools.cache  # a pure function of the (frozen) parameters; the grid asks for it per signature class
def expected_sign_steps(p: XMSSParams) -> float:
    """Exact E[sum of the l base-w digits] for a uniformly random n-byte digest."""
    w = p.w
    # distribution of the checksum = sum(w-1-m_i) over len1 uniform digits
    dist = np.zeros(1)
    dist[0] = 1.0
    one = np.full(w, 1.0 / w)
    for _ in range(p.len1):
        dist = np.convolve(dist, one)
    expected_csum_digits = 0.0
    for csum, prob in enumerate(dist):
        if prob == 0.0:
            continue
        shifted = csum << (8 - ((p.len2 * p.log_w) % 8))
        nbytes = (p.len2 * p.log_w + 7) // 8
        expected_csum_digits += prob * sum(wots.base_w(shifted.to_bytes(nbytes, "big"), w, p.len2))
    return p.len1 * (w - 1) / 2 + expected_csum_digits


def _counts_of(fn) -> Counter:
    meter = CardMeter()
    fn(meter)
    return meter.snapshot()


def step_counts(p: XMSSParams) -> Counter:
    """Operations of one WOTS+ chain step (two PRF calls, one F, a 32-byte XOR)."""
    def run(meter: CardMeter) -> None:
        Hasher(meter).chain_step(bytes(p.n), bytes(p.n), Address())
    return _counts_of(run)


def _scratch(p: XMSSParams, idx: int) -> Card:
    """A card with the real layout, random keys, its index at ``idx`` and consistent tags."""
    card = Card(p)
    card.nvm.load("keys", 0, os.urandom(4 * p.n))
    card.nvm.load("index", 0, idx.to_bytes(8, "big"))
    for layer in range(p.d - 1):
        tree, _ = split_index(p, idx, layer)
        card.nvm.load("sigtag", 8 * layer, (tree + 1).to_bytes(8, "big"))
    return card


def _adjust_steps(c: Counter, steps_expected: float, step: Counter) -> Counter:
    """Replace the chain steps a run happened to take by their expectation."""
    delta = steps_expected - c["calls:F"]
    out = Counter(c)
    for k, v in step.items():
        out[k] += delta * v
    return out


def sign_class_counts(p: XMSSParams, k: int, steps: float | None = None) -> Counter:
    """Operations of one signature at which k subtrees switch (APDUs included)."""
    if not 0 <= k <= p.d - 1:
        raise ValueError(k)
    idx = 1 if k == 0 else 1 << (p.tree_height * k)
    card = _scratch(p, idx)
    for layer in rollover_layers(p, idx):
        card.nvm.load("fill", 4 * layer, p.leaves_per_tree.to_bytes(4, "big"))
        card.nvm.load("sigtag", 8 * layer, bytes(8))  # stale: the root below just changed
    before = card.meter.snapshot()
    CardSigner(card).sign(os.urandom(MESSAGE_BYTES))
    c = card.meter.snapshot()
    c.subtract(before)
    expected = (1 + k) * (expected_sign_steps(p) if steps is None else steps)
    return _adjust_steps(c, expected, step_counts(p))


def _prepare_state(p: XMSSParams, j: int) -> Card:
    """The card as it is right after signing index ``j`` on the schedule, before PREPARE."""
    card = _scratch(p, j + 1)
    switched = set(rollover_layers(p, j))
    for layer in range(p.d - 1):
        fill = 0 if layer in switched else next_fill_target(p, j, layer)
        card.nvm.load("fill", 4 * layer, fill.to_bytes(4, "big"))
    return card


def prepare_counts_at(p: XMSSParams, j: int) -> Counter:
    """Operations of the PREPARE that follows signature ``j`` (APDU included)."""
    card = _prepare_state(p, j)
    before = card.meter.snapshot()
    CardSigner(card).prepare()
    c = card.meter.snapshot()
    c.subtract(before)
    return c


def check_analysable(p: XMSSParams) -> None:
    """Refuse, before any work, a parameter set the exact per-index pass cannot take."""
    if p.h > MAX_ANALYSIS_H:
        raise TrustlabError(f"hbs analysis: h={p.h} too large for the exact per-index pass (at most {MAX_ANALYSIS_H})")


def prepare_classes(p: XMSSParams) -> dict[tuple[int, ...], tuple[int, int]]:
    """{per-layer state: (how many indices j, first such j)} over the whole lifetime.

    Per layer i < d−1: 0 = no next subtree any more, 1 = nothing due, 2 = one leaf due
    (due iff 2^(i·h/d) divides j).
    """
    check_analysable(p)
    t = p.tree_height
    found: dict[int, list[int]] = {}
    chunk = 1 << 20
    for start in range(0, p.signatures, chunk):
        j = np.arange(start, min(start + chunk, p.signatures), dtype=np.int64)
        code = np.zeros_like(j)
        for layer in range(p.d - 1):
            bits = t * (layer + 1)
            exists = ((j >> bits) + 1) < (1 << (p.h - bits))
            due = (j % (1 << (t * layer))) == 0
            state = np.where(exists, np.where(due, 2, 1), 0)
            code = code * 3 + state
        values, first, counts = np.unique(code, return_index=True, return_counts=True)
        for v, f, c in zip(values.tolist(), first.tolist(), counts.tolist()):
            if v in found:
                found[v][0] += c
            else:
                found[v] = [c, start + f]
    out = {}
    for v, (count, first) in found.items():
        states = []
        for _ in range(p.d - 1):
            states.append(v % 3)
            v //= 3
        out[tuple(reversed(states))] = (count, first)
    return out


def sign_class_sizes(p: XMSSParams) -> dict[int, int]:
    """{k: number of indices at which exactly k subtrees switch} — exact."""
    total = p.signatures
    at_least = [total] + [(total - 1) >> (p.tree_height * m) for m in range(1, p.d)]
    return {k: at_least[k] - (at_least[k + 1] if k + 1 < p.d else 0) for k in range(p.d)}


@dataclass
class Stats:
    best: float
    avg: float
    worst: float

    def scaled(self, f: float) -> dict[str, float]:
        return {"best": self.best * f, "avg": self.avg * f, "worst": self.worst * f}


@dataclass
class Analysis:
    params: XMSSParams
    profile: str
    sign_ms: Stats
    prepare_ms: Stats
    sign_classes: list[dict] = field(default_factory=list)
    prepare_classes: list[dict] = field(default_factory=list)
    sign_counts: dict[str, Counter] = field(default_factory=dict)     # best/avg/worst operation counts
    prepare_counts: dict[str, Counter] = field(default_factory=dict)

    def record(self) -> dict:
        p = self.params
        return {"h": p.h, "d": p.d, "w": p.w,
                "sign_s": self.sign_ms.scaled(1e-3), "prepare_s": self.prepare_ms.scaled(1e-3),
                "persistent_bytes": p.persistent_bytes, "signature_bytes": p.signature_bytes,
                "signatures": p.signatures}


def _means(profile: Profile) -> dict[str, float]:
    return {c: profile.mean(c) for c in COMPONENTS}


def _avg_counts(weighted: list[tuple[int, Counter]]) -> Counter:
    total = sum(n for n, _ in weighted)
    out: Counter = Counter()
    for n, c in weighted:
        for k, v in c.items():
            out[k] += v * n / total
    return out


def short_response_exchanges(p: XMSSParams) -> int:
    """Exchanges a signature needs when every response carries at most 256 bytes (37 for h=20 d=4)."""
    return max(STAGES, math.ceil(p.signature_bytes / SHORT_RESPONSE))


def short_response_extra(p: XMSSParams) -> Counter:
    """What short responses add to a signature: the extra exchanges (GET RESPONSE) and their headers.

    The applet's eight stages stay; the card streams the ~9 KB signature in
    full 256-byte responses, so ``ceil(bytes / 256) - 8`` more round trips,
    each charged at the profile's ``apdu`` baseline plus a 5-byte command on
    the link. The response bytes themselves are already timed.
    """
    extra = short_response_exchanges(p) - STAGES
    return Counter({"apdu": extra, LINK: extra * DEFAULT_LINK.exchange_ms(GET_RESPONSE_BYTES, 0)})


def applet_exchanges(p: XMSSParams) -> int:
    """Commands of one signature in the paper's published applet (41 for h=20 d=4, 51 for d=5).

    SIGN_INIT (index and R), then per layer ceil(l·n / 256) SIGN_WOTS responses
    (9: eight of 8 chains, one of 3) and one SIGN_AUTHPATH; the cached upper-layer
    signatures are sent the same way.
    """
    per_layer = math.ceil(p.wots_sig_bytes / APPLET_RESPONSE) + math.ceil(p.tree_height * p.n / APPLET_RESPONSE)
    return 1 + p.d * per_layer


def _atomic_state_writes(k: int) -> Counter:
    """``k`` updates of a persistent ``short`` field: each one atomic (Java Card: a persistent field
    update is atomic), priced as JCAlgTest's Util.arrayCopy RAM->EEPROM of 2 bytes."""
    meter = CardMeter()
    for _ in range(k):
        meter.nvm_write(STATE_FIELD_BYTES)
    return meter.snapshot()


def applet_extra(p: XMSSParams) -> Counter:
    """What the published applet's command structure adds to one of our signatures.

    More exchanges (:func:`applet_exchanges` instead of our eight), each a
    command header on the link and the profile's APDU round trip, and the
    persistent signing state: ``signingState`` updated by every command,
    ``signingIdxHigh/Low`` set at SIGN_INIT and moved up a layer by every
    SIGN_AUTHPATH (our applet keeps its session in transient memory and
    reserves the index in one transaction, which its own counts already hold).
    """
    n = applet_exchanges(p)
    extra = n - STAGES
    out = Counter({"apdu": extra, LINK: extra * DEFAULT_LINK.exchange_ms(GET_RESPONSE_BYTES, 0)})
    out.update(_atomic_state_writes(n + 2 + 2 * p.d))
    return out


def applet_prepare_extra() -> Counter:
    """SIGN_PREP ends with ``signingState = 0``: one more atomic state update."""
    return _atomic_state_writes(1)


def response_extra(p: XMSSParams, responses: str) -> tuple[Counter, Counter]:
    """(added to every signature, added to every preparation) under a response reading."""
    if responses not in RESPONSES:
        raise TrustlabError(f"responses must be one of {', '.join(RESPONSES)}, got {responses!r}")
    if responses == "short":
        return short_response_extra(p), Counter()
    if responses == "applet":
        return applet_extra(p), applet_prepare_extra()
    return Counter(), Counter()


def analyse(p: XMSSParams, profile: Profile, responses: str = DEFAULT_RESPONSES) -> Analysis:
    """Sign and prepare time over the key's lifetime on ``profile``.

    ``responses`` (see :data:`RESPONSES`): ``extended`` prices the simulated
    applet's own eight exchanges; ``short`` adds :func:`short_response_extra`;
    ``applet`` (default) adds what the paper's published applet does beyond
    ours, :func:`applet_extra` per signature and :func:`applet_prepare_extra`
    per preparation.
    """
    means = _means(profile)
    sign_extra, prep_extra = response_extra(p, responses)
    sizes = sign_class_sizes(p)
    sign_rows, sign_weighted = [], []
    for k, n in sizes.items():
        if n == 0:
            continue
        c = sign_class_counts(p, k) + sign_extra
        ms = price(c, means)
        sign_rows.append({"switching_subtrees": k, "indices": n, "ms": ms, "counts": c})
        sign_weighted.append((n, c))
    prep_rows, prep_weighted = [], []
    for states, (n, first) in sorted(prepare_classes(p).items()):
        c = prepare_counts_at(p, first) + prep_extra
        prep_rows.append({"layers": states, "leaves": sum(1 for s in states if s == 2), "indices": n,
                          "example_index": first, "ms": price(c, means), "counts": c})
        prep_weighted.append((n, c))
    sign_avg = _avg_counts(sign_weighted)
    prep_avg = _avg_counts(prep_weighted) if prep_weighted else Counter()
    best_s = min(sign_rows, key=lambda r: r["ms"])
    worst_s = max(sign_rows, key=lambda r: r["ms"])
    # Preparation's best case is taken in the steady state (at least one leaf due); the
    # idle preparations at the very end of the key's life would make it trivially zero.
    busy = [r for r in prep_rows if r["leaves"] > 0] or prep_rows or [{"ms": 0.0, "counts": Counter()}]
    best_p = min(busy, key=lambda r: r["ms"])
    worst_p = max(busy, key=lambda r: r["ms"])
    return Analysis(
        params=p, profile=profile.name,
        sign_ms=Stats(float(best_s["ms"]), float(price(sign_avg, means)), float(worst_s["ms"])),
        prepare_ms=Stats(float(best_p["ms"]), float(price(prep_avg, means)), float(worst_p["ms"])),
        sign_classes=sign_rows, prepare_classes=prep_rows,
        sign_counts={"best": best_s["counts"], "avg": sign_avg, "worst": worst_s["counts"]},
        prepare_counts={"best": best_p["counts"], "avg": prep_avg, "worst": worst_p["counts"]},
    )


def sensitivity(a: Analysis, profile: Profile, rel: float = 0.10) -> list[dict]:
    """Change of each figure when one component's mean moves by ±rel (exact: time is linear)."""
    rows = []
    for comp in list(COMPONENTS) + [LINK]:
        mean = profile.mean(comp) if comp != LINK else 1.0  # link time: counted in ms already
        row = {"component": "link" if comp == LINK else comp, "mean": mean if comp != LINK else None}
        for what, counts in (("sign", a.sign_counts), ("prepare", a.prepare_counts)):
            for case in ("best", "avg", "worst"):
                row[f"{what}_{case}_ms_per_10pct"] = float(counts[case].get(comp, 0.0) * mean * rel)
        rows.append(row)
    return rows


PERSISTENT = "persistent memory"
NVM_COMPONENTS = ("nvm_read_call", "nvm_read_byte", "nvm_write_call", "nvm_write_byte", "nvm_tx_call", "nvm_tx_byte")


def drivers(a: Analysis, profile: Profile, rel: float = 0.10) -> list[dict]:
    """The assumptions that drive the figures: hash_call (the anchor), the APDU cost, persistent memory.

    Per assumption and step (sign/prepare, best/avg/worst): how many times it
    is charged, the seconds and share of the figure it accounts for, and the
    change when it moves by ``rel``. For the APDU cost also the other reading
    of the link: extended vs short (<= 256-byte) responses.
    """
    means = _means(profile)
    out = []
    for comp in ("hash_call", "apdu", PERSISTENT):
        parts = NVM_COMPONENTS if comp == PERSISTENT else (comp,)
        row: dict = {"component": comp, "mean_ms": means[comp] if comp in means else None,
                     "provenance": "; ".join(f"{c}: {profile[c].provenance.describe()}" for c in parts)}
        for what, counts, stats in (("sign", a.sign_counts, a.sign_ms), ("prepare", a.prepare_counts, a.prepare_ms)):
            for case in ("best", "avg", "worst"):
                ms = sum(float(counts[case].get(c, 0.0)) * means[c] for c in parts)
                # the count: calls (APDUs, hash calls; for persistent memory its reads and writes)
                n = sum(float(counts[case].get(c, 0.0)) for c in parts if c.endswith("_call") or c == "apdu")
                total = getattr(stats, case)
                row[f"{what}_{case}"] = {"count": n, "ms": ms, "share": ms / total if total else 0.0,
                                         "ms_per_rel": ms * rel}
        out.append(row)
    return out


def response_alternative(p: XMSSParams, profile: Profile) -> dict:
    """Signature exchanges under each response reading and what each adds to the eight-exchange figure."""
    means = _means(profile)
    return {"extended_exchanges": STAGES, "short_exchanges": short_response_exchanges(p),
            "applet_exchanges": applet_exchanges(p),
            "short_extra_ms": price(short_response_extra(p), means),
            "applet_extra_ms": price(applet_extra(p), means),
            "applet_prepare_extra_ms": price(applet_prepare_extra(), means),
            "signature_bytes": p.signature_bytes}


# ---- the paper's two stated figures (33 s anchor, ~1 min check), as the applet's operation counts

def wots_signature_counts(p: XMSSParams, responses: str = DEFAULT_RESPONSES) -> Counter:
    """A WOTS+ signature on the card: key derivation, chains (expected steps), its responses.

    ``extended``: our eight stages; ``short`` and ``applet``: 256-byte responses
    (9 for l = 67), the published applet also updating its persistent signing
    state with each (see :data:`RESPONSES`).
    """
    if responses not in RESPONSES:
        raise TrustlabError(f"responses must be one of {', '.join(RESPONSES)}, got {responses!r}")
    meter = CardMeter()
    hs = Hasher(meter)
    adrs = Address()
    sk = wots.secret_key(hs, p, bytes(p.n), bytes(p.n), adrs)
    wots.sign(hs, p, os.urandom(p.n), sk, bytes(p.n), adrs)
    if responses == "extended":  # each stage's share of the chains goes out in one response
        sizes = [len(stage_chains(p, stage)) * p.n for stage in range(STAGES)]
    else:
        total = p.wots_sig_bytes
        sizes = [min(APPLET_RESPONSE, total - off) for off in range(0, total, APPLET_RESPONSE)]
    for nbytes in sizes:
        if responses == "applet":
            meter.nvm_write(STATE_FIELD_BYTES)  # signingState++ (a persistent short)
        meter.apdu(DEFAULT_LINK.exchange_ms(9, nbytes))
    return _adjust_steps(meter.snapshot(), expected_sign_steps(p), step_counts(p))


def wots_keygen_counts(p: XMSSParams, responses: str = DEFAULT_RESPONSES) -> Counter:
    """A WOTS+ key generation as the preparation step does it (PREPARE with one leaf due)."""
    q = p if p.d > 1 else XMSSParams(2, 2, p.w)  # a single tree has no preparation step; borrow one
    return prepare_counts_at(q, 1) + response_extra(q, responses)[1]  # after signature 1 one leaf is due


# ---- what one preparation computes, ours beside the published applet's

PUBLISHED_APPLET = "github.com/joostrijneveld/javacard-xmss, xmss/smartcard/applet/XMSS.java"


def _hash_ms(calls: float, blocks: float, means: dict[str, float]) -> float:
    return calls * means["hash_call"] + blocks * means["hash_block"]


def prepare_work(p: XMSSParams, counts: Counter, profile: Profile) -> list[dict]:
    """A one-leaf preparation split by what it computes, and the published applet's count of the same.

    ``counts``: the model's counts of that preparation (:attr:`Analysis.prepare_counts` ``["best"]``).
    Rows: the WOTS+ chains (``l·(w−1)`` F, each with two PRF calls for its key and mask and an
    ``n``-byte XOR in bytecode), the chain seeds, the L-tree (``l−1`` H, each with three PRF calls
    and a ``2n``-byte XOR), persistent memory and the command. Why: the excerpt says the
    best-case preparation "requires one WOTS+ key generation, which requires approximately a
    minute"; a WOTS+ key generation proper is the chains and their seeds (the public key is the
    ``l`` chain ends), and the L-tree compresses it into the XMSS leaf the preparation stores.

    The published applet's column counts its ``signPrepNext`` (one ``WOTSLeafGen`` in the best
    case): ``WOTSGetSeed`` (one PRF over ``3n`` bytes) then ``l`` ``WOTSComputeChainseed`` PRFs over
    ``3n`` bytes where our applet runs ``l`` SP 800-208 PRF_keygen over ``4n``; the same chains
    and L-tree; the leaf written by ``doFinal`` straight into the persistent ``nodes`` array (one
    non-atomic ``n``-byte write) and ``signingState = 0`` (one atomic ``short`` update); one APDU.
    No tree-hash nodes, authentication-path updates or transactions: its authentication paths are
    rehashed from the stored leaves at signing time (``authAndRoot``).
    """
    means = _means(profile)
    n, f_calls, h_calls = p.n, float(counts.get("calls:F", 0)), float(counts.get("calls:H", 0))
    keygen = float(counts.get("calls:PRF_keygen", 0))
    f_blocks, h_blocks = sha256_blocks(3 * n), sha256_blocks(4 * n)
    prf_blocks, keygen_blocks = sha256_blocks(3 * n), sha256_blocks(4 * n)
    chains = _hash_ms(f_calls * 3, f_calls * (f_blocks + 2 * prf_blocks), means) + f_calls * n * means["ram_byte"]
    ltree = _hash_ms(h_calls * 4, h_calls * (h_blocks + 3 * prf_blocks), means) + h_calls * 2 * n * means["ram_byte"]
    seeds = _hash_ms(keygen, keygen * keygen_blocks, means)
    nvm = sum(float(counts.get(c, 0.0)) * means[c] for c in NVM_COMPONENTS)
    command = float(counts.get("apdu", 0)) * means["apdu"] + float(counts.get(LINK, 0.0))
    published_seeds = _hash_ms(p.wots_len + 1, (p.wots_len + 1) * sha256_blocks(3 * n), means)
    leaf_write = CardMeter()
    leaf_write.nvm_write(n, atomic=False)
    published_nvm = price(leaf_write.snapshot() + _atomic_state_writes(1), means)
    nvm_ops = {c: int(counts.get(c, 0)) for c in ("nvm_read_call", "nvm_write_call", "nvm_tx_call")}
    return [
        {"work": "WOTS+ chains", "ours": f"{f_calls:.0f} F + {2 * f_calls:.0f} PRF, {f_calls * n:.0f} B XOR",
         "ours_ms": chains, "published": "same (WOTSChain, hashf)", "published_ms": chains,
         "wots_keygen": True},
        {"work": "chain seeds", "ours": f"{keygen:.0f} PRF_keygen ({4 * n} B)", "ours_ms": seeds,
         "published": f"1 + {p.wots_len} PRF ({3 * n} B; WOTSGetSeed, WOTSComputeChainseed)",
         "published_ms": published_seeds, "wots_keygen": True},
        {"work": "L-tree", "ours": f"{h_calls:.0f} H + {3 * h_calls:.0f} PRF, {h_calls * 2 * n:.0f} B XOR",
         "ours_ms": ltree, "published": "same (WOTSLeafGen's treehash)", "published_ms": ltree,
         "wots_keygen": False},
        {"work": "persistent memory",
         "ours": f"{nvm_ops['nvm_read_call']} reads, {nvm_ops['nvm_write_call']} writes, "
                 f"{nvm_ops['nvm_tx_call']} atomic", "ours_ms": nvm,
         "published": f"leaf: 1 non-atomic {n} B write (doFinal into nodes); signingState: 1 atomic",
         "published_ms": published_nvm, "wots_keygen": False},
        {"work": "command", "ours": f"{int(counts.get('apdu', 0))} APDU", "ours_ms": command,
         "published": "1 APDU (SIGN_PREP, no data)", "published_ms": command, "wots_keygen": False},
    ]

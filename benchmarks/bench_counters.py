"""Virtual counters at scale: Merkle update rate, end-to-end ops/s, 2^20 counters x 10^6 requests,
and the adversarial sweep (thousands of tampered answers, none accepted, no honest one refused).

Figures (ratios are measured within this run, so they compare across machines):

* ``merkle``: host sparse-tree updates/s at depth 20 (single updates and
  batches of 1000) against this machine's raw SHA-256 rate (hashlib, one
  41-byte node per call) divided by the depth; target ratio >= 0.5.
* ``end_to_end``: counter operations/s with a real AIK signature and a real
  independent verification per operation (hash-tree at 2^20 counters, log-based
  at 1024), and simulated TPM seconds per wall second.
* ``scale``: the hash-tree scheme with 2^20 counters and a 10^6-request YCSB
  scrambled-Zipf workload (``--quick``: 2x10^4). Every request runs through the
  TPM engine (path check + root update); the AIK signs every 1000th request
  (batch attestation, ``attest_every``) because 10^6 RSA-2048 signatures are
  ~7 minutes of pure OpenSSL time here; the model accounts for exactly that.
* ``adversarial``: seeded random tampering of log-based and hash-tree answers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import statistics
import sys
import time

from trustlab.apps import workloads as w
from trustlab.apps.counters import schemes
from trustlab.apps.counters.base import Answer, VerificationError
from trustlab.apps.counters.hashtree import new_tree
from trustlab.apps.counters.runner import run as run_requests, summarize
from trustlab.devices.tpm12 import merkle
from trustlab.timing import registry

PROFILE = "atmel-counters-2010"


def merkle_rates(quick: bool) -> dict:
    """Alternating rounds (single updates, batched updates, raw SHA-256) so load drift cancels."""
    depth, rounds, per_round = 20, 6 if quick else 30, 5000
    count = rounds * per_round
    ids = w.zipf_ycsb(1 << depth, count, seed=1, scrambled=True).tolist()
    values = [merkle.encode_value(v) for v in range(16)]
    single_tree, batched_tree = new_tree(depth), new_tree(depth)
    x = b"\x01" + os.urandom(40)
    sha256 = hashlib.sha256
    single_r, batched_r, sha_r, ratios_single, ratios_batched = [], [], [], [], []
    for r in range(rounds):
        chunk = ids[r * per_round:(r + 1) * per_round]
        start = time.perf_counter()
        for k, i in enumerate(chunk):
            single_tree.set(i, values[k & 15])
        single = per_round / (time.perf_counter() - start)
        start = time.perf_counter()
        for b in range(0, per_round, 1000):
            batched_tree.set_many({i: values[k & 15] for k, i in enumerate(chunk[b:b + 1000], start=b)})
        batched = per_round / (time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(20 * per_round):
            sha256(x).digest()
        sha = 20 * per_round / (time.perf_counter() - start)
        single_r.append(single)
        batched_r.append(batched)
        sha_r.append(sha)
        ratios_single.append(single / (sha / depth))
        ratios_batched.append(batched / (sha / depth))
    engine_tree = merkle.SparseMerkleTree(depth)
    n_engine = min(count, 20_000)
    start = time.perf_counter()
    for k, i in enumerate(ids[:n_engine]):
        engine_tree.update(i, merkle.leaf_hash(values[k & 15]))
    engine = n_engine / (time.perf_counter() - start)
    med = statistics.median
    return {"depth": depth, "updates": count, "rounds": rounds, "sha256_per_s": med(sha_r),
            "sha256_per_s_over_depth": med(sha_r) / depth,
            "single_updates_per_s": med(single_r), "single_ratio": med(ratios_single),
            "batched_updates_per_s": med(batched_r), "batched_ratio": med(ratios_batched),
            "engine_merkle_updates_per_s": engine, "target_ratio": 0.5}


def end_to_end(quick: bool) -> dict:
    profile = registry.load(PROFILE)
    out = {}
    for scheme, n, ops in (("hashtree", 1 << 20, 200 if quick else 2000), ("log", 1024, 100 if quick else 1000)):
        built = schemes.build(scheme, profile, n, seed=1)
        reqs = w.make_requests(w.counter_ids("zipf", n, ops, seed=1, zipf_mode="scrambled"), "increment")
        start = time.perf_counter()
        records = run_requests(built, reqs, seed=1)
        wall = time.perf_counter() - start
        row = summarize(records, scheme=scheme, op="increment", profile=profile.name, counters=n)
        out[scheme] = {"counters": n, "ops": ops, "ops_per_s": ops / wall, "wall_s": wall,
                       "simulated_s": row["total_s"], "simulated_s_per_wall_s": row["total_s"] / wall}
    return out


def scale(quick: bool) -> dict:
    profile = registry.load(PROFILE).without_spread()
    n, requests, k = 1 << 20, 20_000 if quick else 1_000_000, 1000
    built = schemes.build("hashtree", profile, n, seed=1, attest_every=k)
    ids = w.zipf_ycsb(n, requests, seed=1, scrambled=True)
    reqs = w.make_requests(ids, "increment")
    start = time.perf_counter()

    def progress(i: int) -> None:
        if i and i % 50_000 == 0:
            print(f"  scale: {i} requests, {i / (time.perf_counter() - start):.0f}/s", file=sys.stderr)

    records = run_requests(built, reqs, seed=1, progress=progress)
    wall = time.perf_counter() - start
    row = summarize(records, scheme="hashtree", op="increment", profile=profile.name, counters=n)
    gaps = w.gap_stats(ids)
    return {"counters": n, "requests": requests, "attest_every": k, "wall_s": wall,
            "requests_per_s": requests / wall, "simulated_s": row["total_s"], "model_s": row["model_s"],
            "model_equals_simulation": abs(row["total_s"] - row["model_s"]) <= 1e-9 * row["model_s"],
            "distinct_counters": gaps.distinct_counters, "max_gap": gaps.max,
            "tree_nodes_stored": built.prover.tree.stored_nodes()}


def _flip(b: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(b))
    return b[:i] + bytes([b[i] ^ (1 << rng.randrange(8))]) + b[i + 1:]


def adversarial(quick: bool) -> dict:
    """Seeded random tampering; every tampered answer must be refused, no honest one."""
    rng = random.Random(7)
    profile = registry.load(PROFILE).without_spread()
    cases = 500 if quick else 5000
    stats = {"cases": 0, "refused": 0, "tampered_accepted": 0, "honest_checked": 0, "honest_refused": 0,
             "reasons": {}}

    def refused(fn, *args) -> bool:
        try:
            fn(*args)
        except VerificationError as e:
            stats["reasons"][e.reason] = stats["reasons"].get(e.reason, 0) + 1
            return True
        return False

    log = schemes.build("log", profile, 16, seed=2)
    tree = schemes.build("hashtree", profile, 64, seed=2)
    for built, n in ((log, 16), (tree, 64)):
        for _ in range(40):
            built.prover.increment(rng.randrange(n), os.urandom(20))
    for case in range(cases):
        built, n = (log, 16) if case % 2 else (tree, 64)
        c, nonce = rng.randrange(n), os.urandom(20)
        op = rng.choice(["read", "increment"])
        ans = built.prover.read(c, nonce) if op == "read" else built.prover.increment(c, nonce)
        check = built.verifier.check_read if op == "read" else built.verifier.check_increment
        stats["honest_checked"] += 1
        if refused(check, ans, c, nonce):
            stats["honest_refused"] += 1
        ev = ans.evidence
        kind = rng.choice(["nonce", "counter", "forge", "value"] + (["drop", "reorder", "foreign-own"]
                                                                   if built is log and op == "read" else [])
                          + (["sibling", "root"] if built is tree else []))
        bad_c, bad_nonce = c, nonce
        if kind == "nonce":
            bad_nonce = os.urandom(20)
        elif kind == "counter":
            bad_c = (c + rng.randrange(1, n)) % n
        elif kind == "value":
            ans = Answer(c, ans.value + rng.choice([-2, -1, 1, 2]), ev, nonce)
        elif kind == "forge":
            target = ev.clock if built is log and op == "read" else ev
            forged = dataclasses.replace(target, signature=_flip(target.signature, rng))
            ev = dataclasses.replace(ev, clock=forged) if target is not ev else forged
            ans = Answer(c, ans.value, ev, nonce)
        elif kind in ("drop", "reorder"):
            since = list(ev.since)
            if len(since) < 2:
                continue
            if kind == "drop":
                since.pop(rng.randrange(len(since)))
            else:
                i, j = rng.sample(range(len(since)), 2)
                since[i], since[j] = since[j], since[i]
            ans = Answer(c, ans.value, dataclasses.replace(ev, since=tuple(since)), nonce)
        elif kind == "foreign-own":
            others = [x for x in built.prover.certs.values() if x.counter != c]
            ans = Answer(c, ans.value, dataclasses.replace(ev, own=rng.choice(others)), nonce)
        elif kind == "sibling":
            sib = list(ev.siblings)
            i = rng.randrange(len(sib))
            sib[i] = _flip(sib[i], rng)
            ans = Answer(c, ans.value, dataclasses.replace(ev, siblings=tuple(sib)), nonce)
        elif kind == "root":
            ans = Answer(c, ans.value, dataclasses.replace(ev, root=os.urandom(20)), nonce)
        stats["cases"] += 1
        if refused(check, ans, bad_c, bad_nonce):
            stats["refused"] += 1
        else:
            stats["tampered_accepted"] += 1
    return stats


def run(quick: bool) -> dict:
    figures = {"merkle": merkle_rates(quick), "end_to_end": end_to_end(quick),
               "adversarial": adversarial(quick)}
    figures["scale"] = scale(quick)
    return figures

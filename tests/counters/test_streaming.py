"""Counters at scale keep little in memory (issue 15): streamed requests, records on disk, same results."""

from __future__ import annotations

import pytest

from trustlab.apps import workloads as w
from trustlab.apps.counters import schemes
from trustlab.apps.counters.hashtree import new_tree
from trustlab.apps.counters.runner import OpRecord, Records, run, summarize
from trustlab.devices.tpm12 import merkle
from trustlab.timing import registry


@pytest.mark.parametrize("op,fraction", [("increment", None), ("read", None), ("increment", 0.3)])
def test_request_stream_is_make_requests(op, fraction):
    ids = w.counter_ids("zipf", 64, 200, seed=4)
    stream = w.RequestStream(ids, op, fraction, seed=9)
    listed = w.make_requests(ids, op, fraction, seed=9)
    assert list(stream) == listed == list(stream)  # re-iterable
    assert len(stream) == len(listed)


def test_records_round_trip_through_the_spool():
    recs = Records()
    rows = [OpRecord(i, i * 3, "read" if i % 3 else "increment", i % 7, 1.5 * i, None if i % 5 == 0 else 2.0 * i,
                     0.25, None) for i in range(10_000)]
    for r in rows:
        recs.append(r)
    assert len(recs) == len(rows) and list(recs) == rows
    assert recs[0] == rows[0] and recs[-1] == rows[-1] and recs[4096:4099] == rows[4096:4099]
    it = iter(recs)
    next(it)
    assert recs[7] == rows[7] and next(it) == rows[1]  # an index read does not disturb an iteration
    cols = recs.columns("read")
    assert list(cols["ms"]) == [r.ms for r in rows if r.op == "read"]


def test_summary_of_spooled_records_equals_the_list_summary():
    profile = registry.load("atmel-counters-2010")
    built = schemes.build("hashtree", profile, 256, seed=2)
    reqs = w.RequestStream(w.counter_ids("zipf", 256, 300, seed=2), "read")
    records = run(built, reqs, seed=2)
    built.close()
    as_list = list(records)
    for op in ("read", "increment"):
        kw = dict(scheme="hashtree", op=op, profile=profile.name, counters=256)
        assert summarize(records, **kw) == summarize(as_list, **kw)
    assert summarize(records, scheme="hashtree", op="read", profile=profile.name, counters=256)["requests"] == 300


def test_dense_tree_leaves_and_snapshots():
    t = new_tree(5)
    t.set(3, merkle.encode_value(7))
    snap = t.snapshot()
    t.set(3, merkle.encode_value(9))
    assert t.leaf(3) == merkle.encode_value(9) and t.leaf(4) == merkle.encode_value(0)
    t.restore(snap)
    assert t.leaf(3) == merkle.encode_value(7)
    assert t.root == new_tree(5).set(3, merkle.encode_value(7))
    t.set(2, b"longer leaf data")  # another width: kept aside, still hashed into the tree
    assert t.leaf(2) == b"longer leaf data"


def test_going_dense_midway_changes_nothing(monkeypatch):
    """Tree nodes, leaves and per-counter state move from dicts to flat arrays after many writes."""
    import random

    from trustlab.apps.counters.tree import SparseTree

    def run_with(threshold: int):
        monkeypatch.setattr(merkle, "DENSIFY_AT", threshold)
        built = schemes.build("hashtree", registry.load("atmel-counters-2010").without_spread(), 512, seed=5,
                              attest_every=7)
        records = run(built, w.RequestStream(w.counter_ids("uniform", 512, 400, seed=5), "read"), seed=5)
        tree = built.prover.tree
        state = (tree.root, [tree.leaf(i) for i in range(512)], [tree.siblings(i) for i in (0, 77, 511)],
                 [built.prover.updates_since(i) for i in range(512)], list(records))
        built.close()
        return state, tree, built.prover

    dense, tree, prover = run_with(40)
    assert tree._store.dense and tree._leafbuf is not None and not isinstance(prover.last, dict)
    sparse, tree, prover = run_with(1 << 30)
    assert not tree._store.dense and isinstance(prover.last, dict)
    assert dense == sparse
    rng = random.Random(1)
    plain = SparseTree(9, lambda d: merkle.leaf_hash(d), lambda l, r: merkle.node_hash(l, r), merkle.encode_value(0))
    monkeypatch.setattr(merkle, "DENSIFY_AT", 30)
    t = new_tree(9)
    for _ in range(200):
        i, v = rng.randrange(512), merkle.encode_value(rng.randrange(1 << 40))
        assert t.set(i, v) == plain.set(i, v)
    assert t._store.dense and t.siblings(5) == plain.siblings(5) and t.leaf(5) == plain.leaf(5)


def test_vectorised_increment_gaps_equal_the_loop():
    import numpy as np

    def loop(ids):
        last, gaps = {}, []
        for t, c in enumerate(int(i) for i in ids):
            if c in last:
                gaps.append(t - last[c] - 1)
            last[c] = t
        return gaps

    for n, k in ((0, 1), (1, 1), (2, 1), (300, 7), (2000, 10_000)):
        ids = np.random.default_rng(n + k).integers(0, k, n)
        assert w.increment_gaps(ids).tolist() == loop(ids) == w.increment_gaps(list(ids)).tolist()


def test_last_values_keep_what_does_not_fit_32_bits(monkeypatch):
    from trustlab.apps.counters.runner import _LastValues

    monkeypatch.setattr(merkle, "DENSIFY_AT", 4)
    lv = _LastValues(100)
    for c in range(10):
        lv.set(c, c)
    lv.set(3, 1 << 40)
    lv.set(99, 0)
    assert [lv.get(c) for c in range(10)] == [0, 1, 2, 1 << 40, 4, 5, 6, 7, 8, 9]
    assert lv.get(50) is None and lv.get(99) == 0
    lv.set(3, 5)
    assert lv.get(3) == 5

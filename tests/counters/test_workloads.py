"""Workload generators: exact sequences, seeded reproducibility, gap statistics."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from trustlab.apps import workloads as w
from trustlab.errors import TrustlabError


def test_round_robin_wraps():
    assert w.round_robin(3, 7).tolist() == [0, 1, 2, 0, 1, 2, 0]


@pytest.mark.parametrize("gen", [
    lambda s: w.uniform(64, 500, seed=s),
    lambda s: w.zipf_bounded(64, 500, seed=s),
    lambda s: w.zipf_bounded(64, 500, rho=0.5, seed=s),
    lambda s: w.zipf_ycsb(64, 500, seed=s),
    lambda s: w.zipf_ycsb(64, 500, seed=s, scrambled=True),
])
def test_seeded_and_in_range(gen):
    a, b, c = gen(1), gen(1), gen(2)
    assert a.tolist() == b.tolist()
    assert a.tolist() != c.tolist()
    assert a.min() >= 0 and a.max() < 64


def test_bounded_zipf_matches_its_pmf():
    n, draws = 16, 200_000
    ids = w.zipf_bounded(n, draws, rho=1.0, seed=3)
    freq = np.bincount(ids, minlength=n) / draws
    pmf = w.zipf_pmf(n, 2.0)
    assert np.allclose(freq, pmf, atol=0.005)
    assert pmf[0] / pmf[1] == pytest.approx(4.0)  # k^-(rho+1) with rho = 1


def test_ycsb_zipf_head_probability():
    # YCSB returns rank 0 exactly when u * zeta(n) < 1, i.e. with probability 1/zeta(n)
    n, draws = 1000, 200_000
    ids = w.zipf_ycsb(n, draws, seed=5)
    zetan = sum(i ** -0.99 for i in range(1, n + 1))
    assert np.mean(ids == 0) == pytest.approx(1 / zetan, abs=0.004)
    assert np.mean(ids == 1) == pytest.approx(0.5 ** 0.99 / zetan, abs=0.004)


def _fnv_reference(v: int) -> int:
    h = 0xCBF29CE484222325
    for _ in range(8):
        h = ((h ^ (v & 0xFF)) * 1099511628211) & (2 ** 64 - 1)
        v >>= 8
    return abs(h - 2 ** 64 if h >= 2 ** 63 else h)


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=0, max_value=2 ** 40))
def test_fnv_matches_ycsb_java_semantics(v):
    assert int(w.fnv1_64(np.array([v]))[0]) == _fnv_reference(v)


def test_scrambled_spreads_the_hot_keys():
    ids = w.zipf_ycsb(1024, 50_000, seed=7, scrambled=True)
    hottest = int(np.bincount(ids).argmax())
    assert hottest == _fnv_reference(0) % 1024  # YCSB rank 0 hashed into the key space


def test_zeta_tail_approximation():
    exact = float(np.sum(np.arange(1, 3_000_001, dtype=np.float64) ** -0.8))
    assert w._zeta(3_000_000, 0.8) == pytest.approx(exact, rel=1e-9)


def test_paper_table_ii_gaps():
    # paper Sec. III-B1: INC VC4 VC2 VC4 VC1 VC3 VC2 VC2 VC4 VC1 VC4, then READ
    seq = [4, 2, 4, 1, 3, 2, 2, 4, 1, 4]
    reqs = [w.Request(c, w.INCREMENT) for c in seq] + [w.Request(3, w.READ), w.Request(1, w.READ)]
    gaps = w.update_gaps(reqs)
    assert gaps[-2] == 5  # VC3 = 5: certificates for steps 6..10 besides its own
    assert gaps[-1] == 1  # VC1 = 9: only step 10 (VC4) since
    assert w.increment_gaps(seq).tolist() == [1, 3, 0, 4, 4, 1]


def test_read_pattern_and_mix():
    reqs = w.make_requests([5, 6], w.READ)
    assert [(r.counter, r.op, r.timed) for r in reqs] == [
        (5, "read", True), (5, "increment", False), (6, "read", True), (6, "increment", False)]
    mix = w.make_requests(range(1000), "increment", read_fraction=0.3, seed=1)
    assert 0.25 < sum(r.op == w.READ for r in mix) / 1000 < 0.35
    with pytest.raises(TrustlabError, match="unknown operation"):
        w.make_requests([1], "write")


def test_gap_stats():
    s = w.gap_stats([0, 1, 0, 2, 1, 0])
    assert (s.count, s.max, s.distinct_counters) == (3, 2, 3)


def test_trace_roundtrip_and_errors(tmp_path):
    reqs = [w.Request(1, w.INCREMENT), w.Request(2, w.READ)]
    p = tmp_path / "t.trace"
    w.save_trace(reqs, p)
    assert w.load_trace(p) == reqs
    p.write_text("# comment\nINC, 3\nr 4  # trailing\nfrob 1\n")
    with pytest.raises(TrustlabError, match=r"t.trace:4: unknown operation 'frob'"):
        w.load_trace(p)
    p.write_text("read x\n")
    with pytest.raises(TrustlabError, match=r":1: counter must be an integer"):
        w.load_trace(p)
    p.write_text("read 9\n")
    with pytest.raises(TrustlabError, match=r"outside 0..7"):
        w.load_trace(p, n=8)
    with pytest.raises(TrustlabError, match="cannot read trace"):
        w.load_trace(tmp_path / "missing")


def test_bad_parameters():
    with pytest.raises(TrustlabError, match="positive integer"):
        w.round_robin(0, 5)
    with pytest.raises(TrustlabError, match="rho must be positive"):
        w.zipf_bounded(8, 5, rho=-1)
    with pytest.raises(TrustlabError, match="unknown workload"):
        w.counter_ids("pareto", 8, 5)

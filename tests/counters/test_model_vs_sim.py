"""The simulation equals the paper's model exactly when the profile has no spread."""

import pytest

from trustlab.apps import workloads as w
from trustlab.apps.counters import model as M
from trustlab.apps.counters import schemes
from trustlab.apps.counters.runner import run, summarize
from trustlab.timing import registry

PROFILES = ["atmel-counters-2010", "infineon-counters-2010", "stm-counters-2010", "winbond-counters-2010"]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("scheme", ["log", "hashtree"])
def test_round_robin_and_zipf_equal_model(profile, scheme):
    p = registry.load(profile).without_spread()
    for workload, op, n, r in (("roundrobin", "increment", 8, 8), ("zipf", "read", 16, 40)):
        built = schemes.build(scheme, p, n, seed=3)
        reqs = w.make_requests(w.counter_ids(workload, n, r, seed=3), op)
        row = summarize(run(built, reqs, seed=3), scheme=scheme, op=op, profile=profile, counters=n)
        assert row["total_s"] == pytest.approx(row["model_s"], rel=1e-12, abs=1e-12)
        assert row["requests"] == r


def test_profile_spread_moves_simulation_not_model():
    p = registry.load("atmel-counters-2010")
    assert not p.deterministic
    built = schemes.build("log", p, 4, seed=1)
    row = summarize(run(built, w.make_requests(range(4), "increment")), scheme="log", op="increment",
                    profile=p.name, counters=4)
    assert row["total_s"] != pytest.approx(row["model_s"], rel=1e-6)
    assert row["total_s"] == pytest.approx(row["model_s"], rel=0.25)


def test_tree_hash_blocks_beyond_the_levels_are_the_parameter_digest():
    # Per level the TPM hashes what the paper's formula says (2 log2 nc, log2 nc); the
    # only depth-dependent rest is the input-parameter digest over the 20-byte siblings
    # (TPM_ExecuteHashTree parameters: 69 + 20 d bytes).
    from trustlab.devices.tpm12.primitives import sha1_blocks

    base = schemes.hash_blocks("hashtree", 1)
    for d in (2, 4, 11, 20):
        extra = sha1_blocks(69 + 20 * d) - sha1_blocks(69 + 20)
        got = schemes.hash_blocks("hashtree", d)
        assert {k: v - extra for k, v in got.items()} == base


def test_paper_worked_example_log_read_atmel():
    # Sec. V-B: 1024 * (0.060 + 0.041 + 0.8) = 922.624 s with |Ut| = 1, Thv ~ 0
    t = M.Terms.from_profile(registry.load("atmel-counters-2010"))
    total_s = 1024 * M.log_read_ms(t, 1, M.Accounting.paper()) / 1000
    assert total_s == pytest.approx(922.624, abs=0.05)


def test_paper_formulas_structure():
    t = M.Terms(Tth=1, Tts=100, Tti=10, Ttr=3, Ttt=5, Thv=0.5, Thh=0.1)
    paper = M.Accounting.paper()
    assert M.log_increment_ms(t, paper) == 1 + 100 + 10 + 5
    assert M.log_read_ms(t, 4, paper) == 4 * 0.5 + 3 + 5 + 100
    assert M.tree_increment_ms(t, 10, paper) == 20 + 100
    assert M.tree_read_ms(t, 10, paper) == 10 + 100
    assert M.tree_attestation_bytes(1024) == 8 + 10 * 20 + 256
    assert M.log_attestation_bytes(3) == 3 * 276

"""The drawn TPM command price reads memoised per-run and per-quantile figures: it must give the very floats
of pricing every draw from scratch (the drawn counts through compute_ms, the same generator calls in order)."""

import random

import pytest

from trustlab.devices.tpm2.pqc_model import cost, counts, estimate
from trustlab.timing import registry


def _from_scratch(profile, algorithm, operation, in_bytes, rng):
    """(keccak ms, arith ms) of one draw, with the generator calls operation_cost makes before its bus draw."""
    pqc = cost.unit_costs(profile)
    index = rng.randrange(len(pqc["pqc_keccak_f1600"].samples) or 1)
    u_protect = rng.random()
    spec = cost._protection_spec(profile.name)
    keccak = arith = 0.0
    for raw in estimate.plan(algorithm, operation):
        units = dict(counts.draw(algorithm, raw, rng))
        if raw == operation:
            units["keccak_f1600"] = units.get("keccak_f1600", 0) + cost.extra_message_permutations(
                algorithm, raw, in_bytes)
        factor = estimate.protection_factor(spec, algorithm, raw, u_protect, True)
        ms = cost.compute_ms(pqc, algorithm, units, index)
        keccak += ms["pqc_keccak"] * factor
        arith += ms["pqc_arith"] * factor
    rng.randrange(len(pqc["pqc_bus_byte"].samples) or 1)
    cost._pick(profile["ohc"], None, rng)
    return keccak, arith


@pytest.mark.parametrize("algorithm,operation", [("ML-DSA-65", "sign"), ("ML-KEM-768", "decapsulate"),
                                                 ("ML-DSA-44", "create"), ("ML-KEM-1024", "load")])
def test_memoised_draws_equal_pricing_each_draw_from_scratch(algorithm, operation):
    profile = registry.load("st-st33ktpm2xspi-wolftpm")
    a, b = random.Random(5), random.Random(5)
    for _ in range(30):
        got = cost.operation_cost(profile, algorithm, operation, in_bytes=300, out_bytes=100, rng=a)
        assert (got["pqc_keccak"], got["pqc_arith"]) == _from_scratch(profile, algorithm, operation, 300, b)
    assert a.random() == b.random()  # both generators took the same calls

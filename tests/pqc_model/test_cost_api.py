"""The pricing API the TPM 2.0 PQC handlers call (contract in COMMON.md)."""

import random

import pytest

from trustlab.devices.tpm2.pqc_model.cost import operation_cost
from trustlab.devices.tpm2.pqc_model.params import ALGORITHMS, KEM_OPERATIONS, DSA_OPERATIONS
from trustlab.errors import TrustlabError
from trustlab.timing import registry


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_operation_is_priced(algorithm):
    profile = registry.load("st-st33ktpm2xspi-wolftpm")
    ops = KEM_OPERATIONS if "KEM" in algorithm else DSA_OPERATIONS
    for op in ops:
        cost = operation_cost(profile, algorithm, op, in_bytes=100, out_bytes=3000, rng=random.Random(1))
        assert cost and all(v >= 0 for v in cost.values())
        assert sum(cost.values()) > 0


def test_bad_algorithm_or_operation_is_one_line_error():
    profile = registry.load("st-st33ktpm2xspi-wolftpm")
    with pytest.raises(TrustlabError, match="unknown post-quantum algorithm"):
        operation_cost(profile, "ML-DSA-99", "sign", in_bytes=0, out_bytes=0, rng=random.Random(0))
    with pytest.raises(TrustlabError, match="has no operation 'sign'"):
        operation_cost(profile, "ML-KEM-768", "sign", in_bytes=0, out_bytes=0, rng=random.Random(0))


@pytest.mark.parametrize("profile_name", ["st-st33ktpm2xspi-wolftpm", "sealsq-qvault-pqc-tpm-wolftpm"])
def test_costs_are_plain_floats(profile_name):
    """serve's realtime trace compares and JSON-encodes them: a numpy scalar (np.bool_ from a comparison)
    made `serve --trace` fail its serving loop on the first post-quantum command."""
    profile = registry.load(profile_name)
    for op, rng in (("sign", random.Random(1)), ("create", random.Random(2)), ("sign", None)):
        cost = operation_cost(profile, "ML-DSA-65", op, in_bytes=80, out_bytes=3400, rng=rng)
        assert all(type(v) is float for v in cost.values()), {k: type(v) for k, v in cost.items()}

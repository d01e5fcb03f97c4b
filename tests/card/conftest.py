"""Shared fixtures for the card tests: a small deterministic card profile."""

from __future__ import annotations

import pytest

from trustlab.timing.profile import Component, Profile, Provenance


def make_profile(**means: float) -> Profile:
    base = {
        "block_encrypt.aes128": 1.0, "block_encrypt.aes128.nvm": 2.0, "block_xor": 0.1,
        "block_xor.nvm": 0.5, "block_copy": 0.05, "block_copy.nvm": 0.2, "block_shift": 0.2,
        "gf_multiply": 10.0, "ram_write_byte": 0.001, "nvm_write_byte": 0.01, "apdu_overhead": 0.5,
    }
    base.update(means)
    prov = Provenance(source="test")
    return Profile("test-card", {k: Component(k, v, provenance=prov) for k, v in base.items()}, family="card")


@pytest.fixture
def card_profile() -> Profile:
    return make_profile()

"""Shared fixtures: an owned TPM 1.2 engine on a deterministic profile."""

from __future__ import annotations

import pytest

from trustlab.devices.tpm12 import MemoryNVStore, Tpm12, secret
from trustlab.devices.tpm12.primitives import KeyPool
from trustlab.timing.clock import Clock
from trustlab.timing.registry import load

OWNER = secret("owner")
SRK = secret("srk")


POOL = KeyPool()


@pytest.fixture(autouse=True)
def _fresh_keys() -> None:
    """Distinct keys within a test, reused across tests (host keygen is slow and beside the point)."""
    POOL.reset()


@pytest.fixture
def clock() -> Clock:
    return Clock(load("infineon-2010"))


@pytest.fixture
def tpm(clock: Clock) -> Tpm12:
    t = Tpm12(clock, nv=MemoryNVStore(), keygen=POOL)
    t.TPM_TakeOwnership(OWNER, SRK)
    return t

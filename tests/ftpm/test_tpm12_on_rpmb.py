"""The TPM 1.2 reference engine on RPMB storage: counters survive injected power loss."""

import pytest

from trustlab.devices.ftpm.blob import RpmbNVStore
from trustlab.devices.ftpm.errors import PowerLoss
from trustlab.devices.ftpm.faults import PowerRail
from trustlab.devices.ftpm.platform import Platform
from trustlab.devices.tpm12 import NVStore, Tpm12, secret
from trustlab.timing.clock import Clock
from trustlab.timing.registry import load

OWNER, SRK, CAUTH = secret("owner"), secret("srk"), secret("counter")


def power_on(platform: Platform, tpm_clock: Clock, rail: PowerRail | None = None) -> Tpm12:
    _, store = platform.boot(rail=rail)
    return Tpm12(tpm_clock, nv=RpmbNVStore(store))


def test_rpmb_store_satisfies_the_engine_interface(clock):
    _, store = Platform(n_blocks=4, clock=clock).boot()
    assert isinstance(RpmbNVStore(store), NVStore)


def test_monotonic_counter_survives_power_loss_at_every_crash_point(clock):
    tpm_clock = Clock(load("sim-2010"))
    platform = Platform(n_blocks=48, clock=clock)
    tpm = power_on(platform, tpm_clock)
    tpm.TPM_TakeOwnership(OWNER, SRK)
    cid, acked = tpm.TPM_CreateCounter(OWNER, CAUTH)
    acked = tpm.TPM_IncrementCounter(cid, CAUTH)
    # how many crash points does one increment pass (TEE driver warm, as in steady use)?
    rail = PowerRail()
    tpm.engine.nv.store.client.os.rail = rail
    acked = tpm.TPM_IncrementCounter(cid, CAUTH)
    points = rail.points
    assert points >= 10  # changed state block(s) and the bit-vector write, each with its result read
    outcomes = {"old": 0, "new": 0}
    for k in range(points):
        tpm.engine.nv.store.client.os.rail = PowerRail(crash_at=k)
        with pytest.raises(PowerLoss):
            tpm.TPM_IncrementCounter(cid, CAUTH)
        tpm = power_on(platform, tpm_clock)  # reboot: a new engine from RPMB
        value = tpm.TPM_ReadCounter(cid)
        assert value in (acked, acked + 1), f"crash point {k}: counter {value}, acknowledged {acked}"
        outcomes["new" if value == acked + 1 else "old"] += 1
        acked = tpm.TPM_IncrementCounter(cid, CAUTH)  # it keeps counting from there
        assert acked == value + 1
    assert power_on(platform, tpm_clock).TPM_ReadCounter(cid) == acked
    assert outcomes["old"] > 0 and outcomes["new"] > 0


def test_replaying_old_frames_cannot_roll_the_counter_back(clock):
    tpm_clock = Clock(load("sim-2010"))
    platform = Platform(n_blocks=48, clock=clock)
    tpm = power_on(platform, tpm_clock)
    tpm.TPM_TakeOwnership(OWNER, SRK)
    cid, _ = tpm.TPM_CreateCounter(OWNER, CAUTH)
    for _ in range(3):
        last = tpm.TPM_IncrementCounter(cid, CAUTH)
    os_ = tpm.engine.nv.store.client.os
    attempts, accepted = os_.replay_all_writes()
    assert attempts > 10 and accepted == 0
    assert power_on(platform, tpm_clock).TPM_ReadCounter(cid) == last

"""More injected faults: crashes in two-level commits, delaying OS, partial frames."""

import pytest
from hypothesis import given, settings, strategies as st

from trustlab.devices.ftpm import DEFAULT_STORAGE_PROFILE
from trustlab.devices.ftpm import rpmb_frame as rf
from trustlab.devices.ftpm.errors import PowerLoss
from trustlab.devices.ftpm.faults import PowerRail
from trustlab.devices.ftpm.ftpm import FirmwareTpm
from trustlab.devices.ftpm.normal_world import OsBehaviour
from trustlab.devices.ftpm.platform import Platform
from trustlab.timing import registry
from trustlab.timing.clock import Clock


def snapshot_contents(store, n):
    return [store.read(i) for i in range(n)]


@settings(max_examples=20, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 23), st.binary(min_size=1, max_size=20)),
                         min_size=1, max_size=6), min_size=1, max_size=4),
       st.integers(0, 80), st.sampled_from([1, 2]))
def test_crash_anywhere_in_random_transactions_recovers_old_or_new(txs, crash_at, levels):
    n = 24
    p = Platform(n_blocks=n, levels=levels, fanout=4 if levels == 2 else None)
    os_, s = p.boot()
    committed = snapshot_contents(s, n)
    os_.rail = PowerRail(crash_at=crash_at)
    crashed = False
    pending = None
    for tx in txs:
        pending = list(committed)
        try:
            s.begin()
            for i, data in tx:
                s.write(i, data)
                pending[i] = data.ljust(len(committed[i]), b"\0")
            s.commit()
        except PowerLoss:
            crashed = True
            break
        committed = pending
    _, s2 = p.boot()
    recovered = snapshot_contents(s2, n)
    if crashed:
        assert recovered in (committed, pending)
    else:
        assert recovered == committed


def test_partial_frame_is_never_acted_upon():
    p = Platform(n_blocks=4)
    os_, s = p.boot()
    with s.transaction():  # warm: block cached, counter known
        s.write(0, b"warm")
    counter = p.device.write_counter
    os_.rail = PowerRail(crash_at=1)  # "mid write request frame 0" of the first write
    s.begin(); s.write(0, b"half")
    with pytest.raises(PowerLoss, match="mid write request"):
        s.commit()
    assert p.device.write_counter == counter


def test_delaying_os_slows_commands_but_cannot_stop_the_secure_clock():
    clock = Clock(registry.load(DEFAULT_STORAGE_PROFILE))
    p = Platform(n_blocks=4, clock=clock)
    beh = OsBehaviour(delay_ms=5000.0)
    _, store = p.boot(behaviour=beh)
    t = FirmwareTpm(store, clock, clock_period_ms=4096)
    t.startup(); t.storage_ready()
    before = t.read_clock()[0]
    t.nv_define_space(7, 8, counter=True)
    with clock.command("measured") as rec:
        t.nv_increment(7)
    assert clock.by_component["os_delay"] >= 5000.0
    assert rec.ms >= 5000.0                        # the delay shows in the command's cost
    after = t.read_clock()[0]
    assert after - before >= 10000                 # the TPM clock kept running through the delays
    assert t.read_clock()[2]                       # and it was persisted (fate sharing satisfied)


def test_held_writes_mean_refusal_not_rollback():
    clock = Clock(registry.load(DEFAULT_STORAGE_PROFILE))
    p = Platform(n_blocks=4, clock=clock)
    beh = OsBehaviour()
    os_, store = p.boot(behaviour=beh)
    t = FirmwareTpm(store, clock)
    t.startup(); t.storage_ready()
    t.nv_define_space(7, 8, counter=True)
    assert t.nv_increment(7) == 1
    beh.hold_writes = True
    from trustlab.devices.ftpm.errors import TpmRefused
    with pytest.raises(TpmRefused, match="NV_UNAVAILABLE"):
        t.nv_increment(7)
    beh.hold_writes = False
    assert t.nv_increment(7) == 2                  # RAM rolled back with the abort; no value skipped
    results = os_.release_held()
    assert results and all(r != rf.RES_OK for r in results)
    _, store = p.boot()
    t = FirmwareTpm(store, clock)
    t.startup()
    assert t.nv_read(7) == (2).to_bytes(8, "big")

"""Exhaustive crash-point testing: power loss at every frame boundary and mid-frame."""

import pytest

from trustlab.devices.ftpm import rpmb_frame as rf
from trustlab.devices.ftpm.atomic_store import AtomicStore, _flip_bit, _get_bit
from trustlab.devices.ftpm.blob import RpmbNVStore
from trustlab.devices.ftpm.crash import make_workload, run_campaign
from trustlab.devices.ftpm.errors import PowerLoss
from trustlab.devices.ftpm.faults import PowerRail
from trustlab.devices.ftpm.platform import Platform


def test_every_crash_point_of_hundreds_of_commands_recovers_old_or_new():
    r = run_campaign(200, seed=7)
    assert r.commands == 200
    assert r.crash_points > 2000
    assert r.torn == 0 and r.lost_committed == 0 and r.rollbacks_accepted == 0
    assert r.recovered_old + r.recovered_new == r.crash_points
    assert r.recovered_new > 0 and r.recovered_old > 0
    assert r.replays_attempted > r.crash_points
    # both kinds of point were exercised: at frame boundaries and mid-frame
    assert any(k.startswith("mid write request") for k in r.points_by_label)
    assert any(k.startswith("before write result-read") for k in r.points_by_label)


def test_two_level_store_survives_every_crash_point_too():
    r = run_campaign(60, seed=4, levels=2)
    assert r.torn == 0 and r.lost_committed == 0 and r.rollbacks_accepted == 0
    assert r.recovered_new > 0


def test_workload_is_deterministic_and_varied():
    a, b = make_workload(300, 1), make_workload(300, 1)
    assert a == b
    assert {op.name for op in a} >= {"TPM2_NV_Write", "TPM2_NV_Increment", "TPM2_Unseal(bad auth)",
                                     "TPM2_NV_DefineSpace", "TPM2_ReadClock", "reboot"}


class InPlaceStore(AtomicStore):
    """A broken store that overwrites committed copies directly (no shadows, no bit flip)."""

    def commit(self):
        pending, self._pending = self._pending, None
        for i, data in sorted(pending.items()):
            copy = _get_bit(self._bits, i)
            self.client.write(self._data_addr(i, copy), [self._seal(i, copy, data)])
        self._committed.update(pending)
        return len(pending)


class RootFirstStore(AtomicStore):
    """A broken store that flips the bit vector before writing the shadows."""

    def commit(self):
        pending, self._pending = self._pending, None
        new_root = bytearray(self._root_bits)
        for i in pending:
            _flip_bit(new_root, i)
        self.client.write(self.base, [self._root_block(self.generation + 1, new_root)])
        for i, data in sorted(pending.items()):
            copy = _get_bit(new_root, i)
            self.client.write(self._data_addr(i, copy), [self._seal(i, copy, data)])
        self.generation += 1
        self._root_bits = new_root
        self._bits = bytearray(new_root[:len(self._bits)])
        self._committed.update(pending)
        return len(pending) + 1


class WriteBackStore(AtomicStore):
    """A broken store that acknowledges commits but keeps them in a RAM cache (write-back)."""

    def commit(self):
        pending, self._pending = self._pending, None
        self._committed.update(pending)
        return 0


@pytest.mark.parametrize("broken", [InPlaceStore, RootFirstStore])
def test_the_harness_catches_a_non_atomic_store(broken):
    """The checker is not vacuous: stores without the shadow/bit-vector protocol tear."""
    r = run_campaign(8, seed=2, store_class=broken)
    assert r.torn > 0


def test_the_harness_catches_lost_acknowledged_commits():
    r = run_campaign(8, seed=2, store_class=WriteBackStore)
    assert r.lost_committed > 0


def test_held_write_survives_a_crash_until_startup_fences_it():
    """A write the OS held back stays valid until the counter moves -- why Startup writes first."""
    p = Platform(n_blocks=4)
    os_, s = p.boot()
    with s.transaction():
        s.write(0, b"committed")
    os_.rail = PowerRail(crash_at=1)  # mid-frame of the first shadow write
    s.begin(); s.write(0, b"pending")
    with pytest.raises(PowerLoss):
        s.commit()
    held = [r for r in p.capture.write_requests if rf.Frame.from_bytes(r[0]).req_resp == rf.REQ_AUTH_WRITE][-1]
    os2, s2 = p.boot()
    assert s2.read(0)[:9] == b"committed"
    # without a fencing write the OS could still deliver the held (never-acknowledged) frame
    snap = p.device.snapshot()
    assert os2.inject(held) == rf.RES_OK
    p.device.restore(snap)
    with s2.transaction():  # any write moves the counter on ...
        s2.write(1, b"fence")
    assert os2.inject(held) == rf.RES_COUNTER_FAILURE  # ... and the held frame is dead


def test_os_refusing_each_write_of_a_commit_never_tears_and_ram_follows_storage(clock):
    from trustlab.devices.ftpm.ftpm import FirmwareTpm
    from trustlab.devices.ftpm.errors import TpmRefused
    from trustlab.devices.ftpm.normal_world import NormalWorld

    p = Platform(n_blocks=8, clock=clock)
    _, s = p.boot()
    t = FirmwareTpm(s, clock)
    t.startup(); t.storage_ready()
    t.nv_define_space(1, 500)
    t.nv_write(1, b"A" * 500)
    before = t.state
    for refuse_nth in range(4):  # three shadow blocks + root
        calls = {"n": 0}
        os_ = t.store.client.os
        original = NormalWorld.rpmb

        def flaky(self, request, response_frames=1, _orig=original):
            if rf.Frame.from_bytes(request[0]).req_resp == rf.REQ_AUTH_WRITE:
                calls["n"] += 1
                if calls["n"] == refuse_nth + 1:
                    from trustlab.devices.ftpm.errors import StorageUnavailable
                    raise StorageUnavailable("refused")
            return _orig(self, request, response_frames)

        os_.rpmb = flaky.__get__(os_)
        with pytest.raises(TpmRefused, match="NV_UNAVAILABLE"):
            t.nv_write(1, b"B" * 500)
        del os_.rpmb
        assert t.state == before                      # RAM rolled back with the abort
        _, s2 = p.boot()
        assert RpmbNVStore(s2).load() == before.encode()  # storage still holds the old state

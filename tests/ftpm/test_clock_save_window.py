"""Storage-cost reps the TPM's periodic clock save falls into are measured again.

libtpms writes its Clock to NV every 4.096 s of real time; a command that
happens to run across that moment would be charged bytes and RPMB frames that
belong to no command, so the flagship's figures would depend on timing luck.
"""

from __future__ import annotations

from types import SimpleNamespace

from trustlab.devices.ftpm import storage_cost


class _FakeTpm:
    """A TPM whose Clock jumps a save window at the given ReadClock calls, and whose image is a counter."""

    def __init__(self, jumps: set[int]) -> None:
        self.jumps, self.reads, self.window, self.state = jumps, 0, 7, 0

    def read_clock(self) -> SimpleNamespace:
        self.reads += 1
        if self.reads in self.jumps:
            self.window += 1
            self.state += 100  # the clock save changes the image too
        return SimpleNamespace(clockInfo=SimpleNamespace(clock=self.window << storage_cost.CLOCK_SAVE_BITS))


def _session(tpm: _FakeTpm) -> storage_cost._Session:
    session = object.__new__(storage_cost._Session)
    session.esys = tpm
    session.image = lambda: tpm.state.to_bytes(4, "big")
    return session


def _act(tpm: _FakeTpm):
    def act() -> None:
        tpm.state += 1
    return act


def test_a_quiet_rep_is_measured_once() -> None:
    tpm = _FakeTpm(jumps=set())
    before, after, skipped = _session(tpm).measured(_act(tpm))
    assert (int.from_bytes(before, "big"), int.from_bytes(after, "big"), skipped) == (0, 1, [])


def test_a_rep_the_clock_save_falls_into_is_redone_and_its_image_kept() -> None:
    tpm = _FakeTpm(jumps={2})  # the window changes between the first rep's two ReadClocks
    before, after, skipped = _session(tpm).measured(_act(tpm))
    assert int.from_bytes(after, "big") - int.from_bytes(before, "big") == 1  # only the command
    assert int.from_bytes(before, "big") == 101  # measured again, after the save
    assert [int.from_bytes(s, "big") for s in skipped] == [1]  # the store must still see that run


def test_a_command_slower_than_the_save_interval_counts_its_last_run() -> None:
    tpm = _FakeTpm(jumps={2, 4, 6, 8, 10})  # every run crosses a save: no clean run exists
    before, after, skipped = _session(tpm).measured(_act(tpm))
    assert len(skipped) == storage_cost.CLOCK_SAVE_RETRIES - 1  # the store still sees the others
    assert int.from_bytes(after, "big") - int.from_bytes(before, "big") == 1

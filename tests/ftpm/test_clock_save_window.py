"""Storage-cost reps the TPM's periodic clock save falls into are measured again.

libtpms writes its Clock to NV every 4.096 s of real time; a command that
happens to run across that moment would be charged bytes and RPMB frames that
belong to no command, so the flagship's figures would depend on timing luck.
libtpms moreover defers the save to the next command that writes NV, so a
window passed during commands that write nothing lands in a later command.
"""

from __future__ import annotations

from types import SimpleNamespace

from trustlab.devices.ftpm import storage_cost


class _FakeTpm:
    """A TPM whose Clock jumps a save window at the given ReadClock calls, and whose image is a counter.

    ``deferred``: the save waits for the next NV write, as in libtpms.
    """

    def __init__(self, jumps: set[int], deferred: bool = False) -> None:
        self.jumps, self.reads, self.window, self.state = jumps, 0, 7, 0
        self.deferred, self.pending = deferred, False

    def read_clock(self) -> SimpleNamespace:
        self.reads += 1
        if self.reads in self.jumps:
            self.window += 1
            if self.deferred:
                self.pending = True
            else:
                self.state += 100  # the clock save changes the image too
        return SimpleNamespace(clockInfo=SimpleNamespace(clock=self.window << storage_cost.CLOCK_SAVE_BITS))

    def write_nv(self, n: int) -> None:
        self.state += n + (100 if self.pending else 0)
        self.pending = False


def _session(tpm: _FakeTpm) -> storage_cost._Session:
    session = object.__new__(storage_cost._Session)
    session.esys = tpm
    session.image = lambda: tpm.state.to_bytes(4, "big")
    session.saved_window = tpm.window  # as after the warm-up: the image holds this window's save
    return session


def _act(tpm: _FakeTpm, writes: int = 1):
    def act() -> None:
        if writes:
            tpm.write_nv(writes)
    return act


def _int(image: bytes) -> int:
    return int.from_bytes(image, "big")


def test_a_quiet_rep_is_measured_once() -> None:
    tpm = _FakeTpm(jumps=set())
    before, after, skipped = _session(tpm).measured(_act(tpm))
    assert (_int(before), _int(after), skipped) == (0, 1, [])


def test_a_rep_the_clock_save_falls_into_is_redone_and_its_image_kept() -> None:
    tpm = _FakeTpm(jumps={2})  # the window changes between the first rep's two ReadClocks
    before, after, skipped = _session(tpm).measured(_act(tpm))
    assert _int(after) - _int(before) == 1  # only the command
    # whether that run's NV write came before the save is unknown: the next run that writes
    # NV is not trusted either; the one after it is
    assert [_int(s) for s in skipped] == [1, 102]  # the store must still see those runs
    assert _int(before) == 102


def test_a_save_pending_from_commands_that_wrote_nothing_is_not_charged_to_the_next_writer() -> None:
    tpm = _FakeTpm(jumps={1}, deferred=True)
    session = _session(tpm)
    quiet_before, quiet_after, quiet_skipped = session.measured(_act(tpm, writes=0))
    assert (quiet_before, quiet_skipped) == (quiet_after, [])  # writes nothing: counts at once (0 bytes)
    assert tpm.pending  # the window passed; libtpms holds the save back
    before, after, skipped = session.measured(_act(tpm))
    assert [_int(s) for s in skipped] == [101]  # the run that flushed it is redone ...
    assert (_int(before), _int(after)) == (101, 102)  # ... and the command alone is charged


def test_an_image_of_unknown_clock_state_is_not_trusted_for_the_first_write() -> None:
    tpm = _FakeTpm(jumps=set())
    session = _session(tpm)
    session.saved_window = None  # no NV write seen yet (before any warm-up)
    before, after, skipped = session.measured(_act(tpm))
    assert ([_int(s) for s in skipped], _int(before), _int(after)) == ([1], 1, 2)


def test_a_command_slower_than_the_save_interval_counts_its_last_run() -> None:
    tpm = _FakeTpm(jumps={2, 4, 6, 8, 10})  # every run crosses a save: no clean run exists
    before, after, skipped = _session(tpm).measured(_act(tpm))
    assert len(skipped) == storage_cost.CLOCK_SAVE_RETRIES - 1  # the store still sees the others
    assert _int(after) - _int(before) == 1

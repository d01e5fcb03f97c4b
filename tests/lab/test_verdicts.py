"""Experiments that check a safety property set the exit status: 1 with the count on any violation."""

import functools

from trustlab.apps.counters.base import VerificationError
from trustlab.apps.wallet.protocol import Merchant
from trustlab.cli import main
from trustlab.devices.ftpm import crash, normal_world
from trustlab.devices.ftpm import rpmb_frame as rf
from trustlab.devices.ftpm.atomic_store import AtomicStore
from trustlab.devices.ftpm.errors import PowerLoss
from ..ftpm.test_crash import InPlaceStore  # the broken store the fTPM crash tests use


def _violation(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "safety property violated" in err[0], err
    return err[0]


def test_ftpm_crash_with_a_store_that_tears_exits_1_with_the_count(capsys, monkeypatch):
    import trustlab.experiments.ftpm_crash as exp

    assert main(["run", "ftpm-crash", "--commands", "8", "--seed", "2"]) == 0
    capsys.readouterr()
    torn = crash.run_campaign(8, seed=2, store_class=InPlaceStore).torn
    assert torn > 0
    monkeypatch.setattr(exp, "run_campaign", functools.partial(crash.run_campaign, store_class=InPlaceStore))
    assert main(["run", "ftpm-crash", "--commands", "8", "--seed", "2"]) == 1
    assert f"{torn} torn writes" in _violation(capsys)


def test_wallet_double_spend_accepted_under_a_safe_ordering_exits_1(capsys, monkeypatch):
    import trustlab.experiments.wallet as exp

    argv = ["run", "wallet", "--purchases", "40", "--cheat-rate", "0.5", "--credit", "600", "--seed", "3",
            "--deterministic", "--json"]
    assert main([*argv, "--ordering", "paper"]) == 0  # exploitable by design: the study, not a failure
    assert main([*argv, "--ordering", "fixed"]) == 0
    capsys.readouterr()

    def broken_merchant(name, directory, verifier, ordering, clock=None):
        return Merchant(name, directory, verifier, "paper", clock=clock)  # claims "fixed", behaves as paper
    monkeypatch.setattr(exp, "Merchant", broken_merchant)
    assert main([*argv, "--ordering", "fixed"]) == 1
    assert "double spend(s) accepted with the fixed ordering" in _violation(capsys)


def test_counter_verification_failure_exits_1(capsys, monkeypatch):
    import trustlab.experiments.counters as exp

    def failing(*a, **k):
        raise VerificationError("value-mismatch", "claimed 3, certificate says 2")
    monkeypatch.setattr(exp, "run", failing)
    assert main(["run", "counters", "--counters", "4", "--requests", "4", "--scheme", "log"]) == 1
    assert "counter verification failed" in _violation(capsys)


class StaleMountStore(AtomicStore):
    """A broken store that mounts from its RAM copy of the last commit, not from the eMMC (a stale mount)."""

    cached = None

    def mount(self):
        super().mount()
        if type(self).cached is not None:
            self.generation, root, bits = type(self).cached
            self._root_bits, self._bits = bytearray(root), bytearray(bits)
            self._raw = {}

    def commit(self):
        n = super().commit()
        type(self).cached = (self.generation, bytes(self._root_bits), bytes(self._bits))
        return n


def _tearing_device(monkeypatch):
    """An eMMC that, when power fails during an authenticated write, leaves the block half written."""
    send = normal_world.NormalWorld._send

    def torn_send(self, frames, what):
        try:
            return send(self, frames, what)
        except PowerLoss:
            if rf.frame_type(frames[0]) == rf.REQ_AUTH_WRITE:
                frame = rf.Frame.from_bytes(frames[0])
                old = self.device.peek(frame.address)
                self.device._blocks[frame.address] = frame.data[:rf.DATA_SIZE // 2] + old[rf.DATA_SIZE // 2:]
            raise
    monkeypatch.setattr(normal_world.NormalWorld, "_send", torn_send)


def test_ftpm_crash_on_a_tearing_device_is_a_counted_violation_not_an_error(capsys, monkeypatch):
    """Issue 23: state that fails authentication after a crash is torn (exit 1), not exit 2."""
    import trustlab.experiments.ftpm_crash as exp

    _tearing_device(monkeypatch)
    assert crash.run_campaign(8, seed=2).torn == 0  # the shadow-copy store survives a tearing device
    monkeypatch.setattr(exp, "run_campaign", functools.partial(crash.run_campaign, store_class=InPlaceStore))
    assert main(["run", "ftpm-crash", "--commands", "8", "--seed", "2"]) == 1
    line = _violation(capsys)
    assert "torn writes" in line and "authentication" not in line


def test_ftpm_checker_gives_a_verdict_on_a_stale_mount(monkeypatch):
    """A re-run that resumes stale state does not reach the crash point: a verdict, not an AssertionError."""
    monkeypatch.setattr(StaleMountStore, "cached", None)
    report = crash.run_campaign(12, seed=0, store_class=StaleMountStore)  # was TpmRefused / AssertionError
    assert report.torn + report.lost_committed > 0
    assert report.points_by_label.get("re-run diverged", 0) > 0

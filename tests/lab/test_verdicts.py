"""Experiments that check a safety property set the exit status: 1 with the count on any violation."""

import functools

from trustlab.apps.counters.base import VerificationError
from trustlab.apps.wallet.protocol import Merchant
from trustlab.cli import main
from trustlab.devices.ftpm import crash
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

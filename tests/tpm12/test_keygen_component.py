"""Key generation as a profile component: ``rsa_keygen`` charged where a key is made, host keys made ahead.

The modelled cost comes from the profile (tools/build_tpm12_keygen.py writes it, with its source);
the host's own key generation is never on a served command's path when a key is ready.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from trustlab.cli import main
from trustlab.devices.tpm12.primitives import AheadKeys
from trustlab.timing import registry
from trustlab.timing.clock import Clock

from . import ours_scenario
from .conftest import POOL

KEYGEN_COMMANDS = ("TPM_TakeOwnership", "TPM_CreateWrapKey", "TPM_MakeIdentity", "TPM_CreateEndorsementKeyPair")
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["infineon-2010", "atmel-2010", "stm-2010", "winbond-2010"])
def test_key_generating_commands_charge_rsa_keygen(name: str) -> None:
    profile = registry.load(name).without_spread()
    records = ours_scenario.run(Clock(profile), keygen=POOL)
    for command in KEYGEN_COMMANDS:
        assert records[command].breakdown.get("rsa_keygen") == pytest.approx(profile.mean("rsa_keygen")), command
    for command in ("TPM_LoadKey", "TPM_Quote2", "TPM_NV_WriteValue"):
        assert "rsa_keygen" not in records[command].breakdown, command


def test_sim_2010_has_no_keygen_figure_and_says_so(capsys) -> None:
    profile = registry.load("sim-2010")
    assert "rsa_keygen" not in profile
    assert "no rsa_keygen" in profile.provenance.to_dict().get("note", "")
    records = ours_scenario.run(Clock(profile.without_spread()), keygen=POOL)
    assert "rsa_keygen" not in records["TPM_TakeOwnership"].breakdown


@pytest.mark.parametrize("name", ["atmel-counters-2010", "infineon-counters-2010", "stm-counters-2010",
                                  "winbond-counters-2010"])
def test_counters_profiles_say_they_have_no_keygen_figure(name: str) -> None:
    profile = registry.load(name)
    assert "rsa_keygen" not in profile and "no rsa_keygen" in profile.provenance.to_dict()["note"]


def test_keygen_is_a_spread_with_its_source_shown(capsys) -> None:
    component = registry.load("infineon-2010")["rsa_keygen"]
    assert len(component.samples) >= 32 and min(component.samples) < component.mean < max(component.samples)
    assert main(["profiles", "show", "infineon-2010"]) == 0
    shown = capsys.readouterr().out
    line = next(row for row in shown.splitlines() if row.startswith("rsa_keygen"))
    assert "borrowed" in line and "wolfTPM" in line and "NO published TPM 1.2 figure" in line


def test_profiles_match_their_builder() -> None:
    done = subprocess.run([sys.executable, str(REPO / "tools" / "build_tpm12_keygen.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_ahead_keys_hands_out_prepared_fresh_keys() -> None:
    ahead = AheadKeys(depth=2)
    first = ahead()  # none ready yet: made inline, and the thread starts filling
    deadline = time.monotonic() + 60
    while len(ahead._ready) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    prepared = list(ahead._ready)
    assert len(prepared) == 2
    taken = [ahead(), ahead()]
    assert all(any(k is p for p in prepared) for k in taken)  # taken from the ready ones, not made now
    numbers = {k.private_numbers().p for k in (first, *taken)}
    assert len(numbers) == 3  # every key fresh
    assert ahead(1024).key_size == 1024  # other sizes inline

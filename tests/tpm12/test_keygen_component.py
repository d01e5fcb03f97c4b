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
    assert "searched:" in line and "ROCA" in line  # says what was looked for, not only that nothing was found
    reference = [row for row in shown.splitlines() if row.startswith("raw.tpm12_takeownership_published")]
    assert len(reference) == 2 and all("cryptohome/docs/tpm.md" in row for row in reference)


def test_stm_takes_the_st19np18_data_sheet_figure_and_keeps_the_borrowed_one_beside_it(capsys) -> None:
    """ST19NP18-TPM data sheet (Rev 6, 2008), p. 1: RSA-1024 keygen 1.6 s, CRT signatures 57 / 382 ms."""
    profile = registry.load("stm-2010")
    keygen = profile["rsa_keygen"]
    assert keygen.mean == pytest.approx(1600 * 382 / 57 * 2, abs=1e-3)  # Miller-Rabin ratio x twice the candidates
    assert sum(keygen.samples) / len(keygen.samples) == pytest.approx(keygen.mean)
    assert "ST19NP18" in keygen.provenance.source and "Published TPM 1.2 figure" in keygen.provenance.note
    assert "NO published" not in keygen.provenance.note
    alternative = profile["raw.rsa_keygen_borrowed_tpm2"]
    assert "borrowed" in alternative.provenance.source and alternative.mean != keygen.mean
    assert main(["profiles", "show", "stm-2010"]) == 0
    shown = capsys.readouterr().out
    assert any(row.startswith("rsa_keygen") and "ST19NP18" in row for row in shown.splitlines())


PUBLISHED_TAKEOWNERSHIP_S = (10, 150)  # Chromium OS cryptohome/docs/tpm.md: "may take between 10s and 150s"


@pytest.mark.parametrize("name", ["infineon-2010", "atmel-2010", "stm-2010", "winbond-2010"])
def test_published_takeownership_range_is_kept_as_an_uncharged_reference(name: str) -> None:
    """The one published TPM 1.2 figure names no chip: it is shown beside the model, never charged or fitted."""
    profile = registry.load(name)
    low, high = (profile[f"raw.tpm12_takeownership_published_{end}"] for end in ("low", "high"))
    assert (low.mean, high.mean) == tuple(1000.0 * s for s in PUBLISHED_TAKEOWNERSHIP_S)
    assert "no chip" in low.provenance.note and "charged by nothing" in low.provenance.note
    records = ours_scenario.run(Clock(profile.without_spread()), keygen=POOL)
    for command, record in records.items():
        assert not any(term.startswith("raw.") for term in record.breakdown), command


def test_modelled_takeownership_beside_the_published_range() -> None:
    """Reported, not asserted into the range: the range is no chip's distribution, so nothing is fitted to it.

    The borrowed Infineon estimate (TPM 2.0 SLB9670 scaled) puts TakeOwnership's mean below the
    published range's 10 s lower end; the Atmel and Winbond (borrowed) and ST (data sheet) ones fall
    inside it. The builder's
    note says the figure names no chip; this test pins those facts so a change to them is seen.
    """
    inside = {}
    for name in ("infineon-2010", "atmel-2010", "stm-2010", "winbond-2010"):
        profile = registry.load(name).without_spread()
        took = ours_scenario.run(Clock(profile), keygen=POOL)["TPM_TakeOwnership"].ms / 1000
        inside[name] = PUBLISHED_TAKEOWNERSHIP_S[0] <= took <= PUBLISHED_TAKEOWNERSHIP_S[1]
    assert inside == {"infineon-2010": False, "atmel-2010": True, "stm-2010": True, "winbond-2010": True}


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

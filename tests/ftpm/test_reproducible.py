"""``trustlab run ftpm-vs-dtpm`` gives the same modelled figures for the same seed, every time.

The storage costs are measured on swtpm, whose Clock runs on the host's wall
clock. libtpms saves that Clock to NV every 4.096 s but writes it out only with
the next command that writes NV, so on a slower host (or a busier one) the save
used to land in the wrong-PIN rep: 54 more bytes and one more RPMB frame, a
different "unseal, wrong PIN (DA)" figure from run to run. The second run here
forces that case (TPM2_ClockSet to the next save window, which libtpms also
defers) instead of waiting for a slow host.
"""

from __future__ import annotations

import shutil

import pytest

from trustlab.devices.ftpm import storage_cost
from trustlab.experiments.registry import run_argv

FAST = ["--reps", "1", "--profiles", "intel-ptt-302.12.0.0-jcalgtest,infineon-slb9670-wolftpm"]

pytestmark = pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")


def _advance_to_next_clock_save(session: storage_cost._Session) -> None:
    """Move the TPM's Clock into the next save window; libtpms keeps that save pending."""
    from tpm2_pytss.constants import ESYS_TR

    clock = session.esys.read_clock().clockInfo.clock
    session.esys.clock_set(((clock >> storage_cost.CLOCK_SAVE_BITS) + 1) << storage_cost.CLOCK_SAVE_BITS,
                           auth=ESYS_TR.OWNER)


def test_the_study_twice_gives_identical_modelled_figures(monkeypatch):
    first = run_argv("ftpm-vs-dtpm", FAST)

    measured = storage_cost._Session.measured
    jumped: list[bool] = []

    def late_host(self, act):  # before the first measured rep (a command that writes no NV)
        if not jumped:
            jumped.append(True)
            _advance_to_next_clock_save(self)
        return measured(self, act)

    monkeypatch.setattr(storage_cost._Session, "measured", late_host)
    second = run_argv("ftpm-vs-dtpm", FAST)
    assert jumped
    assert second.data == first.data
    assert second.text == first.text
    wrong = {c["label"]: c for c in first.data["commands"]}["unseal, wrong PIN (DA)"]
    assert wrong["nv_bytes_changed"] == 1 and wrong["rpmb_frames"] == 2  # failedTries + commit, no clock

"""IBM's TPM 1.2 utilities step by step on libtpms and on `trustlab serve` (tools/tpm12_ibm_utils.py).

The utilities are built from source outside the repository (keylime/tpm4720-keylime, libtpm/utils);
set TRUSTLAB_IBM_UTILS to the directory of the built programs to run this, otherwise it is skipped.
The steps that still differ must be among those named below (each with the engine gap behind it),
so a step that regresses shows, and a fixed one may leave the list.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = os.environ.get("TRUSTLAB_IBM_UTILS", "")

# step -> why it still differs (the engine gap; see issue 26). Empty: all 117 steps behave as on
# libtpms (ChangeAuth's protocolID, ActivateIdentity with the owner's session only, TPM_KeyControlOwner
# and TPM_Delegate_ReadTable were the last; tests/tpm12/test_owner_evict_libtpms.py holds their rules).
KNOWN: dict[str, str] = {}


@pytest.mark.swtpm
def test_ibm_utilities_behave_as_on_libtpms() -> None:
    if not BUILD:
        pytest.skip("set TRUSTLAB_IBM_UTILS to the built IBM TPM 1.2 utilities (libtpm/utils)")
    if shutil.which("swtpm") is None:
        pytest.skip("swtpm not installed")
    sys.path.insert(0, str(REPO / "tools"))
    import tpm12_ibm_utils as ibm

    rows, pp = ibm.run(Path(BUILD))
    assert pp["libtpms"] == [0, 0]
    by = {r.step: r for r in rows}
    # the harness is right: on libtpms the round trips work
    for step in ("unsealfile (PCRs 0-6)", "unbindfile", "nv_readvalue owner", "unsealxfile"):
        assert by[step].libtpms.check == "equal", (step, by[step].libtpms.output)
    assert by["tpmquote"].libtpms.check == "succeeded"
    differing = {r.step for r in rows if not r.same}
    unexpected = differing - set(KNOWN)
    assert not unexpected, "\n".join(f"{s}: {by[s].differs}\n  libtpms {by[s].libtpms.frames}\n"
                                     f"  trustlab {by[s].trustlab.frames}" for s in sorted(unexpected))

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

# step -> why it still differs (the engine gap; see issue 26)
KNOWN = {
    **dict.fromkeys(("getcapability permanent flags", "getcapability volatile flags", "physicalpresence -s",
                     "physicalenable", "physicalsetdeactivated -c", "setownerinstall", "setoperatorauth",
                     "getcapability permanent flags (owned)", "getcapability permanent flags (cleared)",
                     "forceclear", "takeown after clear", "clearown", "clearown (disabled)",
                     "disableownerclear", "ownersetdisable -en", "disablepubek"),
                    "TSC_PhysicalPresence and the owner/presence flag commands (issue 26 item 3)"),
    **dict.fromkeys(("sha", "sha1start"), "SHA1Start/Update/Complete (item 3)"),
    **dict.fromkeys(("getpubkey SRK", "getpubkey SRK after readSRKPub"), "readSRKPub (item 4)"),
    **dict.fromkeys(("chgtpmauth SRK", "chgtpmauth owner"), "ChangeAuthOwner (item 3)"),
    "chgauth key": "TPM_ET_KEY in ChangeAuth (item 4)",
    "nv_definespace 4096 bytes": "NV 4096 bytes (item 4)",
    **dict.fromkeys(("unsealfile (PCRs 0-6)", "unsealfile under storage key"), "PCR-bound sealing (item 1)"),
    **dict.fromkeys(("identity (TPM_KEY template)", "identity -ac (activate)"),
                    "MakeIdentity TPM_KEY template, ActivateIdentity (item 2)"),
    **dict.fromkeys(("sealxfile", "unsealxfile"), "TPM_Sealx (needs PCR_INFO_LONG sealing, item 1)"),
}


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

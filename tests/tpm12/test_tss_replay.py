"""The frames real TPM 1.2 programs send, replayed to our engine and to libtpms side by side.

``data/tss_frames.json`` holds every request tpm-tools, tpm-quote-tools and
simple-tpm-pk11 sent through TrouSerS' tcsd to libtpms (recorded by the
logging proxy of :mod:`.tss_clients`, ``python -m tests.tpm12.tss_clients
--record``), after the BIOS's physical-presence frames. Replayed verbatim to
two fresh TPMs (started, with an EK), the frames exercise the exact bytes
those clients marshal: every unauthorized command runs for real, and an
authorized one fails its authorization (the sessions and keys of the
recording are gone) only after the TPM parsed it. TPM_TakeOwnership alone is
rebuilt per TPM (its secrets are encrypted to the recording TPM's EK) with the
well-known secrets the tools used, so the TPMs have an owner when the tools did. Both TPMs must answer
every frame with the same return code and length, so a regression in how
the engine reads a client's frame shows without the clients installed.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.primitives import KeyPool

from .conformance_cases import cap, frame
from .differential import pair

pytestmark = [pytest.mark.swtpm, pytest.mark.skipif(shutil.which("swtpm") is None, reason="swtpm not installed")]

DATA = Path(__file__).with_name("data") / "tss_frames.json"
_NAMES = {v: k for k, v in C.ORD.items()}


def _rc(rsp: bytes) -> int | None:
    return struct.unpack(">I", rsp[6:10])[0] if len(rsp) >= 10 else None


def _ek_frame() -> bytes:
    """TPM_CreateEndorsementKeyPair, RSA-2048 OAEP (what swtpm_setup sends; Swtpm12.create_ek)."""
    body = b"\x00" * 20 + struct.pack(">IHHI", 1, 3, 1, 12) + struct.pack(">III", 2048, 2, 0)
    return struct.pack(">HII", 0x00C1, 10 + len(body), 0x78) + body


_TAKE_OWNERSHIP = C.ORD["TPM_TakeOwnership"]
WELL_KNOWN = bytes(20)  # the tools ran tpm_takeownership -y -z: owner and SRK secrets all zeros


def _take_ownership(side) -> bytes:
    """TPM_TakeOwnership as recorded (-y -z) but encrypted to this TPM's EK: the recorded frame carries
    secrets only the recording TPM could decrypt. With an owner, the owner-dependent frames that follow
    get past the TPMs' state checks and are compared on their parameter and session checks."""
    side.last = (b"", b"")
    try:
        side.tpm.TPM_TakeOwnership(WELL_KNOWN, WELL_KNOWN)
    except TpmError:
        pass
    return side.last[1]


def _flush_sessions(side) -> None:
    """What tcsd did between the recorded steps, and a replay cannot (the handles differ): flush every
    authorization session (test_conformance.tidy does the same between cases)."""
    rsp = side.execute(cap(C.TPM_CAP_HANDLE, struct.pack(">I", C.TPM_RT_AUTH)))
    if _rc(rsp) == 0:
        for i in range(struct.unpack(">H", rsp[14:16])[0]):
            side.execute(frame(C.ORD["TPM_FlushSpecific"], rsp[16 + 4 * i:20 + 4 * i] + struct.pack(">I", C.TPM_RT_AUTH)))


def _replay() -> list[dict]:
    """Each tool set on a fresh pair of TPMs (as recorded), started, with an EK and physical presence."""
    doc = json.loads(DATA.read_text())
    rows = []
    for plan, steps in doc["plans"].items():
        ours, libtpms = pair(KeyPool())
        try:
            setup = [struct.pack(">HIIH", 0x00C1, 12, C.ORD["TPM_Startup"], C.TPM_ST_CLEAR), _ek_frame()]
            for f in setup + [bytes.fromhex(h) for h in doc["bios"]]:
                assert [_rc(ours.execute(f)), _rc(libtpms.execute(f))] == [0, 0]
            for step in steps:
                for h in step["requests"]:
                    f = bytes.fromhex(h)
                    ordinal = struct.unpack(">I", f[6:10])[0]
                    if ordinal == _TAKE_OWNERSHIP:  # re-encrypted to each TPM's own EK (see _take_ownership)
                        a, b = _take_ownership(ours), _take_ownership(libtpms)
                    else:
                        a, b = ours.execute(f), libtpms.execute(f)
                    rows.append({"plan": plan, "step": step["step"], "command": _NAMES.get(ordinal, hex(ordinal)),
                                 "rc": (_rc(a), _rc(b)), "len": (len(a), len(b))})
                _flush_sessions(ours)
                _flush_sessions(libtpms)
        finally:
            libtpms.target.close()
    return rows


# (command, step) -> why the answers legitimately differ
KNOWN = {
    ("TPM_GetTestResult", "tpm_selftest"): "outData is manufacturer-specific text (README: get_test_result)",
    ("TPM_GetTestResult", "tpm_selftest -r"): "as above",
}


def test_every_recorded_client_frame_gets_libtpms_answer() -> None:
    """One test (xdist would run a module fixture once per worker)."""
    replay = _replay()
    assert len(replay) >= 400
    differ = [r for r in replay if (r["rc"][0] != r["rc"][1] or r["len"][0] != r["len"][1])
              and (r["command"], r["step"]) not in KNOWN]
    lines = [f"{r['plan']}: {r['step']}: {r['command']} rc {r['rc']} len {r['len']}" for r in differ]
    assert not differ, f"{len(differ)} of {len(replay)} frames answered differently:\n" + "\n".join(lines)

    # enough frames succeed on both that the replay is more than a parser test
    ok = {r["command"] for r in replay if r["rc"] == (0, 0)}
    assert {"TPM_GetCapability", "TPM_OIAP", "TPM_StirRandom", "TPM_ReadPubek", "TPM_PCRRead", "TPM_ForceClear",
            "TPM_SetOwnerInstall", "TPM_PhysicalEnable", "TPM_SetTempDeactivated"} <= ok
    assert sum(r["rc"] == (0, 0) for r in replay) >= len(replay) // 4

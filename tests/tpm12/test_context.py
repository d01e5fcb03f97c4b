"""TPM_SaveContext / TPM_LoadContext (Part 3, 21.2-21.3), each case on trustlab and on libtpms.

IBM's savecontext/loadcontext run against both in tools/tpm12_ibm_utils.py (key contexts); here the
session rules: a saved session leaves the TPM, reloads once, not when tampered with, not after a
restart, at most 128 wait saved (as in libtpms); and no owner, no contexts (TPM_NOSRK).
"""

from __future__ import annotations

import shutil
import struct
from typing import Iterator

import pytest

from trustlab.devices.tpm12 import Tpm12
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.nvstore import MemoryNVStore
from trustlab.serving.tpm12.socket_tpm import SocketTpm12, Swtpm12
from trustlab.timing import registry
from trustlab.timing.clock import Clock

from .conftest import OWNER, POOL, SRK

LABEL = b"trustlab-label16"


@pytest.fixture(params=["trustlab", "libtpms"])
def side(request, tmp_path) -> Iterator[tuple[str, Tpm12]]:
    clock = Clock(registry.load("infineon-2010"))
    if request.param == "trustlab":
        yield "trustlab", Tpm12(clock, nv=MemoryNVStore(), keygen=POOL)
        return
    if shutil.which("swtpm") is None:
        pytest.skip("swtpm not installed")
    with Swtpm12(state_dir=tmp_path / "libtpms") as sw:
        assert sw.create_ek() == 0
        remote = SocketTpm12(sw.host, sw.port)
        try:
            yield "libtpms", Tpm12(clock, engine=remote)
        finally:
            remote.close()


@pytest.fixture
def tpm(side) -> Tpm12:
    side[1].TPM_TakeOwnership(OWNER, SRK)
    return side[1]


def _call(tpm, ordinal: str, body: bytes) -> tuple[int, bytes]:
    rsp = tpm.execute(struct.pack(">HII", C.TPM_TAG_RQU_COMMAND, 10 + len(body), C.ORD[ordinal]) + body)
    return struct.unpack_from(">I", rsp, 6)[0], rsp[10:]


def _oiap(tpm) -> int:
    rc, body = _call(tpm, "TPM_OIAP", b"")
    assert rc == 0
    return struct.unpack_from(">I", body)[0]


def _save(tpm, handle: int, rtype: int = C.TPM_RT_AUTH) -> tuple[int, bytes]:
    rc, body = _call(tpm, "TPM_SaveContext", struct.pack(">II", handle, rtype) + LABEL)
    return rc, body[4:] if rc == 0 else b""


def _load(tpm, blob: bytes, keep: int = 1, hint: int = 0) -> tuple[int, int | None]:
    rc, body = _call(tpm, "TPM_LoadContext", struct.pack(">IBI", hint, keep, len(blob)) + blob)
    return rc, struct.unpack_from(">I", body)[0] if rc == 0 else None


def test_a_saved_session_leaves_and_reloads_once(tpm) -> None:
    h = _oiap(tpm)
    rc, blob = _save(tpm, h)
    assert rc == 0 and blob[:2] == b"\x00\x01"  # TPM_TAG_CONTEXTBLOB
    assert _call(tpm, "TPM_FlushSpecific", struct.pack(">II", h, C.TPM_RT_AUTH))[0] == C.RC["TPM_INVALID_AUTHHANDLE"]
    assert _load(tpm, blob) == (0, h)
    assert _load(tpm, blob)[0] == C.RC["TPM_BADCONTEXT"]  # contextList: once
    assert _call(tpm, "TPM_FlushSpecific", struct.pack(">II", h, C.TPM_RT_AUTH))[0] == 0


def test_tampered_and_other_boot_contexts_are_refused(tpm, side) -> None:
    rc, blob = _save(tpm, _oiap(tpm))
    bad = bytearray(blob)
    bad[10] ^= 1  # the label
    assert _load(tpm, bytes(bad))[0] == C.RC["TPM_BADCONTEXT"]
    if side[0] == "trustlab":  # (a power cycle of the swtpm needs its control channel)
        tpm.restart()  # a new boot: a new contextNonceSession
        assert _load(tpm, blob)[0] == C.RC["TPM_BADCONTEXT"]


def test_no_owner_no_contexts(side) -> None:
    h = _oiap(side[1])
    assert _save(side[1], h)[0] == C.RC["TPM_NOSRK"]


def test_128_saved_sessions_at_most_and_bad_resources(tpm) -> None:
    for _ in range(128):  # libtpms' TPM_MIN_SESSION_LIST (the spec's minimum is 16)
        assert _save(tpm, _oiap(tpm))[0] == 0
    assert _save(tpm, _oiap(tpm))[0] == C.RC["TPM_NOCONTEXTSPACE"]
    assert _save(tpm, 0x01000099, C.TPM_RT_KEY)[0] == C.RC["TPM_INVALID_RESOURCE"]  # no such key
    assert _save(tpm, _oiap(tpm), 0x77)[0] == C.RC["TPM_INVALID_RESOURCE"]

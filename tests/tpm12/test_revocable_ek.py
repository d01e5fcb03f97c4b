"""TPM_CreateRevocableEK / TPM_RevokeTrust on a TPM without an EK, on trustlab and on libtpms.

The EK is made once (TPM_DISABLED_CMD after), with the caller's EKreset; revoking needs that
secret (TPM_AUTHFAIL) and physical presence (TPM_BAD_PRESENCE), then leaves no EK
(the TPM disabled, as after TPM_OwnerClear; a new EK may then be made).
"""

from __future__ import annotations

import shutil
import struct
from typing import Iterator

import pytest

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.engine import Engine
from trustlab.devices.tpm12.keys import KeyParms
from trustlab.devices.tpm12.nvstore import MemoryNVStore
from trustlab.serving.tpm12.socket_tpm import SocketTpm12, Swtpm12
from trustlab.timing import registry
from trustlab.timing.clock import Clock

from .conftest import POOL

RESET = bytes(range(20))
EK_PARMS = KeyParms(C.TPM_ALG_RSA, C.TPM_ES_RSAESOAEP_SHA1_MGF1, C.TPM_SS_NONE).marshal()


@pytest.fixture(params=["trustlab", "libtpms"])
def bare(request, tmp_path) -> Iterator:
    """A started TPM with no endorsement key."""
    if request.param == "trustlab":
        yield Engine(Clock(registry.load("infineon-2010")), MemoryNVStore(), POOL, ek=False)
        return
    if shutil.which("swtpm") is None:
        pytest.skip("swtpm not installed")
    with Swtpm12(state_dir=tmp_path / "libtpms") as sw:
        remote = SocketTpm12(sw.host, sw.port)
        try:
            yield remote
        finally:
            remote.close()


def _rc(tpm, ordinal: str, body: bytes = b"") -> tuple[int, bytes]:
    rsp = tpm.execute(struct.pack(">HII", C.TPM_TAG_RQU_COMMAND, 10 + len(body), C.ORD[ordinal]) + body)
    return struct.unpack_from(">I", rsp, 6)[0], rsp[10:]


def _create(tpm, generate: int = 0) -> tuple[int, bytes]:
    return _rc(tpm, "TPM_CreateRevocableEK", bytes(20) + EK_PARMS + bytes((generate,)) + RESET)


def test_revocable_ek_made_once_and_revoked_with_its_secret_and_presence(bare) -> None:
    rc, out = _create(bare)
    assert rc == 0 and out[-20:] == RESET  # outputEKreset: the caller's
    assert _create(bare)[0] == C.RC["TPM_DISABLED_CMD"]
    assert _rc(bare, "TPM_RevokeTrust", bytes(20))[0] == C.RC["TPM_AUTHFAIL"]
    assert _rc(bare, "TPM_RevokeTrust", RESET)[0] == C.RC["TPM_BAD_PRESENCE"]
    for value in (0x0020, 0x0008):  # TSC_PhysicalPresence: CMD_ENABLE, PRESENT
        assert _rc(bare, "TSC_PhysicalPresence", struct.pack(">H", value))[0] == 0
    assert _rc(bare, "TPM_RevokeTrust", RESET)[0] == 0
    # the owner clear inside disables the TPM (libtpms TPM_OwnerClearCommon), so it answers that first
    assert _rc(bare, "TPM_ReadPubek", bytes(20))[0] == C.RC["TPM_DISABLED"]
    assert _rc(bare, "TPM_PhysicalEnable")[0] == 0
    assert _rc(bare, "TPM_CreateEndorsementKeyPair", bytes(20) + EK_PARMS)[0] == 0  # a new EK may be made


def test_a_permanent_ek_is_not_revocable(bare) -> None:
    rc, _ = _rc(bare, "TPM_CreateEndorsementKeyPair", bytes(20) + EK_PARMS)
    assert rc == 0
    assert _rc(bare, "TPM_RevokeTrust", RESET)[0] == C.RC["TPM_PERMANENTEK"]

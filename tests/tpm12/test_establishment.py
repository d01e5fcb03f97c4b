"""TSC_ResetEstablishmentBit: locality 0 may not clear tpmEstablished (libtpms: TPM_BAD_LOCALITY); 3 and 4 may."""

from __future__ import annotations

import struct

import pytest

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import flags

from .test_context import side  # noqa: F401 - the two-sided fixture

FRAME = struct.pack(">HII", C.TPM_TAG_RQU_COMMAND, 10, C.ORD["TSC_ResetEstablishmentBit"])


def test_locality_zero_may_not_reset(side) -> None:  # noqa: F811
    rsp = side[1].execute(FRAME)
    assert struct.unpack_from(">I", rsp, 6)[0] == C.RC["TPM_BAD_LOCALITY"]


@pytest.mark.parametrize("locality", [3, 4])
def test_localities_three_and_four_clear_the_flag(tpm, locality: int) -> None:
    engine = tpm.engine
    engine.state.extra[flags.ESTABLISHED] = "1"
    engine.locality = locality
    rsp = tpm.execute(FRAME)
    assert struct.unpack_from(">I", rsp, 6)[0] == 0
    assert not flags.permanent(engine, "tpmEstablished")

"""A TPMS_CONTEXT that is not one whole structure is refused before it reaches the TPM (no swtpm needed)."""

from __future__ import annotations

import struct

import pytest

from trustlab.devices.tpm2.pqc.client import PqcClient
from trustlab.devices.tpm2.pqc.structures import context_problem
from trustlab.errors import TrustlabError

WHOLE = struct.pack(">QII", 1, 0x80FF0000, 0x40000001) + struct.pack(">H", 3) + b"abc"


@pytest.mark.parametrize("data, said", [
    (b"", "empty"),
    (WHOLE[:17], "cut short at byte offset 17"),
    (WHOLE[:-1], "cut short at byte offset 20"),
    (WHOLE + b"\0", "1 extra byte(s) at byte offset 21"),
    (WHOLE[:16] + b"\0\0", "contextBlob at byte offset 16 is empty"),
])
def test_a_malformed_context_is_named_with_its_byte_offset(data, said):
    assert said in context_problem(data)


def test_a_whole_context_passes():
    assert context_problem(WHOLE) is None


class _NoTpm:
    """A transport that fails the test if anything is sent."""

    def transact(self, command: bytes) -> bytes:
        raise AssertionError(f"sent {command.hex()}")

    def close(self) -> None:
        pass


@pytest.mark.parametrize("data", [b"", WHOLE + b"\0", WHOLE[:10]])
def test_the_client_never_sends_a_malformed_or_empty_context(data):
    tpm = PqcClient(_NoTpm())
    with pytest.raises(TrustlabError, match="TPM2_ContextLoad: not a TPMS_CONTEXT"):
        tpm.context_load(data)

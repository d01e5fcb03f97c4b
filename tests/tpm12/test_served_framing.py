"""How `serve` cuts a TPM 1.2 byte stream into commands: as swtpm does for libtpms (issue 26).

swtpm hands libtpms each read as one command, so libtpms itself answers a
frame whose paramSize is short of the bytes sent (TPM_BAD_PARAM_SIZE) and a
frame with a response tag (TPM_BADTAG). The served engine must see the same
bytes: the whole arrival is the command, and a bad TPM 1.2 tag is the TPM's to
answer, not the transport's (it used to close the connection).
"""

from __future__ import annotations

import struct

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.engine import Engine
from trustlab.devices.tpm12.primitives import KeyPool
from trustlab.serving.wire import Command, FrameReader, NEED_DATA
from trustlab.timing.clock import Clock
from trustlab.timing.registry import load

GET_CAP = struct.pack(">III", C.TPM_CAP_PROPERTY, 4, 0x101)


def _frame(tag: int, body: bytes = GET_CAP, size: int | None = None) -> bytes:
    return struct.pack(">HII", tag, size if size is not None else 10 + len(body), C.ORD["TPM_GetCapability"]) + body


def _commands(data: bytes) -> list:
    reader = FrameReader(family="tpm1.2")
    reader.feed(data)
    out = []
    while (event := reader.next_event()) is not NEED_DATA:
        out.append(event)
        if not isinstance(event, Command):
            break
    return out


def _rc(rsp: bytes) -> int:
    return struct.unpack(">I", rsp[6:10])[0]


def test_a_response_tag_reaches_the_tpm_which_answers_badtag() -> None:
    (event,) = _commands(_frame(C.TPM_TAG_RSP_COMMAND))
    assert isinstance(event, Command)
    engine = Engine(Clock(load("infineon-2010")), keygen=KeyPool())
    assert _rc(engine.execute(event.payload)) == C.RC["TPM_BADTAG"]


def test_bytes_beyond_param_size_belong_to_the_command() -> None:
    data = _frame(C.TPM_TAG_RQU_COMMAND, GET_CAP + b"\x00", size=10 + len(GET_CAP))
    (event,) = _commands(data)
    assert isinstance(event, Command) and event.payload == data
    engine = Engine(Clock(load("infineon-2010")), keygen=KeyPool())
    assert _rc(engine.execute(event.payload)) == C.RC["TPM_BAD_PARAM_SIZE"]


def test_a_frame_split_across_reads_is_still_one_command() -> None:
    reader = FrameReader(family="tpm1.2")
    whole = _frame(C.TPM_TAG_RQU_COMMAND)
    reader.feed(whole[:7])
    assert reader.next_event() is NEED_DATA
    reader.feed(whole[7:])
    event = reader.next_event()
    assert isinstance(event, Command) and event.payload == whole

"""Framing without sockets: TPM 2.0 headers, MS-simulator frames, rejections."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from trustlab.devices.tpm2 import wire as tpm2wire
from trustlab.serving import wire
from trustlab.devices.tpm2.commands import (
    TPM_RC_BAD_TAG,
    TPM_RC_COMMAND_SIZE,
    command_name,
)

GETRANDOM = tpm2wire.build_command(0x17B, b"\x00\x08")


def events(reader: wire.FrameReader) -> list:
    out = []
    while (ev := reader.next_event()) is not wire.NEED_DATA:
        out.append(ev)
        if isinstance(ev, wire.Reject):
            break
    return out


def test_raw_frame_in_pieces():
    r = wire.FrameReader()
    for i in range(len(GETRANDOM) - 1):
        r.feed(GETRANDOM[i:i + 1])
        assert r.next_event() is wire.NEED_DATA
    r.feed(GETRANDOM[-1:] + GETRANDOM)
    evs = events(r)
    assert evs == [wire.Command(GETRANDOM, "raw"), wire.Command(GETRANDOM, "raw")]
    assert evs[0].code == 0x17B


def test_mssim_send_command_and_session_end():
    r = wire.FrameReader()
    frame = struct.pack(">IBI", wire.MS_SEND_COMMAND, 3, len(GETRANDOM)) + GETRANDOM
    r.feed(frame + struct.pack(">I", wire.MS_SESSION_END))
    evs = events(r)
    assert evs[0] == wire.Command(GETRANDOM, "mssim", 3)
    assert isinstance(evs[1], wire.SessionEnd)
    reply = wire.frame_reply(b"\x80\x01" + b"\0" * 8, "mssim")
    assert reply[:4] == struct.pack(">I", 10) and reply[-4:] == b"\0\0\0\0"


def test_handshake():
    r = wire.FrameReader()
    r.feed(struct.pack(">II", wire.MS_REMOTE_HANDSHAKE, 1))
    assert events(r) == [wire.Handshake(1)]


def test_a_size_beyond_any_command_is_refused_and_ends_the_stream():
    r = wire.FrameReader(max_frame=4096)
    r.feed(struct.pack(">HII", 0x8001, 1 << 31, 0x17B))
    (ev,) = events(r)
    assert isinstance(ev, wire.Reject) and "2147483648-byte" in ev.reason
    assert ev.reply == wire.error_response(TPM_RC_COMMAND_SIZE)  # 80 01 00 00 00 0a 00 00 01 42, as libtpms
    r.feed(GETRANDOM)  # dead after a reject: 2 GiB are not read past
    assert r.next_event() is ev


def test_a_frame_just_over_the_cap_is_read_past_refused_and_the_stream_goes_on():
    r = wire.FrameReader(max_frame=4096)
    big = struct.pack(">HII", 0x8001, 4097, 0x17B) + b"\xAA" * 4087
    for i in range(0, len(big), 1000):  # in pieces: nothing of it is kept
        r.feed(big[i:i + 1000])
        assert r.buffered <= 4097 and (i + 1000 >= len(big) or r.next_event() is wire.NEED_DATA)
    r.feed(GETRANDOM)
    refused, nxt = events(r)
    assert isinstance(refused, wire.Refuse) and "4097-byte command exceeds the TPM's 4096-byte" in refused.reason
    assert refused.reply == wire.error_response(TPM_RC_COMMAND_SIZE)
    assert nxt == wire.Command(GETRANDOM, "raw") and r.buffered == 0


def test_an_oversized_mssim_command_is_refused_in_mssim_framing():
    r = wire.FrameReader(max_frame=4096)
    inner = struct.pack(">HII", 0x8001, 5000, 0x17B) + bytes(4990)
    r.feed(struct.pack(">IBI", wire.MS_SEND_COMMAND, 0, 5000) + inner
           + struct.pack(">IBI", wire.MS_SEND_COMMAND, 0, len(GETRANDOM)) + GETRANDOM)
    refused, nxt = events(r)
    assert refused.reply == wire.frame_reply(wire.error_response(TPM_RC_COMMAND_SIZE), "mssim")
    assert nxt == wire.Command(GETRANDOM, "mssim", 0)


def test_a_truncated_big_frame_is_answered_once_when_abandoned():
    r = wire.FrameReader(max_frame=8192)
    r.feed(struct.pack(">HII", 0x8001, 6000, 0x1A6) + bytes(2000))  # fits the cap, but only 2010 bytes come
    assert events(r) == [] and r.buffered == 2010
    refusal = r.abandon()
    assert refusal.reply == wire.error_response(TPM_RC_COMMAND_SIZE) and "2010 byte(s)" in refusal.reason
    assert r.abandon() is None and r.next_event() is refusal  # once; dead after it
    over = wire.FrameReader(max_frame=4096)
    over.feed(struct.pack(">HII", 0x8001, 9000, 0x17B) + bytes(100))  # over the cap, being read past
    assert over.abandon().reply == wire.error_response(TPM_RC_COMMAND_SIZE)
    assert wire.FrameReader().abandon() is None  # between frames: nothing to answer


def test_size_below_header_and_bad_tag():
    r = wire.FrameReader()
    r.feed(struct.pack(">HII", 0x8001, 4, 0x17B))
    assert wire.parse_header(events(r)[0].reply).code == TPM_RC_COMMAND_SIZE
    r = wire.FrameReader()
    r.feed(struct.pack(">HII", 0x80C1, 10, 0x17B))  # a 1.2-looking tag
    assert wire.parse_header(events(r)[0].reply).code == TPM_RC_BAD_TAG
    r = wire.FrameReader()
    r.feed(b"GET / HTTP/1.1\r\n")
    assert isinstance(events(r)[0], wire.Reject)


def test_mssim_inner_size_must_agree():
    inner = struct.pack(">HII", 0x8001, 20, 0x17B)  # claims 20, is 10
    r = wire.FrameReader()
    r.feed(struct.pack(">IBI", wire.MS_SEND_COMMAND, 0, len(inner)) + inner)
    assert isinstance(events(r)[0], wire.Reject)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(1, 17))
def test_reader_never_raises_and_never_hoards(data, step):
    r = wire.FrameReader(max_frame=4096)
    for i in range(0, len(data), step):
        r.feed(data[i:i + step])
        for ev in events(r):
            if isinstance(ev, wire.Command):
                assert wire.HEADER_SIZE <= len(ev.payload) <= 4096
                assert wire.parse_header(ev.payload).size == len(ev.payload)
            elif isinstance(ev, (wire.Reject, wire.Refuse)):
                assert len(ev.reply) in (10, 18)
    assert len(r._buf) <= 4096 + 9


def test_ctrl_builders():
    assert wire.ctrl_init() == struct.pack(">II", wire.CMD_INIT, 0)
    assert wire.ctrl_result(b"\0\0\0\0") == 0
    assert wire.ctrl_request_length(struct.pack(">II", wire.CMD_HASH_DATA, 5)) == 13
    assert command_name(0x15D) == "TPM2_Sign" and command_name(0x999).startswith("TPM2_CC_")


def test_command_table_matches_tpm2_pytss():
    from tpm2_pytss.constants import TPM2_CC

    from trustlab.devices.tpm2.commands import COMMAND_CODES

    for name in ("NV_Increment", "CreatePrimary", "Sign", "Quote", "PolicyPCR", "Unseal", "RSA_Decrypt"):
        assert COMMAND_CODES[int(getattr(TPM2_CC, name.upper() if hasattr(TPM2_CC, name.upper()) else name))] == name


def test_a_bad_first_byte_says_what_the_served_family_expects():
    """A TPM 1.2 serve said 'neither a TPM 2.0 tag ...' of a bad first byte (D8): each family names its own tags."""
    for family, expected in (("tpm1.2", "expected a TPM 1.2 tag (0x00C1..0x00C3)"),
                             ("tpm2", "expected a TPM 2.0 tag (0x8001, 0x8002)")):
        r = wire.FrameReader(family=family)
        r.feed(b"\x17\x03\x03\x00\x10")  # a TLS record
        ev = events(r)[0]
        assert isinstance(ev, wire.Reject) and ev.reason.startswith(f"first byte 0x17: {expected}"), ev.reason
        assert ("TPM 2.0" in ev.reason) == (family == "tpm2")

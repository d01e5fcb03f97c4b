"""APDU encoding/parsing and the card's status-word discipline (ISO 7816-4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from trustlab.devices.card import Card, CommandAPDU, ContactLink, ResponseAPDU, chain
from trustlab.devices.card.apdu import APDUError
from trustlab.timing.clock import Clock


def echo(card, apdu):
    return apdu.data[::-1]


def make_card(profile, **kw):
    card = Card(Clock(profile), ContactLink(), overhead_component="apdu_overhead", **kw)
    card.register(0x10, echo)
    card.register(0x20, lambda c, a: 1 / 0)  # a buggy handler
    return card


@pytest.mark.parametrize("cmd", [
    CommandAPDU(0, 0x10, 1, 2),
    CommandAPDU(0, 0x10, 1, 2, ne=256),
    CommandAPDU(0, 0x10, 1, 2, data=b"abc"),
    CommandAPDU(0, 0x10, 1, 2, data=b"x" * 255, ne=17),
    CommandAPDU(0, 0x10, 1, 2, ne=65536),
    CommandAPDU(0, 0x10, 1, 2, data=b"y" * 300),
    CommandAPDU(0, 0x10, 1, 2, data=b"z" * 1000, ne=4096),
])
def test_roundtrip_all_cases(cmd):
    assert CommandAPDU.parse(cmd.encode()) == cmd


def test_known_encodings():
    assert CommandAPDU(0x00, 0xA4, 0x04, 0x00, bytes.fromhex("A000000003"), 256).encode().hex() == \
        "00a4040005a00000000300"
    assert CommandAPDU(0, 0xB0, 0, 0, ne=65536).encode().hex() == "00b00000000000"
    assert CommandAPDU(0, 0xD6, 0, 0, b"\x01" * 256).encode()[:7].hex() == "00d60000000100"


@pytest.mark.parametrize("raw,why", [
    ("00100000ff", None), ("001000", "shorter"), ("0010000005aa", "Lc=5"), ("0010", "shorter"),
    ("001000000001", "truncated"), ("0010000000", None), ("00100000000301", None),
    ("0010000000000301", "extended Lc=3"), ("00100000000000aa", "Lc of zero"),
])
def test_parse_rejects_with_6700(raw, why):
    raw = bytes.fromhex(raw)
    if why is None:
        CommandAPDU.parse(raw)  # valid (case 2S / case 2E)
        return
    with pytest.raises(APDUError) as exc:
        CommandAPDU.parse(raw)
    assert exc.value.sw == 0x6700 and why in exc.value.why


def test_status_words(card_profile):
    card = make_card(card_profile)
    assert card.transmit(bytes.fromhex("001000000361626300")) == b"cba\x90\x00"
    assert card.transmit(bytes.fromhex("0010000003616263")) == b"\x61\x03"  # no Le: data waits
    assert card.transmit(bytes.fromhex("00c0000003")) == b"cba\x90\x00"
    assert card.transmit(b"\x00\x10")[-2:] == b"\x67\x00"              # truncated header
    assert card.transmit(bytes.fromhex("0010000005aa"))[-2:] == b"\x67\x00"  # Lc lies
    assert card.transmit(bytes.fromhex("a4100000"))[-2:] == b"\x6e\x00"  # class
    assert card.transmit(bytes.fromhex("00990000"))[-2:] == b"\x6d\x00"  # instruction
    assert card.transmit(bytes.fromhex("00600000"))[-2:] == b"\x6d\x00"  # 6X is not an INS
    assert card.transmit(bytes.fromhex("0010000000012c") + b"a" * 300)[-2:] == b"\x67\x00"  # extended off
    assert card.transmit(bytes.fromhex("00200000"))[-2:] == b"\x6f\x00"  # handler bug
    assert isinstance(card.last_error, ZeroDivisionError)
    assert card.transmit(bytes.fromhex("00c00000"))[-2:] == b"\x69\x85"  # nothing pending


def test_chaining_and_get_response(card_profile):
    card = make_card(card_profile)
    msg = bytes(range(256)) * 3  # 768 bytes -> 4 chained commands, response by GET RESPONSE
    resp = card.send(0x00, 0x10, 0, 0, msg)
    assert resp.ok and resp.data == msg[::-1]
    assert card.clock.command_counts == {} and card.clock.by_component["link"] > 0


def test_chain_interrupted_and_oversized(card_profile):
    card = make_card(card_profile, max_message=300)
    first = chain(0x00, 0x10, 0, 0, b"a" * 400)[0]
    assert card.exchange(first).sw == 0x9000
    other = CommandAPDU(0x00, 0x10, 1, 0, b"b")
    assert card.exchange(other).sw == 0x6883
    resp = card.send(0x00, 0x10, 0, 0, b"a" * 400)
    assert resp.sw == 0x6A84
    assert card.send(0x00, 0x10, 0, 0, b"ok").data == b"ko"  # card recovered


_FUZZ_CARD = None


def _fuzz_card():
    global _FUZZ_CARD
    if _FUZZ_CARD is None:
        from trustlab.timing.profile import Component, Profile

        prof = Profile("fuzz", {"apdu_overhead": Component("apdu_overhead", 0.1)}, family="card")
        _FUZZ_CARD = make_card(prof, max_message=400)
    return _FUZZ_CARD


@settings(max_examples=400, deadline=None)
@given(raw=st.one_of(
    st.binary(max_size=600),
    st.builds(lambda h, b: h + b, st.sampled_from([b"\x00\x10\x00\x00", b"\x10\x10\x00\x00", b"\x80\x20\x00\x00",
                                                    b"\x00\xc0\x00\x00", b"\xff\x10\x00\x00"]),
              st.binary(max_size=300)),
))
def test_fuzz_never_raises(raw):
    """Property: any byte string gets a response ending in a status word, never an exception."""
    out = _fuzz_card().transmit(raw)
    resp = ResponseAPDU.parse(out)
    assert resp.sw >> 8 in (0x90, 0x61, 0x67, 0x68, 0x69, 0x6A, 0x6B, 0x6D, 0x6E, 0x6F)
    if resp.sw != 0x9000 and resp.sw >> 8 != 0x61:
        assert resp.data == b""

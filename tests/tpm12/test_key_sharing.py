"""Key structures parsed once per distinct input, and copied without dataclasses.replace: same values, same bytes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12.errors import TpmError
from trustlab.devices.tpm12.keys import Key11, Key12, KeyParms, key_from_bytes
from trustlab.devices.tpm12.wire import Reader

PARMS = KeyParms(C.TPM_ALG_RSA, C.TPM_ES_RSAESOAEP_SHA1_MGF1, C.TPM_SS_NONE)


def _fresh(key: Key12, **changes) -> Key12:
    return replace(key, **changes)  # (a new object: no memos)


@pytest.mark.parametrize("cls", [Key12, Key11])
def test_copies_equal_replace_and_marshal_afresh(cls):
    key = cls(C.TPM_KEY_STORAGE, 0, C.TPM_AUTH_ALWAYS, PARMS, b"\x01" * 256, b"\x02" * 256, b"")
    key.marshal(), key.pubkey()  # memos filled on the original
    for copy, expect in ((key.with_enc(b"\x03" * 100), _fresh(key, enc=b"\x03" * 100)),
                         (key.with_public(b"\x04" * 256), _fresh(key, pub=b"\x04" * 256, enc=b""))):
        assert type(copy) is cls and copy == expect
        assert copy.marshal() == _fresh(expect).marshal()
        assert copy.public_part() == _fresh(expect).public_part()
        assert copy.pubkey() == _fresh(expect).pubkey()
    assert key.marshal() == _fresh(key).marshal()  # the original is untouched


def test_parsing_the_same_blob_twice_gives_equal_keys_and_bytes():
    blob = Key12(C.TPM_KEY_SIGNING, 0, C.TPM_AUTH_ALWAYS,
                 KeyParms(C.TPM_ALG_RSA, C.TPM_ES_NONE, C.TPM_SS_RSASSAPKCS1v15_SHA1), b"\x05" * 256, b"\x06" * 300).marshal()
    a, b = key_from_bytes(blob), key_from_bytes(bytes(blob))
    assert a == b and a.marshal() == b.marshal() == blob
    legacy = Key11(C.TPM_KEY_STORAGE, 0, C.TPM_AUTH_ALWAYS, PARMS, b"\x01" * 256).marshal()
    assert type(key_from_bytes(legacy)) is Key11 and key_from_bytes(legacy).marshal() == legacy


def test_a_bad_parameter_set_fails_every_time():
    bad = Key12(C.TPM_KEY_STORAGE, 0, C.TPM_AUTH_ALWAYS, KeyParms(key_bits=777), b"\x01" * 256).marshal()
    for _ in range(2):  # (failures are not cached)
        with pytest.raises(TpmError) as e:
            key_from_bytes(bad)
        assert e.value.rc == C.RC["TPM_BAD_KEY_PROPERTY"] and "not 777" in str(e.value)


def _field_by_field(r: Reader) -> Key12:
    """TPM_KEY12 parsed one field at a time (the parser before the one-read header)."""
    if r.u16() != C.TPM_TAG_KEY12:
        raise TpmError("TPM_INVALID_STRUCTURE", "not a TPM_KEY12 (tag)")
    r.u16()
    usage, flags, auth_usage = r.u16(), r.u32(), r.u8()
    parms = KeyParms.unmarshal(r)
    pcr, pub, enc = r.sized(512), r.sized(512), r.sized(1024)
    return Key12(usage, flags, auth_usage, parms, pub, enc, pcr)


def _outcome(parse, data: bytes):
    r = Reader(data, "TPM_KEY12")
    try:
        return parse(r), r.pos
    except TpmError as e:
        return e.rc, str(e)


def test_every_prefix_and_bad_tag_parses_or_fails_as_field_by_field():
    blob = Key12(C.TPM_KEY_BIND, 0, C.TPM_AUTH_ALWAYS, PARMS, b"\x07" * 256, b"\x08" * 256, b"\x00\x01").marshal()
    for data in [blob[:n] for n in range(len(blob) + 1)] + [b"\x00\x00" + blob[2:], blob[:30] + b"\xff" * 4]:
        assert _outcome(Key12.unmarshal, data) == _outcome(_field_by_field, data)

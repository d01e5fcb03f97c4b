"""The engine's and the host's HMAC-SHA1 is RFC 2104's, byte for byte (issue 24).

``primitives.hmac_sha1`` builds HMAC from OpenSSL's SHA-1 and the ipad/opad
XOR (as the standard library's ``hmac`` module does) instead of OpenSSL's
one-shot HMAC call; the reference here is that one-shot call (``hmac.digest``)
and RFC 2202's published test vectors, for keys shorter than, equal to and
longer than a block, and messages of every length around the block boundary.
"""

from __future__ import annotations

import hmac

from hypothesis import given, settings
from hypothesis import strategies as st

from trustlab.devices.tpm12 import hostcrypto
from trustlab.devices.tpm12.primitives import hmac_sha1

# RFC 2202, section 3 (HMAC-SHA-1): (key, data, digest)
RFC2202 = [
    (b"\x0b" * 20, b"Hi There", "b617318655057264e28bc0b6fb378c8ef146be00"),
    (b"Jefe", b"what do ya want for nothing?", "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"),
    (b"\xaa" * 20, b"\xdd" * 50, "125d7342b9ac11cd91a39af48aa17b4f63f175d3"),
    (bytes(range(1, 26)), b"\xcd" * 50, "4c9007f4026250c6bc8414f9bf50c86c2d7235da"),
    (b"\x0c" * 20, b"Test With Truncation", "4c1a03424b55e07fe7f27be1d58bb9324a9a5a04"),
    (b"\xaa" * 80, b"Test Using Larger Than Block-Size Key - Hash Key First",
     "aa4ae5e15272d00e95705637ce8a3b55ed402112"),
    (b"\xaa" * 80, b"Test Using Larger Than Block-Size Key and Larger Than One Block-Size Data",
     "e8e99d0f45237d786d6bbaa7965c7808bbff1a91"),
]


def test_rfc2202_vectors() -> None:
    for key, data, want in RFC2202:
        assert hmac_sha1(key, data).hex() == want
        assert hostcrypto.hmac_sha1(key, data).hex() == want


@settings(max_examples=300, deadline=None)
@given(key=st.binary(max_size=150), msg=st.binary(max_size=300))
def test_equals_the_one_shot_hmac(key: bytes, msg: bytes) -> None:
    assert hmac_sha1(key, msg) == hmac.digest(key, msg, "sha1")


def test_block_boundaries() -> None:
    for klen in (0, 1, 20, 63, 64, 65, 128):
        for mlen in (0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000):
            key, msg = bytes(range(klen % 256))[:klen] or b"", b"m" * mlen
            assert hmac_sha1(key, msg) == hmac.digest(key, msg, "sha1"), (klen, mlen)

"""RFC 8391 scheme code: Botan known-answer vector, sign/verify round trips, sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from trustlab.apps.hbs import wots
from trustlab.apps.hbs.hashes import Hasher
from trustlab.apps.hbs.keys import SecretSeeds, public_key, reference_sign
from trustlab.apps.hbs.params import XMSSParams
from trustlab.apps.hbs.verify import Verifier
from trustlab.errors import TrustlabError

DATA = Path(__file__).parent / "data"


def _vectors(name: str) -> list[dict[str, str]]:
    out, cur = [], {}
    for line in (DATA / name).read_text().splitlines():
        if line.startswith("#"):
            continue
        if not line.strip():
            if cur:
                out.append(cur)
            cur = {}
            continue
        k, _, v = line.partition("=")
        cur[k.strip()] = v.strip()
    if cur:
        out.append(cur)
    return out


def test_botan_kat_verifies_and_tampering_fails():
    (vec,) = _vectors("botan_xmss_verify.vec")
    v = Verifier(10, 1, 16, idx_bytes=8)  # Botan writes the leaf index in 8 bytes
    pk, msg, sig = (bytes.fromhex(vec[k]) for k in ("PublicKey", "Msg", "Signature"))
    assert v.verify(pk, msg, sig)
    assert not v.verify(pk, msg + b"x", sig)
    for pos in (7, 8, 40, 40 + 67 * 32, len(sig) - 1):  # idx, r, WOTS+ part, auth path
        bad = bytearray(sig)
        bad[pos] ^= 1
        assert not v.verify(pk, msg, bytes(bad)), pos


def test_botan_signing_kat_from_the_reference_implementation():
    """Botan's xmss_sig.vec (generated with the XMSS reference implementation): our key derivation,
    message key, digest and WOTS+ signature reproduce its leaf-0 signature byte for byte, and the
    whole signature verifies. (The 10-high tree is not rebuilt here: that is 1024 leaves.)"""
    from trustlab.apps.hbs.keys import message_digest, message_key, wots_sign_at
    (vec,) = _vectors("botan_xmss_sig.vec")
    sk, sig, msg = (bytes.fromhex(vec[k]) for k in ("PrivateKey", "Signature", "Msg"))
    oid, root, seed = sk[:4], sk[4:36], sk[36:68]
    assert sk[68:72] == bytes(4)  # leaf index 0
    seeds = SecretSeeds(sk_seed=sk[104:136], sk_prf=sk[72:104], seed=seed)
    p, hs = XMSSParams(10), Hasher()
    r = message_key(hs, p, seeds, 0)
    assert sig[:4] == bytes(4) and sig[4:36] == r
    m = message_digest(hs, p, r, root, 0, msg)
    assert b"".join(wots_sign_at(hs, p, seeds, 0, 0, 0, m)) == sig[36:36 + 67 * 32]
    assert Verifier(10).verify(oid + root + seed, msg, sig)  # RFC 4-byte index encoding here
    assert not Verifier(10).verify(oid + root + seed, msg + b"\0", sig)


def test_wots_lengths_match_rfc():
    assert (XMSSParams(10).len1, XMSSParams(10).len2, XMSSParams(10).wots_len) == (64, 3, 67)
    assert XMSSParams(10, w=4).wots_len == 133
    assert XMSSParams(10).signature_bytes == 2500  # XMSS-SHA2_10_256 per RFC 8391
    assert XMSSParams(20, 2).signature_bytes == 4963  # XMSSMT-SHA2_20/2_256
    assert XMSSParams(20, 4).signature_bytes == 9251  # XMSSMT-SHA2_20/4_256


@pytest.mark.parametrize("h,d,w", [(4, 2, 16), (3, 1, 16), (6, 3, 4)])
def test_reference_signatures_verify(h, d, w):
    p = XMSSParams(h, d, w)
    s = SecretSeeds.from_int(7)
    pk = public_key(Hasher(), p, s)
    v = Verifier(h, d, w)
    for idx in (0, p.signatures - 1):
        sig = reference_sign(p, s, pk, idx, b"msg %d" % idx)
        assert len(sig) == p.signature_bytes
        assert v.verify(pk.to_bytes(), b"msg %d" % idx, sig)
        assert not v.verify(pk.to_bytes(), b"other", sig)


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.sampled_from([4, 16]))
def test_wots_pk_from_sig_recovers_pk(m, w):
    from trustlab.apps.hbs.address import Address
    p = XMSSParams(2, 1, w)
    hs = Hasher()
    adrs = Address()
    sk = wots.secret_key(hs, p, b"k" * 32, b"s" * 32, adrs)
    pk = wots.public_key(hs, p, sk, b"s" * 32, adrs.copy())
    sig = wots.sign(hs, p, m, sk, b"s" * 32, adrs.copy())
    assert wots.pk_from_sig(hs, p, m, sig, b"s" * 32, adrs.copy()) == pk
    digits = wots.message_digits(p, m)
    assert len(digits) == p.wots_len and all(0 <= x < w for x in digits)


@pytest.mark.parametrize("kw", [dict(h=20, d=3), dict(h=4, w=8), dict(h=0), dict(h=4, d=5)])
def test_bad_params_are_clear_errors(kw):
    with pytest.raises(TrustlabError, match="XMSS parameter"):
        XMSSParams(**kw)

"""Cross-checks against independent implementations, tampering, and OCB2's published break."""

from __future__ import annotations

import warnings

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM, AESOCB3
from Crypto.Cipher import AES as PyAES
from hypothesis import given, settings, strategies as st

from trustlab.apps.ae import CCM, ETM, GCM, OCB2, OCB3, InsecureModeWarning, InvalidTag, make_mode
from trustlab.apps.ae.etm import cbc_mac
from trustlab.devices.card import CardCrypto
from trustlab.errors import TrustlabError

keys = st.binary(min_size=16, max_size=16)
msgs = st.binary(max_size=200)


@settings(max_examples=60, deadline=None)
@given(key=keys, nonce=st.binary(min_size=12, max_size=12), pt=msgs, aad=st.binary(max_size=70))
def test_ocb3_matches_openssl_and_pycryptodome(key, nonce, pt, aad):
    ct, tag = OCB3(CardCrypto(), key).encrypt(nonce, pt, aad)
    assert ct + tag == AESOCB3(key).encrypt(nonce, pt, aad)
    ref = PyAES.new(key, PyAES.MODE_OCB, nonce=nonce)
    ref.update(aad)
    assert (ct, tag) == ref.encrypt_and_digest(pt)


@settings(max_examples=60, deadline=None)
@given(key=keys, nonce=st.binary(min_size=7, max_size=13), pt=msgs, aad=st.binary(max_size=70),
       t=st.sampled_from([4, 8, 16]))
def test_ccm_matches_openssl_and_pycryptodome(key, nonce, pt, aad, t):
    ct, tag = CCM(CardCrypto(), key, tag_len=t).encrypt(nonce, pt, aad)
    assert ct + tag == AESCCM(key, t).encrypt(nonce, pt, aad)
    ref = PyAES.new(key, PyAES.MODE_CCM, nonce=nonce, mac_len=t)
    ref.update(aad)
    assert (ct, tag) == ref.encrypt_and_digest(pt)


@settings(max_examples=60, deadline=None)
@given(key=keys, nonce=st.binary(min_size=1, max_size=40), pt=msgs, aad=st.binary(max_size=70))
def test_gcm_matches_openssl_and_pycryptodome(key, nonce, pt, aad):
    ct, tag = GCM(CardCrypto(), key).encrypt(nonce, pt, aad)
    if len(nonce) >= 8:
        assert ct + tag == AESGCM(key).encrypt(nonce, pt, aad)
    ref = PyAES.new(key, PyAES.MODE_GCM, nonce=nonce)
    ref.update(aad)
    assert (ct, tag) == ref.encrypt_and_digest(pt)


@settings(max_examples=60, deadline=None)
@given(key=keys, mkey=keys, nonce=st.binary(min_size=16, max_size=16), pt=msgs)
def test_etm_is_ctr_then_cbc_mac(key, mkey, nonce, pt):
    if key == mkey:
        return
    for mac_nonce in (True, False):
        ct, tag = ETM(CardCrypto(), key, mac_key=mkey, mac_nonce=mac_nonce).encrypt(nonce, pt)
        ctr = Cipher(algorithms.AES(key), modes.CTR(nonce)).encryptor()
        assert ct == ctr.update(pt) + ctr.finalize()
        data = nonce + ct if mac_nonce else ct
        padded = data + bytes(-len(data) % 16) if data else bytes(16)
        cbc = Cipher(algorithms.AES(mkey), modes.CBC(bytes(16))).encryptor()
        assert tag == (cbc.update(padded) + cbc.finalize())[-16:][:8]


def test_etm_paper_configuration_does_not_authenticate_the_nonce():
    """MAC over C alone (the paper's Figure 3): a changed nonce still verifies -- the reason
    ISO/IEC 19772 mechanism 5 MACs S || C."""
    from trustlab.apps.ae import NONCES

    weak, strong = make_mode("etm", CardCrypto()), make_mode("etm-iso", CardCrypto())
    nonce = NONCES["etm"]
    other = bytes([nonce[0] ^ 1]) + nonce[1:]
    ct, tag = weak.encrypt(nonce, b"amount=100.00 EUR")
    assert weak.decrypt(other, ct, tag) != b"amount=100.00 EUR"  # accepted, wrong plaintext
    ct, tag = strong.encrypt(nonce, b"amount=100.00 EUR")
    with pytest.raises(InvalidTag):
        strong.decrypt(other, ct, tag)


@settings(max_examples=80, deadline=None)
@given(mode=st.sampled_from(["ocb2", "ocb3", "ccm", "etm-iso", "gcm"]), pt=st.binary(min_size=1, max_size=64),
       where=st.sampled_from(["ct", "tag", "nonce", "aad"]), bit=st.integers(0, 7), data=st.data())
def test_any_tampering_is_rejected(mode, pt, where, bit, data):
    from trustlab.apps.ae import NONCES

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureModeWarning)
        ae = make_mode(mode, CardCrypto())
    nonce, aad = NONCES[mode], (b"" if mode == "etm-iso" else b"header")
    ct, tag = ae.encrypt(nonce, pt, aad)
    assert ae.decrypt(nonce, ct, tag, aad) == pt
    fields = {"ct": ct, "tag": tag, "nonce": nonce, "aad": aad}
    if not fields[where]:
        return
    target = bytearray(fields[where])
    i = data.draw(st.integers(0, len(target) - 1))
    target[i] ^= 1 << bit
    fields[where] = bytes(target)
    with pytest.raises(InvalidTag):
        ae.decrypt(fields["nonce"], fields["ct"], fields["tag"], fields["aad"])


def test_ocb2_warns():
    with pytest.warns(InsecureModeWarning, match="broken"):
        OCB2(CardCrypto(), bytes(16))


def test_ocb2_universal_forgery_inoue_minematsu():
    """One encryption query yields a valid never-encrypted ciphertext (Inoue-Minematsu 2018, minimal forgery).

    Query M = len(n) || M2 (two blocks). Then C' = C1 xor len(n) with tag T' = M2 xor C2 is accepted as
    a one-block message; its plaintext len(n) xor 2L even leaks L = E_K(N).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureModeWarning)
        ocb2 = OCB2(CardCrypto(), bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c"))
    nonce = bytes.fromhex("000102030405060708090a0b0c0d0e0f")
    len_n = (128).to_bytes(16, "big")
    m2 = b"attacker chosen!"
    ct, tag = ocb2.encrypt(nonce, len_n + m2)
    c1, c2 = ct[:16], ct[16:]
    forged_ct = bytes(a ^ b for a, b in zip(c1, len_n))
    forged_tag = bytes(a ^ b for a, b in zip(m2, c2))
    plaintext = ocb2.decrypt(nonce, forged_ct, forged_tag)  # accepted: no InvalidTag
    assert forged_ct != c1 and len(plaintext) == 16
    # the forged plaintext is len(n) xor 2L; recover L and check it against the real E_K(N)
    two_l = bytes(a ^ b for a, b in zip(plaintext, len_n))
    crypto = CardCrypto()
    l_real = crypto.encrypt(crypto.load_key(bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c")), nonce)
    from trustlab.apps.ae.common import double

    assert double(crypto, l_real) == two_l


def test_ocb3_resists_the_same_forgery():
    ocb3 = OCB3(CardCrypto(), bytes(16))
    nonce = bytes(12)
    len_n = (128).to_bytes(16, "big")
    ct, tag = ocb3.encrypt(nonce, len_n + b"attacker chosen!")
    forged = bytes(a ^ b for a, b in zip(ct[:16], len_n))
    with pytest.raises(InvalidTag):
        ocb3.decrypt(nonce, forged, bytes(a ^ b for a, b in zip(b"attacker chosen!", ct[16:])))


def test_bad_parameters_are_clear_errors():
    with pytest.raises(TrustlabError, match="16-byte block"):
        OCB3(CardCrypto(cipher="des"), bytes(8))
    with pytest.raises(TrustlabError, match="nonce must be"):
        OCB3(CardCrypto(), bytes(16)).encrypt(bytes(16), b"x")
    with pytest.raises(TrustlabError, match="separate MAC key"):
        ETM(CardCrypto(), bytes(16))
    with pytest.raises(TrustlabError, match="must differ"):
        ETM(CardCrypto(), bytes(16), mac_key=bytes(16))
    with pytest.raises(TrustlabError, match="tag length"):
        CCM(CardCrypto(), bytes(16), tag_len=5)
    with pytest.raises(TrustlabError, match="unknown AE mode"):
        make_mode("eax", CardCrypto())


def test_substitute_ciphers_run_every_mode():
    """The paper's 16-byte substitutes encrypt and decrypt consistently (half the block stays clear)."""
    for cipher in ("tdes(m1)||m2", "des(m1)||m2", "tdes(m1)||tdes(m2)", "des(m1)||des(m2)"):
        crypto = CardCrypto(cipher=cipher)
        kc = crypto.load_key(bytes(range(16)))
        block = bytes(range(16, 32))
        out = crypto.encrypt(kc, block)
        assert crypto.decrypt(kc, out) == block
        if cipher.endswith("||m2"):
            assert out[8:] == block[8:]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsecureModeWarning)
            for mode in ("ocb2", "ocb3", "ccm", "etm", "gcm"):
                ae = make_mode(mode, CardCrypto(cipher=cipher))
                from trustlab.apps.ae import NONCES

                ct, tag = ae.encrypt(NONCES[mode], b"payment data 123456")
                assert ae.decrypt(NONCES[mode], ct, tag) == b"payment data 123456"

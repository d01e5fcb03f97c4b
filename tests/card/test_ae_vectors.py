"""Every AE mode against the official test vectors stored in tests/card/vectors/."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from trustlab.apps.ae import CCM, GCM, OCB2, OCB3, InvalidTag
from trustlab.apps.ae.etm import cbc_mac, ctr_crypt
from trustlab.devices.card import CardCrypto

VECTORS = Path(__file__).parent / "vectors"


def load(name: str) -> dict:
    return json.loads((VECTORS / name).read_text())


def cases(name: str) -> list[dict]:
    return load(name)["cases"]


def aad_of(case: dict) -> bytes:
    if "aad_repeat" in case:
        return bytes.fromhex(case["aad_repeat"]["pattern"]) * case["aad_repeat"]["times"]
    return bytes.fromhex(case["aad"])


def run_case(mode_cls, case, **kw):
    key, nonce = bytes.fromhex(case["key"]), bytes.fromhex(case["nonce"])
    pt, ct, tag = (bytes.fromhex(case[k]) for k in ("plaintext", "ciphertext", "tag"))
    aad = aad_of(case)
    mode = mode_cls(CardCrypto(), key, tag_len=len(tag), **kw)
    assert mode.encrypt(nonce, pt, aad) == (ct, tag), case["name"]
    assert mode.decrypt(nonce, ct, tag, aad) == pt
    bad = bytes([tag[0] ^ 1]) + tag[1:]
    with pytest.raises(InvalidTag):
        mode.decrypt(nonce, ct, bad, aad)


@pytest.mark.parametrize("case", cases("ocb3_rfc7253.json"), ids=lambda c: c["name"])
def test_ocb3_rfc7253(case):
    run_case(OCB3, case)


@pytest.mark.parametrize("it", load("ocb3_rfc7253.json")["iterated"], ids=lambda i: f"TAGLEN{i['taglen_bits']}")
def test_ocb3_rfc7253_iterated(it):
    """RFC 7253 Appendix A's iterated test: 384 encryptions folded into one."""
    t = it["taglen_bits"] // 8
    key = bytes(15) + bytes([it["taglen_bits"]])
    ocb = OCB3(CardCrypto(), key, tag_len=t)
    out = bytearray()
    for i in range(128):
        s = bytes(i)
        for j, (a, p) in enumerate(((s, s), (b"", s), (s, b""))):
            ct, tag = ocb.encrypt((3 * i + j + 1).to_bytes(12, "big"), p, a)
            out += ct + tag
    ct, tag = ocb.encrypt((385).to_bytes(12, "big"), b"", bytes(out))
    assert (ct + tag).hex() == it["output"]


@pytest.mark.parametrize("case", cases("ocb2_draft_krovetz_ocb_00.json"), ids=lambda c: c["name"])
def test_ocb2_draft_vectors(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_case(OCB2, case)


@pytest.mark.parametrize("case", cases("ccm_rfc3610_sp800_38c.json"), ids=lambda c: c["name"])
def test_ccm_vectors(case):
    run_case(CCM, case)


@pytest.mark.parametrize("case", cases("gcm_spec.json"), ids=lambda c: c["name"])
def test_gcm_vectors(case):
    run_case(GCM, case)


def test_fips113_des_cbc_mac():
    v = load("etm_parts.json")["fips113"]
    crypto = CardCrypto(cipher="des")
    kc = crypto.load_key(bytes.fromhex(v["key"]))
    assert cbc_mac(crypto, kc, v["data_ascii"].encode())[:4].hex() == v["mac32"]


def test_sp800_38a_ctr():
    v = load("etm_parts.json")["sp800_38a_ctr"]
    crypto = CardCrypto()
    kc = crypto.load_key(bytes.fromhex(v["key"]))
    got = ctr_crypt(crypto, kc, bytes.fromhex(v["counter"]), bytes.fromhex(v["plaintext"]))
    assert got.hex() == v["ciphertext"]

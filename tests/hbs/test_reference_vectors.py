"""XMSS^MT against the XMSS reference implementation: the host signer, the simulated card
and the independent verifier all reproduce the reference code's signatures byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from trustlab.apps.hbs.hashes import Hasher
from trustlab.apps.hbs.host import CardSigner, personalize
from trustlab.apps.hbs.keys import SecretSeeds, public_key, reference_sign
from trustlab.apps.hbs.params import XMSSParams
from trustlab.apps.hbs.verify import Verifier

DATA = Path(__file__).parent / "data" / "xmss_reference.vec"


def _vectors() -> list[dict]:
    out = []
    for block in DATA.read_text().split("\n\n"):
        lines = [l for l in block.splitlines() if l and not l.startswith("#")]
        if not lines:
            continue
        kv = dict(l.split(" = ", 1) for l in lines)
        h, d, w = map(int, kv["Params"].split("/"))
        seed = bytes.fromhex(kv["Seed"])
        out.append({"p": XMSSParams(h, d, w), "seeds": SecretSeeds(seed[:32], seed[32:64], seed[64:]),
                    "pk": bytes.fromhex(kv["PublicKey"]), "idx": int(kv["Index"]),
                    "msg": bytes.fromhex(kv["Msg"]), "sig": bytes.fromhex(kv["Signature"])})
    return out


VECTORS = _vectors()


def test_vectors_present():
    assert {v["p"].label() for v in VECTORS} == {"h=4 d=2 w=16", "h=6 d=3 w=4", "h=3 d=1 w=16"}


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: f"{v['p'].label()} idx={v['idx']}")
def test_host_signer_and_verifier_match_reference(v):
    p = v["p"]
    pk = public_key(Hasher(), p, v["seeds"])
    assert pk.root + pk.seed == v["pk"]
    assert reference_sign(p, v["seeds"], pk, v["idx"], v["msg"]) == v["sig"]
    verifier = Verifier(p.h, p.d, p.w)
    assert verifier.verify(pk.to_bytes(), v["msg"], v["sig"])
    assert not verifier.verify(pk.to_bytes(), v["msg"] + b"!", v["sig"])


@pytest.mark.parametrize("label", ["h=4 d=2 w=16", "h=6 d=3 w=4"])
def test_card_reproduces_reference_signatures(label):
    vecs = {v["idx"]: v for v in VECTORS if v["p"].label() == label}
    first = next(iter(vecs.values()))
    p = first["p"]
    card, pk = personalize(p, first["seeds"])
    assert pk.root + pk.seed == first["pk"]
    signer = CardSigner(card)
    for idx in range(max(vecs) + 1):
        msg = vecs[idx]["msg"] if idx in vecs else b"filler %d" % idx
        sig = signer.sign(msg)
        if idx in vecs:
            assert sig == vecs[idx]["sig"], idx
        signer.prepare()

"""The simulated card: signatures verify off-card, match the reference signer,
one-time keys are never reused — also when the card is torn at any point."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from trustlab.apps.hbs.applet import (CLA, INS_SIGN_BEGIN, INS_SIGN_NEXT, STAGES, SW_EXHAUSTED, SW_NO_SESSION,
                                      stage_chains)
from trustlab.apps.hbs.costs import CardTear
from trustlab.apps.hbs.host import CardError, CardSigner, personalize
from trustlab.apps.hbs.keys import SecretSeeds, reference_sign
from trustlab.apps.hbs.params import XMSSParams
from trustlab.apps.hbs.verify import Verifier
from trustlab.devices.card.apdu import SW_OK, CommandAPDU, ResponseAPDU


def cmd(ins: int, p1: int = 0, data: bytes = b"") -> bytes:
    return CommandAPDU(CLA, ins, p1, 0, data, 65536).encode(extended=True)


def split(resp: bytes) -> tuple[bytes, int]:
    r = ResponseAPDU.parse(resp)
    return r.data, r.sw

P = XMSSParams(4, 2, 4)  # small and fast: 16 signatures, two layers of 4-leaf subtrees


def fresh(p: XMSSParams = P, seed: int = 1):
    card, pk = personalize(p, SecretSeeds.from_int(seed))
    return card, pk, CardSigner(card), Verifier(p.h, p.d, p.w)


def test_stages_cover_every_chain_once():
    for w in (4, 16):
        p = XMSSParams(4, 2, w)
        chains = [i for s in range(STAGES) for i in stage_chains(p, s)]
        assert chains == list(range(p.wots_len))


def test_whole_lifetime_signs_verifies_then_refuses():
    card, pk, signer, v = fresh()
    s = SecretSeeds.from_int(1)
    assert signer.public_key() == pk.to_bytes()
    for i in range(P.signatures):
        msg = b"message %d" % i
        sig = signer.sign(msg)
        assert len(sig) == P.signature_bytes
        assert v.verify(pk.to_bytes(), msg, sig)
        if i in (0, 4, 15):  # subtree switches on both layers happen at 4 and at 16
            assert sig == reference_sign(P, s, pk, i, msg)
        signer.prepare()
    with pytest.raises(CardError, match="6A84"):
        signer.sign(b"one too many")


def test_memory_layout_matches_paper_formula():
    card, *_ = fresh(XMSSParams(6, 3, 16))
    assert card.persistent_state_bytes == 32 * 67 * 2 + 32 * 5 * 4


def test_reused_index_is_refused_and_wrong_stage_is_refused():
    card, pk, signer, v = fresh()
    signer.sign(b"a", expect_index=0)
    with pytest.raises(CardError, match="6982"):
        signer.sign(b"b", expect_index=0)
    with pytest.raises(CardError, match="6A80"):
        signer.sign(b"b", expect_index=7)
    # a stage out of order ends the session; a replayed stage is refused
    assert split(card.transmit(cmd(INS_SIGN_BEGIN, 0, b"c")))[1] == SW_OK
    assert split(card.transmit(cmd(INS_SIGN_NEXT, 3)))[1] == SW_NO_SESSION
    assert split(card.transmit(cmd(INS_SIGN_NEXT, 1)))[1] == SW_NO_SESSION
    assert signer.index() == 2
    # malformed or unknown commands get a status word, never a crash, and consume nothing
    assert split(card.transmit(cmd(INS_SIGN_BEGIN, 2, b"x")))[1] == 0x6B00
    assert split(card.transmit(b"\x80"))[1] == 0x6700
    assert split(card.transmit(bytes([CLA, 0x77, 0, 0])))[1] == 0x6D00
    assert split(card.transmit(bytes([0x00, INS_SIGN_BEGIN, 0, 0])))[1] == 0x6E00
    assert signer.index() == 2


def test_signing_without_preparation_is_refused_not_wrong():
    card, pk, signer, v = fresh()
    for i in range(P.leaves_per_tree):
        signer.sign(b"x")
    with pytest.raises(CardError, match="6986"):
        signer.sign(b"needs the next subtree")
    assert signer.index() == P.leaves_per_tree  # the refusal consumed nothing
    signer.prepare()
    assert v.verify(pk.to_bytes(), b"y", signer.sign(b"y"))


def _exposed_index(resp: bytes) -> int | None:
    body, sw = split(resp)
    return int.from_bytes(body[:P.idx_bytes], "big") if sw == SW_OK else None


def _run_with_tears(tears: list[tuple[int, int]]) -> None:
    """Sign the whole lifetime; before signature/prepare k, arm a tear after n card events.

    Whatever happens, an index that ever left the card is never handed out again, and
    every signature completed verifies.
    """
    card, pk, signer, v = fresh()
    plan = dict(tears)
    exposed: list[int] = []
    completed = 0
    step = 0
    while True:
        if step in plan:
            card.meter.tear_after = plan[step]
        step += 1
        try:
            signer.prepare()
            resp = card.transmit(cmd(INS_SIGN_BEGIN, 0, b"m"))
            body, sw = split(resp)
            if sw == SW_EXHAUSTED:
                break
            assert sw == SW_OK, hex(sw)
            idx = _exposed_index(resp)
            assert idx not in exposed, f"index {idx} handed out twice"
            exposed.append(idx)
            parts = [body]
            for stage in range(1, STAGES):
                b2, sw2 = split(card.transmit(cmd(INS_SIGN_NEXT, stage)))
                assert sw2 == SW_OK
                parts.append(b2)
            assert v.verify(pk.to_bytes(), b"m", b"".join(parts))
            completed += 1
        except CardTear:
            card.meter.tear_after = None
            assert signer.index() >= (max(exposed) + 1 if exposed else 0)  # never rolls back
        assert step < 200
    assert sorted(exposed) == exposed  # strictly increasing, hence unique
    assert len(exposed) - completed <= len(plan)  # a tear costs at most the one index it interrupted


def test_tears_at_transaction_boundaries():
    # event counts: 0 = first NVM write of SIGN_BEGIN's transaction, 2-3 = right after commit
    _run_with_tears([(1, 0), (3, 1), (5, 2), (7, 3), (9, 40)])


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 2500)), min_size=1, max_size=4))
def test_random_tears_never_reuse_a_key(tears):
    _run_with_tears(tears)


def test_tear_during_root_resigning_recovers_same_signature():
    """Tear inside the upper-layer WOTS+ re-signing: the next signature redoes it safely."""
    card, pk, signer, v = fresh()
    for i in range(P.leaves_per_tree):
        signer.sign(b"x")
        signer.prepare()
    before = card.nvm.peek("sigs")
    # signature 4 switches layer 0; its last stage re-signs the new root: tear in the middle of it
    original = card.applet._resign

    def torn_resign(*args):
        card.meter.tear_after = 300  # lose power 300 hash calls into the WOTS+ re-signing
        return original(*args)

    card.applet._resign = torn_resign
    with pytest.raises(CardTear):
        signer.sign(b"torn")
    card.applet._resign = original
    card.meter.tear_after = None
    assert card.nvm.peek("sigs") == before  # the half-written signature never landed
    sig = signer.sign(b"after")
    assert int.from_bytes(sig[:P.idx_bytes], "big") == P.leaves_per_tree + 1
    assert v.verify(pk.to_bytes(), b"after", sig)

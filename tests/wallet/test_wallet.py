"""The digital wallet: honest purchases, the paper's ordering exploited, ours not."""


import pytest
from hypothesis import given, settings, strategies as st

from trustlab.apps.counters import schemes
from trustlab.apps.wallet.protocol import BuyerDevice, Issuer, Merchant
from trustlab.apps.wallet.tokens import Signer
from trustlab.timing import registry

PROFILE = registry.load("stm-counters-2010").without_spread()


_SHARED: dict = {}


def setup(scheme: str, ordering: str, credit: int = 1000, merchants: int = 3, cheats=(), shared=False):
    if shared:  # one TPM, a fresh counter per wallet (provisioning a TPM costs RSA key generation)
        if scheme not in _SHARED:
            _SHARED[scheme] = [schemes.build(scheme, PROFILE, 256), 0]
        s = _SHARED[scheme][0]
        _SHARED[scheme][1] += 1
        counter = _SHARED[scheme][1]
    else:
        s, counter = schemes.build(scheme, PROFILE, 4), 1
    issuer = Issuer()
    buyer = BuyerDevice(s.prover, counter, cheats)
    issuer.enrol(buyer, s.verifier, credit)
    ms = [Merchant(f"m{i}", issuer.directory, s.verifier, ordering, clock=s.clock) for i in range(merchants)]
    return s, issuer, buyer, ms


@pytest.mark.parametrize("scheme,ordering", [("log", "fixed"), ("hashtree", "fixed"), ("hashtree", "paper"),
                                             ("hashtree", "arithmetic")])
def test_honest_purchases(scheme, ordering):
    s, issuer, buyer, ms = setup(scheme, ordering)
    spent = 0
    for i, price in enumerate([100, 250, 50, 75]):
        sale = ms[i % 3].sell(buyer, price)
        assert sale.accepted, sale.reason
        spent += price
        assert sale.tpm_ms > 0 and sale.verify_ms > 0
    if ordering == "arithmetic":
        assert s.prover.value(buyer.counter) - buyer.token.value == spent
    else:
        assert buyer.token.balance == 1000 - spent
    sale = ms[0].sell(buyer, 1000)
    assert not sale.accepted and sale.reason == "insufficient-balance"


def test_paper_ordering_is_exploitable():
    """Skip the increment, keep S1, pay again with the old token S: nobody notices."""
    s, issuer, buyer, ms = setup("hashtree", "paper")
    buyer.cheats = {"skip-increment"}
    first = ms[0].sell(buyer, 600)
    assert first.accepted
    buyer.cheats = {"replay-old-token"}
    second = ms[1].sell(buyer, 600)
    assert second.accepted, second.reason   # 1200 spent on a credit of 1000: a double spend
    assert first.price + second.price > 1000


def test_fixed_ordering_is_not_exploitable():
    for scheme in ("log", "hashtree"):
        s, issuer, buyer, ms = setup(scheme, "fixed")
        buyer.cheats = {"skip-increment"}
        sale = ms[0].sell(buyer, 600)
        assert not sale.accepted and sale.reason == "no-increment"
        buyer.cheats = set()
        assert ms[0].sell(buyer, 600).accepted
        buyer.cheats = {"replay-old-token"}
        sale = ms[1].sell(buyer, 600)
        assert not sale.accepted and sale.reason == "stale-token"


def test_arithmetic_wallet_cannot_skip_or_overspend():
    s, issuer, buyer, ms = setup("hashtree", "arithmetic")
    buyer.cheats = {"skip-increment"}
    assert ms[0].sell(buyer, 600).reason == "no-increment"
    buyer.cheats = set()
    assert ms[0].sell(buyer, 600).accepted
    assert ms[1].sell(buyer, 600).reason == "insufficient-balance"


def test_forged_and_foreign_tokens_rejected():
    s, issuer, buyer, ms = setup("hashtree", "fixed")
    buyer.cheats = {"forge-balance"}
    assert ms[0].sell(buyer, 10).reason == "bad-token-signature"
    buyer.cheats = set()
    rogue = Signer("m0")  # same name as a certified merchant, different key
    t = buyer.token
    buyer.store(rogue.sign_token(t.counter, t.value, 10 ** 6))
    assert ms[1].sell(buyer, 10).reason == "bad-token-signature"
    buyer.store(Signer("nobody").sign_token(t.counter, t.value, 10 ** 6))
    assert ms[1].sell(buyer, 10).reason == "unknown-signer"
    neg = issuer.sign_token(t.counter, t.value, -5)
    buyer.store(neg)
    assert ms[1].sell(buyer, 1).reason == "negative-balance"
    assert ms[1].sell(buyer, -3).reason == "bad-price"


@settings(max_examples=10, deadline=None)
@given(prices=st.lists(st.integers(1, 400), min_size=1, max_size=6),
       cheat=st.lists(st.sampled_from([None, "skip-increment", "replay-old-token", "forge-balance"]),
                      min_size=6, max_size=6))
def test_balance_never_negative_under_fixed_ordering(prices, cheat):
    s, issuer, buyer, ms = setup("hashtree", "fixed", credit=800, shared=True)
    delivered = 0
    for i, price in enumerate(prices):
        buyer.cheats = {cheat[i]} if cheat[i] else set()
        sale = ms[i % 3].sell(buyer, price)
        if sale.accepted:
            delivered += price
        elif cheat[i] is None:
            assert sale.reason == "insufficient-balance"
    assert delivered <= 800
    assert buyer.tokens[-1].balance >= 0 or not buyer.cheats

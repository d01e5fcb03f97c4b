"""The card meter charges hash and RAM work in aggregate (issue 15): same times as one charge per call."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trustlab.apps.hbs.costs import CardMeter, CardTear
from trustlab.apps.hbs.hashes import Hasher
from trustlab.apps.hbs.host import CardSigner, personalize
from trustlab.apps.hbs.keys import SecretSeeds
from trustlab.apps.hbs.params import XMSSParams
from trustlab.timing import registry
from trustlab.timing.clock import Clock


def _per_call_profile():
    """jcop-2018 with hash/RAM costs given as one-sample spreads: same means, drawn per call."""
    prof = registry.load("jcop-2018")
    comps = dict(prof.components)
    for name in CardMeter._AGGREGATED:
        comps[name] = replace(comps[name], samples=(comps[name].mean,))
    return replace(prof, components=comps)


def _sign_twice(profile):
    clock = Clock(profile)
    card, _ = personalize(XMSSParams(4, 2, 16), SecretSeeds.from_int(3), clock)
    signer = CardSigner(card)
    sigs = [signer.sign(b"a"), signer.sign(b"b")]
    signer.prepare()
    return clock, card.meter.snapshot(), sigs


def test_aggregated_charges_equal_per_call_charges() -> None:
    agg_clock, agg_counts, agg_sigs = _sign_twice(registry.load("jcop-2018"))
    one_clock, one_counts, one_sigs = _sign_twice(_per_call_profile())
    assert agg_sigs == one_sigs and agg_counts == one_counts
    assert agg_counts["calls:F"] > 1000
    assert agg_clock.now_ms == pytest.approx(one_clock.now_ms, rel=1e-12)
    assert agg_clock.by_command.keys() == one_clock.by_command.keys()
    for name, ms in one_clock.by_command.items():
        assert agg_clock.by_command[name] == pytest.approx(ms, rel=1e-12)
    for comp, ms in one_clock.by_component.items():
        assert agg_clock.by_component[comp] == pytest.approx(ms, rel=1e-12)


def test_tear_interrupts_at_the_same_hash_and_keeps_what_was_done() -> None:
    meter = CardMeter(Clock(registry.load("jcop-2018")))
    hs = Hasher(meter)
    for _ in range(5):
        hs.f(bytes(32), bytes(32))
    meter.tear_after = 2  # the third event from now tears
    hs.f(bytes(32), bytes(32))
    hs.h(bytes(32), bytes(64))
    with pytest.raises(CardTear, match="hash F"):
        hs.f(bytes(32), bytes(32))
    assert meter.counts["calls:F"] == 6 and meter.counts["calls:H"] == 1
    assert meter.counts["hash_block"] == 6 * 2 + 3 and meter.events == 7
    assert meter.tear_after is None
    assert meter.clock.now_ms == pytest.approx(7 * meter.clock.profile.mean("hash_call")
                                               + 15 * meter.clock.profile.mean("hash_block"))

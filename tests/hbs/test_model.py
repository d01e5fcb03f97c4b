"""The analytic lifetime model agrees exactly with the functional card simulation,
and reproduces the paper's memory formula and signature schedule."""

from __future__ import annotations

import os

import pytest

from trustlab.apps.hbs.applet import rollover_layers
from trustlab.apps.hbs.costs import COMPONENTS, price
from trustlab.apps.hbs.host import CardSigner, personalize
from trustlab.apps.hbs.keys import SecretSeeds
from trustlab.apps.hbs.model import (analyse, expected_sign_steps, prepare_classes, prepare_counts_at,
                                     sensitivity, sign_class_counts, sign_class_sizes, step_counts)
from trustlab.apps.hbs.params import XMSSParams
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Component, Profile


def profile() -> Profile:
    """Distinct, deterministic costs, so a mis-attributed operation shows up."""
    means = dict(zip(COMPONENTS, (1.7, 0.9, 0.013, 0.41, 0.0021, 3.1, 0.07, 5.3, 0.029, 11.0)))
    assert len(means) == len(COMPONENTS)
    return Profile(name="test-card", family="javacard",
                   components={c: Component(name=c, mean=m, unit=COMPONENTS[c]) for c, m in means.items()})


@pytest.mark.parametrize("h,d,w", [(4, 2, 4), (6, 3, 4)])
def test_model_matches_functional_simulation_at_every_index(h, d, w):
    p = XMSSParams(h, d, w)
    prof = profile()
    means = {c: prof.mean(c) for c in COMPONENTS}
    clock = Clock(prof)
    card, pk = personalize(p, SecretSeeds.from_int(2), clock)
    signer = CardSigner(card)
    step = step_counts(p)
    sign_cls = {k: sign_class_counts(p, k) for k in range(d)}
    prep_cls = {states: prepare_counts_at(p, first) for states, (_, first) in prepare_classes(p).items()}
    prep_by_j = {}
    for states, (_, first) in prepare_classes(p).items():
        prep_by_j[states] = price(prep_cls[states], means)
    total_prepare = 0.0
    for j in range(p.signatures):
        f0, t0 = card.meter.counts["calls:F"], clock.now_ms
        signer.sign(os.urandom(32))
        steps, ms = card.meter.counts["calls:F"] - f0, clock.now_ms - t0
        k = len(rollover_layers(p, j))
        c = sign_cls[k].copy()
        for comp, v in step.items():
            c[comp] += (steps - sign_cls[k]["calls:F"]) * v
        assert ms == pytest.approx(price(c, means), rel=1e-9), (j, k)
        t0 = clock.now_ms
        signer.prepare()
        total_prepare += clock.now_ms - t0
    a = analyse(p, prof, "extended")  # the simulated applet as it runs (no published-applet extras)
    assert total_prepare / p.signatures == pytest.approx(a.prepare_ms.avg, rel=1e-9)


def test_memory_formula_exact_for_paper_parameters():
    p4, p5 = XMSSParams(20, 4), XMSSParams(20, 5)
    assert p4.persistent_bytes == 6432 + 7168 == 13600  # the paper: 13.28 KiB
    assert p5.persistent_bytes == 8576 + 4608  # the paper: 13.18 KiB
    from trustlab.apps.hbs.applet import Card
    assert Card(p4).persistent_state_bytes == 13600  # the applet really allocates that much
    assert Card(p5).persistent_state_bytes == 13184


def test_schedule_counts():
    p = XMSSParams(20, 4)
    sizes = sign_class_sizes(p)
    assert sum(sizes.values()) == 2 ** 20
    assert sizes[3] == 31 and sizes[2] == 1023 - 31 and sizes[1] == 32767 - 1023
    # preparation: layer 0 computes one leaf per signature while a next subtree exists
    leaves = sum(n * sum(1 for s in st if s == 2) for st, (n, _) in prepare_classes(p).items())
    assert leaves == sum(2 ** 20 - 32 ** (i + 1) >> (5 * i) for i in range(3))


@pytest.mark.parametrize("w", [4, 16])
def test_expected_steps_agree_with_sampling(w):
    import random
    from trustlab.apps.hbs.wots import sign_steps
    p = XMSSParams(2, 1, w)
    rng = random.Random(5)
    n = 4000
    mean = sum(sign_steps(p, rng.randbytes(32)) for _ in range(n)) / n
    exact = expected_sign_steps(p)
    assert abs(mean - exact) < 4 * (p.wots_len * (w * w - 1) / 12) ** 0.5 / n ** 0.5  # 4 sigma
    assert exact > p.len1 * (w - 1) / 2  # the checksum chains add steps on top of the message's


def test_sensitivity_is_linear_and_sums_to_total():
    p = XMSSParams(8, 2, 16)
    prof = profile()
    a = analyse(p, prof)
    rows = sensitivity(a, prof, 0.10)
    assert {r["component"] for r in rows} == set(COMPONENTS) | {"link"}
    for case in ("best", "avg", "worst"):
        total = sum(r[f"sign_{case}_ms_per_10pct"] for r in rows)
        assert total == pytest.approx(0.1 * getattr(a.sign_ms, case), rel=1e-9)
        total = sum(r[f"prepare_{case}_ms_per_10pct"] for r in rows)
        assert total == pytest.approx(0.1 * getattr(a.prepare_ms, case), rel=1e-9)


def test_persistent_writes_priced_as_java_card_does_them():
    """Atomic write = programming + logging + its own commit; a transaction commits once for all its writes."""
    from trustlab.apps.hbs.costs import CardMeter
    from trustlab.apps.hbs.nvm import PersistentMemory

    meter = CardMeter()
    nvm = PersistentMemory({"a": 64, "b": 8}, meter)
    nvm.write("a", 0, bytes(32))  # Util.arrayCopy: atomic on its own
    c = meter.snapshot()
    assert (c["nvm_write_call"], c["nvm_write_byte"], c["nvm_tx_call"], c["nvm_tx_byte"]) == (1, 32, 1, 32)
    nvm.begin()
    nvm.write("a", 0, bytes(32))
    nvm.write("b", 0, bytes(4))
    assert meter.snapshot()["nvm_tx_call"] == 1  # nothing committed yet
    nvm.commit()
    c = meter.snapshot()
    assert (c["nvm_write_call"], c["nvm_write_byte"], c["nvm_tx_call"], c["nvm_tx_byte"]) == (3, 68, 2, 68)
    meter.nvm_write(16, atomic=False)  # Util.arrayCopyNonAtomic: programming only
    c = meter.snapshot()
    assert (c["nvm_write_call"], c["nvm_tx_call"], c["nvm_tx_byte"]) == (4, 2, 68)


def test_published_applet_reading_adds_its_exchanges_and_state_updates():
    from trustlab.apps.hbs.model import applet_exchanges, applet_extra, sign_class_counts

    p = XMSSParams(20, 4, 16)
    assert applet_exchanges(p) == 1 + 4 * (9 + 1) and applet_exchanges(XMSSParams(20, 5, 16)) == 1 + 5 * (9 + 1)
    extra = applet_extra(p)
    assert extra["apdu"] == applet_exchanges(p) - 8
    assert extra["nvm_tx_call"] == extra["nvm_write_call"] == applet_exchanges(p) + 2 + 2 * 4
    q = XMSSParams(8, 2, 16)
    prof = profile()
    ext, app = analyse(q, prof, "extended"), analyse(q, prof, "applet")
    assert app.sign_ms.best - ext.sign_ms.best == pytest.approx(price(applet_extra(q), {c: prof.mean(c) for c in COMPONENTS}))
    assert sign_class_counts(q, 0)["apdu"] == 8


@pytest.mark.parametrize("h,d", [(8, 2), (8, 4)])
def test_a_preparation_split_by_what_it_computes_adds_up(h, d):
    """The rows (chains, seeds, L-tree, persistent memory, command) price exactly the preparation's counts;
    the published applet (XMSS.java signPrepNext -> one WOTSLeafGen) differs only in its seed derivation
    (1 + l PRFs over 3n bytes instead of l PRF_keygen over 4n) and its two persistent writes."""
    from trustlab.apps.hbs.model import prepare_work

    p = XMSSParams(h, d, 16)
    prof = profile()
    means = {c: prof.mean(c) for c in COMPONENTS}
    a = analyse(p, prof)
    counts = a.prepare_counts["best"]
    rows = {r["work"]: r for r in prepare_work(p, counts, prof)}
    assert sum(r["ours_ms"] for r in rows.values()) == pytest.approx(a.prepare_ms.best, rel=1e-12)
    assert counts["calls:F"] == p.wots_len * (p.w - 1) and counts["calls:H"] == p.wots_len - 1
    for work in ("WOTS+ chains", "L-tree", "command"):
        assert rows[work]["published_ms"] == rows[work]["ours_ms"]
    seeds = rows["chain seeds"]
    assert seeds["published_ms"] == pytest.approx((p.wots_len + 1) * (means["hash_call"] + 2 * means["hash_block"]))
    assert seeds["ours_ms"] == pytest.approx(p.wots_len * (means["hash_call"] + 3 * means["hash_block"]))
    leaf = means["nvm_write_call"] + 32 * means["nvm_write_byte"]
    state = means["nvm_write_call"] + 2 * (means["nvm_write_byte"] + means["nvm_tx_byte"]) + means["nvm_tx_call"]
    assert rows["persistent memory"]["published_ms"] == pytest.approx(leaf + state)

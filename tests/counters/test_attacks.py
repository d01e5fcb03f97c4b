"""Adversarial tests: every tampering is rejected with a reason; honest runs never are.

Property-based with modest example counts (the thousands-of-cases run is
``benchmarks/bench_counters.py``'s adversarial sweep).
"""

import dataclasses
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from trustlab.apps.counters import schemes
from trustlab.apps.counters.base import Answer, VerificationError
from trustlab.apps.counters.hashtree import TreeProver, TreeVerifier
from trustlab.apps.counters.device import provision
from trustlab.devices.tpm12 import merkle
from trustlab.devices.tpm12.commands.hashtree import MODE_INCREMENT, MODE_READ, MODE_UPDATE
from trustlab.devices.tpm12.errors import TpmError
from trustlab.timing import registry
from trustlab.timing.clock import Clock

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROFILE = registry.load("infineon-counters-2010").without_spread()
HISTORY = [0, 1, 2, 1, 3, 4, 2, 5, 1, 0, 3]


def nonce() -> bytes:
    return os.urandom(20)


def expect(reasons, fn, *args, **kw):
    with pytest.raises(VerificationError) as e:
        fn(*args, **kw)
    assert e.value.reason in reasons, e.value.reason
    return e.value.reason


# ---- log-based ------------------------------------------------------------------


@pytest.fixture(scope="module")
def log():
    s = schemes.build("log", PROFILE, 6)
    incs = []
    for c in HISTORY:
        n = nonce()
        incs.append((c, n, s.prover.increment(c, n)))
    return s, incs


def flip(b: bytes, i: int) -> bytes:
    i %= len(b)
    return b[:i] + bytes([b[i] ^ 0x01]) + b[i + 1:]


@SETTINGS
@given(data=st.data())
def test_log_read_tampering_rejected(log, data):
    s, incs = log
    c = data.draw(st.sampled_from([0, 2, 3, 4, 5]), label="counter")  # all have >= 1 later increment by others
    n = nonce()
    honest = s.prover.read(c, n)
    ev = honest.evidence
    assert s.verifier.check_read(honest, c, n) == honest.value
    since = list(ev.since)
    attack = data.draw(st.sampled_from(["drop", "reorder", "insert", "truncate", "foreign-own", "stale-own",
                                        "wrong-nonce", "replay", "forge", "alter-value", "claim", "foreign-clock",
                                        "hide-own"]), label="attack")
    reasons = {"log-gap"}
    if attack == "drop" and since:
        since.pop(data.draw(st.integers(0, len(since) - 1)))
    elif attack == "reorder" and len(since) > 1:
        i, j = data.draw(st.lists(st.integers(0, len(since) - 1), min_size=2, max_size=2, unique=True))
        since[i], since[j] = since[j], since[i]
    elif attack == "insert":
        since.insert(data.draw(st.integers(0, len(since))), incs[data.draw(st.integers(0, len(incs) - 1))][2].evidence)
    elif attack == "truncate" and since:
        since = since[:-1]
    elif attack == "foreign-own":
        other = next(a.evidence for cc, _, a in incs if cc != c)
        ev = dataclasses.replace(ev, own=other)
        reasons = {"wrong-counter"}
    elif attack in ("stale-own", "hide-own"):
        mine = [a.evidence for cc, _, a in incs if cc == c]
        if len(mine) < 2:
            return
        older = mine[0]
        # an honest-looking log from the older value: it must contain c's newer increment
        since = [s.prover.certs[v] for v in range(older.value + 1, ev.clock.value + 1)]
        if attack == "hide-own":  # ... so the host leaves it out
            since = [x for x in since if x.counter != c]
        ev = dataclasses.replace(ev, own=older)
        honest = Answer(c, older.value, ev, n)
        reasons = {"counter-changed", "log-gap"}
    elif attack == "wrong-nonce":
        expect({"bad-nonce"}, s.verifier.check_read, honest, c, nonce())
        return
    elif attack == "replay":
        n2 = nonce()
        expect({"bad-nonce"}, s.verifier.check_read, honest, c, n2)
        return
    elif attack == "forge":
        target = data.draw(st.sampled_from(["clock", "own"] + (["since"] if since else [])))
        if target == "clock":
            ev = dataclasses.replace(ev, clock=dataclasses.replace(ev.clock, signature=flip(ev.clock.signature, data.draw(st.integers(0, 255)))))
        elif target == "own":
            ev = dataclasses.replace(ev, own=dataclasses.replace(ev.own, signature=flip(ev.own.signature, 7)))
        else:
            i = data.draw(st.integers(0, len(since) - 1))
            since[i] = dataclasses.replace(since[i], signature=flip(since[i].signature, data.draw(st.integers(0, 255))))
        reasons = {"bad-signature"}
    elif attack == "alter-value":
        ev = dataclasses.replace(ev, own=dataclasses.replace(ev.own, value=ev.own.value - 1))
        honest = Answer(c, ev.own.value, ev, n)
        reasons = {"bad-signature", "log-gap"}
    elif attack == "claim":
        honest = Answer(c, honest.value + data.draw(st.integers(1, 5)), ev, n)
        reasons = {"value-mismatch"}
    elif attack == "foreign-clock":
        other = next(cc for cc in range(6) if cc != c)
        n3 = nonce()
        ev = dataclasses.replace(ev, clock=s.prover.read(other, n3).evidence.clock)
        reasons = {"wrong-counter"}
    else:
        return
    if attack in ("drop", "reorder", "insert", "truncate", "stale-own", "hide-own", "forge", "alter-value"):
        ev = dataclasses.replace(ev, since=tuple(since))
    expect(reasons, s.verifier.check_read, Answer(c, honest.value, ev, n), c, n)


@SETTINGS
@given(data=st.data())
def test_log_increment_tampering_rejected(log, data):
    s, incs = log
    c, old_nonce, old = incs[data.draw(st.integers(0, len(incs) - 1))]
    attack = data.draw(st.sampled_from(["replay", "other-counter", "forge", "value", "not-monotonic"]))
    n = nonce()
    if attack == "replay":  # an old increment certificate against a new challenge
        expect({"bad-nonce"}, s.verifier.check_increment, old, c, n)
    elif attack == "other-counter":
        expect({"wrong-counter"}, s.verifier.check_increment, old, (c + 1) % 6, old_nonce)
    elif attack == "forge":
        cert = dataclasses.replace(old.evidence, signature=flip(old.evidence.signature, data.draw(st.integers(0, 255))))
        expect({"bad-signature"}, s.verifier.check_increment, Answer(c, cert.value, cert, old_nonce), c, old_nonce)
    elif attack == "value":
        delta = data.draw(st.integers(1, 100))
        cert = dataclasses.replace(old.evidence, value=old.evidence.value + delta)
        expect({"bad-signature"}, s.verifier.check_increment, Answer(c, cert.value, cert, old_nonce), c, old_nonce)
    else:
        expect({"not-monotonic"}, s.verifier.check_increment, old, c, old_nonce, after=old.value)


@settings(max_examples=15, deadline=None)
@given(reqs=st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["read", "increment"])), min_size=1, max_size=8))
def test_log_honest_runs_never_rejected(log, reqs):
    s, _ = log
    for c, op in reqs:
        n = nonce()
        if op == "read":
            a = s.prover.read(c, n)
            assert s.verifier.check_read(a, c, n) == a.value
        else:
            a = s.prover.increment(c, n)
            assert s.verifier.check_increment(a, c, n) == a.value


def test_log_exclusivity_is_required(log):
    s, _ = log
    n = nonce()
    a = s.prover.increment(0, n)
    p = a.evidence.establish_params
    weaker = p[:2] + (2).to_bytes(4, "big") + p[6:]  # logged but not exclusive
    cert = dataclasses.replace(a.evidence, establish_params=weaker)
    expect({"not-exclusive"}, s.verifier.check_increment, Answer(0, cert.value, cert, n), 0, n)


# ---- hash-tree ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tree():
    s = schemes.build("hashtree", PROFILE, 8)
    for c in HISTORY:
        s.prover.increment(c, nonce())
    return s


def test_tree_host_rollback_refused_by_tpm(tree):
    s = tree
    snap = s.prover.tree.snapshot()
    s.prover.increment(3, nonce())
    after = s.prover.tree.snapshot()
    s.prover.tree.restore(snap)  # the host rolls its memory back to an older state
    with pytest.raises(TpmError, match="TPM_BAD_HASHTREE"):
        s.prover.read(3, nonce())
    with pytest.raises(TpmError, match="TPM_BAD_HASHTREE"):
        s.prover.increment(3, nonce())
    s.prover.tree.restore(after)
    n = nonce()
    assert s.verifier.check_read(s.prover.read(3, n), 3, n) == s.prover.value(3)


@SETTINGS
@given(data=st.data())
def test_tree_fork_of_host_nodes_refused(tree, data):
    s = tree
    t = s.prover.tree
    c = data.draw(st.integers(0, 7))
    height = data.draw(st.integers(0, t.depth - 1))
    sibling_heap = ((t.size + c) >> height) ^ 1  # a node on c's sibling path
    state = t.snapshot()
    t.poke(sibling_heap, os.urandom(20))
    try:
        with pytest.raises(TpmError, match="TPM_BAD_HASHTREE"):
            s.prover.read(c, nonce())
    finally:
        t.restore(state)


@SETTINGS
@given(data=st.data())
def test_tree_answer_tampering_rejected(tree, data):
    s = tree
    c = data.draw(st.integers(0, 7))
    n = nonce()
    op = data.draw(st.sampled_from(["read", "increment"]))
    a = s.prover.read(c, n) if op == "read" else s.prover.increment(c, n)
    check = s.verifier.check_read if op == "read" else s.verifier.check_increment
    assert check(a, c, n) == a.value
    cert = a.evidence
    attack = data.draw(st.sampled_from(["value", "sibling", "nonce", "forge", "other-counter", "index", "root"]))
    if attack == "value":
        v = cert.new + data.draw(st.integers(-3, 3).filter(bool))
        bad = dataclasses.replace(cert, new=v, old=v if op == "read" else v - 1)
        expect({"bad-path", "bad-signature", "bad-value"}, check, Answer(c, v, bad, n), c, n)
    elif attack == "sibling":
        i = data.draw(st.integers(0, len(cert.siblings) - 1))
        sib = list(cert.siblings)
        sib[i] = flip(sib[i], data.draw(st.integers(0, 19)))
        expect({"bad-path"}, check, Answer(c, a.value, dataclasses.replace(cert, siblings=tuple(sib)), n), c, n)
    elif attack == "nonce":
        expect({"bad-nonce"}, check, a, c, nonce())
    elif attack == "forge":
        bad = dataclasses.replace(cert, signature=flip(cert.signature, data.draw(st.integers(0, 255))))
        expect({"bad-signature"}, check, Answer(c, a.value, bad, n), c, n)
    elif attack == "other-counter":
        expect({"wrong-counter"}, check, a, (c + 1) % 8, n)
    elif attack == "index":  # claim the value for another counter, keeping the path
        other = (c + data.draw(st.integers(1, 7))) % 8
        expect({"bad-path", "bad-signature"}, check, Answer(other, a.value, dataclasses.replace(cert, index=other), n),
               other, n)
    else:
        expect({"bad-path"}, check, Answer(c, a.value, dataclasses.replace(cert, root=os.urandom(20)), n), c, n)


def test_tree_read_certificate_is_not_an_increment(tree):
    s = tree
    n = nonce()
    a = s.prover.read(2, n)
    expect({"not-monotonic"}, s.verifier.check_increment, a, 2, n)
    n = nonce()
    inc = s.prover.increment(2, n)
    expect({"wrong-kind"}, s.verifier.check_read, inc, 2, n)
    expect({"stale-base"}, s.verifier.check_increment, inc, 2, n, after=inc.evidence.old - 1)


def test_tree_tpm_refuses_to_go_down(tree):
    s = tree
    d, p = s.prover.dev, s.prover
    v = p.value(4)
    for delta in (0,):
        with pytest.raises(TpmError, match="TPM_BAD_PARAMETER"):
            d.tpm.TPM_ExecuteHashTree(d.aik, MODE_INCREMENT, 4, v, p.tree.siblings(4), nonce(), d.aik_auth,
                                      delta=delta)
    with pytest.raises(VerificationError, match="not-monotonic"):
        p.add(4, -5, nonce())
    n = nonce()
    assert s.verifier.check_read(p.read(4, n), 4, n) == v


def test_owner_reinitialising_the_tree_is_caught_by_the_epoch():
    """Resetting every counter to zero by a fresh INIT yields certificates of a new epoch: refused."""
    s = schemes.build("hashtree", PROFILE, 8)
    s.prover.increment(3, nonce())
    d, p = s.prover.dev, s.prover
    assert p.value(3) > 0
    fresh = TreeProver(d, 8, depth=p.depth)  # the hostile owner re-INITs: all counters back to 0
    assert fresh.epoch == p.epoch + 1
    n = nonce()
    a = fresh.read(3, n)
    assert a.value == 0
    expect({"reinitialised"}, s.verifier.check_read, a, 3, n)


def test_generic_update_is_refused_so_no_rollback_through_the_tpm():
    """The earlier generic UPDATE let a host roll a counter back and get it signed; the TPM now refuses it."""
    clock = Clock(PROFILE)
    dev = provision(clock, physical_counter=False)
    prover = TreeProver(dev, 4)
    verifier = TreeVerifier(dev.aik_public, prover.depth, prover.epoch)
    for _ in range(3):
        n = nonce()
        verifier.check_increment(prover.increment(1, n), 1, n)
    assert prover.value(1) == 3
    # hostile host: ask the TPM to UPDATE leaf 1 from value 3 back to value 1
    sib = prover.tree.siblings(1)
    with pytest.raises(TpmError, match="TPM_BAD_MODE"):
        dev.tpm.TPM_ExecuteHashTree(dev.aik, MODE_UPDATE, 1, 3, sib, nonce(), dev.aik_auth, delta=1)
    # nor can it claim the old value with the current path: the TPM's root disagrees
    with pytest.raises(TpmError, match="TPM_BAD_HASHTREE"):
        dev.tpm.TPM_ExecuteHashTree(dev.aik, MODE_READ, 1, 1, sib, nonce(), dev.aik_auth)
    # a host that rewrites its own tree to value 1 is refused by the TPM on the next READ
    prover.tree.set(1, merkle.encode_value(1))
    with pytest.raises(TpmError, match="TPM_BAD_HASHTREE"):
        prover.read(1, nonce())
    prover.tree.set(1, merkle.encode_value(3))
    n = nonce()
    assert verifier.check_read(prover.read(1, n), 1, n) == 3


@settings(max_examples=15, deadline=None)
@given(reqs=st.lists(st.tuples(st.integers(0, 7), st.sampled_from(["read", "increment", "add"]),
                               st.integers(1, 50)), min_size=1, max_size=8))
def test_tree_honest_runs_never_rejected(tree, reqs):
    s = tree
    for c, op, delta in reqs:
        n = nonce()
        before = s.prover.value(c)
        if op == "read":
            assert s.verifier.check_read(s.prover.read(c, n), c, n) == before
        elif op == "increment":
            assert s.verifier.check_increment(s.prover.increment(c, n), c, n, after=before) == before + 1
        else:
            a = s.prover.add(c, delta, n)
            assert s.verifier.check_increment(a, c, n, after=before, delta=delta) == before + delta

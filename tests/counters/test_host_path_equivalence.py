"""The hash-tree host's fast path gives exactly what the plain protocol gives (issue 24).

The prover reads the siblings packed, once, stores the new path the TPM just
hashed, and the runner keeps its bookkeeping in locals; none of that may change
an answer, a certificate, a record or a charge. The reference here is the
protocol spelled out step by step - the siblings as a list, ``SparseTree.set``
(which hashes the new path itself) once the TPM agreed, a dict of update
counts, a plain loop of requests - run on an identically built scheme, and
compared field by field: every answer and certificate, every record, the
clock's whole ledger, the roots and leaves.
"""

from __future__ import annotations

import random
import struct

import pytest

from trustlab.apps import workloads as w
from trustlab.apps.counters import schemes
from trustlab.apps.counters.base import Answer, VerificationError
from trustlab.apps.counters.hashtree import INC, READ, TreeCert, TreeProver
from trustlab.apps.counters.runner import OpRecord, run
from trustlab.devices.tpm12 import merkle
from trustlab.devices.tpm12.commands.hashtree import MODE_INCREMENT, MODE_READ
from trustlab.devices.tpm12.errors import TpmError
from trustlab.timing import registry


class ReferenceProver(TreeProver):
    """The protocol step by step, as the prover was first written (no packed path, no shared path)."""

    def _reference(self, kind: str, counter: int, nonce: bytes, delta: int) -> Answer:
        if not 0 <= counter < self.counters:
            raise VerificationError("no-such-counter", f"counter {counter} outside 0..{self.counters - 1}")
        self.ops += 1
        sign = (self.ops - 1) % self.attest_every == 0
        old = struct.unpack(">Q", self.tree.leaf(counter))[0]
        new = old + delta if kind == INC else old
        siblings = self.tree.siblings(counter)
        mode = MODE_INCREMENT if kind == INC else MODE_READ
        root, epoch, sig = self.dev.tpm.TPM_ExecuteHashTree(self.dev.aik, mode, counter, old, siblings, nonce,
                                                            self._aik_session(),
                                                            delta=delta if kind == INC else 0, sign=sign)
        if kind == INC:
            if self.tree.set(counter, merkle.encode_value(new)) != root:
                raise TpmError("TPM_BAD_HASHTREE", "host tree and TPM root diverged")
            self.updates += 1
            self.reference_last[counter] = self.updates
        return Answer(counter, new, TreeCert(epoch, counter, old, new, tuple(siblings), root, nonce, sig), nonce)

    def read(self, counter: int, nonce: bytes) -> Answer:
        return self._reference(READ, counter, nonce, 0)

    def increment(self, counter: int, nonce: bytes) -> Answer:
        return self._reference(INC, counter, nonce, 1)

    def add(self, counter: int, delta: int, nonce: bytes) -> Answer:
        if delta < 1:
            raise VerificationError("not-monotonic", f"delta {delta}: counters only go up")
        return self._reference(INC, counter, nonce, delta)

    def updates_since(self, counter: int) -> int:
        return self.updates - self.reference_last.get(counter, 0)


def _build(counters: int, attest_every: int, reference: bool):
    built = schemes.build("hashtree", registry.load("atmel-counters-2010"), counters, seed=3,
                          attest_every=attest_every)
    if reference:  # the same provisioned TPM and tree (just initialised), driven the plain way
        p = built.prover
        p.__class__ = ReferenceProver
        p.reference_last = {}
    return built


def _reference_run(scheme, requests, seed: int) -> list[OpRecord]:
    """:func:`runner.run` as a plain loop over lists (the same nonces, charges and records)."""
    rng = random.Random(seed)
    clock, last, out = scheme.clock, {}, []
    for i, req in enumerate(requests):
        nonce = rng.randbytes(20)
        ut = scheme.updates_since(req.counter)
        model = scheme.model_ms(req.op, req.counter, ut)
        paper = scheme.paper_model_ms(req.op, req.counter, ut)
        t0 = clock.now_ms
        v0 = clock.by_component.get("host_verify", 0.0) + clock.by_component.get("host_hash", 0.0)
        if req.op == w.INCREMENT:
            answer = scheme.prover.increment(req.counter, nonce)
            value = (scheme.verifier.check_increment(answer, req.counter, nonce, after=last.get(req.counter))
                     if answer.evidence.signature else answer.value)
        else:
            answer = scheme.prover.read(req.counter, nonce)
            value = scheme.verifier.check_read(answer, req.counter, nonce) if answer.evidence.signature \
                else answer.value
        last[req.counter] = value
        if req.timed:
            verify = clock.by_component.get("host_verify", 0.0) + clock.by_component.get("host_hash", 0.0) - v0
            out.append(OpRecord(i, req.counter, req.op, ut, clock.now_ms - t0, model, verify, paper))
    return out


def _ledger(clock) -> tuple:
    return (clock.now_ms, dict(clock.by_component), dict(clock.by_command), dict(clock.by_command_component),
            dict(clock.command_counts))


@pytest.mark.parametrize("densify_at", [48, 1 << 30])  # the tree's and the runner's dict -> flat-array switch
def test_runner_records_and_ledger_equal_the_plain_protocol(monkeypatch, densify_at):
    monkeypatch.setattr(merkle, "DENSIFY_AT", densify_at)
    monkeypatch.setattr(merkle, "MEMO_DENSIFY_AT", min(densify_at, 1 << 12))
    ids = w.counter_ids("zipf", 256, 400, seed=7)
    requests = w.make_requests(ids, "read", 0.4, seed=7)  # reads, increments and untimed increments
    outcomes = []
    for reference in (False, True):
        built = _build(256, 5, reference)
        records = _reference_run(built, requests, seed=11) if reference else list(run(built, requests, seed=11))
        tree = built.prover.tree
        outcomes.append((records, _ledger(built.clock), tree.root, [tree.leaf(i) for i in range(256)],
                         [built.updates_since(i) for i in range(256)], built.prover.ops, built.prover.updates))
        built.close()
    fast, plain = outcomes
    assert len(fast[0]) == len(plain[0]) > 100
    assert fast == plain


def test_every_answer_and_certificate_equals_the_plain_protocol(monkeypatch):
    monkeypatch.setattr(merkle, "DENSIFY_AT", 40)
    monkeypatch.setattr(merkle, "MEMO_DENSIFY_AT", 40)
    rng = random.Random(5)
    plan = [(rng.choice(["read", "increment", "add"]), rng.randrange(64), rng.randbytes(20), rng.randrange(1, 9))
            for _ in range(300)]
    plan += [("increment", 64, bytes(20), 1), ("add", 3, bytes(20), 0)]  # refused: outside the tree, not up
    answers = []
    for reference in (False, True):
        built = _build(64, 3, reference)
        p, got = built.prover, []
        for op, counter, nonce, delta in plan:
            try:
                if op == "read":
                    got.append(p.read(counter, nonce))
                elif op == "increment":
                    got.append(p.increment(counter, nonce))
                else:
                    got.append(p.add(counter, delta, nonce))
            except VerificationError as e:
                got.append(("refused", e.reason, str(e)))
        answers.append((got, _ledger(built.clock), p.tree.root, p.ops, p.updates))
        built.close()
    assert answers[0] == answers[1]
    assert sum(isinstance(a, Answer) and bool(a.evidence.signature) for a in answers[0][0]) == 100


@pytest.mark.parametrize("cls", [TreeCert, Answer, OpRecord])
def test_evidence_classes_written_init_is_the_generated_one(cls):
    """TreeCert, Answer and the runner's OpRecord write their fields themselves (speed): same parameters
    (and defaults), still frozen dataclasses."""
    import dataclasses
    import inspect

    fields = [f.name for f in dataclasses.fields(cls)]
    assert list(inspect.signature(cls.__init__).parameters)[1:] == fields
    args = list(range(len(fields)))
    made = cls(*args)
    assert [getattr(made, f) for f in fields] == args and made == cls(*args) and hash(made) == hash(cls(*args))
    assert dataclasses.replace(made, **{fields[0]: -1}) == cls(-1, *args[1:])
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, fields[0], 5)
    defaults = {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
    assert {n: p.default for n, p in inspect.signature(cls.__init__).parameters.items()
            if p.default is not inspect.Parameter.empty} == defaults

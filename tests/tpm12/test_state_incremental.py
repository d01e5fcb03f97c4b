"""PersistentState.to_bytes reuses its last document when only the hash-tree root moved: same bytes."""

from __future__ import annotations

import copy
import os
import random

from trustlab.devices.tpm12.state import Counter, PersistentState


def _fresh(state: PersistentState) -> bytes:
    """The document built from scratch (a copy without any of the original's caches)."""
    return PersistentState(ek=state.ek, owner_auth=state.owner_auth, tpm_proof=state.tpm_proof, srk=state.srk,
                           srk_auth=state.srk_auth, counters=copy.deepcopy(state.counters),
                           next_counter_id=state.next_counter_id, hashtree_root=state.hashtree_root,
                           extra=dict(state.extra)).to_bytes()


def test_incremental_document_equals_a_fresh_one_through_every_kind_of_change() -> None:
    rng = random.Random(7)
    state = PersistentState(owner_auth=os.urandom(20))
    for step in range(600):
        r = rng.random()
        if r < 0.5:
            state.hashtree_root = os.urandom(20) if rng.random() < 0.95 else None
        elif r < 0.62:
            cid = rng.randrange(4)
            if cid in state.counters:
                state.counters[cid].value += 1  # mutated in place, as TPM_IncrementCounter does
            else:
                state.counters[cid] = Counter(os.urandom(4), os.urandom(20), rng.randrange(100))
        elif r < 0.72:
            state.extra[rng.choice(["hashtree_depth", "hashtree_epoch", "saved"])] = str(rng.randrange(9))
        elif r < 0.76:
            state.extra.pop("saved", None)
        elif r < 0.82:
            state.next_counter_id += 1
        elif r < 0.86:
            state.owner_auth = os.urandom(20)
        elif r < 0.88:
            state.counters.pop(rng.randrange(4), None)
        doc = state.to_bytes()
        assert doc == _fresh(state), step
        assert PersistentState.from_bytes(doc, "test").to_bytes() == doc

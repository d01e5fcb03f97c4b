"""TPM_ExecuteHashTree's host-side memos change no answer: tampered paths fail exactly as when hashed.

``merkle.RootMemo`` lets the TPM compare supplied siblings with the upper tree
levels it computed itself instead of hashing them; ``merkle.path_nodes`` lets
the host take the new path the TPM just hashed from the same inputs. Both must be invisible: the same
roots, the same errors, the same modelled charges as hashing every block.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trustlab.apps.counters.hashtree import new_tree
from trustlab.devices.tpm12 import MemoryNVStore, Tpm12, TpmError, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import merkle
from trustlab.devices.tpm12.commands.hashtree import MODE_INCREMENT, MODE_READ
from trustlab.devices.tpm12.keys import Key12, rsa_public
from trustlab.timing.clock import Clock

from .conftest import OWNER, POOL, SRK

AIK = secret("aik")


def _tamper(path: bytes, level: int, rng: random.Random) -> bytes:
    """The path with one bit of the sibling at ``level`` flipped."""
    at = 20 * level + rng.randrange(20)
    return path[:at] + bytes([path[at] ^ (1 << rng.randrange(8))]) + path[at + 1:]


@settings(max_examples=60, deadline=None)
@given(depth=st.integers(1, 7), kept=st.integers(1, 8), densify=st.sampled_from([2, 8, 1 << 12]),
       seed=st.integers(0, 2 ** 32 - 1),
       ops=st.lists(st.tuples(st.integers(0, 127), st.sampled_from(["inc", "read", "tamper", "stale", "value"])),
                    max_size=25))
def test_memo_roots_equal_hashing_for_honest_and_hostile_paths(depth, kept, densify, seed, ops) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(merkle, "MEMO_LEVELS", kept)  # also trees where the lowest levels are hashed
        mp.setattr(merkle, "MEMO_DENSIFY_AT", densify)  # sparse, dense, and going dense midway
        memo = merkle.RootMemo(depth, merkle.counter_defaults(depth))
    assert memo.low == max(0, depth - kept)
    rng = random.Random(seed)
    tree = new_tree(depth)
    values: dict[int, int] = {}
    stale: dict[int, bytes] = {}
    for index, kind in ops:
        index %= 1 << depth
        old = values.get(index, 0)
        path = b"".join(tree.siblings(index))
        if kind == "tamper":
            path = _tamper(path, rng.randrange(depth), rng)
        elif kind == "stale" and index in stale:
            path = stale[index]
        elif kind == "value":
            old += 1 + rng.randrange(3)
        new = old if kind == "read" else old + 1
        if kind == "inc":  # the host reads the siblings first, as the prover does
            pending = tree.prepare(index, merkle.encode_value(new))
            assert pending.packed == path
        want = merkle.counter_roots_packed(index, old, new, path)
        got = memo.roots(index, old, new, path)
        assert got == want
        honest = want[0] == tree.root
        assert honest == (kind in ("inc", "read") or got[0] == tree.root)
        if kind == "inc":
            assert memo.commit(want[1])
            assert tree.commit(pending) == want[1] == memo.root
            stale[index] = path
            values[index] = new
    assert memo.root == tree.root


def test_memo_out_of_step_falls_back_to_hashing_and_gives_up() -> None:
    tree = new_tree(6)
    memo = merkle.RootMemo(6, tree.defaults)
    memo.put(13, bytes(20))  # a kept node (heap 13, height 3) the TPM never computed
    for index in range(64):
        path = b"".join(tree.siblings(index))
        old_root, new_root = memo.roots(index, 0, 1, path)
        assert (old_root, new_root) == merkle.counter_roots_packed(index, 0, 1, path)
        assert old_root == tree.root  # the honest path still passes
        if (64 + index) >> 3 in (12, 13):  # the corrupt slot is on this path or its sibling (index 32)
            assert index == 32 and not memo.commit(new_root)  # not proven by comparison: not installed
            return
        assert memo.commit(new_root)
        tree.set(index, merkle.encode_value(1))
    raise AssertionError("no path touched the corrupt slot")


@pytest.fixture
def aik(tpm: Tpm12):
    blob, _ = tpm.TPM_MakeIdentity(OWNER, SRK, AIK)
    return tpm.TPM_LoadKey2(C.TPM_KH_SRK, blob, SRK), rsa_public(Key12.from_bytes(blob).pub)


def _run(tpm: Tpm12, handle: int, depth: int, memo: bool, seed: int) -> list:
    """Increments, reads and hostile requests on an INITed tree; what each returned or raised, and its charge."""
    rng = random.Random(seed)
    tpm.TPM_ExecuteHashTree(handle, 0, 0, depth, [], bytes(20), OWNER)
    tree = new_tree(depth)
    values: dict[int, int] = {}
    out = []
    clock = tpm.clock
    for step in range(60):
        if not memo:
            tpm.engine.state.hashtree_memo = None
        index = rng.randrange(1 << depth)
        old = values.get(index, 0)
        sibs = tree.siblings(index)
        kind = rng.choice(["inc", "inc", "read", "tamper", "value", "leaf-as-node"])
        if kind == "tamper":
            level = rng.randrange(depth)
            sibs = list(sibs)
            sibs[level] = bytes(b ^ 0xFF for b in sibs[level])
        elif kind == "value":
            old += 1
        elif kind == "leaf-as-node":  # a stale path: the sibling subtree as it was before an update
            sibs = list(sibs)
            sibs[0] = merkle.counter_leaf(0)
        mode = MODE_READ if kind == "read" else MODE_INCREMENT
        nonce = bytes([step]) * 20
        try:
            root, epoch, sig = tpm.TPM_ExecuteHashTree(handle, mode, index, old, sibs, nonce, AIK,
                                                       delta=1 if mode == MODE_INCREMENT else 0, sign=step % 3 == 0)
            out.append(("ok", root, epoch, sig))
            if mode == MODE_INCREMENT:
                assert tree.set(index, merkle.encode_value(old + 1)) == root
                values[index] = old + 1
        except TpmError as e:
            out.append(("error", e.code))
        out.append(clock.last.ms if clock.last else None)
    memo_now = tpm.engine.state.hashtree_memo
    assert isinstance(memo_now, merkle.RootMemo) == memo  # in use all along
    if memo and merkle.MEMO_DENSIFY_AT < 100:
        assert memo_now.dense
    return out


@pytest.mark.parametrize("depth", [3, 9, 20])
@pytest.mark.parametrize("densify", [8, merkle.MEMO_DENSIFY_AT])
def test_engine_answers_and_charges_are_the_same_with_and_without_the_memo(clock, depth, densify,
                                                                          monkeypatch) -> None:
    monkeypatch.setattr(merkle, "MEMO_DENSIFY_AT", densify)
    runs = []
    for memo in (True, False):
        POOL.reset()
        tpm = Tpm12(Clock(clock.profile), nv=MemoryNVStore(), keygen=POOL)
        tpm.TPM_TakeOwnership(OWNER, SRK)
        handle = tpm.TPM_LoadKey2(C.TPM_KH_SRK, tpm.TPM_MakeIdentity(OWNER, SRK, AIK)[0], SRK)
        runs.append(_run(tpm, handle, depth, memo, seed=depth))
    with_memo, without = runs
    assert {r[0] for r in with_memo if isinstance(r, tuple)} == {"ok", "error"}
    assert with_memo == without


def test_memo_is_dropped_when_the_held_root_is_not_its_root(tpm: Tpm12, aik) -> None:
    handle, _ = aik
    tree = new_tree(5)
    tpm.TPM_ExecuteHashTree(handle, 0, 0, 5, [], bytes(20), OWNER)
    st_ = tpm.engine.state
    assert isinstance(st_.hashtree_memo, merkle.RootMemo)
    st_.hashtree_memo.root = bytes(20)  # out of step (e.g. a state rolled back under it)
    root, _, _ = tpm.TPM_ExecuteHashTree(handle, MODE_INCREMENT, 3, 0, tree.siblings(3), bytes(20), AIK, delta=1)
    assert root == tree.set(3, merkle.encode_value(1))
    assert tpm.engine.state.hashtree_memo is None
    with pytest.raises(TpmError, match="TPM_BAD_HASHTREE"):  # still checked, by hashing
        tpm.TPM_ExecuteHashTree(handle, MODE_INCREMENT, 3, 0, tree.siblings(3), bytes(20), AIK, delta=1)
    # a restart reads the state back from NV: no memo, same answers
    tpm.restart()
    handle2 = tpm.TPM_LoadKey2(C.TPM_KH_SRK, tpm.TPM_MakeIdentity(OWNER, SRK, AIK)[0], SRK)
    assert tpm.engine.state.hashtree_memo is None
    root2, _, _ = tpm.TPM_ExecuteHashTree(handle2, MODE_INCREMENT, 3, 1, tree.siblings(3), bytes(20), AIK, delta=1)
    assert root2 == tree.set(3, merkle.encode_value(2))


def test_path_nodes_memo_answers_only_for_the_exact_inputs_it_hashed() -> None:
    tree = new_tree(8)
    tree.set(76, merkle.encode_value(3))
    packed = tree.prepare(77, merkle.encode_value(5)).packed
    leaf = merkle.counter_leaf(5)
    want = merkle.path_nodes(77, leaf, packed)
    assert want[-1] == merkle.root_from_path(77, leaf, tree.siblings(77))
    assert merkle.path_nodes(77, leaf, packed) is want  # remembered
    rng = random.Random(5)
    for level in range(8):  # any other sibling, leaf or index is a miss, and is hashed
        tampered = _tamper(packed, level, rng)
        got = merkle.path_nodes(77, leaf, tampered)
        assert got[-1] == merkle.root_from_path(77, leaf, [tampered[i:i + 20] for i in range(0, 160, 20)]) != want[-1]
        assert merkle.path_nodes(77, leaf, packed) == want
    for index, lf in ((76, leaf), (77, merkle.counter_leaf(4))):
        assert merkle.path_nodes(index, lf, packed)[-1] == merkle.root_from_path(index, lf, tree.siblings(77))


def test_dense_node_stores_copy_and_pickle() -> None:
    """A dense store writes through a memoryview; copies and pickles must not trip on it."""
    import copy
    import pickle

    from trustlab.devices.tpm12.merkle import HeapNodes, default_nodes

    store = HeapNodes(6, default_nodes(6), densify_at=1)
    for i in range(8):
        store.set_leaf(i, bytes([i]) * 20)
    assert store.dense
    for twin in (copy.deepcopy(store), pickle.loads(pickle.dumps(store))):
        assert twin.root == store.root
        twin.set_leaf(3, b"\xff" * 20)  # writes go to the copy's own slots
        assert twin.root != store.root and store.node((1 << 6) + 3, 0) == bytes([3]) * 20

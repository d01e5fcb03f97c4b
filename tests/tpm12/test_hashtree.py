"""Merkle conventions and TPM_ExecuteHashTree: honest updates verify, stale paths fail."""

from __future__ import annotations

import hashlib

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, utils
from hypothesis import given, settings
from hypothesis import strategies as st

from trustlab.devices.tpm12 import Tpm12, TpmError, secret
from trustlab.devices.tpm12 import constants as C
from trustlab.devices.tpm12 import client, merkle
from trustlab.devices.tpm12.keys import Key12, rsa_public

from .conftest import OWNER, SRK

AIK = secret("aik")


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(1, 8), writes=st.lists(st.tuples(st.integers(0, 255), st.binary(max_size=8)), max_size=20))
def test_sparse_tree_matches_dense_and_paths(depth: int, writes) -> None:
    tree = merkle.SparseMerkleTree(depth)
    leaves = [merkle.leaf_hash(b"")] * (1 << depth)
    for index, data in writes:
        index %= 1 << depth
        leaves[index] = merkle.leaf_hash(data)
        tree.update(index, leaves[index])
    dense = merkle.SparseMerkleTree.from_leaves(depth, leaves)
    assert dense.root == tree.root
    for index in {i % (1 << depth) for i, _ in writes} | {0}:
        assert merkle.root_from_path(index, leaves[index], tree.path(index)) == tree.root


def test_big_sparse_tree_is_cheap() -> None:
    tree = merkle.SparseMerkleTree(20)
    tree.update(123456, merkle.leaf_hash(b"x"))
    assert merkle.root_from_path(123456, merkle.leaf_hash(b"x"), tree.path(123456)) == tree.root
    assert merkle.root_from_path(7, merkle.leaf_hash(b""), tree.path(7)) == tree.root


def test_node_cannot_pose_as_leaf() -> None:
    l, r = merkle.leaf_hash(b"a"), merkle.leaf_hash(b"b")
    assert merkle.leaf_hash(l + r) != merkle.node_hash(l, r)


@pytest.fixture
def aik(tpm: Tpm12):
    blob, _ = tpm.TPM_MakeIdentity(OWNER, SRK, AIK)
    return tpm.TPM_LoadKey2(C.TPM_KH_SRK, blob, SRK), rsa_public(Key12.from_bytes(blob).pub)


def _verify(pub, sig, epoch, nonce, index, old, new, root) -> None:
    digest = hashlib.sha1(merkle.hashtree_info(epoch, nonce, index, old, new, root)).digest()
    pub.verify(sig, digest, padding.PKCS1v15(), utils.Prehashed(hashes.SHA1()))


def _counter_tree(depth: int) -> merkle.SparseMerkleTree:
    """The host's copy of an all-zero counter tree (what INIT installs in the TPM)."""
    tree = merkle.SparseMerkleTree(depth)
    for i in range(tree.size):
        tree.update(i, merkle.counter_leaf(0))
    return tree


def test_execute_hash_tree_update_read_and_rollback(tpm: Tpm12, aik) -> None:
    handle, pub = aik
    depth = 10
    defaults = merkle.counter_defaults(depth)
    path0 = defaults[:depth]  # siblings of any leaf in the all-zero tree
    root, epoch, sig = tpm.TPM_ExecuteHashTree(handle, 0, 0, depth, [], b"\0" * 20, OWNER)
    assert root == merkle.empty_counter_root(depth) and sig == b"" and epoch >= 1
    nonce = b"\x07" * 20
    root, epoch2, sig = tpm.TPM_ExecuteHashTree(handle, 3, 5, 0, path0, nonce, AIK, delta=1)
    assert epoch2 == epoch
    assert root == merkle.root_from_path(5, merkle.counter_leaf(1), path0)
    _verify(pub, sig, epoch, nonce, 5, 0, 1, root)
    # READ attests the value without changing the root
    root2, _, sig = tpm.TPM_ExecuteHashTree(handle, 1, 5, 1, path0, nonce, AIK)
    assert root2 == root
    _verify(pub, sig, epoch, nonce, 5, 1, 1, root)
    # rollback: presenting the old value with its (now stale) claim is refused
    with pytest.raises(TpmError, match="TPM_BAD_HASHTREE"):
        tpm.TPM_ExecuteHashTree(handle, 3, 5, 0, path0, nonce, AIK, delta=1)
    # the root survives a power cycle
    tpm.restart()
    handle2 = tpm.TPM_LoadKey2(C.TPM_KH_SRK, tpm.TPM_MakeIdentity(OWNER, SRK, AIK)[0], SRK)
    assert tpm.TPM_ExecuteHashTree(handle2, 1, 5, 1, path0, nonce, AIK)[0] == root


def test_update_costs_2_depth_hashes_more_than_nothing(tpm: Tpm12, aik, clock) -> None:
    handle, _ = aik
    blocks = {}
    for depth in (4, 12):
        tpm.TPM_ExecuteHashTree(handle, 0, 0, depth, [], b"\0" * 20, OWNER)
        tpm.TPM_ExecuteHashTree(handle, 3, 3, 0, merkle.counter_defaults(depth)[:depth], b"\0" * 20, AIK, delta=1)
        blocks[depth] = round(clock.last.breakdown["sha1_byte"] / clock.profile.mean("sha1_byte") / 64)
    # 2 hashes per level for the update; each extra sibling adds 20 bytes to the parameter digest
    extra_levels = 12 - 4
    assert blocks[12] - blocks[4] >= 2 * extra_levels
    assert blocks[12] - blocks[4] <= 2 * extra_levels + 4


def test_increment_mode_cannot_roll_a_counter_back(tpm: Tpm12, aik) -> None:
    handle, pub = aik
    tree = _counter_tree(6)
    _, epoch, _ = tpm.TPM_ExecuteHashTree(handle, 0, 0, 6, [], b"\0" * 20, OWNER)
    for value in range(3):
        nonce = bytes([value]) * 20
        root, _, sig = tpm.TPM_ExecuteHashTree(handle, 3, 9, value, tree.path(9), nonce, AIK, delta=1)
        assert root == tree.update(9, merkle.counter_leaf(value + 1))
        _verify(pub, sig, epoch, nonce, 9, value, value + 1, root)
    # claiming an older value does not match the root: INCREMENT never goes back
    with pytest.raises(TpmError, match="TPM_BAD_HASHTREE"):
        tpm.TPM_ExecuteHashTree(handle, 3, 9, 1, tree.path(9), b"\0" * 20, AIK, delta=1)
    with pytest.raises(TpmError, match="TPM_BAD_PARAMETER"):  # past 2^64 - 1
        tpm.TPM_ExecuteHashTree(handle, 3, 9, 3, tree.path(9), b"\0" * 20, AIK, delta=(1 << 64) - 1)
    with pytest.raises(TpmError, match="TPM_BAD_PARAMETER"):  # delta 0 is not an increment
        tpm.TPM_ExecuteHashTree(handle, 3, 9, 3, tree.path(9), b"\0" * 20, AIK, delta=0)
    # arithmetic counters: the TPM adds delta itself
    root, _, sig = tpm.TPM_ExecuteHashTree(handle, 3, 9, 3, tree.path(9), b"\1" * 20, AIK, delta=40)
    assert root == tree.update(9, merkle.counter_leaf(43))
    _verify(pub, sig, epoch, b"\1" * 20, 9, 3, 43, root)


def test_generic_update_is_refused_and_changes_nothing(tpm: Tpm12, aik) -> None:
    handle, _ = aik
    tree = _counter_tree(3)
    tpm.TPM_ExecuteHashTree(handle, 0, 0, 3, [], b"\0" * 20, OWNER)
    root, _, _ = tpm.TPM_ExecuteHashTree(handle, 3, 2, 0, tree.path(2), b"\0" * 20, AIK, delta=5)
    tree.update(2, merkle.counter_leaf(5))
    with pytest.raises(TpmError, match="TPM_BAD_MODE"):
        tpm.TPM_ExecuteHashTree(handle, 2, 2, 5, tree.path(2), b"\0" * 20, AIK, delta=1)
    with pytest.raises(TpmError, match="TPM_BAD_MODE"):
        tpm.TPM_ExecuteHashTree(handle, 7, 2, 5, tree.path(2), b"\0" * 20, AIK)
    assert tpm.TPM_ExecuteHashTree(handle, 1, 2, 5, tree.path(2), b"\0" * 20, AIK)[0] == root


def test_reinit_bumps_the_epoch_across_restarts(tpm: Tpm12, aik) -> None:
    handle, _ = aik
    epochs = [tpm.TPM_ExecuteHashTree(handle, 0, 0, 2, [], b"\0" * 20, OWNER)[1] for _ in range(2)]
    tpm.restart()
    epochs.append(tpm.TPM_ExecuteHashTree(handle, 0, 0, 2, [], b"\0" * 20, OWNER)[1])
    assert epochs == sorted(set(epochs)) and len(epochs) == 3
    with pytest.raises(TpmError, match="TPM_AUTHFAIL"):
        tpm.TPM_ExecuteHashTree(handle, 0, 0, 2, [], b"\0" * 20, AIK)


def _params(mode: int, index: int, value: int, delta: int, nonce: bytes, count: int, path: bytes) -> bytes:
    return bytes([mode]) + b"".join(v.to_bytes(8, "big") for v in (index, value, delta)) + nonce \
        + count.to_bytes(4, "big") + path


@pytest.mark.parametrize("case, code", [
    ("short-head", "TPM_BAD_PARAM_SIZE"), ("short-path", "TPM_BAD_PARAM_SIZE"),
    ("trailing", "TPM_BAD_PARAM_SIZE"), ("count-over-64", "TPM_BAD_PARAMETER"),
    ("count-over-64-short", "TPM_BAD_PARAMETER"), ("count-not-depth", "TPM_BAD_PARAMETER"),
])
def test_malformed_parameters_fail_as_read_field_by_field(tpm: Tpm12, aik, case: str, code: str) -> None:
    """The one-unpack parse of well-formed parameters leaves every malformed frame its old error."""
    handle, _ = aik
    depth = 4
    tpm.TPM_ExecuteHashTree(handle, 0, 0, depth, [], b"\0" * 20, OWNER)
    path = b"".join(merkle.counter_defaults(depth)[:depth])
    params = {
        "short-head": _params(3, 1, 0, 1, b"\1" * 20, depth, path)[:40],
        "short-path": _params(3, 1, 0, 1, b"\1" * 20, depth, path[:-1]),
        "trailing": _params(3, 1, 0, 1, b"\1" * 20, depth, path + b"\0"),
        "count-over-64": _params(3, 1, 0, 1, b"\1" * 20, 65, path + bytes(20 * 61)),
        "count-over-64-short": _params(3, 1, 0, 1, b"\1" * 20, 65, path),
        "count-not-depth": _params(3, 1, 0, 1, b"\1" * 20, depth - 1, path[:-20]),
    }[case]
    with pytest.raises(TpmError, match=code):
        tpm.call("TPM_ExecuteHashTree", handles=[handle], params=params, auth=[AIK])
    # and the well-formed frame of the same request still works
    root, _, _ = tpm.TPM_ExecuteHashTree(handle, 3, 1, 0, merkle.counter_defaults(depth)[:depth], b"\1" * 20, AIK,
                                         delta=1)
    assert root == merkle.root_from_path(1, merkle.counter_leaf(1), merkle.counter_defaults(depth)[:depth])


def test_packed_and_listed_siblings_send_the_same_frame(tpm: Tpm12, aik, monkeypatch) -> None:
    handle, _ = aik
    monkeypatch.setattr(client, "FAST_PATH", False)  # frames, to compare them
    sent = []
    execute = tpm.engine.execute
    tpm.engine.execute = lambda frame: sent.append(frame) or execute(frame)  # type: ignore[method-assign]
    path = merkle.counter_defaults(3)[:3]
    tpm.TPM_ExecuteHashTree(handle, 0, 0, 3, [], b"\0" * 20, OWNER)
    for siblings in (path, b"".join(path)):
        with pytest.raises(TpmError):  # READ of value 5 fails (the counter is 0), after the same frame went out
            tpm.TPM_ExecuteHashTree(handle, 1, 2, 5, siblings, b"\2" * 20, secret("aik"), sign=False)
    ordinal = C.ORD["TPM_ExecuteHashTree"].to_bytes(4, "big")
    strip = [f[:-45] for f in sent if f[6:10] == ordinal][-2:]  # the trailers carry fresh nonces
    assert strip[0] == strip[1]
    with pytest.raises(ValueError, match="multiple of 20"):
        tpm.TPM_ExecuteHashTree(handle, 1, 2, 0, b"".join(path)[:-1], b"\2" * 20, AIK)

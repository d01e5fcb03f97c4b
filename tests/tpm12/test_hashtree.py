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
from trustlab.devices.tpm12 import merkle
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


def test_execute_hash_tree_update_read_and_rollback(tpm: Tpm12, aik) -> None:
    handle, pub = aik
    tree = merkle.SparseMerkleTree(10)
    root, _ = tpm.TPM_ExecuteHashTree(handle, 0, 0, b"\0" * 20, tree.root, [], b"\0" * 20, OWNER)
    assert root == tree.root
    old = tree.leaf(5)
    path = tree.path(5)
    new = merkle.leaf_hash((1).to_bytes(8, "big"))
    nonce = b"\x07" * 20
    root, sig = tpm.TPM_ExecuteHashTree(handle, 2, 5, old, new, path, nonce, AIK)
    assert root == tree.update(5, new)
    digest = hashlib.sha1(merkle.hashtree_info(nonce, 5, new, root)).digest()
    pub.verify(sig, digest, padding.PKCS1v15(), utils.Prehashed(hashes.SHA1()))
    # the TPM charged 2 * depth node hashes for the update (plus dispatcher/auth blocks)
    root2, _ = tpm.TPM_ExecuteHashTree(handle, 1, 5, new, b"\0" * 20, tree.path(5), nonce, AIK)
    assert root2 == root
    # rollback: presenting the old leaf with its (now stale) path is refused
    with pytest.raises(TpmError, match="TPM_BAD_HASHTREE"):
        tpm.TPM_ExecuteHashTree(handle, 2, 5, old, new, path, nonce, AIK)
    # the root survives a power cycle
    tpm.restart()
    handle2 = tpm.TPM_LoadKey2(C.TPM_KH_SRK, tpm.TPM_MakeIdentity(OWNER, SRK, AIK)[0], SRK)
    assert tpm.TPM_ExecuteHashTree(handle2, 1, 5, new, b"\0" * 20, tree.path(5), nonce, AIK)[0] == root


def test_update_costs_2_depth_hashes_more_than_nothing(tpm: Tpm12, aik, clock) -> None:
    handle, _ = aik
    blocks = {}
    for depth in (4, 12):
        tree = merkle.SparseMerkleTree(depth)
        tpm.TPM_ExecuteHashTree(handle, 0, 0, b"\0" * 20, tree.root, [], b"\0" * 20, OWNER)
        new = merkle.leaf_hash(b"1")
        tpm.TPM_ExecuteHashTree(handle, 2, 3, tree.leaf(3), new, tree.path(3), b"\0" * 20, AIK)
        blocks[depth] = round(clock.last.breakdown["sha1_byte"] / clock.profile.mean("sha1_byte") / 64)
    # 2 hashes per level for the update; each extra sibling adds 20 bytes to the parameter digest
    extra_levels = 12 - 4
    assert blocks[12] - blocks[4] >= 2 * extra_levels
    assert blocks[12] - blocks[4] <= 2 * extra_levels + 4


def test_increment_mode_cannot_roll_a_counter_back(tpm: Tpm12, aik) -> None:
    handle, pub = aik
    tree = merkle.SparseMerkleTree(6)
    for i in range(tree.size):
        tree.update(i, merkle.counter_leaf(0))
    tpm.TPM_ExecuteHashTree(handle, 0, 0, b"\0" * 20, tree.root, [], b"\0" * 20, OWNER)
    for value in range(3):
        nonce = bytes([value]) * 20
        root, sig = tpm.TPM_ExecuteHashTree(handle, 3, 9, value.to_bytes(8, "big") + bytes(12), b"\0" * 20,
                                            tree.path(9), nonce, AIK)
        assert root == tree.update(9, merkle.counter_leaf(value + 1))
        digest = hashlib.sha1(merkle.hashtree_info(nonce, 9, merkle.counter_leaf(value + 1), root)).digest()
        pub.verify(sig, digest, padding.PKCS1v15(), utils.Prehashed(hashes.SHA1()))
    # claiming an older value does not match the root: INCREMENT never goes back
    with pytest.raises(TpmError, match="TPM_BAD_HASHTREE"):
        tpm.TPM_ExecuteHashTree(handle, 3, 9, (1).to_bytes(8, "big") + bytes(12), b"\0" * 20,
                                tree.path(9), b"\0" * 20, AIK)
    with pytest.raises(TpmError, match="TPM_BAD_PARAMETER"):
        tpm.TPM_ExecuteHashTree(handle, 3, 9, b"\xff" * 20, b"\0" * 20, tree.path(9), b"\0" * 20, AIK)

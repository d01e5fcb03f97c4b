"""Hash-tree (Merkle) conventions shared by the TPM, the host and verifiers.

Conventions (Sarmenta et al. 2006, as in the counters paper's Fig. 1, with
domain separation so a node can never pass for a leaf):

* ``leaf_hash(data) = SHA1(0x00 || data)``; ``node_hash(l, r) = SHA1(0x01 || l || r)``
  (one SHA-1 block each: 41 bytes + padding < 64).
* Leaf ``index`` in ``[0, 2**depth)``; bit ``k`` of the index says whether the
  node at height ``k`` on the path is a right child. A path is the list of
  sibling hashes from the leaf level up to just below the root.
* An empty leaf is ``leaf_hash(b"")``; the default node of height ``h`` is
  the root of an all-empty subtree of height ``h`` (so a 2^20-leaf tree costs
  memory only for the leaves that were ever written).

Everything here is pure; the hash is a parameter (``sha1=``) so the TPM can
pass its timed SHA-1 and count blocks, while hosts use ``hashlib``.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Callable, Iterable, Sequence

Hash = Callable[..., bytes]
DIGEST = 20
MAX_DEPTH = 64


def sha1(*parts: bytes) -> bytes:
    return hashlib.sha1(b"".join(parts)).digest()


def leaf_hash(data: bytes, h: Hash = sha1) -> bytes:
    return h(b"\x00", data)


MAX_VALUE = (1 << 64) - 1


def encode_value(value: int) -> bytes:
    """A counter's leaf data: its value as a UINT64 (big-endian, as TPM structures are)."""
    return struct.pack(">Q", value)


def counter_leaf(value: int, h: Hash = sha1) -> bytes:
    """Leaf hash of a counter: ``leaf_hash(UINT64 value)`` (what TPM_ExecuteHashTree checks)."""
    return leaf_hash(encode_value(value), h)


def counter_defaults(depth: int, h: Hash = sha1) -> list[bytes]:
    """``[leaf of value 0, ..., root of an all-zero counter tree]`` (depth + 1 entries)."""
    nodes = [counter_leaf(0, h)]
    for _ in range(depth):
        nodes.append(node_hash(nodes[-1], nodes[-1], h))
    return nodes


def empty_counter_root(depth: int) -> bytes:
    """Root of a tree of ``2**depth`` counters that are all zero (TPM_ExecuteHashTree INIT)."""
    return counter_defaults(depth)[-1]


def node_hash(left: bytes, right: bytes, h: Hash = sha1) -> bytes:
    return h(b"\x01", left, right)


def root_from_path(index: int, leaf: bytes, siblings: Sequence[bytes], h: Hash = sha1) -> bytes:
    """The root implied by ``leaf`` (a leaf *hash*) at ``index`` with these siblings."""
    if index < 0 or index >> len(siblings):
        raise ValueError(f"leaf index {index} does not fit a tree of depth {len(siblings)}")
    node = leaf
    for level, sib in enumerate(siblings):
        if len(sib) != DIGEST:
            raise ValueError(f"sibling at height {level} is {len(sib)} bytes, not {DIGEST}")
        node = node_hash(sib, node, h) if index >> level & 1 else node_hash(node, sib, h)
    return node


def default_nodes(depth: int, h: Hash = sha1) -> list[bytes]:
    """``[empty leaf, empty height-1 node, ..., empty root]`` (depth + 1 entries)."""
    nodes = [leaf_hash(b"", h)]
    for _ in range(depth):
        nodes.append(node_hash(nodes[-1], nodes[-1], h))
    return nodes


def hashtree_info(epoch: int, nonce: bytes, index: int, old: int, new: int, root: bytes) -> bytes:
    """TPM_HASHTREE_INFO, what TPM_ExecuteHashTree signs.

    Tag "HTRE", the tree's epoch (UINT32, bumped by every INIT so a re-initialised
    tree cannot pass for the old one), the verifier's nonce, the counter index
    and its old and new values (UINT64 each; equal for a READ), the new root.
    """
    return b"HTRE" + struct.pack(">I", epoch) + nonce + struct.pack(">QQQ", index, old, new) + root


class SparseMerkleTree:
    """A host-side tree of ``2**depth`` leaves storing only non-default nodes.

    ``update`` costs ``depth`` hashes; ``path`` is a dictionary walk. Holds
    2^20 counters in memory proportional to the leaves actually used.
    """

    def __init__(self, depth: int, h: Hash = sha1) -> None:
        if not 0 < depth <= MAX_DEPTH:
            raise ValueError(f"tree depth must be 1..{MAX_DEPTH}, not {depth}")
        self.depth = depth
        self._h = h
        self._default = default_nodes(depth, h)
        self._nodes: dict[tuple[int, int], bytes] = {}  # (height, index at that height)

    @property
    def size(self) -> int:
        return 1 << self.depth

    @property
    def root(self) -> bytes:
        return self._nodes.get((self.depth, 0), self._default[self.depth])

    def node(self, height: int, index: int) -> bytes:
        return self._nodes.get((height, index), self._default[height])

    def leaf(self, index: int) -> bytes:
        self._check(index)
        return self.node(0, index)

    def _check(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise IndexError(f"leaf {index} outside a tree of {self.size} leaves")

    def path(self, index: int) -> list[bytes]:
        """Sibling hashes from the leaf up (what TPM_ExecuteHashTree needs)."""
        self._check(index)
        return [self.node(height, (index >> height) ^ 1) for height in range(self.depth)]

    def update(self, index: int, leaf: bytes) -> bytes:
        """Set a leaf *hash*; returns the new root."""
        self._check(index)
        node = leaf
        self._set(0, index, node)
        for height in range(self.depth):
            i = index >> height
            sib = self.node(height, i ^ 1)
            node = node_hash(sib, node, self._h) if i & 1 else node_hash(node, sib, self._h)
            self._set(height + 1, i >> 1, node)
        return node

    def _set(self, height: int, index: int, value: bytes) -> None:
        if value == self._default[height]:
            self._nodes.pop((height, index), None)
        else:
            self._nodes[(height, index)] = value

    @classmethod
    def from_leaves(cls, depth: int, leaves: Iterable[bytes], h: Hash = sha1) -> "SparseMerkleTree":
        """Dense construction bottom-up: each internal node hashed once."""
        tree = cls(depth, h)
        level = {i: v for i, v in enumerate(leaves)}
        if len(level) > tree.size:
            raise ValueError(f"{len(level)} leaves do not fit depth {depth}")
        for height in range(depth + 1):
            for i, v in level.items():
                tree._set(height, i, v)
            if height == depth:
                break
            parents = {i >> 1 for i in level}
            level = {p: node_hash(tree.node(height, 2 * p), tree.node(height, 2 * p + 1), h) for p in parents}
        return tree

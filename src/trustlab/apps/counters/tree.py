"""The host-held half of the hash-tree scheme: a sparse Merkle tree of counters.

In the hash-tree scheme (paper, Sec. III-B2) the leaves and inner nodes live in
the host's *untrusted* memory; only the root lives in the TPM. The host must
hand the TPM (and the verifier) the sibling path of a leaf. With 2^20 counters
and most of them never touched, a dense tree would spend 2^21 hashes before the
first request, so the tree is sparse: a node nobody wrote equals the
precomputed hash of an all-default subtree of its height, and only written
nodes are stored (a dict keyed by heap index: root 1, children 2i and 2i+1,
leaf ``i`` at ``2^depth + i``).

Hashing conventions come from the TPM engine's pure Merkle module
(:mod:`trustlab.devices.tpm12.merkle`) when it provides them, so host, TPM and
verifier agree by construction; the tree itself is hash-agnostic.

Nothing here is trusted: an attacker who owns the host can rewrite any node
(:meth:`SparseTree.poke` exists for the adversarial tests). Safety comes from
the root inside the TPM and the AIK signature over it.
"""

from __future__ import annotations

from typing import Callable

LeafHash = Callable[[bytes], bytes]
NodeHash = Callable[[bytes, bytes], bytes]


class SparseTree:
    """A binary Merkle tree of ``2^depth`` leaves, storing only written nodes."""

    def __init__(self, depth: int, leaf_hash: LeafHash, node_hash: NodeHash, default_leaf: bytes,
                 inline: tuple[Callable[[bytes], object], bytes] | None = None) -> None:
        """``inline=(hash constructor, prefix)`` promises ``node_hash(l, r) ==
        ctor(prefix + l + r).digest()``; :meth:`set` then hashes without a Python call per level."""
        if depth < 1 or depth > 40:
            raise ValueError(f"tree depth must be 1..40, got {depth}")
        self.depth = depth
        self.size = 1 << depth
        self._leaf_hash = leaf_hash
        self._node_hash = node_hash
        self._default_leaf = default_leaf
        # defaults[h] = hash of an untouched subtree of height h (h = 0: a leaf)
        defaults = [leaf_hash(default_leaf)]
        for _ in range(depth):
            defaults.append(node_hash(defaults[-1], defaults[-1]))
        self.defaults = defaults
        self.nodes: dict[int, bytes] = {}
        self.leaves: dict[int, bytes] = {}
        self._inline = inline
        self._path_defaults = tuple(defaults[:depth])  # sibling default per height, leaf level first
        if inline is not None and node_hash(defaults[0], defaults[0]) != inline[0](inline[1] + defaults[0] * 2).digest():
            raise ValueError("inline hash does not match node_hash")

    # ---- reading ------------------------------------------------------------

    @property
    def root(self) -> bytes:
        return self.nodes.get(1, self.defaults[self.depth])

    def leaf(self, index: int) -> bytes:
        """The leaf's data (the counter's encoded value)."""
        self._check(index)
        return self.leaves.get(index, self._default_leaf)

    def node(self, heap_index: int, height: int) -> bytes:
        return self.nodes.get(heap_index, self.defaults[height])

    def siblings(self, index: int) -> list[bytes]:
        """Sibling hashes from the leaf level up to just below the root."""
        self._check(index)
        idx = self.size + index
        nodes, defaults = self.nodes, self.defaults
        out = []
        for height in range(self.depth):
            out.append(nodes.get(idx ^ 1, defaults[height]))
            idx >>= 1
        return out

    # ---- writing ------------------------------------------------------------

    def set(self, index: int, data: bytes) -> bytes:
        """Write a leaf and rehash its path; returns the new root."""
        self._check(index)
        self.leaves[index] = data
        nodes, defaults, node_hash = self.nodes, self.defaults, self._node_hash
        idx = self.size + index
        h = self._leaf_hash(data)
        nodes[idx] = h
        if self._inline is not None:  # the hot loop of the 2^20-counter runs
            ctor, prefix = self._inline
            get = nodes.get
            for default in self._path_defaults:
                if idx & 1:
                    h = ctor(prefix + get(idx - 1, default) + h).digest()
                else:
                    h = ctor(prefix + h + get(idx + 1, default)).digest()
                idx >>= 1
                nodes[idx] = h
            return h
        for height in range(self.depth):
            sib = nodes.get(idx ^ 1, defaults[height])
            h = node_hash(sib, h) if idx & 1 else node_hash(h, sib)
            idx >>= 1
            nodes[idx] = h
        return h

    def set_many(self, items: dict[int, bytes]) -> bytes:
        """Write many leaves, then rehash each dirty inner node once; returns the new root.

        Equal to calling :meth:`set` for each item in turn, but the paths of a
        batch share their upper levels, so a batch of k random leaves costs
        about k (depth - log2 k) + 2k hashes instead of k depth.
        """
        nodes, defaults, node_hash, leaf_hash = self.nodes, self.defaults, self._node_hash, self._leaf_hash
        dirty = set()
        for index, data in items.items():
            self._check(index)
            self.leaves[index] = data
            idx = self.size + index
            nodes[idx] = leaf_hash(data)
            dirty.add(idx >> 1)
        get = nodes.get
        ctor, prefix = self._inline if self._inline is not None else (None, b"")
        for height in range(1, self.depth + 1):
            below = defaults[height - 1]
            if ctor is not None:
                for idx in dirty:
                    nodes[idx] = ctor(prefix + get(2 * idx, below) + get(2 * idx + 1, below)).digest()
            else:
                for idx in dirty:
                    nodes[idx] = node_hash(get(2 * idx, below), get(2 * idx + 1, below))
            dirty = {idx >> 1 for idx in dirty}
        return self.root

    def poke(self, heap_index: int, value: bytes) -> None:
        """Overwrite a stored node without rehashing (what a hostile host can do)."""
        self.nodes[heap_index] = value

    def snapshot(self) -> tuple[dict[int, bytes], dict[int, bytes]]:
        """Copies of the host state, e.g. to roll it back in an attack."""
        return dict(self.nodes), dict(self.leaves)

    def restore(self, state: tuple[dict[int, bytes], dict[int, bytes]]) -> None:
        self.nodes, self.leaves = dict(state[0]), dict(state[1])

    def _check(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise IndexError(f"counter {index} outside 0..{self.size - 1}")


def root_from_path(index: int, leaf_hash: bytes, siblings: list[bytes], node_hash: NodeHash) -> bytes:
    """Recompute the root a leaf and its sibling path imply (the verifier's side)."""
    h = leaf_hash
    for sib in siblings:
        h = node_hash(sib, h) if index & 1 else node_hash(h, sib)
        index >>= 1
    return h

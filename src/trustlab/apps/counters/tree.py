"""The host-held half of the hash-tree scheme: a sparse Merkle tree of counters.

In the hash-tree scheme (paper, Sec. III-B2) the leaves and inner nodes live in
the host's *untrusted* memory; only the root lives in the TPM. The host must
hand the TPM (and the verifier) the sibling path of a leaf. With 2^20 counters
and most of them never touched, a dense tree would spend 2^21 hashes before the
first request, so the tree is sparse: a node nobody wrote equals the
precomputed hash of an all-default subtree of its height, shared by reference
(heap-indexed: root 1, children 2i and 2i+1, leaf ``i`` at ``2^depth + i``; a
bytearray of 20-byte slots up to depth 20, a dict of written nodes beyond; see
:class:`trustlab.devices.tpm12.merkle.HeapNodes`).

Hashing conventions and the storage come from the TPM engine's pure Merkle
module (:mod:`trustlab.devices.tpm12.merkle`), so host, TPM and verifier agree
by construction; leaf hashing is the caller's (the tree keeps leaf *data*).

Nothing here is trusted: an attacker who owns the host can rewrite any node
(:meth:`SparseTree.poke` exists for the adversarial tests). Safety comes from
the root inside the TPM and the AIK signature over it.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from trustlab.devices.tpm12 import merkle

LeafHash = Callable[[bytes], bytes]
_new_tuple = tuple.__new__
NodeHash = Callable[[bytes, bytes], bytes]


class SparseTree:
    """A binary Merkle tree of ``2^depth`` leaves holding data (counter values), over
    the engine's :class:`~trustlab.devices.tpm12.merkle.HeapNodes` storage and loops."""

    def __init__(self, depth: int, leaf_hash: LeafHash, node_hash: NodeHash, default_leaf: bytes,
                 inline: tuple[Callable[[bytes], object], bytes] | None = None) -> None:
        """``inline=(hash constructor, prefix)`` promises ``node_hash(l, r) ==
        ctor(prefix + l + r).digest()`` is the engine's node hash; :meth:`set` then
        hashes without a Python call per level."""
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
        if inline is not None:
            d = defaults[0]
            if not node_hash(d, d) == inline[0](inline[1] + d * 2).digest() == merkle.node_hash(d, d):
                raise ValueError("inline hash does not match node_hash and the engine's convention")
        self._store = merkle.HeapNodes(depth, defaults, None if inline is not None else node_hash)
        # Leaf data: a dict while few are written; once the node storage has gone dense, fixed-width
        # slots of one bytearray (8 MiB for 2^20 counters, where the dict grew to tens of MiB).
        # Data of another width than the default leaf's stays in the dict, which takes precedence.
        self._width = len(default_leaf)
        self._leafbuf: bytearray | None = None
        self.leaves: dict[int, bytes] = {}

    # ---- reading ------------------------------------------------------------

    @property
    def root(self) -> bytes:
        return self._store.root

    @property
    def nodes(self):
        """The heap-indexed node storage (20-byte slots of a bytearray up to depth 20, else a dict)."""
        return self._store.nodes

    def stored_nodes(self) -> int:
        """Nodes that differ from their untouched default."""
        return self._store.stored()

    def leaf(self, index: int) -> bytes:
        """The leaf's data (the counter's encoded value)."""
        if not 0 <= index < self.size:  # (_check, inlined: read before every operation)
            self._check(index)
        buf = self._leafbuf
        if buf is not None and index not in self.leaves:
            w = self._width
            return bytes(buf[index * w:(index + 1) * w])
        return self.leaves.get(index, self._default_leaf)

    def _put_leaf(self, index: int, data: bytes) -> None:
        w, buf = self._width, self._leafbuf
        if buf is not None and len(data) == w:  # the steady state of a long run: one slot write
            buf[index * w:(index + 1) * w] = data
            if self.leaves:
                self.leaves.pop(index, None)
            return
        if buf is None and self._store.dense and 0 < w <= 64:
            buf = self._leafbuf = bytearray(w * self.size)
            merkle.fill(buf, 0, len(buf), self._default_leaf)
            for i, d in list(self.leaves.items()):
                if len(d) == w:
                    buf[i * w:(i + 1) * w] = d
                    del self.leaves[i]
        if buf is not None and len(data) == w:
            buf[index * w:(index + 1) * w] = data
            self.leaves.pop(index, None)
        else:
            self.leaves[index] = data

    def node(self, heap_index: int, height: int) -> bytes:
        return self._store.node(heap_index, height)

    def siblings(self, index: int) -> list[bytes]:
        """Sibling hashes from the leaf level up to just below the root."""
        self._check(index)
        return self._store.siblings(index)

    # ---- writing ------------------------------------------------------------

    def set(self, index: int, data: bytes) -> bytes:
        """Write a leaf and rehash its path; returns the new root."""
        self._check(index)
        self._put_leaf(index, data)
        return self._store.set_leaf(index, self._leaf_hash(data))

    def prepare(self, index: int, data: bytes) -> "Pending":
        """A write of ``data`` at ``index`` made ready: the leaf's siblings (read once), nothing stored.

        What a host does before asking the TPM to increment: it sends the
        siblings and stores the new path once the TPM agrees. :meth:`commit`
        stores it (equal to :meth:`set`), provided nothing was written in between.
        """
        if not 0 <= index < self.size:
            self._check(index)
        # (tuple.__new__ in C: the named tuple's generated __new__ is a Python frame per operation)
        return _new_tuple(Pending, (index, data, self._store.packed_siblings(index)))

    def commit(self, pending: "Pending") -> bytes:
        """Store a write made ready by :meth:`prepare`; returns the new root.

        The new path over the siblings read then: with the engine's node
        convention, the one the TPM just computed for its root, if it did.
        """
        index, data, packed = pending
        self._put_leaf(index, data)
        return self._store.set_leaf_along(index, self._leaf_hash(data), packed)

    def set_many(self, items: dict[int, bytes]) -> bytes:
        """Write many leaves, then rehash each dirty inner node once; returns the new root.

        Equal to calling :meth:`set` for each item in turn, but the paths of a
        batch share their upper levels, so a batch of k random leaves costs
        about k (depth - log2 k) + 2k hashes instead of k depth.
        """
        hashed = {}
        for index, data in items.items():
            self._check(index)
            self._put_leaf(index, data)
            hashed[index] = self._leaf_hash(data)
        return self._store.set_leaves(hashed)

    def poke(self, heap_index: int, value: bytes) -> None:
        """Overwrite a stored node without rehashing (what a hostile host can do)."""
        self._store.put(heap_index, value)

    def snapshot(self) -> tuple[object, dict[int, bytes], bytearray | None]:
        """Copies of the host state, e.g. to roll it back in an attack."""
        return (self._store.copy_nodes(), dict(self.leaves),
                None if self._leafbuf is None else bytearray(self._leafbuf))

    def restore(self, state: tuple[object, dict[int, bytes], bytearray | None]) -> None:
        self._store.replace_nodes(state[0])  # type: ignore[arg-type]
        self.leaves = dict(state[1])
        self._leafbuf = None if state[2] is None else bytearray(state[2])

    def _check(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise IndexError(f"counter {index} outside 0..{self.size - 1}")


class Pending(NamedTuple):
    """A leaf write made ready by :meth:`SparseTree.prepare`: where, what, and the siblings then (packed)."""

    index: int
    data: bytes
    packed: bytes

    @property
    def siblings(self) -> tuple[bytes, ...]:
        """The siblings one by one (split in one C call: every increment's certificate carries them)."""
        return merkle.split_digests(self.packed)


def root_from_path(index: int, leaf_hash: bytes, siblings: list[bytes], node_hash: NodeHash) -> bytes:
    """Recompute the root a leaf and its sibling path imply (the verifier's side)."""
    h = leaf_hash
    for sib in siblings:
        h = node_hash(sib, h) if index & 1 else node_hash(h, sib)
        index >>= 1
    return h

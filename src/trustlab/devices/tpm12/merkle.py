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
_U64 = struct.Struct(">Q").pack  # a counter's value as leaf data (encode_value), precompiled
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


def counter_roots(index: int, old: int, new: int, siblings: Sequence[bytes]) -> tuple[bytes, bytes]:
    """The roots implied by counter ``index`` = ``old`` and = ``new`` over the same siblings.

    One pass up the path computes both (what TPM_ExecuteHashTree's INCREMENT
    needs: check the old, install the new), with SHA-1 called inline rather
    than through a hash parameter: the caller charges the ``2 (depth + 1)``
    one-block hashes itself, in one call. Equal to ``root_from_path(index,
    counter_leaf(v), siblings)`` for v in (old, new); with ``new == old`` the
    second root is the first (no second pass).
    """
    if index < 0 or index >> len(siblings):
        raise ValueError(f"leaf index {index} does not fit a tree of depth {len(siblings)}")
    for sib in siblings:
        if len(sib) != DIGEST:
            raise ValueError(f"sibling is {len(sib)} bytes, not {DIGEST}")
    return counter_roots_packed(index, old, new, b"".join(siblings))


def counter_roots_packed(index: int, old: int, new: int, path: bytes) -> tuple[bytes, bytes]:
    """:func:`counter_roots` over siblings packed back to back (``len(path) == 20 depth``).

    TPM_ExecuteHashTree's wire form: taken as is, every sibling is 20 bytes by
    construction, so no list is built and no length is checked per level. The
    new path comes from :func:`path_nodes` (remembered for the host, which
    stores the same path next).
    """
    depth, rem = divmod(len(path), DIGEST)
    if rem:
        raise ValueError(f"sibling path of {len(path)} bytes is not a multiple of {DIGEST}")
    if index < 0 or index >> depth:
        raise ValueError(f"leaf index {index} does not fit a tree of depth {depth}")
    a = _hash_up(index, path, 0, _node_sha1(b"\x00" + struct.pack(">Q", old)).digest())
    return a, a if new == old else path_nodes(index, _node_sha1(b"\x00" + struct.pack(">Q", new)).digest(), path)[-1]


def _hash_up(index: int, path: bytes, start: int, a: bytes) -> bytes:
    """Hash node ``a`` (at height ``start`` above leaf ``index``) up the packed ``path`` to the root."""
    sha, p = _node_sha1, b"\x01"
    index >>= start
    for at in range(start * DIGEST, len(path), DIGEST):
        a = sha(p + path[at:at + DIGEST] + a).digest() if index & 1 else sha(p + a + path[at:at + DIGEST]).digest()
        index >>= 1
    return a


_SPLITTERS: dict[int, struct.Struct] = {}


def split_digests(packed: bytes) -> tuple[bytes, ...]:
    """``packed`` (20-byte digests back to back) as a tuple of digests, in one ``struct`` call."""
    count, rem = divmod(len(packed), DIGEST)
    if rem:
        raise ValueError(f"{len(packed)} bytes are not a whole number of {DIGEST}-byte digests")
    split = _SPLITTERS.get(count)
    if split is None:
        split = struct.Struct(f"{count * (str(DIGEST) + 's')}")
        if count <= MAX_DEPTH:  # (a tree's paths: a few lengths; anything else is not kept)
            _SPLITTERS[count] = split
    return split.unpack(packed)


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


DENSE_MAX_DEPTH = 20
DENSIFY_AT = 1 << 16  # written nodes (about 6 MiB as a dict) before a dense tree moves to slots

# OpenSSL's SHA-1 (hashlib's), as the plain Merkle baseline uses: on a core with SHA extensions its
# compression beats CPython's own ``_sha1`` by more than EVP's per-call set-up costs (measured on
# 41-byte node inputs: 0.38 against 0.42 us a call; RootMemo.roots 12 against 13 us compiled)
_node_sha1 = hashlib.sha1

# The last path computed by :func:`path_nodes`: (leaf index, leaf hash, siblings packed, the
# path's nodes leaf to root). The TPM and the host it serves compute the same new path in one
# process (the TPM to install its root, the host to store it), so the second finds it here.
# Safe whoever asks: the key is everything the path is a function of, compared in full, so an
# answer is only ever what hashing gives; a tampered sibling is another key, a miss, and is
# hashed. One entry, replaced on every miss.
_RECENT: tuple[int, bytes, bytes, list[bytes]] | None = None


def path_nodes(index: int, leaf: bytes, siblings: bytes, split: Sequence[bytes] | None = None) -> list[bytes]:
    """``[leaf, its parent, ..., root]`` for ``leaf`` (a leaf hash) at ``index`` with these packed
    siblings (20 bytes each: anything else is a ValueError), under this module's node convention;
    the last computation is remembered (so the list may be shared: read it, do not change it).

    ``split``: the same siblings already split (``split_digests(siblings)``, as a caller that
    hashed some of them holds them), so they are not split a second time.
    """
    global _RECENT
    r = _RECENT
    if r is not None and r[0] == index and r[1] == leaf and r[2] == siblings:
        return r[3]
    sha, p, h, path, idx = _node_sha1, b"\x01", leaf, [leaf], index
    append = path.append
    for sib in split_digests(siblings) if split is None else split:  # (one struct call, not a slice per level)
        h = sha(p + sib + h).digest() if idx & 1 else sha(p + h + sib).digest()
        append(h)
        idx >>= 1
    _RECENT = (index, leaf, siblings, path)
    return path


def fill(buf: bytearray, start: int, end: int, pattern: bytes) -> None:
    """``buf[start:end] = pattern * n`` without a temporary of the whole length (up to 20 MiB here)."""
    chunk = pattern * max(1, 65536 // len(pattern))
    for at in range(start, end, len(chunk)):
        piece = chunk[:end - at] if end - at < len(chunk) else chunk
        buf[at:at + len(piece)] = piece


# HeapNodes' attributes but the memoryview, by name (what copies and pickles carry; a compiled class has no __dict__)
_HEAP_STATE = ("depth", "_densify_at", "size", "defaults", "node_hash", "width", "_can_densify", "dense",
               "_path_defaults", "nodes")


class HeapNodes:
    """The node storage and the hot loops of every Merkle tree here (host, tests, benchmarks).

    Heap-indexed: root 1, children ``2i`` and ``2i + 1``, leaf ``i`` at
    ``2**depth + i``; ``defaults[h]`` is the hash of an untouched subtree of
    height ``h``. The written nodes start in a dict; once there are many
    (``DENSIFY_AT``) in a tree of up to ``DENSE_MAX_DEPTH`` levels, they move
    to one ``bytearray`` of fixed-width slots (20 bytes a node: 40 MiB at 2^20
    leaves however many are written, where digest objects grew to four times
    that under a 10^6-request workload). So a tree that sees a few updates (a
    probe, a small run) stays small, and a big one stays bounded.

    ``node_hash=None`` means this module's convention ``SHA1(0x01 || l || r)``,
    hashed inline in the loop (no Python call per level); anything else is
    called per level.
    """

    def __init__(self, depth: int, defaults: Sequence[bytes],
                 node_hash: Callable[[bytes, bytes], bytes] | None = None, densify_at: int | None = None) -> None:
        self.depth = depth
        self._densify_at = densify_at  # None: DENSIFY_AT, looked up when it matters
        self.size = 1 << depth
        self.defaults = list(defaults)
        self.node_hash = node_hash
        width = len(self.defaults[0])
        self.width = width
        self._can_densify = depth <= DENSE_MAX_DEPTH and all(len(d) == width for d in self.defaults)
        self.dense = False
        self._path_defaults = tuple(self.defaults[:depth])
        self.nodes: bytearray | dict[int, bytes] = {}
        # dense: a memoryview of the slots to write through (twice as fast as bytearray slice
        # assignment, and a node of the wrong width raises instead of resizing the array)
        self._slots: memoryview | None = None

    def __getstate__(self) -> dict:
        """Copies and pickles carry the nodes, not the memoryview over them (a view does not pickle)."""
        return {name: getattr(self, name) for name in _HEAP_STATE}

    def __reduce__(self) -> tuple:
        """Rebuilt through ``__init__`` then :meth:`__setstate__` (a compiled class has no bare ``__new__``)."""
        return HeapNodes, (self.depth, self.defaults, self.node_hash, self._densify_at), self.__getstate__()

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._slots = memoryview(self.nodes) if self.dense else None  # type: ignore[arg-type]

    def _densify(self) -> None:
        """Move the written nodes from the dict into the slot array (once, when it pays)."""
        depth, width = self.depth, self.width
        nodes = bytearray(width * (2 << depth))
        nodes[width:2 * width] = self.defaults[depth]  # root; slot 0 unused
        for height in range(depth - 1, -1, -1):
            start = 1 << (depth - height)
            fill(nodes, start * width, 2 * start * width, self.defaults[height])
        for idx, value in self.nodes.items():  # type: ignore[union-attr]
            nodes[idx * width:(idx + 1) * width] = value
        self.nodes, self.dense, self._slots = nodes, True, memoryview(nodes)

    def node(self, heap_index: int, height: int) -> bytes:
        if self.dense:
            w = self.width
            return bytes(self.nodes[heap_index * w:(heap_index + 1) * w])  # type: ignore[index]
        return self.nodes.get(heap_index, self.defaults[height])  # type: ignore[union-attr]

    def put(self, heap_index: int, value: bytes) -> None:
        """Overwrite one stored node (no rehash)."""
        if self.dense:
            if len(value) != self.width:
                raise ValueError(f"a node is {self.width} bytes, not {len(value)}")
            w = self.width
            self._slots[heap_index * w:(heap_index + 1) * w] = value  # type: ignore[index]
        else:
            self.nodes[heap_index] = value  # type: ignore[index]
            if self._can_densify and len(self.nodes) >= self._threshold():
                self._densify()

    @property
    def root(self) -> bytes:
        return self.node(1, self.depth)

    def siblings(self, index: int) -> list[bytes]:
        """Sibling hashes from the leaf level up to just below the root."""
        if self.dense:
            packed, w = self.packed_siblings(index), self.width
            return [packed[at:at + w] for at in range(0, len(packed), w)]
        idx = self.size + index
        get = self.nodes.get  # type: ignore[union-attr]
        out = []
        for default in self._path_defaults:
            out.append(get(idx ^ 1, default))
            idx >>= 1
        return out

    def packed_siblings(self, index: int) -> bytes:
        """:meth:`siblings` back to back (TPM_ExecuteHashTree's wire form)."""
        if not self.dense:  # one comprehension, no list built and joined by siblings()
            idx, get = self.size + index, self.nodes.get  # type: ignore[union-attr]
            return b"".join([get(idx >> k ^ 1, d) for k, d in enumerate(self._path_defaults)])
        idx, slots, w = self.size + index, self._slots, self.width  # (memoryview slices: no copy until the join)
        return b"".join([slots[(at := (idx >> k ^ 1) * w):at + w]  # type: ignore[index]
                         for k in range(self.depth)])

    def set_leaf(self, index: int, h: bytes) -> bytes:
        """Write leaf hash ``h`` at ``index``, rehash its path (``depth`` hashes); returns the root."""
        nodes = self.nodes
        idx = self.size + index
        if self.dense:
            w = self.width
            if len(h) != w:
                raise ValueError(f"a leaf hash is {w} bytes, not {len(h)}")
            at, slots = idx * w, self._slots
            slots[at:at + w] = h  # type: ignore[index]
            if self.node_hash is None:  # the hot loop of the 2^20-counter runs
                sha, p = _node_sha1, b"\x01"
                for _ in range(self.depth):
                    if idx & 1:
                        h = sha(p + nodes[at - w:at] + h).digest()  # type: ignore[index]
                    else:
                        h = sha(p + h + nodes[at + w:at + 2 * w]).digest()  # type: ignore[index]
                    idx >>= 1
                    at = idx * w
                    slots[at:at + w] = h  # type: ignore[index]
                return h
            node_hash = self.node_hash
            for _ in range(self.depth):
                sib = (idx ^ 1) * w
                s = bytes(nodes[sib:sib + w])  # type: ignore[index]
                h = node_hash(s, h) if idx & 1 else node_hash(h, s)
                if len(h) != w:
                    raise ValueError(f"a node is {w} bytes, not {len(h)}")
                idx >>= 1
                slots[idx * w:(idx + 1) * w] = h  # type: ignore[index]
            return h
        if self._can_densify and len(nodes) >= self._threshold():
            self._densify()
            return self.set_leaf(index, h)
        nodes[idx] = h  # type: ignore[index]
        if self.node_hash is None:
            sha, p = _node_sha1, b"\x01"
            get = nodes.get  # type: ignore[union-attr]
            for default in self._path_defaults:
                if idx & 1:
                    h = sha(p + get(idx - 1, default) + h).digest()
                else:
                    h = sha(p + h + get(idx + 1, default)).digest()
                idx >>= 1
                nodes[idx] = h  # type: ignore[index]
            return h
        node_hash, node = self.node_hash, self.node
        for height in range(self.depth):
            sibling = node(idx ^ 1, height)
            h = node_hash(sibling, h) if idx & 1 else node_hash(h, sibling)
            idx >>= 1
            nodes[idx] = h  # type: ignore[index]
        return h

    def set_leaf_along(self, index: int, h: bytes, siblings: bytes) -> bytes:
        """:meth:`set_leaf` given the leaf's current siblings, packed (the caller read them and wrote
        nothing since); returns the root.

        With this module's node convention the path comes from :func:`path_nodes`,
        so when a TPM in this process has just computed the same new path (same
        index, leaf and siblings) it is not hashed again.
        """
        if len(siblings) != self.depth * self.width:
            raise ValueError(f"{len(siblings)} bytes of siblings for a depth-{self.depth} tree")
        if self.node_hash is None:
            path = path_nodes(index, h, siblings)
        else:
            path, node_hash, w = [h], self.node_hash, self.width
            for k in range(self.depth):
                sib = siblings[k * w:(k + 1) * w]
                h = node_hash(sib, h) if index >> k & 1 else node_hash(h, sib)
                path.append(h)
        return self.store_path(index, path)

    def store_path(self, index: int, path: Sequence[bytes]) -> bytes:
        """Write leaf ``index``'s path as given (leaf hash up to the root, no hashing); returns the root."""
        idx = self.size + index
        if self.dense:
            slots, w = self._slots, self.width
            for h in path:
                at = idx * w
                slots[at:at + w] = h  # type: ignore[index]
                idx >>= 1
            return path[-1]
        nodes = self.nodes
        for h in path:
            nodes[idx] = h  # type: ignore[index]
            idx >>= 1
        if self._can_densify and len(nodes) >= self._threshold():
            self._densify()
        return path[-1]

    def _threshold(self) -> int:
        return DENSIFY_AT if self._densify_at is None else self._densify_at

    def set_leaves(self, leaves: dict[int, bytes]) -> bytes:
        """Write many leaf hashes, then rehash each dirty inner node once; returns the root.

        Equal to :meth:`set_leaf` for each in turn, but paths of a batch share
        their upper levels: k random leaves cost about k (depth - log2 k) + 2k
        hashes instead of k depth.
        """
        size, put = self.size, self.put
        dirty = set()
        for index, h in leaves.items():
            put(size + index, h)
            dirty.add((size + index) >> 1)
        node, node_hash, sha, p = self.node, self.node_hash, _node_sha1, b"\x01"
        for height in range(1, self.depth + 1):
            for idx in dirty:
                left, right = node(2 * idx, height - 1), node(2 * idx + 1, height - 1)
                put(idx, sha(p + left + right).digest() if node_hash is None else node_hash(left, right))
            dirty = {idx >> 1 for idx in dirty}
        return self.root

    def stored(self) -> int:
        """Nodes that differ from their default (what a sparse representation must keep)."""
        if not self.dense:
            return len(self.nodes)
        nodes, w, count = self.nodes, self.width, 0
        for height in range(self.depth, -1, -1):
            default, start = self.defaults[height], 1 << (self.depth - height)
            level = memoryview(nodes)[start * w:2 * start * w]  # type: ignore[arg-type]
            count += sum(1 for i in range(0, len(level), w) if level[i:i + w] != default)
        return count

    def copy_nodes(self) -> bytearray | dict[int, bytes]:
        return bytearray(self.nodes) if self.dense else dict(self.nodes)  # type: ignore[arg-type]

    def replace_nodes(self, nodes: bytearray | dict[int, bytes]) -> None:
        self.dense = isinstance(nodes, bytearray)
        self.nodes = bytearray(nodes) if self.dense else dict(nodes)  # type: ignore[arg-type]
        self._slots = memoryview(self.nodes) if self.dense else None  # type: ignore[arg-type]


MEMO_LEVELS = 16  # heights a RootMemo keeps below its root: at most 2^17 nodes (a 1 MiB list and the digests)
MEMO_DENSIFY_AT = 1 << 12  # kept nodes written before a RootMemo moves from a dict to a full list


class RootMemo:
    """The upper levels of the counter tree whose root a TPM holds, as the TPM itself computed them.

    A host-side cache of the engine (never persisted, never modelled, no
    figure depends on it): TPM_ExecuteHashTree checks a supplied path against
    its root by hashing ``depth + 1`` blocks; when every supplied sibling at a
    kept height equals the node the TPM computed there, and the path's own
    node at the lowest kept height does too, that hashing would end at
    :attr:`root` - the kept levels are a consistent Merkle tree (each node the
    hash of its two children, true of the defaults at INIT and kept by
    :meth:`commit`, which only installs paths proven against it). So the check
    hashes only the levels below :attr:`low` and compares the rest. Any
    mismatch (a tampered or stale sibling, a rolled-back memo) falls back to
    hashing the supplied path from there, so the answer, error and charge are
    exactly those of hashing everything. Valid only while :attr:`root` equals
    the held root (the caller checks).

    The kept nodes are indexed as in the whole tree (heap: root 1, children 2i
    and 2i + 1): a dict of the written ones while few paths were installed (a
    probe or a short run costs next to nothing), then, after
    ``MEMO_DENSIFY_AT`` written nodes, a list of every kept node (untouched
    ones share their height's default). A list, not 20-byte slots as the
    host's tree: the TPM reads 16 of them and writes 17 on every increment, and
    a list hands out and takes the digests without copying them (at most
    2^17 digests, about 8 MiB).
    """

    def __init__(self, depth: int, defaults: Sequence[bytes]) -> None:
        if len(defaults) != depth + 1 or any(len(d) != DIGEST for d in defaults):
            raise ValueError(f"a depth-{depth} tree has {depth + 1} default nodes of {DIGEST} bytes")
        self.depth = depth
        self.low = max(0, depth - MEMO_LEVELS)  # the lowest height kept (0: the leaves too)
        self._kept = range(self.low, depth)  # the heights whose siblings are compared
        self._defaults = list(defaults[self.low:])  # by kept height (0: height low)
        self._nodes: dict[int, bytes] | list[bytes] = {}
        # the same list once dense, typed as one: compiled, its reads and writes are direct list
        # accesses instead of the generic item protocol the union above needs (16 reads and 17
        # writes an increment)
        self._list: list[bytes] = []
        self._densify_at = MEMO_DENSIFY_AT
        self.dense = False
        self.root = defaults[depth]
        self._pending: list[bytes] | None = None
        self._index = 0

    def put(self, heap_index: int, value: bytes) -> None:
        """Overwrite one kept node (no rehash; what a test of a memo out of step needs)."""
        if len(value) != DIGEST:
            raise ValueError(f"a node is {DIGEST} bytes, not {len(value)}")
        self._nodes[heap_index] = value  # type: ignore[index]
        self._maybe_densify()

    def _maybe_densify(self) -> None:
        if not self.dense and len(self._nodes) >= self._densify_at:
            levels, dflt = self.depth - self.low, self._defaults
            nodes = [dflt[levels]] * 2  # slot 0 unused, slot 1 the root
            for height in range(levels - 1, -1, -1):
                nodes += [dflt[height]] * (1 << (levels - height))
            for idx, value in self._nodes.items():  # type: ignore[union-attr]
                nodes[idx] = value
            self._nodes, self._list, self.dense = nodes, nodes, True

    def roots(self, index: int, old: int, new: int, path: bytes) -> tuple[bytes, bytes]:
        """:func:`counter_roots_packed`, with the kept levels compared instead of hashed when they match.

        Remembers the new path's kept nodes for :meth:`commit` (only if the
        comparison proved the path: a path that passed by hashing alone is
        not installed, and :meth:`commit` then gives the memo up).
        """
        depth, low, w = self.depth, self.low, DIGEST
        if len(path) != depth * w or index < 0 or index >> depth:
            raise ValueError(f"leaf {index} with a {len(path)}-byte path does not fit depth {depth}")
        sha, p = _node_sha1, b"\x01"
        sibs = split_digests(path)  # (once: the levels hashed here and the new path share it)
        leaf = (1 << depth) | index  # heap index of the leaf
        a, idx = sha(b"\x00" + _U64(old)).digest(), index
        for sib in sibs[:low]:  # below the kept levels: hashed, as without the memo
            a = sha(p + sib + a).digest() if idx & 1 else sha(p + a + sib).digest()
            idx >>= 1
        # the path's node at the lowest kept height and every sibling above it are the TPM's own
        if self.dense:
            kept = self._list
            proven = kept[leaf >> low] == a and path[low * w:] == b"".join(
                [kept[leaf >> k ^ 1] for k in self._kept])
        else:
            get, dflt = self._nodes.get, self._defaults  # type: ignore[union-attr]
            proven = get(leaf >> low, dflt[0]) == a and path[low * w:] == b"".join(
                [get(leaf >> k ^ 1, dflt[k - low]) for k in self._kept])
        a = self.root if proven else _hash_up(index, path, low, a)  # else hashed, as without the memo
        self._pending = None
        if new == old:
            return a, a
        known = path_nodes(index, sha(b"\x00" + _U64(new)).digest(), path, sibs)
        if proven:
            self._pending, self._index = known[low:], index
        return a, known[-1]

    def commit(self, new_root: bytes) -> bool:
        """Install the new path of the last :meth:`roots` (its root now held); False: the memo is void.

        A path proven only by hashing (siblings the memo does not have, yet the
        held root - a memo out of step with the chip's state) leaves nothing
        to install consistently, so the memo gives up (the caller drops it).
        """
        upper, self._pending = self._pending, None
        if upper is None or upper[-1] != new_root:
            return False
        idx = ((1 << self.depth) | self._index) >> self.low
        if self.dense:
            kept = self._list
            for h in upper:  # the path's node at height low up to the root
                kept[idx] = h
                idx >>= 1
        else:
            nodes = self._nodes
            for h in upper:
                nodes[idx] = h  # type: ignore[index]
                idx >>= 1
            self._maybe_densify()
        self.root = new_root
        return True


class SparseMerkleTree:
    """A tree of ``2**depth`` leaf *hashes* (empty leaf ``leaf_hash(b"")``) over :class:`HeapNodes`.

    ``update`` costs ``depth`` hashes; ``path`` is ``depth`` lookups.
    """

    def __init__(self, depth: int, h: Hash = sha1) -> None:
        if not 0 < depth <= MAX_DEPTH:
            raise ValueError(f"tree depth must be 1..{MAX_DEPTH}, not {depth}")
        self.depth = depth
        self._h = h
        self._store = HeapNodes(depth, default_nodes(depth, h),
                                None if h is sha1 else (lambda l, r: node_hash(l, r, h)))

    @property
    def size(self) -> int:
        return 1 << self.depth

    @property
    def root(self) -> bytes:
        return self._store.root

    def node(self, height: int, index: int) -> bytes:
        """The node at ``height`` (0: leaves) and position ``index`` within that level."""
        return self._store.node((1 << (self.depth - height)) + index, height)

    def leaf(self, index: int) -> bytes:
        self._check(index)
        return self.node(0, index)

    def _check(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise IndexError(f"leaf {index} outside a tree of {self.size} leaves")

    def path(self, index: int) -> list[bytes]:
        """Sibling hashes from the leaf up (what a verifier of ``root_from_path`` needs)."""
        self._check(index)
        return self._store.siblings(index)

    def update(self, index: int, leaf: bytes) -> bytes:
        """Set a leaf *hash*; returns the new root."""
        self._check(index)
        return self._store.set_leaf(index, leaf)

    @classmethod
    def from_leaves(cls, depth: int, leaves: Iterable[bytes], h: Hash = sha1) -> "SparseMerkleTree":
        """Bulk construction: each dirty internal node hashed once."""
        tree = cls(depth, h)
        level = dict(enumerate(leaves))
        if len(level) > tree.size:
            raise ValueError(f"{len(level)} leaves do not fit depth {depth}")
        tree._store.set_leaves(level)
        return tree

"""L-trees, leaves and Merkle subtrees (RFC 8391 sections 4.1.5-4.1.9).

``tree_from_leaves`` is how the card builds an authentication path: it reads
the 2^(h/d) stored leaves of a subtree and hashes them up, keeping the
siblings of the signing leaf. That costs 2^(h/d) - 1 RAND_HASH calls per
layer and per signature, which the paper notes comes into play at h = 20.
"""

from __future__ import annotations

from trustlab.apps.hbs import wots
from trustlab.apps.hbs.address import HASHTREE, LTREE, OTS, Address
from trustlab.apps.hbs.hashes import Hasher
from trustlab.apps.hbs.params import XMSSParams


def ltree(hs: Hasher, pk: list[bytes], seed: bytes, adrs: Address) -> bytes:
    """RFC 8391 Algorithm 8 (adrs: type L-tree, L-tree address set)."""
    pk = list(pk)
    length = len(pk)
    adrs.set_tree_height(0)
    while length > 1:
        for i in range(length // 2):
            adrs.set_tree_index(i)
            pk[i] = hs.rand_hash(pk[2 * i], pk[2 * i + 1], seed, adrs)
        if length % 2 == 1:
            pk[length // 2] = pk[length - 1]
        length = (length + 1) // 2
        adrs.set_tree_height(adrs.tree_height + 1)
    return pk[0]


def leaf(hs: Hasher, p: XMSSParams, sk_seed: bytes, seed: bytes, layer: int, tree: int, index: int) -> bytes:
    """The leaf ``index`` of subtree ``tree`` on ``layer``: WOTS+ keygen then its L-tree."""
    adrs = Address(layer, tree)
    adrs.set_type(OTS)
    adrs.set_ots(index)
    sk = wots.secret_key(hs, p, sk_seed, seed, adrs)
    pk = wots.public_key(hs, p, sk, seed, adrs)
    ladrs = Address(layer, tree)
    ladrs.set_type(LTREE)
    ladrs.set_ltree(index)
    return ltree(hs, pk, seed, ladrs)


def tree_from_leaves(hs: Hasher, leaves: list[bytes], seed: bytes, layer: int, tree: int,
                     index: int | None = None) -> tuple[bytes, list[bytes]]:
    """Root of a subtree from its leaves, and the auth path of leaf ``index`` (if given)."""
    level = list(leaves)
    auth: list[bytes] = []
    height = 0
    pos = index
    while len(level) > 1:
        if pos is not None:
            auth.append(level[pos ^ 1])
            pos >>= 1
        adrs = Address(layer, tree)
        adrs.set_type(HASHTREE)
        adrs.set_tree_height(height)
        nxt = []
        for i in range(len(level) // 2):
            adrs.set_tree_index(i)
            nxt.append(hs.rand_hash(level[2 * i], level[2 * i + 1], seed, adrs))
        level = nxt
        height += 1
    return level[0], auth

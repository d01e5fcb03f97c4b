"""Host-side XMSS^MT: key material, reference signer, card personalisation data.

The reference signer recomputes everything from the seeds (fine for the small
h the tests use); it is the yardstick the on-card signer must match byte for
byte. ``subtree_leaves`` / ``initial_state`` are the off-card key generation
the paper mentions: the card receives the leaves and WOTS+ signatures it needs
and never builds a whole hypertree itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from trustlab.apps.hbs import tree as treemod
from trustlab.apps.hbs import wots
from trustlab.apps.hbs.address import OTS, Address
from trustlab.apps.hbs.hashes import Hasher
from trustlab.apps.hbs.params import XMSSParams
from trustlab.errors import TrustlabError

# RFC 8391 OIDs for SHA-256, n = 32, w = 16 (other w have no registered OID; 0 marks "unregistered").
XMSS_OIDS = {(10, 1): 0x01, (16, 1): 0x02, (20, 1): 0x03}
XMSSMT_OIDS = {(20, 2): 0x01, (20, 4): 0x02, (40, 2): 0x03, (40, 4): 0x04, (40, 8): 0x05,
               (60, 3): 0x06, (60, 6): 0x07, (60, 12): 0x08}


def oid(p: XMSSParams) -> int:
    if p.w != 16:
        return 0
    table = XMSS_OIDS if p.d == 1 else XMSSMT_OIDS
    return table.get((p.h, p.d), 0)


@dataclass(frozen=True)
class PublicKey:
    params: XMSSParams
    root: bytes
    seed: bytes

    def to_bytes(self) -> bytes:
        return oid(self.params).to_bytes(4, "big") + self.root + self.seed


@dataclass(frozen=True)
class SecretSeeds:
    sk_seed: bytes
    sk_prf: bytes
    seed: bytes

    @classmethod
    def random(cls) -> "SecretSeeds":
        return cls(os.urandom(32), os.urandom(32), os.urandom(32))

    @classmethod
    def from_int(cls, i: int) -> "SecretSeeds":
        """Deterministic seeds for tests and reproducible experiments."""
        b = i.to_bytes(8, "big")
        return cls(b"\x01" * 24 + b, b"\x02" * 24 + b, b"\x03" * 24 + b)


def split_index(p: XMSSParams, idx: int, layer: int) -> tuple[int, int]:
    """(tree, leaf) of the one-time key used on ``layer`` when signing index ``idx``."""
    t = p.tree_height
    pos = idx >> (t * layer)
    return pos >> t, pos & ((1 << t) - 1)


def subtree_leaves(hs: Hasher, p: XMSSParams, s: SecretSeeds, layer: int, tree: int,
                   count: int | None = None) -> list[bytes]:
    n = p.leaves_per_tree if count is None else count
    return [treemod.leaf(hs, p, s.sk_seed, s.seed, layer, tree, i) for i in range(n)]


def subtree_root(hs: Hasher, p: XMSSParams, s: SecretSeeds, layer: int, tree: int) -> bytes:
    return treemod.tree_from_leaves(hs, subtree_leaves(hs, p, s, layer, tree), s.seed, layer, tree)[0]


def public_key(hs: Hasher, p: XMSSParams, s: SecretSeeds) -> PublicKey:
    return PublicKey(p, subtree_root(hs, p, s, p.d - 1, 0), s.seed)


def wots_sign_at(hs: Hasher, p: XMSSParams, s: SecretSeeds, layer: int, tree: int, leaf: int,
                 m: bytes, chains: range | None = None) -> list[bytes]:
    adrs = Address(layer, tree)
    adrs.set_type(OTS)
    adrs.set_ots(leaf)
    sk = wots.secret_key(hs, p, s.sk_seed, s.seed, adrs)
    return wots.sign(hs, p, m, sk, s.seed, adrs, chains)


def message_key(hs: Hasher, p: XMSSParams, s: SecretSeeds, idx: int) -> bytes:
    """r = PRF(SK_PRF, toByte(idx, 32))."""
    return hs.prf(s.sk_prf, idx.to_bytes(32, "big"))


def message_digest(hs: Hasher, p: XMSSParams, r: bytes, root: bytes, idx: int, msg: bytes) -> bytes:
    return hs.h_msg(r + root + idx.to_bytes(p.n, "big"), msg)


def reference_sign(p: XMSSParams, s: SecretSeeds, pk: PublicKey, idx: int, msg: bytes,
                   hs: Hasher | None = None) -> bytes:
    """XMSS^MT_sign (RFC 8391 Algorithm 16) for index ``idx``, recomputing every subtree."""
    if not 0 <= idx < p.signatures:
        raise TrustlabError(f"XMSS index {idx} outside 0..{p.signatures - 1}")
    hs = hs or Hasher()
    r = message_key(hs, p, s, idx)
    m = message_digest(hs, p, r, pk.root, idx, msg)
    out = [idx.to_bytes(p.idx_bytes, "big"), r]
    for layer in range(p.d):
        tree, leaf = split_index(p, idx, layer)
        out += wots_sign_at(hs, p, s, layer, tree, leaf, m)
        leaves = subtree_leaves(hs, p, s, layer, tree)
        m, auth = treemod.tree_from_leaves(hs, leaves, s.seed, layer, tree, leaf)
        out += auth
    return b"".join(out)

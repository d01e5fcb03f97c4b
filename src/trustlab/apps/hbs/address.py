"""The 32-byte hash address ADRS of RFC 8391 section 2.5.

Every hash call in XMSS is keyed by an address, so that no two calls in the
whole hypertree share their PRF input; a mutable record with explicit setters
mirrors the RFC's pseudocode one-to-one, which keeps the port checkable.
"""

from __future__ import annotations

import struct

OTS, LTREE, HASHTREE = 0, 1, 2


class Address:
    __slots__ = ("layer", "tree", "type", "w4", "w5", "w6", "key_and_mask")

    def __init__(self, layer: int = 0, tree: int = 0) -> None:
        self.layer = layer
        self.tree = tree
        self.type = OTS
        self.w4 = 0  # OTS address / L-tree address / padding
        self.w5 = 0  # chain address / tree height
        self.w6 = 0  # hash address / tree index
        self.key_and_mask = 0

    def copy(self) -> "Address":
        a = Address(self.layer, self.tree)
        a.type, a.w4, a.w5, a.w6, a.key_and_mask = self.type, self.w4, self.w5, self.w6, self.key_and_mask
        return a

    def set_type(self, t: int) -> None:
        """Changing the type zeroes the words after it (RFC 8391 section 2.5)."""
        self.type = t
        self.w4 = self.w5 = self.w6 = self.key_and_mask = 0

    # RFC names, for readability at call sites
    def set_ots(self, i: int) -> None: self.w4 = i
    def set_ltree(self, i: int) -> None: self.w4 = i
    def set_chain(self, i: int) -> None: self.w5 = i
    def set_hash(self, i: int) -> None: self.w6 = i
    def set_tree_height(self, i: int) -> None: self.w5 = i
    def set_tree_index(self, i: int) -> None: self.w6 = i

    @property
    def tree_height(self) -> int: return self.w5
    @property
    def tree_index(self) -> int: return self.w6

    def to_bytes(self) -> bytes:
        return struct.pack(">IQIIIII", self.layer, self.tree, self.type, self.w4, self.w5, self.w6,
                           self.key_and_mask)

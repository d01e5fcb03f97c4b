"""XMSS / XMSS^MT parameter sets (RFC 8391, SHA-256, n = 32).

One immutable record holds every derived length so that the signer, the
verifier, the applet and the analytic model agree on sizes by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trustlab.errors import TrustlabError

N = 32  # SHA-256 output bytes; the only hash the paper's card uses
_W_ALLOWED = (4, 16)  # the values RFC 8391 section 5 allows


@dataclass(frozen=True)
class XMSSParams:
    """Total tree height ``h`` split into ``d`` layers of height ``h/d``; Winternitz ``w``."""

    h: int
    d: int = 1
    w: int = 16
    n: int = N

    def __post_init__(self) -> None:
        if self.w not in _W_ALLOWED:
            raise TrustlabError(f"XMSS parameter w={self.w}: must be one of {', '.join(map(str, _W_ALLOWED))}")
        if self.n != N:
            raise TrustlabError(f"XMSS parameter n={self.n}: only n=32 (SHA-256) is supported")
        if not 1 <= self.d <= self.h:
            raise TrustlabError(f"XMSS parameters h={self.h}, d={self.d}: need 1 <= d <= h")
        if self.h % self.d:
            raise TrustlabError(f"XMSS parameters h={self.h}, d={self.d}: d must divide h")
        if self.h > 60:
            raise TrustlabError(f"XMSS parameter h={self.h}: at most 60 supported")

    # ---- WOTS+ lengths (RFC 8391 section 3.1.1) ------------------------------
    @property
    def log_w(self) -> int:
        return int(math.log2(self.w))

    @property
    def len1(self) -> int:
        return math.ceil(8 * self.n / self.log_w)

    @property
    def len2(self) -> int:
        return math.floor(math.log2(self.len1 * (self.w - 1)) / self.log_w) + 1

    @property
    def wots_len(self) -> int:
        """``l`` (``len`` in the RFC): number of hash chains."""
        return self.len1 + self.len2

    # ---- tree geometry -----------------------------------------------------
    @property
    def tree_height(self) -> int:
        """Height ``h/d`` of each subtree."""
        return self.h // self.d

    @property
    def leaves_per_tree(self) -> int:
        return 1 << self.tree_height

    @property
    def signatures(self) -> int:
        """Number of one-time keys, i.e. signatures the key pair can make."""
        return 1 << self.h

    @property
    def idx_bytes(self) -> int:
        """Bytes of the index in a signature: 4 for XMSS, ceil(h/8) for XMSS^MT."""
        return 4 if self.d == 1 else math.ceil(self.h / 8)

    @property
    def wots_sig_bytes(self) -> int:
        return self.wots_len * self.n

    @property
    def signature_bytes(self) -> int:
        """RFC 8391 signature size: idx || r || d x (WOTS+ sig || auth path)."""
        return self.idx_bytes + self.n + self.d * (self.wots_sig_bytes + self.tree_height * self.n)

    @property
    def public_key_bytes(self) -> int:
        return 4 + 2 * self.n  # OID || root || SEED

    @property
    def persistent_bytes(self) -> int:
        """Card NVM for precomputed state, the paper's formula.

        ``32·l·(d−1)`` bytes of WOTS+ signatures (one per upper layer) plus
        ``32·(2d−1)·2^(h/d)`` bytes of leaf nodes (current subtree on each of
        the d layers, next subtree on all but the top layer). Keys and index
        come on top (:attr:`key_state_bytes`).
        """
        return self.n * self.wots_len * (self.d - 1) + self.n * (2 * self.d - 1) * self.leaves_per_tree

    @property
    def key_state_bytes(self) -> int:
        """The 'small number of bytes' besides: SK_SEED, SK_PRF, SEED, root, index."""
        return 4 * self.n + 8

    def label(self) -> str:
        return f"h={self.h} d={self.d} w={self.w}"

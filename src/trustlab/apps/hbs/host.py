"""The host side: off-card key generation, personalisation, and the signing driver.

Key generation happens off-card, as in the paper: the issuer computes the
first subtree of every layer and the WOTS+ signatures binding them, and
writes them into the card's persistent memory before it ships. The driver
then talks to the card only through APDUs.
"""

from __future__ import annotations

from trustlab.apps.hbs import apdu as A
from trustlab.apps.hbs.applet import (CLA, INS_GET_INDEX, INS_GET_PUBLIC_KEY, INS_PREPARE, INS_SIGN_BEGIN,
                                      INS_SIGN_NEXT, STAGES, Card)
from trustlab.apps.hbs.hashes import Hasher
from trustlab.apps.hbs.keys import PublicKey, SecretSeeds, subtree_leaves, wots_sign_at
from trustlab.apps.hbs.params import XMSSParams
from trustlab.apps.hbs.tree import tree_from_leaves
from trustlab.errors import TrustlabError
from trustlab.timing.clock import Clock

SW_TEXT = {A.SW_KEY_USED: "one-time key already used", A.SW_NO_SESSION: "no signing session",
           A.SW_PREPARE_FIRST: "preparation step missing", A.SW_EXHAUSTED: "every one-time key is used",
           A.SW_WRONG_DATA: "wrong data", A.SW_WRONG_LENGTH: "wrong length"}


class CardError(TrustlabError):
    """The card answered with an error status word."""

    def __init__(self, sw: int, what: str) -> None:
        super().__init__(f"card refused {what}: SW {sw:04X} ({SW_TEXT.get(sw, 'error')})")
        self.sw = sw


def personalize(params: XMSSParams, seeds: SecretSeeds, clock: Clock | None = None) -> tuple[Card, PublicKey]:
    """Off-card key generation, written into a fresh card's persistent memory."""
    hs = Hasher()
    p = params
    card = Card(p, clock)
    nvm = card.nvm
    nvm.load("keys", 0, seeds.sk_seed + seeds.sk_prf + seeds.seed)
    roots = []
    for layer in range(p.d):
        leaves = subtree_leaves(hs, p, seeds, layer, 0)
        nvm.load("leaves", 2 * layer * p.leaves_per_tree * p.n, b"".join(leaves))
        roots.append(tree_from_leaves(hs, leaves, seeds.seed, layer, 0)[0])
    for layer in range(1, p.d):
        sig = b"".join(wots_sign_at(hs, p, seeds, layer, 0, 0, roots[layer - 1]))
        nvm.load("sigs", (layer - 1) * p.wots_sig_bytes, sig)
        nvm.load("sigtag", 8 * (layer - 1), (1).to_bytes(8, "big"))
    nvm.load("keys", 3 * p.n, roots[-1])
    return card, PublicKey(p, roots[-1], seeds.seed)


class CardSigner:
    """Drives the applet: SIGN_BEGIN + seven SIGN_NEXT, and PREPARE between signatures."""

    def __init__(self, card: Card) -> None:
        self.card = card

    def _send(self, ins: int, p1: int = 0, data: bytes = b"", what: str = "") -> bytes:
        raw = A.Command(CLA, ins, p1, 0, data, 65536).encode()
        body, sw = A.split_response(self.card.transmit(raw))
        if sw != A.SW_OK:
            raise CardError(sw, what or f"INS {ins:02X}")
        return body

    def public_key(self) -> bytes:
        return self._send(INS_GET_PUBLIC_KEY, what="GET_PUBLIC_KEY")

    def index(self) -> int:
        return int.from_bytes(self._send(INS_GET_INDEX, what="GET_INDEX"), "big")

    def sign(self, message: bytes, expect_index: int | None = None) -> bytes:
        if len(message) > 4096:
            raise TrustlabError(f"message of {len(message)} bytes: the applet takes at most 4096 (hash longer ones first)")
        data = message if expect_index is None else expect_index.to_bytes(8, "big") + message
        parts = [self._send(INS_SIGN_BEGIN, 0 if expect_index is None else 1, data, "SIGN_BEGIN")]
        for stage in range(1, STAGES):
            parts.append(self._send(INS_SIGN_NEXT, stage, what=f"SIGN_NEXT stage {stage}"))
        return b"".join(parts)

    def prepare(self) -> int:
        return int.from_bytes(self._send(INS_PREPARE, what="PREPARE"), "big")

"""The host side: off-card key generation, personalisation, and the signing driver.

Key generation happens off-card, as in the paper: the issuer computes the
first subtree of every layer and the WOTS+ signatures binding them, and
writes them into the card's persistent memory before it ships. The driver
then talks to the card only through APDUs.
"""

from __future__ import annotations

from trustlab.apps.hbs.applet import (CLA, INS_GET_INDEX, INS_GET_PUBLIC_KEY, INS_PREPARE, INS_SIGN_BEGIN,
                                      INS_SIGN_NEXT, MAX_MESSAGE, STAGES, Card)
from trustlab.devices.card.apdu import SW_OK, CommandAPDU, ResponseAPDU, sw_text
from trustlab.apps.hbs.hashes import Hasher
from trustlab.apps.hbs.keys import PublicKey, SecretSeeds, subtree_leaves, wots_sign_at
from trustlab.apps.hbs.params import XMSSParams
from trustlab.apps.hbs.tree import tree_from_leaves
from trustlab.errors import TrustlabError
from trustlab.timing.clock import Clock


_MEANING = {0x6986: "preparation step missing", 0x6A84: "every one-time key is used",
            0x6982: "one-time key already used", 0x6985: "no signing session at this stage"}


class CardError(TrustlabError):
    """The card answered with an error status word."""

    def __init__(self, sw: int, what: str) -> None:
        text = _MEANING.get(sw) or sw_text(sw)
        super().__init__(f"card refused {what}: SW {sw:04X} ({text})")
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
        raw = CommandAPDU(CLA, ins, p1, 0, data, 65536).encode(extended=True)
        resp = ResponseAPDU.parse(self.card.transmit(raw))
        if resp.sw != SW_OK:
            raise CardError(resp.sw, what or f"INS {ins:02X}")
        return resp.data

    def public_key(self) -> bytes:
        return self._send(INS_GET_PUBLIC_KEY, what="GET_PUBLIC_KEY")

    def index(self) -> int:
        return int.from_bytes(self._send(INS_GET_INDEX, what="GET_INDEX"), "big")

    def sign(self, message: bytes, expect_index: int | None = None) -> bytes:
        if len(message) > MAX_MESSAGE:
            raise TrustlabError(f"message of {len(message)} bytes: the applet takes at most {MAX_MESSAGE} (hash longer ones first)")
        data = message if expect_index is None else expect_index.to_bytes(8, "big") + message
        parts = [self._send(INS_SIGN_BEGIN, 0 if expect_index is None else 1, data, "SIGN_BEGIN")]
        for stage in range(1, STAGES):
            parts.append(self._send(INS_SIGN_NEXT, stage, what=f"SIGN_NEXT stage {stage}"))
        return b"".join(parts)

    def prepare(self) -> int:
        return int.from_bytes(self._send(INS_PREPARE, what="PREPARE"), "big")

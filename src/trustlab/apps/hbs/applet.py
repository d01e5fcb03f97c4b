"""The stateful XMSS^MT signer as a Java Card applet (simulated).

Persistent state (allocated at install, as on a real card):

* ``keys``   SK_SEED || SK_PRF || SEED || root
* ``index``  the next unused one-time key (8 bytes)
* ``leaves`` 2d−1 slots of 2^(h/d) leaves: layer i < d−1 owns two slots
  (current and next subtree, ``bank`` says which is current), the top layer one
* ``fill``   how many leaves of each next subtree are ready (4 bytes per layer)
* ``sigs``   for each upper layer j ≥ 1, the WOTS+ signature (by layer j's
  current one-time key) on the root of layer j−1's current subtree
* ``sigtag`` which subtree each stored signature belongs to (tree index + 1)

Signing (paper's Fig. 2): SIGN_BEGIN reserves the index — the new index and
any subtree switch are committed in one transaction *before* anything leaves
the card — then eight stages each compute an eighth of the WOTS+ chains; the
last stage adds the authentication paths (hashed up from the stored leaves)
and the stored WOTS+ signatures of the upper layers, regenerating one first
if its subtree just switched. A tear at any point leaves the index advanced:
a one-time key that may have leaked a signature is never used again.
Re-signing a subtree root after a tear is safe: the same key signs the same
root, deterministically.

PREPARE keeps the next subtrees filling on the BDS-like schedule: layer i
computes one leaf every 2^(i·h/d) signatures, so its next subtree is complete
exactly when the current one runs out.
"""

from __future__ import annotations

from dataclasses import dataclass

from trustlab.apps.hbs import wots
from trustlab.apps.hbs.address import OTS, Address
from trustlab.apps.hbs.costs import CardMeter, CardTear
from trustlab.apps.hbs.hashes import Hasher
from trustlab.apps.hbs.keys import oid, split_index
from trustlab.apps.hbs.nvm import PersistentMemory
from trustlab.apps.hbs.params import XMSSParams
from trustlab.apps.hbs.tree import leaf as compute_leaf
from trustlab.apps.hbs.tree import tree_from_leaves
from trustlab.devices.card import Card as DeviceCard
from trustlab.devices.card import ContactLink
from trustlab.devices.card.apdu import (SW_CONDITIONS_NOT_SATISFIED, SW_NOT_ENOUGH_MEMORY,
                                       SW_SECURITY_NOT_SATISFIED, SW_WRONG_DATA, SW_WRONG_LENGTH, SW_WRONG_P1P2,
                                       APDUError, CommandAPDU)
from trustlab.timing.clock import Clock

CLA = 0x80
INS_SIGN_BEGIN, INS_SIGN_NEXT, INS_PREPARE, INS_GET_PUBLIC_KEY, INS_GET_INDEX = 0x10, 0x12, 0x20, 0x30, 0x32
INS_NAMES = {INS_SIGN_BEGIN: "SIGN_BEGIN", INS_SIGN_NEXT: "SIGN_NEXT", INS_PREPARE: "PREPARE",
             INS_GET_PUBLIC_KEY: "GET_PUBLIC_KEY", INS_GET_INDEX: "GET_INDEX"}
STAGES = 8  # the paper splits the output over eight APDUs

SW_KEY_USED = SW_SECURITY_NOT_SATISFIED  # 6982: that one-time key is used up
SW_NO_SESSION = SW_CONDITIONS_NOT_SATISFIED  # 6985: no signing session / stage out of order
SW_PREPARE_FIRST = 0x6986  # command not allowed: the preparation step is missing
SW_EXHAUSTED = SW_NOT_ENOUGH_MEMORY  # 6A84: every one-time key is used

# The reader link of the profile's card: ISO 7816-3 T=1; TA1=0x13 in the NXP J3D081 ATR
# (JCAlgTest file) selects F=372, D=4; 4 MHz is an assumed reader clock.
DEFAULT_LINK = ContactLink(f_hz=4e6, F=372, D=4, protocol="T=1", mode="char")
MAX_MESSAGE = 4096


def stage_chains(p: XMSSParams, stage: int) -> range:
    """Chains computed in ``stage`` (0..7): the l chains split as evenly as possible."""
    base, extra = divmod(p.wots_len, STAGES)
    start = stage * base + min(stage, extra)
    return range(start, start + base + (1 if stage < extra else 0))


def next_fill_target(p: XMSSParams, idx_next: int, layer: int) -> int:
    """Leaves of layer's next subtree that must be ready before signing ``idx_next``."""
    if idx_next == 0:
        return 0
    span = 1 << (p.tree_height * (layer + 1))  # signatures one layer-`layer` subtree lasts
    q = idx_next % span or span
    per_leaf = 1 << (p.tree_height * layer)
    return -(-q // per_leaf)


def rollover_layers(p: XMSSParams, idx: int) -> list[int]:
    """Layers (below the top) whose subtree switches when signing ``idx``."""
    if idx == 0:
        return []
    return [i for i in range(p.d - 1) if idx % (1 << (p.tree_height * (i + 1))) == 0]


@dataclass
class _Session:
    idx: int
    digest: bytes
    digits: list[int]
    stage: int = 1


class XMSSApplet:
    """The applet's instruction handlers over its persistent fields (see the module docstring)."""

    def __init__(self, params: XMSSParams, nvm: PersistentMemory, meter: CardMeter) -> None:
        self.p = params
        self.nvm = nvm
        self.meter = meter
        self.hs = Hasher(meter)
        self.session: _Session | None = None  # transient (CLEAR_ON_RESET) memory

    @staticmethod
    def layout(p: XMSSParams) -> dict[str, int]:
        return {
            "keys": 4 * p.n,
            "index": 8,
            "bank": max(p.d - 1, 1),
            "fill": 4 * max(p.d - 1, 1),
            "sigtag": 8 * max(p.d - 1, 1),
            "leaves": (2 * p.d - 1) * p.leaves_per_tree * p.n,
            "sigs": (p.d - 1) * p.wots_sig_bytes,
        }

    # ---- small persistent accessors -------------------------------------
    def _key(self, which: int) -> bytes:
        return self.nvm.read("keys", which * self.p.n, self.p.n)  # 0 SK_SEED, 1 SK_PRF, 2 SEED, 3 root

    def _index(self) -> int:
        return int.from_bytes(self.nvm.read("index", 0, 8), "big")

    def _bank(self, layer: int) -> int:
        return self.nvm.read("bank", layer, 1)[0] if layer < self.p.d - 1 else 0

    def _fill(self, layer: int) -> int:
        return int.from_bytes(self.nvm.read("fill", 4 * layer, 4), "big")

    def _slot(self, layer: int, current: bool) -> int:
        if layer == self.p.d - 1:
            return 2 * layer
        bank = self._bank(layer)
        return 2 * layer + (bank if current else 1 - bank)

    def _slot_off(self, slot: int, i: int = 0) -> int:
        return (slot * self.p.leaves_per_tree + i) * self.p.n

    def install(self, device: DeviceCard) -> None:
        for ins, handler in ((INS_SIGN_BEGIN, self._sign_begin), (INS_SIGN_NEXT, self._sign_next),
                             (INS_PREPARE, self._prepare), (INS_GET_PUBLIC_KEY, self._get_public_key),
                             (INS_GET_INDEX, self._get_index)):
            device.register(ins, lambda card, cmd, h=handler: h(cmd))

    def _get_public_key(self, cmd: CommandAPDU) -> bytes:
        return oid(self.p).to_bytes(4, "big") + self._key(3) + self._key(2)

    def _get_index(self, cmd: CommandAPDU) -> bytes:
        return self._index().to_bytes(8, "big")

    # ---- signing ----------------------------------------------------------
    def _sign_begin(self, cmd: CommandAPDU) -> bytes:
        p = self.p
        self.session = None
        data = cmd.data
        idx = self._index()
        if cmd.p1 not in (0, 1):
            raise APDUError(SW_WRONG_P1P2, "SIGN_BEGIN: P1 is 0 (next index) or 1 (expected index given)")
        if cmd.p1 == 1:  # host names the index it expects to be used
            if len(data) < 8:
                raise APDUError(SW_WRONG_LENGTH, "SIGN_BEGIN with P1=1 needs the 8-byte index")
            wanted = int.from_bytes(data[:8], "big")
            data = data[8:]
            if wanted < idx:
                raise APDUError(SW_KEY_USED, f"one-time key {wanted} already used")
            if wanted != idx:
                raise APDUError(SW_WRONG_DATA, f"next unused index is {idx}, not {wanted}")
        if idx >= p.signatures:
            raise APDUError(SW_EXHAUSTED, "every one-time key is used")
        switching = rollover_layers(p, idx)
        for layer in switching:
            if self._fill(layer) < p.leaves_per_tree:
                raise APDUError(SW_PREPARE_FIRST, f"next subtree of layer {layer} not ready")
        # Reserve the one-time key before any output: index and subtree switches land together.
        self.nvm.begin()
        self.nvm.write("index", 0, (idx + 1).to_bytes(8, "big"))
        for layer in switching:
            self.nvm.write("bank", layer, bytes([1 - self._bank(layer)]))
            self.nvm.write("fill", 4 * layer, bytes(4))
        self.nvm.commit()
        r = self.hs.prf(self._key(1), idx.to_bytes(32, "big"))
        digest = self.hs.h_msg(r + self._key(3) + idx.to_bytes(p.n, "big"), data)
        self.session = _Session(idx, digest, wots.message_digits(p, digest))
        out = idx.to_bytes(p.idx_bytes, "big") + r + self._chains(0)
        return out

    def _chains(self, stage: int) -> bytes:
        """This stage's slice of the layer-0 WOTS+ signature on the message digest."""
        s = self.session
        assert s is not None
        tree, leaf = split_index(self.p, s.idx, 0)
        adrs = Address(0, tree)
        adrs.set_type(OTS)
        adrs.set_ots(leaf)
        seed, sk_seed = self._key(2), self._key(0)
        out = []
        for i in stage_chains(self.p, stage):
            x = wots.chain_start(self.hs, sk_seed, seed, adrs, i)
            adrs.set_chain(i)
            out.append(wots.chain(self.hs, x, 0, s.digits[i], seed, adrs))
        return b"".join(out)

    def _sign_next(self, cmd: CommandAPDU) -> bytes:
        s = self.session
        if s is None or cmd.p1 != s.stage:
            self.session = None
            raise APDUError(SW_NO_SESSION, "no signing session at this stage")
        out = self._chains(s.stage)
        s.stage += 1
        if s.stage == STAGES:
            out += self._tail(s.idx)
            self.session = None
        return out

    def _auth(self, layer: int, idx: int) -> tuple[bytes, list[bytes]]:
        """Root and auth path of the current layer subtree, hashed up from the stored leaves."""
        p = self.p
        tree, leaf = split_index(p, idx, layer)
        slot = self._slot(layer, True)
        # one copy per node into the RAM hash buffer, as the applet must do: this is the
        # persistent-memory traffic the paper notes for authentication paths
        leaves = [self.nvm.read("leaves", self._slot_off(slot, i), p.n) for i in range(p.leaves_per_tree)]
        return tree_from_leaves(self.hs, leaves, self._key(2), layer, tree, leaf)

    def _tail(self, idx: int) -> bytes:
        """Layer-0 auth path, then for each upper layer its WOTS+ signature and auth path."""
        p = self.p
        root, auth = self._auth(0, idx)
        out = [b"".join(auth)]
        for layer in range(1, p.d):
            below_tree, _ = split_index(p, idx, layer - 1)
            if int.from_bytes(self.nvm.read("sigtag", 8 * (layer - 1), 8), "big") != below_tree + 1:
                self._resign(layer, idx, root)
            out.append(self.nvm.read("sigs", (layer - 1) * p.wots_sig_bytes, p.wots_sig_bytes))
            root, auth = self._auth(layer, idx)
            out.append(b"".join(auth))
        return b"".join(out)

    def _resign(self, layer: int, idx: int, root_below: bytes) -> None:
        """Sign the new root of the subtree below with this layer's current one-time key."""
        p = self.p
        tree, leaf = split_index(p, idx, layer)
        below_tree, _ = split_index(p, idx, layer - 1)
        adrs = Address(layer, tree)
        adrs.set_type(OTS)
        adrs.set_ots(leaf)
        sk = wots.secret_key(self.hs, p, self._key(0), self._key(2), adrs)
        sig = b"".join(wots.sign(self.hs, p, root_below, sk, self._key(2), adrs))
        self.nvm.begin()
        self.nvm.write("sigs", (layer - 1) * p.wots_sig_bytes, sig)
        self.nvm.write("sigtag", 8 * (layer - 1), (below_tree + 1).to_bytes(8, "big"))
        self.nvm.commit()

    # ---- preparation --------------------------------------------------------
    def _prepare(self, cmd: CommandAPDU) -> bytes:
        """Compute the leaves of the next subtrees the schedule requires by now."""
        p = self.p
        idx_next = self._index()
        made = 0
        for layer in range(p.d - 1):
            span_bits = p.tree_height * (layer + 1)
            cur_tree = (idx_next - 1) >> span_bits if idx_next else 0
            next_tree = cur_tree + 1
            if next_tree >= 1 << (p.h - span_bits):
                continue  # the last subtree of this layer: nothing comes after it
            target = next_fill_target(p, idx_next, layer)
            fill = self._fill(layer)
            slot = self._slot(layer, False)
            while fill < target:
                node = compute_leaf(self.hs, p, self._key(0), self._key(2), layer, next_tree, fill)
                self.nvm.begin()
                self.nvm.write("leaves", self._slot_off(slot, fill), node)
                self.nvm.write("fill", 4 * layer, (fill + 1).to_bytes(4, "big"))
                self.nvm.commit()
                fill += 1
                made += 1
        return made.to_bytes(2, "big")


class Card:
    """A card in a reader: the device model's APDU card and link, this applet, its NVM; tears on request."""

    def __init__(self, params: XMSSParams, clock: Clock | None = None, link: ContactLink = DEFAULT_LINK) -> None:
        self.params = params
        self.clock = clock
        self.link = link
        self.meter = CardMeter(clock)
        self.nvm = PersistentMemory(XMSSApplet.layout(params), self.meter)
        self.applet = XMSSApplet(params, self.nvm, self.meter)
        self._power_on()

    def _power_on(self) -> None:
        self.device = DeviceCard(self.clock, self.link, classes=(CLA,), extended=True, max_message=MAX_MESSAGE + 8)
        self.applet.install(self.device)

    @property
    def persistent_state_bytes(self) -> int:
        """NVM holding precomputed WOTS+ signatures and leaf nodes (the paper's formula)."""
        return self.nvm.size("sigs") + self.nvm.size("leaves")

    def transmit(self, raw: bytes) -> bytes:
        """Send one command APDU; raises :class:`CardTear` if power is lost mid-command."""
        name = INS_NAMES.get(raw[1] if len(raw) > 1 else -1, "APDU")
        try:
            if self.clock is not None:
                with self.clock.command(name):
                    resp = self._exchange(raw)
            else:
                resp = self._exchange(raw)
        except CardTear:
            self.nvm.tear()
            self.applet.session = None
            self._power_on()  # next exchange meets a freshly reset card
            raise
        return resp

    def _exchange(self, raw: bytes) -> bytes:
        resp = self.device.transmit(raw)  # charges the link time to the clock
        self.meter.apdu(self.link.exchange_ms(len(raw), len(resp) - 2))
        return resp

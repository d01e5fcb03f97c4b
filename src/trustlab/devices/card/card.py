"""An APDU-level smart card: bytes in, status words out, time charged on the way.

Public API (stable; issue 7's Java Card work builds on it)::

    card = Card(clock, link=ContactLink(), classes=(0x00, 0x80), extended=False,
                max_message=1024, overhead_component=None)
    card.register(ins, handler)      handler(card, apdu: CommandAPDU) -> bytes (response data)
                                     raise APDUError(sw) to refuse
    card.transmit(raw: bytes) -> bytes        one wire exchange, never raises for bad input
    card.exchange(CommandAPDU) -> ResponseAPDU
    card.send(cla, ins, p1, p2, data, ne=256) -> ResponseAPDU
        a whole message: command chaining for data > 255 bytes, then GET RESPONSE
        while the card says 61xx; returns the reassembled response
    card.memory                      the card's RAM/NVM (``Memory``)
    card.last_error                  the Python error behind the last 6F00, for debugging

Charging: each exchange charges the link time to the clock under the component
name ``link`` (a ledger entry, not a profile component) and, if
``overhead_component`` is given, that profile component once per command
(command dispatch on the card). The handler's own primitives charge processing.

Errors: every malformed or unsupported command gets the ISO 7816-4 status
word (6700 wrong length, 6E00 class, 6D00 instruction, 6883/6884 chaining,
6A84 message too big for the card's buffer). A handler failing with anything
but :class:`APDUError` answers 6F00 ("no precise diagnosis"), as real cards
do; only a :class:`ProfileError` (the simulation itself misconfigured) escapes.
"""

from __future__ import annotations

from typing import Callable

from trustlab.devices.card.apdu import (
    CLA_CHAINING, INS_GET_RESPONSE, SW_BYTES_REMAINING, SW_CHAINING_NOT_SUPPORTED,
    SW_CLA_NOT_SUPPORTED, SW_CONDITIONS_NOT_SATISFIED, SW_INS_NOT_SUPPORTED,
    SW_LAST_COMMAND_EXPECTED, SW_NOT_ENOUGH_MEMORY, SW_OK, SW_UNKNOWN, SW_WRONG_LENGTH,
    SW_WRONG_P1P2, APDUError, CommandAPDU, ResponseAPDU, chain,
)
from trustlab.devices.card.link import ContactLink, ContactlessLink
from trustlab.devices.card.memory import Memory
from trustlab.errors import ProfileError
from trustlab.timing.clock import Clock

Handler = Callable[["Card", CommandAPDU], bytes]


class Card:
    """A card with registered instruction handlers, a link and a memory."""

    def __init__(self, clock: Clock | None, link: ContactLink | ContactlessLink | None = None, *,
                 classes: tuple[int, ...] = (0x00, 0x80), extended: bool = False, max_message: int = 1024,
                 overhead_component: str | None = None, memory: Memory | None = None) -> None:
        self.clock = clock
        self.link = link if link is not None else ContactLink()
        self.classes = tuple(classes)
        self.extended = extended
        self.max_message = max_message
        self.overhead_component = overhead_component
        self.memory = memory if memory is not None else Memory(clock)
        self.handlers: dict[int, Handler] = {}
        self.last_error: BaseException | None = None
        self._chain: tuple[int, int, int, int] | None = None
        self._chain_data = bytearray()
        self._pending = b""  # response bytes waiting for GET RESPONSE

    def register(self, ins: int, handler: Handler) -> None:
        if ins == INS_GET_RESPONSE:
            raise ValueError("INS C0 (GET RESPONSE) is handled by the card itself")
        self.handlers[ins] = handler

    # ---- the wire --------------------------------------------------------------

    def transmit(self, raw: bytes) -> bytes:
        """One command on the wire -> response bytes (data + SW1 SW2); never raises on bad input."""
        resp = self._process(bytes(raw))
        wire = resp.encode()
        if self.clock is not None:
            self.clock.charge_ms("link", self.link.exchange_ms(len(raw), len(resp.data)))
        return wire

    def exchange(self, command: CommandAPDU) -> ResponseAPDU:
        return ResponseAPDU.parse(self.transmit(command.encode()))

    def send(self, cla: int, ins: int, p1: int, p2: int, data: bytes = b"", ne: int = 256) -> ResponseAPDU:
        """Send a whole message (chained if needed) and collect the whole response."""
        max_data = 65535 if self.extended else 255
        resp = ResponseAPDU(b"", SW_OK)
        for cmd in chain(cla, ins, p1, p2, data, max_data=max_data, ne=ne):
            resp = self.exchange(cmd)
            if cmd.chained and resp.sw != SW_OK:
                return resp
        out = bytearray(resp.data)
        while resp.sw & 0xFF00 == SW_BYTES_REMAINING:
            resp = self.exchange(CommandAPDU(cla & ~CLA_CHAINING & 0xFF, INS_GET_RESPONSE, 0, 0,
                                             ne=(resp.sw & 0xFF) or 256))
            out += resp.data
        return ResponseAPDU(bytes(out), resp.sw)

    # ---- the card's side --------------------------------------------------------

    def _respond(self, data: bytes, ne: int) -> ResponseAPDU:
        """Send at most ``ne`` bytes now; keep the rest for GET RESPONSE (61xx)."""
        limit = ne if ne else 0
        if len(data) <= limit:
            self._pending = b""
            return ResponseAPDU(data, SW_OK)
        if limit == 0 and not data:
            return ResponseAPDU(b"", SW_OK)
        head, self._pending = data[:limit], data[limit:]
        return ResponseAPDU(head, SW_BYTES_REMAINING | (min(len(self._pending), 256) & 0xFF))

    def _process(self, raw: bytes) -> ResponseAPDU:
        try:
            cmd = CommandAPDU.parse(raw)
            if cmd.needs_extended and not self.extended:
                raise APDUError(SW_WRONG_LENGTH, "extended length APDUs are not supported by this card")
            base_cla = cmd.cla & ~CLA_CHAINING & 0xFF if cmd.chained else cmd.cla
            if base_cla not in self.classes:
                raise APDUError(SW_CLA_NOT_SUPPORTED, f"class {cmd.cla:02X} not supported")
            if cmd.ins == INS_GET_RESPONSE and self._chain is None:
                return self._get_response(cmd)
            if cmd.ins & 0xF0 in (0x60, 0x90) or cmd.ins not in self.handlers:
                self._drop_chain()
                raise APDUError(SW_INS_NOT_SUPPORTED, f"instruction {cmd.ins:02X} not supported")
            self._pending = b""
            head = (base_cla, cmd.ins, cmd.p1, cmd.p2)
            if self._chain is not None and self._chain != head:
                self._drop_chain()
                raise APDUError(SW_LAST_COMMAND_EXPECTED, "a different command arrived inside a chain")
            if cmd.chained or self._chain is not None:
                if len(self._chain_data) + len(cmd.data) > self.max_message:
                    self._drop_chain()
                    raise APDUError(SW_NOT_ENOUGH_MEMORY,
                                    f"chained message exceeds the card buffer of {self.max_message} bytes")
                self._chain = head
                self._chain_data += cmd.data
                if cmd.chained:
                    return ResponseAPDU(b"", SW_OK)
                cmd = CommandAPDU(base_cla, cmd.ins, cmd.p1, cmd.p2, bytes(self._chain_data), cmd.ne)
                self._drop_chain()
            return self._dispatch(cmd)
        except APDUError as exc:
            return ResponseAPDU(b"", exc.sw)

    def _drop_chain(self) -> None:
        self._chain = None
        self._chain_data = bytearray()

    def _get_response(self, cmd: CommandAPDU) -> ResponseAPDU:
        if cmd.p1 or cmd.p2:
            raise APDUError(SW_WRONG_P1P2, "GET RESPONSE takes P1=P2=00")
        if not self._pending:
            raise APDUError(SW_CONDITIONS_NOT_SATISFIED, "no response data pending")
        return self._respond(self._pending, cmd.ne or 256)

    def _dispatch(self, cmd: CommandAPDU) -> ResponseAPDU:
        handler = self.handlers[cmd.ins]
        self.last_error = None
        try:
            if self.clock is not None and self.overhead_component:
                self.clock.charge(self.overhead_component)
            data = handler(self, cmd)
        except APDUError:
            raise
        except ProfileError:
            raise
        except Exception as exc:  # a card answers 6F00, it does not crash
            self.last_error = exc
            return ResponseAPDU(b"", SW_UNKNOWN)
        if data is None:
            data = b""
        return self._respond(bytes(data), cmd.ne)


__all__ = ["Card", "Handler", "SW_CHAINING_NOT_SUPPORTED"]

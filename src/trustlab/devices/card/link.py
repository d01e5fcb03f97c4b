"""How long bytes take between terminal and card: ISO 7816-3 contact, ISO 14443 contactless.

Public API (stable)::

    ContactLink(f_hz=5e6, F=372, D=1, protocol="T=1", mode="paper", ifsc=254)
    ContactlessLink(bit_rate=106_000, mode="paper", fsc=256)
    link.bit_rate                    nominal bits per second
    link.payload_ms(nbytes)          the data alone (the paper's Table XII)
    link.exchange_ms(command, response_len)   one command/response APDU pair
    contact_rates(), contactless_rates()      the paper's interface rates

Two accuracies, because the paper and the standard disagree on purpose:

* ``mode="paper"`` counts 8 bits per byte and nothing else. Table XII of Mayes
  (2017) is computed this way (bytes * 8 / rate), so this mode reproduces it.
* ``mode="char"`` is character- and frame-accurate. Contact (ISO 7816-3):
  one elementary time unit is ``etu = F / (D * f)`` seconds; a T=0 character
  is start + 8 data + parity + 2 guard etu = 12 etu, a T=1 character 11 etu
  (CGT = 11). T=0 sends the 5-byte header, waits for the procedure byte,
  sends the data, and a response with data comes back as ``61xx`` followed
  by a GET RESPONSE exchange. T=1 wraps everything in blocks
  (NAD PCB LEN + INF + LRC = 4 bytes overhead), chained with R-block
  acknowledgements when the INF exceeds IFSC. Contactless (ISO 14443-A):
  every byte is 8 data + 1 parity bit, each frame adds SOF/EOF and the
  ISO-DEP prologue (PCB) and CRC_A (2 bytes), frames longer than FSC are
  chained with R(ACK), and each direction change waits the minimum frame
  delay time (1172/fc for the card's answer, 1236/fc for the reader).

Guard-time extensions (N), block waiting times and the card's own
processing are not link time; the card charges processing separately.
"""

from __future__ import annotations

from dataclasses import dataclass

from trustlab.devices.card.apdu import CommandAPDU
from trustlab.errors import TrustlabError

FC_14443 = 13.56e6
MODES = ("paper", "char")


def contact_rates(f_hz: float = 5e6) -> dict[int, "ContactLink"]:
    """The paper's contact rates (Table XII): f/372, 8f/512, 32f/512 at 5 MHz."""
    links = [ContactLink(f_hz, 372, 1), ContactLink(f_hz, 512, 8), ContactLink(f_hz, 512, 32)]
    return {round(link.bit_rate): link for link in links}


def contactless_rates() -> dict[int, "ContactlessLink"]:
    """ISO 14443 rates: fc/128, fc/64, fc/32, fc/16 (the paper rounds to 106k and 424k)."""
    return {r: ContactlessLink(r) for r in (106_000, 212_000, 424_000, 848_000)}


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise TrustlabError(f"link mode must be one of {', '.join(MODES)}, got {mode!r}")


def _response_len(command: CommandAPDU | int, response_len: int) -> tuple[int, int]:
    if isinstance(command, CommandAPDU):
        return len(command.encode()), response_len
    return int(command), response_len


def _command_data(command: CommandAPDU | int) -> int:
    """Bytes after the 5-byte T=0 header: the data field (T=0 never sends Le with data)."""
    if isinstance(command, CommandAPDU):
        return len(command.data)
    return max(0, int(command) - 5)


@dataclass(frozen=True)
class ContactLink:
    """ISO/IEC 7816-3 contact interface with clock ``f_hz`` and rate factors F, D."""

    f_hz: float = 5e6
    F: int = 372
    D: int = 1
    protocol: str = "T=1"
    mode: str = "paper"
    ifsc: int = 254

    def __post_init__(self) -> None:
        _check_mode(self.mode)
        if self.protocol not in ("T=0", "T=1"):
            raise TrustlabError(f"contact protocol must be T=0 or T=1, got {self.protocol!r}")
        if self.f_hz <= 0 or self.F <= 0 or self.D <= 0:
            raise TrustlabError("contact link needs positive f, F and D")
        if not 1 <= self.ifsc <= 254:
            raise TrustlabError(f"IFSC must be 1..254, got {self.ifsc}")

    @property
    def etu_s(self) -> float:
        """One elementary time unit: F / (D * f) seconds (ISO 7816-3 §7.1)."""
        return self.F / (self.D * self.f_hz)

    @property
    def bit_rate(self) -> float:
        return 1.0 / self.etu_s

    @property
    def name(self) -> str:
        return f"contact {round(self.bit_rate)} bit/s ({self.protocol}, F={self.F}, D={self.D}, f={self.f_hz / 1e6:g} MHz)"

    def _chars_ms(self, nchars: int) -> float:
        per_char = 12 if self.protocol == "T=0" else 11
        return nchars * per_char * self.etu_s * 1000.0

    def payload_ms(self, nbytes: int) -> float:
        if self.mode == "paper":
            return nbytes * 8 * self.etu_s * 1000.0
        return self._chars_ms(nbytes)

    def _t1_blocks(self, inf: int) -> int:
        """Characters to move ``inf`` INF bytes one way with T=1 chaining and R-block acks."""
        blocks = max(1, -(-inf // self.ifsc))
        return inf + 4 * blocks + 4 * (blocks - 1)  # each I-block 4 overhead; each non-last one acked

    def exchange_ms(self, command: CommandAPDU | int, response_len: int) -> float:
        """Link time of one command APDU and its response (``response_len`` data bytes + SW)."""
        cmd_len, rlen = _response_len(command, response_len)
        if self.mode == "paper":
            return self.payload_ms(cmd_len + rlen + 2)
        if self.protocol == "T=1":
            return self._chars_ms(self._t1_blocks(cmd_len) + self._t1_blocks(rlen + 2))
        # T=0: header, procedure byte, data; then 61xx and GET RESPONSE for data back.
        header, data = 5, _command_data(command)
        chars = header + (1 + data if data else 0) + 2
        if rlen:
            chars += 5 + 1 + rlen + 2  # GET RESPONSE header, procedure byte, data, SW
        return self._chars_ms(chars)


@dataclass(frozen=True)
class ContactlessLink:
    """ISO/IEC 14443-4 (type A framing) at one of 106/212/424/848 kbit/s."""

    bit_rate: float = 106_000
    mode: str = "paper"
    fsc: int = 256

    def __post_init__(self) -> None:
        _check_mode(self.mode)
        if self.bit_rate <= 0:
            raise TrustlabError("contactless bit rate must be positive")
        if not 16 <= self.fsc <= 4096:
            raise TrustlabError(f"FSC must be 16..4096, got {self.fsc}")

    @property
    def name(self) -> str:
        return f"contactless {round(self.bit_rate)} bit/s (ISO 14443)"

    def _bits_ms(self, bits: float) -> float:
        return bits / self.bit_rate * 1000.0

    def payload_ms(self, nbytes: int) -> float:
        if self.mode == "paper":
            return self._bits_ms(nbytes * 8)
        return self._bits_ms(nbytes * 9)

    def _frames_ms(self, inf: int) -> float:
        """One direction: I-blocks of at most FSC bytes (PCB + INF + CRC), R(ACK)s between."""
        room = self.fsc - 3
        frames = max(1, -(-inf // room))
        frame_bytes = inf + 3 * frames
        ack_bytes = 3 * (frames - 1)
        bits = 9 * (frame_bytes + ack_bytes) + 2 * (frames + frames - 1)  # parity, SOF+EOF
        delays = (frames - 1) * 2 * 1236 / FC_14443 * 1000.0
        return self._bits_ms(bits) + delays

    def exchange_ms(self, command: CommandAPDU | int, response_len: int) -> float:
        cmd_len, rlen = _response_len(command, response_len)
        if self.mode == "paper":
            return self.payload_ms(cmd_len + rlen + 2)
        fdt = (1172 + 1236) / FC_14443 * 1000.0  # card answers, reader speaks again
        return self._frames_ms(cmd_len) + self._frames_ms(rlen + 2) + fdt

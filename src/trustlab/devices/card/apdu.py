"""ISO/IEC 7816-4 APDUs as pure bytes-in/bytes-out code (no card, no clock).

Public API (stable)::

    CommandAPDU(cla, ins, p1, p2, data=b"", ne=0)   .encode(extended=None) / CommandAPDU.parse(raw)
    ResponseAPDU(data, sw)                          .encode() / ResponseAPDU.parse(raw)
    APDUError(sw, why)          raised by parse(); a card turns it into the status word
    chain(cla, ins, p1, p2, data, max_data=255) -> list[CommandAPDU]   (command chaining, CLA b5)
    SW_* constants, sw_text(sw)

Why parse strictly: a card must answer every byte string with a status word
(``6700`` wrong length, ``6E00`` class not supported, ...), so the parser
classifies malformed input into the ISO case it violates instead of throwing
a Python error. The seven cases of ISO/IEC 7816-3 §12.1.2 / 7816-4 §5.1:

  case 1   CLA INS P1 P2
  case 2S  ... Le                       (Le=00 means Ne=256)
  case 3S  ... Lc data                  (Lc 1..255)
  case 4S  ... Lc data Le
  case 2E  ... 00 Le1 Le2               (Le=0000 means Ne=65536)
  case 3E  ... 00 Lc1 Lc2 data          (Lc 1..65535)
  case 4E  ... 00 Lc1 Lc2 data Le1 Le2
"""

from __future__ import annotations

from dataclasses import dataclass

SW_OK = 0x9000
SW_BYTES_REMAINING = 0x6100  # 61xx: xx more bytes with GET RESPONSE
SW_VERIFY_FAILED = 0x6300
SW_WRONG_LENGTH = 0x6700
SW_LAST_COMMAND_EXPECTED = 0x6883
SW_CHAINING_NOT_SUPPORTED = 0x6884
SW_SECURITY_NOT_SATISFIED = 0x6982
SW_CONDITIONS_NOT_SATISFIED = 0x6985
SW_SM_DATA_INCORRECT = 0x6988
SW_WRONG_DATA = 0x6A80
SW_FUNC_NOT_SUPPORTED = 0x6A81
SW_NOT_ENOUGH_MEMORY = 0x6A84
SW_WRONG_P1P2 = 0x6B00
SW_CORRECT_LENGTH = 0x6C00  # 6Cxx: wrong Le, xx is the right one
SW_INS_NOT_SUPPORTED = 0x6D00
SW_CLA_NOT_SUPPORTED = 0x6E00
SW_UNKNOWN = 0x6F00

INS_GET_RESPONSE = 0xC0
CLA_CHAINING = 0x10  # ISO 7816-4 §5.1.1.1: b5 = "more commands follow"; GlobalPlatform and Java Card
#                     (APDU.isCommandChainingCLA) read b5 the same way in the proprietary 0x80 classes

_TEXT = {
    SW_OK: "success",
    SW_VERIFY_FAILED: "verification failed",
    SW_WRONG_LENGTH: "wrong length",
    SW_LAST_COMMAND_EXPECTED: "last command of the chain expected",
    SW_CHAINING_NOT_SUPPORTED: "command chaining not supported",
    SW_SECURITY_NOT_SATISFIED: "security status not satisfied",
    SW_CONDITIONS_NOT_SATISFIED: "conditions of use not satisfied",
    SW_SM_DATA_INCORRECT: "incorrect secure messaging data (authentication failed)",
    SW_WRONG_DATA: "incorrect parameters in the data field",
    SW_FUNC_NOT_SUPPORTED: "function not supported",
    SW_NOT_ENOUGH_MEMORY: "not enough memory space",
    SW_WRONG_P1P2: "wrong parameters P1-P2",
    SW_INS_NOT_SUPPORTED: "instruction code not supported or invalid",
    SW_CLA_NOT_SUPPORTED: "class not supported",
    SW_UNKNOWN: "no precise diagnosis",
}


def sw_text(sw: int) -> str:
    """A readable meaning of a status word."""
    if sw & 0xFF00 == SW_BYTES_REMAINING:
        return f"{sw & 0xFF or 256} response bytes still available"
    if sw & 0xFF00 == SW_CORRECT_LENGTH:
        return f"wrong Le; exact length is {sw & 0xFF}"
    return _TEXT.get(sw, "unknown status")


class APDUError(Exception):
    """A command the card must refuse with status word ``sw`` (never leaves a Card)."""

    def __init__(self, sw: int, why: str = "") -> None:
        super().__init__(f"{sw:04X} {why or sw_text(sw)}")
        self.sw = sw
        self.why = why or sw_text(sw)


@dataclass(frozen=True)
class CommandAPDU:
    """A command APDU; ``ne`` is the maximum expected response length (0 = none)."""

    cla: int
    ins: int
    p1: int
    p2: int
    data: bytes = b""
    ne: int = 0

    def __post_init__(self) -> None:
        for field_name in ("cla", "ins", "p1", "p2"):
            v = getattr(self, field_name)
            if not 0 <= v <= 0xFF:
                raise ValueError(f"{field_name} must be a byte, got {v}")
        if len(self.data) > 65535:
            raise ValueError(f"command data of {len(self.data)} bytes exceeds the extended limit 65535")
        if not 0 <= self.ne <= 65536:
            raise ValueError(f"ne must be 0..65536, got {self.ne}")

    @property
    def needs_extended(self) -> bool:
        return len(self.data) > 255 or self.ne > 256

    @property
    def chained(self) -> bool:
        """True if CLA says more commands of the chain follow (b5; CLA FF is invalid, never chained)."""
        return self.cla != 0xFF and bool(self.cla & CLA_CHAINING)

    def encode(self, extended: bool | None = None) -> bytes:
        """Bytes on the wire; short form unless the lengths need (or the caller asks for) extended."""
        ext = self.needs_extended if extended is None else extended
        if not ext and self.needs_extended:
            raise ValueError("lengths need an extended APDU")
        out = bytes([self.cla, self.ins, self.p1, self.p2])
        if not ext:
            if self.data:
                out += bytes([len(self.data)]) + self.data
            if self.ne:
                out += bytes([self.ne & 0xFF])  # 256 -> 00
            return out
        if self.data:
            out += b"\x00" + len(self.data).to_bytes(2, "big") + self.data
            if self.ne:
                out += (self.ne & 0xFFFF).to_bytes(2, "big")  # 65536 -> 0000
        elif self.ne:
            out += b"\x00" + (self.ne & 0xFFFF).to_bytes(2, "big")
        return out

    @classmethod
    def parse(cls, raw: bytes) -> "CommandAPDU":
        """Decode wire bytes; inconsistent lengths raise :class:`APDUError` (6700)."""
        raw = bytes(raw)
        if len(raw) < 4:
            raise APDUError(SW_WRONG_LENGTH, f"command of {len(raw)} bytes is shorter than the 4-byte header")
        cla, ins, p1, p2 = raw[:4]
        body = raw[4:]
        n = len(body)
        if n == 0:  # case 1
            return cls(cla, ins, p1, p2)
        if n == 1:  # case 2S
            return cls(cla, ins, p1, p2, ne=body[0] or 256)
        if body[0] != 0:  # short Lc
            lc = body[0]
            if n == 1 + lc:  # case 3S
                return cls(cla, ins, p1, p2, data=body[1:])
            if n == 2 + lc:  # case 4S
                return cls(cla, ins, p1, p2, data=body[1:1 + lc], ne=body[-1] or 256)
            raise APDUError(SW_WRONG_LENGTH, f"Lc={lc} but {n - 1} bytes follow")
        # body[0] == 0 and n >= 2: extended form
        if n == 3:  # case 2E
            le = int.from_bytes(body[1:3], "big")
            return cls(cla, ins, p1, p2, ne=le or 65536)
        if n < 3:
            raise APDUError(SW_WRONG_LENGTH, f"truncated extended length ({n} bytes after the header)")
        lc = int.from_bytes(body[1:3], "big")
        if lc == 0:
            raise APDUError(SW_WRONG_LENGTH, "extended Lc of zero")
        if n == 3 + lc:  # case 3E
            return cls(cla, ins, p1, p2, data=body[3:])
        if n == 5 + lc:  # case 4E
            le = int.from_bytes(body[-2:], "big")
            return cls(cla, ins, p1, p2, data=body[3:3 + lc], ne=le or 65536)
        raise APDUError(SW_WRONG_LENGTH, f"extended Lc={lc} but {n - 3} bytes follow")


@dataclass(frozen=True)
class ResponseAPDU:
    """Response data plus the two status bytes SW1 SW2."""

    data: bytes
    sw: int

    @property
    def ok(self) -> bool:
        return self.sw == SW_OK

    def encode(self) -> bytes:
        return bytes(self.data) + self.sw.to_bytes(2, "big")

    @classmethod
    def parse(cls, raw: bytes) -> "ResponseAPDU":
        if len(raw) < 2:
            raise ValueError(f"response of {len(raw)} bytes has no status word")
        return cls(bytes(raw[:-2]), int.from_bytes(raw[-2:], "big"))

    def __str__(self) -> str:
        return f"{self.data.hex()} {self.sw:04X} ({sw_text(self.sw)})"


def chain(cla: int, ins: int, p1: int, p2: int, data: bytes, *, max_data: int = 255,
          ne: int = 256) -> list[CommandAPDU]:
    """Split a message into a command chain (ISO 7816-4 §5.1.1.1).

    Every command but the last carries CLA b5 = 1; the last asks for the
    response (``ne``). An empty message is one command.
    """
    if cla == 0xFF or cla & CLA_CHAINING:
        raise ValueError(f"CLA {cla:02X} cannot start a chain (FF is invalid; b5 is the chaining bit)")
    if max_data < 1:
        raise ValueError("max_data must be positive")
    parts = [data[i:i + max_data] for i in range(0, len(data), max_data)] or [b""]
    out = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        out.append(CommandAPDU(cla if last else cla | CLA_CHAINING, ins, p1, p2, part, ne if last else 0))
    return out

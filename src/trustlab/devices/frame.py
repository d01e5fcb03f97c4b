"""The 10-byte header every TPM frame starts with, TPM 1.2 and TPM 2.0 alike.

``tag(2) size(4) code(4)``: ``size`` covers the whole frame; ``code`` is the
command code (ordinal) in a command and the return code in a response. Both
generations share the layout (TPM 1.2 Part 3, 1; TPM 2.0 Part 1, 18.2), so
the serving layer frames either generation with these helpers and neither
generation's package needs the other's.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

HEADER_SIZE = 10
TPM_RC_COMMAND_SIZE = 0x142
"""TPM 2.0's answer to a frame whose size is wrong (the serving layer translates it for TPM 1.2)."""


class WireError(ValueError):
    """A frame that cannot be parsed; carries the TPM response code to answer with."""

    def __init__(self, message: str, rc: int = TPM_RC_COMMAND_SIZE) -> None:
        super().__init__(message)
        self.rc = rc


@dataclass(frozen=True)
class Header:
    tag: int
    size: int
    code: int  # command code in a command, response code in a response


def parse_header(frame: bytes) -> Header:
    """The 10-byte header of a TPM command or response."""
    if len(frame) < HEADER_SIZE:
        raise WireError(f"frame of {len(frame)} bytes is shorter than a TPM header")
    tag, size, code = struct.unpack(">HII", frame[:HEADER_SIZE])
    return Header(tag, size, code)


def build_frame(tag: int, code: int, body: bytes = b"") -> bytes:
    """A complete frame: header (with the size filled in) + ``body``."""
    return struct.pack(">HII", tag, HEADER_SIZE + len(body), code) + body


def response_code(frame: bytes) -> int:
    return parse_header(frame).code

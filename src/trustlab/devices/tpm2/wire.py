"""TPM 2.0 command and response frames, without sockets: build a command, read a response code.

The transport framings that carry these frames to a served TPM (swtpm's raw
data port, the MS simulator's ``TPM_SEND_COMMAND``, swtpm's control channel)
are the serving layer's (:mod:`trustlab.serving.wire`).
"""

from __future__ import annotations

import struct

from trustlab.devices.frame import HEADER_SIZE, Header, WireError, build_frame, parse_header, response_code
from trustlab.devices.tpm2.commands import TPM_ST_NO_SESSIONS

__all__ = ["HEADER_SIZE", "Header", "WireError", "build_command", "error_response", "parse_header",
           "response_code", "startup_command", "TPM_SU_CLEAR", "TPM_SU_STATE"]

TPM_SU_CLEAR = 0x0000
TPM_SU_STATE = 0x0001


def build_command(code: int, body: bytes = b"", tag: int = TPM_ST_NO_SESSIONS) -> bytes:
    return build_frame(tag, code, body)


def error_response(rc: int) -> bytes:
    """A minimal TPM 2.0 error response (``TPM_ST_NO_SESSIONS``, 10 bytes)."""
    return struct.pack(">HII", TPM_ST_NO_SESSIONS, HEADER_SIZE, rc)


def startup_command(startup_type: int = TPM_SU_CLEAR) -> bytes:
    return build_command(0x144, struct.pack(">H", startup_type))

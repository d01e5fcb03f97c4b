"""A TPM 1.2 command and its response as values: the in-process fast path's currency.

The framed path marshals a command into bytes, the engine parses them, builds
response bytes, and the host parses those. When the host and the engine share
a process, :class:`Command` hands the engine the values it would have parsed
(ordinal, handles, parameters, authorization trailers) and :class:`Reply` hands
the host the values it would have parsed from the response. Nothing else
changes: the parameter bytes (what the digests cover) are the same bytes, every
digest, HMAC and charge is made as on the framed path - the dispatcher charges
``ohir``/``ohor`` for the frame lengths these values marshal to - and
``bytes()`` of either gives exactly the frame the framed path sends
(``tests/tpm12/test_fast_path.py`` holds the two paths to the same responses,
ledger and state).
"""

from __future__ import annotations

import struct
from typing import Sequence

HEADER = 10
AUTH_IN = 45   # authHandle 4 + nonceOdd 20 + continue 1 + authValue 20
AUTH_OUT = 41  # nonceEven 20 + continue 1 + resAuth 20

_HEADER = struct.Struct(">HII")
_TRAILER_IN = struct.Struct(">I20sB20s").pack
_TAG_IN = (0x00C1, 0x00C2, 0x00C3)   # TPM_TAG_RQU_COMMAND, _AUTH1_, _AUTH2_ by number of sessions
_TAG_OUT = (0x00C4, 0x00C5, 0x00C6)  # TPM_TAG_RSP_COMMAND, _AUTH1_, _AUTH2_


class Command:
    """One command as values: ``trailers`` holds ``(authHandle, nonceOdd, continue, authValue)`` per session."""

    __slots__ = ("ordinal", "handles", "params", "trailers")

    def __init__(self, ordinal: int, handles: Sequence[int], params: bytes,
                 trailers: Sequence[tuple[int, bytes, int, bytes]] = ()) -> None:
        self.ordinal = ordinal
        self.handles = handles
        self.params = params
        self.trailers = trailers

    def size(self) -> int:
        """The marshalled frame's length (what ``ohir`` is charged for)."""
        return HEADER + 4 * len(self.handles) + len(self.params) + AUTH_IN * len(self.trailers)

    def canonical(self) -> bool:
        """True when the values marshal unambiguously: every field fits its wire width.

        (A session count beyond two, a handle beyond 32 bits or a nonce that is not
        20 bytes has no one frame; the engine sends such a command the framed way.)
        """
        if len(self.trailers) > 2 or not 0 <= self.ordinal <= 0xFFFFFFFF:
            return False
        for h in self.handles:
            if not 0 <= h <= 0xFFFFFFFF:
                return False
        for handle, odd, cont, value in self.trailers:
            if not 0 <= handle <= 0xFFFFFFFF or len(odd) != 20 or len(value) != 20 or not 0 <= cont <= 255:
                return False
        return True

    def __bytes__(self) -> bytes:
        """The frame the framed path sends for this command."""
        body = b"".join([struct.pack(f">{len(self.handles)}I", *self.handles), self.params,
                         *[_TRAILER_IN(*t) for t in self.trailers]])
        return _HEADER.pack(_TAG_IN[len(self.trailers)], HEADER + len(body), self.ordinal) + body


class Reply:
    """One response as values: ``rc``, output ``handles`` (packed) and ``params``, and per session
    ``(nonceEven, continue byte, resAuth)``. An error carries only ``rc``."""

    __slots__ = ("rc", "handles", "params", "trailers")

    def __init__(self, rc: int, handles: bytes = b"", params: bytes = b"",
                 trailers: Sequence[tuple[bytes, bytes, bytes]] = ()) -> None:
        self.rc = rc
        self.handles = handles
        self.params = params
        self.trailers = trailers

    def size(self) -> int:
        """The marshalled frame's length (what ``ohor`` is charged for)."""
        return HEADER + len(self.handles) + len(self.params) + AUTH_OUT * len(self.trailers)

    def __bytes__(self) -> bytes:
        """The response frame the framed path returns."""
        if self.rc:
            return _HEADER.pack(_TAG_OUT[0], HEADER, self.rc)
        body = b"".join([self.handles, self.params, *[b"".join(t) for t in self.trailers]])
        return _HEADER.pack(_TAG_OUT[len(self.trailers)], HEADER + len(body), 0) + body

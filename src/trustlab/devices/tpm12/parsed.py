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


class Command(tuple):
    """One command as values: ``Command((ordinal, handles, params, trailers))``, ``trailers`` holding
    ``(authHandle, nonceOdd, continue, authValue)`` per session.

    A tuple (built and read in C: the fast path must cost less than the marshalling it
    replaces). The values must fit their wire widths - handles and the authHandle 32 bits,
    nonceOdd and authValue 20 bytes, continue one byte - as the client's own always do
    (it packs the handles first, so a wrong one fails as on the framed path); :meth:`canonical`
    says whether they do.
    """

    __slots__ = ()

    @property
    def ordinal(self) -> int:
        return self[0]

    @property
    def handles(self) -> Sequence[int]:
        return self[1]

    @property
    def params(self) -> bytes:
        return self[2]

    @property
    def trailers(self) -> Sequence[tuple[int, bytes, int, bytes]]:
        return self[3]

    def size(self) -> int:
        """The marshalled frame's length (what ``ohir`` is charged for)."""
        return HEADER + 4 * len(self[1]) + len(self[2]) + AUTH_IN * len(self[3])

    def canonical(self) -> bool:
        """True when the values fit their wire widths (so :meth:`__bytes__` is the one frame they mean)."""
        ordinal, handles, _, trailers = self
        return (len(trailers) <= 2 and 0 <= ordinal <= 0xFFFFFFFF and all(0 <= h <= 0xFFFFFFFF for h in handles)
                and all(0 <= h <= 0xFFFFFFFF and len(odd) == 20 and len(value) == 20 and 0 <= cont <= 255
                        for h, odd, cont, value in trailers))

    def __bytes__(self) -> bytes:
        """The frame the framed path sends for this command."""
        ordinal, handles, params, trailers = self
        body = b"".join([struct.pack(f">{len(handles)}I", *handles), params, *[_TRAILER_IN(*t) for t in trailers]])
        return _HEADER.pack(_TAG_IN[len(trailers)], HEADER + len(body), ordinal) + body


class Reply(tuple):
    """One response as values: ``Reply((rc, handles, params, trailers))``: the return code, output
    handles (packed) and parameters, and per session ``(nonceEven, continue byte, resAuth)``.
    An error is ``Reply((rc, b"", b"", ()))``."""

    __slots__ = ()

    @property
    def rc(self) -> int:
        return self[0]

    @property
    def handles(self) -> bytes:
        return self[1]

    @property
    def params(self) -> bytes:
        return self[2]

    @property
    def trailers(self) -> Sequence[tuple[bytes, bytes, bytes]]:
        return self[3]

    def size(self) -> int:
        """The marshalled frame's length (what ``ohor`` is charged for)."""
        return HEADER + len(self[1]) + len(self[2]) + AUTH_OUT * len(self[3])

    def __bytes__(self) -> bytes:
        """The response frame the framed path returns."""
        rc, handles, params, trailers = self
        if rc:
            return _HEADER.pack(_TAG_OUT[0], HEADER, rc)
        body = b"".join([handles, params, *[b"".join(t) for t in trailers]])
        return _HEADER.pack(_TAG_OUT[len(trailers)], HEADER + len(body), 0) + body

"""Big-endian TPM 1.2 marshalling: pure bytes in, bytes out (no I/O, no timing).

Framing is separate from execution (h11's lesson): the engine and the host
helper both build and parse frames with these two small classes, and tests
exercise them without any crypto.
"""

from __future__ import annotations

import struct

from trustlab.devices.tpm12.errors import TpmError


_PACK_U8 = struct.Struct(">B").pack
_PACK_U16 = struct.Struct(">H").pack
_PACK_U32 = struct.Struct(">I").pack


class Writer:
    """Accumulates a TPM structure; every method returns self for chaining.

    (Precompiled packers and no helper calls inside ``sized``: key blobs and
    many responses are built through here on every protocol run.)
    """

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def u8(self, v: int) -> "Writer":
        self._parts.append(_PACK_U8(v))
        return self

    def u16(self, v: int) -> "Writer":
        self._parts.append(_PACK_U16(v))
        return self

    def u32(self, v: int) -> "Writer":
        self._parts.append(_PACK_U32(v))
        return self

    def raw(self, b: bytes) -> "Writer":
        self._parts.append(bytes(b))
        return self

    def sized(self, b: bytes) -> "Writer":
        """A UINT32 size followed by that many bytes (TPM_SIZED_BUFFER and friends)."""
        self._parts += (_PACK_U32(len(b)), bytes(b))
        return self

    def bytes(self) -> bytes:
        return b"".join(self._parts)


_U16 = struct.Struct(">H").unpack_from
_U32 = struct.Struct(">I").unpack_from


ALLOC_MAX = 0x10000  # libtpms TPM_ALLOC_MAX: no TPM_SIZED_BUFFER larger than this is taken in


class Reader:
    """Consumes a TPM structure; a short or oversized read is TPM_BAD_PARAM_SIZE.

    The reads are inlined (no helper call per field): every command and
    response is parsed through here, so this is part of the engine's hot path.
    """

    __slots__ = ("_data", "_len", "_pos", "_what")

    def __init__(self, data: bytes, what: str = "command") -> None:
        self._data = data if type(data) is bytes else bytes(data)  # (no copy call for the usual bytes)
        self._len = len(self._data)
        self._pos = 0
        self._what = what

    def __copy__(self) -> "Reader":
        """A second reader at this one's position (``copy.copy``: the slots, without the pickle protocol)."""
        other = Reader.__new__(Reader)
        other._data, other._len, other._pos, other._what = self._data, self._len, self._pos, self._what
        return other

    def _short(self, n: int) -> TpmError:
        return TpmError("TPM_BAD_PARAM_SIZE",
                        f"{self._what}: needs {n} byte(s) at offset {self._pos}, "
                        f"only {self._len - self._pos} left")

    def _take(self, n: int) -> bytes:
        pos = self._pos
        end = pos + n
        if n < 0 or end > self._len:
            raise self._short(n)
        self._pos = end
        return self._data[pos:end]

    def u8(self) -> int:
        pos = self._pos
        if pos >= self._len:
            raise self._short(1)
        self._pos = pos + 1
        return self._data[pos]

    def u16(self) -> int:
        pos = self._pos
        if pos + 2 > self._len:
            raise self._short(2)
        self._pos = pos + 2
        return _U16(self._data, pos)[0]

    def u32(self) -> int:
        pos = self._pos
        if pos + 4 > self._len:
            raise self._short(4)
        self._pos = pos + 4
        return _U32(self._data, pos)[0]

    def raw(self, n: int) -> bytes:
        pos = self._pos  # (_take inlined)
        end = pos + n
        if n < 0 or end > self._len:
            raise self._short(n)
        self._pos = end
        return self._data[pos:end]

    def unpack(self, layout: struct.Struct) -> tuple:
        """A fixed run of fields in one read (``layout.size`` bytes), e.g. a structure's header."""
        pos = self._pos
        end = pos + layout.size
        if end > self._len:
            raise self._short(layout.size)
        self._pos = end
        return layout.unpack_from(self._data, pos)

    def peek(self, n: int) -> bytes:
        """The next ``n`` bytes (fewer at the end) without consuming them."""
        return self._data[self._pos:self._pos + n]

    def sized(self, limit: int = 1 << 20) -> bytes:
        pos = self._pos  # (u32 and _take inlined)
        if pos + 4 > self._len:
            raise self._short(4)
        self._pos = pos = pos + 4
        n = _U32(self._data, pos - 4)[0]
        if n > ALLOC_MAX:  # libtpms TPM_SizedBuffer_Load allocates first: TPM_Malloc refuses > 64 KiB
            raise TpmError("TPM_SIZE", f"{self._what}: size field {n} exceeds the TPM's {ALLOC_MAX}-byte buffers")
        if n > limit:
            raise TpmError("TPM_BAD_PARAM_SIZE", f"{self._what}: size field {n} exceeds {limit}")
        end = pos + n
        if end > self._len:
            raise self._short(n)
        self._pos = end
        return self._data[pos:end]

    @property
    def pos(self) -> int:
        return self._pos

    def remaining(self) -> int:
        return self._len - self._pos

    def rest(self) -> bytes:
        return self._take(self.remaining())

    def end(self) -> None:
        if self._pos != self._len:
            raise TpmError("TPM_BAD_PARAM_SIZE", f"{self._what}: {self.remaining()} trailing byte(s)")


def sized(b: bytes) -> bytes:
    """``UINT32 len(b) || b`` (a TPM_SIZED_BUFFER): ``Writer().sized(b).bytes()`` without a Writer.

    For the command handlers every TPM command of a run goes through (one object less per command).
    """
    return _PACK_U32(len(b)) + b

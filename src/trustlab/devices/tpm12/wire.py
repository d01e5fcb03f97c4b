"""Big-endian TPM 1.2 marshalling: pure bytes in, bytes out (no I/O, no timing).

Framing is separate from execution (h11's lesson): the engine and the host
helper both build and parse frames with these two small classes, and tests
exercise them without any crypto.
"""

from __future__ import annotations

import struct

from trustlab.devices.tpm12.errors import TpmError


class Writer:
    """Accumulates a TPM structure; every method returns self for chaining."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def u8(self, v: int) -> "Writer":
        self._parts.append(struct.pack(">B", v))
        return self

    def u16(self, v: int) -> "Writer":
        self._parts.append(struct.pack(">H", v))
        return self

    def u32(self, v: int) -> "Writer":
        self._parts.append(struct.pack(">I", v))
        return self

    def raw(self, b: bytes) -> "Writer":
        self._parts.append(bytes(b))
        return self

    def sized(self, b: bytes) -> "Writer":
        """A UINT32 size followed by that many bytes (TPM_SIZED_BUFFER and friends)."""
        return self.u32(len(b)).raw(b)

    def bytes(self) -> bytes:
        return b"".join(self._parts)


class Reader:
    """Consumes a TPM structure; a short or oversized read is TPM_BAD_PARAM_SIZE."""

    def __init__(self, data: bytes, what: str = "command") -> None:
        self._data = bytes(data)
        self._pos = 0
        self._what = what

    def _take(self, n: int) -> bytes:
        if n < 0 or self._pos + n > len(self._data):
            raise TpmError("TPM_BAD_PARAM_SIZE",
                           f"{self._what}: needs {n} byte(s) at offset {self._pos}, "
                           f"only {len(self._data) - self._pos} left")
        b = self._data[self._pos:self._pos + n]
        self._pos += n
        return b

    def u8(self) -> int:
        return self._take(1)[0]

    def u16(self) -> int:
        return int.from_bytes(self._take(2), "big")

    def u32(self) -> int:
        return int.from_bytes(self._take(4), "big")

    def raw(self, n: int) -> bytes:
        return self._take(n)

    def sized(self, limit: int = 1 << 20) -> bytes:
        n = self.u32()
        if n > limit:
            raise TpmError("TPM_BAD_PARAM_SIZE", f"{self._what}: size field {n} exceeds {limit}")
        return self._take(n)

    @property
    def pos(self) -> int:
        return self._pos

    def remaining(self) -> int:
        return len(self._data) - self._pos

    def rest(self) -> bytes:
        return self._take(self.remaining())

    def end(self) -> None:
        if self.remaining():
            raise TpmError("TPM_BAD_PARAM_SIZE", f"{self._what}: {self.remaining()} trailing byte(s)")

"""A variable-length byte string on the atomic store -- the ``NVStore`` interface.

Engines that persist their state as one serialized blob (the TPM 1.2 reference
engine's ``NVStore``: ``load() -> bytes | None``, ``save(data)``) get atomic,
encrypted, replay-protected persistence by pointing at :class:`RpmbNVStore`.
The blob is length-prefixed and laid over consecutive logical blocks; saving
writes only the blocks that changed, all in one commit, so a power loss during
``save`` leaves either the previous blob or the new one.
"""

from __future__ import annotations

import struct

from trustlab.devices.ftpm.atomic_store import PAYLOAD, AtomicStore
from trustlab.devices.ftpm.errors import FtpmError, StorageCorrupt

_LEN = struct.Struct(">I")


class RpmbNVStore:
    """``load``/``save`` of one blob in blocks ``first .. first+count-1`` of a store."""

    def __init__(self, store: AtomicStore, first: int = 0, count: int | None = None) -> None:
        self.store = store
        self.first = first
        self.count = count if count is not None else store.n - first
        if self.count < 1 or first + self.count > store.n:
            raise FtpmError(f"RPMB NV store: blocks {first}..{first + self.count - 1} outside the store")
        self.last_frames = 0

    @property
    def max_bytes(self) -> int:
        return self.count * PAYLOAD - _LEN.size

    def load(self) -> bytes | None:
        head = self.store.read(self.first)
        (length,) = _LEN.unpack(head[:_LEN.size])
        if length == 0:
            return None
        if length > self.max_bytes:
            raise StorageCorrupt(f"RPMB NV store: stored length {length} exceeds {self.max_bytes}")
        nblocks = -(-(length + _LEN.size) // PAYLOAD)
        raw = self.store.read_bytes(self.first, nblocks)
        return raw[_LEN.size:_LEN.size + length]

    def save(self, data: bytes) -> None:
        if not data:
            raise FtpmError("RPMB NV store: refusing to save an empty blob (it reads back as 'no state')")
        if len(data) > self.max_bytes:
            raise FtpmError(f"RPMB NV store: {len(data)} bytes exceed the {self.max_bytes}-byte region")
        payload = _LEN.pack(len(data)) + data
        nblocks = -(-len(payload) // PAYLOAD)
        own = not self.store.in_transaction
        if own:
            self.store.begin()
        try:
            for k in range(self.count):
                chunk = payload[k * PAYLOAD:(k + 1) * PAYLOAD] if k < nblocks else b""
                self.store.write(self.first + k, chunk)
        except BaseException:
            if own:
                self.store.abort()
            raise
        if own:
            self.last_frames = self.store.commit()

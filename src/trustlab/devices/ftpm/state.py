"""The fTPM's persistent state and its byte encoding.

One canonical binary encoding (no pickles, no dict-order surprises) so that
two states are equal exactly when their encodings are, which is what crash
testing compares. The small, frequently changing fields (failed tries, dirty
bit, NVClock) come first so that they live in the first logical block and a
dirty-bit or clock update rewrites one block, not the whole state.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace

from trustlab.devices.ftpm.errors import StorageCorrupt

MAGIC = b"FTPM"
_HEAD = struct.Struct(">4sBHBBBIQQ32sH")
_NV = struct.Struct(">IBHB")


@dataclass(frozen=True)
class NvIndex:
    """A TPM 2.0 NV index: ordinary bytes, or a 64-bit monotonic counter."""

    size: int
    counter: bool = False
    written: bool = False
    data: bytes = b""


@dataclass(frozen=True)
class FtpmState:
    failed_tries: int = 0
    dirty: bool = False          # set at boot before a dark period, cleared when storage returns
    orderly: bool = True         # TPM2_Shutdown ran before the last power-down
    clock_safe: bool = True      # TPMS_CLOCK_INFO.safe
    boot_count: int = 0          # TPMS_CLOCK_INFO.resetCount analogue
    nv_clock: int = 0            # NVClock: last persisted TPM clock (ms)
    da_clock: int = 0       # TPM clock (ms) the next self-healing decrement counts from
    storage_seed: bytes = bytes(32)
    nv: tuple[tuple[int, NvIndex], ...] = ()

    def nv_dict(self) -> dict[int, NvIndex]:
        return dict(self.nv)

    def with_nv(self, nv: dict[int, NvIndex]) -> "FtpmState":
        return replace(self, nv=tuple(sorted(nv.items())))

    def encode(self) -> bytes:
        out = [_HEAD.pack(MAGIC, 1, self.failed_tries, self.dirty, self.orderly, self.clock_safe,
                          self.boot_count, self.nv_clock, self.da_clock, self.storage_seed, len(self.nv))]
        for index, entry in self.nv:
            out.append(_NV.pack(index, entry.counter, entry.size, entry.written))
            out.append(entry.data.ljust(entry.size, b"\0")[:entry.size])
        return b"".join(out)

    @classmethod
    def decode(cls, raw: bytes) -> "FtpmState":
        try:
            (magic, version, failed, dirty, orderly, safe, boots, nv_clock, da_clock, seed,
             count) = _HEAD.unpack_from(raw, 0)
            if magic != MAGIC or version != 1:
                raise StorageCorrupt("fTPM state: bad magic or version")
            pos = _HEAD.size
            nv = []
            for _ in range(count):
                index, counter, size, written = _NV.unpack_from(raw, pos)
                pos += _NV.size
                data = raw[pos:pos + size]
                if len(data) != size:
                    raise StorageCorrupt("fTPM state: truncated NV index")
                pos += size
                nv.append((index, NvIndex(size=size, counter=bool(counter), written=bool(written), data=data)))
        except struct.error:
            raise StorageCorrupt("fTPM state: truncated") from None
        return cls(failed_tries=failed, dirty=bool(dirty), orderly=bool(orderly), clock_safe=bool(safe),
                   boot_count=boots, nv_clock=nv_clock, da_clock=da_clock, storage_seed=seed,
                   nv=tuple(nv))

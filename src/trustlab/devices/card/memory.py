"""Card memory: a small fast RAM and a large slow NVM with different write costs.

Public API (stable)::

    Memory(clock, ram_size=800, nvm_size=6400, ram_component="ram_write_byte",
           nvm_component="nvm_write_byte")
    mem.write("ram"|"nvm", offset, data)    charges per byte written
    mem.read(region, offset, length)        free (reads from NVM are fast, Mayes 2017 §IV)
    mem.alloc(region, size) -> offset       bump allocator; running out is a CardMemoryError

Why two regions: on a smart card writing NVM (EEPROM/flash) costs several
times a RAM write (Table II of Mayes 2017: a MULTOS block encrypt into RAM
3.3 ms, into NVM 6.4 ms), so where a buffer lives is a performance decision.
The defaults are the paper's budget: 10% of an 8 KiB RAM and of a 64 KiB
code/data space. Components a profile lacks are reported when first needed.
"""

from __future__ import annotations

from trustlab.errors import TrustlabError
from trustlab.timing.clock import Clock

REGIONS = ("ram", "nvm")


class CardMemoryError(TrustlabError):
    """Out of card memory or out of bounds."""


class Memory:
    """Byte-addressed RAM and NVM whose writes charge a clock per byte."""

    def __init__(self, clock: Clock | None, *, ram_size: int = 800, nvm_size: int = 6400,
                 ram_component: str = "ram_write_byte", nvm_component: str = "nvm_write_byte") -> None:
        self.clock = clock
        self.sizes = {"ram": ram_size, "nvm": nvm_size}
        self.cells = {"ram": bytearray(ram_size), "nvm": bytearray(nvm_size)}
        self.components = {"ram": ram_component, "nvm": nvm_component}
        self.used = {"ram": 0, "nvm": 0}
        self.written = {"ram": 0, "nvm": 0}

    def _region(self, region: str) -> bytearray:
        if region not in REGIONS:
            raise CardMemoryError(f"memory region must be 'ram' or 'nvm', got {region!r}")
        return self.cells[region]

    def alloc(self, region: str, size: int) -> int:
        self._region(region)
        if size < 0 or self.used[region] + size > self.sizes[region]:
            raise CardMemoryError(
                f"{region}: cannot allocate {size} bytes ({self.sizes[region] - self.used[region]} free "
                f"of {self.sizes[region]})")
        offset = self.used[region]
        self.used[region] += size
        return offset

    def write(self, region: str, offset: int, data: bytes) -> None:
        cells = self._region(region)
        if offset < 0 or offset + len(data) > len(cells):
            raise CardMemoryError(f"{region}: write of {len(data)} bytes at {offset} is out of bounds "
                                  f"(size {len(cells)})")
        if self.clock is not None and data:
            self.clock.require(self.components[region])
            self.clock.charge(self.components[region], len(data))
        cells[offset:offset + len(data)] = data
        self.written[region] += len(data)

    def read(self, region: str, offset: int, length: int) -> bytes:
        cells = self._region(region)
        if offset < 0 or length < 0 or offset + length > len(cells):
            raise CardMemoryError(f"{region}: read of {length} bytes at {offset} is out of bounds")
        return bytes(cells[offset:offset + length])

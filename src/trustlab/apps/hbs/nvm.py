"""Persistent memory of the card, with Java Card transaction semantics.

Fields are fixed-size byte arrays (allocated at install time, as a Java Card
applet must). A single write is atomic (``Util.arrayCopy``); several writes
that must land together go in a transaction (``JCSystem.beginTransaction``):
if the card is torn before :meth:`commit`, none of them happened. Every read
and write is charged through the meter.
"""

from __future__ import annotations

from trustlab.apps.hbs.costs import CardMeter


class PersistentMemory:
    def __init__(self, sizes: dict[str, int], meter: CardMeter) -> None:
        self._data = {name: bytearray(size) for name, size in sizes.items()}
        self.meter = meter
        self._tx: list[tuple[str, int, bytes]] | None = None

    @property
    def total_bytes(self) -> int:
        return sum(len(v) for v in self._data.values())

    def size(self, name: str) -> int:
        return len(self._data[name])

    def read(self, name: str, off: int, n: int) -> bytes:
        self.meter.nvm_read(n)
        if self._tx:  # read-your-writes inside a transaction
            buf = bytearray(self._data[name][off:off + n])
            for fname, foff, data in self._tx:
                if fname == name:
                    for i, b in enumerate(data):
                        if off <= foff + i < off + n:
                            buf[foff + i - off] = b
            return bytes(buf)
        return bytes(self._data[name][off:off + n])

    def write(self, name: str, off: int, data: bytes) -> None:
        """An atomic write (Util.arrayCopy), or one logged write of the open transaction."""
        if off < 0 or off + len(data) > len(self._data[name]):
            raise IndexError(f"NVM write outside field {name!r}")
        # may tear: then nothing of this write lands
        self.meter.nvm_write(len(data), atomic=self._tx is None, in_transaction=self._tx is not None)
        if self._tx is not None:
            self._tx.append((name, off, bytes(data)))
        else:
            self._data[name][off:off + len(data)] = data

    def begin(self) -> None:
        if self._tx is not None:
            raise RuntimeError("nested NVM transaction")
        self._tx = []

    def commit(self) -> None:
        if self._tx is not None:
            self.meter.nvm_commit()
        tx, self._tx = self._tx or [], None
        for name, off, data in tx:
            self._data[name][off:off + len(data)] = data

    def tear(self) -> None:
        """Power loss: an open transaction is rolled back (its writes never land)."""
        self._tx = None

    # Direct access for personalisation (the issuer writes NVM before the card ships; not timed).
    def load(self, name: str, off: int, data: bytes) -> None:
        self._data[name][off:off + len(data)] = data

    def peek(self, name: str) -> bytes:
        return bytes(self._data[name])

"""What the card charges for, and the meter that charges it.

The applet never computes a time itself: every SHA-256 call, XOR/copy in RAM,
EEPROM read and write and APDU exchange is reported to a :class:`CardMeter`,
which charges the matching component of the card profile to the clock and
keeps raw operation counts (so the analytic model can be built from counts
measured on the real code, and priced with any profile afterwards).
"""

from __future__ import annotations

from collections import Counter
from typing import Callable

from trustlab.apps.hbs.hashes import sha256_blocks
from trustlab.timing.clock import Clock

# Profile components a Java Card profile must define for the HBS applet.
COMPONENTS = {
    "hash_call": "call",       # fixed cost of one MessageDigest.doFinal from the applet, incl. its Java glue
    "hash_block": "block",     # one SHA-256 compression (64-byte block)
    "ram_byte": "byte",        # XOR / copy of one byte in transient RAM (bytecode)
    "nvm_read_call": "call",   # fixed cost of one copy out of a persistent array (Util.arrayCopy)
    "nvm_read_byte": "byte",   # reading one byte of a persistent array
    "nvm_write_call": "call",  # fixed cost of one persistent write (page programming, transaction log)
    "nvm_write_byte": "byte",  # writing one byte of a persistent array
    "apdu": "call",            # one command/response round trip: reader, driver, applet dispatch
}
# Bytes on the wire are timed by the card's link model (trustlab.devices.card.link), not by the
# profile; the meter tallies that time as "link_ms" so counts can be priced without a clock.
LINK = "link_ms"


class CardTear(BaseException):
    """The card lost power: RAM is gone, an open transaction is rolled back.

    A BaseException on purpose: power loss is not an error the card's own code
    can catch and answer (the device model turns every Exception from an
    applet into status word 6F00); it ends the exchange with no response.
    """


class CardMeter:
    """Charges a clock (optional) and counts operations; can tear the card after N events."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock
        if clock is not None:
            clock.require(*COMPONENTS)
        self.counts: Counter[str] = Counter()
        self.tear_after: int | None = None  # events (hash calls + NVM writes) until a tear
        self.events = 0
        self.on_event: Callable[[str], None] | None = None

    def _charge(self, component: str, count: float) -> None:
        self.counts[component] += count
        if self.clock is not None:
            self.clock.charge(component, count)

    def _event(self, what: str) -> None:
        self.events += 1
        if self.tear_after is not None:
            self.tear_after -= 1
            if self.tear_after < 0:
                self.tear_after = None
                raise CardTear(what)

    # -- Meter protocol used by Hasher ----------------------------------------
    def hash(self, kind: str, nbytes: int) -> None:
        self._event(f"hash {kind}")
        self.counts[f"calls:{kind}"] += 1  # per-function tallies (not priced): F calls = chain steps
        self._charge("hash_call", 1)
        self._charge("hash_block", sha256_blocks(nbytes))

    def ram(self, nbytes: int) -> None:
        self._charge("ram_byte", nbytes)

    # -- persistent memory and link ------------------------------------------
    def nvm_read(self, nbytes: int) -> None:
        self._charge("nvm_read_call", 1)
        self._charge("nvm_read_byte", nbytes)

    def nvm_write(self, nbytes: int) -> None:
        self._event("nvm write")
        self._charge("nvm_write_call", 1)
        self._charge("nvm_write_byte", nbytes)

    def apdu(self, link_ms: float) -> None:
        """One exchange: the profile's round-trip overhead; the link time is charged by the device."""
        self._charge("apdu", 1)
        self.counts[LINK] += link_ms

    def snapshot(self) -> Counter[str]:
        return Counter(self.counts)


def price(counts: dict[str, float], means: dict[str, float]) -> float:
    """ms for a vector of operation counts under a profile's means."""
    return sum(c * means[k] for k, c in counts.items() if k in COMPONENTS) + counts.get(LINK, 0.0)

"""What the card charges for, and the meter that charges it.

The applet never computes a time itself: every SHA-256 call, XOR/copy in RAM,
EEPROM read and write and APDU exchange is reported to a :class:`CardMeter`,
which charges the matching component of the card profile to the clock and
keeps raw operation counts (so the analytic model can be built from counts
measured on the real code, and priced with any profile afterwards).
"""

from __future__ import annotations

from collections import Counter

from trustlab.apps.hbs.hashes import BLOCKS, KINDS, sha256_blocks
from trustlab.timing.clock import Clock

# Profile components a Java Card profile must define for the HBS applet.
COMPONENTS = {
    "hash_call": "call",       # fixed cost of one MessageDigest.doFinal from the applet, incl. its Java glue
    "hash_block": "block",     # one SHA-256 compression (64-byte block)
    "ram_byte": "byte",        # XOR / copy of one byte in transient RAM (bytecode)
    "nvm_read_call": "call",   # fixed cost of one copy out of a persistent array (Util.arrayCopy)
    "nvm_read_byte": "byte",   # reading one byte of a persistent array
    "nvm_write_call": "call",  # fixed cost of one non-atomic persistent write (Util.arrayCopyNonAtomic)
    "nvm_write_byte": "byte",  # programming one byte of a persistent array
    "nvm_tx_call": "call",     # what atomicity adds per update: transaction begin/commit (Util.arrayCopy, commit)
    "nvm_tx_byte": "byte",     # what atomicity adds per byte: its old value saved to the commit buffer
    "apdu": "call",            # one command/response round trip: reader, driver, applet dispatch
}
# Bytes on the wire are timed by the card's link model (trustlab.devices.card.link), not by the
# profile; the meter tallies that time as "link_ms" so counts can be priced without a clock.
LINK = "link_ms"
_KIND_INDEX = {kind: i for i, kind in enumerate(KINDS)}
_ZEROS = (0,) * (len(KINDS) + 1)


class CardTear(BaseException):
    """The card lost power: RAM is gone, an open transaction is rolled back.

    A BaseException on purpose: power loss is not an error the card's own code
    can catch and answer (the device model turns every Exception from an
    applet into status word 6F00); it ends the exchange with no response.
    """


class CardMeter:
    """Charges a clock (optional) and counts operations; can tear the card after N events.

    Hash calls are the meter's hot path (a signature makes tens of thousands),
    so they are tallied (calls per function, SHA-256 blocks), not charged one
    by one; the tally and the RAM bytes are charged to the clock in aggregate
    (``count x mean``, one charge per component) at the next persistent-memory
    access, APDU end, tear or :meth:`snapshot` - all inside the same card
    command, so every command's time and every total equals the per-call sum
    (up to float rounding). While a tear is armed, or if the profile gives hash
    or RAM costs a spread (one draw per call), each hash takes the checked
    path, as before.
    """

    _AGGREGATED = ("hash_call", "hash_block", "ram_byte")

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock
        if clock is not None:
            clock.require(*COMPONENTS)
        self._counts: Counter[str] = Counter()
        self._per_call = clock is not None and any(
            clock.profile[c].sd or clock.profile[c].samples for c in self._AGGREGATED)
        # hash calls per function (in KINDS order) and SHA-256 blocks, not yet counted; Hasher adds
        # to it directly through ``tally`` (the Meter protocol) unless every hash must be checked
        self._tally = [0] * (BLOCKS + 1)
        self._ram = 0
        self._tear_after: int | None = None
        self._checked = self._per_call  # True: every hash takes the checked path
        self.tally: list[int] | None = None if self._checked else self._tally

    @property
    def tear_after(self) -> int | None:
        """Events (hash calls + NVM writes) until a tear; None: no tear armed."""
        return self._tear_after

    @tear_after.setter
    def tear_after(self, value: int | None) -> None:
        self._tear_after = value
        self._checked = value is not None or self._per_call
        self.tally = None if self._checked else self._tally

    @property
    def events(self) -> int:
        """Hash calls and NVM writes so far."""
        return int(self.counts["hash_call"] + self.counts["nvm_write_call"])

    @property
    def counts(self) -> Counter[str]:
        self.flush()
        return self._counts

    def flush(self) -> None:
        """Charge the tallied hash calls, blocks and RAM bytes (in this order, as per call)."""
        tally = self._tally
        if tally[BLOCKS]:  # every hash is at least one block
            counts, n_calls = self._counts, 0
            for i, kind in enumerate(KINDS):
                if tally[i]:
                    counts["calls:" + kind] += tally[i]  # per-function tallies (not priced): F calls = chain steps
                    n_calls += tally[i]
            blocks = tally[BLOCKS]
            tally[:] = _ZEROS  # in place: it is also the public ``tally`` Hashers add to
            self._charge("hash_call", n_calls)
            self._charge("hash_block", blocks)
        if self._ram:
            ram, self._ram = self._ram, 0
            self._charge("ram_byte", ram)

    def _charge(self, component: str, count: float) -> None:
        self._counts[component] += count
        if self.clock is not None:
            self.clock.charge(component, count)

    def _event(self, what: str) -> None:
        if self._tear_after is not None:
            self._tear_after -= 1
            if self._tear_after < 0:
                self.tear_after = None
                self.flush()  # the work done before the power cut was done (and charged)
                raise CardTear(what)

    # -- Meter protocol used by Hasher ----------------------------------------
    def hash(self, kind: str, nbytes: int) -> None:
        """One hash call (Hasher adds to ``tally`` itself unless each hash must be checked)."""
        if self._checked:  # a tear may be due, or each call draws its own cost
            self._event("hash " + kind)
        self._tally[_KIND_INDEX[kind]] += 1
        self._tally[BLOCKS] += sha256_blocks(nbytes)
        if self._per_call:
            self.flush()

    def ram(self, nbytes: int) -> None:
        self._ram += nbytes
        if self._per_call:
            self.flush()

    # -- persistent memory and link ------------------------------------------
    def nvm_read(self, nbytes: int) -> None:
        self.flush()
        self._charge("nvm_read_call", 1)
        self._charge("nvm_read_byte", nbytes)

    def nvm_write(self, nbytes: int, atomic: bool = True, in_transaction: bool = False) -> None:
        """One persistent write of ``nbytes``.

        Java Card semantics, priced from JCAlgTest's two RAM->EEPROM copies:
        every write programs its bytes (``nvm_write_*``, Util.arrayCopyNonAtomic);
        an atomic one (Util.arrayCopy, or any write inside a transaction)
        also logs the old bytes (``nvm_tx_byte``); a stand-alone atomic write
        pays its own begin/commit (``nvm_tx_call``), a transaction pays it
        once, at :meth:`nvm_commit`.
        """
        self.flush()
        self._event("nvm write")
        self._charge("nvm_write_call", 1)
        self._charge("nvm_write_byte", nbytes)
        if atomic or in_transaction:
            self._charge("nvm_tx_byte", nbytes)
        if atomic and not in_transaction:
            self._charge("nvm_tx_call", 1)

    def nvm_commit(self) -> None:
        """JCSystem.commitTransaction: the transaction's one begin/commit cost."""
        self.flush()
        self._charge("nvm_tx_call", 1)

    def apdu(self, link_ms: float) -> None:
        """One exchange: the profile's round-trip overhead; the link time is charged by the device."""
        self.flush()
        self._charge("apdu", 1)
        self._counts[LINK] += link_ms

    def snapshot(self) -> Counter[str]:
        return Counter(self.counts)


def price(counts: dict[str, float], means: dict[str, float]) -> float:
    """ms for a vector of operation counts under a profile's means."""
    return sum(c * means[k] for k, c in counts.items() if k in COMPONENTS) + counts.get(LINK, 0.0)

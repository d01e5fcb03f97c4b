"""The offline digital wallet of the paper's Table I, and the fix to its ordering.

Parties: an *issuer* who sets the credit and signs the first token, a *buyer
device* (untrusted host + TPM running a virtual-counter prover) that holds the
current token, and *merchants* who are offline from the issuer and from each
other and trust only the issuer's directory and the TPM's AIK.

A purchase, as the paper's Table I orders it (``ordering="paper"``):

1. buyer sends its token ``S = Sign(ctrID || ctrVal || balance)``;
2. merchant challenges a READ of counter ``ctrID`` with nonce ``n1``;
3. buyer's TPM answers with an attested ``currCtrVal``;
4. if ``currCtrVal == ctrVal`` the merchant signs ``S1 = (ctrID, currCtrVal+1,
   balance - price)``, hands it over and asks the buyer to increment;
5. buyer stores ``S1`` and (supposedly) increments its counter.

The flaw: nothing makes the buyer do step 5. A buyer that keeps ``S1`` but
skips the increment still holds the old ``S`` whose ``ctrVal`` matches the
counter, so the next merchant accepts the old, larger balance: a double spend
no merchant can detect. (With the log-based scheme step 4's ``+1`` is also
wrong, because the physical counter is a global clock.)

Our ordering (``ordering="fixed"``): after step 3 the merchant sends a second
nonce ``n2``; the buyer increments *first* and returns the increment
certificate; the merchant verifies it (right counter, fresh nonce, value past
``currCtrVal``) and only then signs ``S1`` binding the value the certificate
proves. The old token is dead before the new one exists. (If the merchant
then fails to deliver ``S1`` the buyer's wallet is stuck until the issuer
re-enrols it: a liveness loss, never a double spend.)

``ordering="arithmetic"`` (hash-tree only) needs no merchant tokens at all: the
issuer's token is (counter, base value, credit) and the TPM-held *arithmetic*
counter is the amount spent, so balance = credit - (counter - base); the
merchant reads it, has the buyer add the price under a fresh nonce, and checks
the certified ``old + price``. Only the hash-tree scheme can do this (paper,
Sec. III-B3).

Every rejection raises :class:`~trustlab.apps.counters.base.VerificationError`
with a reason; :meth:`Merchant.sell` turns it into a :class:`Sale` record.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from trustlab.apps.counters.base import Answer, Prover, VerificationError, Verifier
from trustlab.apps.wallet.tokens import Directory, Signer, Token
from trustlab.timing.clock import Clock

ORDERINGS = ("paper", "fixed", "arithmetic")
VERIFY_COMPONENTS = ("host_verify", "host_hash")

CHEATS = ("skip-increment", "replay-old-token", "forge-balance")


class BuyerDevice:
    """The buyer's wallet: tokens in untrusted storage plus a counter prover.

    ``cheats`` switches on dishonest behaviour for the adversarial runs:
    ``skip-increment`` (keep ``S1``, never increment), ``replay-old-token``
    (present the previous token instead of the current one),
    ``forge-balance`` (present the current token with a raised balance).
    """

    def __init__(self, prover: Prover, counter: int, cheats: tuple[str, ...] = ()) -> None:
        unknown = set(cheats) - set(CHEATS)
        if unknown:
            raise ValueError(f"unknown cheat(s) {sorted(unknown)} (known: {', '.join(CHEATS)})")
        self.prover = prover
        self.counter = counter
        self.cheats = set(cheats)
        self.tokens: list[Token] = []

    @property
    def token(self) -> Token:
        return self.tokens[-1]

    def present_token(self) -> Token:
        """Round 1."""
        if "replay-old-token" in self.cheats and len(self.tokens) > 1:
            return self.tokens[-2]
        if "forge-balance" in self.cheats:
            t = self.token
            return Token(t.counter, t.value, t.balance + 1000, t.signer, t.signature)
        return self.token

    def read(self, nonce: bytes) -> Answer:
        """Round 3: the TPM's attested current value."""
        return self.prover.read(self.counter, nonce)

    def increment(self, nonce: bytes) -> Answer | None:
        """Round 5 (paper) / the certified increment (fixed); a cheat may decline."""
        if "skip-increment" in self.cheats:
            return None
        return self.prover.increment(self.counter, nonce)

    def add(self, delta: int, nonce: bytes) -> Answer | None:
        """Raise an arithmetic counter by ``delta`` (hash-tree scheme only)."""
        if "skip-increment" in self.cheats:
            return None
        add = getattr(self.prover, "add", None)
        if add is None:
            raise VerificationError("unsupported", f"the {self.prover.scheme} scheme has no arithmetic counters")
        return add(self.counter, delta, nonce)

    def store(self, token: Token) -> None:
        self.tokens.append(token)


class Issuer(Signer):
    """Sets the buyer's credit: reads the counter and signs the first token."""

    def __init__(self, name: str = "issuer") -> None:
        super().__init__(name)
        self.directory = Directory(self)

    def enrol(self, buyer: BuyerDevice, verifier: Verifier, credit: int) -> Token:
        if credit < 0:
            raise VerificationError("negative-balance", f"credit {credit} is negative")
        nonce = os.urandom(20)
        value = verifier.check_read(buyer.read(nonce), buyer.counter, nonce)
        token = self.sign_token(buyer.counter, value, credit)
        buyer.store(token)
        return token


@dataclass
class Sale:
    """One purchase attempt, as the merchant saw it."""

    merchant: str
    price: int
    accepted: bool
    reason: str = "ok"
    token: Token | None = None
    tpm_ms: float = 0.0
    verify_ms: float = 0.0
    host_ms: float = 0.0
    events: list[str] = field(default_factory=list)


class Merchant(Signer):
    """An offline merchant: trusts the issuer's directory and the TPM's AIK only."""

    def __init__(self, name: str, directory: Directory, verifier: Verifier, ordering: str = "fixed",
                 clock: Clock | None = None) -> None:
        if ordering not in ORDERINGS:
            raise ValueError(f"unknown ordering {ordering!r} (known: {', '.join(ORDERINGS)})")
        super().__init__(name)
        self.directory = directory
        self.verifier = verifier
        self.ordering = ordering
        self.clock = clock
        directory.certify(self)

    def _charge_token_check(self) -> None:
        if self.clock is not None:
            self.clock.charge("host_verify")

    def sell(self, buyer: BuyerDevice, price: int) -> Sale:
        """Run one purchase; never raises for protocol failures, returns the verdict."""
        sale = Sale(self.name, price, accepted=False)
        clock = self.clock
        t0 = clock.now_ms if clock else 0.0
        v0 = sum(clock.by_component.get(c, 0.0) for c in VERIFY_COMPONENTS) if clock else 0.0
        w0 = time.perf_counter()
        try:
            sale.token = self._purchase(buyer, price, sale)
            sale.accepted = True
        except VerificationError as exc:
            sale.reason = exc.reason
        sale.host_ms = (time.perf_counter() - w0) * 1000.0
        if clock:
            sale.verify_ms = sum(clock.by_component.get(c, 0.0) for c in VERIFY_COMPONENTS) - v0
            sale.tpm_ms = clock.now_ms - t0 - sale.verify_ms
        return sale

    def _purchase(self, buyer: BuyerDevice, price: int, sale: Sale) -> Token:
        if price <= 0:
            raise VerificationError("bad-price", f"price must be positive, got {price}")
        token = buyer.present_token()                                   # round 1
        self._charge_token_check()
        self.directory.check_token(token)
        if token.counter != buyer.counter:
            raise VerificationError("wrong-counter", f"token is for counter {token.counter}")
        n1 = os.urandom(20)                                             # round 2
        current = self.verifier.check_read(buyer.read(n1), token.counter, n1)   # round 3
        sale.events.append(f"read {current}")
        if self.ordering != "arithmetic" and current != token.value:   # round 4
            raise VerificationError("stale-token",
                                    f"token says counter {token.counter} = {token.value}, TPM attests {current}")
        new_balance = token.balance - price
        if new_balance < 0:
            raise VerificationError("insufficient-balance", f"balance {token.balance} < price {price}")
        if self.ordering == "arithmetic":
            if token.signer != self.directory.issuer_name:
                raise VerificationError("unknown-signer", "arithmetic wallets carry the issuer's token only")
            balance = token.balance - (current - token.value)
            if price > balance:
                raise VerificationError("insufficient-balance", f"balance {balance} < price {price}")
            n2 = os.urandom(20)
            answer = buyer.add(price, n2)
            if answer is None:
                raise VerificationError("no-increment", "buyer did not add the price to its counter")
            spent = self.verifier.check_increment(answer, token.counter, n2, after=current, delta=price)
            sale.events.append(f"spent counter {current} -> {spent}")
            return token
        if self.ordering == "paper":
            s1 = self.sign_token(token.counter, current + 1, new_balance)
            buyer.store(s1)                                             # round 5
            answer = buyer.increment(os.urandom(20))
            sale.events.append("increment skipped" if answer is None else "incremented (unchecked)")
            return s1
        n2 = os.urandom(20)
        answer = buyer.increment(n2)
        if answer is None:
            raise VerificationError("no-increment", "buyer did not increment its counter")
        new_value = self.verifier.check_increment(answer, token.counter, n2, after=current)
        sale.events.append(f"incremented to {new_value}")
        s1 = self.sign_token(token.counter, new_value, new_balance)
        buyer.store(s1)
        return s1

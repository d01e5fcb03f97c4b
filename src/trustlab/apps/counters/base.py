"""What every virtual-counter scheme offers, and how a verifier says no.

A scheme has two halves that never share state: a *prover* (the buyer's
device: untrusted host software plus its TPM) and a *verifier* (the merchant),
which holds only the AIK's public key and whatever the prover sends it. Every
operation is challenged with the verifier's fresh nonce and answered with
evidence the verifier checks on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from trustlab.errors import TrustlabError


class VerificationError(TrustlabError):
    """Evidence rejected; ``reason`` is a short machine-readable cause."""

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        super().__init__(f"rejected ({reason}){': ' + detail if detail else ''}")


@dataclass(frozen=True)
class Answer:
    """A prover's answer: the claimed value and the evidence for it."""

    counter: int
    value: int
    evidence: Any
    nonce: bytes


class Prover(Protocol):
    scheme: str
    counters: int

    def read(self, counter: int, nonce: bytes) -> Answer: ...
    def increment(self, counter: int, nonce: bytes) -> Answer: ...


class Verifier(Protocol):
    def check_read(self, answer: Answer, counter: int, nonce: bytes) -> int: ...
    def check_increment(self, answer: Answer, counter: int, nonce: bytes, after: int | None = None) -> int: ...

"""What every virtual-counter scheme offers, and how a verifier says no.

A scheme has two halves that never share state: a *prover* (the buyer's
device: untrusted host software plus its TPM) and a *verifier* (the merchant),
which holds only the AIK's public key and whatever the prover sends it. Every
operation is challenged with the verifier's fresh nonce and answered with
evidence the verifier checks on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from trustlab.errors import TrustlabError


FLAT_AT = 1 << 12  # counters seen before per-counter state (a dict) becomes a flat array


def flat_at() -> int:
    """Entries after which a per-counter dict moves to a flat array (4 bytes a counter).

    Early (4096, or the node storage's own threshold if lower): the array's size
    is fixed anyway, and the dict it replaces grew to ~10 MiB at 65536 counters,
    memory a 2^20-counter run did not get back before its peak.
    """
    merkle = _MERKLE or _merkle()  # (asked per request until the switch: no import statement per call)
    return min(FLAT_AT, merkle.DENSIFY_AT)


_MERKLE = None


def _merkle():
    """The engine's Merkle module, imported on first use (not at import: the CLI starts without the TPM)."""
    global _MERKLE
    from trustlab.devices.tpm12 import merkle

    _MERKLE = merkle
    return merkle


class VerificationError(TrustlabError):
    """Evidence rejected; ``reason`` is a short machine-readable cause."""

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        super().__init__(f"rejected ({reason}){': ' + detail if detail else ''}")


@dataclass(frozen=True, init=False)
class Answer:
    """A prover's answer: the claimed value and the evidence for it."""

    counter: int
    value: int
    evidence: Any
    nonce: bytes

    def __init__(self, counter: int, value: int, evidence: Any, nonce: bytes) -> None:
        # the generated __init__ without object.__setattr__ per field (one answer per request;
        # still frozen; tests/counters check these parameters are the fields)
        d = self.__dict__
        d["counter"], d["value"], d["evidence"], d["nonce"] = counter, value, evidence, nonce


class Prover(Protocol):
    scheme: str
    counters: int

    def read(self, counter: int, nonce: bytes) -> Answer: ...
    def increment(self, counter: int, nonce: bytes) -> Answer: ...


class Verifier(Protocol):
    def check_read(self, answer: Answer, counter: int, nonce: bytes) -> int: ...
    def check_increment(self, answer: Answer, counter: int, nonce: bytes, after: int | None = None) -> int: ...


# ---- the log-based schemes' shared verification logic (TPM 1.2 and TPM 2.0 ports) ----

def check_incremented(claimed: int, certified: int, after: int | None) -> int:
    """An increment answer claims what its certificate says and moves past ``after``."""
    if claimed != certified:
        raise VerificationError("value-mismatch", f"claimed {claimed}, certificate says {certified}")
    if after is not None and certified <= after:
        raise VerificationError("not-monotonic", f"value {certified} is not past {after}")
    return certified


def check_log_read(claimed: int, last: int, clock: int, since: Sequence[Any], counter: int,
                   check_cert: Callable[[Any], None]) -> int:
    """The log-based READ rule: the counter's value is ``last`` (its last increment, or the
    genesis value) iff the increment certificates since then are exactly ``last + 1 ..
    clock`` (contiguous, none lost or added) and none of them is for ``counter``.

    ``since`` holds certificates with ``.value`` and ``.counter``; ``check_cert``
    verifies each one's signature (scheme-specific).
    """
    if claimed != last:
        raise VerificationError("value-mismatch", f"claimed {claimed}, the log proves {last}")
    if clock < last:
        raise VerificationError("bad-log", f"clock {clock} is before the last increment {last}")
    if len(since) != clock - last:
        raise VerificationError("log-gap", f"{clock - last} increments since {last} but {len(since)} certificates")
    for i, cert in enumerate(since):
        if cert.value != last + 1 + i:
            raise VerificationError("log-gap", f"certificate #{i} has value {cert.value}, expected {last + 1 + i}")
        if cert.counter == counter:
            raise VerificationError("counter-changed", f"counter {counter} was incremented at {cert.value}")
        check_cert(cert)
    return last

"""Drive a counter scheme with a request stream and record what every request cost.

One request is one round trip: the verifier picks a nonce, the prover answers
(its TPM charging the clock through the engine), the verifier checks the
answer (charging ``host_verify`` / ``host_hash`` to the same clock). The cost of
the request is the clock's advance over that round trip, so TPM time and
verification time add up on one timeline, as they would for a merchant
waiting on a buyer's device.

Records are flat (:class:`OpRecord`); :func:`summarize` turns those of one
run into the experiment's JSON row. The model column comes from the scheme's
analytic formula evaluated for the same request (same ``|Ut|``), never from the
simulation.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol, Sequence

from trustlab.apps.counters.base import Prover, Verifier
from trustlab.apps.workloads import INCREMENT, READ, Request
from trustlab.timing.clock import Clock


class Scheme(Protocol):
    """A prover, its independent verifier, and the paper's model for it."""

    name: str
    prover: Prover
    verifier: Verifier
    clock: Clock

    def model_ms(self, op: str, counter: int, ut: int) -> float | None: ...
    def updates_since(self, counter: int) -> int: ...


@dataclass(frozen=True)
class OpRecord:
    """One timed request."""

    index: int
    counter: int
    op: str
    ut: int
    ms: float
    model_ms: float | None
    verify_ms: float
    paper_ms: float | None = None


def run(scheme: Scheme, requests: Iterable[Request], seed: int = 0,
        progress: Callable[[int], None] | None = None) -> list[OpRecord]:
    """Execute every request for real; return records of the timed ones."""
    rng = random.Random(seed)
    clock = scheme.clock
    last_value: dict[int, int] = {}
    records: list[OpRecord] = []
    for i, req in enumerate(requests):
        nonce = rng.randbytes(20)
        ut = scheme.updates_since(req.counter)
        model = scheme.model_ms(req.op, req.counter, ut)
        paper = scheme.paper_model_ms(req.op, req.counter, ut) if hasattr(scheme, "paper_model_ms") else None
        t0 = clock.now_ms
        v0 = clock.by_component.get("host_verify", 0.0) + clock.by_component.get("host_hash", 0.0)
        if req.op == INCREMENT:
            answer = scheme.prover.increment(req.counter, nonce)
        elif req.op == READ:
            answer = scheme.prover.read(req.counter, nonce)
        else:
            raise ValueError(f"unknown op {req.op!r}")
        if getattr(answer.evidence, "signature", True):
            if req.op == INCREMENT:
                value = scheme.verifier.check_increment(answer, req.counter, nonce,
                                                        after=last_value.get(req.counter))
            else:
                value = scheme.verifier.check_read(answer, req.counter, nonce)
        else:  # batch attestation: this operation is covered by a later signed one
            value = answer.value
        last_value[req.counter] = value
        if req.timed:
            verify = clock.by_component.get("host_verify", 0.0) + clock.by_component.get("host_hash", 0.0) - v0
            records.append(OpRecord(i, req.counter, req.op, ut, clock.now_ms - t0, model, verify, paper))
        if progress is not None:
            progress(i)
    return records


def describe(values_ms: Sequence[float]) -> dict[str, float]:
    """min/max/avg/median/sd in seconds (the paper's Table IX columns)."""
    if not values_ms:
        return {"min": 0.0, "max": 0.0, "avg": 0.0, "median": 0.0, "sd": 0.0}
    s = [v / 1000.0 for v in values_ms]
    return {"min": min(s), "max": max(s), "avg": statistics.fmean(s), "median": statistics.median(s),
            "sd": statistics.pstdev(s) if len(s) > 1 else 0.0}


def summarize(records: Sequence[OpRecord], *, scheme: str, op: str, profile: str, counters: int) -> dict:
    """The experiment's JSON row for one (scheme, op, profile, counters) run."""
    chosen = [r for r in records if r.op == op]
    return {
        "scheme": scheme,
        "op": op,
        "profile": profile,
        "counters": counters,
        "requests": len(chosen),
        "total_s": sum(r.ms for r in chosen) / 1000.0,
        "per_op_s": describe([r.ms for r in chosen]),
        "max_gap": max((r.ut for r in chosen), default=0),
        "model_s": (None if any(r.model_ms is None for r in chosen)
                    else sum(r.model_ms for r in chosen) / 1000.0),
        "verify_s": sum(r.verify_ms for r in chosen) / 1000.0,
        "paper_formula_s": (None if any(r.paper_ms is None for r in chosen)
                            else sum(r.paper_ms for r in chosen) / 1000.0),
    }

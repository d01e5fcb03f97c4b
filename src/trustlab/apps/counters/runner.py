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

A run of 10^6 requests must fit in little memory, so :func:`run` keeps no
record objects: the requests are consumed as they come (an iterable, e.g. a
:class:`~trustlab.apps.workloads.RequestStream`), each timed request is
written as one fixed-size binary row to a temporary file - the run's trace -
and :class:`Records` reads that file back column by column (or as
:class:`OpRecord` objects, one at a time) when the results are summarised.
The verifier's memory of the last value per counter is a flat array.
"""

from __future__ import annotations

import math
import random
import statistics
import struct
import tempfile
from array import array
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Protocol, Sequence

from trustlab.apps.counters.base import Prover, Verifier, flat_at
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


@dataclass(frozen=True, init=False)
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

    def __init__(self, index: int, counter: int, op: str, ut: int, ms: float, model_ms: float | None,
                 verify_ms: float, paper_ms: float | None = None) -> None:
        # What the generated __init__ does, without a frozen dataclass's object.__setattr__ per field
        # (two thirds of its cost; every record a run's results are read back as is one of these,
        # as TreeCert). Still frozen, compared and hashed by its fields (tests/counters).
        d = self.__dict__
        d["index"], d["counter"], d["op"], d["ut"] = index, counter, op, ut
        d["ms"], d["model_ms"], d["verify_ms"], d["paper_ms"] = ms, model_ms, verify_ms, paper_ms


_OPS = ("increment", "read")  # row codes (workloads.INCREMENT, workloads.READ)
_ROW = struct.Struct("<qqbqdddd")  # index, counter, op, ut, ms, model_ms, verify_ms, paper_ms (NaN: None)
_SPOOL_ROWS = 4096  # rows buffered before a write
_PACK_INTO, _ROW_SIZE, _NAN = _ROW.pack_into, _ROW.size, math.nan


def _none_nan(x: float | None) -> float:
    return math.nan if x is None else x


def _nan_none(x: float) -> float | None:
    return None if x != x else x


class Records(Sequence[OpRecord]):
    """The timed requests of a run, in a temporary file (57 bytes a request), read back on demand."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="trustlab-records-")
        self._buffer = bytearray(_SPOOL_ROWS * _ROW.size)  # one fixed buffer: no reallocation per row
        self._pending = 0
        self._rows = 0

    def append(self, r: OpRecord) -> None:
        self.add(r.index, r.counter, r.op, r.ut, r.ms, r.model_ms, r.verify_ms, r.paper_ms)

    def add(self, index: int, counter: int, op: str, ut: int, ms: float, model_ms: float | None,
            verify_ms: float, paper_ms: float | None = None) -> None:
        """:meth:`append` of the record with these fields (no record object made)."""
        pending = self._pending
        _PACK_INTO(self._buffer, pending * _ROW_SIZE, index, counter, _OPS.index(op), ut, ms,
                   _NAN if model_ms is None else model_ms, verify_ms, _NAN if paper_ms is None else paper_ms)
        self._pending = pending + 1
        self._rows += 1
        if pending + 1 == _SPOOL_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._file.seek(0, 2)
            self._file.write(memoryview(self._buffer)[:self._pending * _ROW.size])
            self._pending = 0

    def __len__(self) -> int:
        return self._rows

    def _tuples(self) -> Iterator[tuple]:
        self._flush()
        offset, end = 0, self._rows * _ROW.size
        while offset < end:  # its own position: two readers (or a reader and an index) may interleave
            self._file.seek(offset)
            chunk = self._file.read(min(_SPOOL_ROWS * _ROW.size, end - offset))
            offset += len(chunk)
            yield from _ROW.iter_unpack(chunk)

    def __iter__(self) -> Iterator[OpRecord]:
        for i, c, op, ut, ms, model, verify, paper in self._tuples():
            yield OpRecord(i, c, _OPS[op], ut, ms, _nan_none(model), verify, _nan_none(paper))

    def __getitem__(self, item):  # type: ignore[override]
        if isinstance(item, slice):
            return [self[i] for i in range(*item.indices(self._rows))]
        if item < 0:
            item += self._rows
        if not 0 <= item < self._rows:
            raise IndexError(item)
        self._flush()
        self._file.seek(item * _ROW.size)
        i, c, op, ut, ms, model, verify, paper = _ROW.unpack(self._file.read(_ROW.size))
        return OpRecord(i, c, _OPS[op], ut, ms, _nan_none(model), verify, _nan_none(paper))

    _FIELDS = {"ut": 3, "ms": 4, "model_ms": 5, "verify_ms": 6, "paper_ms": 7}

    def column(self, name: str, op: str | None = None) -> Iterator[float]:
        """One field of the rows of ``op`` (all with None), in request order (NaN: None), streamed."""
        at, code = self._FIELDS[name], None if op is None else _OPS.index(op)
        return (row[at] for row in self._tuples() if code is None or row[2] == code)

    def columns(self, op: str | None = None) -> dict[str, array]:
        """The rows of ``op`` as arrays: ut, ms, model_ms, verify_ms, paper_ms (NaN: None)."""
        return {name: array("q" if name == "ut" else "d", self.column(name, op)) for name in self._FIELDS}

    def close(self) -> None:
        self._file.close()


class _LastValues:
    """The verifier's last accepted value per counter: a dict, then (once many counters were seen)
    a flat array of them (32 bits each), the dict keeping only what does not fit."""

    def __init__(self, counters: int | None) -> None:
        self._counters = counters if counters and counters <= 1 << 24 else None
        self._dense: array | None = None
        self._sparse: dict[int, int] = {}

    def get(self, counter: int) -> int | None:
        if counter in self._sparse:  # values that do not fit the array's 32 bits
            return self._sparse[counter]
        if self._dense is not None and 0 <= counter < len(self._dense):
            v = self._dense[counter]
            return None if v == 0xFFFFFFFF else v
        return None

    def set(self, counter: int, value: int) -> None:
        if self._dense is not None and 0 <= counter < len(self._dense) and 0 <= value < 0xFFFFFFFF:
            self._dense[counter] = value
            self._sparse.pop(counter, None)
        else:
            self._sparse[counter] = value
            if self._dense is None and self._counters and len(self._sparse) >= flat_at():
                sparse, self._sparse = self._sparse, {}
                self._dense = array("I", [0xFFFFFFFF]) * self._counters  # 4 bytes a counter; all-ones: none
                for c, v in sparse.items():
                    self.set(c, v)


def run(scheme: Scheme, requests: Iterable[Request], seed: int = 0,
        progress: Callable[[int], None] | None = None) -> Records:
    """Execute every request for real (one at a time, as they come); return records of the timed ones.

    (Methods and dictionaries are looked up once per run, not per request: a
    10^6-request run makes this loop's own work a measurable share.)
    """
    rng = random.Random(seed)
    randbytes = rng.randbytes
    clock = scheme.clock
    last_value = _LastValues(getattr(scheme.prover, "counters", None))
    last_get, last_set = last_value.get, last_value.set
    records = Records()
    add = records.add
    component = clock.by_component.get
    paper_model = getattr(scheme, "paper_model_ms", None)
    updates_since, model_ms = scheme.updates_since, scheme.model_ms
    prover, verifier = scheme.prover, scheme.verifier
    increment, read = prover.increment, prover.read
    check_increment, check_read = verifier.check_increment, verifier.check_read
    for i, req in enumerate(requests):
        nonce = randbytes(20)
        counter, op = req.counter, req.op
        ut = updates_since(counter)
        model = model_ms(op, counter, ut)
        paper = paper_model(op, counter, ut) if paper_model is not None else None
        t0 = clock.now_ms
        v0 = component("host_verify", 0.0) + component("host_hash", 0.0)
        if op == INCREMENT:
            answer = increment(counter, nonce)
        elif op == READ:
            answer = read(counter, nonce)
        else:
            raise ValueError(f"unknown op {op!r}")
        if getattr(answer.evidence, "signature", True):
            if op == INCREMENT:
                value = check_increment(answer, counter, nonce, after=last_get(counter))
            else:
                value = check_read(answer, counter, nonce)
        else:  # batch attestation: this operation is covered by a later signed one
            value = answer.value
        last_set(counter, value)
        if req.timed:
            verify = component("host_verify", 0.0) + component("host_hash", 0.0) - v0
            add(i, counter, op, ut, clock.now_ms - t0, model, verify, paper)
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
    """The experiment's JSON row for one (scheme, op, profile, counters) run.

    Reads :class:`Records` column by column; the sums run over the same values
    in the same order as over a list of records, so the figures are identical.
    """
    if isinstance(records, Records):  # one field at a time off the disk: only the times are held
        ms = array("d", records.column("ms", op))
        ut = records.column("ut", op)
        verify = records.column("verify_ms", op)
        model_s = (None if any(x != x for x in records.column("model_ms", op))
                   else sum(records.column("model_ms", op)) / 1000.0)
        paper_s = (None if any(x != x for x in records.column("paper_ms", op))
                   else sum(records.column("paper_ms", op)) / 1000.0)
    else:
        chosen = [r for r in records if r.op == op]
        ms, ut, verify = [r.ms for r in chosen], [r.ut for r in chosen], [r.verify_ms for r in chosen]
        model_s = (None if any(r.model_ms is None for r in chosen)
                   else sum(r.model_ms for r in chosen) / 1000.0)
        paper_s = (None if any(r.paper_ms is None for r in chosen)
                   else sum(r.paper_ms for r in chosen) / 1000.0)
    return {
        "scheme": scheme,
        "op": op,
        "profile": profile,
        "counters": counters,
        "requests": len(ms),
        "total_s": sum(ms) / 1000.0,
        "per_op_s": describe(ms),
        "max_gap": max(ut, default=0),
        "model_s": model_s,
        "verify_s": sum(verify) / 1000.0,
        "paper_formula_s": paper_s,
    }

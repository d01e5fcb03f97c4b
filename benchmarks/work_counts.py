"""The host's work per unit of issue 24's two framework ratios, counted instead of timed.

    python -m benchmarks.work_counts [hashtree|oracle|oiap ...] [--top N] [--json]

``bench_speed`` times the hash-tree increment and the oracle run against their crypto
on a shared machine, where one run's ratio moves by several percent with the
neighbours' load. These counts do not move: the Python calls, the C calls and the
CPython bytecodes executed (``sys.setprofile`` and ``sys.settrace`` with opcode
events; compiled extensions such as the mypyc ``merkle`` count as the C calls into
them) per

* ``hashtree``: one unsigned increment at 2^20 counters through the whole stack, as
  ``bench_speed``'s hash-tree part drives it (the runner, the prover and its tree,
  the client, the engine, reading the records back), after the same warm-up;
* ``oracle``: one run of the 5-party oracle study as ``trustlab run oracle`` runs it;
* ``oiap``: one TPM_OIAP + TPM_CMK_ApproveMA pair (an owner-authorized command with a
  one-shot session), ``bench_speed``'s ``authorized_pair``.

``--top`` lists the functions with the most bytecodes per unit: where the Python
work is, and so what a structural change can remove. Counting makes a run some
hundred times slower; the counts, not the times, are the figures here.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from typing import Any, Callable


def _hashtree() -> tuple[Callable[[], object], int]:
    from trustlab.apps import workloads as w
    from trustlab.apps.counters import schemes
    from trustlab.apps.counters.runner import run as run_requests
    from trustlab.timing import registry

    profile = registry.load("atmel-counters-2010").without_spread()
    ids = [int(i) for i in w.zipf_ycsb(1 << 20, 60_000, seed=1, scrambled=True)]
    built = schemes.build("hashtree", profile, 1 << 20, seed=1, attest_every=1000)
    reqs = w.make_requests(ids, "increment")
    at = 0
    while not isinstance(built.prover.tree.nodes, bytearray) and at < 40_000:  # bench_speed's warm-up
        run_requests(built, reqs[at:at + 1000], seed=at)
        at += 1000
    part = reqs[at + 1:at + 1000]  # 999 increments, none signed (the AIK signs every 1000th)

    def chunk() -> None:
        for _ in run_requests(built, part, seed=3) or ():
            pass

    return chunk, len(part)


def _oracle() -> tuple[Callable[[], object], int]:
    from trustlab.experiments.registry import run_argv

    argv = ["--profile", "infineon-2010", "--parties", "5", "--queries", "3"]
    run_argv("oracle", argv)  # imports and caches, as bench_speed's warm-up
    return (lambda: run_argv("oracle", argv)), 1


def _oiap() -> tuple[Callable[[], object], int]:
    from trustlab.apps import keypool, oracle as app
    from trustlab.devices.tpm12 import MemoryNVStore, Tpm12
    from trustlab.timing.clock import Clock
    from trustlab.timing.registry import load

    tpm = Tpm12(Clock(load("infineon-2010")), nv=MemoryNVStore(), keygen=keypool.cursor())
    tpm.TPM_TakeOwnership(app.OWNER, app.SRK)
    digest = bytes(20)
    tpm.TPM_CMK_ApproveMA(app.OWNER, digest)

    def pairs() -> None:
        for _ in range(100):
            tpm.TPM_CMK_ApproveMA(app.OWNER, digest)

    return pairs, 100


UNITS: dict[str, tuple[str, Callable[[], tuple[Callable[[], object], int]]]] = {
    "hashtree": ("per 2^20 hash-tree increment", _hashtree),
    "oracle": ("per 5-party oracle run", _oracle),
    "oiap": ("per TPM_OIAP + TPM_CMK_ApproveMA pair", _oiap),
}


def count(fn: Callable[[], object], units: int) -> dict[str, Any]:
    """Python calls, C calls and bytecodes per unit of ``fn()`` (which makes ``units`` units), and the
    bytecodes per unit of each function (``file:line name``)."""
    calls = {"python": 0, "c": 0}
    ops: collections.Counter[tuple[str, int, str]] = collections.Counter()

    def profiler(frame, event, arg) -> None:
        if event == "call":
            calls["python"] += 1
        elif event == "c_call":
            calls["c"] += 1

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        code = frame.f_code
        key = (code.co_filename, code.co_firstlineno, code.co_name)

        def opcodes(frame, event, arg):
            if event == "opcode":
                ops[key] += 1
            return opcodes
        return opcodes

    sys.setprofile(profiler)
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
        sys.setprofile(None)
    by_function = {f"{_short(f)}:{line} {name}": n / units for (f, line, name), n in ops.most_common()}
    return {"python_calls": calls["python"] / units, "c_calls": calls["c"] / units,
            "bytecodes": sum(ops.values()) / units, "bytecodes_by_function": by_function}


def _short(filename: str) -> str:
    for marker in ("/src/", "/lib/python"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.work_counts", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("units", nargs="*", choices=list(UNITS) + [[]], metavar="UNIT",
                        help=f"what to count (default all: {', '.join(UNITS)})")
    parser.add_argument("--top", type=int, default=15, help="functions listed by bytecodes per unit (default 15)")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    out: dict[str, Any] = {}
    for name in args.units or UNITS:
        label, setup = UNITS[name]
        fn, units = setup()
        out[name] = count(fn, units)
        out[name]["unit"] = label
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for name, c in out.items():
        print(f"{name} ({c['unit']}): {c['python_calls']:.1f} Python calls, {c['c_calls']:.1f} C calls, "
              f"{c['bytecodes']:.0f} bytecodes")
        for where, n in list(c["bytecodes_by_function"].items())[:args.top]:
            print(f"  {n:9.1f}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One flagship run in its own process: ``SAVE NAME ARGV...`` -> run one experiment, write its record.

Both ways a flagship run starts use it: a fresh ``python -c`` (``cli/flagship.py``)
and a fork of the preloaded server (``cli/_forkserver.py``); it imports neither.
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path

from trustlab.errors import TrustlabError, one_line


def child_main(argv: list[str]) -> int:
    """In the child process: ``SAVE NAME ARGV...`` -> run one experiment, write its record.

    Equivalent to ``trustlab run NAME ARGV --save SAVE`` but imports only the
    experiment it runs, which saves seconds per run on a small machine.
    """
    from trustlab.experiments.registry import parse_args, run_experiment
    from trustlab.report.records import write_json_atomic

    save, name, rest = Path(argv[0]), argv[1], argv[2:]
    start_cpu = _process_cpu()
    try:
        result = run_experiment(name, parse_args(name, rest))
    except TrustlabError as exc:
        print(f"trustlab: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    # Host CPU of this run (its own and its reaped children's, e.g. swtpm), so a flagship's cost can
    # be split by study (benchmarks/bench_flagship.py); host measurements, like wall_s, not figures.
    cpu = _process_cpu()
    result.meta.update(process_cpu_s=cpu, startup_cpu_s=start_cpu)
    write_json_atomic(save, result.to_record())
    return 0


def _process_cpu() -> float:
    """User + system CPU seconds of this process and of the children it has waited for."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

"""Reports: result records in, one self-contained HTML page plus CSV/JSON files out.

``write_report(records, out_dir)`` is what ``trustlab report`` and
``trustlab flagship`` call. The page shows, per run, the published figures
beside the model and the simulation with the error, the plots the experiment
asked for, its data tables, and where every number came from (profiles with
versions and sources, tool versions, seed, wall time).
"""

from typing import Any

__all__ = ["write_report"]


def __getattr__(name: str) -> Any:
    """``write_report`` on first use: importing a report helper (records, export) must not load
    the writer and everything it draws with - every flagship child and sweep worker imports those."""
    if name == "write_report":
        from trustlab.report.writer import write_report

        return write_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

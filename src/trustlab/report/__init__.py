"""Reports: result records in, one self-contained HTML page plus CSV/JSON files out.

``write_report(records, out_dir)`` is what ``trustlab report`` and
``trustlab flagship`` call. The page shows, per run, the published figures
beside the model and the simulation with the error, the plots the experiment
asked for, its data tables, and where every number came from (profiles with
versions and sources, tool versions, seed, wall time).
"""

from trustlab.report.writer import write_report

__all__ = ["write_report"]

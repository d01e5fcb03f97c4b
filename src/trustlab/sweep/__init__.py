"""Sweeps: the cartesian product of an experiment's parameters, run locally or on Dask, resumable.

``trustlab sweep SPEC.toml`` loads a :class:`~trustlab.sweep.spec.SweepSpec`,
skips the points already in its cache and runs the rest with a progress bar.
"""

from trustlab.sweep.runner import SweepOutcome, run_sweep
from trustlab.sweep.spec import Point, SweepSpec, load, parse

__all__ = ["Point", "SweepOutcome", "SweepSpec", "load", "parse", "run_sweep"]

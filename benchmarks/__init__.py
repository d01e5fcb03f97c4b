"""On-demand benchmarks: ``python -m benchmarks [NAME ...] [--quick]``.

Each ``bench_*.py`` module exposes ``run(quick: bool) -> dict`` returning the
figures its issue asks for (ratios measured within one run, so they compare
across machines). Results go to ``out/benchmarks/NAME.json`` and a summary.
"""

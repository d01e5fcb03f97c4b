"""Named experiments: each study of the papers, runnable as ``trustlab run NAME``.

An experiment module in this package defines a class decorated with
:func:`trustlab.experiments.registry.experiment`; it is discovered on import of
the registry, so adding a study never edits a shared file.
"""

"""Progress bars for long experiment runs: tqdm on stderr, only where someone watches.

A bar is shown only while ``trustlab run`` runs an experiment (:func:`watched`: never inside a
sweep's or the flagship's runs, which have bars of their own), only when stderr is a terminal
(stdout stays the table or the ``--json`` document), and only for a long run: one the experiment
knows to be long (``long=True``), or any run still going after :data:`DELAY_S` seconds
(``long=None``, tqdm's ``delay``) - a short run prints nothing. tqdm is imported only when a bar
is shown, so ``--help`` and short runs do not pay for it.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Iterator

DELAY_S = 2.0
"""Seconds a run of unknown length goes on before its bar appears."""

_watched = False


@contextlib.contextmanager
def watched() -> Iterator[None]:
    """Meanwhile (``trustlab run``'s experiment), long runs may show a bar."""
    global _watched
    before, _watched = _watched, True
    try:
        yield
    finally:
        _watched = before


class _NoBar:
    """What a hidden bar is: every call does nothing."""

    def update(self, n: float = 1) -> None:
        pass

    def set_description_str(self, text: str, refresh: bool = True) -> None:
        pass

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> "_NoBar":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def bar(total: float, desc: str, unit: str, *, long: bool | None = None, off: bool = False) -> Any:
    """A tqdm bar over ``total`` ``unit``s on stderr, or one that does nothing: ``off`` (``--no-progress``), a
    run the experiment knows to be short (``long=False``), not under :func:`watched`, or stderr not a terminal.
    ``long=None``: shown once the run has gone on for :data:`DELAY_S` seconds."""
    stream = sys.stderr
    if off or long is False or not _watched or stream is None or not stream.isatty():
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=stream, leave=False, dynamic_ncols=True,
                delay=0.0 if long else DELAY_S, mininterval=0.5)


def phased(progress_bar: Any, name: str) -> Callable[[str], None]:
    """A ``step(phase)`` callback for ``progress_bar``: one step done, the description ``name phase`` on a change."""
    shown = [""]

    def step(phase: str) -> None:
        if phase != shown[0]:
            shown[0] = phase
            progress_bar.set_description_str(f"{name} {phase}", refresh=False)  # shown at the next update
        progress_bar.update(1)
    return step

"""Errors a user can act on.

Every error that reaches the command line is a :class:`TrustlabError`; the CLI
prints its message as one line and exits non-zero, so a message must name what
is wrong and where (file, line, component, column) on its own.
"""

from __future__ import annotations

from typing import Iterable


class TrustlabError(Exception):
    """An error caused by input the user can fix; printed without a traceback."""


class ProfileError(TrustlabError):
    """A profile is missing, malformed, or lacks a component a command needs."""


class FormulaError(TrustlabError):
    """A command has no cost formula, or a formula is malformed."""


class FitError(TrustlabError):
    """Measurements cannot determine the requested parameters."""


def one_line(text: str) -> str:
    """``text`` with control characters escaped (a user's file can put a newline or a form feed
    into a message through a column name or value): an error stays one line."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text.strip())


EXCERPT_CHARS = 60


def excerpt(text: object, limit: int = EXCERPT_CHARS) -> str:
    """``repr``-like quote of a user's value, one line and at most about ``limit`` characters.

    Why: an error quotes the offending line or value, and a 2 MB line must not become an
    8 MB message; the length of what was cut is said instead."""
    text = str(text)
    cut = len(text) > limit
    shown = one_line(text[:limit])
    return f"'{shown}'" + (f"... ({len(text)} characters)" if cut else "")


def choice(value: object, allowed: Iterable[str], field: str, where: str) -> str:
    """``value`` stripped and lower-cased when it is one of ``allowed``; else the one-line error
    ``{where}: {field} = {value}: use one of ...`` (the value quoted by :func:`excerpt`).

    Why: every keyword a user or a data file picks from a fixed list (a build kind, a lineage, a
    Keccak implementation) is read the same forgiving way and refused with the same message."""
    options = tuple(allowed)
    key = str(value).strip().lower()
    if key not in options:
        raise TrustlabError(f"{where}: {field} = {excerpt(value)}: use one of {', '.join(options)}")
    return key

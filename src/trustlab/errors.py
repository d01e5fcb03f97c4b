"""Errors a user can act on.

Every error that reaches the command line is a :class:`TrustlabError`; the CLI
prints its message as one line and exits non-zero, so a message must name what
is wrong and where (file, line, component, column) on its own.
"""

from __future__ import annotations

from pathlib import Path


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


def read_user_text(path: Path, what: str, max_bytes: int | None = None) -> str:
    """A user-named file's text (bounded, see :mod:`trustlab.limits`); any fault is a one-line TrustlabError."""
    from trustlab import limits  # limits builds on this module

    return limits.read_text(path, what, max_bytes)

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


def read_user_text(path: Path, what: str) -> str:
    """A user-named file's text; a missing or unreadable file is a one-line TrustlabError."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TrustlabError(f"{path}: no such {what}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TrustlabError(f"{path}: cannot read ({exc})") from None

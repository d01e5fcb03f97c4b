"""Errors a user can act on.

Every error that reaches the command line is a :class:`TrustlabError`; the CLI
prints its message as one line and exits non-zero, so a message must name what
is wrong and where (file, line, component, column) on its own.
"""


class TrustlabError(Exception):
    """An error caused by input the user can fix; printed without a traceback."""


class ProfileError(TrustlabError):
    """A profile is missing, malformed, or lacks a component a command needs."""


class FormulaError(TrustlabError):
    """A command has no cost formula, or a formula is malformed."""


class FitError(TrustlabError):
    """Measurements cannot determine the requested parameters."""

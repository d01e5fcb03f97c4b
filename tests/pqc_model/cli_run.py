"""Run ``trustlab`` in-process for the pqc_model tests: exit code, stdout and stderr, as a shell would see them."""

from __future__ import annotations

import contextlib
import io

from trustlab.cli import main


def run(*argv: str) -> tuple[int, str, str]:
    """``trustlab *argv``'s (exit code, stdout, stderr); argparse's SystemExit becomes its code (2 if none)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
    return rc, out.getvalue(), err.getvalue()

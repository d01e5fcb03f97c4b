"""The ``trustlab`` command.

Subcommands live in modules of this package, each exposing
``register(subparsers)``; experiments are added to ``trustlab run`` by the
experiment registry. A new module is picked up without touching this file.
Errors a user can fix are printed as one line, never as a traceback.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator, Sequence

from trustlab import __version__
from trustlab.argtypes import OneLineParser
from trustlab.errors import TrustlabError, one_line
from trustlab.plugins import import_submodules

MAX_MESSAGE = 2000  # characters of one error line


def _subcommand_module(argv: Sequence[str]) -> str | None:
    """The module that registers the subcommand ``argv`` names, if it names one (else None).

    A subcommand is registered by the module of the same name; building only
    its parser spares the import of every other subcommand's module. Anything
    else (no subcommand, ``--help``, a typo) gets the whole parser.
    """
    first = next((a for a in argv if not a.startswith("-")), None)
    if first is None or first.startswith("_") or not first.isidentifier() or argv[0] != first:
        return None
    import importlib.util

    return first if importlib.util.find_spec(f"{__name__}.{first}") is not None else None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command's parser: every subcommand, or only the one of module ``only``."""
    parser = OneLineParser(
        prog="trustlab",
        description="A what-if laboratory for trusted hardware: run protocols on TPMs, firmware TPMs "
        "and smart cards at the speed of a real (or imagined) chip.",
    )
    parser.add_argument("--version", action="version", version=f"trustlab {__version__}")
    sub = parser.add_subparsers(dest="subcommand", metavar="COMMAND", required=True)
    if only is not None:
        import importlib

        modules = [importlib.import_module(f"{__name__}.{only}")]
    else:
        modules = import_submodules(sys.modules[__name__])
    for module in modules:
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    if only is not None and only not in sub.choices:  # a module registering other names: all of them
        return build_parser()
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, as Ctrl-C's KeyboardInterrupt is: every ``finally`` and
    context manager on the way out runs (a swtpm's temporary state directory is removed, children stopped)."""


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """While a command runs, SIGTERM raises :class:`Terminated` in the main thread instead of ending the
    process at once. A forked child that inherited the handler (a worker) dies of SIGTERM as before."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pid = os.getpid()

    def handler(signum: int, frame: object) -> None:
        if os.getpid() != pid:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(_subcommand_module(argv))
    try:
        with _sigterm_unwinds():
            args = parser.parse_args(argv)  # an argument type may raise TrustlabError (e.g. --seed)
            return int(args.handler(args) or 0)
    except TrustlabError as exc:
        message = one_line(str(exc))
        if len(message) > MAX_MESSAGE:  # a last guard: no input may turn an error into megabytes
            message = f"{message[:MAX_MESSAGE]}... ({len(message)} characters)"
        print(f"trustlab: error: {message}", file=sys.stderr)
        return 2
    except Terminated:
        print("trustlab: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("trustlab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The command line's argument parser: a usage error is one line, like every other error.

argparse prints the usage (often wrapped over several lines) and then the error; a user
(or a script reading stderr) gets the message buried on the last line. Here the error is
one line naming the command, what is wrong, and where the full usage is.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from trustlab.errors import one_line


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line; subcommand parsers inherit the class."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        where = f"{command}: " if command else ""
        self.exit(2, f"trustlab: error: {where}{one_line(message)} (see '{self.prog} --help')\n")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        sys.exit(status)

"""argparse helpers shared by the command line and the experiments: ``type=`` converters
and the parser whose usage errors are one line.

One rule per kind of value, everywhere: a count is an integer in a stated range, a
seed is 0..2^32-1, a real number is finite and in its range. Each raises
:class:`~trustlab.errors.TrustlabError` (argparse lets it through), so a bad value is
one line naming the option, never a silent NaN, an overflow after the work is done,
or a traceback. :class:`OneLineParser` does the same for argparse's own usage errors,
which it printed as the usage (wrapped over several lines) and then the error. This
module imports nothing heavy: every CLI start imports it.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from typing import Callable, NoReturn

from trustlab.errors import TrustlabError, excerpt, one_line

SEED_MAX = 2**32 - 1
MAX_JOBS = 1024  # worker processes: far above any machine this runs on, far below what overflows


def _shown(text: str) -> str:
    return text if len(text) <= 30 else f"{text[:20]}...({len(text)} characters)"


def _decimal(text: str) -> int | None:
    """``text`` as a base-10 integer, or None (also for over 40 digits: int() of 10^6 digits takes seconds)."""
    try:
        return int(text, 10) if len(text) <= 40 else None
    except (TypeError, ValueError):
        return None


def count(low: int, high: int, flag: str) -> Callable[[str], int]:
    """An integer ``low..high``, else one line naming ``flag``.

    The bound keeps a typo (or 2^64) from starting a run that would never end."""
    wanted = {1: f"a positive integer (at most {high})", 0: f"a non-negative integer (at most {high})"}.get(
        low, f"an integer {low}..{high}")

    def parse(text: str) -> int:
        shown = _shown(text)
        value = _decimal(text)
        if value is None:
            raise TrustlabError(f"{flag} {shown}: expected {wanted}")
        if value < 0 <= low:
            raise TrustlabError(f"{flag} {shown}: must not be negative")
        if not low <= value <= high:
            raise TrustlabError(f"{flag} {shown}: expected {wanted}")
        return value
    parse.__name__ = "int"
    return parse


def jobs(flag: str = "--jobs") -> Callable[[str], int]:
    """Worker processes: 1..MAX_JOBS (``--jobs 10**23`` was an OverflowError after all the runs)."""
    return count(1, MAX_JOBS, flag)


def seed(text: str) -> int:
    """Every ``--seed``: an integer 0..2^32-1 (what every generator underneath accepts,
    with room for per-party offsets)."""
    shown = _shown(text)
    value = _decimal(text)
    if value is None:
        raise TrustlabError(f"--seed {shown}: expected an integer 0..{SEED_MAX}")
    if value < 0:
        raise TrustlabError(f"--seed {shown}: must not be negative (seeds are integers 0..{SEED_MAX})")
    if value > SEED_MAX:
        raise TrustlabError(f"--seed {shown}: must be at most {SEED_MAX}")
    return value


def real(flag: str, low: float = -math.inf, high: float = math.inf, *, low_open: bool = False,
         high_open: bool = False) -> Callable[[str], float]:
    """A finite real number in ``[low, high]`` (``(`` / ``)`` where open), else one line naming ``flag``.

    NaN and infinity are refused whatever the range: ``float('nan')`` passes every
    comparison-based check written as ``if x < 0``, and silently poisons a run."""
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    wanted = (f"a number in {lo}{low:g}, {high:g}{hi}" if math.isfinite(low) and math.isfinite(high)
              else f"a number >{'' if low_open else '='} {low:g}" if math.isfinite(low)
              else f"a number <{'' if high_open else '='} {high:g}" if math.isfinite(high) else "a finite number")

    def parse(text: str) -> float:
        try:
            value = float(text) if len(text) <= 400 else math.nan
        except (TypeError, ValueError):
            raise TrustlabError(f"{flag} {excerpt(text, 30)}: expected {wanted}") from None
        if not math.isfinite(value):
            raise TrustlabError(f"{flag} {excerpt(text, 30)}: expected {wanted} (not NaN or infinity)")
        below = value <= low if low_open else value < low
        above = value >= high if high_open else value > high
        if below or above:
            raise TrustlabError(f"{flag} {excerpt(text, 30)}: expected {wanted}")
        return value
    parse.__name__ = "float"
    return parse


_LONG_QUOTE = re.compile(r"'([^']{60})[^']{20,}'")


class LiteralDashDash(argparse.ArgumentParser):
    """``--opt=--`` gives the option the value ``--``.

    CPython's argparse drops a ``--`` from an option's argument strings and then hands the
    option an empty list (``--sensitivity=--`` became ``[]``, a TypeError deep in a study)."""

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> object:
        if action.option_strings and action.nargs in (None, argparse.OPTIONAL) and arg_strings == ["--"]:
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)


class OneLineParser(LiteralDashDash):
    """An ArgumentParser whose usage errors are one line; subcommand parsers inherit the class."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        where = f"{command}: " if command else ""
        # argparse quotes the whole offending value ("invalid int value: '999...'"): quote a bounded excerpt
        message = _LONG_QUOTE.sub(lambda m: f"'{m.group(1)}...' ({len(m.group(0)) - 2} characters)", message)
        self.exit(2, f"trustlab: error: {where}{one_line(message)} (see '{self.prog} --help')\n")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        sys.exit(status)

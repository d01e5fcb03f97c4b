"""Documented limits on user input, and the bounded readers that enforce them.

Every file a user names is opened through :func:`open_input` (a regular file only:
a FIFO would block for ever, ``/dev/zero`` never ends) and read through
:func:`read_text` / :func:`read_bytes` / :func:`iter_lines` (at most a fixed number
of bytes, one line at most MAX_LINE_BYTES, so no input can fill memory) and every TOML/JSON document through :func:`parse_toml` /
:func:`parse_json` (deep nesting and over-long numbers are one-line errors, not
a ``RecursionError`` or ``ValueError`` traceback). The limits are far above
anything real (the largest shipped profile is 0.7 MB, a full measurement suite a
few hundred rows) and are listed in ``docs/architecture.md``.
"""

from __future__ import annotations

import itertools
import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from trustlab.errors import TrustlabError, one_line

MiB = 1024 * 1024
MAX_TEXT_BYTES = 16 * MiB      # a profile (.toml/.pro), a measurement CSV, a sweep spec
MAX_RECORD_BYTES = 256 * MiB   # one result-record JSON file (a sweep's results.json can be large)
MAX_ROWS = 1_000_000           # measurement rows in one CSV
MAX_NESTING = 32               # tables/arrays inside each other in a TOML or JSON document
MAX_SWEEP_POINTS = 100_000     # points of one sweep spec (product of the grid, times experiments)
MAX_COMPONENT_MS = 1e12        # a profile component's mean, sd or sample (ms per unit): ~31 years; beyond it sums overflow to inf


MAX_LINE_BYTES = 1 * MiB       # one line of a line-oriented input (a trace, a CSV row, a JCAlgTest row)
MAX_TRACE_BYTES = 64 * MiB     # a counter trace: ~4 million requests
MAX_NAME_CHARS = 120           # how much of a path an error message quotes

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def shown(path: Path | str) -> str:
    """A path as an error message names it: one line, at most MAX_NAME_CHARS of it."""
    text = one_line(str(path))
    return text if len(text) <= MAX_NAME_CHARS else f"{text[:MAX_NAME_CHARS]}...({len(text)} characters)"


def open_input(path: Path | str, what: str, error: type[TrustlabError] = TrustlabError) -> BinaryIO:
    """A user-named input opened for reading; only a regular file is accepted.

    Why: ``open()`` of a FIFO blocks until a writer comes (``profiles show f.toml`` never
    returned) and a device such as ``/dev/zero`` never ends. The file is opened without
    blocking, checked with ``fstat`` (no race between check and use), then read normally.
    """
    name = shown(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise error(f"{name}: cannot read {what}: no such file") from None
    except (OSError, ValueError) as exc:  # a name too long, a NUL, no permission, a socket ...
        raise error(f"{name}: cannot read {what} ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
            raise error(f"{name}: cannot read {what}: it is {kind}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Path | str, what: str, max_bytes: int | None = None,
               error: type[TrustlabError] = TrustlabError) -> bytes:
    """A user-named regular file's bytes, at most ``max_bytes`` (default MAX_TEXT_BYTES); else a one-line ``error``."""
    max_bytes = MAX_TEXT_BYTES if max_bytes is None else max_bytes
    with open_input(path, what, error) as fh:
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:  # EIO on a failing disk, EISDIR on odd file systems
            raise error(f"{shown(path)}: cannot read {what} ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise error(f"{shown(path)}: {what} larger than the limit of {_size(max_bytes)}")
    return data


def decode(data: bytes, where: str, what: str, error: type[TrustlabError] = TrustlabError) -> str:
    """UTF-8 text; a leading byte-order mark (what spreadsheets and Windows editors write) is dropped."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not a text {what} (invalid UTF-8 at byte {exc.start})") from None


def read_text(path: Path | str, what: str, max_bytes: int | None = None,
              error: type[TrustlabError] = TrustlabError) -> str:
    """A user-named file's UTF-8 text (BOM dropped), at most ``max_bytes``; else a one-line ``error``."""
    return decode(read_bytes(path, what, max_bytes, error), shown(path), what, error)


def iter_lines(path: Path | str, what: str, max_bytes: int | None = None, max_line: int = MAX_LINE_BYTES,
               error: type[TrustlabError] = TrustlabError) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a user-named text file, read a line at a time.

    Why: a line-oriented input (a trace) may be large, and one huge line must not be held
    (nor quoted) whole; each line is at most ``max_line`` bytes, the file ``max_bytes``.
    """
    max_bytes = MAX_TEXT_BYTES if max_bytes is None else max_bytes
    name = shown(path)
    total = 0
    with open_input(path, what, error) as fh:
        for lineno in itertools.count(1):
            try:
                raw = fh.readline(max_line + 1)
            except OSError as exc:
                raise error(f"{name}: cannot read {what} ({exc.strerror or exc})") from None
            if not raw:
                return
            total += len(raw)
            if total > max_bytes:
                raise error(f"{name}: {what} larger than the limit of {_size(max_bytes)}")
            if len(raw) > max_line and not raw.endswith(b"\n"):
                raise error(f"{name}:{lineno}: line longer than the limit of {_size(max_line)}")
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                yield lineno, raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                raise error(f"{name}:{lineno}: not a text {what} (invalid UTF-8 at byte {exc.start} "
                            "of the line)") from None


def _size(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB else f"{n} bytes"


def check_nesting(doc: Any, where: str, error: type[TrustlabError] = TrustlabError,
                  limit: int | None = None) -> Any:
    """``doc`` if its tables/arrays nest at most ``limit`` deep (checked without recursion)."""
    limit = MAX_NESTING if limit is None else limit
    stack = [(doc, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth >= limit:
            raise error(f"{where}: nested more than {limit} levels deep")
        stack.extend((c, depth + 1) for c in children)
    return doc


def parse_toml(text: str, where: str, error: type[TrustlabError] = TrustlabError) -> dict[str, Any]:
    """A TOML document, or a one-line ``error`` naming ``where`` (malformed, too deep, huge numbers)."""
    import tomllib  # here: every CLI start imports this module, few commands read TOML

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{where}: not valid TOML ({exc})") from None
    except RecursionError:
        raise error(f"{where}: nested more than {MAX_NESTING} levels deep") from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise error(f"{where}: a number is too long ({str(exc).split(':')[0]})") from None
    return check_nesting(doc, where, error)


def parse_json(text: str, where: str, error: type[TrustlabError] = TrustlabError) -> Any:
    """A JSON document, or a one-line ``error`` naming ``where``."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{where}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise error(f"{where}: nested more than {MAX_NESTING} levels deep") from None
    except ValueError as exc:
        raise error(f"{where}: not usable JSON ({str(exc).split(':')[0]})") from None
    return check_nesting(doc, where, error)

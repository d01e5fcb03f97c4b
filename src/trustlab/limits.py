"""Documented limits on user input, and the bounded readers that enforce them.

Every file a user names is read through :func:`read_text` (at most a fixed number
of bytes, so ``trustlab fit /dev/zero`` stops at the limit instead of filling
memory) and every TOML/JSON document through :func:`parse_toml` /
:func:`parse_json` (deep nesting and over-long numbers are one-line errors, not
a ``RecursionError`` or ``ValueError`` traceback). The limits are far above
anything real (the largest shipped profile is 0.7 MB, a full measurement suite a
few hundred rows) and are listed in ``docs/architecture.md``.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from trustlab.errors import TrustlabError

MiB = 1024 * 1024
MAX_TEXT_BYTES = 16 * MiB      # a profile (.toml/.pro), a measurement CSV, a sweep spec
MAX_RECORD_BYTES = 256 * MiB   # one result-record JSON file (a sweep's results.json can be large)
MAX_ROWS = 1_000_000           # measurement rows in one CSV
MAX_NESTING = 32               # tables/arrays inside each other in a TOML or JSON document
MAX_SWEEP_POINTS = 100_000     # points of one sweep spec (product of the grid, times experiments)
MAX_COMPONENT_MS = 1e12        # a profile component's mean, sd or sample (ms per unit): ~31 years; beyond it sums overflow to inf


def read_text(path: Path, what: str, max_bytes: int | None = None,
              error: type[TrustlabError] = TrustlabError) -> str:
    """A user-named file's text, at most ``max_bytes`` (default MAX_TEXT_BYTES); else a one-line ``error``."""
    path = Path(path)
    max_bytes = MAX_TEXT_BYTES if max_bytes is None else max_bytes
    try:
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise error(f"{path}: cannot read {what}: no such file") from None
    except (OSError, ValueError) as exc:
        raise error(f"{path}: cannot read {what} ({getattr(exc, 'strerror', None) or exc})") from None
    if len(data) > max_bytes:
        raise error(f"{path}: {what} larger than the limit of {_size(max_bytes)}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not a text {what} (invalid UTF-8 at byte {exc.start})") from None


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

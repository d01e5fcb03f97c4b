"""JSON for scripts (``--json``): the commands' machine-readable output.

The aligned text tables for people are :mod:`trustlab.textable`'s (experiments,
validation and the report use them too, so they live below all of them).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any


def json_safe(data: Any) -> Any:
    """Replace NaN and infinities (not valid JSON) by null, recursively."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: json_safe(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [json_safe(v) for v in data]
    return data


def print_json(data: Any, indent: int | None = 2) -> None:
    """``indent=None``: one line, through json's C encoder (many times faster on 100k-row outputs)."""
    # dumps, not dump: only the one-shot path uses the C encoder
    sys.stdout.write(json.dumps(json_safe(data), indent=indent, sort_keys=False, default=str, allow_nan=False))
    sys.stdout.write("\n")

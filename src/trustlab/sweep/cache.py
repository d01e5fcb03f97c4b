"""The cache of finished sweep points: one JSON record per point, written atomically.

A point is finished exactly when its file exists and parses; a sweep killed at
any moment leaves only whole files, so a resumed sweep recomputes nothing it
had finished and redoes only what was in flight. Failed points are not cached,
so a resume retries them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trustlab.report.records import ensure_dir, write_json_atomic


class PointCache:
    def __init__(self, directory: Path, create: bool = True) -> None:
        self.directory = Path(directory)
        if create:
            ensure_dir(self.directory, "sweep cache")

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self.path(key)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            path.unlink(missing_ok=True)  # damaged by hand or disk: recompute, never trust it
            return None
        return record if isinstance(record, dict) and "data" in record else None

    def put(self, key: str, record: dict[str, Any]) -> None:
        write_json_atomic(self.path(key), record)

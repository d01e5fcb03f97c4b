"""CSV and JSON files beside the report, for people who want the numbers, not the page."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from trustlab.report.records import write_json_atomic
from trustlab.report.tables import columns
from trustlab.safe_output import atomic_open


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-").lower() or "x"


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = columns(rows)
    with atomic_open(path, newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in r.items()})
    return path


def write_json(path: Path, doc: Any) -> Path:
    write_json_atomic(path, doc)
    return path

"""Result records on disk: what ``trustlab run --save``, sweeps and the flagship write.

A record is :meth:`Result.to_record` as JSON. A *failure* record stands for a
run that raised: ``{"experiment", "argv", "error"}`` and no ``data``; reports
show it instead of silently dropping the study.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trustlab import limits
from trustlab.errors import TrustlabError
from trustlab.safe_output import atomic_open

REQUIRED = ("experiment", "data")


def is_failure(record: dict[str, Any]) -> bool:
    return "error" in record and "data" not in record


def failure(experiment: str, argv: list[str], error: str) -> dict[str, Any]:
    return {"experiment": experiment, "argv": list(argv), "error": error}


def check(record: Any, where: str) -> dict[str, Any]:
    """The record if it has the shape of a result (or failure) record, else a one-line error."""
    if not isinstance(record, dict):
        raise TrustlabError(f"{where}: not a result record (expected a JSON object)")
    if is_failure(record):
        if not isinstance(record.get("experiment"), str):
            raise TrustlabError(f"{where}: failure record without an experiment name")
        _check_argv(record, where)
        return record
    missing = [k for k in REQUIRED if k not in record]
    if missing:
        raise TrustlabError(f"{where}: not a result record (missing {', '.join(missing)}); "
                            "make one with 'trustlab run NAME --save FILE'")
    if not isinstance(record["experiment"], str):
        raise TrustlabError(f"{where}: 'experiment' must be a string")
    for key, kind in (("references", list), ("plots", list), ("profiles", dict), ("meta", dict),
                      ("params", dict), ("violations", list)):
        if key in record and not isinstance(record[key], kind):
            raise TrustlabError(f"{where}: '{key}' must be a JSON {kind.__name__}")
    meta = record.get("meta") or {}
    for key in ("tools", "profile_versions"):
        if key in meta and not isinstance(meta[key], (dict, type(None))):
            raise TrustlabError(f"{where}: 'meta.{key}' must be a JSON object, not {type(meta[key]).__name__}")
    for name, version in (meta.get("profile_versions") or {}).items():
        if not isinstance(version, (dict, type(None))):
            raise TrustlabError(f"{where}: 'meta.profile_versions.{name}' must be a JSON object")
    _check_argv(record, where)
    return record


def _check_argv(record: dict[str, Any], where: str) -> None:
    argv = record.get("argv")
    if argv is not None and (not isinstance(argv, list) or not all(isinstance(a, str) for a in argv)):
        raise TrustlabError(f"{where}: 'argv' must be a list of strings")


def load(path: Path) -> list[dict[str, Any]]:
    """The records in one JSON file: a single record, or a list of them (e.g. a results.json)."""
    doc = limits.parse_json(limits.read_text(path, "result file", limits.MAX_RECORD_BYTES), str(path))
    if isinstance(doc, list):
        # a sweep's results.json wraps each record as {"key", "params", "record"}; unwrap it
        doc = [r["record"] if isinstance(r, dict) and isinstance(r.get("record"), dict) else r
               for r in doc if not (isinstance(r, dict) and "record" in r and r["record"] is None)]
        return [check(r, f"{path}[{i}]") for i, r in enumerate(doc)]
    if isinstance(doc, dict) and isinstance(doc.get("records"), list):
        return [check(r, f"{path} records[{i}]") for i, r in enumerate(doc["records"])]
    return [check(doc, str(path))]


def collect(paths: list[Path]) -> list[dict[str, Any]]:
    """Records from files and directories (every ``*.json`` directly inside, sorted)."""
    out: list[dict[str, Any]] = []
    for path in paths:
        try:
            is_dir = path.is_dir()
        except OSError:  # a name too long, a loop of links: load() says which, in one line
            is_dir = False
        if is_dir:
            files = sorted(path.glob("*.json"))
            if not files:
                raise TrustlabError(f"{path}: directory holds no *.json result files")
            for f in files:
                out += load(f)
        else:
            out += load(path)
    if not out:  # '[]', or a sweep none of whose points finished: a report of 0 runs says nothing
        raise TrustlabError(f"{', '.join(str(p) for p in paths)}: no result records (an empty list); "
                            "make one with 'trustlab run NAME --save FILE'")
    return out


def ensure_dir(path: Path, what: str) -> Path:
    """Create a directory, or say in one line why it cannot be."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TrustlabError(f"{what} {path}: cannot create directory ({exc.strerror or exc})") from None
    return path


def write_json_atomic(path: Path, doc: Any) -> None:
    """Write JSON so that a reader (or a resumed sweep) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, indent=2, default=str)  # one write, not json.dump's one per token
    with atomic_open(path) as fh:
        fh.write(text)

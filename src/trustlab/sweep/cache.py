"""The cache of finished sweep points: one JSON record per point, written atomically.

A point is finished exactly when its file exists, parses, and proves it is that
point's result: each file carries a ``cache`` block with the point's key, its
experiment and argv (whose key must be the file's own), and a SHA-256 of the
record's content. A file copied over another point's name, edited by hand, or
damaged on disk fails one of these checks: it is reported in one line, moved
aside to ``points/damaged/`` (never silently deleted), and the point is run
again. A sweep killed at any moment leaves only whole files, so a resumed
sweep recomputes nothing it had finished. Failed points are not cached, so a
resume retries them.

:func:`sweep_lock` keeps two sweeps off one output directory: the second is
refused at once, so no point runs twice (the lock dies with its process, even
on ``kill -9``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from trustlab.errors import TrustlabError
from trustlab.report.records import ensure_dir, write_json_atomic
from trustlab.safe_output import MARKER

CACHE_FIELD = "cache"


def content_hash(record: dict[str, Any]) -> str:
    """SHA-256 of a record's content (without its cache block), independent of key order."""
    body = {k: v for k, v in record.items() if k != CACHE_FIELD}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def _stderr(message: str) -> None:
    print(f"sweep cache: {message}", file=sys.stderr, flush=True)


class PointCache:
    def __init__(self, directory: Path, create: bool = True,
                 report: Callable[[str], None] | None = _stderr) -> None:
        self.directory = Path(directory)
        self.report = report
        self.problems: list[str] = []  # one line per point whose file was rejected
        self.read_only = not create  # a dry run: report rejected files, move nothing
        if create:
            ensure_dir(self.directory, "sweep cache")

    def remove_stale_temps(self) -> list[Path]:
        """Remove the temporary files of writes a killed sweep left half done (``.<key>.json.<random>.tmp``).

        Only under the sweep lock: no other sweep can be writing here then.
        """
        removed = []
        for tmp in self.directory.glob(".*.json.*.tmp"):
            if tmp.is_file() and not tmp.is_symlink():
                tmp.unlink(missing_ok=True)
                removed.append(tmp)
        return removed

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The point's record if its file is whole and provably this point's; else None (reported)."""
        path = self.path(key)
        if not path.exists() and not path.is_symlink():
            return None
        problem = None
        record: Any = None
        if not path.is_file():
            problem = "is not a regular file"
        else:
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                problem = f"unreadable ({type(exc).__name__})"
            except RecursionError:
                problem = "nested too deeply"
        if problem is None:
            problem = self._check(key, record)
        if problem is None:
            return record
        self._reject(key, problem)
        return None

    def _check(self, key: str, record: Any) -> str | None:
        from trustlab.sweep.spec import point_key

        if not isinstance(record, dict) or "data" not in record:
            return "not a result record"
        block = record.get(CACHE_FIELD)
        if not isinstance(block, dict):
            return "has no cache block (parameters and content hash)"
        experiment, argv = block.get("experiment"), block.get("argv")
        if not isinstance(experiment, str) or not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            return "cache block without experiment and argv"
        if block.get("key") != key or point_key(experiment, argv) != key:
            return (f"holds another point's result ({experiment} {' '.join(argv)}; key "
                    f"{str(block.get('key'))[:20]})")
        if record.get("experiment") != experiment:
            return f"record of experiment {record.get('experiment')!r}, not {experiment!r}"
        if block.get("sha256") != content_hash(record):
            return "content hash mismatch (edited or damaged)"
        return None

    def _reject(self, key: str, problem: str) -> None:
        path = self.path(key)
        if self.read_only:
            line = f"{path}: {problem}; would be recomputed"
        else:
            line = f"{path}: {problem}; kept as {self._move_aside(path)}; recomputing"
        self.problems.append(line)
        if self.report is not None:
            self.report(line)

    def _move_aside(self, path: Path) -> Path:
        """Move a rejected file out of the way (so the recomputed point can be written), never delete it."""
        aside = self.directory / "damaged" / f"{path.name}.{time.strftime('%Y%m%dT%H%M%S')}.{os.getpid()}"
        try:
            aside.parent.mkdir(exist_ok=True)
            os.replace(path, aside)
        except OSError as exc:
            raise TrustlabError(f"{path}: a damaged cache entry that cannot be moved aside "
                                f"({exc.strerror or exc}); remove it by hand") from None
        return aside

    def put(self, key: str, record: dict[str, Any], experiment: str, argv: list[str] | tuple[str, ...]) -> None:
        """Cache a finished point with its parameters (experiment, argv, key) and content hash."""
        body = {k: v for k, v in record.items() if k != CACHE_FIELD}
        body = json.loads(json.dumps(body, default=str))  # what will be read back, hashed the same way
        body[CACHE_FIELD] = {"key": key, "experiment": experiment, "argv": list(argv),
                             "sha256": content_hash(body)}
        path = self.path(key)
        if path.is_dir() and not path.is_symlink():
            self._reject(key, "is a directory")
        write_json_atomic(path, body)

    def forget(self, key: str) -> None:
        """Drop a point's cached result (``--fresh``); a non-file there is moved aside."""
        path = self.path(key)
        if path.is_dir() and not path.is_symlink():
            self._reject(key, "is a directory")
        else:
            path.unlink(missing_ok=True)


@contextmanager
def sweep_lock(directory: Path) -> Iterator[None]:
    """Hold the sweep lock of an output directory, or refuse in one line if another sweep holds it."""
    ensure_dir(Path(directory), "--out")
    lock_path = Path(directory) / f"{MARKER}.lock"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise TrustlabError(f"{lock_path}: cannot create the sweep lock ({exc.strerror or exc})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            raise TrustlabError(f"{directory}: another sweep (pid {holder}) is running on this output "
                                "directory; wait for it or use another --out") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)

"""Writing outputs without harming the user's files.

Every command that writes follows the same three rules:

* never write over one of its own inputs (``fit m.csv --out m.csv`` is refused);
* write into a directory only if it is empty, or holds an earlier output of the
  same command (a marker file :data:`MARKER` says which); anything else is
  refused in one line unless the user passes ``--force``;
* write each file atomically: a temp file in the same directory, flushed and
  renamed over the target, removed on any failure (a full disk included), so a
  reader sees the old file or the new one, never half of one and never a
  ``.tmp`` left behind.

Errors are :class:`~trustlab.errors.TrustlabError` with the flag and path.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

from trustlab.errors import TrustlabError
from trustlab.limits import read_text, shown

MARKER = ".trustlab-output"


def path_arg(text: str) -> Path:
    """argparse ``type=`` for output paths: ``""`` would silently mean the current directory."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; name a file or directory")
    if "\0" in text:
        raise argparse.ArgumentTypeError("a path cannot contain a NUL character")
    return Path(text)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except (OSError, ValueError, RuntimeError):
        return False


def _existing_inputs(inputs: Iterable[Any]) -> list[Path]:
    out = []
    for item in inputs:
        if isinstance(item, (str, Path)) and str(item):
            path = Path(item)
            try:
                if path.exists():
                    out.append(path)
            except (OSError, ValueError):
                continue
    return out


def check_file(path: Path, inputs: Iterable[Any] = (), flag: str = "--out", make_parents: bool = False) -> Path:
    """Refuse an output file that names a directory, an input, or a missing directory — before work starts.

    ``make_parents``: the writer creates missing directories, so only an existing parent is checked."""
    try:
        return _check_file(Path(path), inputs, flag, make_parents)
    except OSError as exc:  # a name too long, a loop of links ...
        raise TrustlabError(f"{flag} {shown(path)}: unusable path ({exc.strerror or exc})") from None


def check_path(path: Path, flag: str = "--out") -> Path:
    """``path`` if the system can look it up (it need not exist); else one line naming ``flag``.

    Why: a component over 255 bytes (``--out $(printf 'x%.0s' {1..300})``) raised
    ENAMETOOLONG from the first ``exists()`` deep inside a command."""
    try:
        os.stat(path)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        if getattr(exc, "errno", None) != errno.ENOTDIR:
            raise TrustlabError(f"{flag} {shown(path)}: unusable path ({getattr(exc, 'strerror', None) or exc})") from None
    return Path(path)


def _check_file(path: Path, inputs: Iterable[Any], flag: str, make_parents: bool) -> Path:
    for source in _existing_inputs(inputs):
        if _same(path, source):
            raise TrustlabError(f"{flag} {shown(path)}: is an input of this command; refusing to write over it")
    if path.is_dir():
        raise TrustlabError(f"{flag} {shown(path)}: is a directory; give a file name")
    if (path.exists() or path.is_symlink()) and not (path.is_file() or path.is_symlink()):
        # a FIFO or a device: writing would block or replace it with a regular file
        raise TrustlabError(f"{flag} {shown(path)}: exists and is not a regular file; give a file name")
    parent = path.parent
    if make_parents:
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
    if not parent.exists():
        raise TrustlabError(f"{flag} {shown(path)}: directory {shown(parent)} does not exist")
    if not parent.is_dir():
        raise TrustlabError(f"{flag} {shown(path)}: {shown(parent)} is not a directory")
    if path.exists() and not os.access(path, os.W_OK):
        raise TrustlabError(f"{flag} {shown(path)}: file is not writable")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise TrustlabError(f"{flag} {shown(path)}: directory {shown(parent)} is not writable")
    return path


def check_new_file(path: Path, *, force: bool = False, inputs: Iterable[Any] = (), flag: str = "--out",
                   make_parents: bool = False) -> Path:
    """:func:`check_file`, and the one rule of every file output: an existing file (or a symlink,
    dangling or not) is replaced only with ``--force``.

    Why: ``fit --out`` and ``measure --out`` replaced a file without asking while ``run --save``
    refused; a user cannot know which output is careful, so every one is."""
    path = check_file(path, inputs=inputs, flag=flag, make_parents=make_parents)
    if not force and (path.is_symlink() or path.exists()):
        raise TrustlabError(f"{flag} {shown(path)}: exists; pass --force to replace it, or choose a new name")
    return path


def check_outputs(outputs: dict[str, Any], *, force: bool = False, inputs: Iterable[Any] = (),
                  make_parents: bool = False) -> None:
    """Check every given file output (``{flag: path or None}``) by :func:`check_new_file`, and refuse
    ``--force`` when none is given: it would replace nothing, so the user meant something else."""
    given = {flag: path for flag, path in outputs.items() if path is not None}
    if force and not given:
        raise TrustlabError(f"--force: applies only with {' or '.join(outputs)} (it allows replacing that file)")
    inputs = list(inputs)
    for flag, path in given.items():
        check_new_file(Path(path), force=force, inputs=inputs, flag=flag, make_parents=make_parents)


def add_force(parser: argparse.ArgumentParser, outputs: str) -> None:
    """The ``--force`` flag of a command whose file outputs are ``outputs`` (for its help line)."""
    parser.add_argument("--force", action="store_true",
                        help=f"with {outputs}: replace an existing file (refused without it)")


def marker_command(directory: Path) -> str | None:
    """The command whose output ``directory`` holds (from its marker), or None."""
    try:  # bounded, a regular file only: a FIFO named like the marker must not hang the command
        doc = json.loads(read_text(Path(directory) / MARKER, "output marker", max_bytes=4096))
    except (TrustlabError, ValueError):
        return None
    return doc.get("command") if isinstance(doc, dict) and isinstance(doc.get("command"), str) else None


def claim_dir(directory: Path, command: str, *, force: bool = False, inputs: Iterable[Any] = (),
              flag: str = "--out", forceable: bool = True) -> Path:
    """Make ``directory`` this command's output directory, or refuse in one line.

    Allowed: a new or empty directory, or one whose marker says ``command`` wrote it.
    ``force`` allows any other directory, but never one that holds an input.
    ``forceable``: the command has a ``--force`` to suggest (serve's ``--state`` has none).
    """
    directory = Path(directory)
    if not str(directory):
        raise TrustlabError(f"{flag}: an empty path; name a directory")
    check_path(directory, flag)
    try:
        directory.exists()
    except OSError as exc:
        raise TrustlabError(f"{flag} {shown(directory)}: unusable path ({exc.strerror or exc})") from None
    if directory.exists() and not directory.is_dir():
        raise TrustlabError(f"{flag} {shown(directory)}: cannot create directory (a file of that name exists)")
    for source in _existing_inputs(inputs):
        try:
            inside = source.resolve().is_relative_to(directory.resolve())
        except (OSError, RuntimeError):
            inside = False
        if inside:
            raise TrustlabError(f"{flag} {shown(directory)}: holds the input {shown(source)}; choose another output directory")
    if directory.is_dir() and not force:
        try:
            entries = [e for e in os.listdir(directory) if not e.startswith(MARKER)]  # marker, lock
        except OSError as exc:
            raise TrustlabError(f"{flag} {shown(directory)}: cannot list ({exc.strerror or exc})") from None
        owner = marker_command(directory)
        hint = ", or pass --force" if forceable else ""
        if entries and owner != command:
            if owner:
                raise TrustlabError(f"{flag} {shown(directory)}: holds the output of 'trustlab {owner}', not of "
                                    f"'trustlab {command}'; choose another directory{hint}")
            raise TrustlabError(f"{flag} {shown(directory)}: is not empty and not an earlier output of 'trustlab "
                                f"{command}'; choose an empty or new directory{hint}")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        write_text(directory / MARKER, json.dumps({"command": command}) + "\n")
    except OSError as exc:
        raise TrustlabError(f"{flag} {shown(directory)}: cannot write ({exc.strerror or exc})") from None
    return directory


@contextmanager
def atomic_open(path: Path, mode: str = "w", *, encoding: str | None = "utf-8",
                newline: str | None = None) -> Iterator[IO[Any]]:
    """A file object whose content replaces ``path`` only when the block finishes without error."""
    path = Path(path)
    import tempfile  # here: every CLI start imports this module, few write

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding,
                       newline=None if "b" in mode else newline) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_text(path: Path, text: str) -> Path:
    with atomic_open(path) as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: Path, data: bytes) -> Path:
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return Path(path)


@contextmanager
def reported(path: Path, flag: str = "--out") -> Iterator[None]:
    """Turn an OSError while writing (full disk, permissions) into a one-line TrustlabError."""
    try:
        yield
    except OSError as exc:
        raise TrustlabError(f"{flag} {shown(path)}: cannot write ({exc.strerror or exc})") from None

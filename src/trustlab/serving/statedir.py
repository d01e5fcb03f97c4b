"""``--state DIR``: a served TPM's state directory, claimed by the safe-output rules.

The directory must be new, empty, or already a trustlab state directory
(marked by ``safe_output``'s marker as ``serve``'s output, or - from before
the marker - holding nothing but TPM state files). Anything else is refused in
one line before anything is written. If serve then fails to start, what it
created is removed again: a new directory entirely, an empty one's new files;
an earlier state directory is left as it was.

One serve at a time: the claim holds an exclusive ``flock`` on :data:`LOCK`
in the directory for the life of the process (the kernel drops it when the
process dies), so a second serve on the same directory is refused in one
line naming the first, instead of failing inside swtpm (``CMD_INIT failed``)
or, for TPM 1.2, both engines writing one state file.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import Iterable

from trustlab.errors import TrustlabError
from trustlab.safe_output import MARKER, claim_dir, marker_command

COMMAND = "serve"
LOCK = MARKER + ".serve-lock"  # in STATE_FILES
"""Held (``flock``) by the serve using the directory; it holds that serve's pid. Named after the marker, so
the safe-output rules do not count it as foreign content."""
STATE_FILES = frozenset({
    "tpm2-00.permall", "tpm2-00.volatilestate", "tpm2-00.savestate",   # swtpm (libtpms), TPM 2.0
    "tpm-00.permall", "tpm-00.volatilestate", "tpm-00.savestate",      # swtpm, TPM 1.2
    "tpm12-state.json",                                                # trustlab's TPM 1.2 engine
    "swtpm.log", ".lock", MARKER + ".serve-lock",
})
"""What a state directory holds (the marker aside); a directory with only these is an older state dir."""


def refuse_state_file(path: Path, state: Path, flag: str) -> None:
    """Refuse an output (``--trace``) that is one of the state directory's own files: appending to the TPM's
    NV image or the lock would corrupt the state serve keeps."""
    try:
        target = Path(path).resolve()
        inside = target.parent == Path(state).resolve()
    except (OSError, RuntimeError):
        return
    if inside and (target.name in STATE_FILES or target.name.startswith(MARKER)):
        raise TrustlabError(f"{flag} {path}: is a file of the --state directory {state}; give another file name")


class StateDir:
    """Claim ``path`` as the state directory (or refuse); :meth:`undo` if serving never started."""

    def __init__(self, path: Path, inputs: Iterable[object] = ()) -> None:
        self.path = Path(path)
        try:
            existed = self.path.exists()
            before = set(os.listdir(self.path)) if existed and self.path.is_dir() else set()
        except OSError as exc:
            raise TrustlabError(f"--state {self.path}: unusable ({exc.strerror or exc})") from None
        older = bool(before - {MARKER}) and marker_command(self.path) is None and before <= STATE_FILES | {MARKER}
        self._created = not existed
        self._was_empty = existed and not (before - {MARKER})
        self._before = before
        self._lock_fd = -1
        if existed and (older or marker_command(self.path) == COMMAND):
            self._lock()  # before the claim writes anything: a directory in use is refused untouched
        claim_dir(self.path, COMMAND, force=older, inputs=inputs, flag="--state", forceable=False)
        if self._lock_fd < 0:
            self._lock()

    def _lock(self) -> None:
        lock = self.path / LOCK
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise TrustlabError(f"--state {self.path}: cannot lock ({exc.strerror or exc})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                holder = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
            finally:
                os.close(fd)
            raise TrustlabError(f"--state {self.path}: in use by another trustlab serve (pid {holder}); "
                                "stop it first or choose another directory") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    def undo(self) -> None:
        """Serving did not start: remove what this claim and the failed start wrote."""
        try:
            if self._created:
                shutil.rmtree(self.path, ignore_errors=True)
            elif self._was_empty:
                for name in set(os.listdir(self.path)) - self._before:
                    target = self.path / name
                    if target.is_dir() and not target.is_symlink():
                        shutil.rmtree(target, ignore_errors=True)
                    else:
                        target.unlink(missing_ok=True)
        except OSError:
            pass

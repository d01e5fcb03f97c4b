"""Where the engine keeps its non-volatile state: a two-method interface.

A TPM's persistent state (owner and SRK secrets, tpmProof, the EK, monotonic
counters, the hash-tree root) must survive restarts, and a counter must never
go backwards. The engine serialises that state to one opaque byte string and
hands it to an :class:`NVStore` after every command that changes it, *before*
the response leaves the TPM — so an acknowledged increment is durable.

To plug in other storage (the fTPM's RPMB-backed store, a fault-injecting
store), implement::

    class NVStore(Protocol):
        def load(self) -> bytes | None: ...      # None: a factory-fresh TPM
        def save(self, data: bytes) -> None: ... # atomic: old or new, never torn

:class:`FileNVStore` is the default (write temp file, fsync, ``os.replace``);
:class:`MemoryNVStore` is for tests and virtual runs.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Protocol, runtime_checkable

from trustlab.errors import TrustlabError


@runtime_checkable
class NVStore(Protocol):
    def load(self) -> bytes | None: ...

    def save(self, data: bytes) -> None: ...


def where(store: object) -> str:
    """Where ``store`` keeps the state, for an error a user can act on (a file's path, not a class name)."""
    path = getattr(store, "path", None)
    if path is not None:
        from trustlab.limits import shown

        return f"file {shown(path)}"
    return "memory" if isinstance(store, MemoryNVStore) else type(store).__name__


class MemoryNVStore:
    """State in a Python attribute (survives engine restarts within one process)."""

    def __init__(self, data: bytes | None = None) -> None:
        self.data = data
        self.saves = 0

    def load(self) -> bytes | None:
        return self.data

    def save(self, data: bytes) -> None:
        self.data = bytes(data)
        self.saves += 1


class FileNVStore:
    """State in one file, replaced atomically so a crash leaves old or new, never half."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def load(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise TrustlabError(f"TPM state file {self.path}: cannot read ({e.strerror})") from None

    def save(self, data: bytes) -> None:
        directory = self.path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=directory)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        except OSError as e:
            raise TrustlabError(f"TPM state file {self.path}: cannot write ({e.strerror})") from None

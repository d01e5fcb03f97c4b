"""A fork server for the flagship's runs: one process imports the studies once, each run is a fork of it.

A fresh ``python`` per run paid the interpreter's start, the imports of trustlab,
cryptography, numpy and the study's own modules, and the tool-version probes of
its record (two ``swtpm`` calls) again for every one of the flagship's runs:
about 0.1-0.2 s of CPU each. The server (a fresh interpreter started by the
flagship, so it inherits no threads or state of its caller) does that once;
each run is then ``os.fork()`` of it, still a process of its own: in its own
process group (a timeout kills it with any swtpm it started), with stdout
discarded and stderr in a file, exiting through the interpreter's normal
shutdown (threads joined, atexit handlers such as swtpm's clean-up). A forked
run computes exactly what a fresh process computes: no study runs in the server,
so a run only inherits imported modules and warmed caches, never another run's
state; ``random`` reseeds itself after a fork.

Protocol: the flagship writes one JSON request per line to the server's stdin
(``id``, ``save``, ``name``, ``argv``, ``stderr``); the server answers on stdout
with ``{"id", "pid"}`` once the run is forked and ``{"id", "exit", "cpu"}``
when it has been reaped (``exit`` as ``Popen.returncode``; ``cpu``: user +
system seconds of the run and of the children it waited for). EOF on stdin:
the server waits for its runs and exits.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

_ENTRY = "import sys; from trustlab.cli._forkserver import serve; sys.exit(serve(sys.argv[1:]))"
# Imported by several runs but only inside the studies' functions (the timing model's fits, validate,
# the PQC calibration: ~0.5 s each): once here instead of in each of those runs.
_SHARED_IMPORTS = ("scipy.optimize",)
_READY = b"ready\n"


# ---- in the server process ---------------------------------------------------------------------

def serve(names: Sequence[str]) -> int:
    """Preload the named studies, then fork one process per request (see the module docstring)."""
    from trustlab.cli._flagship_run import child_main
    from trustlab.errors import TrustlabError
    from trustlab.experiments import registry
    from trustlab.report import records  # noqa: F401 - the runs write their records with it

    for name in names:
        try:
            registry.get(name)
        except TrustlabError:
            pass  # the run itself reports it, as a fresh process would
    for module in _SHARED_IMPORTS:
        try:
            importlib.import_module(module)
        except ImportError:
            pass  # a run that needs it reports it
    registry.tool_versions(), registry.swtpm_capabilities()  # cached: every record states them
    gc.freeze()  # the preloaded objects stay out of the runs' collections (and their pages shared)
    request = _serve_forks()
    if request is None:
        return 0
    return child_main([request["save"], request["name"], *request["argv"]])  # in the forked run


def _send(message: dict[str, Any]) -> None:
    os.write(1, json.dumps(message).encode() + b"\n")  # one short write: never interleaved


def _serve_forks() -> dict[str, Any] | None:
    """The server's loop; returns the request in a forked run, None in the server at EOF."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)  # SIGCHLD wakes the select below
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    os.write(1, _READY)
    live: dict[int, int] = {}  # pid -> request id
    pending, reading = b"", True
    while reading or live:
        ready = select.select([0, wake_r] if reading else [wake_r], [], [])[0]
        if wake_r in ready:
            while True:
                try:
                    if not os.read(wake_r, 512):
                        break
                except BlockingIOError:
                    break
        _reap(live)
        if 0 not in ready:
            continue
        data = os.read(0, 65536)
        if not data:
            reading = False
            continue
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            request = json.loads(line)
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.close(wake_r)
                os.close(wake_w)
                _become_run(request)
                return request
            try:
                os.setpgid(pid, pid)  # also done by the run itself: whichever comes first
            except OSError:
                pass
            live[pid] = request["id"]
            _send({"id": request["id"], "pid": pid})
    return None


def _reap(live: dict[int, int]) -> None:
    while live:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in live:
            _send({"id": live.pop(pid), "exit": os.waitstatus_to_exitcode(status),
                   "cpu": usage.ru_utime + usage.ru_stime})


def _become_run(request: dict[str, Any]) -> None:
    """In the forked run: own process group, no stdin, stdout discarded, stderr to its file."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    null = os.open(os.devnull, os.O_RDWR)
    err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(err, 2)
    os.close(null)
    os.close(err)


# ---- in the flagship ---------------------------------------------------------------------------

class ForkServerError(RuntimeError):
    """The server did not start, or stopped while runs were under way."""


@dataclass
class _Run:
    done: threading.Event = field(default_factory=threading.Event)
    started: threading.Event = field(default_factory=threading.Event)
    pid: int | None = None
    exit: int | None = None
    cpu: float | None = None


class ForkServer:
    """The flagship's handle on the server: :meth:`run` one study and wait for it, from any thread."""

    def __init__(self, names: Sequence[str], env: dict[str, str], timeout: float) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="trustlab-flagship-")
        self._errors = open(Path(self._tmp.name) / "server.err", "w+b")
        self._proc = subprocess.Popen([sys.executable, "-c", _ENTRY, *names], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._errors, env=env,
                                      start_new_session=True)
        self._lock = threading.Lock()
        self._runs: dict[int, _Run] = {}
        self._next = 0
        self._dead = False
        self._reader: threading.Thread | None = None
        assert self._proc.stdout is not None
        ready = select.select([self._proc.stdout], [], [], timeout)[0]
        if not ready or self._proc.stdout.readline() != _READY:
            self.close(kill=True)
            raise ForkServerError(f"the flagship's fork server did not start: {self._stderr_tail()}")
        self._reader = threading.Thread(target=self._read, name="flagship-forkserver", daemon=True)
        self._reader.start()

    def _stderr_tail(self) -> str:
        try:
            self._errors.seek(0)
            return self._errors.read().decode(errors="replace").strip()[-2000:] or "(no output)"
        except (OSError, ValueError):
            return "(no output)"

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            message = json.loads(line)
            with self._lock:
                run = self._runs.get(message["id"])
            if run is None:
                continue
            if "pid" in message:
                run.pid = message["pid"]
                run.started.set()
            else:
                run.exit, run.cpu = message["exit"], message["cpu"]
                run.done.set()
        with self._lock:  # the server is gone: nothing more will finish
            self._dead = True
            for run in self._runs.values():
                run.started.set()
                run.done.set()

    @property
    def alive(self) -> bool:
        return not self._dead and self._proc.poll() is None

    def run(self, save: Path, name: str, argv: list[str], timeout: float) -> tuple[int | None, str, float | None]:
        """Fork ``name argv`` and wait: (exit status, or None on timeout; its stderr; its CPU seconds).

        Raises :class:`ForkServerError` if the server dies before the run is reaped.
        """
        run = _Run()
        with self._lock:
            if self._dead:
                raise ForkServerError("the flagship's fork server has stopped")
            rid, self._next = self._next, self._next + 1
            self._runs[rid] = run
            stderr = Path(self._tmp.name) / f"run-{rid}.err"
            request = {"id": rid, "save": str(save), "name": name, "argv": argv, "stderr": str(stderr)}
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write((json.dumps(request) + "\n").encode())
                self._proc.stdin.flush()
            except (OSError, ValueError):  # the server has gone (its reader may already be done)
                self._dead = True
                del self._runs[rid]
                raise ForkServerError(f"the flagship's fork server has stopped: {self._stderr_tail()}") from None
        try:
            timed_out = not run.done.wait(timeout)
            if timed_out:
                run.started.wait()
                self._kill(run)
                run.done.wait()
            if run.exit is None:
                raise ForkServerError(f"the flagship's fork server stopped: {self._stderr_tail()}")
            try:
                text = stderr.read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            return (None if timed_out else run.exit), text, run.cpu
        finally:
            stderr.unlink(missing_ok=True)
            with self._lock:
                self._runs.pop(rid, None)

    def _kill(self, run: _Run) -> None:
        if run.pid is not None and not run.done.is_set():
            try:
                os.killpg(run.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def kill_all(self) -> None:
        """Kill every run under way (with its process group), e.g. when the flagship is interrupted."""
        with self._lock:
            runs = list(self._runs.values())
        for run in runs:
            self._kill(run)

    def close(self, kill: bool = False) -> None:
        """Let the server finish (or kill it) and remove its files."""
        if kill:
            self.kill_all()
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout=None if not kill else 10)
        except subprocess.TimeoutExpired:
            pass
        if self._reader is not None:
            self._reader.join(timeout=10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._errors.close()
        self._tmp.cleanup()

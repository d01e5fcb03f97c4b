"""Where the counters' TPM 1.2 lives: in process, or spoken to over swtpm's TCP protocol.

``--tpm12`` of ``trustlab run counters`` (schemes ``log`` and ``hashtree``):

``inproc``
    The engine is a Python object in the scheme's process (the default, and
    the fastest).
``served``
    The engine runs behind the timing proxy exactly as ``trustlab serve``
    runs it (an :class:`~trustlab.serving.tpm12.engine_backend.EngineBackend`, in
    virtual mode, on a free localhost port), and the scheme's host side talks
    to it over TCP. The host's clock is charged, command by command, what the
    served engine charged (the proxy's trace record), so the modelled times
    are those of the in-process engine on the same profile - a test holds
    them to it (exactly, for profiles without spread; with spread the server
    draws from its own random stream).
``libtpms``
    libtpms' TPM 1.2 in a swtpm (log scheme only: the hash-tree scheme needs
    the what-if TPM_ExecuteHashTree). Every operation runs for real on
    libtpms and is verified against libtpms' AIK; libtpms has no notion of
    chip time, so each operation is timed by an in-process *twin* engine that
    performs the same operation on the same profile in lockstep
    (:class:`Lockstep`) - the engine's model of that operation, as the TPM 2.0
    proxy times swtpm's answers by its model. Both must succeed and return the
    same counter value (relative to their starts), or the run stops.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Callable

from trustlab.apps import keypool
from trustlab.devices.tpm12 import MemoryNVStore, Tpm12, TpmError
from trustlab.errors import TrustlabError
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Profile

MODES = ("inproc", "served", "libtpms")


@dataclass
class WiredTpm:
    """A host-side :class:`Tpm12` and how to let go of what stands behind it."""

    tpm: Tpm12
    where: str
    close: Callable[[], None]


def open_tpm12(mode: str, profile: Profile, clock: Clock, *, seed: int = 0) -> WiredTpm:
    """A fresh, unowned, started TPM 1.2 over the wire for one scheme run (``served`` or ``libtpms``)."""
    if mode == "served":
        return _served(profile, clock, seed)
    if mode == "libtpms":
        return _libtpms(clock)
    raise TrustlabError(f"--tpm12 {mode!r}: expected served or libtpms here (inproc needs no wire)")


def _served(profile: Profile, clock: Clock, seed: int) -> WiredTpm:
    from trustlab.serving.tpm12.engine_backend import EngineBackend
    from trustlab.serving.tpm12.socket_tpm import SocketTpm12
    from trustlab.serving.proxy import TimingProxy

    records: collections.deque = collections.deque()
    # powered and started, as serve runs it; host keys from the cached pool, as provision() gives the in-process engine
    backend = EngineBackend(profile, nv=MemoryNVStore(), seed=seed, keygen=keypool.cursor())
    proxy = TimingProxy(profile, backend, virtual=True, control="swtpm", trace=records.append, keep_records=2)

    def price(command: bytes, response: bytes) -> tuple[str, dict[str, float]]:
        if not records:  # every executed command is traced before its response leaves the proxy
            raise TrustlabError("--tpm12 served: the proxy answered a command it did not execute (rejected frame)")
        record = records.popleft()
        return record.command, record.breakdown

    remote = SocketTpm12(proxy.host, proxy.port, clock, price)

    def close() -> None:
        remote.close()
        proxy.stop()

    return WiredTpm(Tpm12(clock, engine=remote), "served engine (trustlab serve, over TCP)", close)


def _libtpms(clock: Clock) -> WiredTpm:
    from trustlab.serving.tpm12.socket_tpm import SocketTpm12, Swtpm12

    tpm = Swtpm12().start()
    try:
        rc = tpm.create_ek()
        if rc != 0:
            raise TrustlabError(f"--tpm12 libtpms: TPM_CreateEndorsementKeyPair answered {rc:#x}")
        assert tpm.port is not None
        remote = SocketTpm12(tpm.host, tpm.port)  # not priced: the twin engine times the operations
    except BaseException:
        tpm.stop()
        raise

    def close() -> None:
        remote.close()
        tpm.stop()

    return WiredTpm(Tpm12(clock, engine=remote), "libtpms TPM 1.2 (swtpm, over TCP); times from the in-process "
                    "engine doing the same operations", close)


class Lockstep:
    """A prover on a real TPM driven together with a twin prover on the in-process engine.

    Answers (and their evidence) are the real TPM's; the twin only charges the
    scheme's clock what the engine's model says the same operation costs.
    """

    def __init__(self, real, twin) -> None:
        self.real = real
        self.twin = twin

    def __getattr__(self, name: str):
        return getattr(self.real, name)

    def _both(self, op: str, counter: int, nonce: bytes):
        timed = getattr(self.twin, op)(counter, nonce)
        try:
            answer = getattr(self.real, op)(counter, nonce)
        except TpmError as e:
            raise TrustlabError(f"--tpm12 libtpms: {op} of counter {counter} failed on libtpms: {e}") from None
        if answer.value - self.real.genesis != timed.value - self.twin.genesis:
            raise TrustlabError(f"--tpm12 libtpms: {op} of counter {counter} gave {answer.value - self.real.genesis} "
                                f"on libtpms but {timed.value - self.twin.genesis} on the engine (from their starts)")
        return answer

    def increment(self, counter: int, nonce: bytes):
        return self._both("increment", counter, nonce)

    def read(self, counter: int, nonce: bytes):
        return self._both("read", counter, nonce)

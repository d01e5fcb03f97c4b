"""Where the counters' TPM 1.2 lives: in process, or spoken to over swtpm's TCP protocol.

``--tpm12`` of ``trustlab run counters`` (schemes ``log`` and ``hashtree``):

``inproc``
    The engine is a Python object in the scheme's process (the default, and
    the fastest).
``served``
    The engine runs behind the timing proxy exactly as ``trustlab serve``
    runs it (an :class:`~trustlab.devices.tpm12.served.EngineBackend`, in
    virtual mode, on a free localhost port), and the scheme's host side talks
    to it over TCP. The host's clock is charged, command by command, what the
    served engine charged (the proxy's trace record), so the modelled times
    are those of the in-process engine on the same profile - a test holds
    them to it (exactly, for profiles without spread; with spread the server
    draws from its own random stream).
``libtpms``
    libtpms' TPM 1.2 in a swtpm: the same host code against the peer
    implementation. Not available yet: see :data:`LIBTPMS_GAP`.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Callable

from trustlab.devices.tpm12 import MemoryNVStore, Tpm12
from trustlab.errors import TrustlabError
from trustlab.timing.clock import Clock
from trustlab.timing.profile import Profile

MODES = ("inproc", "served", "libtpms")

LIBTPMS_GAP = ("--tpm12 libtpms: not available yet - the engine's and libtpms' transport-session logs and "
               "1.1/1.2 key structures differ (issue 12 part A), so the scheme's certificates would not verify; "
               "use inproc or served")


@dataclass
class WiredTpm:
    """A host-side :class:`Tpm12` and how to let go of what stands behind it."""

    tpm: Tpm12
    where: str
    close: Callable[[], None]


def open_tpm12(mode: str, profile: Profile, clock: Clock, *, seed: int = 0) -> WiredTpm:
    """A fresh, unowned TPM 1.2 for one scheme run, reached as ``mode`` says."""
    if mode == "inproc":
        return WiredTpm(Tpm12(clock, MemoryNVStore()), "in-process engine", lambda: None)
    if mode == "served":
        return _served(profile, clock, seed)
    if mode == "libtpms":
        raise TrustlabError(LIBTPMS_GAP)
    raise TrustlabError(f"--tpm12 {mode!r}: expected one of {', '.join(MODES)}")


def _served(profile: Profile, clock: Clock, seed: int) -> WiredTpm:
    from trustlab.devices.tpm12.served import EngineBackend, Tpm12Proxy
    from trustlab.devices.tpm12.socket_tpm import SocketTpm12

    records: collections.deque = collections.deque()
    backend = EngineBackend(profile, nv=MemoryNVStore(), seed=seed)  # powered and started, as serve runs it
    proxy = Tpm12Proxy(profile, backend, virtual=True, trace=records.append, keep_records=2)

    def price(command: bytes, response: bytes) -> tuple[str, dict[str, float]]:
        record = records.popleft()  # traced before the response left the proxy
        return record.command, record.breakdown

    remote = SocketTpm12(proxy.host, proxy.port, clock, price)

    def close() -> None:
        remote.close()
        proxy.stop()

    return WiredTpm(Tpm12(clock, engine=remote), "served engine (trustlab serve, over TCP)",
                    close)

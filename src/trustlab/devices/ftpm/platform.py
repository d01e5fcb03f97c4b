"""Wiring one simulated phone: eMMC, untrusted OS, TEE keys and storage.

A :class:`Platform` owns what survives power loss (the eMMC and the device
secrets); ``boot()`` builds what does not (the OS, the TEE driver, the store)
afresh, the way a real reboot does. Crash testing is then: run until
:class:`PowerLoss`, call ``boot()`` again, look at what the TEE recovers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trustlab.devices.ftpm import rpmb_frame as rf
from trustlab.devices.ftpm.atomic_store import AtomicStore
from trustlab.devices.ftpm.errors import RpmbError
from trustlab.devices.ftpm.faults import PowerRail
from trustlab.devices.ftpm.keys import DeviceSecrets, StorageKeys, derive_keys
from trustlab.devices.ftpm.normal_world import Capture, NormalWorld, OsBehaviour
from trustlab.devices.ftpm.rpmb import RpmbDevice
from trustlab.devices.ftpm.rpmb_client import RpmbClient
from trustlab.timing.clock import Clock

STORAGE_COMPONENTS = ("rpmb_request", "rpmb_frame_write", "rpmb_frame_read", "tee_hmac_frame", "tee_aead_block")


@dataclass
class Platform:
    """Non-volatile parts of a device plus the knobs of its next boot."""

    n_blocks: int = 16
    levels: int = 1
    fanout: int | None = None
    seed: int = 0
    clock: Clock | None = None
    size_blocks: int | None = None
    store_class: type[AtomicStore] = AtomicStore
    device: RpmbDevice = field(init=False)
    capture: Capture = field(init=False)  # the attacker's recordings survive reboots
    keys: StorageKeys = field(init=False)

    def __post_init__(self) -> None:
        if self.clock is not None:
            self.clock.require(*STORAGE_COMPONENTS)
        self.capture = Capture()
        self.keys = derive_keys(DeviceSecrets.for_seed(self.seed))
        probe = self._store_for(None)
        self.device = RpmbDevice(self.size_blocks or max(probe.physical_blocks, 4), clock=self.clock)

    def _store_for(self, client: RpmbClient | None) -> AtomicStore:
        return self.store_class(client, self.keys.aead_key, self.n_blocks,  # type: ignore[arg-type]
                           levels=self.levels, fanout=self.fanout, clock=self.clock)

    def boot(self, *, behaviour: OsBehaviour | None = None, rail: PowerRail | None = None
             ) -> tuple[NormalWorld, AtomicStore]:
        """Fresh OS and TEE driver over the same eMMC; formats on the very first boot."""
        self.device.power_loss()
        os_ = NormalWorld(self.device, behaviour=behaviour, rail=rail, clock=self.clock)
        os_.capture = self.capture
        client = RpmbClient(os_, self.keys.rpmb_key, clock=self.clock)
        store = self._store_for(client)
        try:
            client.read_counter()  # authenticated: proves the eMMC holds *our* key
        except RpmbError as exc:
            if exc.result is None or exc.result & 0x7F != rf.RES_NO_KEY:
                raise
            # first boot: program the key derived from the SSK and lay out the store. The key
            # crosses the normal world once, so provisioning must happen in a trusted setting.
            client.program_key()
            store.format()
        return os_, store

"""The firmware TPM's storage-facing core: secure clock, dark periods, NV, DA lockout.

This models the mechanisms the paper adds around the TPM 2.0 reference code
when it runs in a TEE without storage of its own (sections 8-9):

* **Secure clock with fate sharing** -- the TPM clock runs while powered and is
  persisted to NVClock whenever it crosses a multiple of ``clock_period_ms``
  (at most 2^22 ms). That check is the *first* thing every command does; if
  the untrusted OS will not carry the write, the command is refused
  (``TPM_RC_NV_UNAVAILABLE``), so the fTPM never serves a clock that could
  roll back by more than one period. After a non-orderly power-down the clock
  restarts from NVClock and ``clock_safe`` is cleared until the next persist.
* **Dictionary-attack lockout in dark periods** -- failed authorizations are
  counted and persisted; ``max_tries`` failures lock the TPM for
  ``recovery_ms``. When a failure cannot be persisted (a dark period) the
  ``policy`` decides: ``no-storage`` keeps counting in RAM (the insecure
  Figure 4 TPM), ``dirty-bit`` relies on a dirty bit persisted at boot and
  turns a reboot inside a dark period into lockout (Figure 5), and
  ``tpm2-nonorderly`` locks out at once when a failure cannot be recorded and
  charges one try for each non-orderly startup (the TPM 2.0 specification's
  rule, as the reference code's DA startup applies it).
* **NV indices and sealed objects** through transactions on the atomic store:
  every state-changing command commits or aborts before returning; after a
  failed commit the in-memory state is reloaded from storage.

Commands are named as in the TPM 2.0 specification and run inside
``clock.command(name)`` so their storage costs appear in the ledger.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import replace

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

from trustlab.devices.ftpm.atomic_store import AtomicStore
from trustlab.devices.ftpm.blob import RpmbNVStore
from trustlab.devices.ftpm.errors import FtpmError, RpmbError, StorageUnavailable, TpmRefused
from trustlab.devices.ftpm.state import FtpmState, NvIndex
from trustlab.timing.clock import Clock

POLICIES = ("no-storage", "dirty-bit", "tpm2-nonorderly")
MAX_CLOCK_PERIOD_MS = 1 << 22  # TPM 2.0: NVClock must be updated at least every 2^22 ms


class FirmwareTpm:
    def __init__(self, store: AtomicStore, clock: Clock, *, policy: str = "dirty-bit",
                 max_tries: int = 3, recovery_ms: int = 10 * 60 * 1000,
                 clock_period_ms: int = MAX_CLOCK_PERIOD_MS) -> None:
        if policy not in POLICIES:
            raise FtpmError(f"unknown dark-period policy {policy!r} (known: {', '.join(POLICIES)})")
        if not 1 <= clock_period_ms <= MAX_CLOCK_PERIOD_MS:
            raise FtpmError(f"NVClock period must be 1..{MAX_CLOCK_PERIOD_MS} ms (2^22), got {clock_period_ms}")
        if max_tries < 1:
            raise FtpmError(f"max_tries must be at least 1, got {max_tries}")
        self.store = store
        self.nv = RpmbNVStore(store)
        self.clock = clock
        self.policy = policy
        self.max_tries = max_tries
        self.recovery_ms = recovery_ms
        self.period = clock_period_ms
        self.state = FtpmState()
        self.started = False
        self._boot_physical = 0.0
        self._clock_base = 0
        self.last_frames = 0
        self.commit_log: list[FtpmState] = []  # every state committed, in order (crash testing)

    # ---- time ----------------------------------------------------------------

    def tpm_clock(self) -> int:
        """TPM clock (ms): NVClock at boot plus physical time powered since."""
        return self._clock_base + int(self.clock.now_ms - self._boot_physical)

    # ---- persistence --------------------------------------------------------------

    def _load(self) -> FtpmState:
        raw = self.nv.load()
        return FtpmState.decode(raw) if raw is not None else FtpmState()

    def _persist(self, new: FtpmState) -> None:
        """Commit ``new`` atomically; ``self.state`` changes only once the commit is acknowledged.

        On failure the RAM state stays what it was before the command (the
        paper's "the command must roll back its in-memory data"). It is *not*
        reloaded from storage: RAM may hold failed tries that storage never got
        (a dark period, a refusing OS), and reloading would hand them back to
        the attacker. If the commit landed although its response was lost, the
        next commit of the full state supersedes it.
        """
        try:
            self.nv.save(new.encode())
        except (StorageUnavailable, RpmbError):
            self.last_frames = 0
            raise
        self.last_frames = self.nv.last_frames
        self.state = new
        self.commit_log.append(new)

    def _refuse_unpersisted(self, why: str) -> TpmRefused:
        return TpmRefused(why, "TPM_RC_NV_UNAVAILABLE")

    # ---- the clock, first thing in every command (fate sharing) ---------------------

    def _decayed(self, s: FtpmState, now: int) -> FtpmState:
        """TPM 2.0 self-healing: one failed try forgiven per ``recovery_ms`` of TPM clock."""
        if s.failed_tries == 0 or self.recovery_ms <= 0 or now < s.da_clock:
            return s
        k = (now - s.da_clock) // self.recovery_ms
        if k == 0:
            return s
        failed = max(0, s.failed_tries - k)
        return replace(s, failed_tries=failed, da_clock=s.da_clock + k * self.recovery_ms if failed else 0)

    def _tick(self) -> None:
        if not self.started:
            raise TpmRefused("TPM2_Startup has not run", "TPM_RC_INITIALIZE")
        now = self.tpm_clock()
        s = self._decayed(self.state, now)
        if now // self.period > s.nv_clock // self.period:
            # fate sharing: no service until the clock is persisted
            try:
                self._persist(replace(s, nv_clock=now, clock_safe=True))
            except (StorageUnavailable, RpmbError) as exc:
                raise self._refuse_unpersisted(f"NVClock could not be persisted ({exc})") from None
        elif s != self.state:
            try:  # opportunistic: losing a decrement only keeps the counter higher
                self._persist(s)
            except (StorageUnavailable, RpmbError):
                self.state = s

    # ---- boot ----------------------------------------------------------------------

    def startup(self) -> None:
        """TPM2_Startup(CLEAR): restore the clock, apply the dark-period rules, persist.

        Runs in the firmware phase, before any dark period; if the boot-time
        write cannot be persisted the fTPM refuses to start (fate sharing).
        """
        with self.clock.command("TPM2_Startup"):
            try:
                s = self._load()
            except (StorageUnavailable, RpmbError) as exc:
                raise self._refuse_unpersisted(f"state could not be read ({exc})") from None
            first_boot = s.storage_seed == bytes(32)
            if first_boot:
                s = replace(s, storage_seed=os.urandom(32))
            self._clock_base = s.nv_clock
            self._boot_physical = self.clock.now_ms
            safe = s.clock_safe and s.orderly
            failed = s.failed_tries
            da_clock = s.da_clock
            if self.policy == "dirty-bit" and s.dirty:
                # rebooted inside a dark period: indistinguishable from a rollback attack
                failed, da_clock = self.max_tries, s.nv_clock
            if self.policy == "tpm2-nonorderly" and not s.orderly and not first_boot:
                if failed == 0:
                    da_clock = s.nv_clock
                failed = min(self.max_tries, failed + 1)
            new = replace(s, failed_tries=failed, da_clock=da_clock, clock_safe=safe,
                          orderly=False, boot_count=s.boot_count + 1,
                          dirty=self.policy == "dirty-bit")
            try:
                self._persist(new)
            except (StorageUnavailable, RpmbError) as exc:
                self.started = False
                raise self._refuse_unpersisted(f"boot state could not be persisted ({exc})") from None
            self.started = True

    def resume(self) -> None:
        """Re-create the TEE's RAM from committed state without boot semantics (crash harness)."""
        self.state = self._load()
        self._clock_base = self.state.nv_clock
        self._boot_physical = self.clock.now_ms
        self.started = True

    def storage_ready(self) -> None:
        """The OS has loaded its storage driver: the dark period is over.

        Failures counted in RAM during the dark period are persisted and the
        dirty bit is cleared, in one commit.
        """
        with self.clock.command("fTPM_StorageReady"):
            self._tick()
            # persist RAM-only failures from the dark period and clear the dirty bit, in one commit
            try:
                self._persist(replace(self.state, dirty=False))
            except (StorageUnavailable, RpmbError) as exc:
                raise self._refuse_unpersisted(f"dirty bit could not be cleared ({exc})") from None

    def shutdown(self) -> None:
        """TPM2_Shutdown(STATE): persist the clock and mark the shutdown orderly."""
        with self.clock.command("TPM2_Shutdown"):
            self._tick()
            self._persist(replace(self.state, nv_clock=self.tpm_clock(), orderly=True))
            self.started = False

    def read_clock(self) -> tuple[int, int, bool]:
        """TPM2_ReadClock: (clock ms, reset count, safe)."""
        with self.clock.command("TPM2_ReadClock"):
            self._tick()
            return self.tpm_clock(), self.state.boot_count, self.state.clock_safe

    # ---- dictionary-attack protection -------------------------------------------------

    @property
    def locked_out(self) -> bool:
        return self.state.failed_tries >= self.max_tries

    def _record_failure(self) -> None:
        s = self.state
        now = self.tpm_clock()
        new = replace(s, failed_tries=min(self.max_tries, s.failed_tries + 1),
                      da_clock=s.da_clock if s.failed_tries else now)
        try:
            self._persist(new)
        except (StorageUnavailable, RpmbError):
            # a dark period: the failure cannot be recorded to storage
            if self.policy == "tpm2-nonorderly":
                new = replace(s, failed_tries=self.max_tries, da_clock=now)
            self.state = new  # RAM only; the dirty bit (if any) covers a reboot

    # ---- sealed objects ------------------------------------------------------------------

    def _seal_key(self) -> AESGCM:
        """The storage key protecting sealed blobs, expanded from the persistent storage seed."""
        key = HKDFExpand(algorithm=hashes.SHA256(), length=32, info=b"fTPM sealed data object key"
                         ).derive(self.state.storage_seed)
        return AESGCM(key)

    def create_sealed(self, data: bytes, auth: bytes) -> bytes:
        """TPM2_Create of a sealed data object with an authValue; returns the blob."""
        with self.clock.command("TPM2_Create"):
            self._tick()
            nonce = os.urandom(12)
            body = hashlib.sha256(auth).digest() + data
            return nonce + self._seal_key().encrypt(nonce, body, b"sealed")

    def unseal(self, blob: bytes, auth: bytes) -> bytes:
        """TPM2_Unseal with a DA-protected authValue."""
        with self.clock.command("TPM2_Unseal"):
            self._tick()
            if self.locked_out:
                raise TpmRefused("dictionary-attack lockout", "TPM_RC_LOCKOUT")
            try:
                body = self._seal_key().decrypt(blob[:12], blob[12:], b"sealed")
            except (InvalidTag, ValueError):
                raise TpmRefused("sealed blob does not verify", "TPM_RC_INTEGRITY") from None
            if not hmac.compare_digest(body[:32], hashlib.sha256(auth).digest()):
                self._record_failure()
                raise TpmRefused("wrong authorization value", "TPM_RC_AUTH_FAIL")
            return body[32:]

    # ---- NV ------------------------------------------------------------------------------

    def _nv_command(self, name: str, fn) -> None:
        with self.clock.command(name):
            self._tick()
            nv = self.state.nv_dict()
            fn(nv)
            try:
                self._persist(self.state.with_nv(nv))
            except (StorageUnavailable, RpmbError) as exc:
                raise self._refuse_unpersisted(f"{name} could not be committed ({exc})") from None

    def nv_define_space(self, index: int, size: int, *, counter: bool = False) -> None:
        def op(nv: dict) -> None:
            if index in nv:
                raise TpmRefused(f"NV index 0x{index:08x} already defined", "TPM_RC_NV_DEFINED")
            if counter and size != 8:
                raise TpmRefused("a counter index is 8 bytes", "TPM_RC_SIZE")
            nv[index] = NvIndex(size=size, counter=counter)
        self._nv_command("TPM2_NV_DefineSpace", op)

    def nv_undefine_space(self, index: int) -> None:
        def op(nv: dict) -> None:
            self._get(nv, index)
            del nv[index]
        self._nv_command("TPM2_NV_UndefineSpace", op)

    def nv_write(self, index: int, data: bytes, offset: int = 0) -> None:
        def op(nv: dict) -> None:
            e = self._get(nv, index)
            if e.counter:
                raise TpmRefused("TPM2_NV_Write to a counter index", "TPM_RC_ATTRIBUTES")
            if offset + len(data) > e.size:
                raise TpmRefused(f"write of {len(data)} bytes at {offset} exceeds index size {e.size}",
                                 "TPM_RC_NV_RANGE")
            buf = bytearray(e.data.ljust(e.size, b"\0"))
            buf[offset:offset + len(data)] = data
            nv[index] = replace(e, data=bytes(buf), written=True)
        self._nv_command("TPM2_NV_Write", op)

    def nv_increment(self, index: int) -> int:
        def op(nv: dict) -> None:
            e = self._get(nv, index)
            if not e.counter:
                raise TpmRefused("TPM2_NV_Increment on an ordinary index", "TPM_RC_ATTRIBUTES")
            value = int.from_bytes(e.data, "big") + 1 if e.written else 1
            nv[index] = replace(e, data=value.to_bytes(8, "big"), written=True)
        self._nv_command("TPM2_NV_Increment", op)
        return int.from_bytes(self.state.nv_dict()[index].data, "big")

    def nv_read(self, index: int) -> bytes:
        with self.clock.command("TPM2_NV_Read"):
            self._tick()
            e = self._get(self.state.nv_dict(), index)
            if not e.written:
                raise TpmRefused(f"NV index 0x{index:08x} not written", "TPM_RC_NV_UNINITIALIZED")
            return e.data

    @staticmethod
    def _get(nv: dict, index: int) -> NvIndex:
        if index not in nv:
            raise TpmRefused(f"NV index 0x{index:08x} not defined", "TPM_RC_HANDLE")
        return nv[index]

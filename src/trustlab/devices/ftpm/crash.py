"""Exhaustive crash-point testing of the fTPM over a random workload.

For every command of a seeded workload, the command is first run once with a
counting :class:`PowerRail` to learn how many crash points it passes (two per
frame on the bus: before it and halfway through it) and which state it
commits. Then, for *every* point, the eMMC is restored to its state before the
command, the command is re-run with power cut at that point, the platform is
rebooted, and the state the TEE recovers is compared with the state before
and after the command:

* ``recovered_old`` / ``recovered_new`` -- the two legal outcomes (a command
  that first persists NVClock -- fate sharing -- and then its own change runs
  two transactions; recovering the first one's result counts as new);
* ``torn`` -- anything else (a mix of old and new blocks, or a state that fails
  authentication: storage that holds no valid state is the worst tear);
* ``lost_committed`` -- a state older than the last commit acknowledged before
  the crash (in this command or an earlier one): a durable write was lost;
* ``rollbacks_accepted`` -- after the reboot the fTPM starts up (its boot-time
  write fences any request the OS still holds) and the OS replays every write
  request it captured during the crashed command and the one before; each
  one the eMMC accepts is a rollback.

The run is deterministic for a seed, so crash point *k* is the same moment in
every re-run. A re-run that does not reach point *k* (it resumed from something
other than what the reference run resumed from: a stale mount) is itself a
verdict, counted by the state it resumed from, never an exception: the checker
reports every broken store, it does not crash on one.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Callable

from trustlab.devices.ftpm import rpmb_frame as rf
from trustlab.devices.ftpm.atomic_store import AtomicStore
from trustlab.devices.ftpm.blob import RpmbNVStore
from trustlab.devices.ftpm.errors import FtpmError, PowerLoss, RpmbError, StorageCorrupt, TpmRefused
from trustlab.devices.ftpm.faults import PowerRail
from trustlab.devices.ftpm.ftpm import FirmwareTpm
from trustlab.devices.ftpm.normal_world import Capture
from trustlab.devices.ftpm.platform import Platform
from trustlab.devices.ftpm.state import FtpmState
from trustlab.timing.clock import Clock

AUTH = b"correct horse"
INDICES = {0x01000001: (8, True), 0x01000002: (64, False), 0x01000003: (300, False), 0x01000004: (500, False)}
SCRATCH = 0x01000010
CLOCK_PERIOD_MS = 4096  # small, so NVClock writes happen inside the workload


@dataclass(frozen=True)
class Op:
    name: str
    args: tuple = ()
    idle_ms: float = 0.0  # physical time that passes before the command (drives NVClock writes)


def make_workload(n: int, seed: int) -> list[Op]:
    """A seeded mix of state-changing TPM 2.0 commands touching one or several blocks."""
    rng = random.Random(seed)
    ops: list[Op] = []
    scratch = False
    for _ in range(n):
        idle = rng.choice((0.0, 0.0, rng.uniform(0, 3000)))
        r = rng.random()
        if r < 0.35:
            index = rng.choice([i for i, (_, ctr) in INDICES.items() if not ctr])
            size = INDICES[index][0]
            length = rng.randint(1, size)
            offset = rng.randint(0, size - length)
            ops.append(Op("TPM2_NV_Write", (index, rng.randbytes(length), offset), idle))
        elif r < 0.6:
            ops.append(Op("TPM2_NV_Increment", (0x01000001,), idle))
        elif r < 0.75:
            ops.append(Op("TPM2_Unseal(bad auth)", (), idle))
        elif r < 0.82:
            ops.append(Op("TPM2_NV_UndefineSpace" if scratch else "TPM2_NV_DefineSpace", (SCRATCH,), idle))
            scratch = not scratch
        elif r < 0.87:
            ops.append(Op("reboot", (), idle))  # TPM2_Shutdown, TPM2_Startup (dirty bit), storage ready
        else:
            ops.append(Op("TPM2_ReadClock", (), idle or rng.uniform(2000, 5000)))
    return ops


@dataclass
class CrashReport:
    crash_points: int = 0
    recovered_old: int = 0
    recovered_new: int = 0
    torn: int = 0
    lost_committed: int = 0
    rollbacks_accepted: int = 0
    # details, not part of the experiment's headline record
    commands: int = 0
    replays_attempted: int = 0
    points_by_label: dict[str, int] = field(default_factory=dict)
    frames_written: int = 0

    def headline(self) -> dict[str, int]:
        keys = ("crash_points", "recovered_old", "recovered_new", "torn", "lost_committed", "rollbacks_accepted")
        return {k: asdict(self)[k] for k in keys}


class _Runner:
    def __init__(self, platform: Platform, clock: Clock, blob: bytes) -> None:
        self.platform = platform
        self.clock = clock
        self.blob = blob

    def tpm(self, rail: PowerRail | None, clock_base: int) -> FirmwareTpm:
        _, store = self.platform.boot(rail=rail)
        t = FirmwareTpm(store, self.clock, policy="dirty-bit", max_tries=1 << 15,
                        clock_period_ms=CLOCK_PERIOD_MS)
        t.resume()
        t._clock_base = clock_base  # RAM clock continuity across the harness's re-creation
        return t


def _apply(t: FirmwareTpm, op: Op, sealed: bytes) -> None:
    if op.idle_ms:
        t.clock.charge_ms("idle", op.idle_ms)
    try:
        if op.name == "TPM2_NV_Write":
            index, data, offset = op.args
            t.nv_write(index, data, offset)
        elif op.name == "TPM2_NV_Increment":
            t.nv_increment(*op.args)
        elif op.name == "TPM2_Unseal(bad auth)":
            t.unseal(sealed, b"wrong guess")
        elif op.name == "TPM2_NV_DefineSpace":
            t.nv_define_space(op.args[0], 32)
        elif op.name == "TPM2_NV_UndefineSpace":
            t.nv_undefine_space(op.args[0])
        elif op.name == "TPM2_ReadClock":
            t.read_clock()
        elif op.name == "reboot":
            t.shutdown()
            t.startup()
            t.storage_ready()
        else:
            raise ValueError(op.name)
    except TpmRefused as exc:
        if exc.rc != "TPM_RC_AUTH_FAIL":
            raise


def _recovered(store: AtomicStore) -> bytes | None:
    """What a rebooted TEE reads back as the committed state; None when it fails authentication."""
    try:
        return RpmbNVStore(store).load() or b""
    except (StorageCorrupt, FtpmError):
        return None


def _count(report: CrashReport, label: str) -> None:
    report.points_by_label[label] = report.points_by_label.get(label, 0) + 1
    report.crash_points += 1


def run_campaign(n_commands: int, seed: int = 0, *, progress: Callable[[int], None] | None = None,
                 clock: Clock | None = None, store_class: type[AtomicStore] = AtomicStore,
                 levels: int = 1) -> CrashReport:
    """Crash at every point of every command of an ``n_commands`` workload (``levels``: bit-vector depth)."""
    from trustlab.devices.ftpm import DEFAULT_STORAGE_PROFILE
    from trustlab.timing import registry

    clock = clock or Clock(registry.load(DEFAULT_STORAGE_PROFILE), seed=seed)
    # two-level: a bitmap block per 3 data blocks, so commits really flip several bitmaps
    platform = Platform(n_blocks=8, seed=seed, clock=clock, store_class=store_class, levels=levels,
                        fanout=3 if levels == 2 else None)
    _, store = platform.boot()
    t = FirmwareTpm(store, clock, policy="dirty-bit", max_tries=1 << 15, clock_period_ms=CLOCK_PERIOD_MS)
    t.startup()
    t.storage_ready()
    for index, (size, ctr) in INDICES.items():
        t.nv_define_space(index, size, counter=ctr)
    sealed = t.create_sealed(b"volume master key", AUTH)
    runner = _Runner(platform, clock, b"")
    report = CrashReport()
    # states that were once current; "no state at all" counts as the oldest of them
    history: dict[bytes, int] = {b"": -1, FtpmState().encode(): -1}
    old = t.state.encode()
    history[old] = 0
    clock_base = t.tpm_clock()
    previous_capture: list[list[bytes]] = []
    for c, op in enumerate(make_workload(n_commands, seed), start=1):
        snap = platform.device.snapshot()
        now = clock.now_ms
        # reference run: count the crash points, learn the committed outcome
        rail = PowerRail()
        platform.capture = Capture()
        # the idle point between commands is a crash point too: storage must hold the last commit
        _count(report, "between commands")
        try:
            ref = runner.tpm(None, clock_base)
        except (StorageCorrupt, FtpmError):  # storage fails authentication: torn, and nothing sound follows
            report.torn += 1
            break
        resumed = ref.state.encode()
        if resumed != old:
            if resumed in history:
                report.lost_committed += 1
            else:
                report.torn += 1
            break  # storage no longer holds what the workload committed; nothing sound follows
        report.recovered_old += 1
        ref.store.client.os.rail = rail
        written_before = platform.device.stats.frames_written
        try:
            _apply(ref, op, sealed)
        except (StorageCorrupt, RpmbError):  # a block read mid-command fails authentication
            report.torn += 1
            break
        report.frames_written += platform.device.stats.frames_written - written_before
        new = ref.state.encode()
        # a command may commit twice (NVClock first -- fate sharing -- then its own change)
        sequence = [old] + [st.encode() for st in ref.commit_log]
        next_base = ref.tpm_clock()
        after_snap = platform.device.snapshot()
        after_now = clock.now_ms
        this_capture = platform.capture.write_requests
        for k in range(rail.points):
            platform.device.restore(snap)
            clock.now_ms = now
            platform.capture = Capture()
            crash_rail = PowerRail(crash_at=k, record_labels=True)
            try:
                victim = runner.tpm(None, clock_base)
            except (StorageCorrupt, FtpmError):  # the same storage the reference resumed from, now unreadable
                _count(report, "re-run diverged")
                report.torn += 1
                continue
            start = victim.state.encode()
            victim.store.client.os.rail = crash_rail
            try:
                _apply(victim, op, sealed)
            except PowerLoss:
                pass
            except FtpmError:  # refused what the reference run did (TPM_RC_NV_DEFINED ...): it diverged
                pass
            if not crash_rail.tripped:
                # the re-run from the same storage went another way: it did not resume what the reference
                # resumed (a stale mount); a verdict on the store, counted by what it resumed from
                _count(report, "re-run diverged")
                if start != old and start in history:
                    report.lost_committed += 1
                else:
                    report.torn += 1
                continue
            _count(report, crash_rail.labels[-1])
            # reboot and look at what storage says is committed, before anything writes
            _, store2 = platform.boot()
            recovered = _recovered(store2)
            acked = len(victim.commit_log)  # commits acknowledged to the fTPM before the crash
            if recovered is None:  # fails authentication: neither the old nor the new state
                report.torn += 1
                continue
            if recovered == sequence[acked]:
                if acked == 0:
                    report.recovered_old += 1
                else:
                    report.recovered_new += 1
            elif acked + 1 < len(sequence) and recovered == sequence[acked + 1]:
                report.recovered_new += 1
            elif recovered in sequence[:acked] or recovered in history:
                report.lost_committed += 1
            else:
                report.torn += 1
            # the fTPM boots (its boot-time write fences held requests), then the OS replays
            rebooted = FirmwareTpm(store2, clock, policy="dirty-bit", max_tries=1 << 15,
                                   clock_period_ms=CLOCK_PERIOD_MS)
            try:
                rebooted.startup()
            except (StorageCorrupt, FtpmError):  # counted above; a TPM that cannot start takes no replays
                continue
            for request in platform.capture.write_requests + previous_capture:
                if rf.frame_type(request[0]) != rf.REQ_AUTH_WRITE:
                    continue
                report.replays_attempted += 1
                if rebooted.store.client.os.inject(request) == rf.RES_OK:
                    report.rollbacks_accepted += 1
        # continue the workload from the reference outcome
        platform.device.restore(after_snap)
        clock.now_ms = after_now
        if new != old:
            history[new] = c
        old = new
        clock_base = next_base
        previous_capture = this_capture
        report.commands = c
        if progress is not None:
            progress(c)
    return report

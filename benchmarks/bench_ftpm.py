"""fTPM storage mechanisms: crash-campaign throughput, commit costs, lockout trade-off.

Figures (ratios are measured within one run, so they compare across machines):
- crash campaign over a workload: crash points, outcomes, crash points per second;
- RPMB frames per commit of k changed blocks, direct vs two-level bit vector
  (``two_level_over_direct_frames``), and modelled ms per commit on the eMMC profile;
- host throughput of authenticated RPMB writes (model speed, not eMMC speed);
- dark-period policies over a population of boots: lockout rate and attacker guesses;
- (full run) measured RPMB frames per TPM 2.0 command on swtpm.
"""

from __future__ import annotations

import shutil
import time

from trustlab.devices.ftpm import DEFAULT_STORAGE_PROFILE
from trustlab.devices.ftpm.crash import run_campaign
from trustlab.devices.ftpm.platform import Platform
from trustlab.devices.ftpm.usability import compare
from trustlab.timing import registry
from trustlab.timing.clock import Clock


def _commit_frames(levels: int, k: int, fanout: int | None) -> tuple[int, float]:
    clock = Clock(registry.load(DEFAULT_STORAGE_PROFILE))
    p = Platform(n_blocks=64, levels=levels, fanout=fanout, clock=clock)
    _, s = p.boot()
    before, t0 = p.device.stats.frames_written, clock.now_ms
    with s.transaction():
        for i in range(k):
            s.write(i * (64 // k), b"x%d" % i)  # spread over the store
    return p.device.stats.frames_written - before, clock.now_ms - t0


def run(quick: bool) -> dict:
    figures: dict = {}
    n = 60 if quick else 300
    t = time.perf_counter()
    r = run_campaign(n, seed=1)
    wall = time.perf_counter() - t
    figures["crash_campaign"] = dict(r.headline(), commands=n, replays_attempted=r.replays_attempted,
                                     crash_points_per_s=r.crash_points / wall, wall_s=wall)
    commits = {}
    for k in (1, 4, 16):
        d_frames, d_ms = _commit_frames(1, k, None)
        t_frames, t_ms = _commit_frames(2, k, 8)
        commits[f"{k}_blocks"] = {"direct_frames": d_frames, "two_level_frames": t_frames,
                                  "two_level_over_direct_frames": t_frames / d_frames,
                                  "direct_ms": d_ms, "two_level_ms": t_ms}
    figures["commit"] = commits
    p = Platform(n_blocks=8)
    os_, s = p.boot()
    client = s.client
    writes = 300 if quick else 3000
    t = time.perf_counter()
    for i in range(writes):
        client.write(1 + i % 8, [bytes([i % 256]) * 256])
    figures["host_rpmb_writes_per_s"] = writes / (time.perf_counter() - t)
    boots = 100 if quick else 1000
    figures["dark_periods"] = {o.policy: {"lockout_rate": o.lockout_rate, "dark_reboots": o.dark_reboots,
                                          "attacker_guesses_in_10_boots": o.attacker_guesses}
                               for o in compare(boots, seed=1)}
    if not quick and shutil.which("swtpm"):
        from trustlab.devices.ftpm.storage_cost import measure

        figures["rpmb_frames_per_command"] = {c.label: c.rpmb_frames
                                              for c in measure(registry.load(DEFAULT_STORAGE_PROFILE), reps=3)}
    return figures

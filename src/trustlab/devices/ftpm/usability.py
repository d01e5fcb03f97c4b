"""What each dark-period rule costs a legitimate user, and what it gives an attacker.

A population of boots is simulated on real fTPM instances (one phone per
policy, state carried from boot to boot). Each boot: the firmware starts the
fTPM with storage available; a dark period begins; the user enters the PIN to
unseal the disk key (sometimes mistyping it first); with some probability the
phone reboots *inside* the dark period (a crash, a battery pull); otherwise the
OS loads its storage driver and later shuts down -- orderly, or not (power cut).

The usability cost is the fraction of boots on which the legitimate user meets
``TPM_RC_LOCKOUT``. The security side is measured by an attacker who guesses
the PIN in dark periods and reboots whenever that helps: how many wrong guesses
fit in a number of boots before lockout stops them.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass

from trustlab.devices.ftpm.errors import TpmRefused
from trustlab.devices.ftpm.ftpm import POLICIES, FirmwareTpm
from trustlab.devices.ftpm.normal_world import OsBehaviour
from trustlab.devices.ftpm.platform import Platform
from trustlab.timing.clock import Clock

PIN = b"2468"


@dataclass(frozen=True)
class BootMix:
    p_typo: float = 0.1           # first PIN attempt of a boot is wrong
    p_dark_reboot: float = 0.02   # the phone reboots inside the dark period
    p_unclean: float = 0.05       # power cut instead of TPM2_Shutdown after a normal boot
    max_tries: int = 3
    recovery_ms: int = 10 * 60 * 1000
    idle_ms: float = 8 * 3600 * 1000.0  # mean powered time per session (self-healing runs on it)


@dataclass
class PolicyOutcome:
    policy: str
    boots: int
    lockout_boots: int
    lockout_rate: float
    dark_reboots: int
    attacker_guesses: int          # wrong guesses the attacker got within the attack's boots
    attacker_boots: int

    def as_dict(self) -> dict:
        return asdict(self)


def _tpm(platform: Platform, clock: Clock, policy: str, mix: BootMix, behaviour: OsBehaviour) -> FirmwareTpm:
    _, store = platform.boot(behaviour=behaviour)
    return FirmwareTpm(store, clock, policy=policy, max_tries=mix.max_tries, recovery_ms=mix.recovery_ms)


def _provision(platform: Platform, clock: Clock, policy: str, mix: BootMix, beh: OsBehaviour) -> bytes:
    """First boot with storage: seal the user's disk key under PIN and shut down cleanly."""
    t = _tpm(platform, clock, policy, mix, beh)
    t.startup()
    sealed = t.create_sealed(b"disk key", PIN)
    t.storage_ready()
    t.shutdown()
    return sealed


def legitimate_population(policy: str, boots: int, mix: BootMix, seed: int, clock: Clock) -> tuple[int, int]:
    """(boots on which the legitimate user was locked out, dark-period reboots)."""
    rng = random.Random(seed)
    platform = Platform(n_blocks=4, seed=seed, clock=clock)
    beh = OsBehaviour()
    sealed = _provision(platform, clock, policy, mix, beh)
    locked = dark_reboots = 0
    for _ in range(boots):
        beh.available = True
        t = _tpm(platform, clock, policy, mix, beh)
        t.startup()
        beh.available = False  # firmware unloaded its driver; the OS has not loaded one yet
        attempts = [b"1357", PIN] if rng.random() < mix.p_typo else [PIN]
        was_locked = False
        for pin in attempts:
            try:
                t.unseal(sealed, pin)
                break
            except TpmRefused as exc:
                if exc.rc == "TPM_RC_LOCKOUT":
                    was_locked = True
                    break
        locked += was_locked
        if rng.random() < mix.p_dark_reboot:
            dark_reboots += 1
            continue  # power lost inside the dark period: no storage_ready, no shutdown
        beh.available = True
        t.storage_ready()
        clock.charge_ms("idle", rng.expovariate(1.0 / mix.idle_ms))  # the phone in use, TPM powered
        t.read_clock()  # some TPM use during the session (self-healing and NVClock bookkeeping)
        if rng.random() >= mix.p_unclean:
            t.shutdown()
    return locked, dark_reboots


def attack(policy: str, boots: int, mix: BootMix, seed: int, clock: Clock) -> int:
    """Wrong PIN guesses an attacker makes in ``boots`` boots (rebooting in dark periods)."""
    platform = Platform(n_blocks=4, seed=seed + 1, clock=clock)
    beh = OsBehaviour()
    sealed = _provision(platform, clock, policy, mix, beh)
    guesses = 0
    for b in range(boots):
        beh.available = True
        t = _tpm(platform, clock, policy, mix, beh)
        t.startup()
        beh.available = False
        for g in range(mix.max_tries):
            try:
                t.unseal(sealed, b"x%05d" % (b * mix.max_tries + g))
            except TpmRefused as exc:
                if exc.rc == "TPM_RC_LOCKOUT":
                    break
                guesses += 1
            if t.locked_out or t.state.failed_tries >= mix.max_tries - 1:
                break  # reboot before the lockout would be persisted (the Figure 4 attack)
        # reboot inside the dark period, without ever waiting out a lockout
    return guesses


def compare(boots: int, mix: BootMix | None = None, seed: int = 0, attack_boots: int = 10,
            clock: Clock | None = None) -> list[PolicyOutcome]:
    from trustlab.devices.ftpm import DEFAULT_STORAGE_PROFILE
    from trustlab.timing import registry

    mix = mix or BootMix()
    out = []
    for policy in POLICIES:
        c = clock or Clock(registry.load(DEFAULT_STORAGE_PROFILE), seed=seed)
        locked, dark = legitimate_population(policy, boots, mix, seed, c)
        guesses = attack(policy, attack_boots, mix, seed, c)
        out.append(PolicyOutcome(policy=policy, boots=boots, lockout_boots=locked,
                                 lockout_rate=locked / boots if boots else 0.0, dark_reboots=dark,
                                 attacker_guesses=guesses, attacker_boots=attack_boots))
    return out

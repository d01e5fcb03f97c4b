"""Secure clock with fate sharing, and the dark-period attacks of the paper's Figures 3-5."""

import pytest
from hypothesis import given, settings, strategies as st

from trustlab.devices.ftpm.errors import FtpmError, PowerLoss, TpmRefused
from trustlab.devices.ftpm.faults import PowerRail
from trustlab.devices.ftpm.ftpm import MAX_CLOCK_PERIOD_MS, FirmwareTpm
from trustlab.devices.ftpm.normal_world import OsBehaviour
from trustlab.devices.ftpm.platform import Platform
from trustlab.devices.ftpm.usability import BootMix, compare
from trustlab.devices.ftpm import DEFAULT_STORAGE_PROFILE
from trustlab.timing import registry
from trustlab.timing.clock import Clock

PIN = b"2468"


class Phone:
    """One device across boots; ``boot()`` = firmware phase with storage, then optionally dark."""

    def __init__(self, clock, policy="dirty-bit", **kw):
        self.clock = clock
        self.platform = Platform(n_blocks=4, clock=clock)
        self.beh = OsBehaviour()
        self.policy = policy
        self.kw = kw
        t = self.boot(dark=False)
        self.sealed = t.create_sealed(b"BitLocker VMK", PIN)
        t.shutdown()

    def boot(self, *, dark: bool) -> FirmwareTpm:
        self.beh.available = True
        _, store = self.platform.boot(behaviour=self.beh)
        t = FirmwareTpm(store, self.clock, policy=self.policy, **self.kw)
        t.startup()
        if dark:
            self.beh.available = False  # firmware drivers gone, OS drivers not yet loaded
        else:
            t.storage_ready()
        return t

    def guess(self, t, pin=b"0000") -> str:
        try:
            t.unseal(self.sealed, pin)
            return "ok"
        except TpmRefused as exc:
            return exc.rc


# ---- Figures 3-5 ---------------------------------------------------------------

def test_figure3_tpm_with_storage_locks_the_attacker_out(clock):
    phone = Phone(clock)
    t = phone.boot(dark=False)
    assert [phone.guess(t) for _ in range(3)] == ["TPM_RC_AUTH_FAIL"] * 3
    assert phone.guess(t, PIN) == "TPM_RC_LOCKOUT"  # even the right PIN is refused now
    t = phone.boot(dark=False)                     # rebooting does not help: it was persisted
    assert phone.guess(t, PIN) == "TPM_RC_LOCKOUT"


def test_figure4_without_storage_a_reboot_resets_the_counter(clock):
    phone = Phone(clock, policy="no-storage")
    candidates = [b"%04d" % i for i in range(40)] + [PIN]
    tried = 0
    found = False
    while not found:
        t = phone.boot(dark=True)
        for _ in range(2):  # stay below max_tries, then reboot inside the dark period
            pin = candidates[tried]
            tried += 1
            result = phone.guess(t, pin)
            assert result != "TPM_RC_LOCKOUT"
            if result == "ok":
                found = True
                break
    assert tried == len(candidates)  # 40 wrong guesses with max_tries = 3: the attack works


def test_figure5_dirty_bit_turns_a_dark_reboot_into_lockout(clock):
    phone = Phone(clock, policy="dirty-bit")
    t = phone.boot(dark=True)
    assert t.state.dirty
    assert [phone.guess(t) for _ in range(2)] == ["TPM_RC_AUTH_FAIL"] * 2
    t = phone.boot(dark=True)  # reboot inside the dark period
    assert t.locked_out
    assert phone.guess(t, PIN) == "TPM_RC_LOCKOUT"


def test_dirty_bit_is_cleared_when_storage_returns_and_dark_failures_persist(clock):
    phone = Phone(clock, policy="dirty-bit")
    t = phone.boot(dark=True)
    assert phone.guess(t) == "TPM_RC_AUTH_FAIL"
    phone.beh.available = True
    t.storage_ready()
    assert not t.state.dirty
    t.shutdown()
    t = phone.boot(dark=True)
    assert not t.locked_out and t.state.failed_tries == 1  # the dark-period failure was recorded
    assert phone.guess(t, PIN) == "ok"


def test_legitimate_reboot_in_dark_period_costs_a_lockout_which_self_heals(clock):
    phone = Phone(clock, policy="dirty-bit", recovery_ms=60_000)
    t = phone.boot(dark=True)
    assert phone.guess(t, PIN) == "ok"
    t = phone.boot(dark=False)          # rebooted inside the dark period last time
    assert phone.guess(t, PIN) == "TPM_RC_LOCKOUT"
    clock.charge_ms("idle", 3 * 60_000)  # three recovery periods of powered time
    assert phone.guess(t, PIN) == "ok"


def test_fate_sharing_refuses_boot_when_dirty_bit_cannot_be_persisted(clock):
    phone = Phone(clock)
    phone.beh.refuse_writes = True
    _, store = phone.platform.boot(behaviour=phone.beh)
    t = FirmwareTpm(store, clock)
    with pytest.raises(TpmRefused, match="TPM_RC_NV_UNAVAILABLE"):
        t.startup()
    with pytest.raises(TpmRefused, match="TPM_RC_INITIALIZE"):
        t.unseal(phone.sealed, PIN)


def test_refusing_os_cannot_launder_ram_failures_through_a_failed_clock_write(clock):
    """Failures kept in RAM while the OS refuses writes survive a refused NVClock persist."""
    phone = Phone(clock, policy="dirty-bit", clock_period_ms=10_000)
    t = phone.boot(dark=False)
    phone.beh.refuse_writes = True
    assert [phone.guess(t) for _ in range(3)] == ["TPM_RC_AUTH_FAIL"] * 3
    clock.charge_ms("idle", 10_000)                    # cross the NVClock period
    assert phone.guess(t, PIN) == "TPM_RC_NV_UNAVAILABLE"  # fate sharing: refused
    phone.beh.refuse_writes = False
    assert phone.guess(t, PIN) == "TPM_RC_LOCKOUT"     # still locked out, and now persisted
    t = phone.boot(dark=False)
    assert t.locked_out


def test_tpm2_nonorderly_rule_locks_on_first_unrecordable_failure(clock):
    phone = Phone(clock, policy="tpm2-nonorderly")
    t = phone.boot(dark=True)
    assert phone.guess(t) == "TPM_RC_AUTH_FAIL"
    assert phone.guess(t, PIN) == "TPM_RC_LOCKOUT"  # one typo in a dark period locks the user out


def test_tpm2_nonorderly_startup_charges_a_try(clock):
    phone = Phone(clock, policy="tpm2-nonorderly")
    t = phone.boot(dark=False)          # ...and power is cut: no TPM2_Shutdown
    t = phone.boot(dark=False)
    assert t.state.failed_tries == 1
    t.shutdown()
    t = phone.boot(dark=False)
    assert t.state.failed_tries == 1    # an orderly shutdown costs nothing


def test_usability_population_shows_the_tradeoff(clock):
    outcomes = {o.policy: o for o in compare(150, BootMix(p_typo=0.2, p_dark_reboot=0.05), seed=3)}
    none, dirty, tpm2 = outcomes["no-storage"], outcomes["dirty-bit"], outcomes["tpm2-nonorderly"]
    assert none.lockout_boots == 0 and none.attacker_guesses >= 2 * none.attacker_boots  # usable, insecure
    assert dirty.attacker_guesses < 3 and tpm2.attacker_guesses <= 3                    # both secure
    # each reboot inside a dark period costs the dirty-bit user a lockout (plus typos while still healing)
    assert dirty.dark_reboots > 0 and dirty.dark_reboots <= dirty.lockout_boots <= 2 * dirty.dark_reboots
    assert tpm2.lockout_boots > dirty.lockout_boots  # every dark-period typo locks under the spec rule


# ---- secure clock ------------------------------------------------------------------

def test_clock_period_is_bounded_by_2_pow_22(clock):
    p = Platform(n_blocks=4, clock=clock)
    _, store = p.boot()
    with pytest.raises(FtpmError, match="2\\^22"):
        FirmwareTpm(store, clock, clock_period_ms=MAX_CLOCK_PERIOD_MS + 1)


def test_fate_sharing_refuses_service_until_clock_is_persisted(clock):
    p = Platform(n_blocks=4, clock=clock)
    beh = OsBehaviour()
    _, store = p.boot(behaviour=beh)
    t = FirmwareTpm(store, clock, clock_period_ms=1000)
    t.startup(); t.storage_ready()
    beh.refuse_writes = True
    clock.charge_ms("idle", 500)
    t.read_clock()                                   # inside the period: no write needed
    clock.charge_ms("idle", 600)
    with pytest.raises(TpmRefused, match="TPM_RC_NV_UNAVAILABLE"):
        t.read_clock()                               # crossed the period and the OS refuses
    beh.refuse_writes = False
    value, _, safe = t.read_clock()
    assert value >= 1100 and safe


def test_rollback_flag_after_non_orderly_power_loss(clock):
    p = Platform(n_blocks=4, clock=clock)
    _, store = p.boot()
    t = FirmwareTpm(store, clock, clock_period_ms=1000)
    t.startup(); t.storage_ready(); t.shutdown()
    _, store = p.boot()
    t = FirmwareTpm(store, clock, clock_period_ms=1000)
    t.startup()
    assert t.read_clock()[2] is True                 # orderly: safe
    clock.charge_ms("idle", 700)
    before = t.read_clock()[0]
    _, store = p.boot()                              # power cut, no TPM2_Shutdown
    t = FirmwareTpm(store, clock, clock_period_ms=1000)
    t.startup()
    after, _, safe = t.read_clock()
    assert after < before and not safe               # rolled back, and it says so
    clock.charge_ms("idle", 1000)
    assert t.read_clock()[2] is True                 # cleared once persisted again


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 3000), st.booleans(), st.integers(0, 30)), min_size=1, max_size=12),
       st.integers(100, 4000))
def test_clock_never_rolls_back_more_than_one_period(steps, period):
    """Whatever the crashes and OS refusals, a reported clock never falls back by >= period."""
    clock = Clock(registry.load(DEFAULT_STORAGE_PROFILE))
    p = Platform(n_blocks=4, clock=clock)
    beh = OsBehaviour()
    _, store = p.boot(behaviour=beh)
    t = FirmwareTpm(store, clock, clock_period_ms=period)
    t.startup(); t.storage_ready()
    highest = 0
    for idle, refuse, crash_at in steps:
        clock.charge_ms("idle", idle)
        beh.refuse_writes = refuse
        t.store.client.os.rail = PowerRail(crash_at=crash_at)
        try:
            value = t.read_clock()[0]
            assert value > highest - period
            highest = max(highest, value)
        except TpmRefused:
            pass
        except PowerLoss:
            pass
        if t.store.client.os.rail.tripped:
            beh.refuse_writes = False
            _, store = p.boot(behaviour=beh)
            t = FirmwareTpm(store, clock, clock_period_ms=period)
            t.startup()

import pytest

from trustlab.timing.clock import Clock
from trustlab.timing.profile import Component, Profile


def profile(**spreads):
    comps = {
        "ohc": Component("ohc", 10.0),
        "sha1_byte": Component("sha1_byte", 0.01, unit="byte"),
        "keygen": Component("keygen", 100.0, **spreads),
    }
    return Profile(name="t", components=comps)


def test_ledger_attributes_charges_to_commands_and_components():
    clock = Clock(profile())
    with clock.command("A") as a:
        clock.charge("ohc")
        clock.charge("sha1_byte", 1000)
    with clock.command("B"):
        clock.charge("ohc")
    clock.charge("ohc")
    assert a.ms == pytest.approx(20.0) and a.breakdown == pytest.approx({"ohc": 10.0, "sha1_byte": 10.0})
    assert clock.now_ms == pytest.approx(40.0)
    assert clock.by_component["ohc"] == pytest.approx(30.0)
    assert clock.by_command["A"] == pytest.approx(20.0) and clock.command_counts["B"] == 1
    assert clock.breakdown("A") == pytest.approx({"ohc": 10.0, "sha1_byte": 10.0})
    assert clock.last.name == "B"


def test_nested_commands_roll_up_into_the_parent():
    clock = Clock(profile())
    with clock.command("ExecuteTransport") as outer:
        clock.charge("ohc")
        with clock.command("IncrementCounter") as inner:
            clock.charge("ohc", 2)
    assert inner.ms == pytest.approx(20.0)
    assert outer.ms == pytest.approx(30.0)
    assert clock.now_ms == pytest.approx(30.0)


def test_spread_sampling_is_seeded_and_reproducible():
    a, b, c = (Clock(profile(sd=20.0), seed=s) for s in (7, 7, 8))
    draws = [[clk.charge("keygen") for _ in range(50)] for clk in (a, b, c)]
    assert draws[0] == draws[1] != draws[2]
    assert all(d >= 0 for d in draws[0])
    assert 80 < sum(draws[0]) / 50 < 120


def test_empirical_samples_are_resampled():
    clock = Clock(profile(samples=(90.0, 110.0, 300.0)), seed=1)
    assert {clock.charge("keygen") for _ in range(100)} == {90.0, 110.0, 300.0}


def test_negative_count_is_refused():
    with pytest.raises(ValueError):
        Clock(profile()).charge("ohc", -1)


def test_realtime_sleeps_once_for_modelled_minus_elapsed():
    now = [0.0]
    slept = []

    def fake_sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    clock = Clock(profile(), realtime=True, sleep=fake_sleep, wallclock=lambda: now[0])
    with clock.command("Seal") as rec:
        for _ in range(100):  # many tiny charges, as an emulator hashing single bytes makes
            clock.charge("sha1_byte", 1)
        now[0] += 0.004  # the host itself took 4 ms
        clock.charge("ohc")
    assert len(slept) == 1
    assert slept[0] == pytest.approx((rec.ms - 4.0) / 1000.0)
    assert rec.slept_ms == pytest.approx(rec.ms - 4.0)


def test_realtime_never_sleeps_when_host_was_slower():
    now = [0.0]
    slept = []
    clock = Clock(profile(), realtime=True, sleep=slept.append, wallclock=lambda: now[0])
    with clock.command("X"):
        clock.charge("ohc")
        now[0] += 1.0
    assert slept == []


def test_charge_all_is_charge_per_component_to_the_last_bit():
    """The proxy charges a command's terms / a device's breakdown in one call: same draws, same sums."""
    terms = {"ohc": 1, "sha1_byte": 333, "keygen": 2, "ohc_zero": 0}
    breakdown = {"ohc": 0.1, "sha1_byte": 0.7, "keygen": 1.0 / 3.0}
    one, all_ = (Clock(profile(sd=20.0), seed=5) for _ in range(2))
    for clock, batched in ((one, False), (all_, True)):
        for name in ("A", None, "B"):
            if name is not None:
                clock.begin(name)
                if name == "B":
                    clock.begin("inner")
            for _ in range(3):
                if batched:
                    clock.charge_all({c: n for c, n in terms.items() if c != "ohc_zero"})
                    clock.charge_all_ms(breakdown)
                else:
                    for c, n in terms.items():
                        if c != "ohc_zero":
                            clock.charge(c, n)
                    for c, ms in breakdown.items():
                        clock.charge_ms(c, ms)
            if name == "B":
                clock.end()
            if name is not None:
                clock.end()
    assert one.now_ms == all_.now_ms
    for ledger in ("by_component", "by_command", "by_command_component", "command_counts"):
        assert getattr(one, ledger) == getattr(all_, ledger)
    assert one.last.breakdown == all_.last.breakdown and one.last.ms == all_.last.ms
    with pytest.raises(ValueError, match="negative count"):
        all_.charge_all({"ohc": -1})


def test_begin_charged_and_end_charged_keep_every_charge_of_the_separate_calls():
    """The dispatcher's fused opening and closing charges: the same ledger, to the last bit, as
    begin + charge_ms + charge_ms and charge_ms (+ charge_ms) + end, nested or not."""
    values = [0.1, 1 / 3, 2.718281828, 1e-9, 7.0]
    clocks = []
    for fused in (False, True):
        clock = Clock(profile())
        for k, outer in enumerate(values):
            for name, nested in (("A", False), ("B", True)):
                if nested:
                    clock.begin("outer")
                    clock.charge_ms("ohc", outer)
                first, second = outer * 3.1, outer / 7
                hashed = None if k % 2 else outer * 0.37
                if fused:
                    clock.begin_charged(name, "ohc", first, "ohir", second)
                    clock.charge_ms("rsa", second * 11)
                    rec = clock.end_charged(None if hashed is None else "sha1_byte", hashed or 0.0, "ohor", first / 3)
                else:
                    clock.begin(name)
                    clock.charge_ms("ohc", first)
                    clock.charge_ms("ohir", second)
                    clock.charge_ms("rsa", second * 11)
                    if hashed is not None:
                        clock.charge_ms("sha1_byte", hashed)
                    clock.charge_ms("ohor", first / 3)
                    rec = clock.end()
                assert rec is clock.last
                if nested:
                    clock.end()
        clocks.append(clock)
    one, fused_clock = clocks
    assert one.now_ms == fused_clock.now_ms
    for ledger in ("by_component", "by_command", "by_command_component", "command_counts"):
        assert list(getattr(one, ledger).items()) == list(getattr(fused_clock, ledger).items())
    assert list(one.last.breakdown.items()) == list(fused_clock.last.breakdown.items())
    assert (one.last.ms, one.last.start_ms) == (fused_clock.last.ms, fused_clock.last.start_ms)


@pytest.mark.parametrize("opening, closing", [(("ohc", "ohc"), ("ohor", "ohor")), (("ohc", "ohir"), ("ohc", "ohc")),
                                              (("ohir", "ohc"), ("ohir", "ohc"))])
def test_fused_charges_of_one_component_add_up_as_separate_calls(opening, closing):
    """begin_charged / end_charged naming the same component twice (or one the command already has):
    both amounts count, in the record's breakdown as in every total, as with separate charge_ms calls."""
    amounts = (0.1, 1 / 3, 2.718281828, 7.0)
    clocks = []
    for fused in (False, True):
        clock = Clock(profile())
        if fused:
            clock.begin_charged("A", opening[0], amounts[0], opening[1], amounts[1])
            rec = clock.end_charged(closing[0], amounts[2], closing[1], amounts[3])
        else:
            clock.begin("A")
            for component, ms in zip(opening + closing, amounts):
                clock.charge_ms(component, ms)
            rec = clock.end()
        clocks.append((clock, rec))
    (one, one_rec), (fused_clock, rec) = clocks
    if opening[0] == opening[1]:
        assert rec.breakdown[opening[0]] == 0.1 + 1 / 3  # (once overwritten by the second amount alone)
    assert list(rec.breakdown.items()) == list(one_rec.breakdown.items())
    assert rec.ms == one_rec.ms
    assert fused_clock.now_ms == one.now_ms
    for ledger in ("by_component", "by_command", "by_command_component", "command_counts"):
        assert list(getattr(one, ledger).items()) == list(getattr(fused_clock, ledger).items())


def test_end_charged_in_realtime_mode_holds_as_end_does():
    """end_charged's written-out close (an outermost virtual-time command) leaves realtime commands to
    end(): the modelled time is slept, and the record says so, as with charge_ms + end."""
    slept: list[float] = []
    records = []
    for fused in (False, True):
        clock = Clock(profile(), realtime=True, sleep=slept.append, wallclock=lambda: 0.0)
        if fused:
            clock.begin_charged("A", "ohc", 1.5, "ohir", 0.25)
            records.append(clock.end_charged("sha1_byte", 0.5, "ohor", 0.125))
        else:
            clock.begin("A")
            for component, ms in (("ohc", 1.5), ("ohir", 0.25), ("sha1_byte", 0.5), ("ohor", 0.125)):
                clock.charge_ms(component, ms)
            records.append(clock.end())
    assert slept == [0.002375, 0.002375]
    assert records[0].slept_ms == records[1].slept_ms == 2.375
    assert records[0].breakdown == records[1].breakdown

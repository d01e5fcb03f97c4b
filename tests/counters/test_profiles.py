"""The *-counters-2010 profiles: the paper's per-operation figures, with provenance and spreads."""

import pytest

from trustlab.timing import registry

VENDORS = {"atmel": (601.5, 41.0, 60.0, 800.0), "infineon": (509.0, 34.5, 137.0, 800.0),
           "stm": (449.0, 34.5, 87.0, 800.0), "winbond": (600.0, 34.5, 30.0, 600.0)}


@pytest.mark.parametrize("vendor", VENDORS)
def test_counter_profiles(vendor):
    p = registry.load(f"{vendor}-counters-2010")
    assert p.family == "tpm1.2"
    inc, read, transport, sign = VENDORS[vendor]
    assert (p.mean("counter_inc"), p.mean("counter_read"), p.mean("transport"), p.mean("rsa_sign")) == \
        (inc, read, transport, sign)
    for c in p.components.values():
        assert c.provenance.source and c.provenance.note, c.name
    assert p["counter_read"].sd > 0  # the paper's 0.028-0.041 s range kept as a spread
    assert p.mean("ohc") == 0  # whole-command latencies: no separate overhead
    assert p.name in registry.names("tpm1.2")


def test_atmel_ranges_are_spreads():
    p = registry.load("atmel-counters-2010")
    assert p["counter_inc"].sd == pytest.approx((703 - 500) / 12 ** 0.5, rel=1e-5)
    assert p["rsa_sign"].sd == pytest.approx((900 - 650) / 12 ** 0.5, rel=1e-5)
    assert not p.deterministic and p.without_spread().deterministic

"""The oracle study's fast mean is ``statistics.mean`` to the bit (its figures must not move)."""

from __future__ import annotations

import math
import statistics

from hypothesis import given, settings
from hypothesis import strategies as st

from trustlab.experiments.oracle import mean


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=12))
def test_mean_is_statistics_mean_bit_for_bit(values: list[float]) -> None:
    expected = statistics.mean(values)
    got = mean(iter(values))
    assert got == expected or (math.isnan(got) and math.isnan(expected))
    assert type(got) is type(expected)


def test_non_floats_and_infinities_take_statistics_mean() -> None:
    assert mean([2, 4]) == 3 and type(mean([2, 4])) is int
    assert mean([1.0, math.inf]) == math.inf


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False), st.integers(min_value=1, max_value=12))
def test_a_repeated_value_is_statistics_mean_to_the_sign(value: float, n: int) -> None:
    """The shortcut for one repeated value (the parties' identical calls) returns what the exact sum
    would, including 0.0 for repeated -0.0 and infinities left to statistics.mean."""
    expected = statistics.mean([value] * n)
    got = mean([value] * n)
    assert got == expected or (math.isnan(got) and math.isnan(expected))
    assert math.copysign(1.0, got) == math.copysign(1.0, expected)

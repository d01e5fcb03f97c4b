"""Property tests: parameters survive the trip to argv and back; the page escapes whatever it is given."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from trustlab.experiments._params import argv_from_params
from trustlab.experiments.registry import parse_args
from trustlab.report import html as h
from trustlab.sweep.spec import point_key

floats = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=60, deadline=None)
@given(x=st.integers(-10**6, 10**6), y=floats, seed=st.integers(0, 2**31), log=st.none())
def test_params_round_trip_through_argv(x, y, seed, log):
    assume(not (x < 0 and y < 0))  # the test experiment's check() refuses both negative (tests/lab/counting_experiment.py)
    params = {"x": x, "y": y, "seed": seed, "log": log}
    args = parse_args("lab-counting", argv_from_params("lab-counting", params))
    assert (args.x, args.y, args.seed, args.log) == (x, y, seed, None)


@settings(max_examples=60, deadline=None)
@given(a=st.lists(st.text(max_size=8), max_size=4), b=st.lists(st.text(max_size=8), max_size=4))
def test_point_keys_differ_when_argv_differs(a, b):
    assert (point_key("e", a) == point_key("e", b)) == (a == b)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=40))
def test_table_cells_are_escaped(text):
    out = h.table([{"c": text}], ["c"])
    inner = out.split("<td>", 1)[1].rsplit("</td>", 1)[0]
    assert "<" not in inner and ">" not in inner

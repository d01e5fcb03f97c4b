"""report/html: a table cell is written unescaped only when it is an exact int or float."""

from __future__ import annotations

import numpy as np

from trustlab.report import html as h

HOSTILE = '<script>alert("x")</script>'


class HostileInt(int):
    def __str__(self) -> str:
        return HOSTILE

    __repr__ = __str__


class HostileFloat(float):
    def __str__(self) -> str:
        return HOSTILE

    def __format__(self, spec: str) -> str:
        return HOSTILE


def test_a_number_subclass_with_its_own_text_is_escaped():
    for v in (HostileInt(3), HostileFloat(2.5)):
        out = h.cell(v)
        assert "<script>" not in out and "&lt;script&gt;" in out, out
        assert out.startswith('<td class="num">')  # still a number: right-aligned


def test_exact_numbers_are_written_as_they_were():
    assert h.cell(3) == '<td class="num">3</td>'
    assert h.cell(-2.5) == '<td class="num">-2.50</td>'
    assert h.cell(float("nan")) == '<td class="num">nan</td>'
    assert h.cell(np.float64(0.125)) == '<td class="num">0.125</td>'  # a float subclass, digits only


def test_a_bool_is_text_and_none_a_dash():
    assert h.cell(True) == "<td>True</td>" and h.cell(False) == "<td>False</td>"
    assert h.cell(None) == "<td>-</td>"


def test_hostile_numbers_in_a_table_are_escaped():
    out = h.table([{"a": HostileInt(1), "b": HostileFloat(1.0)}], ["a", "b"])
    assert "<script>" not in out

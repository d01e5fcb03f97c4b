"""report/sci_mathtext lays out log tick labels as matplotlib's math-text parser does: the same
boxes, glyphs (font, size, glyph, position) and rules, for every shape the log formatter writes."""

from __future__ import annotations

import pytest

DECADES = [r"$\mathdefault{10^{%d}}$" % e for e in range(-20, 21)]
MANTISSAS = [r"$\mathdefault{%g\times10^{%d}}$" % (m, e)
             for m in (2, 3, 5, 9, 1.5, 8.2, 9.4, 2.25) for e in (-12, -3, -1, 0, 1, 2, 12)]


@pytest.mark.parametrize("size,dpi", [(10, 100), (8, 72), (12, 150)])
def test_log_labels_laid_out_as_matplotlibs_parser_does(size, dpi):
    from matplotlib.font_manager import FontProperties
    from matplotlib.mathtext import MathTextParser

    import trustlab.report.plots as plots

    plots.preload()
    from trustlab.report.sci_mathtext import SCIENTIFIC, ReportMathText

    from trustlab.report.sci_mathtext import SciParser

    stock, fast = MathTextParser("path"), ReportMathText("path")
    prop = FontProperties(size=size)
    for s in DECADES + MANTISSAS:
        assert SCIENTIFIC.fullmatch(s), s  # the fast path is the one compared
        assert tuple(fast.parse(s, dpi, prop)) == tuple(stock.parse(s, dpi, prop)), s
    # on the pinned matplotlib, the shortcut passed its first-use check for both shapes and is used
    assert SciParser.shortcut == {False: True, True: True}


def test_other_math_text_goes_through_the_grammar():
    from matplotlib.font_manager import FontProperties
    from matplotlib.mathtext import MathTextParser

    import trustlab.report.plots as plots

    plots.preload()
    from trustlab.report.sci_mathtext import SCIENTIFIC, ReportMathText

    prop = FontProperties(size=10)
    for s in [r"$\mathdefault{-10^{3}}$", r"$\mathdefault{2^{3}}$", r"$\mathdefault{10^{2.50}}$",
              r"$x_1 + \frac{a}{b}$", r"a $\alpha$ b"]:
        assert not SCIENTIFIC.fullmatch(s)
        assert tuple(ReportMathText("path").parse(s, 100, prop)) == tuple(MathTextParser("path").parse(s, 100, prop))
    with pytest.raises(ValueError):
        ReportMathText("path").parse(r"$\mathdefault{10^{3}$", 100, prop)  # unbalanced: the grammar's error

"""Report figures: the shortcuts taken to draw them fast give matplotlib's own pixels.

Each spec is drawn twice, once as the report draws it and once with the shortcuts undone
(matplotlib's stock Axes instead of the one-moving-tick axes, its stock Agg canvas instead
of the one that keeps text shaping, fonts read from their files instead of from memory,
legends measured at every question instead of once), and the pixels compared. The specs
cover what the shortcuts must get right: log axes (labelled majors as math text,
unlabelled minors, a span under a decade whose minors carry labels), a linear axis with an
offset ('1e9' beside the ticks), rotated category labels on bars, categorical lines, NaN
gaps, legends of one to several entries, and the same labels drawn again on the next
figure (the kept shaping reused).
"""

from __future__ import annotations

import io
import threading

import pytest

SPECS = {
    "loglog points, error bars, reference line": {
        "kind": "loglog", "title": "t", "xlabel": "x", "ylabel": "y", "series": [
            {"label": "a", "x": [1e-3, 2.0, 1e6], "y": [1e-5, 3.0, 1e8], "style": "points",
             "ylow": [1e-6, 2.0, 1e7], "yhigh": [1e-4, 4.0, 1e9]},
            {"label": "y = x", "x": [1e-5, 1e9], "y": [1e-5, 1e9], "style": "dashed"}]},
    "log y under a decade (labelled minors)": {
        "kind": "line", "logy": True, "series": [{"label": "n", "x": [1, 2, 3], "y": [2, 3, 4]}]},
    "linear with an offset": {
        "kind": "line", "series": [{"label": "big", "x": [1e6 + i for i in range(5)],
                                    "y": [1e9 + i for i in range(5)]}]},
    "rotated category bars, negative and missing": {
        "kind": "bar", "ylabel": "ms", "series": [
            {"label": f"s{i}", "x": [f"category-{j}" for j in range(9)],
             "y": [j - 3 + i if j != 4 else None for j in range(9)]} for i in range(3)]},
    "few category bars on a log axis": {
        "kind": "bar", "logy": True, "series": [{"label": "a", "x": ["p", "q"], "y": [3, 3000]}]},
    "categorical points, NaN gap": {
        "kind": "line", "series": [{"label": "c", "x": ["a", "b", "c"], "y": [1, None, 3], "style": "points"},
                                   {"x": ["a", "b", "c"], "y": [2, 2, 2]}]},
}


def _pixels(spec, monkeypatch, stock: bool):
    import numpy as np
    from matplotlib import font_manager, ft2font
    from matplotlib.axes import Axes
    from PIL import Image

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    import trustlab.report.agg_canvas as agg_canvas
    import trustlab.report.plots as plots
    import trustlab.report.stamped_axes as stamped

    with monkeypatch.context() as m:
        m.setattr(plots, "_FIGURES", threading.local())  # a figure of its own, not the reused one
        if stock:
            m.setattr(stamped, "StampedAxes", Axes)
            m.setattr(agg_canvas, "ReportCanvas", FigureCanvasAgg)
            m.setattr(plots, "_measured_once", lambda box: None)  # a legend's boxes measured at every question
            plots.preload()  # before the next line: its first call installs the fonts read from memory
            m.setattr(font_manager, "ft2font", ft2font)  # fonts read from their files, as matplotlib does
            font_manager._get_font.cache_clear()
        images = []
        for _ in range(2):  # the second drawing reuses the first one's renderer and what it kept
            buf = io.BytesIO()
            plots.render(spec, buf)
            images.append(np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB")))
    font_manager._get_font.cache_clear()  # no font read from its file is used by a later drawing
    assert np.array_equal(*images)
    return images[0]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_fast_drawing_gives_matplotlibs_pixels(name, monkeypatch):
    import numpy as np

    fast, stock = _pixels(SPECS[name], monkeypatch, False), _pixels(SPECS[name], monkeypatch, True)
    assert fast.shape == stock.shape
    assert np.array_equal(fast, stock), f"{name}: {(fast != stock).any(axis=2).sum()} pixels differ"


def test_stamped_axes_build_no_tick_per_location(monkeypatch):
    """The point of it: drawing a figure with 20 labelled ticks builds a handful of Tick objects."""
    from matplotlib import axis as maxis

    built = []
    real = maxis.Tick.__init__

    def counting(self, *args, **kwargs):
        built.append(type(self).__name__)
        real(self, *args, **kwargs)

    monkeypatch.setattr(maxis.Tick, "__init__", counting)
    spec = {"kind": "bar", "series": [{"label": "a", "x": [f"c{j}" for j in range(20)], "y": list(range(20))}]}
    _pixels(spec, monkeypatch, False)
    stamped = len(built)
    built.clear()
    _pixels(spec, monkeypatch, True)
    assert stamped < 20 <= len(built)


def test_stamped_axes_answer_matplotlibs_questions_after_a_drawing(monkeypatch):
    """The axes stay usable as matplotlib axes: tick positions, tick lists, a new drawing."""
    import io

    import trustlab.report.plots as plots

    with monkeypatch.context() as m:
        m.setattr(plots, "_FIGURES", threading.local())
        plots.render(SPECS["log y under a decade (labelled minors)"], io.BytesIO())
        ax = plots._FIGURES.by_dpi[100][1]
        ax.clear()
        ax.set_yscale("log")
        assert ax.xaxis.get_ticks_position() == "bottom" and ax.yaxis.get_ticks_position() == "left"
        assert ax.yaxis.get_minor_ticks(3) and len(ax.xaxis.get_major_ticks(4)) == 4


def test_matplotlib_imported_for_drawing_keeps_its_set_signatures_after():
    """The drawing's import skips Artist.set's generated docs (plots._setters_undocumented) only meanwhile."""
    from matplotlib.artist import Artist

    import trustlab.report.plots as plots

    plots.preload()
    generated = Artist._update_set_signature_and_docstring

    class Later(Artist):
        pass

    assert "Supported properties" in (Later.set.__doc__ or "") and generated.__name__ != "flag_only"
    from matplotlib import _docstring

    assert "linestyle" in _docstring.interpd.params["Line2D:kwdoc"]  # plots._property_lists_skipped: meanwhile only


def test_fonts_for_drawing_come_from_memory_and_listed_fonts_keep_their_path():
    """report/font_memory: the fonts matplotlib draws with hold their file's bytes; a font opened to be
    listed (FontManager.addfont) keeps its path as fname, which the font list stores."""
    from matplotlib import font_manager

    import trustlab.report.plots as plots
    from trustlab.report.font_memory import FontBytes

    plots.preload()
    path = font_manager.findfont("DejaVu Sans")
    font = font_manager.get_font(path)
    assert isinstance(font.fname, FontBytes) and str(font.fname) == font.fname.path
    assert font.fname.getvalue() == open(path, "rb").read()
    listed = font_manager.ft2font.FT2Font(path)
    assert listed.fname == path

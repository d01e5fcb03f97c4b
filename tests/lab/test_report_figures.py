"""Report figures: the shortcuts taken to draw them fast give matplotlib's own pixels.

Each spec is drawn twice, once as the report draws it and once with the shortcuts undone
(matplotlib's stock Axes instead of the one-moving-tick axes, its stock Agg canvas instead
of the one that keeps text shaping, fonts read from their files instead of from memory,
legends measured at every question instead of once), and the pixels compared. The specs
cover what the shortcuts must get right: log axes (labelled majors as math text,
unlabelled minors, a span under a decade whose minors carry labels), a linear axis with an
offset ('1e9' beside the ticks), rotated category labels on bars, bars with intervals and
hatches, categorical lines, NaN gaps, legends of one to thirty-one entries (a taller
figure), and the same labels drawn again on the next figure (the kept shaping reused).
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
    "log bars with intervals and hatched marks": {
        "kind": "bar", "logy": True, "unmarked": "model", "series": [
            {"label": f"s{i}", "x": [f"chip-{j}" for j in range(6)], "y": [10.0 * (j + 1) + i for j in range(6)],
             "ylow": [5.0 * (j + 1) for j in range(6)], "yhigh": [30.0 * (j + 1) if j != 2 else None for j in range(6)],
             "marks": [None, "calibration", None, "extrapolated", None, None] if i == 0 else [None] * 6}
            for i in range(2)] + [{"label": "classical", "x": [f"chip-{j}" for j in range(6)], "y": [3] * 6}]},
    "a legend of 31 entries (a taller figure)": {
        "kind": "loglog", "series": [
            {"label": f"source-number-{i}", "x": [1.0 + i, 2.0 + i], "y": [1.5 + i, 2.5 + i], "style": "points"}
            for i in range(30)] + [{"label": "y = x", "x": [1, 40], "y": [1, 40], "style": "dashed"}]},
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


# --- private matplotlib hooks missing or changed: the figure still drawn, with stock pixels ---

LOG_SPECS = ["loglog points, error bars, reference line",  # decade labels
             "log y under a decade (labelled minors)"]  # mantissa labels (2×10⁰)


def _stock_then_fast(name, monkeypatch, patch):
    """Stock pixels, then the report's drawing with ``patch(m)`` applied meanwhile: equal."""
    import numpy as np

    stock = _pixels(SPECS[name], monkeypatch, True)
    with monkeypatch.context() as m:
        patch(m)
        fast = _pixels(SPECS[name], monkeypatch, False)
    assert np.array_equal(fast, stock), f"{name}: {(fast != stock).any(axis=2).sum()} pixels differ"


def _fresh_shortcut(m):
    """SciParser's per-shape check undone meanwhile; the dict that records it this time."""
    from trustlab.report.sci_mathtext import SciParser

    m.setattr(SciParser, "shortcut", {False: None, True: None})
    return SciParser.shortcut


@pytest.mark.parametrize("name", LOG_SPECS)
def test_log_labels_without_parser_state_fall_back_to_the_grammar(name, monkeypatch):
    """sci_mathtext: no ``_mathtext.ParserState`` (another matplotlib): the grammar lays the labels out."""
    import types

    from matplotlib import _mathtext

    import trustlab.report.sci_mathtext as sci

    def patch(m):
        patch.shortcut = _fresh_shortcut(m)
        m.setattr(sci, "_mathtext", types.SimpleNamespace(Parser=_mathtext.Parser, ship=_mathtext.ship))

    _stock_then_fast(name, monkeypatch, patch)
    assert False in patch.shortcut.values() and True not in patch.shortcut.values()  # failed, left off


@pytest.mark.parametrize("name", LOG_SPECS)
def test_log_labels_laid_out_differently_are_not_used(name, monkeypatch):
    """sci_mathtext: actions whose output silently differs (here, a state at another size): the
    first label of the shape is checked against the grammar and the shortcut left off."""
    import types

    from matplotlib import _mathtext

    import trustlab.report.sci_mathtext as sci

    class OtherState(_mathtext.ParserState):
        def __init__(self, fontset, font, font_class, fontsize, dpi):
            super().__init__(fontset, font, font_class, fontsize * 1.25, dpi)

    def patch(m):
        patch.shortcut = _fresh_shortcut(m)
        m.setattr(sci, "_mathtext", types.SimpleNamespace(Parser=_mathtext.Parser, ship=_mathtext.ship,
                                                          ParserState=OtherState))

    _stock_then_fast(name, monkeypatch, patch)
    assert False in patch.shortcut.values() and True not in patch.shortcut.values()


def test_log_label_module_without_matplotlibs_parser_parses_as_matplotlib(monkeypatch):
    """sci_mathtext imported where ``matplotlib._mathtext.Parser`` is missing: it imports, and its
    parser is matplotlib's."""
    import importlib.util

    from matplotlib import _mathtext
    from matplotlib.font_manager import FontProperties
    from matplotlib.mathtext import MathTextParser

    import trustlab.report.sci_mathtext as sci

    spec = importlib.util.spec_from_file_location("sci_mathtext_without_parser", sci.__file__)
    module = importlib.util.module_from_spec(spec)
    with monkeypatch.context() as m:
        m.delattr(_mathtext, "Parser")
        spec.loader.exec_module(module)
    assert module._Parser is None and module.ReportMathText._no_shortcut
    prop = FontProperties(size=10)
    for s in (r"$\mathdefault{10^{3}}$", r"$\mathdefault{2\times10^{-1}}$"):
        assert tuple(module.ReportMathText("path").parse(s, 100, prop)) == tuple(MathTextParser("path").parse(s, 100, prop))


@pytest.mark.parametrize("name", LOG_SPECS)
def test_renderer_without_the_parsers_output_type_keeps_matplotlibs_parser(name, monkeypatch):
    """agg_canvas: a MathTextParser keeping its output type under another name: matplotlib's parser."""
    from matplotlib.backends import backend_agg
    from matplotlib.mathtext import MathTextParser

    class Renamed(MathTextParser):
        def __init__(self, output):
            super().__init__(output)
            self._kind = self.__dict__.pop("_output_type")

        def parse(self, *args, **kwargs):
            self._output_type = self._kind
            try:
                return super().parse(*args, **kwargs)
            finally:
                del self._output_type

    import trustlab.report.agg_canvas as agg_canvas

    def patch(m):
        m.setattr(backend_agg, "MathTextParser", Renamed)

    _stock_then_fast(name, monkeypatch, patch)
    with monkeypatch.context() as m:
        patch(m)
        assert type(agg_canvas.ReportRenderer(10, 10, 100).mathtext_parser) is Renamed


@pytest.mark.parametrize("name", sorted(SPECS))
def test_renderer_hooks_of_another_shape_give_a_stock_renderer(name, monkeypatch):
    """agg_canvas: ``RendererAgg._draw_text_glyphs_and_boxes`` taking other parameters: a stock RendererAgg."""
    from matplotlib.backends.backend_agg import RendererAgg

    import trustlab.report.agg_canvas as agg_canvas

    real = RendererAgg._draw_text_glyphs_and_boxes

    def other_shape(self, gc, x, y, angle, glyphs, boxes, *, antialiased=None):
        return real(self, gc, x, y, angle, glyphs, boxes)

    def patch(m):
        agg_canvas.shortcuts_usable.cache_clear()
        m.setattr(RendererAgg, "_draw_text_glyphs_and_boxes", other_shape)

    try:
        _stock_then_fast(name, monkeypatch, patch)
        with monkeypatch.context() as m:
            patch(m)
            assert not agg_canvas.shortcuts_usable()
            from matplotlib.figure import Figure

            assert type(agg_canvas.ReportCanvas(Figure()).get_renderer()) is RendererAgg
    finally:
        agg_canvas.shortcuts_usable.cache_clear()
    assert agg_canvas.shortcuts_usable()


def test_legend_measures_of_another_shape_are_not_kept(monkeypatch):
    """plots._measured_once: ``_get_bbox_and_child_offsets`` taking other parameters: nothing kept."""
    from matplotlib.offsetbox import OffsetBox

    import trustlab.report.plots as plots

    real = OffsetBox._get_bbox_and_child_offsets

    def other_shape(self, renderer, *, extra=None):
        return real(self, renderer)

    def patch(m):
        plots._measures.cache_clear()
        m.setattr(OffsetBox, "_get_bbox_and_child_offsets", other_shape)

    try:
        _stock_then_fast("loglog points, error bars, reference line", monkeypatch, patch)
        with monkeypatch.context() as m:
            patch(m)
            assert plots._measures() == ()
    finally:
        plots._measures.cache_clear()
    assert plots._measures() == plots._MEASURES


def test_import_shortcuts_step_aside_without_their_hooks(monkeypatch):
    """plots._setters_undocumented, _property_lists_skipped: without matplotlib's hook (or another
    one), nothing is swapped in and nothing is left behind."""
    from matplotlib import _docstring
    from matplotlib.artist import Artist

    import trustlab.report.plots as plots

    loader = type(_docstring.interpd.params)
    with monkeypatch.context() as m:
        m.delattr(Artist, "_update_set_signature_and_docstring")
        m.delattr(loader, "__missing__")
        with plots._setters_undocumented(), plots._property_lists_skipped():
            assert "_update_set_signature_and_docstring" not in Artist.__dict__
            assert "__missing__" not in loader.__dict__
        assert "_update_set_signature_and_docstring" not in Artist.__dict__
        assert "__missing__" not in loader.__dict__
    with monkeypatch.context() as m:  # a hook that is not the one written for: left as it is
        def other(cls):
            pass

        m.setattr(Artist, "_update_set_signature_and_docstring", classmethod(other))
        with plots._setters_undocumented():
            assert Artist.__dict__["_update_set_signature_and_docstring"].__func__ is other
    with plots._property_lists_skipped():  # matplotlib's own: a key it does not expect is its answer
        with pytest.raises(KeyError):
            loader()["not a kwdoc key"]
        assert "kwdoc(Line2D)" in loader()["Line2D:kwdoc"]
    assert "linestyle" in loader()["Line2D:kwdoc"]


@pytest.mark.filterwarnings("ignore:The _kerning_factor parameter")
def test_fonts_come_from_their_files_when_ft2font_refuses_file_objects(monkeypatch):
    """font_memory: an FT2Font that takes paths only: the font is read from its file, as stock."""
    import types

    from matplotlib import font_manager, ft2font

    from trustlab.report import font_memory

    def paths_only(filename, *args, **kwargs):
        if not isinstance(filename, (str, bytes)):
            raise TypeError("path expected")
        return ft2font.FT2Font(filename, *args, **kwargs)

    module = font_memory._FontModule(types.SimpleNamespace(FT2Font=paths_only))
    path = font_manager.findfont("DejaVu Sans")
    assert module.FT2Font(path, _kerning_factor=0).fname == path

    def patch(m):
        m.setattr(font_manager, "ft2font", module)
        font_manager._get_font.cache_clear()

    try:
        _stock_then_fast("rotated category bars, negative and missing", monkeypatch, patch)
    finally:
        font_manager._get_font.cache_clear()


def test_fonts_stay_read_from_files_without_matplotlibs_font_loader(monkeypatch):
    """font_memory.install: no ``font_manager.ft2font`` or no cached ``_get_font``: nothing installed."""
    from matplotlib import font_manager

    from trustlab.report import font_memory

    with monkeypatch.context() as m:
        m.delattr(font_manager, "ft2font")
        font_memory.install()
        assert not hasattr(font_manager, "ft2font")
    with monkeypatch.context() as m:
        m.setattr(font_manager, "ft2font", font_manager.ft2font._ft2font
                  if isinstance(font_manager.ft2font, font_memory._FontModule) else font_manager.ft2font)
        m.setattr(font_manager, "_get_font", lambda *a, **k: None)  # no cache to clear
        before = font_manager.ft2font
        font_memory.install()
        assert font_manager.ft2font is before


@pytest.mark.parametrize("name", sorted(SPECS))
def test_axis_hooks_of_another_shape_give_matplotlibs_axes(name, monkeypatch):
    """stamped_axes: ``Axis._get_tick_boxes_siblings`` taking other parameters: matplotlib's own Axes."""
    from matplotlib import axis as maxis
    from matplotlib.axes import Axes

    import trustlab.report.plots as plots
    import trustlab.report.stamped_axes as stamped

    real = maxis.XAxis._get_tick_boxes_siblings

    def other_shape(self, renderer, *, extra=None):
        return real(self, renderer)

    def patch(m):
        stamped.usable.cache_clear()
        m.setattr(maxis.XAxis, "_get_tick_boxes_siblings", other_shape)

    try:
        _stock_then_fast(name, monkeypatch, patch)
        with monkeypatch.context() as m:
            patch(m)
            m.setattr(plots, "_FIGURES", threading.local())
            assert not stamped.usable() and type(plots._blank_figure(100)[1]) is Axes
    finally:
        stamped.usable.cache_clear()
    assert stamped.usable()


def test_every_legend_entry_is_on_the_figure(monkeypatch):
    """Leave-one-source-out's thirty sources and y = x: every entry's box lies inside the figure (it ran off the
    foot of a 4.2 in figure, 24 of 30 shown); bar hatches each get one legend entry, after the plain bars' name."""
    import trustlab.report.plots as plots

    drawn = {}

    def keep(fig, ax, legend, series, kind):
        drawn["fig"], drawn["legend"] = fig, legend
        return layout(fig, ax, legend, series, kind)

    layout = plots._layout
    monkeypatch.setattr(plots, "_layout", keep)
    for name, entries in (("a legend of 31 entries (a taller figure)", 31),
                          ("log bars with intervals and hatched marks", 6)):
        plots.render(SPECS[name], io.BytesIO())
        fig, legend = drawn["fig"], drawn["legend"]
        renderer = fig.canvas.get_renderer()
        texts = [t.get_text() for t in legend.get_texts()]
        assert len(texts) == entries, texts
        figure_box = fig.bbox
        for t in legend.get_texts():
            box = t.get_window_extent(renderer)
            assert figure_box.x0 <= box.x0 and box.x1 <= figure_box.x1 + 0.5, (t.get_text(), box)
            assert figure_box.y0 <= box.y0 and box.y1 <= figure_box.y1, (t.get_text(), box)
    assert texts == ["s0", "s1", "classical", "model", "calibration", "extrapolated"]


def test_more_point_series_than_marker_shapes_are_drawn():
    """The marker shapes repeat: the 33rd point series ended the drawing with StopIteration (leave-one-source-out
    passed 32 sources once the pq-crystals x86 sources were added)."""
    import trustlab.report.plots as plots

    spec = {"kind": "loglog", "series": [
        {"label": f"source-{i}", "x": [1.0 + i], "y": [2.0 + i], "style": "points"} for i in range(40)]}
    out = io.BytesIO()
    plots.render(spec, out)
    assert out.getvalue().startswith(b"\x89PNG")


def _last_figure(monkeypatch) -> dict:
    """The figure and axes of the last drawing, as laid out (kept at its last layout step, the title's fit)."""
    import trustlab.report.plots as plots

    drawn: dict = {}
    fit = plots._fit_title

    def keep(fig, ax):
        fit(fig, ax)
        drawn["fig"], drawn["ax"] = fig, ax

    monkeypatch.setattr(plots, "_fit_title", keep)
    return drawn


def test_a_title_wider_than_its_axes_is_wrapped_inside_the_figure(monkeypatch):
    """validate's 109-character title beside its legend was centred over narrower axes and cut at both figure
    edges; it is wrapped to the axes' width and every line lies inside the figure."""
    import trustlab.report.plots as plots

    drawn = _last_figure(monkeypatch)
    title = ("Predicted vs independent reference, by device class (held-out silicon: the generic PQC model, "
             "5-95% interval)")
    spec = {"kind": "loglog", "title": title, "series": [
        {"label": f"a long legend entry number {i}", "x": [1.0 + i], "y": [2.0 + i], "style": "points"}
        for i in range(8)]}
    plots.render(spec, io.BytesIO())
    fig, ax = drawn["fig"], drawn["ax"]
    shown = ax.title.get_text()
    assert "\n" in shown and shown.replace("\n", " ") == title
    box = ax.title.get_window_extent(fig.canvas.get_renderer())
    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and box.y1 <= fig.bbox.y1, box
    plots.render({**spec, "title": "short"}, io.BytesIO())
    assert drawn["ax"].title.get_text() == "short"


def test_many_bar_categories_stand_upright_apart_and_few_turn_30_degrees(monkeypatch):
    """pqc-tpm's and workloads' 23 TPM profiles, turned 30 degrees, sat 0.11 in apart vertically and ran into each
    other; past what 30 degrees keeps apart they stand upright, no two labels overlap, all lie on a figure grown
    to keep the axes' height. A few categories keep their 30 degrees (and the usual figure)."""
    import trustlab.report.plots as plots

    drawn = _last_figure(monkeypatch)
    for n, turn in ((23, 90), (6, 30)):
        names = [f"vendor-model-{i:02d}-firmware-1.2.{i}" for i in range(n)]
        spec = {"kind": "bar", "logy": True, "title": "per chip", "series": [
            {"label": "classical", "x": names, "y": [10.0 + i for i in range(n)]},
            {"label": "post-quantum", "x": names, "y": [30.0 + i for i in range(n)]}]}
        plots.render(spec, io.BytesIO())
        fig, ax = drawn["fig"], drawn["ax"]
        # the stamped axes draw every tick as a copy of the first (one Tick object): its label carries the style
        label = ax.xaxis.get_major_ticks(1)[0].label1
        assert round(label.get_rotation()) == turn
        box = label.get_window_extent(fig.canvas.get_renderer())
        spacing = ax.transData.transform((1, 0))[0] - ax.transData.transform((0, 0))[0]
        if turn == 90:
            assert box.width < spacing, "upright labels wider than their spacing overlap"
            assert fig.get_size_inches()[1] > plots.HEIGHT_IN
        else:
            assert fig.get_size_inches()[1] == plots.HEIGHT_IN
        assert fig.bbox.y0 <= box.y0 and fig.bbox.x0 <= box.x0, box

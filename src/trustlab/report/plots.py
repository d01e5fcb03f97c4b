"""Render the plot specs experiments return into PNG files with matplotlib.

A spec is plain data (so it survives JSON and can be re-rendered later):
``{"kind": "line"|"bar"|"loglog", "title", "xlabel", "ylabel", "logx", "logy",
"series": [{"label", "x", "y", "style"?: "line"|"points"|"dashed", "ylow"?, "yhigh"?, "marks"?}]}``
(``dashed``: a reference line such as y = x; ``ylow``/``yhigh``: an interval drawn as an error bar
around each point of a ``points`` series or each bar; ``marks``: per bar, a label such as
"calibration" or None - every distinct label is a hatch, named once in the legend, and the spec's
``"unmarked"``, if given, names the plain bars there). The Agg canvas
is used directly (no pyplot state), so rendering is safe in any process.
A malformed spec raises :class:`PlotError` naming the problem; the report
shows that message in place of the figure rather than failing.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import threading
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from trustlab.errors import TrustlabError

KINDS = ("line", "bar", "loglog")


class PlotError(TrustlabError):
    """A plot spec that cannot be drawn."""


def _number(v: Any) -> float:
    if v is None:
        return math.nan
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise PlotError(f"non-numeric value {v!r}")
    return float(v)


def validate(spec: Any) -> dict[str, Any]:
    if not isinstance(spec, dict):
        raise PlotError("plot spec is not an object")
    kind = spec.get("kind", "line")
    if kind not in KINDS:
        raise PlotError(f"unknown plot kind {kind!r} (known: {', '.join(KINDS)})")
    series = spec.get("series")
    if not isinstance(series, list) or not series:
        raise PlotError("plot has no series")
    for i, s in enumerate(series):
        if not isinstance(s, dict) or not isinstance(s.get("x"), list) or not isinstance(s.get("y"), list):
            raise PlotError(f"series {i} needs lists 'x' and 'y'")
        if len(s["x"]) != len(s["y"]):
            raise PlotError(f"series {i} ({s.get('label', '')}): {len(s['x'])} x values but {len(s['y'])} y values")
        for key in ("y", "ylow", "yhigh"):
            if key != "y" and key not in s:
                continue
            if not isinstance(s[key], list) or len(s[key]) != len(s["x"]):
                raise PlotError(f"series {i} ({s.get('label', '')}): {key} needs one value per x")
            for v in s[key]:
                try:
                    _number(v)
                except PlotError as exc:
                    raise PlotError(f"series {i} ({s.get('label', '')}) {key}: {exc}") from None
        if "marks" in s and (not isinstance(s["marks"], list) or len(s["marks"]) != len(s["x"])
                             or not all(m is None or isinstance(m, str) for m in s["marks"])):
            raise PlotError(f"series {i} ({s.get('label', '')}): marks needs one label (or null) per x")
    return spec


def _categorical(series: list[dict]) -> bool:
    return any(isinstance(x, str) for s in series for x in s["x"])


def _label_turn(series: list[dict], kind: str) -> int:
    """Degrees a bar chart's category labels turn: none for a few, 30 while turned labels stay apart, else 90.

    Why: at 30 degrees two neighbouring labels sit the category spacing x sin 30 apart vertically; with 23 TPM
    profiles on about 5 in of axes that is 0.11 in, less than an 8 pt line, and the profile names ran into each
    other. Upright (90 degrees) they sit a whole spacing apart, and the figure grows to keep its axes' height.
    """
    if kind != "bar" or not _categorical(series):
        return 0
    n = len({str(x) for s in series for x in s["x"]})
    if n <= 4:
        return 0
    return 30 if BAR_AXES_IN / n * 0.5 >= LABEL_LINE_IN else 90


def _label_drop(series: list[dict], turn: int) -> float:
    """Inches the longest category label reaches below the axes: 8 pt, about 0.06 in per character."""
    longest = max((len(str(x)) for s in series for x in s["x"]), default=0)
    return {0: 0.2, 30: 0.5 * 0.06 * longest, 90: 0.06 * longest}[turn]


def render(spec: dict[str, Any], path: Path | BinaryIO, dpi: int = 100) -> Path | BinaryIO:
    """Draw ``spec`` into ``path`` (PNG), or into an open binary file (so a caller can write it atomically)."""
    spec = validate(spec)  # before importing matplotlib: a bad spec costs no import
    import matplotlib

    # Unhinted glyphs: FreeType's TrueType hinting interpreter ran for every glyph laid out
    # and again for every glyph drawn, about a seventh of a figure's cost. The text is
    # the same at this size and resolution, only its pixels are rounded differently.
    with matplotlib.rc_context({"text.hinting": "no_hinting"}):
        return _draw(spec, path, dpi)


def _draw(spec: dict[str, Any], path: Path | BinaryIO, dpi: int) -> Path | BinaryIO:
    kind = spec.get("kind", "line")
    series = spec["series"]
    fig, ax = _blank_figure(dpi, _height(spec))
    logx = bool(spec.get("logx")) or kind == "loglog"
    logy = bool(spec.get("logy")) or kind == "loglog"
    marked: list = []  # legend entries of the bars' hatches
    if kind == "bar":
        marked = _bars(ax, series, spec.get("unmarked"))
    else:
        _lines(ax, series, logx, logy)
    if logy:
        ax.set_yscale("log")
    if logx and kind != "bar" and not _categorical(series):
        ax.set_xscale("log")
    ax.set_title(str(spec.get("title", "")), fontsize=10, y=1.0)
    ax.set_xlabel(str(spec.get("xlabel", "")))
    ax.set_ylabel(str(spec.get("ylabel", "")))
    ax.grid(True, which="major", alpha=0.3)
    legend = None
    if any(s.get("label") for s in series):
        # outside the axes: a legend must never hide data; in as many columns as it takes to show every entry
        handles, labels = ax.get_legend_handles_labels()
        handles, labels = handles + marked, labels + [h.get_label() for h in marked]
        rows = _legend_rows(fig.get_size_inches()[1])
        legend = ax.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                           borderaxespad=0.0, ncols=-(-len(labels) // rows))
        _measured_once(legend._legend_box)
    _layout(fig, ax, legend, series, kind)
    _fit_title(fig, ax)
    for axis in (ax.xaxis, ax.yaxis):  # after the layout: how many ticks fit depends on the axes' size
        _minor_ticks_as_marks(ax, axis)
    if isinstance(path, Path):
        path.parent.mkdir(parents=True, exist_ok=True)
    # One draw, then the canvas's pixels to PNG: savefig would draw again to print.
    canvas = fig.canvas
    canvas.draw()
    width, height = canvas.get_width_height(physical=True)
    from PIL import Image

    # The figure is opaque (white face), so its alpha channel is all 255: stored as RGB, the
    # same pixels with a quarter less to filter and compress. zlib level 1: a third less
    # encoding time than the default, files ~10% larger. Pillow encodes (its adaptive row
    # filters cost about twice the deflating; a PNG writer of our own would save ~0.14 s of
    # the report but hand-roll what Pillow maintains).
    Image.frombytes("RGB", (width, height), canvas.buffer_rgba(), "raw", "RGBX").save(
        path, format="png", compress_level=1)
    return path


WIDTH_IN, HEIGHT_IN = 8.5, 4.2
TITLE_LINE_IN = 0.17  # one more line of a 10 pt title, with matplotlib's line spacing of 1.2
MAX_HEIGHT_IN = 8.0
BAR_AXES_IN = 5.0  # a bar chart's axes beside its legend, about (labels' spacing before the layout is known)
LABEL_LINE_IN = 8 * 1.2 / 72  # an 8 pt category label's line
LEGEND_ROW_IN = 8 * 1.5 / 72  # a legend entry: 8 pt text and matplotlib's 0.5 em label spacing
_FIGURES = threading.local()  # .by_dpi: dpi (or (dpi, height)) -> this thread's (figure, axes), cleared for each drawing


def _legend_rows(height: float) -> int:
    """Legend entries one column holds from the axes' top to the figure's foot (a row left for the borders)."""
    return int((height - 0.4) / LEGEND_ROW_IN) - 1


def _height(spec: dict[str, Any]) -> float:
    """The figure's height: the usual one, or taller (up to MAX_HEIGHT_IN) so that a long legend - leave-one-source-out's
    thirty sources - shows every entry in one column beside the axes instead of running off the figure's foot
    (past that, more columns)."""
    series = spec["series"]
    marks = {m for s in series for m in s.get("marks") or () if m}
    entries = sum(1 for s in series if s.get("label")) + len(marks) + (1 if marks and spec.get("unmarked") else 0)
    height = HEIGHT_IN
    if entries > _legend_rows(HEIGHT_IN):
        height = min(MAX_HEIGHT_IN, round(0.4 + (entries + 1) * LEGEND_ROW_IN + 0.05, 1))
    if _label_turn(series, spec.get("kind", "line")) == 90:  # upright labels: the axes keep their height above them
        height = min(MAX_HEIGHT_IN, round(height + 0.55 + _label_drop(series, 90) - 0.75, 1))
    return height


def _blank_figure(dpi: int, height: float = HEIGHT_IN) -> tuple[Any, Any]:
    """An empty figure and axes on an Agg canvas, reused for every figure this thread draws.

    The canvas is :class:`~trustlab.report.agg_canvas.ReportCanvas` and the axes
    :class:`~trustlab.report.stamped_axes.StampedAxes` (the same pixels, drawn with less work).
    Reusing the figure keeps its renderer, and with it matplotlib's text-metrics cache (keyed
    by renderer) and the renderer's text shaping: tick and axis labels repeat across a
    report's figures. Reusing the axes
    too, ``Axes.clear()`` resets it to a new axes' state (artists, legend, scales, limits,
    ticks, labels) once; ``Figure.clear()`` then ``add_subplot()`` cleared the old axes and
    then built and cleared a new one. The margins are set again by each drawing, so the
    pixels are the same as on a new figure.
    """
    figures = _FIGURES.__dict__.setdefault("by_dpi", {})
    key = dpi if height == HEIGHT_IN else (dpi, height)
    blank = figures.get(key)
    if blank is None:
        ReportCanvas, Figure, StampedAxes = preload()
        from trustlab.report import stamped_axes

        fig = Figure(figsize=(WIDTH_IN, height), dpi=dpi)
        ReportCanvas(fig)
        # matplotlib's own Axes where its private axis parts are not those StampedAxes builds on
        blank = figures[key] = (fig, fig.add_subplot(axes_class=StampedAxes if stamped_axes.usable() else None))
    else:
        blank[1].clear()
    return blank


def _layout(fig: Any, ax: Any, legend: Any, series: list[dict], kind: str) -> None:
    """Margins for the tick labels, axis labels, title and the legend beside the axes.

    Computed from what the figure holds (the legend measured once, rotated
    category labels from their length) instead of matplotlib's constrained
    layout, which measures every tick label in an extra layout pass: that pass
    was a third of the cost of each figure, and the report draws dozens.
    """
    dpi = fig.dpi
    right = 0.15
    if legend is not None:
        right += legend.get_window_extent(fig.canvas.get_renderer()).width / dpi + 0.1
    bottom = 0.75
    left, top = 0.95, 0.4
    turn = _label_turn(series, kind)
    if turn == 90:
        bottom = 0.55 + _label_drop(series, 90)
    elif _categorical(series):
        labels = {str(x) for s in series for x in s["x"]}
        if len(labels) > 4:  # rotated 30 degrees, 8 pt: about 0.06 in per character, half of it downwards
            bottom = 0.55 + _label_drop(series, 30)
            # the first label, right-aligned under the first tick, reaches left by ~0.05 in per character
            left = max(left, min(2.5, 0.05 * len(str(series[0]["x"][0])) if series[0]["x"] else 0.0))
    height = fig.get_size_inches()[1]
    fig.subplots_adjust(left=left / WIDTH_IN, right=max(0.5, 1 - right / WIDTH_IN),
                        bottom=min(0.6, bottom / height), top=1 - top / height)


def _fit_title(fig: Any, ax: Any) -> None:
    """A title wider than its axes wrapped to their width, the top margin grown by its extra lines.

    Why: a title is centred over the axes, so one wider than them ran off both edges of the figure and
    was cut there (validate's 109-character title beside its legend lost its first and last words).
    """
    import textwrap

    title = ax.title.get_text()
    axes_in = (fig.subplotpars.right - fig.subplotpars.left) * WIDTH_IN
    title_in = ax.title.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi
    if not title or title_in <= axes_in:
        return
    per_line = max(20, int(len(title) * axes_in / title_in))  # characters per line at this title's mean width
    lines = textwrap.wrap(title, per_line)
    ax.set_title("\n".join(lines), fontsize=10, y=1.0)
    height = fig.get_size_inches()[1]
    fig.subplots_adjust(top=fig.subplotpars.top - (len(lines) - 1) * TITLE_LINE_IN / height)


def _measured_once(box: Any) -> None:
    """A legend's boxes each measure themselves once per renderer, not at every question.

    A legend is a tree of boxes (columns of rows of a handle and a label), and each box
    asks its children for their extents whenever it is asked for its own, or drawn: the
    layout's measure, the frame's and the drawing took each leaf's extent again at every
    level, about 5% of drawing a figure. An extent depends on the box's content, font and
    the renderer's resolution, none of which change once the legend is built (its boxes'
    positions, set while drawing, are no part of it), so the first answer per renderer is
    kept: the same numbers, the same pixels.
    """
    from matplotlib.offsetbox import OffsetBox

    for name in _measures():
        setattr(box, name, _kept_per_renderer(getattr(box, name)))
    for child in box.get_children():
        if isinstance(child, OffsetBox):
            _measured_once(child)


_MEASURES = ("get_bbox", "_get_bbox_and_child_offsets")


@functools.cache
def _measures() -> tuple[str, ...]:
    """The measuring methods of matplotlib's boxes kept per renderer: both where both take a
    renderer alone (matplotlib 3.11); ``_get_bbox_and_child_offsets`` is private, so on another
    matplotlib that lacks it, or whose methods take something else, none (measured as stock)."""
    import inspect

    from matplotlib.offsetbox import OffsetBox

    for name in _MEASURES:
        try:
            if list(inspect.signature(getattr(OffsetBox, name)).parameters) != ["self", "renderer"]:
                return ()
        except (AttributeError, TypeError, ValueError):
            return ()
    return _MEASURES


def _kept_per_renderer(measure: Any) -> Any:
    kept: list = []  # [renderer, its answer]

    def measured(renderer: Any) -> Any:
        if not kept or kept[0] is not renderer:
            kept[:] = [renderer, measure(renderer)]
        return kept[1]
    return measured


_TICK_MARKS = {"xtick": {"out": 3, "in": 2, "inout": "|"},  # matplotlib.lines.TICKDOWN, TICKUP
               "ytick": {"out": 0, "in": 1, "inout": "_"}}  # TICKLEFT, TICKRIGHT


def _minor_ticks_as_marks(ax: Any, axis: Any) -> None:
    """A log axis's unlabelled minor ticks drawn as one line of tick marks.

    matplotlib builds a Tick per minor tick (two marks, a grid line, two labels: five
    artists), and a log axis over a few decades has 8 per decade, one decade beyond
    each end included: building and drawing them was half the cost of a log figure, and
    most of the report's figures are log. The marks land where matplotlib puts them (its
    locator's positions, minus those on major ticks, within the view), with its marker,
    size, width and colour, so the pixels are the same. An axis whose minor ticks carry
    labels (a span under about a decade) keeps matplotlib's own ticks.
    """
    if axis.get_scale() != "log":
        return
    import matplotlib as mpl

    name = axis.axis_name + "tick"
    locs = axis.get_minorticklocs()  # final: every artist is on the axes, the margins are set
    if not mpl.rcParams[f"{name}.minor.{'bottom' if name == 'xtick' else 'left'}"] \
            or any(axis.get_minor_formatter().format_ticks(locs)):
        return
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullLocator

    # matplotlib's own test of which ticks are drawn: inside the view, in scale space, with a tolerance
    scale = axis.get_transform()
    low, high = sorted(scale.transform(axis.get_view_interval()))
    slack = (high - low) * 1e-10
    shown = [loc for loc, at in zip(locs, scale.transform(locs)) if low - slack <= at <= high + slack]
    axis.set_minor_locator(NullLocator())
    if not shown:
        return
    along, across = (shown, [0.0] * len(shown))
    rc = mpl.rcParams
    marks = Line2D(*((along, across) if name == "xtick" else (across, along)),
                   linestyle="none", marker=_TICK_MARKS[name][rc[f"{name}.direction"]],
                   markersize=rc[f"{name}.minor.size"], markeredgewidth=rc[f"{name}.minor.width"],
                   color=rc[f"{name}.color"], markeredgecolor=rc[f"{name}.color"], zorder=1.5,
                   transform=ax.get_xaxis_transform("tick1") if name == "xtick" else ax.get_yaxis_transform("tick1"))
    ax.add_artist(marks)  # not add_line: the marks are no data, they must not move the limits
    marks.set_clip_on(False)  # outside the axes, like the tick marks they replace


def preload() -> tuple[Any, Any, Any]:
    """Import matplotlib's Figure, our Agg canvas and our Axes (about 0.3 s of CPU); fonts read from memory.

    Deferred to the first figure, since every trustlab process imports the
    report package and few of them draw; a report that draws on forked
    workers calls this first, so the workers inherit it instead of each
    importing it again.
    """
    global _IMPORTED
    with _IMPORTING, contextlib.ExitStack() as first:
        if not _IMPORTED:  # the collector paused for the import only, not at later calls
            first.enter_context(_collector_paused())
            first.enter_context(_setters_undocumented())
            first.enter_context(_property_lists_skipped())
        from matplotlib.figure import Figure

        from trustlab.report.agg_canvas import ReportCanvas
        from trustlab.report.stamped_axes import StampedAxes

        if not _IMPORTED:
            from trustlab.report import font_memory

            font_memory.install()  # FreeType reads the fonts from memory, not through Python file calls
        _IMPORTED = True
    return ReportCanvas, Figure, StampedAxes


_IMPORTING = threading.Lock()  # one thread at a time swaps Artist's method (see below)
_IMPORTED = False


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off meanwhile (matplotlib's import), on again after.

    Importing matplotlib creates some 100,000 objects (functions, classes, their dicts) and
    almost no garbage, yet every 700 new objects started a collection, and the older
    generations were scanned again as they grew: a seventh of the import's CPU. Nothing is
    frozen here (``gc.freeze`` would keep everything alive in the caller's process, its
    garbage too, out of every later collection): the report freezes what is alive only
    while it draws (:func:`collector_frozen`).
    """
    import gc

    if not gc.isenabled():  # someone else manages the collector: left as it is
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if not gc.get_freeze_count():
            # what is alive moved to the oldest generation without a scan (a freeze, thawed at
            # once), as a collection moves survivors: else the first young collection after
            # the import scanned its 100,000 objects as young ones
            gc.freeze()
            gc.unfreeze()
        gc.enable()


@contextlib.contextmanager
def collector_frozen() -> Iterator[None]:
    """What is alive now left out of the cyclic collector's scans meanwhile (``gc.freeze``), and
    given back to it after (``gc.unfreeze``).

    Called with matplotlib imported, before the report's figures are drawn: the drawing's own
    collections then scan only what it makes, not matplotlib's 100,000 objects again (about
    0.09 s of CPU for the flagship's figures in one process), and forked drawing workers
    inherit them frozen (not copied page by page by their scans). Only for the drawing: a
    library or notebook caller's cyclic garbage alive now is collected once it ends. Left
    alone when the collector is off or something is already frozen (``gc.unfreeze`` would
    thaw the caller's frozen objects too).
    """
    import gc

    if not gc.isenabled() or gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def frozen_at_exit() -> None:
    """For a process that the report owns and that ends once it is written (``trustlab report``,
    ``trustlab flagship``): at its exit, what is alive frozen (``gc.freeze``, run by ``atexit``,
    before the interpreter tears its modules down), so the teardown's collections skip it.

    Those scanned matplotlib's objects and the report's again, about 0.15 s of CPU after the
    flagship's report. Only at exit: a caller that goes on (a test calling the CLI in its own
    process) keeps its collections until then. Registered once however often called.
    """
    import atexit
    import gc

    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)


@contextlib.contextmanager
def _setters_undocumented() -> Iterator[None]:
    """While matplotlib's artist classes are defined: their ``set()`` without a generated signature and docstring.

    Each ``Artist`` subclass, as it is defined, inspects all its setters (their signatures and
    docstrings) to give its ``set()`` a signature and a docstring listing every property: a
    quarter of importing matplotlib (~0.1 s of CPU), for ``help()`` alone. ``set()`` works the
    same without them (it takes ``**kwargs``); only introspection of those classes' ``set`` sees less.
    """
    from matplotlib.artist import Artist

    generated = Artist.__dict__.get("_update_set_signature_and_docstring")
    code = getattr(getattr(generated, "__func__", None), "__code__", None)
    if not isinstance(generated, classmethod) or code is None or "_autogenerated_signature" not in code.co_names:
        # another matplotlib (no such hook, or not the flag its subclasses look for): its import as it is
        yield
        return

    def flag_only(cls: type) -> None:
        cls.set._autogenerated_signature = True  # type: ignore[attr-defined]  # what subclasses look for

    Artist._update_set_signature_and_docstring = classmethod(flag_only)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        Artist._update_set_signature_and_docstring = generated  # type: ignore[method-assign]


@contextlib.contextmanager
def _property_lists_skipped() -> Iterator[None]:
    """While matplotlib's modules are imported: the property lists their docstrings embed left out.

    A docstring with ``%(Line2D:kwdoc)s`` (``plot``'s, ``legend``'s, ...) gets, as its module
    is imported, a table of every property of that artist class, made by inspecting each of
    its setters: a tenth of importing matplotlib (~0.02 s of CPU), for ``help()`` alone. Those
    docstrings say instead how to get the list; after the import, a docstring asking for a
    list gets the real one (nothing of the stand-in is kept).
    """
    try:
        from matplotlib import _docstring

        loader = type(_docstring.interpd.params)
    except (ImportError, AttributeError):  # another matplotlib: its import as it is
        loader = None
    computed = getattr(loader, "__dict__", {}).get("__missing__")
    if loader is None or loader is dict or not callable(computed):
        yield
        return

    def pointer(params: dict, key: str) -> str:
        if not key.endswith(":kwdoc"):
            return computed(params, key)  # matplotlib's answer (a KeyError in 3.11)
        return f"Properties: listed by matplotlib.artist.kwdoc({key[:-len(':kwdoc')]})."  # not kept in params

    loader.__missing__ = pointer  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        loader.__missing__ = computed  # type: ignore[method-assign]


def forget_fonts() -> None:
    """In a forked drawing worker, first: drop the math-text layouts its parent cached.

    They hold the parent's FreeType faces, whose font file (and its offset) a fork shares:
    two processes reading glyphs through it interleave their seeks and reads and get
    garbage ("invalid outline", "too many hints"). matplotlib empties its own font cache
    in a forked child; this cache it does not.
    """
    import matplotlib.mathtext

    matplotlib.mathtext.MathTextParser._parse_cached.cache_clear()


HATCHES = ("////", "....", "xxxx", "\\\\\\\\")  # one per distinct bar mark, in order of first use


def _bars(ax: Any, series: list[dict], unmarked: Any = None) -> list:
    """Grouped bars: one filled path per series (every bar of it), instead of a Rectangle per bar.

    ``ax.bar`` adds each bar as its own artist (limits updated per bar, drawn one by one);
    a figure of 23 categories by 5 series had 115. The path holds the same rectangles
    (corners as ``ax.bar`` places them), in the same colour of the cycle, kept off the
    margin at 0 like a bar, and the legend draws it as it draws a bar. A series' ``ylow``/``yhigh``
    are error bars on its bars; its ``marks`` hatch the bars they name (a path per mark). Returns
    the legend entries of the hatches (a white box hatched, labelled with the mark), after a plain white
    box labelled ``unmarked`` if given and any bar is marked.
    """
    import numpy as np
    from matplotlib.patches import Patch, PathPatch
    from matplotlib.path import Path as Outline

    categories: list = []
    for s in series:
        for x in s["x"]:
            if x not in categories:
                categories.append(x)
    width = 0.8 / len(series)
    corners = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 0.0]])
    codes = [Outline.MOVETO, Outline.LINETO, Outline.LINETO, Outline.LINETO, Outline.CLOSEPOLY]
    hatch_of: dict[str, str] = {}
    for i, s in enumerate(series):
        lookup = dict(zip(s["x"], s["y"]))
        ys = np.array([_number(lookup.get(c)) for c in categories])
        lefts = np.array([j + (i - (len(series) - 1) / 2) * width for j in range(len(categories))]) - width / 2
        drawn = ~np.isnan(ys)  # a missing value is no bar (as ax.bar draws a NaN height: nothing)
        marks = dict(zip(s["x"], s.get("marks") or [None] * len(s["x"])))
        mark_of = np.array([marks.get(c) or "" for c in categories], dtype=object)
        # the plain bars first (a path even if none is plain): they carry the series' label, so its legend entry
        # is never hatched
        for mark in ["", *(m for m in dict.fromkeys(mark_of[drawn]) if m)]:
            if mark and mark not in hatch_of:
                hatch_of[mark] = HATCHES[len(hatch_of) % len(HATCHES)]
            these = drawn & (mark_of == mark)
            boxes = [corners * (width, y) + (left, 0.0) for left, y in zip(lefts[these], ys[these])]
            outline = Outline(np.concatenate(boxes) if boxes else np.empty((0, 2)), codes * len(boxes))
            # no edge (a bar's default; a path's is black); linewidth None: the default, as ax.bar passes it
            bars = PathPatch(outline, facecolor=f"C{i}", edgecolor="none", linewidth=None,
                             label="_nolegend_" if mark else str(s.get("label", "")),
                             **({"hatch": hatch_of[mark], "hatchcolor": "0.15"} if mark else {}))
            bars.sticky_edges.y.append(0.0)  # the axis ends at 0, no margin below the bars (as ax.bar)
            # add_patch, but the data limits grown by the corners at once: add_patch walks the
            # outline segment by segment for curve extrema, and a box has none
            ax.add_artist(bars)
            if boxes:
                ax.update_datalim(outline.vertices)
        if "ylow" in s and "yhigh" in s:
            _bar_intervals(ax, s, categories, lefts + width / 2, ys)
    ax.autoscale_view()  # ax.bar asks for it; the data limits only grow
    turn = _label_turn(series, "bar")
    _category_ticks(ax.xaxis, [str(c) for c in categories], rotation=turn, ha="right" if turn == 30 else "center",
                    fontsize=8)
    if not hatch_of:
        return []
    plain = [Patch(facecolor="white", edgecolor="0.15", linewidth=0.5, label=str(unmarked))] if unmarked else []
    return plain + [Patch(facecolor="white", edgecolor="0.15", linewidth=0.5, hatch=h, hatchcolor="0.15",
                          label=mark) for mark, h in hatch_of.items()]


def _bar_intervals(ax: Any, s: dict, categories: list, centres: Any, ys: Any) -> None:
    """A series' ``ylow``..``yhigh`` as error bars over its bars' centres (none where a value is missing)."""
    import numpy as np

    lows = dict(zip(s["x"], s["ylow"]))
    highs = dict(zip(s["x"], s["yhigh"]))
    lo = np.array([_number(lows.get(c)) for c in categories])
    hi = np.array([_number(highs.get(c)) for c in categories])
    shown = ~(np.isnan(ys) | np.isnan(lo) | np.isnan(hi))
    if shown.any():
        ax.errorbar(centres[shown], ys[shown], yerr=[np.maximum(0.0, ys[shown] - lo[shown]),
                                                     np.maximum(0.0, hi[shown] - ys[shown])],
                    fmt="none", ecolor="0.15", elinewidth=0.8, capsize=1.5, capthick=0.8)


def _category_ticks(axis: Any, labels: list[str], **style: Any) -> None:
    """A tick per category at 0, 1, ..., labelled and styled: ``set_ticks`` then ``set_ticklabels``,
    without their Tick object per category.

    Those build every tick to style each label alike; here the first tick's label is styled,
    and every tick is a copy of the first (matplotlib's ``_copy_tick_props``; the stamped axes
    draw them all with it). The view grows to take every tick in, as ``set_ticks`` does.
    """
    from matplotlib.ticker import FixedFormatter, FixedLocator

    if labels:
        axis.set_view_interval(0, len(labels) - 1)
    axis.set_major_locator(FixedLocator(range(len(labels))))
    axis.set_major_formatter(FixedFormatter(labels))
    for spine in axis.axes.spines.values():
        if spine.axis is axis:  # a cleared spine is placed when first used, and placing it resets
            spine.get_spine_transform()  # the axis's ticks: placed now, the styled first tick stays
    axis.get_major_ticks(1)[0].label1.update(style)


def _lines(ax: Any, series: list[dict], logx: bool, logy: bool) -> None:
    categorical = _categorical(series)
    markers = itertools.cycle(["o", "x", "s", "^", "D", "v", "+", "*"])  # coinciding point series stay visible; any count
    for s in series:
        xs = [str(x) for x in s["x"]] if categorical else [_number(x) for x in s["x"]]
        ys = [_number(y) for y in s["y"]]
        pairs = [(x, y) for x, y in zip(xs, ys)
                 if not (logy and not y > 0) and (categorical or not (logx and not x > 0))]
        if not pairs:
            continue
        style = s.get("style", "line")
        if style == "dashed":  # reference lines (y = x, a bound): no markers, muted
            ax.plot([p[0] for p in pairs], [p[1] for p in pairs], "--", color="0.5", linewidth=1,
                    label=str(s.get("label", "")))
            continue
        if style == "points":
            marker = next(markers)
            line = ax.plot([p[0] for p in pairs], [p[1] for p in pairs], marker, linestyle="none",
                           label=str(s.get("label", "")), markersize=7 if marker in "x+*" else 5,
                           fillstyle="none" if marker in "sD^v" else "full")
            if "ylow" in s and "yhigh" in s and not categorical:
                ys = [_number(y) for y in s["y"]]
                lows, highs = [_number(v) for v in s["ylow"]], [_number(v) for v in s["yhigh"]]
                xs_e = [_number(x) for x in s["x"]]
                ax.errorbar(xs_e, ys, yerr=[[max(0.0, y - lo) for y, lo in zip(ys, lows)],
                                            [max(0.0, hi - y) for y, hi in zip(ys, highs)]],
                            fmt="none", ecolor=line[0].get_color(), alpha=0.6, capsize=2)
            continue
        fmt = "-o" if len(pairs) < 30 else "-"
        ax.plot([p[0] for p in pairs], [p[1] for p in pairs], fmt, label=str(s.get("label", "")),
                markersize=4)

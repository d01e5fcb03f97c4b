"""An Axes whose axes draw every tick by moving one Tick, instead of building a Tick per location.

matplotlib gives an axis a ``Tick`` object per tick location (a grid line, two tick
marks and two labels: five artists, each with its properties resolved from rcParams
and a deep-copied marker) and builds them again after every ``Axes.clear()``. For the
report's figures, building those objects was about a quarter of drawing a figure. Yet
every tick of an axis is a copy of its first one (``Axis._copy_tick_props``) that
differs only in its location and its label's text. So this axis draws its tick labels
by moving its first major (minor) tick to each location in turn, setting the label text
and drawing it, then the group's grid lines as one path and its marks as one line of
markers (see :func:`_draw_lines`): the same artists with the same properties, so the
pixels are the same. The tick label boxes that place the axis label and the offset
text are measured on the same moving tick.

Ticks that a caller asks for (``get_major_ticks``, ``set_ticklabels``) are still built
as usual; drawing uses the first and ignores the rest, which is what matplotlib's own
copies hold anyway. Imported with matplotlib, on the first figure (see ``plots.preload``).

The axis overrides and calls private ``Axis`` methods (matplotlib 3.11, pinned); where they
are missing or take other parameters (:func:`usable`), the report draws on matplotlib's own Axes.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import numpy as np
from matplotlib import artist as martist
from matplotlib import axis as maxis
from matplotlib import transforms as mtransforms
from matplotlib.axes import Axes
from matplotlib.ticker import NullLocator


class _StampedTicks:
    """Mixin for ``XAxis``/``YAxis``: ticks drawn by one moving Tick per group (major, minor)."""

    def _tick_groups(self) -> list[tuple[Any, Any, list[str]]]:
        """(tick group's first Tick, locations drawn, their labels) for major then minor ticks.

        Exactly ``Axis._update_ticks``'s choice: the formatter sees every location the
        locator gives (it sets its offset and precision from them), and a location is drawn
        when it lies in the view interval, in scale space, within matplotlib's tolerance.
        """
        groups = []
        for kw, info, ticks_of, locs_of in ((self._major_tick_kw, self.major, self.get_major_ticks,
                                             self.get_majorticklocs),
                                            (self._minor_tick_kw, self.minor, self.get_minor_ticks,
                                             self.get_minorticklocs)):
            if not self._tick_group_visible(kw) or isinstance(info.locator, NullLocator):
                continue
            locs = locs_of()
            labels = info.formatter.format_ticks(locs)
            if not len(locs):
                continue
            low, high = sorted(self.get_view_interval())
            interval = self.get_transform().transform([low, high])
            drawn = [(loc, label) for loc, label in zip(locs, labels)
                     if _contains(interval, self.get_transform().transform(loc))]
            if drawn:
                groups.append((ticks_of(1)[0], [d[0] for d in drawn], [d[1] for d in drawn]))
        return groups

    def _update_ticks(self) -> list[Any]:
        """The first tick of each group that has a tick to draw (the spines ask which marks are drawn;
        while the axis draws, from the groups it draws)."""
        return [tick for tick, _, _ in (self._drawing or self._tick_groups())]

    def _get_tick_boxes_siblings(self, renderer: Any) -> tuple[list[Any], list[Any]]:
        return self._label_boxes if self._label_boxes is not None else self._measure(renderer, self._tick_groups())

    def _measure(self, renderer: Any, groups: list, draw: bool = False) -> tuple[list[Any], list[Any]]:
        """The window extents of every drawn tick label (label1s, label2s), as matplotlib collects
        them; ``draw``: each label drawn too once placed, then the group's lines (:func:`_draw_lines`)."""
        boxes1: list[Any] = []
        boxes2: list[Any] = []
        for tick, locs, labels in groups:
            drawn = draw and tick.get_visible()  # an invisible Tick draws nothing, its labels included
            for loc, label in zip(locs, labels):
                _place(tick, loc, label)
                for text, boxes in ((tick.label1, boxes1), (tick.label2, boxes2)):
                    if text.get_visible() and text.get_in_layout():
                        boxes.append(text.get_window_extent(renderer))
                    if drawn:
                        text.draw(renderer)
            if drawn:
                _draw_lines(tick, locs, renderer)
        return boxes1, boxes2

    def reset_ticks(self) -> None:
        """``Axis.reset_ticks`` without building the new lists' first ticks on the spot.

        matplotlib drops the tick lists, then clips them to the axes patch, which builds each
        list's first Tick at once; ``Axes.clear()`` resets an axis three times (the axis,
        then each of its two spines), so it built a dozen Ticks per figure and kept four.
        Here the major list is built when first used, and :meth:`_get_tick` clips the new
        tick. The minor list starts empty, as ``get_minor_ticks`` fills it: left lazy, it was
        built only for a spine to find that no minor tick is drawn.
        """
        self.__dict__.pop("majorTicks", None)
        self.minorTicks = []
        try:
            self.set_clip_path(self.axes.patch)
        except AttributeError:  # as matplotlib: no axes patch yet while the Axes is built
            pass

    def _get_ticks_position(self) -> Any:
        """``Axis._get_ticks_position``, which reads the first minor tick: built first if still missing."""
        self.get_minor_ticks(1)
        return super()._get_ticks_position()

    def set_clip_path(self, path: Any, transform: Any = None) -> None:
        """``Axis.set_clip_path``, applied to the ticks already built and remembered for those built later."""
        martist.Artist.set_clip_path(self, path, transform)
        self._tick_clip = (path, transform)
        for ticks in ("majorTicks", "minorTicks"):
            for tick in self.__dict__.get(ticks, ()):
                tick.set_clip_path(path, transform)
        self.stale = True

    def _get_tick(self, major: bool) -> Any:
        tick = super()._get_tick(major)
        if self._tick_clip is not None:
            tick.set_clip_path(*self._tick_clip)
        return tick

    def draw(self, renderer: Any) -> None:  # Axis.draw, one Tick per group moved to each location
        if not self.get_visible():
            return
        renderer.open_group(maxis.__name__, gid=self.get_gid())
        self._drawing = self._tick_groups()
        try:
            boxes1, boxes2 = self._label_boxes = self._measure(renderer, self._drawing, draw=True)
            self._update_label_position(renderer)
        finally:
            self._label_boxes = self._drawing = None
        self.label.draw(renderer)
        self._update_offset_text_position(boxes1, boxes2)
        self.offsetText.set_text(self.major.formatter.get_offset())
        self.offsetText.draw(renderer)
        renderer.close_group(maxis.__name__)
        self.stale = False


def _draw_lines(tick: Any, locs: list, renderer: Any) -> None:
    """Every grid line of the group as one path, then every tick mark as one line of markers.

    matplotlib draws each tick's grid line and marks in turn. Drawn all at once they
    paint the same pixels: grid lines lie inside the axes and the marks outside, apart
    from one another (a tick's own grid line is still painted before its mark), and each
    segment of the path is rasterised and snapped as it would be alone.
    """
    along = np.repeat(np.asarray(locs, dtype=float), 3)
    along[2::3] = np.nan  # each grid line its own segment
    across = np.tile([0.0, 1.0, np.nan], len(locs))
    x_axis = isinstance(tick, maxis.XTick)
    tick.gridline.set_data((along, across) if x_axis else (across, along))
    marks_at, zeros = list(locs), [0.0] * len(locs)
    for line in (tick.tick1line, tick.tick2line):
        line.set_data((marks_at, zeros) if x_axis else (zeros, marks_at))
    for line in (tick.gridline, tick.tick1line, tick.tick2line):
        line.draw(renderer)


def _place(tick: Any, loc: float, label: str) -> None:
    """``Tick.update_position`` for the labels only (the lines take every location in :func:`_draw_lines`)."""
    x_axis = isinstance(tick, maxis.XTick)
    for text in (tick.label1, tick.label2):
        if x_axis:
            text.set_x(loc)
        else:
            text.set_y(loc)
        text.set_text(label)
    tick._loc = loc


def _contains(interval: Any, value: Any) -> bool:
    return bool(mtransforms._interval_contains_close(interval, value))


class StampedXAxis(_StampedTicks, maxis.XAxis):
    _label_boxes = _drawing = _tick_clip = None


class StampedYAxis(_StampedTicks, maxis.YAxis):
    _label_boxes = _drawing = _tick_clip = None


class StampedAxes(Axes):
    """``Axes`` with :class:`StampedXAxis` and :class:`StampedYAxis` (``Axes._init_axis`` with the classes swapped)."""

    def _init_axis(self) -> None:
        self.xaxis = StampedXAxis(self, clear=False)
        self.spines.bottom.register_axis(self.xaxis)
        self.spines.top.register_axis(self.xaxis)
        self.yaxis = StampedYAxis(self, clear=False)
        self.spines.left.register_axis(self.yaxis)
        self.spines.right.register_axis(self.yaxis)




# the private methods the stamped axis overrides or calls, with their parameters
_AXIS_HOOKS = {"_update_ticks": ["self"], "_get_tick_boxes_siblings": ["self", "renderer"],
               "reset_ticks": ["self"], "_get_ticks_position": ["self"],
               "set_clip_path": ["self", "path", "transform"], "_get_tick": ["self", "major"],
               "draw": ["self", "renderer"], "_update_label_position": ["self", "renderer"],
               "_update_offset_text_position": ["self", "bboxes", "bboxes2"], "_tick_group_visible": ["kw"]}


@functools.cache
def usable() -> bool:
    """Whether this matplotlib's axes have the private parts :class:`StampedAxes` builds on, in
    the shape it was written for (checked once): else the report uses matplotlib's Axes."""
    try:
        for cls in (maxis.XAxis, maxis.YAxis):
            for name, params in _AXIS_HOOKS.items():
                if list(inspect.signature(getattr(cls, name)).parameters) != params:
                    return False
        init_names = maxis.Axis.__init__.__code__.co_names
        return (all(name in init_names for name in ("_major_tick_kw", "_minor_tick_kw"))
                and type(maxis.Axis.__dict__.get("majorTicks")).__name__ == "_LazyTickList"
                and "_loc" in maxis.Tick.update_position.__code__.co_names + maxis.XTick.update_position.__code__.co_names
                and list(inspect.signature(getattr(Axes, "_init_axis")).parameters) == ["self"]
                and callable(getattr(mtransforms, "_interval_contains_close", None)))
    except (AttributeError, TypeError, ValueError):  # a part missing, or no signature to read
        return False

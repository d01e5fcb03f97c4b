"""An Agg canvas whose renderer shapes and rasterises text once, not at every drawing.

matplotlib's Agg renderer, for every text it draws, shapes the string again
(``FT2Font._layout``: glyph lookup with font fallback and placement, a third of a millisecond a
call), asks the font for its line metrics again (two SFNT tables per call, from
``Text._get_layout``), and for every glyph rebuilds the same rotation matrix with
numpy. A report draws the same tick labels, legend entries and axis labels figure after
figure. This renderer keeps each shaping result (the glyphs and their offsets depend on
the string, the font, its size, the resolution, the hinting flag and the OpenType
features, which make the key) and each font's line metrics, builds a rotation matrix
once per text, and keeps each glyph's bitmap per sub-pixel offset (a glyph moved by
whole pixels is the same bitmap moved). FreeType is handed the same glyphs, sizes and
matrices as matplotlib hands it, so the pixels are the same.

It is built on private matplotlib internals (``RendererAgg._prepare_font`` and
``_draw_text_glyphs_and_boxes``, ``FT2Font._layout``, ``_set_transform``, ``_render_glyph``,
``FontManager._find_fonts_by_props``, ``MathTextParser._output_type``; matplotlib 3.11, pinned).
A matplotlib without them, or with another signature, gets a stock ``RendererAgg``
(:func:`shortcuts_usable`), and the log labels' parser stays matplotlib's when the output type
is not found: the report is drawn as stock matplotlib draws it.

Imported with matplotlib, on the first figure (see ``plots.preload``).
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any

import numpy as np
from matplotlib import font_manager
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag
from matplotlib.ft2font import FT2Font, RenderMode

from trustlab.report.sci_mathtext import ReportMathText


# what the renderer calls or overrides, with the parameters it passes (None: any)
_HOOKS = ((RendererAgg, "_prepare_font", ["self", "font_prop"]),
          (RendererAgg, "_draw_text_glyphs_and_boxes", ["self", "gc", "x", "y", "angle", "glyphs", "boxes"]),
          (RendererAgg, "draw_text", ["self", "gc", "x", "y", "s", "prop", "angle", "ismath", "mtext"]),
          (FT2Font, "_layout", None), (FT2Font, "_set_transform", None), (FT2Font, "_render_glyph", None),
          (font_manager.FontManager, "_find_fonts_by_props", None))


@functools.cache
def shortcuts_usable() -> bool:
    """Whether this matplotlib has the private hooks the renderer builds on, in the shape it was
    written for (checked once, at the first figure)."""
    for owner, name, params in _HOOKS:
        hook = getattr(owner, name, None)
        if not callable(hook):
            return False
        if params is not None:
            try:
                if list(inspect.signature(hook).parameters) != params:
                    return False
            except (TypeError, ValueError):  # no signature to read: not trusted
                return False
    return True


class ReportRenderer(RendererAgg):
    """``RendererAgg`` with shaping results and font line metrics kept for its lifetime."""

    def __init__(self, width: float, height: float, dpi: float) -> None:
        super().__init__(width, height, dpi)
        # log tick labels laid out without the math-text grammar (same output type as matplotlib's);
        # an output type not known here: matplotlib's parser
        output = {"vector": "path", "raster": "agg"}.get(str(getattr(self.mathtext_parser, "_output_type", "")))
        if output is not None:
            self.mathtext_parser = ReportMathText(output)
        self._layouts: dict[tuple, list] = {}
        self._line_metrics: dict[Any, tuple[float, float, float]] = {}
        self._glyphs: dict[tuple, tuple[Any, int, int]] = {}

    def _get_font_height_metrics(self, prop: Any) -> tuple[float, float, float]:
        """(min ascent, min descent, line gap) of ``prop``'s font, in pixels.

        ``Text._get_layout`` takes them from here when a renderer offers them; else it reads
        them from the font's SFNT tables on every call. Computed here as it computes them
        (the OS/2 table, else hhea), once per font properties.
        """
        metrics = self._line_metrics.get(prop)
        if metrics is None:  # stored under a copy: FontProperties hash by their mutable state
            metrics = self._line_metrics[prop.copy()] = self._read_line_metrics(prop)
        return metrics

    def _read_line_metrics(self, prop: Any) -> Any:
        font = font_manager.get_font(font_manager.fontManager._find_fonts_by_props(prop))
        for table_name, linegap_key, ascent_key, descent_key in (
                ("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"),
                ("hhea", "lineGap", "ascent", "descent")):
            table = font.get_sfnt_table(table_name)
            if table is None:
                continue
            scale = 1 / font.get_sfnt_table("head")["unitsPerEm"] * prop.get_size_in_points() * self.dpi / 72
            return table[ascent_key] * scale, -table[descent_key] * scale, table[linegap_key] * scale
        return None, None, None  # Text._get_layout then measures "lp", as without this method

    def draw_text(self, gc: Any, x: float, y: float, s: str, prop: Any, angle: float,
                  ismath: Any = False, mtext: Any = None) -> None:
        """``RendererAgg.draw_text`` with the shaping of ``s`` looked up, not redone."""
        if ismath:
            return self.draw_mathtext(gc, x, y, s, prop, angle)
        font = self._prepare_font(prop)
        flags = get_hinting_flag()
        features = mtext.get_fontfeatures() if mtext is not None else None
        language = mtext.get_language() if mtext is not None else None
        size = prop.get_size_in_points()
        key = (s, font, size, self.dpi, flags, features, language)
        items = self._layouts.get(key)
        if items is None:
            items = self._layouts[key] = font._layout(s, flags=flags, features=features, language=language)
        self._draw_text_glyphs_and_boxes(
            gc, x, y, angle, ((item.ft_object, size, item.glyph_index, 0, 1, item.x, item.y) for item in items), [])

    def _draw_text_glyphs_and_boxes(self, gc: Any, x: float, y: float, angle: float, glyphs: Any,
                                    boxes: Any) -> None:
        """``RendererAgg._draw_text_glyphs_and_boxes``, each glyph rasterised once per sub-pixel offset.

        FreeType places a glyph at an offset in 1/64 pixel and rasterises it in those units,
        so a glyph moved by whole pixels is the same bitmap moved by as many pixels. A glyph
        is therefore rendered at the fraction of a pixel of its offset and kept under (font,
        size, glyph, angle, extend, slant, that fraction, hinting, mode); the whole pixels
        place it. Tick labels and legend texts repeat: four glyphs in ten are found kept.
        The matrix is built once per (extend, slant), not per glyph.
        """
        if boxes:
            return super()._draw_text_glyphs_and_boxes(gc, x, y, angle, glyphs, boxes)
        cos = math.cos(math.radians(angle))
        sin = math.sin(math.radians(angle))
        load_flags = get_hinting_flag()
        mode = RenderMode.NORMAL if gc.get_antialiased() else RenderMode.MONO
        matrices: dict[tuple[float, float], Any] = {}
        kept = self._glyphs
        for font, size, glyph_index, slant, extend, dx, dy in glyphs:  # dy is upwards
            at_x = round(0x40 * (x + dx * cos - dy * sin))
            at_y = round(0x40 * (self.height - y + dx * sin + dy * cos))  # FreeType's y is up
            key = (font, size, glyph_index, angle, extend, slant, at_x & 0x3f, at_y & 0x3f, load_flags, mode)
            glyph = kept.get(key)
            if glyph is None:
                matrix = matrices.get((extend, slant))
                if matrix is None:
                    matrix = matrices[extend, slant] = (
                        0x10000 * np.array([[cos, -sin], [sin, cos]]) @ [[extend, extend * slant], [0, 1]]
                    ).round().astype(int)
                font.set_size(size, self.dpi)
                font._set_transform(matrix, [at_x & 0x3f, at_y & 0x3f])
                bitmap = font._render_glyph(glyph_index, load_flags, mode)
                buffer = bitmap.buffer
                if mode is RenderMode.MONO:
                    buffer *= 0xff
                glyph = kept[key] = (buffer, bitmap.left, bitmap.top)
            buffer, left, top = glyph
            # draw_text_image's y is downwards & the bitmap bottom side
            self._renderer.draw_text_image(buffer, left + (at_x >> 6),
                                           int(self.height) - (top + (at_y >> 6)) + buffer.shape[0], 0, gc)


class ReportCanvas(FigureCanvasAgg):
    """``FigureCanvasAgg`` drawing with a :class:`ReportRenderer` (kept while the figure's size and dpi are)."""

    def get_renderer(self) -> Any:
        if not shortcuts_usable():
            return super().get_renderer()  # stock RendererAgg
        w, h = self.get_width_height(physical=True)
        key = w, h, self.figure.dpi
        if getattr(self, "_lastKey", None) != key:
            self.renderer = ReportRenderer(w, h, self.figure.dpi)
            self._lastKey = key
        return self.renderer

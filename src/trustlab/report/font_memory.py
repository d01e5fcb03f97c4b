"""The fonts matplotlib draws with, read by FreeType from memory instead of from their files.

matplotlib hands FreeType a Python file object and a read callback: every glyph FreeType
loads (to shape a text, to measure it, to render it) is a seek and a read called back into
Python and passed on to the kernel, about a tenth of drawing the report's figures. An
``FT2Font`` also accepts any binary file object, so the fonts that
``font_manager._get_font`` builds for drawing get their file's bytes in a ``BytesIO``: the
same bytes, the same glyphs, no system calls. It is read once per font object, which
matplotlib keeps (``_get_font`` caches them, and empties that cache in a forked child,
whose copy then reads the file again: no file offset is shared across a fork).

``font_manager.ft2font`` and ``_get_font`` are matplotlib's internals (3.11, pinned): a
matplotlib without them, or whose ``FT2Font`` refuses a file object, reads its fonts from
their files as it does.

Only fonts built with ``_kerning_factor`` (how ``_get_font`` builds its fonts) are read
into memory; a font opened to list its properties (``FontManager.addfont``) keeps its path
as its ``fname``, which the font list stores.
"""

from __future__ import annotations

import io
import os
import threading
from typing import Any

_INSTALLED = threading.Lock()


class _FontModule:
    """``matplotlib.ft2font`` as ``font_manager`` sees it, but for ``FT2Font`` built for drawing."""

    def __init__(self, ft2font: Any) -> None:
        self._ft2font = ft2font

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ft2font, name)

    def FT2Font(self, filename: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N802 (matplotlib's name)
        if "_kerning_factor" in kwargs and isinstance(filename, (str, bytes, os.PathLike)):
            try:
                return self._ft2font.FT2Font(FontBytes(filename), *args, **kwargs)
            except Exception:  # a matplotlib whose FT2Font takes no file object: from the file, as stock
                pass
        return self._ft2font.FT2Font(filename, *args, **kwargs)


class FontBytes(io.BytesIO):
    """A font file's bytes in memory, and its ``path`` (the font's ``fname`` is this object; ``str`` gives the path).

    No ``__fspath__``: ``FT2Font`` would take it for a path and open the file.
    """

    def __init__(self, path: str | bytes | os.PathLike) -> None:
        with open(path, "rb") as fh:
            super().__init__(fh.read())
        self.path = os.fsdecode(path)

    def __str__(self) -> str:
        return self.path


def install() -> None:
    """From now on, in this process, the fonts matplotlib draws with are read from memory (idempotent)."""
    from matplotlib import font_manager

    with _INSTALLED:
        ft2font = getattr(font_manager, "ft2font", None)
        if ft2font is None or not hasattr(ft2font, "FT2Font") \
                or not callable(getattr(font_manager, "_get_font", None)) \
                or not hasattr(font_manager._get_font, "cache_clear"):
            return  # another matplotlib, whose font loading is not the one this wraps: fonts from files
        if not isinstance(ft2font, _FontModule):
            font_manager.ft2font = _FontModule(font_manager.ft2font)  # type: ignore[assignment]
            font_manager._get_font.cache_clear()  # fonts built earlier read from their files

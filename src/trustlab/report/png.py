"""A figure's pixels as a PNG file: 8-bit RGB, every row unfiltered, deflated by zlib at level 3.

Pillow's PNG encoder tries three row filters (none, up, sub; paeth too) on every row to
keep the one whose bytes sum smallest, which cost twice the deflating itself on the
report's figures, and it offers no way to choose a filter. A chart is mostly flat colour,
which deflate finds as repeats without a filter: unfiltered at level 3, the flagship's
figures encode in about 40% of Pillow's time at level 1, and take about 4% more bytes.
The file is what the PNG specification (ISO/IEC 15948) asks for, nothing more: the
signature, IHDR, one IDAT, IEND, each chunk with its CRC-32. The pixels decode the same
(``tests/lab/test_report_png.py`` decodes them with Pillow and compares).
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

SIGNATURE = b"\x89PNG\r\n\x1a\n"
LEVEL = 3  # zlib level: 1 and 2 are as fast and 5-10% larger, 4 and above slower (chart pixels)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


def png_rgb(rgba: Any, width: int, height: int) -> bytes:
    """The PNG of an opaque RGBA buffer (``height`` rows of ``width`` pixels): its RGB, alpha dropped.

    Each row starts with filter type 0 (none) and holds the pixels' R, G, B bytes.
    """
    import numpy as np
    from PIL import Image  # matplotlib imports it too

    rgb = Image.frombytes("RGB", (width, height), rgba, "raw", "RGBX").tobytes()  # unpacked by Pillow, in C
    rows = np.empty((height, 1 + 3 * width), dtype=np.uint8)
    rows[:, 0] = 0  # filter type: none
    rows[:, 1:] = np.frombuffer(rgb, dtype=np.uint8).reshape(height, 3 * width)
    # IHDR: width, height, bit depth 8, colour type 2 (RGB), deflate, adaptive filtering method, no interlace
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows, LEVEL))
            + _chunk(b"IEND", b""))

"""report/png.py writes PNGs that another decoder (Pillow's, built on the PNG specification) reads back
to the same pixels, with the chunks and header the specification asks for."""

from __future__ import annotations

import io
import struct
import zlib

import pytest


def _rgba(rgb):
    import numpy as np

    return np.dstack([rgb, np.full(rgb.shape[:2], 255, dtype=np.uint8)]).copy()


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (420, 850)])
def test_pillow_decodes_the_same_pixels(shape):
    import numpy as np
    from PIL import Image

    from trustlab.report.png import png_rgb

    rng = np.random.default_rng(sum(shape))
    rgb = rng.integers(0, 256, size=(*shape, 3), dtype=np.uint8)
    rgb[: shape[0] // 2] = 255  # flat rows as in a chart, beside noise
    data = png_rgb(memoryview(_rgba(rgb)), shape[1], shape[0])
    image = Image.open(io.BytesIO(data))
    image.load()  # checks every chunk's CRC and the zlib stream's checksum
    assert image.mode == "RGB" and image.size == (shape[1], shape[0])
    assert np.array_equal(np.asarray(image), rgb)


def test_chunks_and_header_follow_the_specification():
    import numpy as np

    from trustlab.report.png import SIGNATURE, png_rgb

    data = png_rgb(memoryview(_rgba(np.zeros((2, 5, 3), dtype=np.uint8))), 5, 2)
    assert data.startswith(SIGNATURE)
    at, kinds = len(SIGNATURE), []
    while at < len(data):
        length, = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        crc, = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        assert crc == zlib.crc32(kind + body)
        kinds.append(kind)
        if kind == b"IHDR":
            assert struct.unpack(">IIBBBBB", body) == (5, 2, 8, 2, 0, 0, 0)
        if kind == b"IDAT":
            rows = zlib.decompress(body)
            assert len(rows) == 2 * (1 + 3 * 5) and rows[0] == rows[16] == 0  # each row: filter byte 0
        at += 12 + length
    assert kinds == [b"IHDR", b"IDAT", b"IEND"]

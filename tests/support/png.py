"""A small PNG reader for tests (no imaging library): 8-bit greyscale, RGB or RGBA images,
not interlaced, as Chromium writes its screenshots."""

from __future__ import annotations

import struct
import zlib

import attrs

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> channels (grey, RGB, grey+alpha, RGBA)


@attrs.frozen
class Image:
    width: int
    height: int
    pixels: tuple[tuple[int, int, int], ...]
    """Row by row, RGB (alpha dropped)."""

    def colours(self) -> dict[tuple[int, int, int], int]:
        """Each colour and how many pixels have it."""
        counts: dict[tuple[int, int, int], int] = {}
        for pixel in self.pixels:
            counts[pixel] = counts.get(pixel, 0) + 1
        return counts


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(data: bytes) -> Image:
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    if header is None:
        raise ValueError("no IHDR chunk")
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or interlace or colour_type not in _CHANNELS:
        raise ValueError(f"unsupported PNG: depth {depth}, colour {colour_type}, {interlace=}")
    channels = _CHANNELS[colour_type]
    stride = width * channels
    raw = zlib.decompress(idat)
    previous = bytearray(stride)
    pixels: list[tuple[int, int, int]] = []
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            upper_left = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                line[i] = (line[i] + _paeth(left, up, upper_left)) & 0xFF
        for x in range(width):
            p = line[x * channels : (x + 1) * channels]
            pixels.append((p[0], p[0], p[0]) if channels < 3 else (p[0], p[1], p[2]))
        previous = line
    return Image(width, height, tuple(pixels))

"""Reading PNG screenshots and comparing them with a tolerance, with zlib and numpy only.

Decodes the 8-bit, non-interlaced truecolour PNGs that Chromium writes (RGB or RGBA), and compares two
images by the mean colour of small blocks, so that anti-aliasing noise passes and a moved or recoloured
element does not.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    pixels: bytes
    """RGB, row after row."""

    def at(self, x: int, y: int) -> tuple[int, int, int]:
        i = 3 * (y * self.width + x)
        return self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]


def decode(data: bytes) -> Image:
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("PNG without IHDR")
    width, height, depth, ctype, _, _, interlace = header
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {ctype}, interlace {interlace})")
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = np.zeros(stride, dtype=np.uint8)
    out = np.empty((height, stride), dtype=np.uint8)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1)
        if f == 0:
            out[y] = line
        elif f == 1:  # sub: each byte adds the one bpp before it, i.e. a running sum per channel
            out[y] = (line.reshape(width, bpp).cumsum(axis=0, dtype=np.uint64) & 0xFF).reshape(stride)
        elif f == 2:  # up
            out[y] = line + prev  # uint8 arithmetic wraps modulo 256
        elif f in (3, 4):  # average, Paeth: each byte depends on the one decoded before it
            out[y] = _sequential(f, line.tolist(), prev.tolist(), bpp)
        else:
            raise ValueError(f"bad PNG filter {f}")
        prev = out[y]
    rgb = out.reshape(height, width, bpp)[:, :, :3]
    return Image(width, height, rgb.tobytes())


def _sequential(f: int, line: list[int], up: list[int], bpp: int) -> list[int]:
    """A row under filter 3 (average) or 4 (Paeth), byte by byte: each byte depends on the one bpp before."""
    for i in range(bpp):  # no byte to the left: both predict from the byte above (Paeth picks it)
        line[i] = (line[i] + (up[i] // 2 if f == 3 else up[i])) & 0xFF
    if f == 3:
        for i in range(bpp, len(line)):
            line[i] = (line[i] + (line[i - bpp] + up[i]) // 2) & 0xFF
        return line
    for i in range(bpp, len(line)):
        a, b, c = line[i - bpp], up[i], up[i - bpp]
        pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - c - c)  # |p - a|, |p - b|, |p - c| for p = a + b - c
        line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
    return line


def _means(img: Image, block: int) -> np.ndarray:
    """The mean colour of each whole block x block square, rows of blocks by columns by channel."""
    rows, cols = img.height // block, img.width // block
    pixels = np.frombuffer(img.pixels, dtype=np.uint8).reshape(img.height, img.width, 3)
    squares = pixels[: rows * block, : cols * block].reshape(rows, block, cols, block, 3)
    return squares.sum(axis=(1, 3), dtype=np.int64) / (block * block)


def differing_blocks(a: Image, b: Image, *, block: int = 8, level: float = 24.0) -> float:
    """The share of blocks whose mean colour differs by more than ``level`` (0-255) in some channel."""
    if (a.width, a.height) != (b.width, b.height):
        return 1.0
    apart = np.abs(_means(a, block) - _means(b, block)).max(axis=2) > level
    return float(apart.sum()) / apart.size

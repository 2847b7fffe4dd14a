"""Reading PNG screenshots and comparing them with a tolerance, with the standard library only.

Decodes the 8-bit, non-interlaced truecolour PNGs that Chromium writes (RGB or RGBA), and compares two
images by the mean colour of small blocks, so that anti-aliasing noise passes and a moved or recoloured
element does not.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    pixels: bytes
    """RGB, row after row."""

    def at(self, x: int, y: int) -> tuple[int, int, int]:
        i = 3 * (y * self.width + x)
        return self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


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
    prev = bytearray(stride)
    out = bytearray()
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif f == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 0xFF
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + (left + prev[i]) // 2) & 0xFF
        elif f == 4:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                up_left = prev[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + _paeth(left, prev[i], up_left)) & 0xFF
        elif f != 0:
            raise ValueError(f"bad PNG filter {f}")
        prev = line
        out += line if bpp == 3 else bytes(b for i, b in enumerate(line) if i % 4 != 3)
    return Image(width, height, bytes(out))


def block_means(img: Image, block: int = 8) -> list[tuple[float, float, float]]:
    out = []
    for by in range(0, img.height - block + 1, block):
        for bx in range(0, img.width - block + 1, block):
            r = g = b = 0
            for y in range(by, by + block):
                row = 3 * (y * img.width + bx)
                seg = img.pixels[row : row + 3 * block]
                r += sum(seg[0::3])
                g += sum(seg[1::3])
                b += sum(seg[2::3])
            n = block * block
            out.append((r / n, g / n, b / n))
    return out


def differing_blocks(a: Image, b: Image, *, block: int = 8, level: float = 24.0) -> float:
    """The share of blocks whose mean colour differs by more than ``level`` (0-255) in some channel."""
    if (a.width, a.height) != (b.width, b.height):
        return 1.0
    ma, mb = block_means(a, block), block_means(b, block)
    bad = sum(
        1 for p, q in zip(ma, mb, strict=True) if max(abs(x - y) for x, y in zip(p, q, strict=True)) > level
    )
    return bad / len(ma)

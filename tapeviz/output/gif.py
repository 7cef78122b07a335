"""Animated GIF written frame by frame: one shared palette, each frame only the rectangle
that changed, with the unchanged pixels inside it transparent.

Why not Pillow's ``save(save_all=True)``: it holds every frame in memory until the
end (150 frames of a large picture are gigabytes) and gives no hook between
frames for a progress bar or Ctrl+C.  Here each frame is encoded as soon as it
is drawn and only the previous frame is kept.  Pillow still does the LZW
compression: a frame's rectangle is saved as a one-frame GIF, and its image data
block is copied into the animation under our own headers (GIF89a: a graphic
control extension for delay, disposal and transparency, an image descriptor with
the rectangle's position).

A shared palette suits these pictures: a few flat colours and their antialiased
blends with white and with each other, the same in every frame.  It is made by
median cut from the first and last frames (every colour the animation uses
appears in one of them) with white kept exact, and leaves index 255 free for
transparency.
"""

from __future__ import annotations

import io
import struct
from typing import BinaryIO

import numpy as np
from PIL import Image

__all__ = ["Palette", "GifStream"]

TRANSPARENT = 255


class Palette:
    """255 colours shared by every frame; index 255 is transparency."""

    def __init__(self, colors: np.ndarray):
        colors = np.asarray(colors, np.uint8).reshape(-1, 3)[:TRANSPARENT]
        if len(colors) == 0:
            raise ValueError("A palette needs at least one colour.")
        table = np.zeros((256, 3), np.uint8)
        table[: len(colors)] = colors
        table[len(colors) :] = colors[0]
        self.table = table
        self._colors = colors.astype(np.int32)
        # every 24-bit colour's palette index, filled in as colours are met; 255 (never an
        # answer: it is transparency) marks a colour not met yet
        self._lookup = np.full(1 << 24, TRANSPARENT, np.uint8)

    @classmethod
    def from_frames(cls, *frames: np.ndarray, exact: int = 96, sample: int = 2_000_000) -> Palette:
        """White, then the ``exact`` most frequent colours as they are (the flat fills of
        boxes, lines and text), then median-cut colours for the rest (antialiased
        edges), from the frames' pixels (RGB)."""
        pixels = np.concatenate([np.asarray(f)[..., :3].reshape(-1, 3) for f in frames])
        if len(pixels) > sample:  # evenly spaced pixels: every region contributes
            pixels = pixels[np.linspace(0, len(pixels) - 1, sample).astype(np.int64)]
        packed = pixels.astype(np.uint32) @ np.array([1 << 16, 1 << 8, 1], np.uint32)
        unique, counts = np.unique(packed, return_counts=True)
        keep = unique != 0xFFFFFF
        unique, counts = unique[keep], counts[keep]
        room = TRANSPARENT - 1  # after white
        if len(unique) > room:  # the most frequent exactly, the others by median cut
            order = np.argsort(-counts, kind="stable")
            first, rest = unique[order[:exact]], order[exact:]
            rest_pixels = np.repeat(unique[rest], np.minimum(counts[rest], 1000))
            strip = Image.fromarray(_unpack(rest_pixels).reshape(1, -1, 3), "RGB")
            quant = strip.quantize(colors=room - exact, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
            quant_palette = quant.getpalette()
            assert quant_palette is not None  # (a quantized image is a palette image)
            table = np.asarray(quant_palette[: 3 * 256], np.uint8).reshape(-1, 3)
            colors = np.concatenate([_unpack(first), table[sorted(set(quant.getdata()))]])
        else:
            colors = _unpack(unique)
        return cls(np.concatenate([np.array([[255, 255, 255]], np.uint8), colors]))

    def indices(self, rgb: np.ndarray) -> np.ndarray:
        """Each pixel's nearest palette colour (no dithering: flat colours stay flat, white
        stays white).  Nearest by a weighted RGB distance, computed once per colour."""
        rgb = np.asarray(rgb)[..., :3]
        packed = (rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2]
        out = self._lookup[packed]
        missing = out == TRANSPARENT
        if missing.any():
            new = np.unique(packed[missing])
            cols = _unpack(new).astype(np.int32)
            for i in range(0, len(new), 4096):  # (colours x palette) distances, a block at a time
                d = (cols[i : i + 4096, None, :] - self._colors[None, :, :]) ** 2 @ np.array([2, 4, 3], np.int32)
                self._lookup[new[i : i + 4096]] = d.argmin(axis=1).astype(np.uint8)
            out[missing] = self._lookup[packed[missing]]
        return out


def _unpack(packed: np.ndarray) -> np.ndarray:
    """0xRRGGBB integers as rows of (R, G, B) bytes."""
    packed = np.asarray(packed, np.uint32)
    return np.stack([(packed >> 16) & 255, (packed >> 8) & 255, packed & 255], axis=1).astype(np.uint8)


def _image_data(indices: np.ndarray, palette: Palette) -> bytes:
    """The LZW-compressed image data of these palette indices: Pillow writes them as a
    one-frame GIF, whose image data block (code size byte, sub-blocks, terminator) is
    cut out of it."""
    im = Image.fromarray(np.ascontiguousarray(indices), "P")
    im.putpalette(palette.table.tobytes())
    buf = io.BytesIO()
    im.save(buf, format="GIF", optimize=False, interlace=False)  # rows in order, as our descriptor says
    data = buf.getvalue()
    pos = 13
    if data[10] & 0x80:  # global colour table
        pos += 3 << ((data[10] & 7) + 1)
    while True:
        kind = data[pos]
        if kind == 0x21:  # extension: label, then sub-blocks
            pos += 2
            while data[pos]:
                pos += data[pos] + 1
            pos += 1
        elif kind == 0x2C:  # image descriptor
            flags = data[pos + 9]
            if flags & 0x40:
                raise ValueError("Pillow wrote an interlaced GIF although asked not to")
            pos += 10
            if flags & 0x80:
                pos += 3 << ((flags & 7) + 1)
            start = pos
            pos += 1  # LZW minimum code size
            while data[pos]:
                pos += data[pos] + 1
            return data[start : pos + 1]
        else:
            raise ValueError(f"unexpected block 0x{kind:02x} in Pillow's GIF")


class GifStream:
    """An animated GIF written to ``fp`` one frame at a time.

    ``add(indices, delay)`` takes a whole frame as palette indices; only the
    rectangle where it differs from the previous frame is written, its unchanged
    pixels transparent.  A frame identical to the previous one lengthens that
    frame instead.  ``close(delay)`` writes the last frame with its own delay
    (an animation holds its last frame longer) and the trailer.
    """

    def __init__(self, fp: BinaryIO, size: tuple[int, int], palette: Palette, *, loop: int = 0):
        self.fp = fp
        self.size = size
        self.palette = palette
        self.frames = 0
        self._previous: np.ndarray | None = None
        self._pending: tuple[bytes, int, bool] | None = None  # (image block, delay in 1/100 s, transparent)
        w, h = size
        if not (0 < w < 65536 and 0 < h < 65536):
            raise ValueError(f"A GIF frame must be 1 to 65535 pixels on each side, not {w} x {h}.")
        fp.write(b"GIF89a" + struct.pack("<HHBBB", w, h, 0xF7, 0, 0) + palette.table.tobytes())
        fp.write(b"!\xff\x0bNETSCAPE2.0\x03\x01" + struct.pack("<H", loop) + b"\x00")

    def add(self, indices: np.ndarray, delay: float, changed: tuple[int, int, int, int] | None = None) -> None:
        """One frame (rows x columns of palette indices) shown for ``delay`` seconds.
        ``changed``: a rectangle (x0, y0, x1, y1) outside which this frame is known to
        equal the previous one (saves comparing the whole frame)."""
        indices = np.asarray(indices, np.uint8)
        if indices.shape != (self.size[1], self.size[0]):
            raise ValueError(
                f"Frame of {indices.shape[1]} x {indices.shape[0]} pixels in a GIF of {self.size[0]} x {self.size[1]}."
            )
        cs = max(2, round(delay * 100))
        prev = self._previous
        if prev is None:
            pending = (self._block(indices, 0, 0), cs, False)
        else:
            x0, y0, x1, y1 = changed if changed is not None else (0, 0, self.size[0], self.size[1])
            diff = indices[y0:y1, x0:x1] != prev[y0:y1, x0:x1]
            rows, cols = np.flatnonzero(diff.any(axis=1)), np.flatnonzero(diff.any(axis=0))
            if len(rows) == 0:  # nothing changed: show the previous frame longer
                assert self._pending is not None  # (the previous frame, written at the next add or close)
                data, d, transparent = self._pending
                self._pending = (data, d + cs, transparent)
                return
            ry0, ry1, rx0, rx1 = y0 + rows[0], y0 + rows[-1] + 1, x0 + cols[0], x0 + cols[-1] + 1
            part = indices[ry0:ry1, rx0:rx1].copy()
            part[~diff[ry0 - y0 : ry1 - y0, rx0 - x0 : rx1 - x0]] = TRANSPARENT
            pending = (self._block(part, rx0, ry0), cs, True)
            prev[ry0:ry1, rx0:rx1] = indices[ry0:ry1, rx0:rx1]
        self._flush()
        self._pending = pending
        if prev is None:
            self._previous = indices.copy()
        self.frames += 1

    def close(self, last_delay: float | None = None) -> None:
        """Write the last frame (shown ``last_delay`` seconds, if given) and the trailer."""
        if self._pending is not None and last_delay is not None:
            data, _, transparent = self._pending
            self._pending = (data, max(2, round(last_delay * 100)), transparent)
        self._flush()
        self.fp.write(b";")

    def _block(self, part: np.ndarray, x: int, y: int) -> bytes:
        h, w = part.shape
        return b"," + struct.pack("<HHHHB", x, y, w, h, 0) + _image_data(part, self.palette)

    def _flush(self) -> None:
        """Write the pending frame: its graphic control (delay; disposal 1 leaves it under
        the next frame, whose transparent pixels let it show) and its image."""
        if self._pending is None:
            return
        data, cs, transparent = self._pending
        flags = (1 << 2) | (1 if transparent else 0)
        self.fp.write(b"!\xf9\x04" + struct.pack("<BHBB", flags, cs, TRANSPARENT if transparent else 0, 0) + data)
        self._pending = None

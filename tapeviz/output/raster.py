"""Pixels from the SVG tapeviz writes: PNG files and the frames of an animation, without matplotlib.

Why rasterise the SVG rather than ask matplotlib for pixels: the SVG written by
:func:`tapeviz.output.svg.to_svg` is the picture's one definition, so a PNG or GIF made
from it looks exactly like it whatever the picture code changes; and
matplotlib 3.11 spends ~3 ms laying out each label, which made a 1,000-op PNG
take 3 s and a GIF of a small CNN 40 s.  resvg (the ``resvg-py`` wheel: Rust, no
system library, text shaped with the font files we hand it) draws the same
document in a fraction of that.

An animation changes little from one frame to the next (a title, the active
box, a few arrows and labels), while resvg's cost grows with the whole
document (shaping text above all, ~0.1 ms a glyph).  :class:`FrameRenderer`
therefore keeps the previous frame's pixels, matches the new document's
elements with the previous one's (by id), and redraws only the rectangles where
elements changed (:mod:`tapeviz.output.svg_elements` says where each may paint): each
rectangle is a document of its own holding just the elements that reach into
it.  An element that cannot be bounded makes that frame a whole redraw.
"""

from __future__ import annotations

import bisect
import io
import math
from collections.abc import Callable

import numpy as np
from PIL import Image

from .svg_elements import CJK, Box, SvgDoc, fonts_for, parse_svg

__all__ = ["MAX_PNG_PIXELS", "MAX_GIF_PIXELS", "raster_scale", "png_bytes", "FrameRenderer", "text_strip"]

MAX_PNG_PIXELS = 40_000_000  # ~160 MB of RGBA while rendering; larger pictures get a lower dpi
MAX_GIF_PIXELS = 8_000_000  # per frame: viewers decode every frame of a GIF whole
STRIP_PIXELS = 12_000_000  # PNGs above this are drawn in strips (progress, Ctrl+C between strips)

Rect = tuple[int, int, int, int]  # pixel columns x0..x1, rows y0..y1 (ends excluded)


def _resvg(doc: str, fonts: tuple[tuple[str, ...], dict[str, str]]) -> bytes:
    import resvg_py

    files, generic = fonts
    return resvg_py.svg_to_bytes(
        svg_string=doc,
        skip_system_fonts=True,
        font_files=list(files),
        font_family=generic["sans-serif"],
        sans_serif_family=generic["sans-serif"],
        serif_family=generic["serif"],
        monospace_family=generic["monospace"],
        cursive_family=generic["cursive"],
        fantasy_family=generic["fantasy"],
    )


def _rgba(png: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(png)) as im:
        return np.asarray(im.convert("RGBA"))


# --------------------------------------------------------------------------- drawing


def raster_scale(doc: SvgDoc, dpi: float, max_pixels: int) -> tuple[float, tuple[int, int]]:
    """Pixels per user unit and the picture's size in pixels at ``dpi``, lowered so the
    picture stays under ``max_pixels`` (a 5,000-op graph is tens of inches on each side)."""
    w_in, h_in = doc.size_inches
    dpi = min(float(dpi), math.sqrt(max_pixels / max(w_in * h_in, 1e-9)))
    # user units per inch, to 1/100: the document's size in points is rounded when written
    # (1501.22pt for 2085.02 units), and an exact ratio (1.0 at the figure's own dpi) keeps
    # the parts redrawn later on the same pixel grid as the whole picture
    native = round(doc.view_box[2] / w_in, 2)
    scale = dpi / native
    # whole pixels, rounded down (a fraction of a pixel is cut rather than the cap passed)
    return scale, (
        max(1, math.floor(doc.view_box[2] * scale + 1e-6)),
        max(1, math.floor(doc.view_box[3] * scale + 1e-6)),
    )


def _whole(doc: SvgDoc, scale: float, size: tuple[int, int]) -> Box:
    """The region a picture of ``size`` whole pixels shows at ``scale``: the size was
    rounded down in each direction, so the region is cut to it rather than the document
    squeezed into it (which would scale the two directions apart and shift every
    antialiased edge against the parts redrawn later)."""
    vx, vy = doc.view_box[:2]
    return (vx, vy, size[0] / scale, size[1] / scale)


def png_bytes(
    svg: str, *, dpi: float = 100, max_pixels: int | None = None, on_part: Callable[[int, int], None] | None = None
) -> bytes:
    """The SVG document as PNG bytes at ``dpi``, lower if it would pass ``max_pixels``
    (default :data:`MAX_PNG_PIXELS`).

    A picture above :data:`STRIP_PIXELS` is drawn in horizontal strips, each from the
    elements reaching into it, calling ``on_part(done, total)`` after each: a long
    drawing shows progress and can be interrupted between strips (resvg holds the
    interpreter while it draws).  Smaller ones are one call, resvg's own PNG."""
    doc = parse_svg(svg, elements=False)
    scale, size = raster_scale(doc, dpi, MAX_PNG_PIXELS if max_pixels is None else max_pixels)
    w, h = size
    if w * h <= STRIP_PIXELS:
        png = _resvg(doc.document(_whole(doc, scale, size), size), doc.fonts)
        if on_part is not None:
            on_part(1, 1)
        return png
    renderer = FrameRenderer(dpi=dpi, max_pixels=MAX_PNG_PIXELS if max_pixels is None else max_pixels)
    renderer._scale, renderer._size = scale, size  # one picture drawn in strips: its size is known
    renderer._drawn = np.zeros((h, w, 4), np.uint8)
    doc = parse_svg(svg)
    rows = max(1, STRIP_PIXELS // (2 * w))
    tops = list(range(0, h, rows))
    for i, top in enumerate(tops):
        renderer._redraw(doc, (0, top, w, min(h, top + rows)))
        if on_part is not None:
            on_part(i + 1, len(tops))
    buf = io.BytesIO()
    Image.fromarray(renderer.pixels, "RGBA").save(buf, format="PNG", compress_level=3)
    return buf.getvalue()


def text_strip(
    text: str,
    width: int,
    scale: float,
    *,
    height: int,
    size: float = 12.0,
    background: tuple[int, int, int] = (255, 255, 255),
) -> np.ndarray:
    """RGBA pixels (``height`` x ``width``) of one centred line of italic text on
    ``background``, ``size`` user units tall at ``scale`` pixels per unit: the note a frame
    carries when several of the picture's steps were merged into it.  Dark amber on a light
    background, light amber on a dark one (a dark theme's picture)."""
    vw, vh = width / scale, height / scale
    esc = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    r, g, b = (int(c) for c in background[:3])
    color = "#9a3412" if 0.299 * r + 0.587 * g + 0.114 * b >= 128 else "#fbbf24"
    doc = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {vw!r} {vh!r}" '
        f'preserveAspectRatio="none"><rect width="100%" height="100%" fill="#{r:02x}{g:02x}{b:02x}"/>'
        f'<text x="{vw / 2!r}" y="{vh * 0.68!r}" font-size="{size}" text-anchor="middle" fill="{color}" '
        f'font-style="italic">{esc}</text></svg>'
    )
    return _rgba(_resvg(doc, fonts_for((), bool(CJK.search(text)))))


#: The caption strip's text size (user units) and line pitch (in sizes).
CAPTION_SIZE = 12.0
CAPTION_PITCH = 1.45


def caption_lines(lines: list[str], width: int, scale: float, size: float = CAPTION_SIZE) -> list[str]:
    """``lines`` wrapped to a strip ``width`` pixels wide (a margin each side): what
    :func:`caption_strip` draws, so a caller can size its strip for the longest caption."""
    from ..picture.fonts import wrap

    room = width / scale - 2 * _CAPTION_MARGIN
    return [part for line in lines for part in wrap(line, room, size)]


_CAPTION_MARGIN = 8.0


def caption_strip(
    lines: list[str],
    width: int,
    scale: float,
    *,
    height: int,
    size: float = CAPTION_SIZE,
    background: tuple[int, int, int] = (255, 255, 255),
    color: str = "#1f2937",
) -> np.ndarray:
    """RGBA pixels (``height`` x ``width``) of ``lines`` (already wrapped: caption_lines),
    left-aligned on ``background``, ``size`` user units tall at ``scale`` pixels per unit:
    a GIF frame's caption (its step's chain rule)."""
    vw, vh = width / scale, height / scale
    r, g, b = (int(c) for c in background[:3])
    pitch = size * CAPTION_PITCH
    texts = []
    for i, line in enumerate(lines):
        esc = line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        y = _CAPTION_MARGIN / 2 + (i + 0.78) * pitch
        texts.append(
            f'<text x="{_CAPTION_MARGIN}" y="{y:.2f}" font-size="{size}" fill="{color}" '
            f'xml:space="preserve">{esc}</text>'
        )
    doc = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {vw!r} {vh!r}" '
        f'preserveAspectRatio="none"><rect width="100%" height="100%" fill="#{r:02x}{g:02x}{b:02x}"/>'
        + "".join(texts)
        + "</svg>"
    )
    return _rgba(_resvg(doc, fonts_for((), any(CJK.search(t) for t in lines))))


def caption_height(n_lines: int, scale: float, size: float = CAPTION_SIZE) -> int:
    """Pixels of a caption strip holding ``n_lines`` lines."""
    return max(1, math.ceil((n_lines * size * CAPTION_PITCH + _CAPTION_MARGIN) * scale))


def _merge(rects, slack: int) -> list[Rect]:
    """Merge rectangles (x0, y0, x1, y1) while some pair's union costs little more than
    the two apart (its area is at most theirs plus ``slack``), the best pair first."""
    r = np.asarray(rects, np.int64).reshape(-1, 4)
    alive = np.ones(len(r), bool)
    while alive.sum() > 1:
        idx = np.flatnonzero(alive)
        q = r[idx]
        area = (q[:, 2] - q[:, 0]) * (q[:, 3] - q[:, 1])
        ux0 = np.minimum(q[:, None, 0], q[None, :, 0])
        uy0 = np.minimum(q[:, None, 1], q[None, :, 1])
        ux1 = np.maximum(q[:, None, 2], q[None, :, 2])
        uy1 = np.maximum(q[:, None, 3], q[None, :, 3])
        gain = area[:, None] + area[None, :] + slack - (ux1 - ux0) * (uy1 - uy0)
        np.fill_diagonal(gain, -1)
        k = int(np.argmax(gain))
        i, j = divmod(k, len(idx))
        if gain[i, j] < 0:
            break
        r[idx[i]] = (ux0[i, j], uy0[i, j], ux1[i, j], uy1[i, j])
        alive[idx[j]] = False
    return [(int(x0), int(y0), int(x1), int(y1)) for x0, y0, x1, y1 in r[alive]]


def _moved(before: list[str], after: list[str]) -> set[str]:
    """Elements that changed places in the drawing order (a picture may draw the active
    arrows last, on top): all but a longest run kept in order.  Pixels change only where
    a moved element paints, so redrawing its boxes in the new order is enough."""
    if before == after:
        return set()
    rank = {k: i for i, k in enumerate(before)}
    seq = [rank[k] for k in after]
    # longest increasing subsequence of the old ranks, in the new order (patience sorting)
    tails: list[int] = []  # smallest tail rank of an increasing run of each length
    tail_at: list[int] = []  # index in seq of that tail
    prev_of = [-1] * len(seq)
    for i, r in enumerate(seq):
        j = bisect.bisect_left(tails, r)
        if j == len(tails):
            tails.append(r)
            tail_at.append(i)
        else:
            tails[j], tail_at[j] = r, i
        prev_of[i] = tail_at[j - 1] if j else -1
    kept = set()
    i = tail_at[-1] if tail_at else -1
    while i >= 0:
        kept.add(after[i])
        i = prev_of[i]
    return set(after) - kept


def _area(r: Rect) -> int:
    return max(0, r[2] - r[0]) * max(0, r[3] - r[1])


class FrameRenderer:
    """Pixels of successive SVG documents of one picture: the frames of an animation.

    The first document is drawn whole; each later one only where its elements differ
    from the previous document's (see the module's docstring), so a frame costs what
    changed, not what the picture holds.  All documents share the first one's size.
    ``full_every`` forces whole redraws (tests compare the two ways).
    """

    #: Margin drawn around a redrawn rectangle and thrown away: resvg flattens a curve that
    #: crosses the image's edge differently from one inside it (a box's rounded corner cut
    #: by the edge differs by up to ~15% in a few pixels), so the cut is kept away from what
    #: is kept.
    MARGIN = 32
    #: Past this many rectangles, or this share of the picture, a whole redraw is cheaper.
    MAX_RECTS = 48
    MAX_SHARE = 0.5
    #: Two rectangles are redrawn as one when their union is at most this many pixels bigger.
    SLACK = 48 * 48

    def __init__(self, *, dpi: float = 100, max_pixels: int | None = None, full_every: bool = False):
        self.dpi = dpi
        self.max_pixels = MAX_GIF_PIXELS if max_pixels is None else max_pixels
        self.full_every = full_every
        # fixed by the first document (read through the properties below)
        self._scale: float | None = None
        self._size: tuple[int, int] | None = None
        self._drawn: np.ndarray | None = None
        self._doc: SvgDoc | None = None
        self.full_redraws = 0
        self.partial_redraws = 0
        self._bounds: dict = {}  # element source -> bounds, for documents with this root

    @property
    def scale(self) -> float:
        """Pixels per user unit of the SVG (the first document's)."""
        if self._scale is None:
            raise RuntimeError("FrameRenderer.scale: no document rendered yet; call render(svg) first.")
        return self._scale

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of every frame, in pixels (the first document's)."""
        if self._size is None:
            raise RuntimeError("FrameRenderer.size: no document rendered yet; call render(svg) first.")
        return self._size

    @property
    def pixels(self) -> np.ndarray:
        """The last frame's RGBA pixels (rows, columns, 4), updated in place by render."""
        if self._drawn is None:
            raise RuntimeError("FrameRenderer.pixels: no document rendered yet; call render(svg) first.")
        return self._drawn

    def render(self, svg: str) -> tuple[np.ndarray, list[Rect]]:
        """RGBA pixels (rows, columns, 4) of this document, and the pixel rectangles
        redrawn since the previous one (the whole picture for the first).  The array is
        updated in place by the next call: copy it to keep it."""
        doc = parse_svg(svg, self._bounds)
        prev = self._doc
        self._doc = doc
        if prev is not None and (prev.inner_attrs != doc.inner_attrs or prev.view_box != doc.view_box):
            self._bounds.clear()  # what elements inherit changed: bounds estimated under it are stale
            doc = self._doc = parse_svg(svg, self._bounds)
        if prev is None:
            self._scale, self._size = raster_scale(doc, self.dpi, self.max_pixels)
            return self._full(doc)
        if doc.view_box != prev.view_box or doc.size_inches != prev.size_inches:
            raise ValueError("Every frame of an animation must have the same size; this one differs from the first.")
        damage = None if self.full_every else self._damage(prev, doc)
        if damage is None:
            return self._full(doc)
        for r in damage:
            self._redraw(doc, r)
        self.partial_redraws += 1
        return self.pixels, damage

    # -- internals -----------------------------------------------------------------

    def _full(self, doc: SvgDoc) -> tuple[np.ndarray, list[Rect]]:
        w, h = size = self.size
        self._drawn = np.array(_rgba(_resvg(doc.document(_whole(doc, self.scale, size), size), doc.fonts)))
        self.full_redraws += 1
        return self._drawn, [(0, 0, w, h)]

    def _damage(self, prev: SvgDoc, doc: SvgDoc) -> list[Rect] | None:
        """Pixel rectangles to redraw, or None when a whole redraw is needed."""
        if (
            not prev.keyed
            or not doc.keyed
            or prev.globals != doc.globals
            or prev.inner_attrs != doc.inner_attrs
            or prev.outer_attrs != doc.outer_attrs
            or prev.fonts != doc.fonts
        ):
            return None
        old = {u.key: u for u in prev.units}
        new = {u.key: u for u in doc.units}
        moved = _moved([u.key for u in prev.units if u.key in new], [u.key for u in doc.units if u.key in old])
        changed: list[list[Box] | None] = []
        for k, u in new.items():
            o = old.get(k)
            if o is None or o.source != u.source or k in moved:
                changed += [unit.parts for unit in (o, u) if unit is not None]
        changed += [o.parts for k, o in old.items() if k not in new]
        if any(p is None for p in changed):  # an element whose bounds are unknown
            return None
        parts = [p for p in changed if p is not None]
        w, h = self.size
        rects = []
        for group in parts:  # each changed element's boxes, merged where they overlap (a box and its labels)
            rects += _merge(self._pixels(doc, group), slack=self.SLACK)
        if len(rects) > 4 * self.MAX_RECTS:
            return None
        rects = _merge(rects, slack=self.SLACK)
        if len(rects) > self.MAX_RECTS or sum(map(_area, rects)) > self.MAX_SHARE * w * h:
            return None
        return rects

    def _pixels(self, doc: SvgDoc, parts: list[Box]) -> np.ndarray:
        """Boxes in user units as pixel boxes (x0, y0, x1, y1), widened a pixel for
        antialiasing, clipped to the picture; empty ones dropped."""
        if not parts:
            return np.zeros((0, 4), np.int64)
        w, h = self.size
        b = np.asarray(parts, float)
        b = b[(b[:, 0] <= b[:, 2]) & (b[:, 1] <= b[:, 3])]
        vx, vy = doc.view_box[:2]
        s = self.scale
        px = np.stack(
            [
                np.floor((b[:, 0] - vx) * s) - 1,
                np.floor((b[:, 1] - vy) * s) - 1,
                np.ceil((b[:, 2] - vx) * s) + 1,
                np.ceil((b[:, 3] - vy) * s) + 1,
            ],
            axis=1,
        )
        px = np.clip(px, 0, [w, h, w, h]).astype(np.int64)
        return px[(px[:, 0] < px[:, 2]) & (px[:, 1] < px[:, 3])]

    def _redraw(self, doc: SvgDoc, rect: Rect) -> None:
        """Draw the document inside ``rect`` (and a margin thrown away) from the elements
        that reach into it."""
        w, h = self.size
        m = self.MARGIN
        x0, y0, x1, y1 = max(0, rect[0] - m), max(0, rect[1] - m), min(w, rect[2] + m), min(h, rect[3] + m)
        s = self.scale
        vx, vy = doc.view_box[:2]
        region = (vx + x0 / s, vy + y0 / s, (x1 - x0) / s, (y1 - y0) / s)
        # elements that reach into the kept rectangle; what only touches the margin is thrown away anyway
        kx0, ky0, kx1, ky1 = vx + rect[0] / s, vy + rect[1] / s, vx + rect[2] / s, vy + rect[3] / s
        units = [
            u
            for u in doc.units
            if u.parts is None or any(p[0] <= kx1 and p[2] >= kx0 and p[1] <= ky1 and p[3] >= ky0 for p in u.parts)
        ]
        part = _rgba(_resvg(doc.document(region, (x1 - x0, y1 - y0), units), doc.fonts))
        self.pixels[rect[1] : rect[3], rect[0] : rect[2]] = part[
            rect[1] - y0 : rect[3] - y0, rect[0] - x0 : rect[2] - x0
        ]

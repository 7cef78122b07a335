"""SVG straight from a GraphView, without a matplotlib renderer.

``to_svg(view)`` writes the view as it stands now, after any ``set_step`` or
``set_grad_overrides``: one SVG element per box, label, gradient text, arrow
and edge label.  It reads them from the view's Scene (plain records: no
matplotlib artist needs to exist, and making a few thousand of them is most
of the cost of a large picture) or, once the view's artists exist, from the
artists, so that a caller's restyling shows in the file; the two give the
same document (tests/test_svg.py compares them).  matplotlib's own SVG
backend draws every patch and text through its general machinery
(transforms, graphics contexts, text layout per artist), which is what makes
a 1,000-box figure take seconds; here positions come from one batched
data→display transform (the one the view's Axes has), arrow heads from the
arrow's last segment, and text metrics from a small per-font cache.

Only the handful of figure-level artists (title, caption, legend) go through
matplotlib's own layout, by drawing them onto :class:`_FigureRenderer`, a
renderer that writes SVG elements instead of pixels: the legend keeps
matplotlib's arrangement for a few dozen elements.  Text widths are the
unhinted ones an SVG viewer draws (Agg's hinted text is a few per cent
narrower), so legend columns and label boxes fit the text they hold.

Arrow geometry is computed here rather than read from
``FancyArrowPatch.get_path()``: that returns data coordinates, and its head
is sized by the dpi of the figure's last draw (1.0 before any), so it is
neither display coordinates nor stable.  The ``-|>`` head follows matplotlib's
own construction (``ArrowStyle._Curve``) from the last segment's direction;
other arrow styles are mutated by matplotlib's public ArrowStyle call.

Coordinates are matplotlib's display pixels at ``figure.dpi`` with y flipped,
so the picture lines up with ``figure.savefig(..., dpi=figure.dpi)``; the
``width``/``height`` attributes are in points, as in matplotlib's SVG.

Not drawn: anything in the figure that is not one of the view's artists
(see :func:`draws_whole_figure`; ``save_view`` falls back to matplotlib's
SVG for such figures), clipping to the axes (the view's limits always hold
its boxes and routes) and mathtext (``$...$`` is shown as typed).
"""

from __future__ import annotations

import html
import math
import re
import warnings
from typing import Any, NamedTuple

import matplotlib as mpl
import numpy as np
from matplotlib import font_manager
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import get_hinting_flag
from matplotlib.colors import to_rgba
from matplotlib.font_manager import FontProperties
from matplotlib.path import Path
from matplotlib.patches import ArrowStyle, BoxStyle, ConnectionStyle, FancyArrowPatch, FancyBboxPatch
from matplotlib.text import Text
from matplotlib.transforms import Affine2DBase, Bbox, BboxTransformFrom, BboxTransformTo, TransformedBbox

from .render import ARROW_STYLE, BOX_STYLE, LABEL_BBOX, GraphView
from .scene import Label, Scene

__all__ = ["to_svg", "draws_whole_figure"]

SVG_NS = "http://www.w3.org/2000/svg"

# Characters XML 1.0 cannot hold (control characters, lone surrogates, U+FFFE/F):
# a tensor name may contain them, and one would make the whole file unreadable.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_TO_ESCAPE = re.compile("[&<>\"'\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

_CAP = {"butt": "butt", "round": "round", "projecting": "square"}
_JOIN = {"miter": "miter", "round": "round", "bevel": "bevel"}
_ANCHOR = {"left": "start", "center": "middle", "right": "end"}
_GENERIC = {"sans-serif", "serif", "monospace", "cursive", "fantasy"}


def _esc(s: Any) -> str:
    """Text or attribute value, escaped: `<script>` stays text."""
    s = str(s)
    if _TO_ESCAPE.search(s) is None:  # most labels: nothing to replace, one scan instead of six
        return s
    return html.escape(_NOT_XML.sub("\ufffd", s), quote=True)


def _f(v: float) -> str:
    return f"{v:.2f}"


def _dashes(linestyle, lw_pt: float) -> tuple[float, list[float]] | None:
    """(offset, dash list) in points for a matplotlib linestyle, scaled by the
    linewidth as matplotlib scales them (``lines.scale_dashes``); None if solid."""
    ls = linestyle
    if isinstance(ls, str):
        ls = {"-": "solid", "--": "dashed", "-.": "dashdot", ":": "dotted"}.get(ls, ls)
        if ls in ("solid", "None", "none", "", " "):
            return None
        if ls not in ("dashed", "dashdot", "dotted"):
            return None
        offset, seq = 0.0, list(mpl.rcParams[f"lines.{ls}_pattern"])
    else:
        offset, seq = ls
        if seq is None:
            return None
        offset, seq = offset or 0.0, list(seq)
    if not seq:
        return None
    if mpl.rcParams["lines.scale_dashes"]:
        offset, seq = offset * lw_pt, [s * lw_pt for s in seq]
    return offset, seq


class _Svg:
    """Per-call state: the pixel scale, caches of colours, fonts and text metrics."""

    def __init__(self, fig):
        self.dpi = float(fig.dpi)
        self.px = self.dpi / 72.0  # pixels per point
        self.width = float(fig.bbox.width)
        self.height = float(fig.bbox.height)
        self.measure = _FigureRenderer(self, [])  # also measures texts
        self._colors: dict = {}
        self._fonts: dict = {}
        self._advances: dict = {}
        self._styles: dict = {}
        self.family = self.font_of(mpl.font_manager.FontProperties())[0]

    # -- paint ----------------------------------------------------------------

    def paint(self, what: str, color, alpha: float | None = None) -> str:
        """` fill="#rrggbb"` (+ opacity) for a matplotlib colour; none when transparent."""
        key = (what, color if isinstance(color, str) else tuple(np.ravel(color)), alpha)
        out = self._colors.get(key)
        if out is None:
            r, g, b, a = to_rgba(color, alpha)
            if a <= 0:
                out = f' {what}="none"'
            else:
                out = f' {what}="#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"'
                if a < 1:
                    out += f' {what}-opacity="{a:.3g}"'
            self._colors[key] = out
        return out

    def stroke_style(self, color, lw_pt: float, dash=None, cap=None, join=None, fill=None) -> str:
        """CSS declarations for an outline (and fill), as in a `style=` attribute.

        ``dash``: (offset, dash list) in points, already scaled by the linewidth, or None."""
        key = (tuple(color) if not isinstance(color, str) else color, lw_pt,
               None if dash is None else (dash[0], tuple(dash[1])), cap, join,
               None if fill is None else (tuple(fill) if not isinstance(fill, str) else fill))
        got = self._styles.get(key)
        if got is not None:
            return got
        parts = ["fill:none" if fill is None else self._css_color("fill", fill)]
        if to_rgba(color)[3] <= 0 or lw_pt <= 0:
            parts.append("stroke:none")
        else:
            parts.append(self._css_color("stroke", color))
            parts.append(f"stroke-width:{lw_pt * self.px:.2f}")
            cap, join = _CAP.get(str(cap), "butt"), _JOIN.get(str(join), "miter")
            if cap != "butt":  # SVG's default, as matplotlib's for patches
                parts.append(f"stroke-linecap:{cap}")
            if join != "miter":
                parts.append(f"stroke-linejoin:{join}")
            if dash:
                offset, seq = dash
                parts.append("stroke-dasharray:" + ",".join(_f(s * self.px) for s in seq))
                if offset:
                    parts.append(f"stroke-dashoffset:{_f(offset * self.px)}")
        got = self._styles[key] = ";".join(parts)
        return got

    def _css_color(self, what: str, color) -> str:
        r, g, b, a = to_rgba(color)
        out = f"{what}:#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"
        return out + (f";{what}-opacity:{a:.3g}" if a < 1 else "")

    # -- fonts ----------------------------------------------------------------

    def font_of(self, prop) -> tuple[str, float, float, float, str]:
        """(family list, ascent, descent, line gap in pixels, SVG font attributes) of a FontProperties.

        Ascent, descent and gap are the font's own (OS/2 typo, else hhea)
        metrics, which matplotlib's text layout uses for the height of a line."""
        key = hash(prop)
        got = self._fonts.get(key)
        if got is None:
            size = prop.get_size_in_points() * self.px
            asc = desc = None
            gap = 0.0
            try:
                font = font_manager.get_font(font_manager.findfont(prop))
                name = font.family_name
                units = font.get_sfnt_table("head")["unitsPerEm"]
                for table, g, up, down in (("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"),
                                           ("hhea", "lineGap", "ascent", "descent")):
                    tab = font.get_sfnt_table(table)
                    if tab is not None:
                        scale = size / units
                        gap, asc, desc = tab[g] * scale, tab[up] * scale, -tab[down] * scale
                        break
            except Exception:  # a font file we cannot read: let the viewer choose, measure 'lp'
                name = ""
            if asc is None:
                _, h, desc = self.measure.measure_ink("lp", prop)
                asc, gap = h - desc, 0.0
            generic = next((f for f in prop.get_family() if f in _GENERIC), "sans-serif")
            family = f"'{name}', {generic}" if name else generic
            attrs = f' font-size="{size:.2f}"'
            weight = prop.get_weight()
            weight = font_manager.weight_dict.get(weight, 400) if isinstance(weight, str) else weight
            if int(weight) != 400:
                attrs += f' font-weight="{int(weight)}"'
            style = prop.get_style()
            if style != "normal":
                attrs += f' font-style="{style}"'
            if family != getattr(self, "family", family):
                attrs += f' font-family="{_esc(family)}"'
            got = self._fonts[key] = (family, asc, desc, gap, attrs)
        return got

    def width_of(self, line: str, prop) -> float:
        """Width in pixels of one line, as an SVG viewer draws it: the sum of its
        glyphs' unhinted advances (cached per character; FT2Font.set_text
        shapes the whole string each time, ~0.5 ms a label).  matplotlib's Agg
        text is hinted and a few per cent narrower; SVG text is not hinted, so
        legend columns and label boxes are laid out for the text they hold."""
        key = hash(prop)
        table = self._advances.get(key)
        if table is None:
            table = self._advances[key] = {}
        width = 0.0
        font = None
        for c in line:
            w = table.get(c)
            if w is None:
                if font is None:
                    font = font_manager.get_font(font_manager.findfont(prop))
                    font.clear()
                    font.set_size(prop.get_size_in_points(), self.dpi)
                try:
                    with warnings.catch_warnings():  # a missing glyph: matplotlib warns when it draws
                        warnings.simplefilter("ignore")
                        w = font.load_char(ord(c), flags=get_hinting_flag()).linearHoriAdvance / 65536.0
                except (RuntimeError, ValueError, OverflowError):
                    w = 0.6 * prop.get_size_in_points() * self.px
                table[c] = w
            width += w
        return width


# --------------------------------------------------------------------------- paths


def _path_d(verts, codes, height: float) -> str:
    """SVG path data for display-coordinate vertices and matplotlib path codes."""
    out = []
    n = len(verts)
    if codes is None:
        for i, (x, y) in enumerate(verts):
            out.append(f"{'L' if i else 'M'}{x:.2f} {height - y:.2f}")
        return "".join(out)
    i = 0
    while i < n:
        c = codes[i]
        if c == Path.MOVETO:
            x, y = verts[i]
            out.append(f"M{x:.2f} {height - y:.2f}")
            i += 1
        elif c == Path.LINETO:
            x, y = verts[i]
            out.append(f"L{x:.2f} {height - y:.2f}")
            i += 1
        elif c == Path.CURVE3:
            (x1, y1), (x2, y2) = verts[i], verts[i + 1]
            out.append(f"Q{x1:.2f} {height - y1:.2f} {x2:.2f} {height - y2:.2f}")
            i += 2
        elif c == Path.CURVE4:
            (x1, y1), (x2, y2), (x3, y3) = verts[i], verts[i + 1], verts[i + 2]
            out.append(f"C{x1:.2f} {height - y1:.2f} {x2:.2f} {height - y2:.2f} {x3:.2f} {height - y3:.2f}")
            i += 3
        elif c == Path.CLOSEPOLY:
            out.append("Z")
            i += 1
        else:  # STOP
            break
    return "".join(out)


def _wedge(x0, y0, x1, y1, head_dist, cos_t, sin_t, lw):
    """A filled arrow head pointing from (x0, y0) to (x1, y1), as matplotlib's
    ``ArrowStyle._Curve`` builds it: its tip pulled back by half the outline's
    projection so the stroked tip ends at (x1, y1); also that pull-back."""
    dx, dy = x0 - x1, y0 - y1
    dist = math.hypot(dx, dy) or 1.0
    pad = 0.5 * lw / sin_t
    ddx, ddy = pad * dx / dist, pad * dy / dist
    dx, dy = dx / dist * head_dist, dy / dist * head_dist
    tx, ty = x1 + ddx, y1 + ddy
    return ((tx + cos_t * dx + sin_t * dy, ty - sin_t * dx + cos_t * dy), (tx, ty),
            (tx + cos_t * dx - sin_t * dy, ty + sin_t * dx + cos_t * dy)), ddx, ddy


def _arrow_paths(svg: _Svg, arrow, path: Path) -> list[tuple[Path, bool]]:
    """A FancyArrowPatch's line and head(s) in display coordinates: (path, filled) pairs."""
    return _arrow_parts(svg, arrow.get_arrowstyle(), arrow.get_mutation_scale(), arrow.get_linewidth(),
                        arrow.get_mutation_aspect(), path)


class _DisplayPath(NamedTuple):
    """A path in display coordinates: vertices and matplotlib path codes.  Lighter than
    matplotlib's Path, which validates its arrays on creation (~15 µs, thousands a picture)."""

    vertices: Any
    codes: Any


def _arrow_parts(svg: _Svg, style, mutation_scale: float, lw_pt: float, aspect, path) -> list[tuple[Any, bool]]:
    """An arrow's line and head(s) in display coordinates: (path, filled) pairs.

    ``-|>`` (what tapeviz draws) is computed here; any other arrow style is
    asked to mutate the path itself (the public ArrowStyle call), with the
    scale matplotlib would use at this figure's dpi.
    """
    mutation = mutation_scale * svg.px
    lw = lw_pt * svg.px
    v = path.vertices
    if type(style) is ArrowStyle.CurveFilledB and aspect in (None, 1) and len(v) >= 2:
        (x2, y2), (x3, y3) = v[-2], v[-1]
        if (x2, y2) == (x3, y3):
            return [(path, False)]
        hl, hw = style.head_length * mutation, style.head_width * mutation
        head_dist = math.hypot(hl, hw)
        head, ddx, ddy = _wedge(x2, y2, x3, y3, head_dist, hl / head_dist, hw / head_dist, lw)
        line = list(v) if isinstance(v, list) else v.tolist()
        line[-1] = (x3 + ddx, y3 + ddy)
        return [(_DisplayPath(line, path.codes), False), (_DisplayPath([*head, head[0]], _HEAD_CODES), True)]
    paths, fills = style(Path(np.asarray(v, float), path.codes), mutation, lw, aspect)
    if not np.iterable(fills):
        return [(paths, bool(fills))]
    return list(zip(paths, (bool(f) for f in fills)))


_HEAD_CODES = [Path.MOVETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY]
_ARC_CODES = [Path.MOVETO, Path.CURVE3, Path.CURVE3]


def _arc3(xa: float, ya: float, xb: float, yb: float, rad: float) -> _DisplayPath:
    """matplotlib's ``arc3`` connection between two display points: one quadratic curve."""
    dx, dy = xb - xa, yb - ya
    cx, cy = (xa + xb) / 2 + rad * dy, (ya + yb) / 2 - rad * dx
    return _DisplayPath([(xa, ya), (cx, cy), (xb, yb)], _ARC_CODES)


def _arrow_display_paths(svg: _Svg, arrows) -> list[Path]:
    """Each arrow's connecting path in display coordinates, before its head.

    Arrows between two points with a plain ``arc3`` connection (no shrink,
    no patches) are one quadratic curve, computed here; arrows given a
    ``path=`` have their vertices transformed, all of them in one batch.
    """
    out: list[Path | None] = [None] * len(arrows)
    batch, where = [], []  # (transform, vertices) to transform together
    for i, arrow in enumerate(arrows):
        ends = arrow._posA_posB  # noqa: SLF001  (matplotlib keeps no public getter for these)
        if ends is not None:
            where.append((i, "ends", arrow))
            batch.append((arrow.get_transform(), np.asarray(ends, float)))
        else:
            p = arrow._path_original  # noqa: SLF001
            where.append((i, "path", p))
            batch.append((arrow.get_transform(), np.asarray(p.vertices, float)))
    # one transform call per distinct transform (all of them are ax.transData here)
    groups: dict[int, list[int]] = {}
    for j, (t, _) in enumerate(batch):
        groups.setdefault(id(t), []).append(j)
    done: list[np.ndarray | None] = [None] * len(batch)
    for js in groups.values():
        t = batch[js[0]][0]
        stacked = np.concatenate([batch[j][1] for j in js]) if js else np.empty((0, 2))
        pts = t.transform(stacked)
        k = 0
        for j in js:
            m = len(batch[j][1])
            done[j] = pts[k:k + m]
            k += m
    for j, (i, kind, obj) in enumerate(where):
        pts = done[j]
        if kind == "path":
            out[i] = Path(pts, obj.codes)
            continue
        arrow = obj
        conn = arrow.get_connectionstyle()
        (xa, ya), (xb, yb) = pts
        if (type(conn) is ConnectionStyle.Arc3 and not arrow.shrinkA and not arrow.shrinkB
                and arrow.patchA is None and arrow.patchB is None):
            out[i] = Path(*_arc3(xa, ya, xb, yb, conn.rad))
        else:
            out[i] = conn((xa, ya), (xb, yb), patchA=arrow.patchA, patchB=arrow.patchB,
                          shrinkA=arrow.shrinkA * svg.px, shrinkB=arrow.shrinkB * svg.px)
    return out  # type: ignore[return-value]


# --------------------------------------------------------------------------- texts


class _TextItem(NamedTuple):
    """One text to write, whoever it came from (a matplotlib Text or a scene Label)."""

    s: str
    prop: Any  # FontProperties
    color: Any
    alpha: float | None
    ha: str
    va: str
    rotation: float
    linespacing: Any
    bbox: tuple | None  # (boxstyle, facecolor, edgecolor, linewidth) of the background box
    x: float  # display pixels, y up
    y: float
    visible: bool = True


def _positions(artists) -> list[tuple[float, float]]:
    """Display positions of texts, one transform call per distinct transform."""
    out: list = [None] * len(artists)
    groups: dict[int, list[int]] = {}
    for i, t in enumerate(artists):
        groups.setdefault(id(t.get_transform()), []).append(i)
    for idx in groups.values():
        tr = artists[idx[0]].get_transform()
        pts = tr.transform(np.array([artists[i].get_position() for i in idx], float).reshape(-1, 2))
        for i, p in zip(idx, pts.tolist()):
            out[i] = p
    return out


def _text_item(t, pos) -> _TextItem:
    """What to write for a matplotlib Text at display position ``pos``."""
    box = t.get_bbox_patch()
    bbox = None if box is None else (box.get_boxstyle(), box.get_facecolor(), box.get_edgecolor(), box.get_linewidth())
    return _TextItem(t.get_text(), t.get_fontproperties(), t.get_color(), t.get_alpha(), t.get_horizontalalignment(),
                     t.get_verticalalignment(), t.get_rotation(), t.get_linespacing(), bbox, pos[0], pos[1],
                     t.get_visible())


def _text(svg: _Svg, t: _TextItem, *, gid: str | None = None, keep_empty: bool = False) -> str:
    """One text as an SVG <text> (and its background box as a rounded <rect> before it).

    Lines are placed as matplotlib's layout places them: the block of lines is
    aligned by ``va`` using the font's ascent and descent, each line anchored
    by ``ha``.
    """
    s = t.s
    if not t.visible or (not s and not keep_empty):
        return ""
    prop = t.prop
    _, asc, desc, gap, font = svg.font_of(prop)
    x, y = t.x, svg.height - t.y  # SVG y grows downwards
    lines = s.split("\n") if s else [""]
    spacing = t.linespacing
    if spacing == "normal":  # line height from the font's metrics (matplotlib >= 3.11)
        g = gap if len(lines) > 1 else 0.0
        a, d = asc + g / 2, desc + g / 2
    else:
        if not isinstance(spacing, (int, float)):  # older matplotlib: 1.2 of 'lp'
            spacing = 1.2
        height = spacing * (asc + desc)
        a, d = (height + asc - desc) / 2, (height - asc + desc) / 2
    pitch = a + d  # baseline to baseline
    block = len(lines) * pitch
    va = t.va
    if va == "top":
        top = y
    elif va == "bottom":
        top = y - block
    elif va == "baseline":
        top = y - (block - d)
    elif va == "center_baseline":
        top = y - a / 2
    else:  # center
        top = y - block / 2
    anchor = _ANCHOR.get(t.ha, "start")
    rot = t.rotation
    rotate = f' transform="rotate({-rot:.2f} {x:.2f} {y:.2f})"' if rot else ""
    fill = svg.paint("fill", t.color, t.alpha)
    ident = f' id="{_esc(gid)}"' if gid else ""
    out = []
    if t.bbox is not None and s:
        bs, face, edge, lw = t.bbox
        width = max(svg.width_of(line, prop) for line in lines)
        x0 = x - (width / 2 if anchor == "middle" else width if anchor == "end" else 0.0)
        scale = prop.get_size_in_points() * svg.px  # matplotlib mutates a text's bbox by its font size
        pad = getattr(bs, "pad", 0.0) * scale
        r = 0.0
        if isinstance(bs, BoxStyle.Round):
            r = (bs.rounding_size * scale) if bs.rounding_size else pad
        elif not isinstance(bs, BoxStyle.Square):
            r = pad  # other styles: a rounded box of the same padding
        rx = f' rx="{r:.2f}"' if r else ""
        stroke = (svg.paint("stroke", edge) + f' stroke-width="{lw * svg.px:.2f}"') if lw and to_rgba(edge)[3] else ""
        out.append(f'<rect x="{x0 - pad:.2f}" y="{top - pad:.2f}" width="{width + 2 * pad:.2f}" '
                   f'height="{block + 2 * pad:.2f}"{rx}{svg.paint("fill", face)}{stroke}{rotate}/>')
    base = top + a
    if len(lines) == 1:
        out.append(f'<text{ident} x="{x:.2f}" y="{base:.2f}"{font} text-anchor="{anchor}"{fill}{rotate}>'
                   f'{_esc(s)}</text>')
    else:
        spans = "".join(f'<tspan x="{x:.2f}" y="{base + i * pitch:.2f}">{_esc(line)}</tspan>'
                        for i, line in enumerate(lines))
        out.append(f'<text{ident}{font} text-anchor="{anchor}"{fill}{rotate}>{spans}</text>')
    return "".join(out)


# --------------------------------------------------------------------------- figure-level artists


class _FigureRenderer(RendererBase):
    """A matplotlib renderer that writes SVG elements into a list.

    Used for the few figure-level artists (title, caption, legend) so they keep
    matplotlib's own layout; and, through RendererBase, to measure text with
    the same fonts and hinting matplotlib lays text out with.
    """

    def __init__(self, svg: _Svg, out: list[str]):
        super().__init__()
        self.svg = svg
        self.out = out
        self._groups: list[bool] = []

    def points_to_pixels(self, points):
        return points * self.svg.px

    def get_canvas_width_height(self):
        return self.svg.width, self.svg.height

    def get_text_width_height_descent(self, s, prop, ismath):
        """Width from the glyphs' advances (see _Svg.width_of), height
        and descent from the font's line metrics, which matplotlib's layout
        uses for any line whose glyphs are not taller than the font."""
        if ismath:
            return super().get_text_width_height_descent(s, prop, ismath)
        _, asc, desc, _, _ = self.svg.font_of(prop)
        return self.svg.width_of(s, prop), asc + desc, desc

    def measure_ink(self, s, prop):
        """Width, height and descent of the inked string, as FT2Font lays it out (slow)."""
        font = font_manager.get_font(font_manager.findfont(prop))
        font.clear()
        font.set_size(prop.get_size_in_points(), self.svg.dpi)
        font.set_text(s, 0.0, flags=get_hinting_flag())
        w, h = font.get_width_height()
        return w / 64.0, h / 64.0, font.get_descent() / 64.0

    def flipy(self):
        return False

    def open_group(self, s, gid=None):
        self._groups.append(bool(gid))  # only groups with an id are worth an element
        if gid:
            self.out.append(f'<g id="{_esc(gid)}">')

    def close_group(self, s):
        if self._groups and self._groups.pop():
            self.out.append("</g>")

    def draw_path(self, gc, path, transform, rgbFace=None):
        svg = self.svg
        p = transform.transform_path(path)
        d = _path_d(p.vertices, p.codes, svg.height)
        fill = None
        if rgbFace is not None:
            fill = tuple(rgbFace) if len(rgbFace) == 4 else (*rgbFace[:3], gc.get_alpha())
            if gc.get_forced_alpha():
                fill = (*fill[:3], gc.get_alpha())
        offset, seq = gc.get_dashes()  # in points, already scaled by the linewidth
        style = svg.stroke_style(gc.get_rgb(), gc.get_linewidth(), None if seq is None else (offset or 0.0, seq),
                                 cap=gc.get_capstyle(), join=gc.get_joinstyle(), fill=fill)
        self.out.append(f'<path d="{d}" style="{style}"/>')

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        svg = self.svg
        font = svg.font_of(prop)[4]
        anchor = "start"
        if mtext is not None and not angle:
            ha = mtext.get_horizontalalignment()
            if ha in ("center", "right"):  # keep centred titles centred whatever font the viewer uses
                w = self.get_text_width_height_descent(s, prop, ismath)[0]
                x += w / 2 if ha == "center" else w
                anchor = _ANCHOR[ha]
        y = svg.height - y
        rotate = f' transform="rotate({-angle:.2f} {x:.2f} {y:.2f})"' if angle else ""
        rgba = gc.get_rgb()
        self.out.append(f'<text x="{x:.2f}" y="{y:.2f}"{font} text-anchor="{anchor}"'
                        f'{svg.paint("fill", rgba)}{rotate}>{_esc(s)}</text>')

    def draw_image(self, gc, x, y, im):  # legends hold no images; ignore any
        pass


# --------------------------------------------------------------------------- what to write


class _EdgeItem(NamedTuple):
    gid: str
    path: Path  # the connecting path in display coordinates, before its head
    color: Any
    face: Any
    lw: float
    linestyle: Any
    cap: Any
    join: Any
    style: Any  # ArrowStyle
    mutation: float
    aspect: Any


class _NodeItem(NamedTuple):
    gid: str
    box: str  # the box's SVG element ("" when hidden)
    texts: list  # _TextItem: title, subtitle, value
    grad: _TextItem | None
    grad_gid: str


def _from_artists(svg: _Svg, view: GraphView):
    """Edges, nodes and edge labels read from the view's matplotlib artists (which a
    caller may have restyled)."""
    a = view.artists
    arrows = [(e, ar) for e, ar in a.arrows.items() if ar.get_visible()]
    edges = [_EdgeItem(ar.get_gid() or f"edge-{e[0]}-{e[1]}-{e[2]}", path, ar.get_edgecolor(), ar.get_facecolor(),
                       ar.get_linewidth(), ar.get_linestyle(), ar.get_capstyle(), ar.get_joinstyle(),
                       ar.get_arrowstyle(), ar.get_mutation_scale(), ar.get_mutation_aspect())
             for (e, ar), path in zip(arrows, _arrow_display_paths(svg, [ar for _, ar in arrows]))]

    nodes = list(a.boxes)
    corners = np.array([(b.get_x(), b.get_y(), b.get_x() + b.get_width(), b.get_y() + b.get_height())
                        for b in a.boxes.values()], float).reshape(-1, 4)
    trans = view.ax.transData
    if not nodes:
        lo = hi = corners[:, :2]
    elif all(b.get_transform() is trans for b in a.boxes.values()):  # one batched transform
        lo, hi = trans.transform(corners[:, :2]), trans.transform(corners[:, 2:])
    else:  # a box with a transform of its own
        lo = np.array([b.get_transform().transform(c[:2]) for b, c in zip(a.boxes.values(), corners)])
        hi = np.array([b.get_transform().transform(c[2:]) for b, c in zip(a.boxes.values(), corners)])
    texts = []
    for n in nodes:
        texts.extend(a.labels.get(n, ()))
        if n in a.grads:
            texts.append(a.grads[n])
    items = iter([_text_item(t, p) for t, p in zip(texts, _positions(texts))])
    node_items = []
    for n, box, (x0, y0), (x1, y1) in zip(nodes, a.boxes.values(), lo.tolist(), hi.tolist()):
        rect = _box(svg, box, x0, y0, x1, y1) if box.get_visible() else ""
        trio = [next(items) for _ in a.labels.get(n, ())]
        grad = next(items) if n in a.grads else None
        gid = a.grads[n].get_gid() or f"grad-{n}" if n in a.grads else ""
        node_items.append(_NodeItem(box.get_gid() or f"node-{n}", rect, trio, grad, gid))

    labels = [(e, t) for e, t in a.edge_labels.items() if t.get_visible() and t.get_text()]
    label_items = [(f"label-{e[0]}-{e[1]}-{e[2]}", _text_item(t, p))
                   for (e, t), p in zip(labels, _positions([t for _, t in labels]))]
    return edges, node_items, label_items


class _Defaults:
    """What matplotlib would make of tapeviz's styles (font properties, box and
    arrow styles, text colour, line spacing) under the rcParams in force now,
    read once from one artist of each kind instead of thousands."""

    def __init__(self):
        t = Text(0, 0, "", bbox=LABEL_BBOX)
        self.text_color = t.get_color()
        self.linespacing = t.get_linespacing()
        bp = t.get_bbox_patch()
        self.bbox = (bp.get_boxstyle(), bp.get_facecolor(), bp.get_edgecolor(), bp.get_linewidth())
        box = FancyBboxPatch((0, 0), 1, 1, boxstyle=BOX_STYLE)
        self.box = (box.get_boxstyle(), box.get_mutation_scale(), box.get_mutation_aspect(), box.get_capstyle(),
                    box.get_joinstyle())
        arrow = FancyArrowPatch((0, 0), (1, 1), **ARROW_STYLE)
        self.arrow = (arrow.get_arrowstyle(), arrow.get_mutation_scale(), arrow.get_mutation_aspect(),
                      arrow.get_capstyle(), arrow.get_joinstyle())
        self._props: dict = {}

    def prop(self, label: Label) -> FontProperties:
        key = (label.size, label.weight, label.style)
        got = self._props.get(key)
        if got is None:
            got = self._props[key] = FontProperties(size=label.size, weight=label.weight, style=label.style)
        return got

    def text(self, label: Label, x: float, y: float) -> _TextItem:
        return _TextItem(label.text, self.prop(label), self.text_color if label.color is None else label.color, None,
                         label.ha, label.va, 0.0, self.linespacing, self.bbox if label.boxed else None, x, y)


def _data_to_display(scene: Scene, figure) -> Affine2DBase:
    """The transform a view's Axes would have: data limits onto the axes rectangle."""
    (x0, x1), (y0, y1) = scene.limits if scene.limits is not None else ((0.0, 1.0), (0.0, 1.0))
    axes_box = TransformedBbox(Bbox.from_bounds(*scene.frame.axes), figure.transFigure)
    return BboxTransformFrom(Bbox([[x0, y0], [x1, y1]])) + BboxTransformTo(axes_box)


def _from_scene(svg: _Svg, view: GraphView):
    """Edges, nodes and edge labels read from the view's scene: no matplotlib artist is
    made, which is what makes a large picture's SVG cheap."""
    sc = view.scene
    d = _Defaults()
    to_px = _data_to_display(sc, view.chrome().figure)

    # every point at once: arrow ends or paths, box corners, text anchors
    pts: list = []
    for ar in sc.arrows.values():
        pts.extend(ar.path.vertices if ar.path is not None else (ar.start, ar.end))
    for b in sc.boxes.values():
        pts += [(b.x, b.y), (b.x + b.w, b.y + b.h)]
    for n in sc.boxes:
        pts.extend((t.x, t.y) for t in sc.labels[n])
        g = sc.grads[n]
        pts.append((g.x, g.y))
    for t in sc.edge_labels.values():
        pts.append((t.x, t.y))
    it = iter(to_px.transform(np.asarray(pts, float).reshape(-1, 2)).tolist())

    style, mutation, aspect, cap, join = d.arrow
    edges = []
    for ar in sc.arrows.values():
        if ar.path is not None:
            path = _DisplayPath([next(it) for _ in range(len(ar.path.vertices))], ar.path.codes)
        else:
            (xa, ya), (xb, yb) = next(it), next(it)
            path = _arc3(xa, ya, xb, yb, ar.rad)
        edges.append(_EdgeItem(ar.gid, path, ar.color, ar.color, ar.lw, ar.linestyle, cap, join, style, mutation,
                               aspect))

    bs, b_mutation, b_aspect, b_cap, b_join = d.box
    corners = [(next(it), next(it)) for _ in sc.boxes]
    nodes = []
    for (n, b), ((x0, y0), (x1, y1)) in zip(sc.boxes.items(), corners):
        fill_style = svg.stroke_style(b.ec, b.lw, None, b_cap, b_join, fill=b.fc)
        rect = _rect(svg, bs, b.w, b.h, b_mutation, b_aspect, fill_style, x0, y0, x1, y1)
        trio = [d.text(t, *next(it)) for t in sc.labels[n]]
        g = sc.grads[n]
        nodes.append(_NodeItem(b.gid, rect, trio, d.text(g, *next(it)), g.gid or f"grad-{n}"))

    labels = []
    for e, t in sc.edge_labels.items():
        x, y = next(it)
        if t.text:
            labels.append((f"label-{e[0]}-{e[1]}-{e[2]}", d.text(t, x, y)))
    return edges, nodes, labels


# --------------------------------------------------------------------------- the document


def draws_whole_figure(view: GraphView) -> bool:
    """True when the view's figure holds nothing but what to_svg draws.

    False when the view was drawn into someone else's Axes or Figure (other
    axes, extra artists, a layout engine that moves things at draw time):
    then only matplotlib's SVG shows everything.
    """
    if not view.drawn:  # nobody has had the artists to add to: the scene is the whole picture
        return True
    fig, ax, a = view.figure, view.ax, view.artists
    if fig.axes != [ax] or fig.get_layout_engine() is not None:
        return False
    extra_fig = [t for t in fig.texts if t is not a.title and t is not view.caption]
    if extra_fig or fig.legends not in ([a.legend], []) or fig.images or fig.lines or fig.patches or fig.subfigs:
        return False
    ours = {id(x) for x in a.boxes.values()} | {id(x) for x in a.arrows.values()}
    ours |= {id(x) for x in a.grads.values()} | {id(x) for x in a.edge_labels.values()}
    ours |= {id(t) for trio in a.labels.values() for t in trio}
    if ax.axison or ax.get_title() or ax.get_legend() is not None:
        return False
    for kind in (ax.artists, ax.collections, ax.images, ax.lines, ax.patches, ax.tables, ax.texts):
        if any(id(child) not in ours for child in kind):
            return False
    return True


def to_svg(view: GraphView) -> str:
    """The view as it stands now (its step, overrides, title) as a standalone SVG document.

    Written from the view's scene, or from its matplotlib artists once those
    exist (so that restyling an artist shows in the file); both give the same
    document for the same picture.

    Ids: ``node-<node>`` (a box with its labels), ``grad-<node>`` (the
    gradient text under it), ``edge-<u>-<v>-<k>`` (an arrow: its line path
    carries the stroke colour and, for edges the gradient does not cross,
    ``stroke-dasharray``) and ``label-<u>-<v>-<k>`` (the edge's label).
    """
    chrome = view.chrome()
    fig = chrome.figure
    svg = _Svg(fig)
    edges, nodes, labels = _from_artists(svg, view) if view.drawn else _from_scene(svg, view)
    H = svg.height
    px = svg.px
    out = [
        '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n',
        f'<svg xmlns="{SVG_NS}" version="1.1" width="{svg.width / px:.2f}pt" height="{H / px:.2f}pt" '
        f'viewBox="0 0 {svg.width:.2f} {H:.2f}" font-family="{_esc(svg.family)}" style="white-space:pre">\n',
    ]
    bg = fig.patch
    if bg.get_visible():
        out.append(f'<rect width="100%" height="100%"{svg.paint("fill", bg.get_facecolor())}/>\n')

    # ---- edges (zorder 2): line, then the filled head
    out.append('<g id="layer-edges">\n')
    for e in edges:
        dash = _dashes(e.linestyle, e.lw)
        line_style = svg.stroke_style(e.color, e.lw, dash, e.cap, e.join)
        head_style = None
        parts = []
        for p, filled in _arrow_parts(svg, e.style, e.mutation, e.lw, e.aspect, e.path):
            d = _path_d(p.vertices, p.codes, H)
            if filled:
                if head_style is None:
                    head_style = svg.stroke_style(e.color, e.lw, dash, e.cap, e.join, fill=e.face)
                parts.append(f'<path d="{d}" style="{head_style}"/>')
            else:
                parts.append(f'<path d="{d}" style="{line_style}"/>')
        out.append(f'<g id="{_esc(e.gid)}">{"".join(parts)}</g>\n')
    out.append("</g>\n")

    # ---- nodes (zorder 3 boxes, 4 texts): the box, its three labels, its gradient
    out.append('<g id="layer-nodes">\n')
    for n in nodes:
        parts = [n.box, *(_text(svg, t) for t in n.texts)]
        if n.grad is not None:
            parts.append(_text(svg, n.grad, gid=n.grad_gid, keep_empty=True))
        out.append(f'<g id="{_esc(n.gid)}">{"".join(parts)}</g>\n')
    out.append("</g>\n")

    # ---- edge labels (zorder 5): a white rounded box and the text
    out.append('<g id="layer-labels">\n')
    for gid, t in labels:
        out.append(f'<g id="{_esc(gid)}">{_text(svg, t)}</g>\n')
    out.append("</g>\n")

    # ---- title, caption, legend: matplotlib's layout, drawn as SVG
    rec = _FigureRenderer(svg, out)
    for artist, gid in ((chrome.title, "title"), (chrome.caption, "caption"), (chrome.legend, "legend")):
        if artist is None or not artist.get_visible():
            continue
        if hasattr(artist, "get_text") and not artist.get_text():
            continue
        out.append(f'<g id="{gid}">')
        artist.draw(rec)
        out.append("</g>\n")
    out.append("</svg>\n")
    return "".join(out)


def _box(svg: _Svg, box, x0: float, y0: float, x1: float, y1: float) -> str:
    """A FancyBboxPatch whose data corners are at display (x0, y0), (x1, y1)."""
    lw = box.get_linewidth()
    style = svg.stroke_style(box.get_edgecolor(), lw, _dashes(box.get_linestyle(), lw),
                             box.get_capstyle(), box.get_joinstyle(), fill=box.get_facecolor())
    bs = box.get_boxstyle()
    if isinstance(bs, (BoxStyle.Round, BoxStyle.Square)) and box.get_width() and box.get_height():
        return _rect(svg, bs, box.get_width(), box.get_height(), box.get_mutation_scale(), box.get_mutation_aspect(),
                     style, x0, y0, x1, y1)
    p = box.get_transform().transform_path(box.get_path())
    return f'<path d="{_path_d(p.vertices, p.codes, svg.height)}" style="{style}"/>'


def _rect(svg: _Svg, bs, w_data: float, h_data: float, m: float, aspect, style: str,
          x0: float, y0: float, x1: float, y1: float) -> str:
    """A round or square box style as a <rect>: padding and corner radii scaled from
    data to pixels."""
    sx, sy = (x1 - x0) / w_data, (y1 - y0) / h_data  # pixels per data unit (signed)
    pad = bs.pad * m
    r = 0.0
    if isinstance(bs, BoxStyle.Round):
        r = bs.rounding_size * m if bs.rounding_size else pad
    X0, X1 = sorted((x0 - pad * sx, x1 + pad * sx))
    Y0, Y1 = sorted((svg.height - (y0 - pad * aspect * sy), svg.height - (y1 + pad * aspect * sy)))
    rx = abs(r * sx)
    ry = abs(r * aspect * sy)
    radius = f' rx="{rx:.2f}" ry="{ry:.2f}"' if r else ""
    return f'<rect x="{X0:.2f}" y="{Y0:.2f}" width="{X1 - X0:.2f}" height="{Y1 - Y0:.2f}"{radius} style="{style}"/>'

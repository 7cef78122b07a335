"""SVG straight from a Scene: every record becomes one element, nothing is decided here.

``to_svg(view)`` writes the view as it stands now, after any ``set_step`` or
``set_grad_overrides``: boxes, their texts and chips, gradient texts, arrows (with the
backward chevrons of the step being processed), edge labels, and the chrome (title,
caption, legend) the scene laid out. It needs no matplotlib Figure or renderer: the
scene placed everything with the same text metrics (:mod:`tapeviz.picture.fonts`) this module
uses to size label backgrounds and to put each line's baseline where matplotlib's text
layout puts it, so a PNG from :mod:`tapeviz.output.artists` and this SVG show the same picture.
When a view's matplotlib artists exist and someone restyled them, the SVG is written
from a copy of the scene's records restyled as the artists are
(``GraphView.scene_as_drawn``; the scene itself is never written back to), so the
restyling shows here too.

Coordinates are pixels at ``scene.DPI`` with y down, so the picture lines up with
``figure.savefig(..., dpi=scene.DPI)``; ``width``/``height`` are in points, as in
matplotlib's SVG. Arrow heads follow matplotlib's ``-|>`` construction (its
``ArrowStyle._Curve``): a filled triangle whose stroked tip ends at the path's end.

Every element's look is plain SVG (paths, rects, texts; fills, strokes, dashes), so a
rasteriser of this SVG shows the same picture.
"""

from __future__ import annotations

import html
import math
import re
import weakref
from dataclasses import fields
from operator import attrgetter
from typing import Any

from ..picture import fonts
from ..picture.access import Access, accessible
from ..picture.frames import GroupFrame, group_frames, name_label
from ..picture.marks import Arrow, Box, Label, Swatch
from ..picture.scene import Scene
from ..picture.style import CURVE4, DPI, MOVETO
from ..picture.themes import EXPLORER_TEXT, FONT_FAMILIES, rgba
from .painter import Painter

__all__ = ["to_svg", "SvgPainter", "draws_whole_figure", "head_and_line", "chevron"]

SVG_NS = "http://www.w3.org/2000/svg"
HEAD_LENGTH, HEAD_WIDTH = 0.4, 0.2  # matplotlib's "-|>" head, in units of the mutation scale
MUTATION = 10.0  # points: the arrow heads' mutation scale (times the theme's line factor)
CHEVRON = 8.0  # points: a backward marker's length (times the theme's line factor)

# Characters XML 1.0 cannot hold (control characters, lone surrogates, U+FFFE/F):
# a tensor name may contain them, and one would make the whole file unreadable.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_TO_ESCAPE = re.compile("[&<>\"'\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_ANCHOR = {"left": "start", "center": "middle", "right": "end"}
_DASHES = {
    "--": (3.7, 1.6),
    "dashed": (3.7, 1.6),
    "-.": (6.4, 1.6, 1.0, 1.6),
    "dashdot": (6.4, 1.6, 1.0, 1.6),
    ":": (1.0, 1.65),
    "dotted": (1.0, 1.65),
}  # matplotlib's default patterns, in units of the line width
FAMILY = ", ".join(f"'{f}'" if " " in f else f for f in FONT_FAMILIES)


def _esc(s: Any) -> str:
    """Text or attribute value, escaped: `<script>` stays text."""
    s = str(s)
    if _TO_ESCAPE.search(s) is None:  # most labels: nothing to replace, one scan instead of six
        return s
    return html.escape(_NOT_XML.sub("\ufffd", s), quote=True)


def _dashes(linestyle, lw_pt: float) -> tuple[float, list[float]] | None:
    """(offset, dash list) in points for a matplotlib linestyle, scaled by the line width
    as matplotlib scales them; None if solid."""
    if isinstance(linestyle, str):
        seq = _DASHES.get(linestyle)
        if seq is None:
            return None
        offset = 0.0
    else:
        offset, seq = linestyle
        if not seq:
            return None
        offset = offset or 0.0
    return offset * lw_pt, [s * lw_pt for s in seq]


#: Every field of a Label: what its <text> is written from.
_LABEL_FIELDS = attrgetter(*(f.name for f in fields(Label)))
#: Scene -> (its canvas and colours, {label fields and options: <text> markup}).
_TEXTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_TEXTS_MOST = 50_000


class SvgPainter(Painter):
    """The SVG painter: one element (as text) per record. Per-document state: the pixel
    scale and caches of colours and styles."""

    def __init__(self, scene: Scene):
        self.scene = scene
        self.px = DPI / 72.0
        self.width, self.height = scene.canvas
        self.text_color = scene.theme.text
        self._colors: dict = {}
        self._styles: dict = {}
        self._fonts: dict = {}  # (size, weight, style) -> pixel size, font attributes, ascent, descent, gap
        sx, sy = scene.px_per_unit
        ox, oy = scene._origin  # the scene's own data -> pixel map
        # Texts written for this scene, kept across documents while the canvas is the same:
        # a step restyles a few records, and the next document rewrites the rest unchanged
        # (a page of ResNet50's 1,348 steps writes 144 k texts, most of them seen before).
        same = (self.width, self.height, sx, sy, ox, oy, self.text_color, scene.theme.label_fill)
        kept = _TEXTS.get(scene)
        if kept is None or kept[0] != same or len(kept[1]) > _TEXTS_MOST:
            kept = _TEXTS[scene] = (same, {})
        self._texts: dict = kept[1]
        H = self.height
        self.to_px = lambda x, y: (ox + x * sx, H - (oy + y * sy))  # y down

    def paint(self, what: str, color: str | None, alpha: float = 1.0) -> str:
        """` fill="#rrggbb"` (+ opacity) for a hex colour; none when transparent."""
        key = (what, color, alpha)
        out = self._colors.get(key)
        if out is None:
            r, g, b, a = rgba(color or self.text_color)
            a *= alpha
            if a <= 0:
                out = f' {what}="none"'
            else:
                out = f' {what}="#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"'
                if a < 1:
                    out += f' {what}-opacity="{a:.3g}"'
            self._colors[key] = out
        return out

    def stroke(
        self,
        color: str,
        lw_pt: float,
        linestyle="-",
        fill: str | None = None,
        cap: str | None = None,
        join: str | None = None,
    ) -> str:
        """CSS declarations of an outline (and fill), for a `style=` attribute."""
        key = (color, lw_pt, linestyle if isinstance(linestyle, str) else repr(linestyle), fill, cap, join)
        got = self._styles.get(key)
        if got is not None:
            return got
        parts = ["fill:none" if fill is None else self._css("fill", fill)]
        if rgba(color)[3] <= 0 or lw_pt <= 0:
            parts.append("stroke:none")
        else:
            parts.append(self._css("stroke", color))
            parts.append(f"stroke-width:{lw_pt * self.px:.2f}")
            if cap:
                parts.append(f"stroke-linecap:{cap}")
            if join:
                parts.append(f"stroke-linejoin:{join}")
            dash = _dashes(linestyle, lw_pt)
            if dash:
                offset, seq = dash
                parts.append("stroke-dasharray:" + ",".join(f"{s * self.px:.2f}" for s in seq))
                if offset:
                    parts.append(f"stroke-dashoffset:{offset * self.px:.2f}")
        got = self._styles[key] = ";".join(parts)
        return got

    @staticmethod
    def _css(what: str, color: str) -> str:
        r, g, b, a = rgba(color)
        out = f"{what}:#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"
        return out + (f";{what}-opacity:{a:.3g}" if a < 1 else "")

    # -- records ----------------------------------------------------------------

    def box(self, b: Box) -> str:
        if not b.visible:
            return ""
        x0, y1 = self.to_px(b.x, b.y)
        x1, y0 = self.to_px(b.x + b.w, b.y + b.h)
        sx, sy = self.scene.px_per_unit
        radius = f' rx="{b.radius * sx:.2f}" ry="{b.radius * sy:.2f}"' if b.radius else ""
        style = self.stroke(b.ec, b.lw, b.linestyle, fill=b.fc)
        return f'<rect x="{x0:.2f}" y="{y0:.2f}" width="{x1 - x0:.2f}" height="{y1 - y0:.2f}"{radius} style="{style}"/>'

    def text(
        self, t: Label, *, px: bool = False, gid: str | None = None, keep_empty: bool = False, split: bool = False
    ) -> str:
        """A label as <text> (one per line when ``split``), after its background box.

        Lines sit where matplotlib's layout puts them: the block of lines is aligned by
        ``va`` using the font's ascent, descent and line gap; each line by ``ha``."""
        key = (_LABEL_FIELDS(t), px, gid, keep_empty, split)
        got = self._texts.get(key)
        if got is None:
            got = self._texts[key] = self._text(t, px, gid, keep_empty, split)
        return got

    def _text(self, t: Label, px: bool, gid: str | None, keep_empty: bool, split: bool) -> str:
        s = t.text
        if not t.visible or (not s and not keep_empty):
            return ""
        x, y = (t.x, self.height - t.y) if px else self.to_px(t.x, t.y)
        key = (t.size, t.weight, t.style)
        got = self._fonts.get(key)
        if got is None:
            size = t.size * self.px
            font = f' font-size="{size:.2f}"'
            if t.weight not in ("normal", 400):
                font += ' font-weight="700"'
            if t.style != "normal":
                font += f' font-style="{t.style}"'
            got = self._fonts[key] = (size, font, *(v * self.px for v in fonts.line_box(*key)))
        size, font, asc, desc, gap = got
        lines = s.split("\n") if s else [""]
        g = gap if len(lines) > 1 else 0.0
        a, d = asc + g / 2, desc + g / 2
        pitch = a + d
        block = len(lines) * pitch
        va = t.va
        top = {"top": y, "bottom": y - block, "baseline": y - (block - d)}.get(va, y - block / 2)
        anchor = _ANCHOR.get(t.ha, "start")
        fill = self.paint("fill", t.color)
        ident = f' id="{_esc(gid)}"' if gid else ""
        out = []
        if t.boxed and s:
            width = max(fonts.text_width(line, t.size, t.weight, t.style) for line in lines) * self.px
            x0 = x - (width / 2 if anchor == "middle" else width if anchor == "end" else 0.0)
            pad = t.pad * size
            edge = self.paint("stroke", t.edge) + f' stroke-width="{0.6 * self.px:.2f}"' if t.edge else ""
            out.append(
                f'<rect x="{x0 - pad:.2f}" y="{top - pad:.2f}" width="{width + 2 * pad:.2f}" '
                f'height="{block + 2 * pad:.2f}" rx="{pad:.2f}"'
                f"{self.paint('fill', t.fill or self.scene.theme.label_fill, t.fill_alpha)}{edge}/>"
            )
        base = top + a
        if len(lines) == 1:
            out.append(f'<text{ident} x="{x:.2f}" y="{base:.2f}"{font} text-anchor="{anchor}"{fill}>{_esc(s)}</text>')
        elif split:
            out.extend(
                f'<text x="{x:.2f}" y="{base + i * pitch:.2f}"{font} text-anchor="{anchor}"{fill}>{_esc(line)}</text>'
                for i, line in enumerate(lines)
            )
        else:
            spans = "".join(
                f'<tspan x="{x:.2f}" y="{base + i * pitch:.2f}">{_esc(line)}</tspan>' for i, line in enumerate(lines)
            )
            out.append(f'<text{ident}{font} text-anchor="{anchor}"{fill}>{spans}</text>')
        return "".join(out)

    def arrow(self, ar: Arrow) -> str:
        if ar.path is None:
            (xa, ya), (xb, yb) = self.to_px(*ar.start), self.to_px(*ar.end)
            dx, dy = xb - xa, yb - ya
            # matplotlib's arc3: one quadratic curve (y down here, so the bend flips sign)
            cx, cy = (xa + xb) / 2 - ar.rad * dy, (ya + yb) / 2 + ar.rad * dx
            pts, codes = [(xa, ya), (cx, cy), (xb, yb)], [MOVETO, 3, 3]
        else:
            pts, codes = [self.to_px(x, y) for x, y in ar.path.vertices], ar.path.codes
        line, head = head_and_line(pts, MUTATION * self.scene.theme.line * self.px, ar.lw * self.px)
        parts = [f'<path d="{_path_d(line, codes)}" style="{self.stroke(ar.color, ar.lw, ar.linestyle)}"/>']
        if head:
            d = "M" + "L".join(f"{x:.2f} {y:.2f}" for x, y in head) + "Z"
            parts.append(f'<path d="{d}" style="{self.stroke(ar.color, ar.lw, ar.linestyle, fill=ar.color)}"/>')
        return "".join(parts)

    def marks(self, ar: Arrow) -> str:
        out = []
        sx, sy = self.scene.px_per_unit
        for x, y, dx, dy in ar.marks:
            px, py = self.to_px(x, y)
            pts = chevron(px, py, dx * sx, -dy * sy, CHEVRON * self.scene.theme.line * self.px)
            d = "M" + "L".join(f"{a:.2f} {b:.2f}" for a, b in pts) + "Z"
            style = self.stroke(self.scene.theme.background, 0.8, fill=ar.mark_color or ar.color, join="round")
            out.append(f'<path d="{d}" style="{style}"/>')
        return "".join(out)

    @staticmethod
    def access(a: Access | None) -> str:
        """A focusable element's attributes for keyboards and screen readers: the first in the
        keys' order is the picture's one Tab stop, the front end walks the rest by ``data-tv-order``."""
        if a is None:
            return ""
        out = f' role="{a.role}" aria-label="{_esc(a.label)}"'
        if a.expanded is not None:
            out += f' aria-expanded="{str(a.expanded).lower()}"'
        if a.group:
            out += f' data-tv-group="{_esc(a.group)}"'
        return out + f' tabindex="{0 if a.order == 0 else -1}" data-tv-order="{a.order}"'

    def frame(self, f: GroupFrame, access: Access | None = None) -> str:
        """An open group's frame (or its pieces) and its name (top left, inside), as one ``<g>`` line."""
        th = self.scene.theme
        style = self.stroke(th.muted, 0.8, "--", fill=th.muted) + ";fill-opacity:0.04"
        rects = []
        for x, y, w, h in f.parts or ((f.x, f.y, f.w, f.h),):
            x0, y1 = self.to_px(x, y)
            x1, y0 = self.to_px(x + w, y + h)
            rects.append((x0, y0, x1, y1))
        out = [
            f'<rect x="{x0:.2f}" y="{y0:.2f}" width="{x1 - x0:.2f}" height="{y1 - y0:.2f}" rx="{6 * self.px:.2f}" '
            f'style="{style}"/>'
            for x0, y0, x1, y1 in rects
        ]
        out.append(self.text(name_label(f, self.scene)))
        return f'<g id="group-{_esc(f.gid)}" class="tv-group"{self.access(access)}>{"".join(out)}</g>\n'

    def swatch(self, sw: Swatch) -> str:
        H = self.height
        if sw.kind == "box":
            style = self.stroke(sw.ec, sw.lw, sw.linestyle, fill=sw.fc)
            return (
                f'<rect x="{sw.x:.2f}" y="{H - sw.y - sw.h:.2f}" width="{sw.w:.2f}" height="{sw.h:.2f}" '
                f'rx="{2 * self.px:.2f}" style="{style}"/>'
            )
        if sw.chip is not None:  # a "chip" swatch: its sample is a tag
            return self.text(sw.chip, px=True)
        y = H - sw.y
        line = self.stroke(sw.ec, sw.lw, sw.linestyle)
        out = f'<path d="M{sw.x:.2f} {y:.2f}L{sw.x + sw.w:.2f} {y:.2f}" style="{line}"/>'
        if sw.mark:
            pts = chevron(sw.x + sw.w / 2, y, -1.0, 0.0, CHEVRON * self.scene.theme.line * self.px)
            d = "M" + "L".join(f"{a:.2f} {b:.2f}" for a, b in pts) + "Z"
            mark = self.stroke(self.scene.theme.background, 0.8, fill=sw.ec, join="round")
            out += f'<path d="{d}" style="{mark}"/>'
        return out


def chevron(x: float, y: float, dx: float, dy: float, length: float) -> list[tuple[float, float]]:
    """The three corners of a backward marker: a triangle centred at (x, y) pointing along
    (dx, dy) (same units as x and y), ``length`` long and as wide."""
    n = math.hypot(dx, dy) or 1.0
    ux, uy = dx / n, dy / n
    tip = (x + ux * length / 2, y + uy * length / 2)
    back = (x - ux * length / 2, y - uy * length / 2)
    w = length * 0.5
    return [(back[0] - uy * w, back[1] + ux * w), tip, (back[0] + uy * w, back[1] - ux * w)]


def head_and_line(pts: list, mutation: float, lw: float) -> tuple[list, list | None]:
    """matplotlib's ``-|>``: the line (its last point pulled back so the stroked tip ends
    at the path's end) and the filled head's three corners, in the points' units."""
    if len(pts) < 2 or pts[-2] == pts[-1]:
        return pts, None
    (x0, y0), (x1, y1) = pts[-2], pts[-1]
    hl, hw = HEAD_LENGTH * mutation, HEAD_WIDTH * mutation
    head_dist = math.hypot(hl, hw)
    cos_t, sin_t = hl / head_dist, hw / head_dist
    dx, dy = x0 - x1, y0 - y1
    dist = math.hypot(dx, dy) or 1.0
    pad = 0.5 * lw / sin_t
    ddx, ddy = pad * dx / dist, pad * dy / dist
    dx, dy = dx / dist * head_dist, dy / dist * head_dist
    tx, ty = x1 + ddx, y1 + ddy
    head = [
        (tx + cos_t * dx + sin_t * dy, ty - sin_t * dx + cos_t * dy),
        (tx, ty),
        (tx + cos_t * dx - sin_t * dy, ty + sin_t * dx + cos_t * dy),
    ]
    line = list(pts)
    line[-1] = (x1 + ddx, y1 + ddy)
    return line, head


def _path_d(verts, codes) -> str:
    """SVG path data for pixel vertices (y down) and matplotlib path codes."""
    out = []
    i, n = 0, len(verts)
    while i < n:
        c = codes[i]
        if c == CURVE4:
            (x1, y1), (x2, y2), (x3, y3) = verts[i], verts[i + 1], verts[i + 2]
            out.append(f"C{x1:.2f} {y1:.2f} {x2:.2f} {y2:.2f} {x3:.2f} {y3:.2f}")
            i += 3
        elif c == 3:  # CURVE3
            (x1, y1), (x2, y2) = verts[i], verts[i + 1]
            out.append(f"Q{x1:.2f} {y1:.2f} {x2:.2f} {y2:.2f}")
            i += 2
        else:
            x, y = verts[i]
            out.append(f"{'M' if c == MOVETO else 'L'}{x:.2f} {y:.2f}")
            i += 1
    return "".join(out)


def _scene_of(view) -> Scene:
    if isinstance(view, Scene):
        return view
    as_drawn = getattr(view, "scene_as_drawn", None)
    return as_drawn() if as_drawn is not None else view.scene


def draws_whole_figure(view) -> bool:
    """True when :func:`to_svg` shows everything the view's picture holds: always for a
    scene, and for a GraphView unless it was drawn into someone else's Axes or its
    Figure holds other artists (then only matplotlib's SVG shows everything)."""
    check = getattr(view, "draws_whole_figure", None)
    return True if check is None else check()


#: A picture shrunk to fit its place on a page keeps its smallest text at least this big (points).
MIN_FIT_TEXT = EXPLORER_TEXT


def to_svg(view: Any, *, fit: bool = False, frames: bool = False) -> str:
    """The view (a GraphView or a Scene) as it stands now, as a standalone SVG document.

    ``fit=True`` (the explorer's canvas): the picture may shrink to the width of the page
    around it, but no further than keeps its smallest text (tags) at :data:`MIN_FIT_TEXT`
    points; a wider picture scrolls. Only the projector theme's large text leaves room to
    shrink (tags 10.5 pt down to 9): a projector picture of a few boxes then fits a
    notebook cell instead of being cut at its right edge. Files keep their size.

    Ids: ``node-<node>`` (a box with its labels), ``grad-<node>`` (the gradient text
    under it), ``chips-<node>`` (its tags), ``edge-<u>-<v>-<k>`` (an arrow: its line path
    carries the stroke colour and, for edges the gradient does not cross,
    ``stroke-dasharray``; then its filled head), ``label-<u>-<v>-<k>`` (the edge's
    label), ``marks`` (the backward chevrons), ``origin-mark`` (the tag over the op where a NaN,
    Inf or zero gradient starts), ``title``, ``caption``, ``legend``.

    Each open group's frame (the scene's ``frames``; ``frames=True`` draws them for a scene
    made without) is drawn behind everything else, ``group-<group id>``, with the group's
    name on it (in the explorer, a click on it closes the group).

    Boxes and frames carry ``role``, ``aria-label`` (name, value, gradient, in the
    scene's language), ``aria-expanded`` for groups, ``tabindex`` and ``data-tv-order``
    (the keys' order, the backward pass's: :mod:`tapeviz.picture.access`).
    """
    sc = _scene_of(view)
    w = SvgPainter(sc)
    W, H, px = w.width, w.height, w.px
    style = "white-space:pre"
    shrink = MIN_FIT_TEXT / sc.theme.smallest
    if fit and shrink < 1.0:
        style += f";max-width:100%;height:auto;min-width:{shrink * W / px:.2f}pt"
    out = [
        '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n',
        (
            f'<svg xmlns="{SVG_NS}" version="1.1" width="{W / px:.2f}pt" height="{H / px:.2f}pt" '
            f'viewBox="0 0 {W:.2f} {H:.2f}" font-family="{_esc(FAMILY)}" style="{style}">\n'
        ),
        f'<rect width="100%" height="100%"{w.paint("fill", sc.theme.background)}/>\n',
    ]
    framed = (sc.frames or group_frames(sc)) if frames or sc.frames else []
    acc = accessible(sc, framed)
    if framed:
        drawn = [w.frame(f, acc.get(f"group-{f.gid}")) for f in framed]
        if drawn:
            out += ['<g id="layer-groups">\n', *drawn, "</g>\n"]
    out.append('<g id="layer-edges">\n')
    # thicker (carrying, then active) edges last: where edges converge on a box, their heads show on top
    for ar in sorted(sc.arrows.values(), key=lambda a: a.lw):
        if ar.visible:
            out.append(f'<g id="{_esc(ar.gid)}">{w.arrow(ar)}</g>\n')
    out.append("</g>\n")
    marks = [w.marks(ar) for ar in sc.arrows.values() if ar.visible and ar.marks]
    if marks:
        out.append(f'<g id="marks">{"".join(marks)}</g>\n')

    out.append('<g id="layer-nodes">\n')
    for n, b in sc.boxes.items():
        parts = [f"<title>{_esc(b.tip)}</title>" if b.tip else "", w.box(b), *(w.text(t) for t in sc.labels[n])]
        g = sc.grads[n]
        parts.append(w.text(g, gid=g.gid or f"grad-{n}", keep_empty=True))
        out.append(f'<g id="{_esc(b.gid)}"{w.access(acc.get(b.gid))}>{"".join(parts)}</g>\n')
        chips = sc.chips.get(n)
        if chips:
            out.append(f'<g id="chips-{_esc(n)}">{"".join(w.text(t) for t in chips)}</g>\n')
    out.append("</g>\n")

    out.append('<g id="layer-labels">\n')
    for (u, v, k), t in sc.edge_labels.items():
        if t.text and t.visible:
            out.append(f'<g id="label-{_esc(u)}-{_esc(v)}-{_esc(k)}">{w.text(t)}</g>\n')
    mark = getattr(sc, "origin_label", None)
    if mark is not None and mark.visible:
        out.append(f'<g id="origin-mark">{w.text(mark)}</g>\n')
    out.append("</g>\n")

    if sc.title_label.text:
        out.append(f'<g id="title">{w.text(sc.title_label, px=True, split=True)}</g>\n')
    if sc.caption_label.text:
        out.append(f'<g id="caption">{w.text(sc.caption_label, px=True, split=True)}</g>\n')
    if sc.legend:
        out.append('<g id="legend">')
        for sw in sc.legend:
            out.append(w.swatch(sw))
            out.append(w.text(sw.label, px=True))
        out.append("</g>\n")
    out.append("</svg>\n")
    return "".join(out)

"""Matplotlib artists drawn from a Scene's records, one artist per record.

Nothing is decided here: positions, texts, colours, line widths and the chrome's
layout (title, caption, legend) all come from the scene, so a PNG drawn from these
artists and the SVG written by :mod:`tapeviz.output.svg` show the same picture. The view
that holds a scene and its artists, and keeps them in step, is
:class:`tapeviz.output.view.GraphView`.

Chinese text (``lang="zh"``) renders wherever a CJK font is installed: every text is
given a family list (the Latin font, then a CJK one) and matplotlib falls back glyph by
glyph (:func:`tapeviz.picture.fonts.matplotlib_families`).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

from matplotlib.axes import Axes
from matplotlib.colors import to_hex, to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.markers import MarkerStyle
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path
from matplotlib.text import Text

from ..picture.fonts import matplotlib_families
from ..picture.frames import GroupFrame, name_label
from ..picture.legend import legend_layout_for
from ..picture.marks import Arrow, Box, Label, Swatch
from ..picture.placement import arrow_specs, edge_label_specs, label_specs
from ..picture.scene import Scene
from ..picture.style import FONT
from ..picture.themes import LIGHT, Theme
from ..record.graph import TapeGraph
from .painter import Painter
from .raster import MAX_PNG_PIXELS

__all__ = [
    "MplPainter",
    "restyle_artists",
    "scene_as_drawn",
    "box_artist",
    "text_artist",
    "arrow_artist",
    "mark_artists",
    "chrome_artists",
    "Artists",
    "Chrome",
    "draw_node_labels",
    "draw_edges",
    "draw_edge_labels",
    "draw_legend",
    "raster_dpi",
    "MAX_PNG_PIXELS",
]

MUTATION = 10.0  # points: arrow heads' mutation scale (times the theme's line factor), as svg.py draws them
MARK_LENGTH = 8.0  # points: a backward marker (times the theme's line factor), as svg.py draws it
Z_FRAME, Z_EDGE, Z_MARK, Z_BOX, Z_TEXT, Z_EDGE_LABEL = 1, 2, 2.5, 3, 4, 5

# A triangle pointing along +x, centred on the origin (a marker path: matplotlib normalises its size)
_MARK_PATH = Path(
    [(-0.5, 0.5), (0.5, 0.0), (-0.5, -0.5), (-0.5, 0.5)], [Path.MOVETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY]
)


def raster_dpi(figure: Figure, dpi: float, max_pixels: int = MAX_PNG_PIXELS) -> float:
    """``dpi``, lowered so a raster of the figure stays under ``max_pixels``: a 5,000-op
    graph is tens of inches on each side, and at 100 dpi its PNG would need gigabytes."""
    w, h = figure.get_size_inches()
    return min(float(dpi), (max_pixels / max(w * h, 1e-9)) ** 0.5)


# --------------------------------------------------------------------------- one artist per record


def box_artist(ax: Axes, b: Box) -> FancyBboxPatch:
    """The matplotlib patch for a Box record, added to ``ax``."""
    box = FancyBboxPatch(
        (b.x, b.y),
        b.w,
        b.h,
        boxstyle=f"round,pad=0.0,rounding_size={b.radius}",
        fc=b.fc,
        ec=b.ec,
        lw=b.lw,
        linestyle=b.linestyle,
        zorder=Z_BOX,
        visible=b.visible,
    )
    box.set_gid(b.gid)
    ax.add_artist(box)  # not add_patch: limits are set once, and autoscaling costs O(n) per patch
    return box


def _text_kw(t: Label, theme: Theme, zorder: float) -> dict[str, Any]:
    kw: dict[str, Any] = dict(
        ha=t.ha,
        va=t.va,
        fontsize=t.size,
        zorder=zorder,
        color=t.color or theme.text,
        fontfamily=list(matplotlib_families()),
    )
    if t.weight != "normal":
        kw["fontweight"] = t.weight
    if t.style != "normal":
        kw["fontstyle"] = t.style
    if t.boxed:
        kw["bbox"] = dict(
            boxstyle=f"round,pad={t.pad}",
            fc=to_rgba(t.fill or theme.label_fill, t.fill_alpha),
            ec=t.edge or "none",
            lw=0.6,
        )
    if not t.visible:
        kw["visible"] = False
    return kw


def text_artist(ax: Axes, t: Label, zorder: float = Z_TEXT, theme: Theme = LIGHT) -> Text:
    """The matplotlib Text for a Label record (in data units), added to ``ax``."""
    text = ax.text(t.x, t.y, t.text, **_text_kw(t, theme, zorder))
    if t.gid:
        text.set_gid(t.gid)
    return text


def arrow_artist(ax: Axes, a: Arrow, theme: Theme = LIGHT) -> FancyArrowPatch:
    """The matplotlib arrow for an Arrow record, added to ``ax``."""
    style = dict(
        arrowstyle="-|>",
        mutation_scale=MUTATION * theme.line,
        lw=a.lw,
        color=a.color,
        linestyle=a.linestyle,
        zorder=Z_EDGE + a.lw / 100,
        visible=a.visible,
    )  # thicker on top
    if a.path is not None:
        arrow = FancyArrowPatch(path=Path(a.path.vertices, a.path.codes), **style)
    else:
        arrow = FancyArrowPatch(a.start, a.end, connectionstyle=f"arc3,rad={a.rad}", shrinkA=0, shrinkB=0, **style)
    arrow.set_gid(a.gid)
    ax.add_artist(arrow)
    return arrow


def mark_artists(ax: Axes, a: Arrow, scene: Scene) -> list[Line2D]:
    """The backward markers an Arrow record shows now (the step being processed)."""

    out = []
    sx, sy = scene.px_per_unit
    th = scene.theme
    for x, y, dx, dy in a.marks:
        angle = math.degrees(math.atan2(dy * sy, dx * sx))
        marker = MarkerStyle(_MARK_PATH).rotated(deg=angle)
        line = Line2D(
            [x],
            [y],
            marker=marker,
            markersize=MARK_LENGTH * th.line,
            linestyle="none",
            markerfacecolor=a.mark_color or a.color,
            markeredgecolor=th.background,
            markeredgewidth=0.8,
            zorder=Z_MARK,
        )
        ax.add_artist(line)
        out.append(line)
    return out


class MplPainter(Painter):
    """The matplotlib painter: one artist per record, graph records on ``ax`` (data units),
    chrome records (``px=True``: title, caption, legend) on ``figure`` (canvas pixels)."""

    def __init__(self, scene: Scene, ax: Axes | None = None, figure: Figure | None = None):
        self.scene, self.ax, self.figure = scene, ax, figure

    def box(self, b: Box) -> FancyBboxPatch:
        assert self.ax is not None
        return box_artist(self.ax, b)

    def text(self, t: Label, zorder: float = Z_TEXT, *, px: bool = False) -> Text:
        if px:
            assert self.figure is not None
            return _fig_text(self.figure, t, self.scene)
        assert self.ax is not None
        return text_artist(self.ax, t, zorder, self.scene.theme)

    def arrow(self, a: Arrow) -> FancyArrowPatch:
        assert self.ax is not None
        return arrow_artist(self.ax, a, self.scene.theme)

    def marks(self, a: Arrow) -> list[Line2D]:
        assert self.ax is not None
        return mark_artists(self.ax, a, self.scene)

    def swatch(self, sw: Swatch) -> list:
        assert self.figure is not None
        return _swatch_artists(self.figure, sw, self.scene)


# --------------------------------------------------------------------------- the chrome


@dataclass
class LegendArtists:
    """The legend's artists: a sample (patch, line or tag) and a text per entry."""

    samples: list
    texts: list

    def get_texts(self) -> list[Text]:
        return list(self.texts)

    def all(self) -> list:
        return [*self.samples, *self.texts]


@dataclass
class Chrome:
    """The figure-level artists: title, caption and legend, drawn from the scene's chrome records."""

    figure: Figure
    title: Text
    caption: Text
    legend: Any

    def all(self) -> list:
        legend = self.legend.all() if isinstance(self.legend, LegendArtists) else [self.legend]
        return [self.title, self.caption, *legend]


def _fig_text(fig: Figure, t: Label, scene: Scene) -> Text:
    W, H = scene.canvas
    kw = _text_kw(t, scene.theme, Z_TEXT)
    text = fig.text(t.x / W, t.y / H, t.text, transform=fig.transFigure, **kw)
    if t.gid:
        text.set_gid(t.gid)
    return text


def _swatch_artists(fig: Figure, sw: Swatch, scene: Scene) -> list:
    W, H = scene.canvas
    th = scene.theme
    if sw.kind == "box":
        patch = FancyBboxPatch(
            (sw.x / W, sw.y / H),
            sw.w / W,
            sw.h / H,
            boxstyle="round,pad=0,rounding_size=0.002",
            fc=sw.fc,
            ec=sw.ec,
            lw=sw.lw,
            linestyle=sw.linestyle,
            transform=fig.transFigure,
        )
        fig.patches.append(patch)
        patch.set_figure(fig)
        return [patch]
    if sw.chip is not None:  # a "chip" swatch: its sample is a tag
        return [_fig_text(fig, sw.chip, scene)]
    line = Line2D(
        [sw.x / W, (sw.x + sw.w) / W],
        [sw.y / H, sw.y / H],
        color=sw.ec,
        lw=sw.lw,
        linestyle=sw.linestyle,
        transform=fig.transFigure,
        solid_capstyle="butt",
    )
    fig.lines.append(line)
    line.set_figure(fig)
    out = [line]
    if sw.mark:
        mark = Line2D(
            [(sw.x + sw.w / 2) / W],
            [sw.y / H],
            marker=MarkerStyle(_MARK_PATH).rotated(deg=180),
            markersize=MARK_LENGTH * th.line,
            linestyle="none",
            markerfacecolor=sw.ec,
            markeredgecolor=th.background,
            markeredgewidth=0.8,
            transform=fig.transFigure,
        )
        fig.lines.append(mark)
        mark.set_figure(fig)
        out.append(mark)
    return out


def chrome_artists(fig: Figure, scene: Scene) -> Chrome:
    """Title, caption and legend of the scene, drawn on ``fig`` (whose size is the scene's canvas)."""
    paint = MplPainter(scene, figure=fig)
    title = paint.text(scene.title_label, px=True)
    caption = paint.text(scene.caption_label, px=True)
    samples, texts = [], []
    for sw in scene.legend:
        samples.extend(paint.swatch(sw))
        texts.append(paint.text(sw.label, px=True))
    return Chrome(fig, title, caption, LegendArtists(samples, texts))


def draw_legend(fig: Figure, reasons=(), kinds=(), *, theme: str | Theme | None = None, lang: str = "en"):
    """A legend of node kinds, edges and these stop reasons, laid out by a scene for
    ``fig``'s width and drawn at its bottom; returns the legend's artists."""
    scene = legend_layout_for(tuple(fig.get_size_inches()), list(reasons), list(kinds), theme=theme, lang=lang)
    samples, texts = [], []
    for sw in scene.legend:
        samples.extend(_swatch_artists(fig, sw, scene))
        texts.append(_fig_text(fig, sw.label, scene))
    return LegendArtists(samples, texts)


# --------------------------------------------------------------------------- drawing a graph's parts


def draw_node_labels(ax: Axes, graph: TapeGraph, pos, *, fontsize: float = FONT, display=None) -> dict[Any, tuple]:
    """(title, subtitle, forward value) texts inside each box."""
    specs = label_specs(graph, pos, fontsize=fontsize, display=display)
    return {n: tuple(text_artist(ax, t) for t in trio) for n, trio in specs.items()}


def draw_edges(ax: Axes, graph: TapeGraph, pos, *, routes=None, display=None) -> dict[tuple, FancyArrowPatch]:
    """One arrow per edge, producer → consumer (the forward direction).

    With ``routes`` (from :func:`tapeviz.picture.layout.layered_routes`) edges that span
    several layers follow their bend points around the boxes in between.
    """
    return {e: arrow_artist(ax, a) for e, a in arrow_specs(graph, pos, routes=routes, display=display).items()}


def draw_edge_labels(
    ax: Axes, graph: TapeGraph, pos, *, fontsize: float = FONT, routes=None, display=None
) -> dict[tuple, Text]:
    """A text on each edge for the gradient (or stop reason) it carries, on its run into its consumer."""
    specs = edge_label_specs(graph, pos, fontsize=fontsize, routes=routes, display=display)
    return {e: text_artist(ax, t, Z_EDGE_LABEL) for e, t in specs.items()}


@dataclass
class Artists:
    """Every artist of a drawn scene, keyed like the scene's records."""

    boxes: dict
    labels: dict
    grads: dict
    arrows: dict
    edge_labels: dict
    title: Text
    legend: Any
    chips: dict = field(default_factory=dict)
    marks: list = field(default_factory=list)
    frames: list = field(default_factory=list)  # the open groups' frames and names
    origin: Any = None  # the tag over the op where a NaN, Inf or zero gradient starts


def draw_scene(ax: Axes, scene: Scene, chrome: Chrome) -> Artists:
    """Every record of ``scene`` as an artist on ``ax`` (limits set to the scene's)."""
    paint = MplPainter(scene, ax)
    ax.set_axis_off()
    (x0, x1), (y0, y1) = scene.limits
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    frames = [a for f in scene.frames for a in _frame_artists(ax, f, scene)]
    arrows = {e: paint.arrow(a) for e, a in scene.arrows.items()}
    marks = [m for a in scene.arrows.values() if a.marks for m in paint.marks(a)]
    origin = None
    if scene.origin_label is not None:
        origin = paint.text(scene.origin_label, Z_EDGE_LABEL)
        origin.set_visible(scene.origin_label.visible)
    return Artists(
        boxes={n: paint.box(b) for n, b in scene.boxes.items()},
        labels={n: tuple(paint.text(t) for t in trio) for n, trio in scene.labels.items()},
        grads={n: paint.text(t) for n, t in scene.grads.items()},
        arrows=arrows,
        edge_labels={e: paint.text(t, Z_EDGE_LABEL) for e, t in scene.edge_labels.items()},
        title=chrome.title,
        legend=chrome.legend,
        chips={n: [paint.text(t, Z_TEXT) for t in tags] for n, tags in scene.chips.items()},
        marks=marks,
        frames=frames,
        origin=origin,
    )


def _frame_artists(ax: Axes, f: GroupFrame, scene: Scene) -> list:
    """An open group's frame (or its pieces) and its name, behind the edges, as svg.py draws it."""
    th = scene.theme
    out: list = []
    for x, y, w, h in f.parts or ((f.x, f.y, f.w, f.h),):
        patch = ax.add_patch(
            FancyBboxPatch(
                (x, y),
                w,
                h,
                boxstyle="round,pad=0,rounding_size=0.03",
                facecolor=th.muted,
                edgecolor=th.muted,
                linewidth=0.8,
                linestyle="--",
                zorder=Z_FRAME,
            )
        )
        patch.set_facecolor(to_rgba(th.muted, 0.04))
        out.append(patch)
    out.append(text_artist(ax, name_label(f, scene), Z_FRAME + 0.1, th))
    return out


def restyle_artists(ax: Axes, scene: Scene, artists: Artists, title: Text) -> None:
    """After the scene restyled its records (a step, overrides): the same texts and colours
    on the artists that exist. Scene -> artists only; positions never change."""
    title.set_text(scene.title_label.text)
    a = artists
    for e, arrow in a.arrows.items():
        edge, label, text = scene.arrows[e], scene.edge_labels[e], a.edge_labels[e]
        arrow.set_color(edge.color)
        arrow.set_linestyle(edge.linestyle)
        arrow.set_linewidth(edge.lw)
        arrow.set_zorder(Z_EDGE + edge.lw / 100)  # thicker edges on top, as svg.py orders them
        text.set_text(label.text)
        text.set_color(label.color)
        text.set_fontstyle(label.style)
    for m in a.marks:
        m.remove()
    if a.origin is not None and scene.origin_label is not None:
        a.origin.set_visible(scene.origin_label.visible)
    paint = MplPainter(scene, ax)
    a.marks = [m for ar in scene.arrows.values() if ar.marks for m in paint.marks(ar)]
    for n, box in a.boxes.items():
        spec, grad = scene.boxes[n], scene.grads[n]
        box.set_edgecolor(spec.ec)
        box.set_linewidth(spec.lw)
        box.set_linestyle(spec.linestyle)
        a.grads[n].set_text(grad.text)
        a.grads[n].set_color(grad.color)


def scene_as_drawn(scene: Scene, artists: Artists, chrome: Chrome) -> Scene:
    """A copy of the scene whose records show what someone did to the artists (colours,
    widths, dashes, texts, visibility, text positions): what an SVG of a restyled
    figure must show. The scene itself is never written to."""
    sc = copy.copy(scene)
    a = artists
    sc.boxes, sc.labels, sc.grads = dict(scene.boxes), dict(scene.labels), dict(scene.grads)
    sc.arrows, sc.edge_labels, sc.chips = dict(scene.arrows), dict(scene.edge_labels), dict(scene.chips)
    for n, box in a.boxes.items():
        rec = sc.boxes[n] = copy.copy(scene.boxes[n])
        rec.fc, rec.ec = _hex(box.get_facecolor()), _hex(box.get_edgecolor())
        rec.lw, rec.linestyle, rec.visible = box.get_linewidth(), box.get_linestyle(), box.get_visible()
        title, sub, value = (_as_drawn(art, label) for art, label in zip(a.labels[n], scene.labels[n], strict=True))
        sc.labels[n] = (title, sub, value)
        sc.grads[n] = _as_drawn(a.grads[n], scene.grads[n])
    for e, arrow in a.arrows.items():
        edge = sc.arrows[e] = copy.copy(scene.arrows[e])
        edge.color, edge.lw = _hex(arrow.get_edgecolor()), arrow.get_linewidth()
        edge.linestyle, edge.visible = arrow.get_linestyle(), arrow.get_visible()
        sc.edge_labels[e] = _as_drawn(a.edge_labels[e], scene.edge_labels[e])
    for n, tags in a.chips.items():
        sc.chips[n] = [_as_drawn(art, label) for art, label in zip(tags, scene.chips[n], strict=True)]
    for name, art in (("title_label", chrome.title), ("caption_label", chrome.caption)):
        label = copy.copy(getattr(scene, name))
        label.text, label.color = art.get_text(), _hex(art.get_color())
        setattr(sc, name, label)
    return sc


def _hex(color) -> str:
    """A matplotlib colour as the hex form records hold (#rrggbb, or #rrggbbaa when translucent)."""
    h = to_hex(color, keep_alpha=True)
    return h[:7] if h.endswith("ff") else h


def _as_drawn(art: Text, label: Label) -> Label:
    out = copy.copy(label)
    out.text = art.get_text()
    out.color = _hex(art.get_color())
    out.visible = art.get_visible()
    x, y = art.get_position()
    out.x, out.y = float(x), float(y)
    return out

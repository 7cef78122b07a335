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

import math
from dataclasses import dataclass, field
from typing import Any

from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.markers import MarkerStyle
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path
from matplotlib.text import Text

from ..picture.fonts import matplotlib_families
from ..picture.scene import (
    FONT,
    Arrow,
    Box,
    Label,
    Scene,
    Swatch,
    _legend_layout_for,
    arrow_specs,
    edge_label_specs,
    label_specs,
)
from ..picture.themes import LIGHT, Theme
from ..record.graph import TapeGraph
from .raster import MAX_PNG_PIXELS

__all__ = [
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
Z_EDGE, Z_MARK, Z_BOX, Z_TEXT, Z_EDGE_LABEL = 2, 2.5, 3, 4, 5

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
    title = _fig_text(fig, scene.title_label, scene)
    caption = _fig_text(fig, scene.caption_label, scene)
    samples, texts = [], []
    for sw in scene.legend:
        samples.extend(_swatch_artists(fig, sw, scene))
        texts.append(_fig_text(fig, sw.label, scene))
    return Chrome(fig, title, caption, LegendArtists(samples, texts))


def draw_legend(fig: Figure, reasons=(), kinds=(), *, theme: str | Theme | None = None, lang: str = "en"):
    """A legend of node kinds, edges and these stop reasons, laid out by a scene for
    ``fig``'s width and drawn at its bottom; returns the legend's artists."""
    scene = _legend_layout_for(tuple(fig.get_size_inches()), list(reasons), list(kinds), theme=theme, lang=lang)
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


def draw_scene(ax: Axes, scene: Scene, chrome: Chrome) -> Artists:
    """Every record of ``scene`` as an artist on ``ax`` (limits set to the scene's)."""
    th = scene.theme
    ax.set_axis_off()
    (x0, x1), (y0, y1) = scene.limits
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    arrows = {e: arrow_artist(ax, a, th) for e, a in scene.arrows.items()}
    marks = [m for a in scene.arrows.values() if a.marks for m in mark_artists(ax, a, scene)]
    return Artists(
        boxes={n: box_artist(ax, b) for n, b in scene.boxes.items()},
        labels={n: tuple(text_artist(ax, t, theme=th) for t in trio) for n, trio in scene.labels.items()},
        grads={n: text_artist(ax, t, theme=th) for n, t in scene.grads.items()},
        arrows=arrows,
        edge_labels={e: text_artist(ax, t, Z_EDGE_LABEL, th) for e, t in scene.edge_labels.items()},
        title=chrome.title,
        legend=chrome.legend,
        chips={n: [text_artist(ax, t, Z_TEXT, th) for t in tags] for n, tags in scene.chips.items()},
        marks=marks,
    )

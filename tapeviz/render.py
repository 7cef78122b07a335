"""Render: matplotlib artists for a Scene, kept in step with it.

Nodes, node labels, edges and edge labels are drawn by separate functions that each
return their artists (keyed by node or edge), so callers can restyle them. ``GraphView``
holds a :class:`~tapeviz.scene.Scene` and, when the step or the shown gradients change,
restyles the scene and copies the new texts and colours onto its artists instead of
drawing the picture again.

The artists are made the first time someone needs them (``view.figure``, ``.ax``,
``.artists``, a PNG or GIF), not when the view is made: an SVG file or the explorer's
canvas is written from the scene alone (svg.py), and creating a few thousand matplotlib
texts is most of the cost of a large picture. Nothing here computes a gradient: every
number comes from the GradientFlow the scene was given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch
from matplotlib.text import Text

from .flow import REASONS, GradientFlow
from .graph import TapeGraph
from .scene import (  # noqa: F401  (re-exported: the picture's constants are part of render's API)
    BOX_H, BOX_W, C_ACTIVE, C_BAD, C_FORWARD, C_GRAD, C_GRADTEXT, C_STOP, C_TARGET, DPI, FONT, INCH_X,
    INCH_Y, KIND_NAMES, KIND_STYLE, REASON_STYLE, Arrow, Box, Label, Scene, arrow_specs, box_specs,
    edge_label_specs, figure_size, grad_specs, grad_text, label_specs, node_subtitle, node_title, node_value_text,
)

BOX_STYLE = "round,pad=0.0,rounding_size=0.08"
ARROW_STYLE = dict(arrowstyle="-|>", mutation_scale=10)
LABEL_BBOX = dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85)
Z_EDGE, Z_BOX, Z_TEXT, Z_EDGE_LABEL = 2, 3, 4, 5


# --------------------------------------------------------------------------- one artist per record


def box_artist(ax: Axes, b: Box) -> FancyBboxPatch:
    """The matplotlib patch for a Box record, added to ``ax``."""
    box = FancyBboxPatch((b.x, b.y), b.w, b.h, boxstyle=BOX_STYLE, fc=b.fc, ec=b.ec, lw=b.lw, zorder=Z_BOX)
    box.set_gid(b.gid)
    ax.add_artist(box)  # not add_patch: limits are set once, and autoscaling costs O(n) per patch
    return box


def text_artist(ax: Axes, t: Label, zorder: float = Z_TEXT) -> Text:
    """The matplotlib Text for a Label record, added to ``ax``."""
    kw: dict[str, Any] = dict(ha=t.ha, va=t.va, fontsize=t.size, zorder=zorder)
    if t.weight != "normal":
        kw["fontweight"] = t.weight
    if t.style != "normal":
        kw["fontstyle"] = t.style
    if t.color is not None:
        kw["color"] = t.color
    if t.boxed:
        kw["bbox"] = LABEL_BBOX
    text = ax.text(t.x, t.y, t.text, **kw)
    if t.gid:
        text.set_gid(t.gid)
    return text


def arrow_artist(ax: Axes, a: Arrow) -> FancyArrowPatch:
    """The matplotlib arrow for an Arrow record, added to ``ax``."""
    style = dict(ARROW_STYLE, lw=a.lw, color=a.color, linestyle=a.linestyle, zorder=Z_EDGE)
    if a.path is not None:
        arrow = FancyArrowPatch(path=a.path, **style)
    else:
        arrow = FancyArrowPatch(a.start, a.end, connectionstyle=f"arc3,rad={a.rad}", shrinkA=0, shrinkB=0, **style)
    arrow.set_gid(a.gid)
    ax.add_artist(arrow)
    return arrow


# --------------------------------------------------------------------------- drawing a graph


def draw_nodes(ax: Axes, graph: TapeGraph, pos, *, targets=(), display=None) -> dict[Any, FancyBboxPatch]:
    """One rounded box per node, styled by kind; targets get a red border."""
    return {n: box_artist(ax, b) for n, b in box_specs(graph, pos, targets=targets, display=display).items()}


def draw_node_labels(ax: Axes, graph: TapeGraph, pos, *, fontsize: float = FONT,
                     display=None) -> dict[Any, tuple[Text, Text, Text]]:
    """(title, subtitle, forward value) texts inside each box."""
    specs = label_specs(graph, pos, fontsize=fontsize, display=display)
    return {n: tuple(text_artist(ax, t) for t in trio) for n, trio in specs.items()}


def draw_node_grads(ax: Axes, graph: TapeGraph, pos, *, fontsize: float = FONT, display=None) -> dict[Any, Text]:
    """The gradient reaching each node, under its box (empty until the flow fills it)."""
    return {n: text_artist(ax, t) for n, t in grad_specs(graph, pos, fontsize=fontsize, display=display).items()}


def draw_edges(ax: Axes, graph: TapeGraph, pos, *, routes=None, display=None) -> dict[tuple, FancyArrowPatch]:
    """One arrow per edge, producer → consumer (the forward direction).

    With ``routes`` (from :func:`tapeviz.layout.layered_routes`) edges that span
    several layers follow their bend points around the boxes in between.
    """
    return {e: arrow_artist(ax, a) for e, a in arrow_specs(graph, pos, routes=routes, display=display).items()}


def draw_edge_labels(ax: Axes, graph: TapeGraph, pos, *, fontsize: float = FONT, routes=None,
                     display=None) -> dict[tuple, Text]:
    """A text on each edge for the gradient (or stop reason) it carries.

    Straight edges are labelled at their middle; routed ones on their last
    horizontal stretch, ending where it bends into the consumer.
    """
    specs = edge_label_specs(graph, pos, fontsize=fontsize, routes=routes, display=display)
    return {e: text_artist(ax, t, Z_EDGE_LABEL) for e, t in specs.items()}


def draw_legend(fig: Figure, reasons=(), kinds=()) -> Any:
    """Legend of node kinds, gradient edges and the stop reasons present."""
    handles = [Patch(fc=KIND_STYLE[k]["fc"], ec=KIND_STYLE[k]["ec"], label=KIND_NAMES[k]) for k in kinds]
    handles.append(Line2D([], [], color=C_GRAD, lw=2, label="gradient flowing back"))
    for r in reasons:
        handles.append(Line2D([], [], color=C_STOP, lw=1.6, ls=REASON_STYLE.get(r, "--"), label=f"no gradient: {REASONS[r]}"))
    return fig.legend(handles=handles, loc="lower center", ncol=min(4, len(handles)), fontsize=FONT - 0.5,
                      frameon=False, bbox_to_anchor=(0.5, 0.0))


# --------------------------------------------------------------------------- the view

MAX_PNG_PIXELS = 40_000_000  # ~160 MB of RGBA while rendering; larger pictures get a lower dpi


def raster_dpi(figure: Figure, dpi: float, max_pixels: int = MAX_PNG_PIXELS) -> float:
    """``dpi``, lowered so a raster of the figure stays under ``max_pixels``: a 5,000-op
    graph is tens of inches on each side, and at 100 dpi its PNG would need gigabytes."""
    w, h = figure.get_size_inches()
    return min(float(dpi), (max_pixels / max(w * h, 1e-9)) ** 0.5)


class TapeFigure(Figure):
    """A Figure that shows itself in Jupyter without ``%matplotlib inline`` or pyplot
    (pyplot-free figures otherwise display as their text repr).

    While it holds nothing but its GraphView's picture it shows as SVG written by
    svg.py (a 1,000-op graph in ~0.1 s, where matplotlib's PNG spends ~3 ms on each
    label); once anything else is drawn on it, as matplotlib's PNG."""

    _tv_view = None  # the GraphView drawn on this figure (tv.draw returns only the figure)

    def _view_owning_all(self):
        from .svg import draws_whole_figure  # svg.py builds on this module

        view = self._tv_view
        return view if view is not None and view.drawn and draws_whole_figure(view) else None

    def _repr_svg_(self) -> str | None:
        view = self._view_owning_all()
        if view is None:
            return None
        from .svg import to_svg

        svg = to_svg(view)
        return svg[svg.find("<svg"):]

    def _repr_png_(self) -> bytes | None:
        if self._view_owning_all() is not None:
            return None  # shown as SVG instead
        import io

        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=raster_dpi(self, self.dpi))
        return buf.getvalue()


@dataclass
class Artists:
    boxes: dict
    labels: dict
    grads: dict
    arrows: dict
    edge_labels: dict
    title: Text
    legend: Any


@dataclass
class Chrome:
    """The figure-level artists: title, caption and legend (matplotlib lays them out)."""

    figure: Figure
    title: Text
    caption: Text
    legend: Any


class GraphView:
    """A picture of a graph whose gradient state can be changed in place.

    ``set_step(k)`` shows the backward pass after k steps (None: all of it);
    ``set_grad_overrides`` replaces the gradient texts of some nodes (e.g. clipped values)
    without touching the rest. Only texts and colours change; nothing is re-created.

    Graphs with more than ``layout.COLLAPSE_THRESHOLD`` ops open with each layer (name
    scope) collapsed into one box that shows its variables' gradient norms;
    ``collapsed=`` picks layers by name (``True``/``False`` for all/none) and
    :meth:`expanded` returns a view with some layers opened.

    Positions and edge routes come from ``layered_routes``: edges that skip layers run
    around the boxes in between. Given ``pos`` (and no ``routes``) every edge is drawn
    straight, as the caller's positions carry no routes.

    Given ``ax``, the picture is drawn into it at once; otherwise its figure and artists
    are made on first use (``figure``, ``ax``, ``artists``, ``png``).
    """

    def __init__(self, graph: TapeGraph, flow: GradientFlow | None = None, *, ax: Axes | None = None,
                 pos=None, title: str | None = None, caption: str | None = None, routes=None,
                 collapsed="auto", functions=(), show_all: bool = False, lang: str = "en", theme: str = "light"):
        self.scene = Scene(graph, flow, pos=pos, routes=routes, title=title, caption=caption,
                           collapsed=collapsed, functions=functions, show_all=show_all, lang=lang, theme=theme)
        self._ax = ax
        self._chrome: Chrome | None = None
        self._artists: Artists | None = None
        if ax is not None:
            self._draw()

    # -- what the scene holds ------------------------------------------------------

    graph = property(lambda self: self.scene.graph)
    flow = property(lambda self: self.scene.flow)
    functions = property(lambda self: self.scene.functions)
    display = property(lambda self: self.scene.display)
    pos = property(lambda self: self.scene.pos)
    routes = property(lambda self: self.scene.routes)
    targets = property(lambda self: self.scene.targets)
    step = property(lambda self: self.scene.step)
    layers = property(lambda self: self.scene.layers, doc="Names of the layers this graph groups its ops into.")
    n_steps = property(lambda self: self.scene.n_steps)

    @property
    def overrides(self) -> dict:
        return self.scene.overrides

    @overrides.setter
    def overrides(self, texts: Mapping[Any, str]) -> None:
        self.scene.overrides = dict(texts)  # shown at the next set_step, as set_grad_overrides shows at once

    # -- the matplotlib side, made on first use --------------------------------------

    @property
    def drawn(self) -> bool:
        """Whether the graph's matplotlib artists exist (a user may have restyled them)."""
        return self._artists is not None

    @property
    def figure(self) -> Figure:
        self._draw()
        return self._chrome.figure

    @property
    def ax(self) -> Axes:
        self._draw()
        return self._ax

    @property
    def artists(self) -> Artists:
        self._draw()
        return self._artists

    @property
    def caption(self) -> Text:
        return self.chrome().caption

    def chrome(self) -> Chrome:
        """Title, caption and legend on the view's figure, without the graph's artists:
        all svg.py needs matplotlib for."""
        if self._chrome is None:
            sc = self.scene
            if self._ax is not None:
                fig = self._ax.figure
            else:
                fig = TapeFigure(figsize=sc.size, dpi=DPI)
                fig._tv_view = self
            title = fig.suptitle(sc.title, fontsize=FONT + 2, y=sc.frame.title_y)
            legend = draw_legend(fig, sc.reasons, sc.kinds)
            caption = fig.text(0.5, sc.frame.caption_y, sc.caption, ha="center", va="top", fontsize=FONT + 0.5, color="#334155")
            self._chrome = Chrome(fig, title, caption, legend)
        return self._chrome

    def _draw(self) -> None:
        if self._artists is not None:
            return
        chrome = self.chrome()
        if self._ax is None:
            self._ax = chrome.figure.add_axes(self.scene.frame.axes)
        ax, sc = self._ax, self.scene
        ax.set_axis_off()
        if sc.limits is not None:
            ax.set_xlim(*sc.limits[0])
            ax.set_ylim(*sc.limits[1])
        self._artists = Artists(
            boxes={n: box_artist(ax, b) for n, b in sc.boxes.items()},
            labels={n: tuple(text_artist(ax, t) for t in trio) for n, trio in sc.labels.items()},
            grads={n: text_artist(ax, t) for n, t in sc.grads.items()},
            arrows={e: arrow_artist(ax, a) for e, a in sc.arrows.items()},
            edge_labels={e: text_artist(ax, t, Z_EDGE_LABEL) for e, t in sc.edge_labels.items()},
            title=chrome.title,
            legend=chrome.legend,
        )

    def _push(self) -> None:
        """Copy the scene's current texts and colours onto the artists that exist."""
        sc = self.scene
        if self._chrome is not None:
            self._chrome.title.set_text(sc.title)
        a = self._artists
        if a is None:
            return
        for e, arrow in a.arrows.items():
            spec, label, text = sc.arrows[e], sc.edge_labels[e], a.edge_labels[e]
            arrow.set_color(spec.color)
            arrow.set_linestyle(spec.linestyle)
            arrow.set_linewidth(spec.lw)
            text.set_text(label.text)
            text.set_color(label.color)
            text.set_fontstyle(label.style)
        for n, box in a.boxes.items():
            spec, grad = sc.boxes[n], sc.grads[n]
            box.set_edgecolor(spec.ec)
            box.set_linewidth(spec.lw)
            a.grads[n].set_text(grad.text)
            a.grads[n].set_color(grad.color)

    # -- changing what is shown ----------------------------------------------------

    def set_step(self, step: int | None) -> None:
        """Show the flow as it stands after `step` backward steps (None = finished)."""
        self.scene.set_step(step)
        self._push()

    def set_grad_overrides(self, texts: Mapping[Any, str]) -> None:
        """Show these texts as the gradient of some nodes (e.g. after clipping)."""
        self.scene.set_grad_overrides(texts)
        self._push()

    def _like(self, collapsed, functions) -> "GraphView":
        view = GraphView(self.graph, self.flow, collapsed=collapsed, title=self.scene.custom_title,
                         functions=functions, show_all=self.scene.show_all, lang=self.scene.lang,
                         theme=self.scene.theme)
        view.overrides = self.overrides
        view.set_step(self.step)
        return view

    def expanded(self, *layers: str) -> "GraphView":
        """A new view with these layers opened (the others stay as they are)."""
        unknown = set(layers) - set(self.layers)
        if unknown:
            raise ValueError(f"No layer named {sorted(unknown)}; layers are: {self.layers}")
        return self._like(self.display.collapsed - set(layers), self.functions)

    def expanded_function(self, *nodes) -> "GraphView":
        """A new view with these tf.function call nodes (default: all) opened into the
        ops of their body. Gradients show on the edges into and out of the body; TF
        does not expose per-op gradients or values inside a function call."""
        chosen = set(nodes) or set(self.graph.functions())
        return self._like(self.display.collapsed, self.functions | chosen)

    def collapsed_view(self, *layers: str) -> "GraphView":
        """A new view with these layers (all, when none are named) collapsed."""
        chosen = set(layers) or set(self.layers)
        return self._like(self.display.collapsed | chosen, self.functions)

    def _repr_svg_(self) -> str:
        """Jupyter shows a GraphView as SVG written from its scene: no matplotlib artist
        is made, so even a 1,000-op graph appears in a fraction of a second, and it stays
        sharp when zoomed. (``tv.draw`` returns a matplotlib Figure, shown as PNG.)"""
        from .svg import to_svg  # svg.py builds on this module

        svg = to_svg(self)
        return svg[svg.find("<svg"):]

    def png(self, dpi: int = 100) -> bytes:
        import io

        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=raster_dpi(self.figure, dpi))
        return buf.getvalue()


def draw(graph: TapeGraph, flow: GradientFlow | None = None, *, step: int | None = None, ax: Axes | None = None,
         title: str | None = None, caption: str | None = None) -> GraphView:
    """Draw a graph (and optionally its flow at a step); returns the GraphView."""
    view = GraphView(graph, flow, ax=ax, title=title, caption=caption)
    if step is not None:
        view.set_step(step)
    view._draw()
    return view

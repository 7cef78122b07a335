"""Scene: what a picture of a tape shows, as plain data, placed and styled, before anything is drawn.

A Scene holds one record per box, text, tag and arrow, plus the figure's chrome (title,
caption, legend), each with its position, text, colour, line width and dash, and
restyles those records when the backward step or the shown gradients change. Two
writers read it and decide nothing: ``svg.py`` writes it as an SVG document (files,
the explorer's canvas, Jupyter) and ``output/artists.py`` turns it into matplotlib artists
(PNG, GIF, ``tv.draw``'s Figure). The raster writer rasterises the SVG.

Placement happens here, with the text metrics of :mod:`tapeviz.picture.fonts` (the ones the
SVG writer uses too), so that no label overlaps another label or covers a box and
nothing leaves the canvas:

* every edge is labelled in the gap just before its consumer, on a horizontal run at
  one of the consumer's *ports* (its in-edges spread over the box's height, ordered as
  they arrive, so parallel edges and fan-in get a row each); the run then converges
  on the middle of the consumer's left side, where the arrow head is;
* a gap holds nothing but edge labels, a column nothing but boxes and the gradient
  text under each box; each label is fitted (shortened, a value to its shape and
  norm, else cut with "…") to the room it has;
* constants and shape plumbing folded away by :mod:`tapeviz.picture.visibility` appear as small
  tags (chips) inside their consumer's box;
* the title, caption and legend are laid out by width: wrapped to the canvas and
  flowed into rows.

Graph records are in data units (one column is 1 wide, one row 1 tall, as the layout
places them); chrome records are in canvas pixels (``DPI`` per inch, y up).
``data_to_px`` maps the former onto the latter.

Nothing here computes a gradient: every number comes from the GradientFlow, and
every sentence from the message catalogue (:func:`tapeviz.messages.say`).
"""

from __future__ import annotations

import dataclasses
import math
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, NamedTuple

import numpy as np

from ..gradients.flow import GradientFlow
from ..messages import DEFAULT, Phrase, check_lang, localize, say
from ..record.graph import GRAD_NORM, TIMES, VALUE_NORM, TapeGraph, format_value
from . import fonts
from .layout import layered_routes
from .names import name_lines, short_names
from .rows import MAX_RATIO, NARROW_PAGE, PAGE_FIT_MOST, PAGE_WIDTH, band_columns, row_lengths, wrap_bands
from .themes import LIGHT, Theme, get_theme, mix
from .visibility import Shown, collapse, decide

__all__ = [
    "Scene",
    "Box",
    "Label",
    "Arrow",
    "Route",
    "Swatch",
    "box_specs",
    "label_specs",
    "grad_specs",
    "arrow_specs",
    "edge_label_specs",
    "figure_size",
    "node_title",
    "box_names",
    "node_subtitle",
    "node_value_text",
    "grad_text",
    "KIND_STYLE",
    "REASON_STYLE",
]

# Geometry, in data units: one layer is INCH_X inches wide, one row INCH_Y inches tall (x theme.scale).
INCH_X, INCH_Y = 2.7, 1.15
BOX_W, BOX_H = 0.56, 0.6  # node box, as a fraction of a layer / a row (layout.py keeps bends clear of it)
GAP = 1.0 - BOX_W  # between two columns' boxes: edge labels live here, and only here
PARALLEL_GAP = 0.13  # vertical distance between the ends of parallel edges (x * x)
CURVE_ROOM = 0.07  # at a gap's left: where an edge turns from where it comes to its port
CONVERGE_ROOM = 0.06  # at a gap's right: where a port's run turns into the middle of the box
TAIL = 0.03  # the straight stretch under the arrow head
PORT_WINDOW = 0.45  # ports spread at most this far above and below a box's middle
CAPTION_H = 0.15  # the strip under a box where its gradient is written (layout.py keeps bends out of it)
RETURN_PAD, RETURN_STEP = 0.05, 0.02  # an edge returning to the next band turns down this far right of the boxes
BAND_MOST = 20  # widest band, in columns (a 20-column band of the default theme is ~55 inches)
FONT = LIGHT.font
DPI = 100
MARGIN = 8.0  # points between the canvas edge and anything on it
MAX_INCHES = 200.0  # figure_size's cap; a Scene is never squeezed (squeezed text would overlap)

# The default (light) theme's colours, for callers and tests that compare against them.
KIND_STYLE = {k: dict(fc=fc, ec=ec) for k, (fc, ec) in LIGHT.kinds.items()}
C_FORWARD, C_GRAD, C_ACTIVE, C_STOP = LIGHT.forward, LIGHT.flowing, LIGHT.active, LIGHT.stopped
C_BAD, C_TARGET, C_GRADTEXT, C_STOPTEXT = LIGHT.bad, LIGHT.target, LIGHT.grad_text, LIGHT.stop_text
# Line widths in points, before the theme's ``line`` factor.
LW_BOX, LW_TARGET, LW_ACTIVE = 1.1, 2.6, 3.4
LW_EDGE, LW_STOPPED, LW_CARRIES, LW_ACTIVE_EDGE = 1.1, 1.2, 1.8, 3.0

REASON_STYLE = {
    "stop_gradient": (0, (4, 2)),
    "not_recorded": (0, (1, 2)),
    "not_watched": (0, (3, 2, 1, 2)),
    "integer_dtype": (0, (6, 2)),
    "no_gradient": (0, (2, 2)),
    "stateful": (0, (5, 1, 1, 1)),
    "outside_tf": (0, (1, 1)),
    "unconnected": (0, (3, 3)),
}

# matplotlib's path codes (the writers read them as such)
MOVETO, LINETO, CURVE4 = 1, 2, 4
LABEL_PAD = 0.15  # a boxed label's padding, in units of its font size (matplotlib's "round,pad=0.15")
CHIP_PAD = 0.25
MARK_SIZE = 8.0  # points: a backward marker's length and width (times the theme's line factor)
NOTATION_SAMPLE = f"4{TIMES}3 {GRAD_NORM} 0.884"  # the legend's sample of how big tensors are written


# --------------------------------------------------------------------------- records


@dataclass(slots=True)
class Box:
    """A node's rounded box: lower-left corner and size in data units."""

    x: float
    y: float
    w: float
    h: float
    fc: str
    ec: str
    lw: float
    gid: str
    linestyle: Any = "-"
    visible: bool = True
    radius: float = 0.08  # corner rounding, in data units
    tip: str = ""  # what hovering shows: the full name the title shortens


@dataclass(slots=True)
class Label:
    """One text, anchored at (x, y); ``boxed`` puts it on a rounded background
    (``fill`` / ``edge``; edge labels sit on top of arrows, chips are tags)."""

    x: float
    y: float
    text: str
    size: float
    color: str | None = None  # None: the theme's text colour
    ha: str = "center"
    va: str = "center"
    weight: str = "normal"
    style: str = "normal"
    boxed: bool = False
    gid: str | None = None
    fill: str | None = None
    edge: str | None = None
    fill_alpha: float = 1.0
    visible: bool = True
    pad: float = LABEL_PAD  # background padding, in units of the font size


class Route(NamedTuple):
    """A path: vertices and matplotlib path codes (MOVETO / LINETO / CURVE4), in data units."""

    vertices: list
    codes: list


@dataclass(slots=True)
class Arrow:
    """An edge, producer → consumer (the forward direction).  Routed and ported edges
    follow ``path``; straight ones go from ``start`` to ``end`` bent by ``rad`` (arc3).
    ``marks`` are backward chevrons, (x, y, dx, dy) with (dx, dy) the direction the
    gradient moves (towards the producer), on the edges of the step being processed."""

    start: tuple[float, float]
    end: tuple[float, float]
    rad: float
    path: Route | None
    color: str
    lw: float
    linestyle: Any
    gid: str
    members: list = field(default_factory=list)  # the graph's edges this one stands for
    marks: list = field(default_factory=list)  # drawn now
    mark_color: str | None = None
    visible: bool = True
    mark_at: tuple | None = None  # where its chevron goes while its step is processed


@dataclass(slots=True)
class Swatch:
    """A legend entry's sample: a box, a line or a tag, and its text (canvas pixels)."""

    kind: str  # "box", "line", "chip"
    x: float  # lower-left of the sample
    y: float
    w: float
    h: float
    fc: str | None
    ec: str
    lw: float
    linestyle: Any
    label: Label
    mark: bool = False  # a line with a backward chevron on it
    chip: Label | None = None


@dataclass(frozen=True)
class Frame:
    """Where the graph sits on the canvas (fractions of it): left, bottom, width, height."""

    axes: tuple[float, float, float, float]


# --------------------------------------------------------------------------- texts


def is_bad(value) -> bool:
    """NaN or Inf anywhere in a float value (those are drawn in the theme's ``bad`` colour)."""
    if value is None:
        return False
    a = np.asarray(value)
    if a.dtype.kind not in "fc":
        return False
    if a.size == 1:
        return not math.isfinite(abs(a.item()))
    return not np.isfinite(a).all()


def node_title(graph: TapeGraph, node, display: Shown | None = None, lang: str = DEFAULT) -> str:
    """First line of a box: the user's name for it, else what it is."""
    if display is not None and display.nx.nodes[node].get("kind") == "layer":
        dd = display.nx.nodes[node]
        if dd.get("group_kind") == "api":
            return dd["name"].removeprefix("tf.")
        name = dd["name"]
        return f"{name} (call {dd['call'] + 1})" if dd.get("call") else name
    if display is not None and display.nx.nodes[node].get("kind") == "inner":
        return display.nx.nodes[node]["op_type"]
    d = graph.nx.nodes[node]
    if d.get("name"):
        return d["name"]
    if d["kind"] == "op":
        return d.get("function") or d["op_type"]
    return say("ui.kind.constant", lang) if d["kind"] == "constant" else d["label"]


def _path(graph: TapeGraph, node, display: Shown | None) -> str:
    """A box's full name when it has one: a layer's Keras path, a variable's or a tensor's
    name (``generator/dense/kernel``, ``loss``); '' for ops and constants named by type."""
    if display is not None:
        dd = display.nx.nodes[node]
        if dd.get("kind") == "layer":
            return "" if dd.get("group_kind") == "api" else dd["layer"]
        if dd.get("kind") == "inner":
            return ""
    return graph.nx.nodes[node].get("name") or ""


def box_names(graph: TapeGraph, display: Shown | None = None, lang: str = DEFAULT) -> dict[Any, tuple[str, str]]:
    """(title, full name) of every box. A named box's title is the shortest end of its path
    that no other box's path ends with (see :func:`tapeviz.names.short_names`): the model's
    prefix and the parts every box shares drop away, the full name stays as the tooltip."""
    paths = {n: p for n, _ in _nodes(graph, display) if (p := _path(graph, n, display))}
    short = short_names(paths)
    out = {}
    for n, _ in _nodes(graph, display):
        if n not in paths:
            title = node_title(graph, n, display, lang)
            out[n] = (title, title)
            continue
        call = display.nx.nodes[n].get("call") if display is not None else None
        more = f" (call {call + 1})" if call else ""
        out[n] = (short[n] + more, paths[n] + more)
    return out


def _op_label(d) -> str:
    """`Mul`, or `tf.function f` for a function call / custom-gradient entry."""
    return f"{d['via']} {d['function']}" if d.get("via") else d["op_type"]


def node_subtitle(graph: TapeGraph, node, display: Shown | None = None, lang: str = DEFAULT) -> str:
    """Middle line: the op type when the title is the user's name for the op."""
    if display is not None and display.nx.nodes[node].get("kind") == "layer":
        members = display.members[node]
        ops = sum(1 for m in members if graph.nx.nodes[m]["kind"] == "op")
        return say(f"ui.group.{display.nx.nodes[node].get('group_kind', 'layer')}", lang, n=ops)
    if display is not None and display.nx.nodes[node].get("kind") == "inner":
        fn = display.nx.nodes[node]["function"]
        return say("ui.group.inner", lang, function=graph.nx.nodes[fn].get("function", ""))
    d = graph.nx.nodes[node]
    if d["kind"] != "op":
        return ""
    if d.get("name"):
        return _op_label(d)
    return d.get("via") or ""


def node_value_text(graph: TapeGraph, node, display: Shown | None = None) -> str:
    """Bottom line: the forward value (or its summary); a layer shows its output's."""
    dd = display.nx.nodes[node] if display is not None else {}
    if display is not None and dd.get("kind") == "layer":
        ops = [m for m in display.members[node] if graph.nx.nodes[m]["kind"] == "op"]
        node = ops[-1] if ops else display.members[node][-1]
    elif dd.get("kind") == "inner":
        # TF keeps no per-op values inside a function call; the ops it returns have the call's outputs
        outs = graph.nx.nodes[dd["function"]].get("outputs") or []
        j = dd.get("ret_index")
        if j is None or j >= len(outs):
            return ""
        returned = graph.tensors[outs[j]]
        return format_value(returned.value, returned.summary)
    info = graph.output_info(node)
    return "" if info is None else format_value(info.value, info.summary)


def grad_text(value) -> str:
    """What a box shows under it for the gradient that reached it."""
    return "∂ " + ("None" if value is None else format_value(np.asarray(value), norm=GRAD_NORM))


def _compact(value) -> str:
    """A shorter rendering of a gradient: its shape and norm (a scalar stays itself)."""
    a = np.asarray(value)
    if a.size <= 1:
        return format_value(a)
    return format_value(a, max_items=1, norm=GRAD_NORM)


# --------------------------------------------------------------------------- geometry


def _nodes(graph: TapeGraph, display: Shown | None):
    return (display.nx if display is not None else graph.nx).nodes(data=True)


def _extent_ys(pos, routes=None) -> list[float]:
    """Every y the drawing uses: node centres and the bend points of routed edges."""
    ys = [p[1] for p in pos.values()]
    for bends in (routes or {}).values():
        ys.extend(b[1] for b in bends)
    return ys


def figure_size(
    pos: Mapping[Any, tuple[float, float]], *, max_inches: float = MAX_INCHES, routes=None
) -> tuple[float, float]:
    """Inches the graph alone needs, so that one layer / one row keeps a constant size
    (a Scene adds its title, caption and legend: see ``Scene.size``)."""
    if not pos:
        return (4.0, 3.0)
    xs = [p[0] for p in pos.values()]
    ys = _extent_ys(pos, routes)
    w = (max(xs) - min(xs) + 1.0) * INCH_X + 0.6
    h = (max(ys) - min(ys) + 1.0) * INCH_Y + 1.6
    return (min(max(w, 4.5), max_inches), min(max(h, 3.2), max_inches))


def _label_height(size: float) -> float:
    """Height in points of a one-line boxed label (its text line and padding)."""
    a, d, _ = fonts.line_box(size)
    return a + d + 2 * LABEL_PAD * size


def _cubic(p0, p3) -> list:
    """The control points and end of an S-curve from p0 to p3 that leaves and enters horizontally."""
    (x0, y0), (x1, y1) = p0, p3
    c = (x1 - x0) / 2
    return [(x0 + c, y0), (x1 - c, y1), (x1, y1)]


def _ports(g, pos, routes, label_h: float):
    """Per consumer: its in-edges in port order (top to bottom) and each one's port y,
    end y and label column. Ports are spread ``label_h`` apart around the middle of the
    box; when more than fit between the neighbouring rows' ports, labels alternate
    between columns so that labels in one column stay ``label_h`` apart."""
    out = {}
    window = max(0.5 - label_h, label_h)  # ports of two boxes a row apart keep their labels apart
    for v in g:
        preds = g.pred[v]
        if not preds:
            continue
        entries = []
        for u, keyed in preds.items():
            keys = sorted(keyed, key=str)
            n = len(keys)
            bends = routes.get((u, v)) if routes else None
            y_from = bends[-1][1] if bends else pos[u][1]
            for i, k in enumerate(keys):
                off = (i - (n - 1) / 2) * PARALLEL_GAP
                entries.append((-(y_from + off / 2), -off, str(u), str(k), (u, v, k), off))
        entries.sort(key=lambda t: t[:4])
        n = len(entries)
        y_v = pos[v][1]
        cols = max(1, math.ceil((n - 1) * label_h / (2 * window) - 1e-9)) if n > 1 else 1
        step = label_h / cols
        for i, (*_, e, off) in enumerate(entries):
            out[e] = (y_v + ((n - 1) / 2 - i) * step, y_v + off, i % cols, cols)
    return out


class _Plan(NamedTuple):
    """Where an edge goes, before its label's width is known."""

    start: tuple
    stops: list  # left and right side of each column passed, at its bend height
    lane: tuple  # (lane y, index) per band boundary crossed
    port: float
    end_y: float
    col: int
    cols: int
    gap_right: float
    off: float
    room: float  # width its label may take, in data units (padding included)


def _edge_plans(
    graph: TapeGraph, pos, routes=None, display: Shown | None = None, lanes=None, *, label_h: float = 0.125
) -> dict:
    """Per edge key: its :class:`_Plan`.

    Every edge ends in the gap before its consumer: it turns from the height it
    arrives at (its producer's, or its last bend point's) to its port, runs
    horizontally under its label, and converges on the middle of the consumer's left
    side (parallel edges on their own ends). Edges with bend points (``routes``)
    cross each column they pass horizontally at their bend point's height, changing
    height only between columns; where the layout wraps into bands (``lanes``) they
    leave their band to the right, run back along their lane and enter the next band
    from the left.
    """
    g = display.nx if display is not None else graph.nx
    plans = {}
    for (u, v, k), (port, end_y, col, cols) in _ports(g, pos, routes, label_h).items():
        (x0, y0), (x1, _) = pos[u], pos[v]
        keys = g[u][v]
        n_par = len(keys)
        off = ((sorted(keys, key=str).index(k) if n_par > 1 else 0) - (n_par - 1) / 2) * PARALLEL_GAP
        stops = []
        for bx, by in (routes.get((u, v)) if routes else None) or ():
            stops += [(bx - BOX_W / 2, by + off / 2), (bx + BOX_W / 2, by + off / 2)]
        gap_right = x1 - BOX_W / 2
        right_room = CONVERGE_ROOM if abs(port - end_y) > 1e-9 else TAIL
        lane = tuple(lanes.get((u, v), ())) if lanes else ()
        left = gap_right - GAP + CURVE_ROOM
        if lane and (not stops or stops[-1][0] > gap_right):  # its last lane ends in this gap: leave room for the leg
            left = max(left, gap_right - GAP + 0.03 + lane[-1][1] % 4 * RETURN_STEP)
        room = (gap_right - right_room - left) / cols
        plans[(u, v, k)] = _Plan((x0 + BOX_W / 2, y0 + off), stops, lane, port, end_y, col, cols, gap_right, off, room)
    return plans


def _edge_route(plan: _Plan, label_w: float | None = None) -> tuple[Route, tuple, tuple]:
    """The path of a planned edge, its label anchor (x, y, ha) and its backward mark.

    ``label_w``: the widest text its label will show (data units, padding included);
    the turn to the port then ends where that label begins instead of at the gap's
    left, so it is gentle rather than steep."""
    x, y = a = plan.start
    verts, codes = [a], [MOVETO]
    returns = iter(plan.lane)
    mark = None
    stops = plan.stops
    for i in range(0, len(stops), 2):
        (xa, ya), (xb, yb) = stops[i], stops[i + 1]
        if xa < x:  # back to the start of the next band, along this edge's lane
            lane_y, j = next(returns)
            right, left = x + RETURN_PAD + j % 4 * RETURN_STEP, xa - GAP + 0.03 + j % 4 * RETURN_STEP
            verts += [(right, y), (right, lane_y + plan.off / 2), (left, lane_y + plan.off / 2), (left, ya), (xa, ya)]
            codes += [LINETO] * 5
        else:
            verts += _cubic((x, y), (xa, ya))
            codes += [CURVE4] * 3
            if mark is None:
                mark = _mark_on_curve((x, y), (xa, ya))
        verts.append((xb, yb))
        codes.append(LINETO)
        x, y = xb, yb
    port, end_y, gap_right = plan.port, plan.end_y, plan.gap_right
    converge = abs(port - end_y) > 1e-9
    run_end = gap_right - (CONVERGE_ROOM if converge else TAIL)
    anchor_x = run_end - plan.col * plan.room
    label_left = anchor_x - (plan.room if label_w is None else min(label_w, plan.room))
    if x > gap_right - 1e-9:  # arriving from a later column: a lane back to this band
        lane_y, j = next(returns, (y, 0))
        right, left = x + RETURN_PAD + j % 4 * RETURN_STEP, gap_right - GAP + 0.03 + j % 4 * RETURN_STEP
        verts += [(right, y), (right, lane_y + plan.off / 2), (left, lane_y + plan.off / 2), (left, port)]
        codes += [LINETO] * 4
        x = left
    elif abs(y - port) > 1e-9 or x < gap_right - GAP - 1e-9:
        turn_end = max(min(label_left, run_end), x + 0.02)
        verts += _cubic((x, y), (turn_end, port))
        codes += [CURVE4] * 3
        if mark is None:
            mark = _mark_on_curve((x, y), (turn_end, port))
        x = turn_end
    verts.append((run_end, port))
    codes.append(LINETO)
    if converge:
        verts += _cubic((run_end, port), (gap_right - TAIL, end_y))
        codes += [CURVE4] * 3
    verts.append((gap_right, end_y))
    codes.append(LINETO)
    if mark is None:  # a straight run from the producer: mark it half-way to the label
        mark = ((x + min(label_left, run_end)) / 2, port, -1.0, 0.0)
    return Route(verts, codes), (anchor_x, port, "right"), mark


def _mark_on_curve(p0, p3) -> tuple:
    """A point early on an S-curve from p0 to p3, and the backward direction there."""
    (x0, y0), (x1, y1) = p0, p3
    t = 0.4
    # B(t) of the cubic with controls (x0 + c, y0), (x1 - c, y1): x is linear in t only at c = dx / 3;
    # evaluate it exactly
    c = (x1 - x0) / 2
    pts = [(x0, y0), (x0 + c, y0), (x1 - c, y1), (x1, y1)]
    mt = 1 - t
    bx = mt**3 * pts[0][0] + 3 * mt**2 * t * pts[1][0] + 3 * mt * t**2 * pts[2][0] + t**3 * pts[3][0]
    by = mt**3 * pts[0][1] + 3 * mt**2 * t * pts[1][1] + 3 * mt * t**2 * pts[2][1] + t**3 * pts[3][1]
    dx = 3 * mt**2 * (pts[1][0] - pts[0][0]) + 6 * mt * t * (pts[2][0] - pts[1][0]) + 3 * t**2 * (pts[3][0] - pts[2][0])
    dy = 3 * mt**2 * (pts[1][1] - pts[0][1]) + 6 * mt * t * (pts[2][1] - pts[1][1]) + 3 * t**2 * (pts[3][1] - pts[2][1])
    return (bx, by, -dx, -dy)


# --------------------------------------------------------------------------- records of a graph


def box_specs(
    graph: TapeGraph,
    pos,
    *,
    targets=(),
    display: Shown | None = None,
    theme: Theme = LIGHT,
    names: Mapping[Any, tuple[str, str]] | None = None,
) -> dict[Any, Box]:
    """One rounded box per node, styled by kind; targets get the theme's target outline;
    ``names`` (from :func:`box_names`) give each its tooltip."""
    boxes = {}
    kinds = theme.kinds
    for n, d in _nodes(graph, display):
        x, y = pos[n]
        fc, ec = kinds.get(d["kind"], kinds["op"])
        target = n in targets
        boxes[n] = Box(
            x - BOX_W / 2,
            y - BOX_H / 2,
            BOX_W,
            BOX_H,
            fc,
            theme.target if target else ec,
            (LW_TARGET if target else LW_BOX) * theme.line,
            f"node-{n}",
            tip=names[n][1] if names else "",
        )
    return boxes


@cache
def _box_lines(size: float, has_sub: bool, has_chips: bool) -> tuple[float, ...]:
    """Heights (points) of a box's lines: title, subtitle, value, chips."""
    title = sum(fonts.line_box(size, "bold")[:2])
    sub = sum(fonts.line_box(size - 1, style="italic")[:2]) if has_sub else 0.0
    value = sum(fonts.line_box(size - 0.5)[:2])
    chips = _label_height(size - 1.5) + 1.0 if has_chips else 0.0
    return (title, sub, value, chips)


def label_specs(
    graph: TapeGraph,
    pos,
    *,
    fontsize: float = FONT,
    display: Shown | None = None,
    theme: Theme = LIGHT,
    lang: str = DEFAULT,
    unit=(INCH_X * 72, INCH_Y * 72),
    names: Mapping[Any, tuple[str, str]] | None = None,
) -> dict[Any, tuple[Label, Label, Label]]:
    """(title, subtitle, forward value) texts inside each box, fitted to its width and
    stacked by their font heights (leaving a row for chips where the box has some). A
    title too long for one line takes two (:func:`tapeviz.names.name_lines`), never "…"."""
    labels = {}
    inner = BOX_W * unit[0] * 0.92  # points of text a box holds
    ppu_y = unit[1]
    names = names if names is not None else box_names(graph, display, lang)
    title_pitch = sum(fonts.line_box(fontsize, "bold"))
    for n, d in _nodes(graph, display):
        x, y = pos[n]
        sub = node_subtitle(graph, n, display, lang)
        chips = bool(d.get("chips"))
        title_lines = name_lines(names[n][0], inner, fontsize, "bold")
        heights = list(_box_lines(fontsize, bool(sub), chips))
        if len(title_lines) > 1:
            heights[0] = len(title_lines) * title_pitch
        gap = 2.0
        total = sum(heights) + gap * (sum(1 for h in heights if h) - 1)
        top = y + total / 2 / ppu_y
        centres = []
        for h in heights:
            centres.append(top - h / 2 / ppu_y)
            if h:
                top -= (h + gap) / ppu_y
        title = "\n".join(title_lines)
        value = fonts.fit(node_value_text(graph, n, display), inner, fontsize - 0.5)
        labels[n] = (
            Label(x, centres[0], title, fontsize, color=theme.text, weight="bold"),
            Label(
                x,
                centres[1] if sub else y,
                fonts.fit(sub, inner, fontsize - 1, style="italic"),
                fontsize - 1,
                color=theme.muted,
                style="italic",
            ),
            Label(x, centres[2], value, fontsize - 0.5, color=theme.value),
        )
    return labels


def chip_specs(
    display: Shown,
    pos,
    *,
    fontsize: float = FONT,
    theme: Theme = LIGHT,
    unit=(INCH_X * 72, INCH_Y * 72),
    rows: Mapping | None = None,
    lang: str = DEFAULT,
) -> dict[Any, list[Label]]:
    """The chips of each box (folded constants, shapes, random masks, named inputs) as a
    row of small tags at the bottom of the box: as many as fit, then "+k"."""
    out = {}
    size = fontsize - 1.5
    inner = BOX_W * unit[0] * 0.92
    pad = CHIP_PAD * size
    for n, d in display.nx.nodes(data=True):
        chips = [
            dataclasses.replace(c, text=localize(c.text, lang)) if isinstance(c.text, Phrase) else c
            for c in d.get("chips") or []
        ]
        if not chips:
            continue
        x, y = pos[n]
        cy = rows[n] if rows else y - BOX_H * 0.32
        widths = [fonts.text_width(c.text, size) + 2 * pad for c in chips]
        kept, used = [], 0.0
        for i, (c, w) in enumerate(zip(chips, widths, strict=True)):
            more = len(chips) - i - 1
            extra = (fonts.text_width(f"+{more}", size) + 2 * pad + 3.0) if more else 0.0
            if used + w + extra > inner:
                break
            kept.append((c.text, c.kind, w))
            used += w + 3.0
        if len(kept) < len(chips):
            rest = len(chips) - len(kept)
            if not kept:  # not even one fits whole: the first, cut to the room left
                text = (
                    fonts.fit(
                        chips[0].text, inner - 2 * pad - fonts.text_width(f"+{rest - 1}", size) - 2 * pad - 3, size
                    )
                    if rest > 1
                    else fonts.fit(chips[0].text, inner - 2 * pad, size)
                )
                if text:
                    kept.append((text, chips[0].kind, fonts.text_width(text, size) + 2 * pad))
                    used = kept[0][2] + 3.0
                    rest -= 1
            if rest:
                w = fonts.text_width(f"+{rest}", size) + 2 * pad
                kept.append((f"+{rest}", "value", w))
                used += w + 3.0
        used -= 3.0
        left = x - used / 2 / unit[0]
        tags = []
        for text, kind, w in kept:
            fc, ec, tc = theme.chips.get(kind, theme.chips["value"])
            tags.append(
                Label(
                    left + w / 2 / unit[0],
                    cy,
                    text,
                    size,
                    color=tc,
                    boxed=True,
                    fill=fc,
                    edge=ec,
                    gid=None,
                    pad=CHIP_PAD,
                )
            )
            left += (w + 3.0) / unit[0]
        out[n] = tags
    return out


def grad_specs(
    graph: TapeGraph, pos, *, fontsize: float = FONT, display: Shown | None = None, theme: Theme = LIGHT
) -> dict[Any, Label]:
    """The gradient reaching each node, under its box (empty until the flow fills it)."""
    return {
        n: Label(
            pos[n][0],
            pos[n][1] - BOX_H / 2 - 0.02,
            "",
            fontsize - 0.5,
            color=theme.grad_text,
            va="top",
            gid=f"grad-{n}",
        )
        for n, _ in _nodes(graph, display)
    }


def arrow_specs(
    graph: TapeGraph,
    pos,
    *,
    routes=None,
    display: Shown | None = None,
    plans=None,
    theme: Theme = LIGHT,
    route: bool = True,
) -> dict[tuple, Arrow]:
    """One arrow per edge, in the forward direction, ending at its consumer's port run
    (see :func:`_edge_plans`); routed edges follow their bends. ``route=False`` leaves the
    paths to the caller (a Scene routes each edge once it knows its label's width)."""
    plans = plans if plans is not None else _edge_plans(graph, pos, routes, display)
    g = display.nx if display is not None else graph.nx
    arrows = {}
    for u, v, k, d in g.edges(keys=True, data=True):
        plan = plans[(u, v, k)]
        path, mark = _edge_route(plan)[::2] if route else (None, None)
        arrows[(u, v, k)] = Arrow(
            plan.start,
            (plan.gap_right, plan.end_y),
            0.0,
            path,
            theme.forward,
            LW_EDGE * theme.line,
            "-",
            f"edge-{u}-{v}-{k}",
            list(d.get("members", [(u, v, k)])),
            mark_at=mark,
        )
    return arrows


def edge_label_specs(
    graph: TapeGraph,
    pos,
    *,
    fontsize: float = FONT,
    routes=None,
    display: Shown | None = None,
    plans=None,
    theme: Theme = LIGHT,
) -> dict[tuple, Label]:
    """A text on each edge for the gradient (or stop reason) it carries, right-aligned on
    its port run in the gap before its consumer."""
    plans = plans if plans is not None else _edge_plans(graph, pos, routes, display)
    out = {}
    for e, p in plans.items():
        x = p.gap_right - (CONVERGE_ROOM if abs(p.port - p.end_y) > 1e-9 else TAIL) - p.col * p.room
        out[e] = Label(
            x,
            p.port,
            "",
            fontsize - 1,
            color=theme.grad_text,
            ha="right",
            boxed=True,
            fill=theme.label_fill,
            fill_alpha=theme.label_alpha,
        )
    return out


# --------------------------------------------------------------------------- chrome


def _legend_entries(scene: Scene | _LegendOnly) -> list[tuple[str, Any, str]]:
    """(kind, style, text) for each legend entry: node kinds, edges, stop reasons, chips.
    The style's form depends on the kind (see _legend_layout)."""
    th, lang = scene.theme, scene.lang
    out: list[tuple[str, Any, str]] = []
    for k in scene.kinds:
        fc, ec = th.kinds[k]
        out.append(("box", (fc, ec, LW_BOX * th.line, "-"), say(f"ui.kind.{k}", lang)))
    out.append(("line", (th.forward, LW_EDGE * th.line * 1.4, "-", False), say("ui.legend.forward", lang)))
    if scene.flow is not None:
        out.append(("line", (th.flowing, LW_CARRIES * th.line, "-", False), say("ui.legend.flowing", lang)))
        out.append(("line", (th.active, LW_ACTIVE_EDGE * th.line, "-", True), say("ui.legend.active", lang)))
        if scene.has_bad:
            out.append(("line", (th.bad, LW_CARRIES * th.line, "-", False), say("ui.legend.bad", lang)))
    for r in scene.reasons:
        out.append(
            (
                "line",
                (th.stopped, LW_STOPPED * th.line * 1.3, REASON_STYLE.get(r, "--"), False),
                say("ui.legend.stopped", lang, reason=say(f"legend.{r}", lang)),
            )
        )
    for kind in scene.chip_kinds:
        out.append(("chip", kind, say(f"ui.chip.{kind}", lang)))
    if getattr(scene, "notation", False):
        out.append(("note", NOTATION_SAMPLE, say("ui.legend.notation", lang)))
    scale = getattr(scene, "magnitude_scale", None)
    if scale is not None:
        colours = [mix(scale.color(scale.lo * (scale.hi / scale.lo) ** (i / 9)), th.background, 0.6) for i in range(10)]
        ticks = scale.ticks()
        out.append(("scale", (colours, ticks[0][1], ticks[-1][1]), say("ui.legend.magnitude", lang)))
    return out


def _legend_layout(entries: list, inner: float, th: Theme, font: float) -> tuple[list[Swatch], float]:
    """Legend entries flowed into centred rows no wider than ``inner`` points; positions
    in points from the lower-left of the legend area (the caller shifts them)."""
    size = font - 0.5
    sample_w, sample_h, sep, col_gap = 20.0 * th.scale, 9.0 * th.scale, 4.0, 14.0 * th.scale
    items = []
    for kind, style, text in entries:
        if kind == "chip":
            w_sample = fonts.text_width("2.0", size - 1) + 2 * CHIP_PAD * (size - 1)
        elif kind == "note":  # a sample text in the gradients' colour
            w_sample = fonts.text_width(style, size)
        elif kind == "scale":  # the low end's label and ten colour steps; the high end's label leads the text
            colours, lo, hi = style
            w_sample = fonts.text_width(lo, size) + sep + 10 * 0.8 * sample_w
            text = f"{hi}  {text}"
        else:
            w_sample = sample_w
        text = fonts.fit(text, inner - w_sample - sep, size)
        items.append((kind, style, text, w_sample, w_sample + sep + fonts.text_width(text, size)))
    rows: list[tuple[list, float]] = []
    row: list = []
    used = 0.0
    for it in items:
        w = it[4]
        if row and used + col_gap + w > inner:
            rows.append((row, used))
            row, used = [], 0.0
        used += (col_gap if row else 0.0) + w
        row.append(it)
    if row:
        rows.append((row, used))
    line_h = max(sum(fonts.line_box(size)[:2]), sample_h) + 4.0
    out = []
    for r, (row, used) in enumerate(rows):
        y = (len(rows) - 1 - r) * line_h + line_h / 2  # centre of this row
        x = (inner - used) / 2
        for kind, style, text, w_sample, w in row:
            label = Label(x + w_sample + sep, y, text, size, color=th.text, ha="left")
            if kind == "box":
                fc, ec, lw, ls = style
                sw = Swatch("box", x, y - sample_h / 2, w_sample, sample_h, fc, ec, lw, ls, label)
            elif kind == "line":
                color, lw, ls, mark = style
                sw = Swatch("line", x, y, w_sample, 0.0, None, color, lw, ls, label, mark=mark)
            elif kind == "scale":  # a colour bar: its steps as boxes, the ends' labels beside it
                colours, lo, hi = style
                seg = 0.8 * sample_w
                x_bar = x + fonts.text_width(lo, size) + sep
                out.append(
                    Swatch(
                        "box",
                        x_bar,
                        y - sample_h / 2,
                        seg,
                        sample_h,
                        colours[0],
                        colours[0],
                        0.0,
                        "-",
                        Label(x, y, lo, size, color=th.text, ha="left"),
                    )
                )
                for i, colour in enumerate(colours[1:-1], start=1):
                    out.append(
                        Swatch(
                            "box",
                            x_bar + i * seg,
                            y - sample_h / 2,
                            seg,
                            sample_h,
                            colour,
                            colour,
                            0.0,
                            "-",
                            Label(x, y, "", size, color=th.text, ha="left"),
                        )
                    )
                sw = Swatch(
                    "box", x_bar + 9 * seg, y - sample_h / 2, seg, sample_h, colours[-1], colours[-1], 0.0, "-", label
                )
            elif kind == "note":
                chip = Label(x + w_sample / 2, y, style, size, color=th.grad_text)
                sw = Swatch(
                    "chip", x, y - sample_h / 2, w_sample, sample_h, None, th.grad_text, 0.0, "-", label, chip=chip
                )
            else:
                fc, ec, tc = th.chips[style]
                chip = Label(
                    x + w_sample / 2,
                    y,
                    "2.0" if style == "value" else ("x" if style == "input" else "∼"),
                    size - 1,
                    color=tc,
                    boxed=True,
                    fill=fc,
                    edge=ec,
                    pad=CHIP_PAD,
                )
                sw = Swatch("chip", x, y - sample_h / 2, w_sample, sample_h, fc, ec, 0.8, "-", label, chip=chip)
            out.append(sw)
            x += w + col_gap
    return out, len(rows) * line_h


class _LegendOnly:
    """What :func:`_legend_entries` reads, for a legend drawn without a scene; after
    :func:`_legend_layout_for`, the legend placed on its canvas."""

    def __init__(self, reasons, kinds, theme, lang):
        self.theme, self.lang = get_theme(theme), check_lang(lang)
        self.kinds, self.reasons = [k for k in kinds if k in self.theme.kinds], list(reasons)
        self.flow = True  # not None: the gradient-flow entries are listed
        self.has_bad = False
        self.chip_kinds: list[str] = []
        self.font = self.theme.font
        self.legend: list[Swatch] = []
        self.canvas = (0.0, 0.0)


def _legend_layout_for(size_in: tuple[float, float], reasons, kinds, *, theme=None, lang: str = DEFAULT):
    """A legend alone, laid out for a canvas of ``size_in`` inches and placed at its
    bottom: an object with ``legend`` (Swatches in pixels), ``canvas`` and ``theme``."""
    width_in, height_in = size_in
    spec = _LegendOnly(reasons, kinds, theme, lang)
    th = spec.theme
    margin = MARGIN * th.scale
    inner = width_in * 72 - 2 * margin
    swatches, _ = _legend_layout(_legend_entries(spec), inner, th, spec.font)
    px = DPI / 72.0
    for sw in swatches:
        for obj in (sw, sw.label, sw.chip):
            if obj is not None:
                obj.x, obj.y = obj.x * px + margin * px, obj.y * px + margin * px
        sw.w *= px
        sw.h *= px
    spec.legend = swatches
    spec.canvas = (width_in * DPI, height_in * DPI)
    return spec


# --------------------------------------------------------------------------- the scene


class Scene:
    """Every box, text, tag and arrow of one picture, placed, and styled for the current step.

    ``set_step(k)`` shows the backward pass after steps 0..k (None: the last step, the
    finished pass); ``set_grad_overrides`` replaces the gradient texts of some nodes
    (e.g. clipped values). Both only change the records' texts and colours; positions
    are fixed when the scene is made, with room for the longest text a label shows.

    What is shown comes from :func:`tapeviz.picture.visibility.decide` (``show_all``, ``collapsed``,
    ``functions``); positions and edge routes from ``layered_routes`` unless ``pos`` is
    given, in which case edges are drawn straight (the caller's positions carry no
    routes). ``theme``: "light", "dark", "projector" or a :class:`~tapeviz.picture.themes.Theme`;
    ``lang``: the language of every word on the picture.
    """

    def __init__(
        self,
        graph: TapeGraph,
        flow: GradientFlow | None = None,
        *,
        pos=None,
        routes=None,
        title: str | None = None,
        caption: str | None = None,
        collapsed="auto",
        functions=(),
        lang: str = DEFAULT,
        show_all: bool = False,
        theme: str | Theme | None = None,
        magnitudes=None,
        wrap: int | None = None,
        page: float = PAGE_WIDTH,
        depth: int | None = None,
        expand=(),
    ):
        if wrap is not None and (isinstance(wrap, bool) or not isinstance(wrap, int) or wrap < 2):
            raise ValueError(
                f"wrap={wrap!r}: give the most boxes a row may hold (an int of at least 2), "
                "or None to wrap only pictures wider than a screen"
            )
        self.wrap = wrap
        self.page = page  # pixels: the width the rows are chosen for (the explorer's is a notebook cell's)
        self.graph = graph
        self.lang = check_lang(lang)
        self.theme = th = get_theme(theme)
        self.show_all = show_all
        self.flow = flow
        self.functions = set(functions)
        unknown = self.functions - set(graph.functions())
        if unknown:
            raise ValueError(f"{sorted(unknown)} are not tf.function calls; those are: {graph.functions()}")
        bodies = {f: graph.function_body(f) for f in self.functions}
        if pos is None:
            self.display = decide(
                graph, flow, show_all=show_all, collapsed=collapsed, bodies=bodies, depth=depth, expand=expand
            )
        else:  # the caller's positions name every node
            self.display = collapse(graph.nx, False, bodies=bodies)
        dg = self.display.nx
        self.font = th.font
        self.unit = (INCH_X * th.scale * 72.0, INCH_Y * th.scale * 72.0)  # points per data unit
        self.targets = {self.display.of[t] for t in flow.target_nodes} if flow is not None else set()
        self.kinds = [k for k in th.kinds if any(d["kind"] == k for _, d in dg.nodes(data=True))]
        self.reasons = (
            sorted(
                {
                    flow.edge_reason[m].reason
                    for _, _, d in dg.edges(data=True)
                    for m in d.get("members", ())
                    if m in flow.edge_reason
                }
            )
            if flow is not None
            else []
        )
        self.chip_kinds = [
            k
            for k in ("value", "input", "random")
            if any(c.kind == k for _, d in dg.nodes(data=True) for c in d.get("chips") or ())
        ]
        self.custom_title = title
        self.title = title or ""
        self.caption = self._caption(caption)
        names = box_names(graph, self.display, self.lang)
        self._norms: dict = {}  # variable -> its gradient's text, norm and badness (see _variable_norm)
        if pos is not None:
            self._place(pos, routes or {}, {}, names, magnitudes)
            return
        pos, computed = layered_routes(dg)
        if routes is not None:
            self._place(pos, routes, {}, names, magnitudes)
            return
        n_columns = len({x for x, _ in pos.values()})
        if wrap is not None:
            choices = [wrap]
        elif n_columns <= PAGE_FIT_MOST:
            choices = row_lengths(n_columns)
        else:  # too long for a page at full size: bands as wide as a screen can show
            choices = [band_columns(n_columns, most=BAND_MOST)]
        # The fewest rows that fit the page (and are not a strip); else the best miss.
        column_px = INCH_X * th.scale * DPI
        best = None
        for i, columns in enumerate(choices):
            if i < len(choices) - 1 and min(columns, n_columns) * column_px > page:
                continue  # its boxes alone are wider than the page
            self._place(*wrap_bands(dg, pos, computed, columns=columns), names, magnitudes)
            width, height = self.canvas
            miss = (width > page, min(page, NARROW_PAGE) < width > MAX_RATIO * height, width)
            if not (miss[0] or miss[1]):
                return
            if best is None or miss < best[0]:
                best = (miss, columns)
        if best is not None and best[1] != columns:
            self._place(*wrap_bands(dg, pos, computed, columns=best[1]), names, magnitudes)

    def _place(self, pos, routes, lanes, names, magnitudes) -> None:
        """Place every record for these positions, routes and lanes, then the canvas around them."""
        graph, flow, th = self.graph, self.flow, self.theme
        self.pos = pos
        self.routes = routes  # (u, v) -> bend points; edges not in it run straight to their consumer's gap
        self.lanes = lanes  # (u, v) -> lanes back to the next band, where the layout wraps
        disp = self.display
        label_h = (_label_height(self.font - 1) + 1.0) / self.unit[1]
        plans = _edge_plans(graph, pos, self.routes, disp, self.lanes, label_h=label_h)
        self._rooms = {e: p.room * self.unit[0] - 2 * LABEL_PAD * (self.font - 1) - 1.0 for e, p in plans.items()}
        self.boxes = box_specs(graph, pos, targets=self.targets, display=disp, theme=th, names=names)
        self.labels = label_specs(
            graph, pos, fontsize=self.font, display=disp, theme=th, lang=self.lang, unit=self.unit, names=names
        )
        chip_rows = {
            n: trio[2].y - (sum(_box_lines(self.font, True, True)[2:]) / 2 + 1.0) / self.unit[1]
            for n, trio in self.labels.items()
        }
        self.chips = chip_specs(disp, pos, fontsize=self.font, theme=th, unit=self.unit, rows=chip_rows, lang=self.lang)
        self.grads = grad_specs(graph, pos, fontsize=self.font, display=disp, theme=th)
        self.arrows = arrow_specs(graph, pos, display=disp, plans=plans, theme=th, route=False)
        self.edge_labels = edge_label_specs(graph, pos, fontsize=self.font, display=disp, plans=plans, theme=th)
        self.magnitudes, self.magnitude_scale = self._magnitudes(magnitudes)
        self._texts: dict = {}  # fitted texts that no longer change once their gradient arrived
        self._grad_rooms = self._grad_allowance(plans, label_h)
        self.overrides: dict[Any, str] = {}
        # route each edge: it turns towards its port where its widest label begins
        for e, arrow in self.arrows.items():
            label = self.edge_labels[e]
            widest = self._rooms[e]
            if flow is not None and len(arrow.members) <= 1:
                self._style_edge(flow, e, arrow, label, flow.last_step, False)
                widest = fonts.text_width(label.text, label.size, style=label.style)
            width = (widest + 2 * LABEL_PAD * label.size + 2.0) / self.unit[0]
            arrow.path, _, arrow.mark_at = _edge_route(plans[e], width)
        self.step: int = 0
        self._laid_out = False  # the title's record is made with the canvas
        self.set_step(None)  # the finished pass: the texts the canvas must hold
        self.has_bad = any(v[1] for k, v in self._texts.items() if k[0] == "edge")
        self.notation = any(  # a shape and a norm written somewhere: the legend says how to read them
            VALUE_NORM in t.text or GRAD_NORM in t.text
            for t in (
                *(t for trio in self.labels.values() for t in trio),
                *self.grads.values(),
                *self.edge_labels.values(),
            )
        )
        self._layout_canvas()
        self._laid_out = True
        changed = self._clamp_grad_rooms()
        if flow is not None:  # restyle only what the layout changed: the gradient lines cut to the canvas, the title
            finished = self.step == flow.last_step
            for n in changed:
                self.grads[n].text, self.grads[n].color = self._node_grad_text(
                    flow, n, self.display.nx.nodes[n]["kind"], self.step, finished
                )
        self.set_title()

    def _magnitudes(self, items) -> tuple[dict, Any]:
        """{box: Magnitude} from per-variable Magnitudes (tapeviz.gradients.magnitude): a variable's box
        its own, a collapsed group's box its variables taken together; and the log scale
        they are coloured on (whole decades around the values)."""
        if not items or self.flow is None:
            return {}, None
        from ..gradients.magnitude import MagnitudeScale, group_by_layer

        per_box: dict = {}
        for m in items:
            box = self.display.of.get(m.node)
            if box is not None and box in self.boxes:
                per_box.setdefault(box, []).append(m)
        values = {}
        for box, ms in per_box.items():
            values[box] = ms[0] if len(ms) == 1 and ms[0].node == box else group_by_layer(ms, lambda m: "box")[0]
        return values, MagnitudeScale.fit(m.relative for m in values.values())

    def magnitude_fill(self, box) -> str:
        """The fill of a box coloured by its ||g||/||w||: the scale's colour, lightened
        towards the background so the box's words stay readable."""
        m = self.magnitudes[box]
        th = self.theme
        if m.status == "nonfinite":
            return mix(th.bad, th.background, 0.55)
        return mix(self.magnitude_scale.color(m.relative), th.background, 0.6)

    def _magnitude_arrived(self, fl: GradientFlow, box, k: int) -> bool:
        """Whether every gradient a box's magnitude is made of has arrived at step k."""
        members = [m for m in self.display.members.get(box, [box]) if self.graph.nx.nodes[m]["kind"] == "variable"]
        return all((s := fl.step_of(m)) is not None and s <= k for m in members)

    def _clamp_grad_rooms(self) -> list:
        """Keep every gradient line on the canvas, whatever it shows later (clipped values);
        returns the nodes whose room shrank."""
        (x0, x1), _ = self.limits
        changed = []
        for n, g in self.grads.items():
            edge = min(g.x - x0, x1 - g.x) * 2 * self.unit[0]
            if edge < self._grad_rooms[n]:
                self._grad_rooms[n] = edge
                changed.append(n)
        return changed

    def _grad_allowance(self, plans, label_h: float) -> dict:
        """Points of text each box's gradient line may take: the box's width, or more where
        the gaps beside it hold no edge label at that height (at most to the middle of each
        gap, which the neighbouring column's gradient line may use from the other side)."""
        unit_x = self.unit[0]
        size = self.font - 0.5
        text_h = sum(fonts.line_box(size)[:2]) / self.unit[1]
        rects: dict = {}  # column of the consumer -> reserved label rectangles (y0, y1, x0, x1), by y0
        pad = LABEL_PAD * (self.font - 1) / unit_x
        for p in plans.values():
            x1 = p.gap_right - (CONVERGE_ROOM if abs(p.port - p.end_y) > 1e-9 else TAIL) - p.col * p.room
            rects.setdefault(round(p.gap_right + BOX_W / 2), []).append(
                (p.port - label_h / 2, p.port + label_h / 2, x1 - p.room - pad, x1 + pad)
            )
        starts = {}
        for col, rs in rects.items():
            rs.sort()
            starts[col] = [r[0] for r in rs]
        out = {}
        most = 0.5 - 0.02  # half a column pitch, less a margin from the neighbour's text
        for n, g in self.grads.items():
            x, y_top = g.x, g.y
            y_low = y_top - text_h
            half = most
            c = round(x)
            for col in (c, c + 1):
                rs = rects.get(col)
                if not rs:
                    continue
                for r0, r1, x0, x1 in rs[bisect_left(starts[col], y_low - label_h) : bisect_left(starts[col], y_top)]:
                    if r1 <= y_low or r0 >= y_top:
                        continue
                    if x1 <= x:
                        half = min(half, x - x1)
                    elif x0 >= x:
                        half = min(half, x0 - x)
                    else:
                        half = 0.0
            out[n] = max(half, BOX_W / 2) * 2 * unit_x
        return out

    # -- the canvas: graph, title, caption and legend -------------------------------

    def _graph_extent(self) -> tuple[float, float, float, float]:
        """x0, x1, y0, y1 in data units holding every box, label, tag, bend and lane."""
        xs, ys = [], []
        for b in self.boxes.values():
            xs += [b.x, b.x + b.w]
            ys += [b.y, b.y + b.h]
        for g in self.grads.values():
            ys.append(g.y - sum(fonts.line_box(g.size)[:2]) / self.unit[1])
            if g.text:
                half = fonts.text_width(g.text, g.size) / 2 / self.unit[0]
                xs += [g.x - half, g.x + half]
        verts = [v for a in self.arrows.values() for v in (a.path.vertices if a.path is not None else (a.start, a.end))]
        if verts:
            arr = np.asarray(verts, float)
            xs += [float(arr[:, 0].min()), float(arr[:, 0].max())]
            ys += [float(arr[:, 1].min()), float(arr[:, 1].max())]
        half = (_label_height(self.font - 1) / 2 + 1.0) / self.unit[1]
        for e, t in self.edge_labels.items():
            ys += [t.y - half, t.y + half]
            xs.append(t.x - (self._rooms.get(e, 0.0) + 2 * LABEL_PAD * t.size) / self.unit[0])
        if not xs:
            return (0.0, 1.0, 0.0, 1.0)
        pad_x, pad_y = 0.04, 0.04
        return (min(xs) - pad_x, max(xs) + pad_x, min(ys) - pad_y, max(ys) + pad_y)

    def _layout_canvas(self) -> None:
        th = self.theme
        x0, x1, y0, y1 = self._graph_extent()
        graph_w = (x1 - x0) * self.unit[0]  # points
        graph_h = (y1 - y0) * self.unit[1]
        margin = MARGIN * th.scale
        width = max(graph_w + 2 * margin, 4.5 * 72 * th.scale)
        inner = width - 2 * margin
        # title: room for two lines (step titles change length; the picture must not jump)
        self.title_size = self.font + 2
        if self.custom_title is not None:
            self.title_lines = max(1, len(fonts.wrap(self.title, inner, self.title_size)))
        elif self.flow is not None:  # room for the longest of a few steps' titles (later ones are fitted to it)
            fl = self.flow
            sampled = {0, fl.last_step // 2, fl.last_step}
            self.title_lines = max(
                len(fonts.wrap(self._step_title(fl, k, k == fl.last_step), inner, self.title_size)) for k in sampled
            )
        else:
            self.title_lines = 1
        self.caption_size = self.font + 0.5
        caption_lines = fonts.wrap(self.caption, inner, self.caption_size) if self.caption else []
        title_pitch = self._pitch(self.title_size)
        caption_pitch = self._pitch(self.caption_size)
        caption_h = 4.0 + len(caption_lines) * caption_pitch if caption_lines else 0.0
        top = margin + self.title_lines * title_pitch + caption_h + 6.0
        legend, legend_h = _legend_layout(_legend_entries(self), inner, th, self.font)
        bottom = margin + legend_h + (6.0 if legend_h else 0.0)
        height = top + graph_h + bottom
        self.size = (width / 72.0, height / 72.0)
        px = DPI / 72.0
        self.canvas = (width * px, height * px)  # pixels at DPI
        gx = (width - graph_w) / 2
        self.frame = Frame((gx / width, bottom / height, graph_w / width, graph_h / height))
        self.limits = ((x0, x1), (y0, y1))
        self.px_per_unit = (self.unit[0] * px, self.unit[1] * px)
        self._origin = (gx * px - x0 * self.unit[0] * px, bottom * px - y0 * self.unit[1] * px)
        # chrome records, in canvas pixels (y up)
        W, H = self.canvas
        self.title_label = Label(W / 2, H - margin * px, "", self.title_size, color=th.text, va="top", gid="title")
        self._title_inner = inner
        cap_y = H - (margin + self.title_lines * title_pitch + 4.0) * px
        self.caption_label = Label(
            W / 2, cap_y, "\n".join(caption_lines), self.caption_size, color=th.muted, va="top", gid="caption"
        )
        self.legend = []
        for sw in legend:
            sw.x = sw.x * px + margin * px
            sw.y = sw.y * px + margin * px
            sw.w *= px
            sw.h *= px
            sw.label.x = sw.label.x * px + margin * px
            sw.label.y = sw.label.y * px + margin * px
            if sw.chip is not None:
                sw.chip.x = sw.chip.x * px + margin * px
                sw.chip.y = sw.chip.y * px + margin * px
            self.legend.append(sw)

    @staticmethod
    def _pitch(size: float) -> float:
        a, d, g = fonts.line_box(size)
        return a + d + g

    def data_to_px(self, x: float, y: float) -> tuple[float, float]:
        """A data point's position on the canvas, in pixels (y up)."""
        return (self._origin[0] + x * self.px_per_unit[0], self._origin[1] + y * self.px_per_unit[1])

    def text_rect(self, t: Label, *, px: bool = False) -> tuple[float, float, float, float]:
        """The canvas rectangle (x0, y0, x1, y1; pixels, y up) a label's text and background
        cover, measured as the SVG writer lays it out."""
        x, y = (t.x, t.y) if px else self.data_to_px(t.x, t.y)
        k = DPI / 72.0
        lines = t.text.split("\n") if t.text else [""]
        width = max(fonts.text_width(line, t.size, t.weight, t.style) for line in lines) * k
        a, d, g = (v * k for v in fonts.line_box(t.size, t.weight, t.style))
        g = g if len(lines) > 1 else 0.0
        a, d = a + g / 2, d + g / 2
        block = len(lines) * (a + d)
        top = {"top": y, "bottom": y + block, "baseline": y + block - d}.get(t.va, y + block / 2)
        x0 = x - (width / 2 if t.ha == "center" else width if t.ha == "right" else 0.0)
        pad = t.pad * t.size * k if t.boxed else 0.0
        return (x0 - pad, top - block - pad, x0 + width + pad, top + pad)

    def placed(self) -> dict[str, list]:
        """Everything placed on the canvas, for checking the placement: ``boxes`` as
        (node, rect) and ``texts`` as (what, node it belongs inside or None, rect), rects
        in canvas pixels (x0, y0, x1, y1; y up); only texts that show something."""
        boxes = []
        for n, b in self.boxes.items():
            (x0, y0), (x1, y1) = self.data_to_px(b.x, b.y), self.data_to_px(b.x + b.w, b.y + b.h)
            boxes.append((n, (x0, y0, x1, y1)))
        texts = []
        for n, trio in self.labels.items():
            texts += [(f"box text {n}", n, self.text_rect(t)) for t in trio if t.text]
            texts += [(f"chip {n}", n, self.text_rect(t)) for t in self.chips.get(n, ()) if t.text]
            if self.grads[n].text:
                texts.append((f"gradient {n}", None, self.text_rect(self.grads[n])))
        texts += [(f"edge label {e}", None, self.text_rect(t)) for e, t in self.edge_labels.items() if t.text]
        for what, t in (("title", self.title_label), ("caption", self.caption_label)):
            if t.text:
                texts.append((what, None, self.text_rect(t, px=True)))
        for sw in self.legend:
            texts.append((f"legend {sw.label.text}", None, self.text_rect(sw.label, px=True)))
            if sw.chip is not None:  # a "chip" swatch: its sample is a tag
                sample = self.text_rect(sw.chip, px=True)
            elif sw.kind == "line":
                half = max(sw.lw * DPI / 72.0, MARK_SIZE * self.theme.line * DPI / 72.0 if sw.mark else 0.0) / 2
                sample = (sw.x, sw.y - half, sw.x + sw.w, sw.y + half)
            else:
                sample = (sw.x, sw.y, sw.x + sw.w, sw.y + sw.h)
            texts.append((f"legend sample {sw.label.text}", None, sample))
        return {"boxes": boxes, "texts": texts}

    # -- texts -----------------------------------------------------------------------

    def _caption(self, caption: str | None) -> str:
        notes = [caption] if caption else []
        disp = self.display
        if disp.collapsed:
            calls = sum(1 for _, d in disp.nx.nodes(data=True) if d.get("group_kind") == "api")
            notes.append(
                say(
                    "ui.note.collapsed",
                    self.lang,
                    layers=len(disp.collapsed) - calls,
                    calls=calls,
                    total=self.graph.nx.number_of_nodes(),
                )
            )
        if disp.hidden or disp.folded:
            target = self.graph.display_name(self.flow.target_nodes[0]) if self.flow is not None else ""
            notes.append(
                say("ui.note.hidden", self.lang, hidden=disp.n_hidden_ops, folded=len(disp.folded), target=target)
            )
        budget = getattr(self.graph, "budget_note", None)
        if budget:
            notes.append(budget)
        return "\n".join(notes)

    @property
    def layers(self) -> list[str]:
        """Names of the groups (layers, TF API calls) this picture can collapse or expand."""
        return list(self.display.group_names)

    @property
    def n_steps(self) -> int:
        """How many pictures the backward pass has: steps 0 .. n_steps - 1 (the last is the finished pass)."""
        return len(self.flow.steps) if self.flow is not None else 0

    def set_grad_overrides(self, texts: Mapping[Any, str]) -> None:
        """Show these texts as the gradient of some nodes (e.g. after clipping)."""
        self.overrides = dict(texts)
        self.set_step(self.step)

    def _fit_value(self, value, room: float, size: float, prefix: str = "") -> str:
        """``prefix + value`` in ``room`` points: the value as written, else its shape and
        norm, else cut with an ellipsis."""
        text = prefix + format_value(value, norm=GRAD_NORM)
        if fonts.text_width(text, size) <= room:
            return text
        if GRAD_NORM not in text:  # (a shape and norm already: _compact would write the same)
            text = prefix + _compact(value)
        if fonts.text_width(text, size) <= room or GRAD_NORM not in text:
            return fonts.fit(text, room, size)
        return fonts.fit(prefix + text[text.index(GRAD_NORM) :], room, size)  # the norm alone: the shape is on the box

    def set_step(self, step: int | None) -> None:
        """Style every record for the flow as it stands after steps 0..`step` (None: the
        last step, the finished pass). A step outside the pass is refused."""
        fl = self.flow
        if fl is None:
            return
        k = fl.check_step(step)
        self.step = k
        finished = k == fl.last_step
        disp = self.display
        th = self.theme
        active_node = disp.of.get(fl.steps[k].node)
        active_edges = disp.display_edges_of(fl.steps[k].edges)
        for e, arrow in self.arrows.items():
            self._style_edge(fl, e, arrow, self.edge_labels[e], k, e in active_edges)
        dg = disp.nx
        for n, box in self.boxes.items():
            kind = dg.nodes[n]["kind"]
            grad = self.grads[n]
            grad.text, grad.color = self._node_grad_text(fl, n, kind, k, finished)
            if n in self.magnitudes:  # coloured once its gradient is complete: never ahead of the pass
                arrived = self._magnitude_arrived(fl, n, k)
                box.fc = self.magnitude_fill(n) if arrived else th.kinds.get(kind, th.kinds["op"])[0]
            if n == active_node:
                box.ec, box.lw = th.active, LW_ACTIVE * th.line
            elif n in self.targets:
                box.ec, box.lw = th.target, LW_TARGET * th.line
            else:
                box.ec, box.lw = th.kinds.get(kind, th.kinds["op"])[1], LW_BOX * th.line
        self.title = self.custom_title or self._step_title(fl, k, finished)
        if self._laid_out:  # (the title's record is made when the canvas is laid out)
            self.set_title()

    def set_title(self) -> None:
        """Write ``self.title`` into the title's record: wrapped to the canvas, cut to the lines it has."""
        lines = fonts.wrap(self.title, self._title_inner, self.title_size)
        if len(lines) > self.title_lines:
            rest = " ".join(lines[self.title_lines - 1 :])
            lines = lines[: self.title_lines - 1] + [fonts.fit(rest, self._title_inner, self.title_size)]
        self.title_label.text = "\n".join(lines)

    def _style_edge(self, fl: GradientFlow, e, arrow: Arrow, text: Label, k: int, active: bool) -> None:
        th = self.theme
        members = arrow.members
        stops = [fl.edge_reason.get(m) for m in members]
        room = self._rooms[e]
        arrow.marks = []
        first = stops[0] if stops else None
        if first is not None and all(r is not None for r in stops):
            arrow.color, arrow.lw = th.stopped, LW_STOPPED * th.line
            arrow.linestyle = REASON_STYLE.get(first.reason, "--")
            code = say(f"ui.edge.{first.reason.value}", self.lang)
            full = code if len(members) == 1 else say("ui.edge.stopped_n", self.lang, code=code, n=len(members))
            text.text = fonts.fit(full, room, text.size, style="italic")
            text.color, text.style = th.stop_text, "italic"
            return
        carried = [m for m in members if fl.arrived(m, k)]
        arrow.linestyle = "-"
        text.style = "normal"
        if not carried:
            arrow.color, arrow.lw = th.forward, LW_EDGE * th.line
            text.text = ""
            return
        key = ("edge", e, len(carried))
        cached = self._texts.get(key)
        if cached is None:
            if len(members) == 1:
                value = fl.edge_grad(*carried[0])
                cached = (self._fit_value(value, room, text.size), is_bad(value))
            elif len({self.graph.nx.edges[m]["tensor"] for m in members}) > 1:  # several tensors: no one sum
                values = [fl.edge_grad(*m) for m in carried]
                cached = (
                    fonts.fit(say("ui.edge.parts", self.lang, n=len(carried)), room, text.size),
                    any(is_bad(v) for v in values),
                )
            elif len(carried) == len(members):  # every use of the tensor has sent its part: TF's sum (add_n)
                value = fl.total_along(members)
                values = [fl.edge_grad(*m) for m in carried]
                bad = is_bad(value) or any(is_bad(v) for v in values)
                cached = (self._fit_value(value, room, text.size, say("ui.edge.sum", self.lang)), bad)
            else:
                values = [fl.edge_grad(*m) for m in carried]
                cached = (
                    fonts.fit(say("ui.edge.arriving", self.lang, got=len(carried), n=len(members)), room, text.size),
                    any(is_bad(v) for v in values),
                )
            self._texts[key] = cached
        text.text, bad = cached
        arrow.color = th.bad if bad else (th.active if active else th.flowing)
        arrow.lw = (LW_ACTIVE_EDGE if active else LW_CARRIES) * th.line
        text.color = th.bad if bad else th.grad_text
        if active and arrow.mark_at is not None:
            arrow.marks = [arrow.mark_at]
            arrow.mark_color = th.active

    def _node_grad_text(self, fl: GradientFlow, n, kind: str, k: int, finished: bool) -> tuple[str, str]:
        g = self.graph
        th = self.theme
        room = self._grad_rooms[n]
        size = self.grads[n].size
        if kind == "inner":
            return "", th.grad_text
        if kind == "layer":
            parts, bad, squares, clipped = [], False, 0.0, False
            for m in self.display.members[n]:
                if g.nx.nodes[m]["kind"] != "variable":
                    continue
                name = g.nx.nodes[m]["name"].split("/")[-1]
                if m in self.overrides:
                    parts.append(f"{name} {self.overrides[m].removeprefix('∂ ')}")
                    clipped = True
                    continue
                s = fl.step_of(m)
                if s is None or s > k:
                    continue
                text, norm, var_bad = self._variable_norm(fl, m)
                bad = bad or var_bad
                parts.append(f"{name} {text}")
                squares += norm * norm
            text = (GRAD_NORM + " " + " · ".join(parts)) if parts else ""
            if len(parts) > 1 and not clipped and fonts.text_width(text, size) > room:
                # too many to list: their norm taken together (a group's variables as one vector)
                text = say("ui.group.grad_total", self.lang, norm=f"{math.sqrt(squares):.3g}", n=len(parts))
            return fonts.fit(text, room, size), (th.bad if bad else th.grad_text)
        if n in self.overrides:
            return fonts.fit(self.overrides[n], room, size), th.grad_text
        s = fl.step_of(n)
        if s is not None and s <= k:
            key = ("node", n, room)
            cached = self._texts.get(key)
            if cached is None:
                if n in fl.target_nodes:
                    value = fl.steps[0].grad
                elif kind in ("variable", "watched", "input", "constant") or fl.grad(n) is not None:
                    value = fl.grad(n)
                else:
                    value = fl.steps[s].grad
                value = value if not isinstance(value, list) else value[0]
                if value is None:
                    text = grad_text(None)
                else:
                    text = self._fit_value(np.asarray(value), room, size, "∂ ")
                cached = self._texts[key] = (text, th.bad if is_bad(value) else th.grad_text)
            return cached
        if n in fl.node_reason and finished and kind in ("variable", "watched", "input"):
            return grad_text(None), th.stop_text
        return "", th.grad_text

    def _variable_norm(self, fl: GradientFlow, m) -> tuple[str, float, bool]:
        """A variable's gradient as a group's line shows it (its value if one number, else its
        norm), the norm, and whether it holds NaN / Inf; computed once per scene (ResNet50's
        23 M gradient numbers took 0.8 s a picture when summed again for every step)."""
        got = self._norms.get(m)
        if got is None:
            value = fl.grad(m)
            if value is None:
                got = ("None", 0.0, False)
            else:
                a = np.asarray(value)
                norm = float(np.linalg.norm(a))
                bad = not math.isfinite(norm) and is_bad(a)
                got = (format_value(a) if a.size == 1 else f"{norm:.3g}", norm, bad)
            self._norms[m] = got
        return got

    def _step_title(self, fl: GradientFlow, k: int, finished: bool) -> str:
        g = fl.graph
        target = localize(g.display_name(fl.target_nodes[0]), self.lang)
        st = fl.steps[k]
        n = fl.last_step
        if k == 0:
            title = say(
                "ui.step.start", self.lang, k=k, n=n, target=target, value=format_value(st.grad, norm=GRAD_NORM)
            )
        else:
            grad = format_value(st.grad if not isinstance(st.grad, list) else st.grad[0], norm=GRAD_NORM)
            to = sorted({localize(g.display_name(u), self.lang) for u, _, _ in st.edges})
            node = localize(g.display_name(st.node), self.lang)
            box = self.display.of.get(st.node, st.node)
            if box != st.node and self.display.nx.nodes[box].get("kind") == "layer":
                # an op inside a collapsed box: say which box the reader sees it in
                group = node_title(g, box, self.display, self.lang)
                node = say("ui.step.in_group", self.lang, node=node, group=group)
            reads = g.nx.nodes[st.node].get("reads") or []
            if to:
                title = say("ui.step.passes", self.lang, k=k, n=n, node=node, value=grad, to=", ".join(to))
            elif len(reads) > 1 and fl.step_of(st.node) != k:
                # one read of a variable read several times: a part of its gradient
                title = say("ui.step.part", self.lang, k=k, n=n, node=node, value=grad, reads=len(reads))
            else:
                if len(reads) > 1:  # the last part: the total, as TF added it up
                    grad = format_value(fl.grad(st.node), norm=GRAD_NORM)
                title = say("ui.step.received", self.lang, k=k, n=n, node=node, value=grad)
        return title + say("ui.step.done", self.lang, target=target) if finished else title

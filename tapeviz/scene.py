"""Scene: what a picture of a tape shows, as plain data, before anything is drawn.

A Scene holds one record per box, text and arrow (position in data units, text,
colour, line width, dash) and restyles those records when the backward step or
the shown gradients change.  Two writers read it: ``render.py`` turns it into
matplotlib artists (for PNG, GIF and anyone who wants to restyle artists) and
``svg.py`` writes it straight to an SVG document.

Why a stage of its own: a matplotlib ``Text`` costs ~100 µs to create, which
made artist creation most of the time of a 1,000-op picture, yet an SVG file
or the explorer's canvas needs no artist at all.  Keeping the decisions here
(which colour means what, what each label says at step k) also means the PNG
and the SVG cannot disagree about them.

Nothing here computes a gradient: every number comes from the GradientFlow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
from matplotlib.path import Path

from .flow import GradientFlow
from .graph import TapeGraph, format_value
from .messages import DEFAULT, check_lang, localize, say
from .bands import band_columns, wrap_bands
from .layout import layered_routes
from .shown import Shown, collapse, decide

__all__ = ["Scene", "Box", "Label", "Arrow", "box_specs", "label_specs", "grad_specs", "arrow_specs",
           "edge_label_specs", "figure_size", "node_title", "node_subtitle", "node_value_text", "grad_text"]

# Geometry, in data units: one layer is INCH_X inches wide, one row INCH_Y inches tall.
INCH_X, INCH_Y = 2.3, 1.15
BOX_W, BOX_H = 0.74, 0.6  # node box, as a fraction of a layer / a row (layout.py keeps bends clear of it)
PARALLEL_GAP = 0.12  # vertical distance between the ends of parallel edges (x * x)
LABEL_PAD = 0.03  # between a routed edge's label and the end of the run it sits on
RETURN_PAD, RETURN_STEP = 0.05, 0.02  # an edge returning to the next band turns down this far right of the boxes
FONT = 8.0
DPI = 100
MAX_INCHES = 200.0  # a picture larger than this is shrunk to fit (PNGs are further limited in pixels: export.py)

KIND_STYLE = {
    "variable": dict(fc="#dbeafe", ec="#1d4ed8"),
    "watched": dict(fc="#dcfce7", ec="#15803d"),
    "constant": dict(fc="#f1f5f9", ec="#94a3b8"),
    "input": dict(fc="#f8fafc", ec="#94a3b8"),
    "op": dict(fc="#ffffff", ec="#334155"),
    "layer": dict(fc="#ede9fe", ec="#6d28d9"),
    "inner": dict(fc="#fefce8", ec="#a16207"),
}
KIND_NAMES = {"variable": "variable", "watched": "watched tensor", "constant": "constant", "input": "tensor from outside",
              "op": "op", "layer": "layer (collapsed)", "inner": "op inside a tf.function"}
C_FORWARD = "#64748b"
C_GRAD = "#ea580c"
C_ACTIVE = "#f59e0b"
C_STOP = "#a3a3a3"
C_BAD = "#dc2626"  # NaN / Inf gradients
C_TARGET = "#b91c1c"
C_GRADTEXT = "#9a3412"
C_STOPTEXT = "#737373"
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


@dataclass(slots=True)
class Label:
    """One text, anchored at (x, y) in data units; ``boxed`` puts it on a white
    rounded background (edge labels sit on top of arrows)."""

    x: float
    y: float
    text: str
    size: float
    color: str | None = None  # None: matplotlib's text colour
    ha: str = "center"
    va: str = "center"
    weight: str = "normal"
    style: str = "normal"
    boxed: bool = False
    gid: str | None = None


@dataclass(slots=True)
class Arrow:
    """An edge, producer → consumer.  Straight edges go from ``start`` to ``end``
    bent by ``rad`` (matplotlib's arc3); routed ones follow ``path``."""

    start: tuple[float, float]
    end: tuple[float, float]
    rad: float
    path: Path | None
    color: str
    lw: float
    linestyle: Any
    gid: str
    members: list = field(default_factory=list)  # the graph's edges this one stands for


# --------------------------------------------------------------------------- texts


def _short(text: str, n: int = 18) -> str:
    """Cut long labels; scoped names (``model/dense/kernel``) keep their informative tail."""
    if len(text) <= n:
        return text
    if "/" in text:
        return "…" + text[-(n - 1):]
    return text[: n - 1] + "…"


def is_bad(value) -> bool:
    """NaN or Inf anywhere in a float value (those are drawn red)."""
    if value is None:
        return False
    a = np.asarray(value)
    return a.dtype.kind in "fc" and not np.all(np.isfinite(a))


def node_title(graph: TapeGraph, node, display: Shown | None = None) -> str:
    """First line of a box: the user's name for it, else what it is."""
    if display is not None and display.nx.nodes[node].get("kind") == "layer":
        dd = display.nx.nodes[node]
        if dd.get("group_kind") == "api":
            return dd["layer"].removeprefix("tf.")
        name = dd["layer"].split("/")[-1]
        return f"{name} (call {dd['call'] + 1})" if dd.get("call") else name
    if display is not None and display.nx.nodes[node].get("kind") == "inner":
        return display.nx.nodes[node]["op_type"]
    d = graph.nx.nodes[node]
    if d.get("name"):
        return d["name"]
    if d["kind"] == "op":
        return d.get("function") or d["op_type"]
    return "constant" if d["kind"] == "constant" else d["label"]


def _op_label(d) -> str:
    """`Mul`, or `tf.function f` for a function call / custom-gradient entry."""
    return f"{d['via']} {d['function']}" if d.get("via") else d["op_type"]


def node_subtitle(graph: TapeGraph, node, display: Shown | None = None) -> str:
    """Middle line: the op type when the title is the user's name for the op."""
    if display is not None and display.nx.nodes[node].get("kind") == "layer":
        members = display.members[node]
        ops = sum(1 for m in members if graph.nx.nodes[m]["kind"] == "op")
        what = "tf API" if display.nx.nodes[node].get("group_kind") == "api" else "layer"
        return f"{what} · {ops} ops"
    if display is not None and display.nx.nodes[node].get("kind") == "inner":
        fn = display.nx.nodes[node]["function"]
        return f"in tf.function {graph.nx.nodes[fn].get('function', '')}"
    d = graph.nx.nodes[node]
    if d["kind"] != "op":
        return ""
    if d.get("name"):
        return _op_label(d)
    return d.get("via") or ""


def node_value_text(graph: TapeGraph, node, display: Shown | None = None) -> str:
    """Bottom line: the forward value (or its summary); a layer shows its output's."""
    dd = display.nx.nodes[node] if display is not None else {}
    if dd.get("kind") == "layer":
        ops = [m for m in display.members[node] if graph.nx.nodes[m]["kind"] == "op"]
        node = ops[-1] if ops else display.members[node][-1]
    elif dd.get("kind") == "inner":
        # TF keeps no per-op values inside a function call; the ops it returns have the call's outputs
        outs = graph.nx.nodes[dd["function"]].get("outputs") or []
        j = dd.get("ret_index")
        if j is None or j >= len(outs):
            return ""
        info = graph.tensors[outs[j]]
        return format_value(info.value, info.summary)
    info = graph.output_info(node)
    return "" if info is None else format_value(info.value, info.summary)


def grad_text(value) -> str:
    """What a box shows under it for the gradient that reached it."""
    return "∂ " + ("None" if value is None else format_value(np.asarray(value)))


def _norm_text(value) -> str:
    if value is None:
        return "None"
    a = np.asarray(value)
    return format_value(a) if a.size == 1 else f"{float(np.linalg.norm(a)):.3g}"


# --------------------------------------------------------------------------- geometry


def _nodes(graph: TapeGraph, display: Shown | None):
    return (display.nx if display is not None else graph.nx).nodes(data=True)


def _extent_ys(pos, routes=None) -> list[float]:
    """Every y the drawing uses: node centres and the bend points of routed edges."""
    ys = [p[1] for p in pos.values()]
    for bends in (routes or {}).values():
        ys.extend(b[1] for b in bends)
    return ys


def figure_size(pos: Mapping[Any, tuple[float, float]], *, max_inches: float = MAX_INCHES,
                routes=None) -> tuple[float, float]:
    """Inches so that one layer / one row keeps a constant, legible size."""
    if not pos:
        return (4.0, 3.0)
    xs = [p[0] for p in pos.values()]
    ys = _extent_ys(pos, routes)
    w = (max(xs) - min(xs) + 1.0) * INCH_X + 0.6
    h = (max(ys) - min(ys) + 1.0) * INCH_Y + 1.6
    return (min(max(w, 4.5), max_inches), min(max(h, 3.2), max_inches))


@dataclass(frozen=True)
class Frame:
    """Where the graph, the title and the caption sit in the figure (fractions of it)."""

    axes: tuple[float, float, float, float]  # left, bottom, width, height
    title_y: float
    caption_y: float


def frame(size: tuple[float, float], *, caption_lines: int = 1, legend_rows: int = 1) -> Frame:
    """The figure's margins: fixed fractions for small pictures, fixed inches (what the
    title, caption and legend need) for tall ones, which would otherwise spend inches of
    empty paper above and below the graph."""
    h = size[1]
    top = min(0.09, (0.36 + 0.13 * max(caption_lines - 1, 0)) / h)
    bottom = min(0.09, (0.2 + 0.17 * legend_rows) / h)
    return Frame((0.01, bottom, 0.98, 1.0 - top - bottom), 1.0 - min(0.015, 0.06 / h), 1.0 - min(0.065, 0.26 / h))


def data_limits(pos, routes=None) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """(xlim, ylim) that hold every box, its gradient text and every routed bend."""
    if not pos:
        return None
    xs = [p[0] for p in pos.values()]
    ys = _extent_ys(pos, routes)
    return (min(xs) - 0.5, max(xs) + 0.5), (min(ys) - 0.65, max(ys) + 0.5)


def _routed_path(a, b, bends, shift: float, lanes=()) -> tuple[Path, tuple[float, float, str]]:
    """Path from ``a`` to ``b`` through the bend points; also the label anchor (x, y, ha).

    The edge crosses each column it passes horizontally at its bend point's
    height, from the left side of that column's boxes to their right side
    (layout.py puts bend points between boxes, so this stays off them), and
    changes height only in the empty space between columns, with an S-curve
    that leaves and enters horizontally.  Where the layout wraps into bands
    (``lanes``, from :func:`tapeviz.bands.wrap_bands`) the edge leaves its
    band to the right, runs back along its lane under the band and enters the
    next band from the left, in straight legs outside every column.  The label
    anchor is the right end of the last horizontal run: a right-aligned text
    there sits on the straight stretch just before the final bend into the
    consumer, in the free band between boxes, where a long value has room to
    be read.
    """
    stops = [a]
    for bx, by in bends:
        stops += [(bx - BOX_W / 2, by + shift), (bx + BOX_W / 2, by + shift)]
    stops.append(b)
    returns = iter(lanes)
    verts, codes = [a], [Path.MOVETO]
    for i in range(0, len(stops) - 1, 2):
        (x0, y0), (x1, y1) = stops[i], stops[i + 1]
        if i:  # the horizontal run through the column before this gap
            verts.append((x0, y0))
            codes.append(Path.LINETO)
        if x1 < x0:  # back to the start of the next band, along this edge's lane
            lane, k = next(returns)
            lane += shift
            right, left = x0 + RETURN_PAD + k % 4 * RETURN_STEP, x1 - RETURN_PAD - k % 4 * RETURN_STEP
            verts += [(right, y0), (right, lane), (left, lane), (left, y1), (x1, y1)]
            codes += [Path.LINETO] * 5
            label = (left + 4 * LABEL_PAD, lane, "left")  # on the lane: the last run with room for a value
        else:
            c = (x1 - x0) / 2
            verts += [(x0 + c, y0), (x1 - c, y1), (x1, y1)]
            codes += [Path.CURVE4] * 3
            label = (x0 - LABEL_PAD, y0, "right")
    return Path(verts, codes), label


def _edge_geometry(graph: TapeGraph, pos, routes=None, display: Shown | None = None, lanes=None):
    """Per edge key: (start, end, arc3 rad, path or None, (label x, label y, label ha)).

    Edges with an entry in ``routes`` get a path through their bend points (and
    their ``lanes`` back to the next band, if the layout wraps); the others are
    drawn straight (parallel ones fanned out as arcs).
    """
    geo = {}
    g = display.nx if display is not None else graph.nx
    for u, v in set(g.edges()):
        keys = sorted(g[u][v], key=str)
        n = len(keys)
        (x0, y0), (x1, y1) = pos[u], pos[v]
        bends = routes.get((u, v)) if routes else None
        lane = lanes.get((u, v), ()) if lanes else ()
        for i, k in enumerate(keys):
            off = (i - (n - 1) / 2) * PARALLEL_GAP
            rad = (i - (n - 1) / 2) * 0.35
            a, b = (x0 + BOX_W / 2, y0 + off), (x1 - BOX_W / 2, y1 + off)
            if bends or lane:
                # Parallel routes run closer together than their ends: bend
                # points between boxes may have little room to spare.
                path, mid = _routed_path(a, b, bends or [], off / 2, lane)
            else:
                path = None
                mx, my = (a[0] + b[0]) / 2, (a[1] + b[1]) / 2
                # arc3 bends the midpoint sideways by rad * length / 2
                dx, dy = b[0] - a[0], b[1] - a[1]
                mid = (mx + rad * dy / 2, my - rad * dx / 2, "center")
            geo[(u, v, k)] = (a, b, rad, path, mid)
    return geo


# --------------------------------------------------------------------------- records of a graph


def box_specs(graph: TapeGraph, pos, *, targets=(), display: Shown | None = None) -> dict[Any, Box]:
    """One rounded box per node, styled by kind; targets get a red border."""
    boxes = {}
    for n, d in _nodes(graph, display):
        x, y = pos[n]
        style = KIND_STYLE.get(d["kind"], KIND_STYLE["op"])
        target = n in targets
        boxes[n] = Box(x - BOX_W / 2, y - BOX_H / 2, BOX_W, BOX_H, style["fc"],
                       C_TARGET if target else style["ec"], LW_TARGET if target else LW_BOX, f"node-{n}")
    return boxes


def label_specs(graph: TapeGraph, pos, *, fontsize: float = FONT,
                display: Shown | None = None) -> dict[Any, tuple[Label, Label, Label]]:
    """(title, subtitle, forward value) texts inside each box."""
    labels = {}
    for n, _ in _nodes(graph, display):
        x, y = pos[n]
        sub = node_subtitle(graph, n, display)
        top = y + BOX_H * (0.24 if sub else 0.15)
        labels[n] = (
            Label(x, top, _short(node_title(graph, n, display), 20), fontsize, weight="bold"),
            Label(x, y + BOX_H * 0.02, sub, fontsize - 1, color="#64748b", style="italic"),
            Label(x, y - BOX_H * 0.24, _short(node_value_text(graph, n, display), 28), fontsize - 0.5,
                  color="#334155"),
        )
    return labels


def grad_specs(graph: TapeGraph, pos, *, fontsize: float = FONT, display: Shown | None = None) -> dict[Any, Label]:
    """The gradient reaching each node, under its box (empty until the flow fills it)."""
    return {n: Label(pos[n][0], pos[n][1] - BOX_H / 2 - 0.07, "", fontsize - 0.5, color=C_GRADTEXT, va="top",
                     gid=f"grad-{n}")
            for n, _ in _nodes(graph, display)}


def arrow_specs(graph: TapeGraph, pos, *, routes=None, display: Shown | None = None,
                geometry=None) -> dict[tuple, Arrow]:
    """One arrow per edge, in the forward direction; routed edges follow their bends."""
    geo = geometry if geometry is not None else _edge_geometry(graph, pos, routes, display)
    g = display.nx if display is not None else graph.nx
    arrows = {}
    for u, v, k, d in g.edges(keys=True, data=True):
        a, b, rad, path, _ = geo[(u, v, k)]
        arrows[(u, v, k)] = Arrow(a, b, rad, path, C_FORWARD, LW_EDGE, "-", f"edge-{u}-{v}-{k}",
                                  list(d.get("members", [(u, v, k)])))
    return arrows


def edge_label_specs(graph: TapeGraph, pos, *, fontsize: float = FONT, routes=None,
                     display: Shown | None = None, geometry=None) -> dict[tuple, Label]:
    """A text on each edge for the gradient (or stop reason) it carries: straight
    edges at their middle, routed ones on their last horizontal stretch."""
    geo = geometry if geometry is not None else _edge_geometry(graph, pos, routes, display)
    return {e: Label(mx, my, "", fontsize - 1, color=C_GRADTEXT, ha=ha, boxed=True)
            for e, (*_, (mx, my, ha)) in geo.items()}


# --------------------------------------------------------------------------- the scene


class Scene:
    """Every box, text and arrow of one picture, styled for the current step.

    ``set_step(k)`` shows the backward pass after k steps (None: all of it);
    ``set_grad_overrides`` replaces the gradient texts of some nodes (e.g.
    clipped values).  Both only change the records' texts and colours.

    Graphs with more than ``layout.COLLAPSE_THRESHOLD`` ops show each layer
    (name scope) as one box with its variables' gradient norms; ``collapsed=``
    picks layers by name (True/False for all/none).  Positions and edge routes
    come from ``layered_routes`` unless ``pos`` is given, in which case edges
    are drawn straight (the caller's positions carry no routes).
    """

    def __init__(self, graph: TapeGraph, flow: GradientFlow | None = None, *, pos=None, routes=None,
                 title: str | None = None, caption: str | None = None, collapsed="auto", functions=(),
                 lang: str = DEFAULT, show_all: bool = False, theme: str = "light"):
        self.graph = graph
        self.lang = check_lang(lang)
        self.theme = theme
        self.show_all = show_all
        self.flow = flow
        self.functions = set(functions)
        unknown = self.functions - set(graph.functions())
        if unknown:
            raise ValueError(f"{sorted(unknown)} are not tf.function calls; those are: {graph.functions()}")
        bodies = {f: graph.function_body(f) for f in self.functions}
        if pos is None:
            self.display = decide(graph, flow, show_all=show_all, collapsed=collapsed, bodies=bodies)
        else:  # the caller's positions name every node
            self.display = collapse(graph.nx, False, bodies=bodies)
        dg = self.display.nx
        self.lanes: dict = {}  # (u, v) -> lanes back to the next band, where the layout wraps
        if pos is None:
            pos, computed = layered_routes(dg)
            if routes is None:
                n_columns = len({x for x, _ in pos.values()})
                pos, routes, self.lanes = wrap_bands(dg, pos, computed, columns=band_columns(n_columns))
        self.pos = pos
        self.routes = routes or {}  # (u, v) -> bend points; edges not in it are drawn straight
        self.size = figure_size(self.pos, routes=self.routes)
        self.limits = data_limits(self.pos, self.routes)
        self.targets = {self.display.of[t] for t in flow.target_nodes} if flow is not None else set()
        self.kinds = [k for k in KIND_STYLE if any(d["kind"] == k for _, d in dg.nodes(data=True))]
        self.reasons = sorted({flow.edge_reason[m].reason for _, _, d in dg.edges(data=True)
                               for m in d.get("members", ()) if m in flow.edge_reason}) if flow is not None else []
        disp = self.display
        geo = _edge_geometry(graph, pos, self.routes, disp, self.lanes)
        self.boxes = box_specs(graph, pos, targets=self.targets, display=disp)
        self.labels = label_specs(graph, pos, display=disp)
        self.grads = grad_specs(graph, pos, display=disp)
        self.arrows = arrow_specs(graph, pos, display=disp, geometry=geo)
        self.edge_labels = edge_label_specs(graph, pos, display=disp, geometry=geo)
        self.custom_title = title
        self.title = title or ""
        self.caption = self._caption(caption)
        self.frame = frame(self.size, caption_lines=len(self.caption.split("\n")) if self.caption else 0,
                           legend_rows=-(-(len(self.kinds) + 1 + len(self.reasons)) // 4))
        self.overrides: dict[Any, str] = {}
        self.step: int = 0
        self.set_step(None)

    def _caption(self, caption: str | None) -> str:
        notes = [caption] if caption else []
        disp = self.display
        if disp.collapsed:
            calls = sum(1 for _, d in disp.nx.nodes(data=True) if d.get("group_kind") == "api")
            notes.append(say("ui.note.collapsed", self.lang, layers=len(disp.collapsed) - calls, calls=calls,
                             total=self.graph.nx.number_of_nodes()))
        if disp.hidden or disp.folded:
            target = self.graph.display_name(self.flow.target_nodes[0]) if self.flow is not None else ""
            notes.append(say("ui.note.hidden", self.lang, hidden=disp.n_hidden_ops, folded=len(disp.folded),
                             target=target))
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
        active_node = disp.of.get(fl.steps[k].node)
        active_edges = disp.display_edges_of(fl.steps[k].edges)
        for e, arrow in self.arrows.items():
            self._style_edge(arrow, self.edge_labels[e], k, e in active_edges)
        dg = disp.nx
        for n, box in self.boxes.items():
            kind = dg.nodes[n]["kind"]
            grad = self.grads[n]
            grad.text, grad.color = self._node_grad_text(n, kind, k, finished)
            if n == active_node:
                box.ec, box.lw = C_ACTIVE, LW_ACTIVE
            elif n in self.targets:
                box.ec, box.lw = C_TARGET, LW_TARGET
            else:
                box.ec, box.lw = KIND_STYLE.get(kind, KIND_STYLE["op"])["ec"], LW_BOX
        self.title = self.custom_title or self._step_title(k, finished)

    def _style_edge(self, arrow: Arrow, text: Label, k: int, active: bool) -> None:
        fl = self.flow
        members = arrow.members
        stops = [fl.edge_reason.get(m) for m in members]
        if members and all(r is not None for r in stops):
            arrow.color, arrow.linestyle, arrow.lw = C_STOP, REASON_STYLE.get(stops[0].reason, "--"), LW_STOPPED
            code = stops[0].reason.value
            text.text = code if len(members) == 1 else f"{code} ({len(members)})"
            text.color, text.style = C_STOPTEXT, "italic"
            return
        carried = [m for m in members if fl.arrived(m, k)]
        arrow.linestyle = "-"
        text.style = "normal"
        if not carried:
            arrow.color, arrow.lw = C_FORWARD, LW_EDGE
            text.text = ""
            return
        values = [fl.edge_grad(*m) for m in carried]
        bad = any(is_bad(v) for v in values)
        arrow.color = C_BAD if bad else (C_ACTIVE if active else C_GRAD)
        arrow.lw = LW_ACTIVE_EDGE if active else LW_CARRIES
        text.text = format_value(values[0]) if len(values) == 1 else f"{len(values)} gradients"
        text.color = C_BAD if bad else C_GRADTEXT

    def _node_grad_text(self, n, kind: str, k: int, finished: bool) -> tuple[str, str]:
        fl = self.flow
        g = self.graph
        if kind == "inner":
            return "", C_GRADTEXT
        if kind == "layer":
            parts, bad = [], False
            for m in self.display.members[n]:
                if g.nx.nodes[m]["kind"] != "variable":
                    continue
                name = g.nx.nodes[m]["name"].split("/")[-1]
                if m in self.overrides:
                    parts.append(f"{name} {self.overrides[m].removeprefix('∂ ')}")
                    continue
                s = fl.step_of(m)
                if s is None or s > k:
                    continue
                value = fl.grad(m)
                bad = bad or is_bad(value)
                parts.append(f"{name} {_norm_text(value)}")
            return ("∂‖·‖ " + " · ".join(parts) if parts else ""), (C_BAD if bad else C_GRADTEXT)
        if n in self.overrides:
            return self.overrides[n], C_GRADTEXT
        s = fl.step_of(n)
        if s is not None and s <= k:
            if n in fl.target_nodes:
                value = fl.steps[0].grad
            elif kind in ("variable", "watched", "input", "constant") or fl.grad(n) is not None:
                value = fl.grad(n)
            else:
                value = fl.steps[s].grad
            value = value if not isinstance(value, list) else value[0]
            return grad_text(value), (C_BAD if is_bad(value) else C_GRADTEXT)
        if n in fl.node_reason and finished and kind in ("variable", "watched", "input"):
            return "∂ None", C_STOPTEXT
        return "", C_GRADTEXT

    def _step_title(self, k: int, finished: bool) -> str:
        fl = self.flow
        g = fl.graph
        target = localize(g.display_name(fl.target_nodes[0]), self.lang)
        st = fl.steps[k]
        n = fl.last_step
        if k == 0:
            title = say("ui.step.start", self.lang, k=k, n=n, target=target, value=format_value(st.grad))
        else:
            grad = format_value(st.grad if not isinstance(st.grad, list) else st.grad[0])
            to = sorted({localize(g.display_name(u), self.lang) for u, _, _ in st.edges})
            node = localize(g.display_name(st.node), self.lang)
            if to:
                title = say("ui.step.passes", self.lang, k=k, n=n, node=node, value=grad, to=", ".join(to))
            else:
                title = say("ui.step.received", self.lang, k=k, n=n, node=node, value=grad)
        return title + say("ui.step.done", self.lang) if finished else title

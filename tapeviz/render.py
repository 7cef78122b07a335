"""Render: matplotlib artists for a TapeGraph and the state of its GradientFlow.

Nodes, node labels, edges and edge labels are drawn by separate functions that each
return their artists (keyed by node or edge), so callers can restyle them. ``GraphView``
keeps those artists and, when the step or the shown gradients change, updates texts and
colours in place instead of drawing the picture again. Nothing here computes a gradient:
every number comes from the GradientFlow it is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch
from matplotlib.path import Path
from matplotlib.text import Text

from .flow import REASONS, GradientFlow
from .graph import TapeGraph, format_value
from .layout import collapse, layer_groups, layered_routes

# Geometry, in data units: one layer is INCH_X inches wide, one row INCH_Y inches tall.
INCH_X, INCH_Y = 2.3, 1.15
BOX_W, BOX_H = 0.74, 0.6  # node box, as a fraction of a layer / a row (layout.py keeps bends clear of it)
PARALLEL_GAP = 0.12  # vertical distance between the ends of parallel edges (x * x)
LABEL_PAD = 0.03  # between a routed edge's label and the end of the run it sits on
FONT = 8.0

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


def _short(text: str, n: int = 18) -> str:
    """Cut long labels; scoped names (``model/dense/kernel``) keep their informative tail."""
    if len(text) <= n:
        return text
    if "/" in text:
        return "…" + text[-(n - 1):]
    return text[: n - 1] + "…"


def _is_bad(value) -> bool:
    if value is None:
        return False
    a = np.asarray(value)
    return a.dtype.kind in "fc" and not np.all(np.isfinite(a))


def node_title(graph: TapeGraph, node, display=None) -> str:
    """First line of a box: the user's name for it, else what it is."""
    if display is not None and display.nx.nodes[node].get("kind") == "layer":
        return display.nx.nodes[node]["layer"].split("/")[-1]
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


def node_subtitle(graph: TapeGraph, node, display=None) -> str:
    """Middle line: the op type when the title is the user's name for the op."""
    if display is not None and display.nx.nodes[node].get("kind") == "layer":
        members = display.members[node]
        ops = sum(1 for m in members if graph.nx.nodes[m]["kind"] == "op")
        return f"layer · {ops} ops"
    if display is not None and display.nx.nodes[node].get("kind") == "inner":
        fn = display.nx.nodes[node]["function"]
        return f"in tf.function {graph.nx.nodes[fn].get('function', '')}"
    d = graph.nx.nodes[node]
    if d["kind"] != "op":
        return ""
    if d.get("name"):
        return _op_label(d)
    return d.get("via") or ""


def node_value_text(graph: TapeGraph, node, display=None) -> str:
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


def _nodes(graph: TapeGraph, display=None):
    return (display.nx if display is not None else graph.nx).nodes(data=True)


def grad_text(value) -> str:
    return "∂ " + ("None" if value is None else format_value(np.asarray(value)))


def _norm_text(value) -> str:
    if value is None:
        return "None"
    a = np.asarray(value)
    return format_value(a) if a.size == 1 else f"{float(np.linalg.norm(a)):.3g}"


# --------------------------------------------------------------------------- drawing


def _extent_ys(pos, routes=None) -> list[float]:
    """Every y the drawing uses: node centres and the bend points of routed edges."""
    ys = [p[1] for p in pos.values()]
    for bends in (routes or {}).values():
        ys.extend(b[1] for b in bends)
    return ys


def figure_size(pos: Mapping[Any, tuple[float, float]], *, max_inches: float = 60.0,
                routes=None) -> tuple[float, float]:
    """Inches so that one layer / one row keeps a constant, legible size."""
    if not pos:
        return (4.0, 3.0)
    xs = [p[0] for p in pos.values()]
    ys = _extent_ys(pos, routes)
    w = (max(xs) - min(xs) + 1.0) * INCH_X + 0.6
    h = (max(ys) - min(ys) + 1.0) * INCH_Y + 1.6
    return (min(max(w, 4.5), max_inches), min(max(h, 3.2), max_inches))


def draw_nodes(ax: Axes, graph: TapeGraph, pos, *, targets=(), display=None) -> dict[Any, FancyBboxPatch]:
    """One rounded box per node, styled by kind; targets get a red border."""
    boxes = {}
    for n, d in _nodes(graph, display):
        x, y = pos[n]
        style = KIND_STYLE.get(d["kind"], KIND_STYLE["op"])
        box = FancyBboxPatch(
            (x - BOX_W / 2, y - BOX_H / 2), BOX_W, BOX_H,
            boxstyle="round,pad=0.0,rounding_size=0.08", fc=style["fc"], ec=style["ec"],
            lw=2.6 if n in targets else 1.1, zorder=3,
        )
        if n in targets:
            box.set_edgecolor(C_TARGET)
        box.set_gid(f"node-{n}")
        ax.add_artist(box)  # not add_patch: limits are set once, and autoscaling costs O(n) per patch
        boxes[n] = box
    return boxes


def draw_node_labels(ax: Axes, graph: TapeGraph, pos, *, fontsize: float = FONT,
                     display=None) -> dict[Any, tuple[Text, Text, Text]]:
    """(title, subtitle, forward value) texts inside each box."""
    labels = {}
    for n, _ in _nodes(graph, display):
        x, y = pos[n]
        sub = node_subtitle(graph, n, display)
        top = y + BOX_H * (0.24 if sub else 0.15)
        title = ax.text(x, top, _short(node_title(graph, n, display), 20), ha="center", va="center",
                        fontsize=fontsize, fontweight="bold", zorder=4)
        subtitle = ax.text(x, y + BOX_H * 0.02, sub, ha="center", va="center", fontsize=fontsize - 1,
                           color="#64748b", fontstyle="italic", zorder=4)
        value = ax.text(x, y - BOX_H * 0.24, _short(node_value_text(graph, n, display), 28), ha="center", va="center",
                        fontsize=fontsize - 0.5, color="#334155", zorder=4)
        labels[n] = (title, subtitle, value)
    return labels


def draw_node_grads(ax: Axes, graph: TapeGraph, pos, *, fontsize: float = FONT, display=None) -> dict[Any, Text]:
    """The gradient reaching each node, under its box (empty until the flow fills it)."""
    grads = {}
    for n, _ in _nodes(graph, display):
        t = ax.text(pos[n][0], pos[n][1] - BOX_H / 2 - 0.07, "", ha="center", va="top", fontsize=fontsize - 0.5,
                    color=C_GRADTEXT, zorder=4)
        t.set_gid(f"grad-{n}")
        grads[n] = t
    return grads


def _routed_path(a, b, bends, shift: float) -> tuple[Path, tuple[float, float, str]]:
    """Path from ``a`` to ``b`` through the bend points; also the label anchor (x, y, ha).

    The edge crosses each column it passes horizontally at its bend point's
    height, from the left side of that column's boxes to their right side
    (layout.py puts bend points between boxes, so this stays off them), and
    changes height only in the empty space between columns, with an S-curve
    that leaves and enters horizontally.  The label anchor is the right end
    of the last horizontal run: a right-aligned text there sits on the
    straight stretch just before the final bend into the consumer, in the
    free band between boxes, where a long value has room to be read.
    """
    stops = [a]
    for bx, by in bends:
        stops += [(bx - BOX_W / 2, by + shift), (bx + BOX_W / 2, by + shift)]
    stops.append(b)
    verts, codes = [a], [Path.MOVETO]
    for i in range(0, len(stops) - 1, 2):
        (x0, y0), (x1, y1) = stops[i], stops[i + 1]
        if i:  # the horizontal run through the column before this gap
            verts.append((x0, y0))
            codes.append(Path.LINETO)
        c = (x1 - x0) / 2
        verts += [(x0 + c, y0), (x1 - c, y1), (x1, y1)]
        codes += [Path.CURVE4] * 3
    x0, y0 = stops[-2]
    return Path(verts, codes), (x0 - LABEL_PAD, y0, "right")


def _edge_geometry(graph: TapeGraph, pos, routes=None, display=None):
    """Per edge key: (start, end, arc3 rad, path or None, (label x, label y, label ha)).

    Edges with an entry in ``routes`` get a path through their bend points;
    the others are drawn straight (parallel ones fanned out as arcs).
    """
    geo = {}
    g = display.nx if display is not None else graph.nx
    for u, v in set(g.edges()):
        keys = sorted(g[u][v], key=str)
        n = len(keys)
        (x0, y0), (x1, y1) = pos[u], pos[v]
        bends = routes.get((u, v)) if routes else None
        for i, k in enumerate(keys):
            off = (i - (n - 1) / 2) * PARALLEL_GAP
            rad = (i - (n - 1) / 2) * 0.35
            a, b = (x0 + BOX_W / 2, y0 + off), (x1 - BOX_W / 2, y1 + off)
            if bends:
                # Parallel routes run closer together than their ends: bend
                # points between boxes may have little room to spare.
                path, mid = _routed_path(a, b, bends, off / 2)
            else:
                path = None
                mx, my = (a[0] + b[0]) / 2, (a[1] + b[1]) / 2
                # arc3 bends the midpoint sideways by rad * length / 2
                dx, dy = b[0] - a[0], b[1] - a[1]
                mid = (mx + rad * dy / 2, my - rad * dx / 2, "center")
            geo[(u, v, k)] = (a, b, rad, path, mid)
    return geo


def draw_edges(ax: Axes, graph: TapeGraph, pos, *, routes=None, display=None) -> dict[tuple, FancyArrowPatch]:
    """One arrow per edge, producer → consumer (the forward direction).

    With ``routes`` (from :func:`tapeviz.layout.layered_routes`) edges that span
    several layers follow their bend points around the boxes in between.
    """
    arrows = {}
    geo = _edge_geometry(graph, pos, routes, display)
    for u, v, k in (display.nx if display is not None else graph.nx).edges(keys=True):
        a, b, rad, path, _ = geo[(u, v, k)]
        style = dict(arrowstyle="-|>", mutation_scale=10, lw=1.1, color=C_FORWARD, zorder=2)
        if path is not None:
            arrow = FancyArrowPatch(path=path, **style)
        else:
            arrow = FancyArrowPatch(a, b, connectionstyle=f"arc3,rad={rad}", shrinkA=0, shrinkB=0, **style)
        arrow.set_gid(f"edge-{u}-{v}-{k}")
        ax.add_artist(arrow)
        arrows[(u, v, k)] = arrow
    return arrows


def draw_edge_labels(ax: Axes, graph: TapeGraph, pos, *, fontsize: float = FONT, routes=None,
                     display=None) -> dict[tuple, Text]:
    """A text on each edge for the gradient (or stop reason) it carries.

    Straight edges are labelled at their middle; routed ones on their last
    horizontal stretch, ending where it bends into the consumer.
    """
    texts = {}
    for e, (*_, (mx, my, ha)) in _edge_geometry(graph, pos, routes, display).items():
        texts[e] = ax.text(mx, my, "", ha=ha, va="center", fontsize=fontsize - 1, zorder=5, color=C_GRADTEXT,
                           bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85))
    return texts


def draw_legend(fig: Figure, reasons=(), kinds=()) -> Any:
    """Legend of node kinds, gradient edges and the stop reasons present."""
    handles = [Patch(fc=KIND_STYLE[k]["fc"], ec=KIND_STYLE[k]["ec"], label=KIND_NAMES[k]) for k in kinds]
    handles.append(Line2D([], [], color=C_GRAD, lw=2, label="gradient flowing back"))
    for r in reasons:
        handles.append(Line2D([], [], color=C_STOP, lw=1.6, ls=REASON_STYLE.get(r, "--"), label=f"no gradient: {REASONS[r]}"))
    return fig.legend(handles=handles, loc="lower center", ncol=min(4, len(handles)), fontsize=FONT - 0.5,
                      frameon=False, bbox_to_anchor=(0.5, 0.0))


# --------------------------------------------------------------------------- the view


class TapeFigure(Figure):
    """A Figure that shows itself in Jupyter without ``%matplotlib inline`` or pyplot
    (pyplot-free figures otherwise display as their text repr)."""

    def _repr_png_(self) -> bytes:
        import io

        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=self.dpi)
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


class GraphView:
    """A drawn graph whose gradient state can be changed in place.

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
    """

    def __init__(self, graph: TapeGraph, flow: GradientFlow | None = None, *, ax: Axes | None = None,
                 pos=None, title: str | None = None, caption: str | None = None, routes=None,
                 collapsed="auto", functions=()):
        self.graph = graph
        self.flow = flow
        self.functions = set(functions)
        unknown = self.functions - set(graph.functions())
        if unknown:
            raise ValueError(f"{sorted(unknown)} are not tf.function calls; those are: {graph.functions()}")
        bodies = {f: graph.function_body(f) for f in self.functions}
        self.display = collapse(graph.nx, collapsed if pos is None else False, bodies=bodies)
        dg = self.display.nx
        if pos is None:
            pos, computed = layered_routes(dg)
            routes = computed if routes is None else routes
        self.pos = pos
        self.routes = routes or {}  # (u, v) -> bend points; edges not in it are drawn straight
        if ax is None:
            self.figure = TapeFigure(figsize=figure_size(self.pos, routes=self.routes), dpi=100)
            self.ax = self.figure.add_axes((0.01, 0.09, 0.98, 0.82))
        else:
            self.ax, self.figure = ax, ax.figure
        ax = self.ax
        ax.set_axis_off()
        self._set_limits()
        self.targets = {self.display.of[t] for t in flow.target_nodes} if flow is not None else set()
        kinds = [k for k in KIND_STYLE if any(d["kind"] == k for _, d in dg.nodes(data=True))]
        reasons = sorted({r.reason for r in flow.edge_reason.values()}) if flow is not None else []
        disp = self.display
        self.artists = Artists(
            boxes=draw_nodes(ax, graph, self.pos, targets=self.targets, display=disp),
            labels=draw_node_labels(ax, graph, self.pos, display=disp),
            grads=draw_node_grads(ax, graph, self.pos, display=disp),
            arrows=draw_edges(ax, graph, self.pos, routes=self.routes, display=disp),
            edge_labels=draw_edge_labels(ax, graph, self.pos, routes=self.routes, display=disp),
            title=self.figure.suptitle(title or "", fontsize=FONT + 2, y=0.985),
            legend=draw_legend(self.figure, reasons, kinds),
        )
        self._custom_title = title
        self.caption = self.figure.text(0.5, 0.935, self._caption(caption), ha="center", va="top",
                                        fontsize=FONT + 0.5, color="#334155")
        self.overrides: dict[Any, str] = {}
        self.step: int | None = None
        self.set_step(None)

    def _caption(self, caption: str | None) -> str:
        notes = [caption] if caption else []
        if self.display.collapsed:
            notes.append(f"{len(self.display.collapsed)} layers collapsed "
                         f"({self.graph.nx.number_of_nodes()} nodes in all); expand them to see their ops")
        budget = getattr(self.graph, "budget_note", None)
        if budget:
            notes.append(budget)
        return "\n".join(notes)

    @property
    def layers(self) -> list[str]:
        """Names of the layers this graph groups its ops into."""
        return sorted({x for x in layer_groups(self.graph.nx).values() if x is not None})

    def expanded(self, *layers: str) -> "GraphView":
        """A new view with these layers opened (the others stay as they are)."""
        unknown = set(layers) - set(self.layers)
        if unknown:
            raise ValueError(f"No layer named {sorted(unknown)}; layers are: {self.layers}")
        view = GraphView(self.graph, self.flow, collapsed=self.display.collapsed - set(layers),
                         title=self._custom_title, functions=self.functions)
        view.overrides = dict(self.overrides)
        view.set_step(self.step)
        return view

    def expanded_function(self, *nodes) -> "GraphView":
        """A new view with these tf.function call nodes (default: all) opened into the
        ops of their body. Gradients show on the edges into and out of the body; TF
        does not expose per-op gradients or values inside a function call."""
        chosen = set(nodes) or set(self.graph.functions())
        view = GraphView(self.graph, self.flow, collapsed=self.display.collapsed, title=self._custom_title,
                         functions=self.functions | chosen)
        view.overrides = dict(self.overrides)
        view.set_step(self.step)
        return view

    def collapsed_view(self, *layers: str) -> "GraphView":
        """A new view with these layers (all, when none are named) collapsed."""
        chosen = set(layers) or set(self.layers)
        view = GraphView(self.graph, self.flow, collapsed=self.display.collapsed | chosen, title=self._custom_title,
                         functions=self.functions)
        view.overrides = dict(self.overrides)
        view.set_step(self.step)
        return view

    def _set_limits(self) -> None:
        if not self.pos:
            return
        xs = [p[0] for p in self.pos.values()]
        ys = _extent_ys(self.pos, self.routes)
        self.ax.set_xlim(min(xs) - 0.5, max(xs) + 0.5)
        self.ax.set_ylim(min(ys) - 0.65, max(ys) + 0.5)

    @property
    def n_steps(self) -> int:
        return len(self.flow.steps) if self.flow is not None else 0

    def set_step(self, step: int | None) -> None:
        """Show the flow as it stands after `step` backward steps (None = finished)."""
        fl = self.flow
        a = self.artists
        if fl is None:
            return
        last = len(fl.steps) - 1
        k = last if step is None else max(0, min(int(step), last))
        self.step = None if step is None else k
        disp = self.display
        active_node = disp.of[fl.steps[k].node] if step is not None else None
        active_edges = disp.display_edges_of(fl.steps[k].edges) if step is not None else set()
        dg = disp.nx
        for e, arrow in a.arrows.items():
            self._style_edge(e, dg.edges[e]["members"], arrow, a.edge_labels[e], k, e in active_edges)
        for n, box in a.boxes.items():
            kind = dg.nodes[n]["kind"]
            text, color = self._node_grad_text(n, kind, k, step is None)
            a.grads[n].set_text(text)
            a.grads[n].set_color(color)
            if n == active_node:
                box.set_edgecolor(C_ACTIVE)
                box.set_linewidth(3.4)
            elif n in self.targets:
                box.set_edgecolor(C_TARGET)
                box.set_linewidth(2.6)
            else:
                box.set_edgecolor(KIND_STYLE.get(kind, KIND_STYLE["op"])["ec"])
                box.set_linewidth(1.1)
        a.title.set_text(self._custom_title or self._step_title(k, step is None))

    def _arrived(self, e, k: int) -> bool:
        s = self.flow.step_of(e[1])
        return s is not None and s <= k and e in self.flow._edge_grad

    def _style_edge(self, e, members, arrow, text, k: int, active: bool) -> None:
        fl = self.flow
        stops = [fl.edge_reason.get(m) for m in members]
        if members and all(r is not None for r in stops):
            arrow.set_color(C_STOP)
            arrow.set_linestyle(REASON_STYLE.get(stops[0].reason, "--"))
            arrow.set_linewidth(1.2)
            text.set_text(stops[0].reason if len(members) == 1 else f"{stops[0].reason} ({len(members)})")
            text.set_color("#737373")
            text.set_fontstyle("italic")
            return
        carried = [m for m in members if self._arrived(m, k)]
        arrow.set_linestyle("-")
        text.set_fontstyle("normal")
        if not carried:
            arrow.set_color(C_FORWARD)
            arrow.set_linewidth(1.1)
            text.set_text("")
            return
        values = [fl.edge_grad(*m) for m in carried]
        bad = any(_is_bad(v) for v in values)
        arrow.set_color(C_BAD if bad else (C_ACTIVE if active else C_GRAD))
        arrow.set_linewidth(3.0 if active else 1.8)
        text.set_text(format_value(values[0]) if len(values) == 1 else f"{len(values)} gradients")
        text.set_color(C_BAD if bad else C_GRADTEXT)

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
                bad = bad or _is_bad(value)
                parts.append(f"{name} {_norm_text(value)}")
            return ("∂‖·‖ " + " · ".join(parts) if parts else ""), (C_BAD if bad else C_GRADTEXT)
        if n in self.overrides:
            return self.overrides[n], C_GRADTEXT
        s = fl.step_of(n)
        if s is not None and s <= k:
            value = fl.steps[s].grad if n not in fl.target_nodes else fl.steps[0].grad
            if kind == "variable" or finished:
                value = fl.grad(n) if n not in fl.target_nodes else value
            value = value if not isinstance(value, list) else value[0]
            return grad_text(value), (C_BAD if _is_bad(value) else C_GRADTEXT)
        if n in fl.node_reason and finished and kind in ("variable", "watched", "input"):
            return "∂ None", "#737373"
        return "", C_GRADTEXT

    def _step_title(self, k: int, finished: bool) -> str:
        fl = self.flow
        g = fl.graph
        target = g.display_name(fl.target_nodes[0])
        if finished:
            return f"Backward pass of {target}: all {len(fl.steps) - 1} steps done"
        st = fl.steps[k]
        n = len(fl.steps) - 1
        if k == 0:
            return f"Step 0/{n}: start at {target} with d{target}/d{target} = {format_value(st.grad)}"
        grad = format_value(st.grad if not isinstance(st.grad, list) else st.grad[0])
        to = sorted({g.display_name(u) for u, _, _ in st.edges})
        if not to:
            return f"Step {k}/{n}: {g.display_name(st.node)} has received its gradient {grad}"
        return f"Step {k}/{n}: {g.display_name(st.node)} got {grad} and passes gradient back to {', '.join(to)}"

    def set_grad_overrides(self, texts: Mapping[Any, str]) -> None:
        """Show these texts as the gradient of some nodes (e.g. after clipping)."""
        self.overrides = dict(texts)
        self.set_step(self.step)

    def png(self, dpi: int = 100) -> bytes:
        import io

        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=dpi)
        return buf.getvalue()


def draw(graph: TapeGraph, flow: GradientFlow | None = None, *, step: int | None = None, ax: Axes | None = None,
         title: str | None = None, caption: str | None = None) -> GraphView:
    """Draw a graph (and optionally its flow at a step); returns the GraphView."""
    view = GraphView(graph, flow, ax=ax, title=title, caption=caption)
    if step is not None:
        view.set_step(step)
    return view

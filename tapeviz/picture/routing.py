"""Routing: where each edge runs, from its producer to a port on its consumer's left side.

Edges are labelled in the gap before their consumer, on a horizontal run at one of the
consumer's ports (its in-edges spread over the box's height, in the order they arrive);
the run then converges on the middle of the box's left side, where the arrow head is."""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import NamedTuple

from ..record.graph import TapeGraph
from .marks import Route
from .style import (
    BOX_H,
    BOX_W,
    CONVERGE_ROOM,
    CURVE4,
    CURVE_ROOM,
    GAP,
    LINETO,
    MOVETO,
    PARALLEL_GAP,
    RETURN_PAD,
    RETURN_STEP,
    TAIL,
)
from .visibility import Shown


def _cubic(p0, p3) -> list:
    """The control points and end of an S-curve from p0 to p3 that leaves and enters horizontally."""
    (x0, y0), (x1, y1) = p0, p3
    c = (x1 - x0) / 2
    return [(x0 + c, y0), (x1 - c, y1), (x1, y1)]


#: Where an edge entering a box from above comes down: this far left of the box's right side
#: (its label is written left of it, over the box, clear of the gaps where side labels are).
TOP_IN = 0.09
#: Between the top of a box and the lower edge of the label of an edge entering it from above.
TOP_LABEL_GAP = 0.015


def top_entries(g, pos, routes, lanes, side: Collection = ()) -> dict:
    """{(u, v): x} for the edges that enter their consumer from above, at x: edges crossing
    exactly one gap between rows (``lanes``), with no bend point, into a box that is the
    highest thing of its column in its row (no box or bend point between it and the lane),
    and the only such edge (one source, one key) into that box. Others keep the left side,
    as do the node pairs in ``side``."""
    if not lanes:
        return {}
    bends = [p for b in (routes or {}).values() for p in b]
    points = [*pos.values(), *bends]
    found: dict = {}
    for (u, v), lane in lanes.items():
        if len(lane) != 1 or (routes or {}).get((u, v)) or len(g[u][v]) != 1 or (u, v) in side:
            continue
        x, y = pos[v]
        lane_y = lane[0][0]
        if any(abs(px - x) < 0.3 and y < py < lane_y for px, py in points):
            continue
        found.setdefault(v, []).append((u, v))
    return {es[0]: pos[es[0][1]][0] + BOX_W / 2 - TOP_IN for es in found.values() if len(es) == 1}


def _ports(g, pos, routes, label_h: float, skip=()):
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
            if (u, v) in skip:
                continue
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
    top: float | None = None  # the x it enters its consumer's top at, from the lane above; None: the left side
    top_y: float = 0.0  # that box's top


def edge_plans(
    graph: TapeGraph,
    pos,
    routes=None,
    display: Shown | None = None,
    lanes=None,
    *,
    label_h: float = 0.125,
    side: Collection = (),
) -> dict:
    """Per edge key: its :class:`_Plan`.

    Every edge ends in the gap before its consumer: it turns from the height it
    arrives at (its producer's, or its last bend point's) to its port, runs
    horizontally under its label, and converges on the middle of the consumer's left
    side (parallel edges on their own ends). Edges with bend points (``routes``)
    cross each column they pass horizontally at their bend point's height, changing
    height only between columns; where the layout wraps into bands (``lanes``) they
    leave their band to the right, run back along their lane and enter the next band
    from the left, or, into the top box of a column of the next band, go straight down
    into its top (:func:`top_entries`; ``side``: node pairs that enter from the left all
    the same).
    """
    g = display.nx if display is not None else graph.nx
    plans = {}
    tops = top_entries(g, pos, routes, lanes, side)
    for (u, v), x in tops.items():
        (k,) = g[u][v]
        (x0, y0), (xv, yv) = pos[u], pos[v]
        lane = tuple(lanes[(u, v)])
        room = x - (xv - BOX_W / 2) - 0.02  # over the box, left of where the edge comes down
        plans[(u, v, k)] = _Plan(
            (x0 + BOX_W / 2, y0),
            [],
            lane,
            yv + BOX_H / 2 + TOP_LABEL_GAP + label_h / 2,
            yv,
            0,
            1,
            xv - BOX_W / 2,
            0.0,
            room,
            x,
            yv + BOX_H / 2,
        )  # port: its label's height; gap_right: the box's left side
    for (u, v, k), (port, end_y, col, cols) in _ports(g, pos, routes, label_h, tops).items():
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


def edge_route(plan: _Plan, label_w: float | None = None) -> tuple[Route, tuple, tuple]:
    """The path of a planned edge, its label anchor (x, y, ha) and its backward mark.

    ``label_w``: the widest text its label will show (data units, padding included);
    the turn to the port then ends where that label begins instead of at the gap's
    left, so it is gentle rather than steep."""
    x, y = a = plan.start
    verts, codes = [a], [MOVETO]
    if plan.top is not None:  # from the lane under its row straight down into the box's top
        lane_y, j = plan.lane[0]
        right = x + RETURN_PAD + j % 4 * RETURN_STEP
        verts += [(right, y), (right, lane_y), (plan.top, lane_y), (plan.top, plan.top_y)]
        codes += [LINETO] * 4
        back = ((right + plan.top) / 2, lane_y, 1.0 if plan.top < right else -1.0, 0.0)  # on the lane
        return Route(verts, codes), label_anchor(plan), back
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
    if x > gap_right - 1e-9 or (plan.lane and not stops):  # from a later column, or a row above: its lane
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


def label_anchor(plan: _Plan) -> tuple:
    """Where an edge's label is written: (x, y, ha). Right-aligned on its port run in the gap
    before its consumer; an edge entering from above: right-aligned just left of where it
    comes down, its lower edge ``TOP_LABEL_GAP`` over the box (its plan's port)."""
    if plan.top is not None:
        return (plan.top - 0.012, plan.port, "right")
    x = plan.gap_right - (CONVERGE_ROOM if abs(plan.port - plan.end_y) > 1e-9 else TAIL) - plan.col * plan.room
    return (x, plan.port, "right")


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

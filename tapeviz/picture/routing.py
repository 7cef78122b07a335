"""Routing: where each edge runs, from its producer to a port on its consumer's left side.

Edges are labelled in the gap before their consumer, on a horizontal run at one of the
consumer's ports (its in-edges spread over the box's height, in the order they arrive);
the run then converges on the middle of the box's left side, where the arrow head is."""

from __future__ import annotations

import math
from collections.abc import Collection
from itertools import pairwise
from typing import NamedTuple

from ..record.graph import TapeGraph
from .marks import Route
from .style import (
    BOX_H,
    BOX_W,
    CAPTION_H,
    CONVERGE_ROOM,
    CURVE4,
    CURVE_ROOM,
    GAP,
    INCH_X,
    INCH_Y,
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


def _passed(lane) -> int:
    """Whole bands an edge passes down the right margin before this lane (rows.Lane.passed)."""
    return lane[2] if len(lane) > 2 else 0


def margin_legs(pos, routes, lanes) -> dict:
    """{(u, v): x} for the edges that pass whole bands (their lane's ``passed``): each goes
    down the right margin at x, right of every box and bend point beside its way down and of
    the legs that turn down beside a band's last column (``RETURN_STEP`` apart, up to four),
    instead of across each band it passes and back under it. One x per lane: a bundle of one
    source goes down as one line; the lane lowest at its end (the edge from highest up)
    takes the outermost x, so the legs do not cross where they turn into their lanes."""
    spans = {}
    for e, lane in (lanes or {}).items():
        if lane and _passed(lane[-1]):
            bends = (routes or {}).get(e) or ()
            x, y = bends[-1] if bends else pos[e[0]]
            spans[e] = (x, y, lane[-1][0])
    if not spans:
        return {}
    points = [*pos.values(), *(p for b in (routes or {}).values() for p in b)]
    right = max(x for x, _, _ in spans.values())
    for px, py in points:
        if any(low - BOX_H / 2 < py < y + BOX_H / 2 for _, y, low in spans.values()):
            right = max(right, px)
    order = sorted({round(low, 6) for _, _, low in spans.values()}, reverse=True)  # highest lane innermost
    base = right + BOX_W / 2 + RETURN_PAD + 4 * RETURN_STEP
    return {e: base + order.index(round(low, 6)) * RETURN_STEP for e, (_, _, low) in spans.items()}


#: Where an edge into a box under another one comes down beside their column: this far right
#: of the boxes (left of the labels in that gap, which keep CURVE_ROOM from its left side).
BESIDE = 0.03
#: An edge takes the way beside the column if it crosses at most this many more edges than
#: the way from the left: a picture's length is read along its edges, a crossing at a glance.
SIDE_CROSSINGS = 1


def side_entries(g, pos, routes, plans: dict, label_h: float, side: Collection = ()) -> dict:
    """{(u, v): (x, beside, run_y)}: edges from the lane above into a box that has another box
    above it in its column, from a source right of that column, that come down the gap right
    of the column (at ``beside``), turn left under the box above (at ``run_y``, clear of its
    caption) and enter the box's top at x, its label over the box as for :func:`top_entries`,
    instead of running on to the gap left of the column and back. Taken when that way is
    shorter, crosses at most ``SIDE_CROSSINGS`` more edges and runs along no other edge; one
    edge a box (one label fits over it): of several, the one it shortens most. Not for the
    node pairs in ``side``."""
    routed = {e: edge_route(p)[0] for e, p in plans.items()}
    drawn = {e: r.vertices for e, r in routed.items()}
    boxes = list(pos.values())
    bends = [b for bs in (routes or {}).values() for b in bs]
    found: dict = {}
    for e, plan in plans.items():
        u, v, _ = e
        if plan.top is not None or len(plan.lane) != 1 or len(g[u][v]) != 1 or (u, v) in side:
            continue
        if plan.stops and plan.margin is None:  # bend points in its own row only: past whole rows
            continue
        (xv, yv), lane_y = pos[v], plan.lane[0][0]
        x_from = plan.margin if plan.margin is not None else plan.start[0]
        if x_from <= xv + BOX_W / 2:
            continue  # from the left: the gap left of the column is the near one
        above = [py for px, py in boxes if abs(px - xv) < 0.3 and yv < py < lane_y]
        if not above or any(abs(bx - xv) < 0.3 and yv < by < min(above) for bx, by in bends):
            continue  # the top box of its column (top_entries), or a bend point between
        ceiling = min(above) - BOX_H / 2 - CAPTION_H
        top_y = yv + BOX_H / 2
        if top_y + TOP_LABEL_GAP + label_h > ceiling - 0.01:
            continue  # no room for its label under the box above
        x, beside = xv + BOX_W / 2 - TOP_IN, xv + BOX_W / 2 + BESIDE
        run_y = (top_y + TOP_LABEL_GAP + label_h + ceiling) / 2
        alt = plan._replace(top=x, top_y=top_y, beside=beside, run_y=run_y)
        new = edge_route(alt)[0].vertices
        saving = _length(drawn[e]) - _length(new)
        if saving <= 0:
            continue
        others = [vs for f, vs in drawn.items() if f[0] != u and f[1] != v]
        if any(_along(new, r) for f, r in routed.items() if f[0] != u and f[1] != v):
            continue
        if sum(_crosses(new, vs) for vs in others) > sum(_crosses(drawn[e], vs) for vs in others) + SIDE_CROSSINGS:
            continue
        found.setdefault(v, []).append((saving, (u, v), (x, beside, run_y)))
    return dict(max(es, key=lambda t: t[0])[1:] for es in found.values())


def legs_through(plans: dict, skip, x0: float, x1: float, y0: float, y1: float) -> bool:
    """Whether a straight vertical stretch of a planned edge other than ``skip`` passes through
    the rectangle x0..x1, y0..y1 (e.g. where a label would be written)."""
    for e, plan in plans.items():
        if e == skip:
            continue
        verts, codes = edge_route(plan)[0]
        for i in range(1, len(verts)):
            (xa, ya), (xb, yb) = verts[i - 1], verts[i]
            if codes[i] == LINETO and abs(xa - xb) < 1e-9 and x0 < xa < x1 and min(ya, yb) < y1 and y0 < max(ya, yb):
                return True
    return False


def _length(verts) -> float:
    """A path's length along its control polygon, in inches (a column and a row differ)."""
    return sum(math.hypot((b[0] - a[0]) * INCH_X, (b[1] - a[1]) * INCH_Y) for a, b in pairwise(verts))


def _cross(p, q, r, t) -> bool:
    """Whether segments pq and rt cross at a point inside both."""

    def orient(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    return orient(r, t, p) * orient(r, t, q) < -1e-12 and orient(p, q, r) * orient(p, q, t) < -1e-12


def _crosses(a, b) -> bool:
    """Whether two paths (their control polygons) cross."""
    return any(_cross(a[i], a[i + 1], b[j], b[j + 1]) for i in range(len(a) - 1) for j in range(len(b) - 1))


def _along(a, b: Route, near: float = 0.012) -> bool:
    """Whether a vertical or horizontal segment of path ``a`` runs along a straight one of
    route ``b`` (not a curve's control polygon), closer than ``near`` (two lines drawn as one)."""
    lines = [(b.vertices[i], b.vertices[i + 1]) for i in range(len(b.vertices) - 1) if b.codes[i + 1] == LINETO]
    for p, q in pairwise(a):
        for r, t in lines:
            for i in (0, 1):  # i = 0: both vertical (x equal), 1: both horizontal
                if abs(p[i] - q[i]) < 1e-9 and abs(r[i] - t[i]) < 1e-9 and abs(p[i] - r[i]) < near:
                    lo, hi = sorted((p[1 - i], q[1 - i]))
                    lo2, hi2 = sorted((r[1 - i], t[1 - i]))
                    if min(hi, hi2) - max(lo, lo2) > near:
                        return True
    return False


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
        if len(lane) != 1 or len(g[u][v]) != 1 or (u, v) in side:
            continue
        if (routes or {}).get((u, v)) and not _passed(lane[0]):  # bend points in its own row only: past whole rows
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
    margin: float | None = None  # the x of its way down the right margin, past whole bands; None: beside its row
    beside: float | None = None  # into a top past a box above it: the x of its way down beside the column
    run_y: float = 0.0  # ... and the height it turns to the top at, between that box and this one


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
    tops = top_entries(g, pos, routes, lanes, side)
    margins = margin_legs(pos, routes, lanes)
    plans = _plans(g, pos, routes, lanes, label_h, tops, {}, margins)
    sides = side_entries(g, pos, routes, plans, label_h, side)
    if sides:  # those edges leave their ports on the box's left side to the others
        plans = _plans(g, pos, routes, lanes, label_h, tops, sides, margins)
    return plans


def _plans(g, pos, routes, lanes, label_h: float, tops: dict, sides: dict, margins: dict) -> dict:
    """Per edge key: its :class:`_Plan` (see :func:`edge_plans`); ``tops``: {(u, v): x} of the
    edges into a box's top from the lane above, ``sides``: {(u, v): (x, beside, run_y)} of
    those into a box's top past the gap beside its column (:func:`side_entries`)."""
    plans = {}
    entering = {**tops, **{e: t[0] for e, t in sides.items()}}
    for (u, v), x in entering.items():
        (k,) = g[u][v]
        (x0, y0), (xv, yv) = pos[u], pos[v]
        lane = tuple(lanes[(u, v)])
        room = x - (xv - BOX_W / 2) - 0.02  # over the box, left of where the edge comes down
        beside, run_y = sides[(u, v)][1:] if (u, v) in sides else (None, 0.0)
        stops = [(bx + d, by) for bx, by in (routes or {}).get((u, v)) or () for d in (-BOX_W / 2, BOX_W / 2)]
        plans[(u, v, k)] = _Plan(
            (x0 + BOX_W / 2, y0),
            stops,
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
            margins.get((u, v)),
            beside,
            run_y,
        )  # port: its label's height; gap_right: the box's left side
    for (u, v, k), (port, end_y, col, cols) in _ports(g, pos, routes, label_h, entering).items():
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
        margin = margins.get((u, v))
        left = gap_right - GAP + CURVE_ROOM
        if lane and (
            not stops or stops[-1][0] > gap_right or margin is not None
        ):  # its lane ends here: room for the leg
            left = max(left, gap_right - GAP + 0.03 + lane[-1][1] % 4 * RETURN_STEP)
        room = (gap_right - right_room - left) / cols
        plans[(u, v, k)] = _Plan(
            (x0 + BOX_W / 2, y0 + off), stops, lane, port, end_y, col, cols, gap_right, off, room, margin=margin
        )
    return plans


def edge_route(plan: _Plan, label_w: float | None = None) -> tuple[Route, tuple, tuple]:
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
            lane_y, j = next(returns)[:2]
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
    if plan.top is not None:  # from the lane under its row straight down into the box's top
        lane_y, j = plan.lane[-1][:2]
        right = plan.margin if plan.margin is not None else x + RETURN_PAD + j % 4 * RETURN_STEP
        if plan.beside is None:
            verts += [(right, y), (right, lane_y), (plan.top, lane_y), (plan.top, plan.top_y)]
            codes += [LINETO] * 4
        else:  # down beside the column, under the box above, into the top
            verts += [(right, y), (right, lane_y), (plan.beside, lane_y), (plan.beside, plan.run_y)]
            verts += [(plan.top, plan.run_y), (plan.top, plan.top_y)]
            codes += [LINETO] * 6
        turn = plan.top if plan.beside is None else plan.beside
        back = ((right + turn) / 2, lane_y, 1.0 if turn < right else -1.0, 0.0)  # on the lane
        return Route(verts, codes), label_anchor(plan), mark or back
    port, end_y, gap_right = plan.port, plan.end_y, plan.gap_right
    converge = abs(port - end_y) > 1e-9
    run_end = gap_right - (CONVERGE_ROOM if converge else TAIL)
    anchor_x = run_end - plan.col * plan.room
    label_left = anchor_x - (plan.room if label_w is None else min(label_w, plan.room))
    # from a later column or band, past whole bands, or from a row above with no bend point: a lane
    if x > gap_right - 1e-9 or plan.margin is not None or (plan.lane and not stops):
        lane_y, j = next(returns, (y, 0))[:2]
        right, left = x + RETURN_PAD + j % 4 * RETURN_STEP, gap_right - GAP + 0.03 + j % 4 * RETURN_STEP
        if plan.margin is not None:  # past whole bands: down the right margin
            right = plan.margin
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

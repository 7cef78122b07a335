"""Rows: long layered layouts folded into bands of rows, read like lines of text.

A 200-layer model laid out in one row is either 460 inches wide or, squeezed onto a
page, unreadable; read band by band, every box keeps its size. This sits beside the
layout (it moves what :func:`tapeviz.picture.layout.layered_routes` placed) and knows nothing
of tapes.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Hashable, Mapping, Sequence
from typing import NamedTuple

import networkx as nx

from .layout import STACK_GAP as _STACK_GAP
from .style import BOX_H as _BOX_H
from .style import CAPTION_H as _CAPTION_H

__all__ = [
    "wrap_bands",
    "Lane",
    "band_columns",
    "row_lengths",
    "row_starts",
    "split_frames",
    "WRAP_COLUMNS",
    "PAGE_WIDTH",
    "MAX_RATIO",
    "NARROW_PAGE",
    "CELL_WIDTH",
    "PAGE_FIT_MOST",
]

Node = Hashable
Point = tuple[float, float]

#: Layouts wider than this many columns are wrapped into bands (see :func:`wrap_bands`).
WRAP_COLUMNS = 16

#: A default picture is laid out for a page this many pixels wide (at 100 dpi, full text
#: size: a README column or a notebook cell scales it down by less than half), and is no
#: wider than MAX_RATIO times its height (a strip's text shrinks with the page's width).
PAGE_WIDTH = 1600
MAX_RATIO = 3.5
#: ... except a picture no wider than a notebook cell (~1,100 px), shown at full size whatever
#: its shape: a chain of four boxes stays one row.
NARROW_PAGE = 1100
#: The explorer's page: a notebook cell, 960 CSS px (a canvas pixel is 0.96 CSS px), so its
#: picture shows whole at full text size instead of scrolling or shrinking. Measured: a
#: JupyterLab cell's output is 968 CSS px wide in a 1,400 px window with the file browser open.
CELL_WIDTH = 1000
#: Layouts up to this many columns are folded to fit the page (about 12 rows of 5); longer
#: ones (every op of a large model) are folded into bands as wide as a screen instead.
PAGE_FIT_MOST = 60


class Lane(NamedTuple):
    """A lane an edge runs back along, in the gap under a band, to the next band."""

    y: float
    order: int  # among the lanes of that gap, top to bottom (drawings offset vertical legs by it)
    passed: int = 0  # whole bands the edge passed first, down the right margin (0: from the band above)


_LANE_GAP = 0.14  # between the lanes of edges that return to the next band
_BAND_MARGIN = 0.2  # between a band's lowest caption and its first lane, and the last lane and the next band


def band_columns(n_columns: int, *, least: int = WRAP_COLUMNS, most: int = 24) -> int:
    """Columns per band for a layout ``n_columns`` wide: ``least`` for moderately long
    graphs, growing with the square root beyond (fewer, wider bands for very long ones),
    but at most ``most``: about as wide as a picture can be and still be read whole."""
    return min(most, max(least, math.ceil(math.sqrt(2.0 * n_columns))))


def row_lengths(n_columns: int, *, least: int = 2) -> list[int]:
    """Columns per row for one row, two rows, three... (balanced: 11 columns in 3 rows are
    4 + 4 + 3), each length once, longest first, down to ``least``."""
    out: list[int] = []
    for rows in range(1, n_columns + 1):
        columns = max(least, math.ceil(n_columns / rows))
        if columns not in out:
            out.append(columns)
        if columns == least:
            break
    return out or [least]


def row_starts(
    g: nx.DiGraph,
    pos: Mapping[Node, Point],
    columns: int,
    *,
    layer_gap: float = 1.0,
    spans: Sequence[tuple[int, int]] = (),
) -> list[int]:
    """Where each row begins (its first column) when a layout is folded into rows of at
    most ``columns`` columns, cut where the fewest edges cross: every edge that crosses a
    cut is one more lane running back under its row, and a tangle of lanes is what makes
    a folded picture hard to follow. Among equally few crossings, the most even row lengths.

    ``spans`` are the first and last columns of the open groups (their frames): a frame
    never splits across rows, so a row is not cut inside a group that fits one row, and a
    group longer than a row gets rows of its own (it begins and ends a row). Keeping them
    whole comes first: it may take up to two more rows than the fewest."""
    col = {n: int(round(x / layer_gap)) for n, (x, _) in pos.items()}
    n = max(col.values(), default=-1) + 1
    fewest = max(1, math.ceil(n / columns))
    cross = [0] * (n + 1)  # cross[j]: edges from a column before j to column j or later
    for u, v in dict.fromkeys(g.edges()):
        a, b = sorted((col[u], col[v]))
        for j in range(a + 1, b + 1):
            cross[j] += 1
    inside = [0] * (n + 1)  # inside[j]: groups that fit a row and a cut before column j splits
    edges: set[int] = set()  # the columns a long group begins at, and the one after its end
    for a, b in spans:
        if b - a + 1 <= columns:
            for j in range(a + 1, b + 1):
                inside[j] += 1
        else:
            edges |= {a, b + 1}
    edges = {e for e in edges if 0 < e < n}
    missed = [0] * (n + 1)  # missed[j]: long-group edges before column j
    for j in range(1, n + 1):
        missed[j] = missed[j - 1] + ((j - 1) in edges)
    best_rows, best_cost = None, None
    for rows in range(fewest, min(n, fewest + len(edges) + (2 if spans else 0)) + 1):
        got = _cut(n, rows, columns, cross, inside, missed)
        if got is None:
            continue
        cost, out = got
        cost = (cost[0], rows, *cost[1:])
        if best_cost is None or cost < best_cost:
            best_rows, best_cost = out, cost
    return best_rows if best_rows is not None else [0]


def split_frames(starts: Sequence[int], spans: Sequence[tuple[int, int]], columns: int) -> int:
    """How many open groups' frames rows starting at ``starts`` split: a group that fits a
    row but is cut, or a longer one that does not begin and end rows of its own."""
    out = 0
    for a, b in spans:
        cut = any(a < j <= b for j in starts)
        if b - a + 1 <= columns:
            out += cut
        elif cut:
            ends = set(starts)
            out += (a not in ends and a > 0) or (b + 1 not in ends and any(j > b for j in starts))
    return out


def _cut(n: int, rows: int, columns: int, cross, inside, missed):
    """((splits, crossings, unevenness), row starts) of the best ``rows`` rows, or None."""
    even = n / rows
    inf = (math.inf, math.inf, math.inf)
    # best[r][j]: (splits, crossings, unevenness) of r rows holding columns 0..j-1, and the last row's start
    best: list[list[tuple]] = [[(inf, 0)] * (n + 1) for _ in range(rows + 1)]
    best[0][0] = ((0, 0, 0.0), 0)
    for r in range(1, rows + 1):
        for j in range(1, n + 1):
            for start in range(max(0, j - columns), j):
                (sp, c, u), _ = best[r - 1][start]
                if c == math.inf:
                    continue
                # a long group's edge strictly inside this row: it does not begin or end a row
                miss = missed[j] - missed[start + 1] if j > start + 1 else 0
                cost = (
                    sp + (inside[start] if start else 0) + miss,
                    c + (cross[start] if start else 0),
                    u + (j - start - even) ** 2,
                )
                if cost < best[r][j][0]:
                    best[r][j] = (cost, start)
    if best[rows][n][0][1] == math.inf:
        return None
    out, j = [], n
    for r in range(rows, 0, -1):
        j = best[r][j][1]
        out.append(j)
    return best[rows][n][0], out[::-1]


def wrap_bands(
    g: nx.DiGraph,
    pos: Mapping[Node, Point],
    routes: Mapping[tuple[Node, Node], list[Point]],
    *,
    columns: int,
    layer_gap: float = 1.0,
    starts: Sequence[int] | None = None,
    reach: Mapping[Node, tuple[float, float]] | None = None,
) -> tuple[dict[Node, Point], dict[tuple[Node, Node], list[Point]], dict[tuple[Node, Node], list[Lane]]]:
    """Fold a layout from :func:`layered_routes` into bands of ``columns`` columns,
    stacked top to bottom like lines of text.

    Why: a 200-layer model laid out in one row is either 460 inches wide or, squeezed
    onto a page, unreadable; read band by band, every box keeps its size.

    Returns ``(pos, routes, lanes)``.  Nodes and bend points keep their place inside
    their band.  An edge that passes from one band to the next leaves the last column
    to the right, runs back along a *lane* in the gap under its band and enters the
    next band from the left; ``lanes[(u, v)]`` lists that lane (:class:`Lane`: its y and
    its index among the lanes of that gap; drawings offset their vertical legs by it, so
    parallel returns do not overlap).  An edge that passes whole bands keeps only its bend
    points in its own band and one lane, under the band above its target: it goes down
    the right margin past the bands between (``Lane.passed`` of them) instead of across
    each of them and back under each.  Edges between
    neighbouring columns that end up in different bands get a route (possibly with no
    bend point) so that drawings route them too.  Layouts of at most ``columns``
    columns are returned unchanged, with no lanes.  ``starts``: each band's first column
    (e.g. from :func:`row_starts`) instead of one every ``columns``. ``reach``: how far
    beyond its box and gradient text each node's frames reach, (above, below); a band keeps
    that room.
    """
    col = {n: int(round(x / layer_gap)) for n, (x, _) in pos.items()}
    if not col or max(col.values()) < columns:
        return dict(pos), dict(routes), {}
    first = list(starts) if starts is not None else list(range(0, max(col.values()) + 1, columns))

    def band(x: float) -> int:
        return bisect_right(first, int(round(x / layer_gap))) - 1

    top: dict[int, float] = {}
    bottom: dict[int, float] = {}
    passed: dict[tuple[Node, Node], int] = {}  # edges down the right margin: the rows they pass

    def extend(b: int, hi: float, lo: float) -> None:
        top[b] = max(top.get(b, hi), hi)
        bottom[b] = min(bottom.get(b, lo), lo)

    # Which edges cross each gap between bands, each with the y it leaves its band at.
    routed = dict(routes)
    crossing: dict[int, list[tuple[tuple, tuple[Node, Node]]]] = {}
    for u, v in dict.fromkeys(g.edges()):  # node pairs, in insertion order
        bu, bv = band(pos[u][0]), band(pos[v][0])
        if bu == bv:
            continue
        if bv == bu + 1:
            # to the next row: straight down from its source to the lane and on to its
            # target, not along the rest of its row first
            routed[(u, v)] = []
            crossing.setdefault(bu, []).append(((0, 0, pos[u][1]), (u, v)))
            continue
        # past whole rows: along its own row to its right end (its bend points there), down
        # the right margin past the rows between, and back along one lane under the row above
        # its target, instead of across every row between and back under each. The lowest
        # lanes there, those leaving the highest rows lowest: their legs on the right are the
        # outermost, so the lanes and legs there do not cross.
        bends = [p for p in routed.get((u, v), []) if band(p[0]) == bu]
        routed[(u, v)] = bends
        leave_y = bends[-1][1] if bends else pos[u][1]
        crossing.setdefault(bv - 1, []).append(((1, -bu, leave_y), (u, v)))
        passed[(u, v)] = bv - bu - 1

    reach = reach or {}
    for n, (x, y) in pos.items():
        up, down = reach.get(n, (0.0, 0.0))
        extend(band(x), y + _BOX_H / 2 + up, y - _BOX_H / 2 - _CAPTION_H - down - _BAND_MARGIN / 2)
    for bends in routed.values():
        for x, y in bends:
            extend(band(x), y + _STACK_GAP / 2, y - _STACK_GAP / 2)

    # Stack the bands, each followed by the lanes of the edges returning under it.
    shift: dict[int, float] = {}
    lanes: dict[tuple[Node, Node], list[Lane]] = {}
    cursor = 0.0  # top of the next band
    for b in range(max(top) + 1):
        if b not in top:  # an empty band (a layer with no node cannot occur, but stay safe)
            top[b] = bottom[b] = 0.0
        shift[b] = cursor - top[b]
        first_lane = bottom[b] + shift[b] - _BAND_MARGIN
        # The edge leaving lowest takes the highest lane and the innermost vertical legs:
        # on the right-hand side, where they turn down, their paths then never cross. The
        # edges of one source leaving at one height share a lane: a bundle runs back as
        # one line and splits where its targets are.
        returning = sorted(crossing.get(b, []), key=lambda t: t[0])
        bundle: dict[tuple, int] = {}
        for (far, _, leave_y), e in returning:
            # edges past whole bands: one source's are one bundle wherever they leave their band
            i = bundle.setdefault((e[0], far, 0.0 if far else round(leave_y, 6)), len(bundle))
            lanes.setdefault(e, []).append(Lane(first_lane - i * _LANE_GAP, i, passed.get(e, 0)))
        if returning:
            cursor = first_lane - (len(bundle) - 1) * _LANE_GAP - _BAND_MARGIN
        else:
            cursor = bottom[b] + shift[b]

    def moved(x: float, y: float) -> Point:
        b = band(x)
        return (x - first[b] * layer_gap, y + shift[b])

    new_pos = {n: moved(*p) for n, p in pos.items()}
    new_routes = {e: [moved(*p) for p in bends] for e, bends in routed.items()}
    return new_pos, new_routes, lanes

"""Layered left-to-right layout for tape graphs.

A GradientTape graph reads like a program: inputs on the left, the loss on the
right, every op between its operands and its consumers.  A force-directed
layout throws that reading direction away, so this module draws the graph in
the Sugiyama style instead: assign each node a layer (column), reduce edge
crossings between neighbouring columns, then turn column/rank into
coordinates.  An edge spanning several columns is routed through one hidden
bend point per column it passes; :func:`layered_routes` returns those bend
points too, so that a drawing can follow them around the boxes in between
and show the crossings the reduction minimised rather than the many more a
straight line would make.

Everything here is deterministic.  The same graph built with the same
insertion order always gets the same picture, because snapshots of tapes are
compared side by side (before/after an edit, step N vs step N+1) and a layout
that reshuffles on every run makes those comparisons useless.  For that reason
ties are broken by insertion order or by the current rank, never by hashing or
set iteration.

The graphs can be large (thousands of nodes, chains thousands deep), so no
step recurses and the crossing reduction works on numpy arrays, layer by
layer.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Mapping, Sequence
from itertools import pairwise

import networkx as nx
import numpy as np

from .group_bands import FramePad, GroupOrder, separate_columns
from .style import BOX_H, CAPTION_H

__all__ = ["layered_layout", "layered_routes", "layers", "count_crossings", "STACK_GAP", "FramePad"]

Node = Hashable
Point = tuple[float, float]

# Layers at most this wide are reordered in plain Python: for a handful of
# nodes the fixed cost of a numpy call dominates, and deep, narrow tapes are
# made almost entirely of such layers.  Both paths compute bit-identical
# barycentres (sums of small integers are exact in float64), so the threshold
# only affects speed, never the result.
_SMALL_LAYER = 16

# Bend points of routed edges are placed in the free band between one node's
# caption and the next node's box, never inside either: style.py's BOX_H (the
# box, as a fraction of node_gap) and CAPTION_H (the strip under it where the
# writers put the node's gradient) are the heights they keep clear of.
# Distance between neighbouring bend points stacked above or below a column.
STACK_GAP = _STACK_GAP = 0.2


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------


def layered_layout(
    g: nx.DiGraph,
    *,
    layer_gap: float = 1.0,
    node_gap: float = 1.0,
    sweeps: int = 4,
) -> dict[Node, tuple[float, float]]:
    """Place ``g`` in columns so that data flows left to right.

    Each column is centred on ``y == 0`` so that short columns sit in the
    middle of long ones rather than hanging off the top edge, which keeps the
    picture balanced and the edges between them short.  The first node of a
    column (as returned by :func:`layers`) is drawn at the top, so the order
    reads the same way in the list and in the figure.

    ``sweeps`` is the number of left-to-right plus right-to-left round trips
    of the crossing reduction; ``0`` keeps the insertion order, which is
    mainly useful to measure what the reduction buys.

    ``g`` may be a ``MultiDiGraph`` or a ``DiGraph``; parallel edges are
    drawn along the same route, so they count as one edge throughout.

    Edges spanning several columns pass other columns' nodes; draw them
    along the routes of :func:`layered_routes` (same positions) to keep them
    clear of the boxes and as uncrossed as the reduction made them.
    """
    return _place(g, layer_gap, node_gap, sweeps, want_routes=False)[0]


def layered_routes(
    g: nx.DiGraph,
    *,
    layer_gap: float = 1.0,
    node_gap: float = 1.0,
    sweeps: int = 4,
    groups: Mapping[Node, Sequence[Hashable]] | None = None,
    frame_pad: FramePad | None = None,
) -> tuple[dict[Node, Point], dict[tuple[Node, Node], list[Point]]]:
    """Positions of :func:`layered_layout` plus bend points for long edges.

    Returns ``(pos, routes)``.  ``pos`` is exactly what :func:`layered_layout`
    returns for the same arguments.  ``routes`` maps every edge ``(u, v)``
    that spans more than one column to its bend points, one per column
    strictly between ``u`` and ``v``, in order from ``u`` to ``v``; edges
    between neighbouring columns have no entry.  Parallel edges share one
    route (the key is the node pair).

    The bend points are the positions of the invisible nodes the crossing
    reduction routed the edge through, so a drawing that runs each long edge
    through them shows exactly the crossings the reduction minimised.  Each
    bend point gets its own slot in its column, in the column's order and
    never inside a node's box (``0.74 * layer_gap`` by ``0.6 * node_gap``,
    centred on the node):

    * between two nodes, the bend points passing there share the free band
      between the upper node's box (with a ``0.15 * node_gap`` caption strip
      under it, where drawings write a value) and the lower node's box,
      evenly spaced;
    * above the top node or below the bottom one (and its caption) they
      stack outwards, ``0.2 * node_gap`` apart, the nearest one as far from
      the node as a lone bend point between two nodes.

    Nodes keep their :func:`layered_layout` places, so the picture does not
    grow; a drawing only has to widen its y-limits to the outermost bend
    points.  Passing each bend point horizontally, from the left side of its
    column's boxes to their right side, keeps a drawn edge off every box:
    between columns there are no boxes at all.

    ``groups`` maps nodes to the open groups holding them (outermost first), each to be
    drawn as a frame around its boxes, with margins ``frame_pad`` (in rows): then every
    column is ordered by the group tree first and the rows are stacked by group
    (group_bands.py), so that no box of another group sits inside a group's rectangle.
    Without groups (or when no node is in one) the columns are centred as above.
    """
    return _place(g, layer_gap, node_gap, sweeps, want_routes=True, groups=groups, frame_pad=frame_pad)


def layers(g: nx.DiGraph, *, sweeps: int = 4) -> list[list[Node]]:
    """Return the columns of :func:`layered_layout`, each in its final order.

    Exposed separately because callers that draw their own way (tables,
    collapsible groups, text dumps) want the structure without committing to
    coordinates; the lists are exactly what the layout turns into positions.
    """
    nodes, order, _, _ = _ordered_layers(g, sweeps)
    return [[nodes[i] for i in members.tolist()] for members in order]


def count_crossings(
    g: nx.DiGraph,
    pos: Mapping[Node, Sequence[float]],
    routes: Mapping[tuple[Node, Node], Sequence[Sequence[float]]] | None = None,
) -> int:
    """Count the edge crossings a drawing of ``g`` at ``pos`` shows.

    Without ``routes`` every edge is a straight segment; with them, an edge
    listed in ``routes`` is the polyline through its bend points (as returned
    by :func:`layered_routes`), which is what a routed drawing shows.

    This measures the picture the user actually sees, not the internal
    objective of the crossing reduction (which routes long edges through
    invisible bend points and therefore can differ from a straight drawing).
    Two edges count as crossing when their segments meet in exactly one
    point that is interior to both; edges that share an end node, an edge
    running through a node, and collinear overlaps are not crossings.
    Parallel edges are drawn on the same route and count once.  Points
    closer than about 1e-9 of the drawing's height count as the same point,
    so that meets which are exact on paper (but off by float rounding, e.g.
    with ``layer_gap=0.37``) do not flip between "crossing" and "touching"
    as the drawing is scaled.

    The drawing is cut into the vertical strips between consecutive distinct
    x values, so the cost grows with the number of strips each edge spans;
    that is cheap for layered drawings (a few columns) and quadratic in the
    worst case for arbitrary ``pos``.  Vertical edges (or route pieces)
    cannot be assigned to a strip and are rejected.  Each piece of a routed
    edge counts as its own segment: two routes crossing twice count twice.
    """
    pairs = {(u, v) for u, v in g.edges() if u != v}
    if len(pairs) < 2:
        return 0
    edges = sorted(pairs, key=_edge_sort_key(g))
    rows: list[tuple[float, ...]]
    names: list[tuple[Node, Node]]
    if routes:
        rows, names = [], []
        for u, v in edges:
            pts = [pos[u][:2], *(tuple(b)[:2] for b in routes.get((u, v), ())), pos[v][:2]]
            rows.extend((*a, *b) for a, b in pairwise(pts))
            names.extend([(u, v)] * (len(pts) - 1))
    else:
        rows = [(*pos[u][:2], *pos[v][:2]) for u, v in edges]
        names = edges
    p = np.array(rows, dtype=np.float64)
    x1, y1, x2, y2 = p.T
    if np.any(x1 == x2):
        u, v = names[int(np.flatnonzero(x1 == x2)[0])]
        raise ValueError(f"edge {u!r} -> {v!r} is vertical; count_crossings needs layered x")
    flip = x1 > x2
    x1, x2 = np.where(flip, x2, x1), np.where(flip, x1, x2)
    y1, y2 = np.where(flip, y2, y1), np.where(flip, y1, y2)

    strips = np.unique(np.concatenate([x1, x2]))
    first = np.searchsorted(strips, x1)  # strip index where the edge starts
    span = np.searchsorted(strips, x2) - first
    # One piece per (edge, strip it crosses), with y at both strip borders.
    edge_of = np.repeat(np.arange(len(names)), span)
    strip = np.arange(edge_of.size) - np.repeat(np.cumsum(span) - span, span) + first[edge_of]
    dx = x2[edge_of] - x1[edge_of]
    t_left = (strips[strip] - x1[edge_of]) / dx
    t_right = (strips[strip + 1] - x1[edge_of]) / dx
    # y1 * (1 - t) + y2 * t hits the end points exactly at t = 0 and t = 1.
    ya, yb = y1[edge_of], y2[edge_of]
    y_left = ya * (1.0 - t_left) + yb * t_left
    y_right = ya * (1.0 - t_right) + yb * t_right
    # Interpolated values that are mathematically equal may differ in the
    # last bits; snapping to a grid ~1e-9 of the drawing's height makes "meet
    # in the same point" exact.  A power-of-two grid scales without rounding.
    top = float(np.abs(np.concatenate([y1, y2])).max())
    scale = 2.0 ** (30 - int(np.frexp(max(top, 1.0))[1]))
    ql = np.rint(y_left * scale).astype(np.int64)
    qr = np.rint(y_right * scale).astype(np.int64)

    # Crossing strictly inside a strip: the two pieces swap order.
    order = np.lexsort((qr, ql, strip))
    ranks = np.unique(qr, return_inverse=True)[1].reshape(-1)
    total = _grouped_inversions(strip[order], ranks[order], int(ranks.max()) + 1)

    # Crossing exactly on a strip border x: both edges pass through x (neither
    # ends there), meet at the same y and leave it in different directions.
    through = strip > first[edge_of]
    if np.any(through):
        total += _pairs_meeting(strip[through], ql[through], qr[through])
    return total


# --------------------------------------------------------------------------
# layer assignment
# --------------------------------------------------------------------------


def _assign_layers(g: nx.DiGraph) -> tuple[list[Node], list[int], list[list[int]]]:
    """Give every node a column; return (nodes, column per node, successors).

    Longest-path depth guarantees every edge points strictly right, but on
    its own it piles every constant and variable into column 0, far from the
    op that uses it, and leaves outputs computed early stranded mid-picture.
    Two cheap corrections fix what matters for reading a tape: nodes nobody
    consumes (outputs, the loss) are moved to the last column, and pure
    inputs are moved to just left of their first consumer.  Isolated nodes
    (say, a watched variable that was never used) stay in column 0 rather
    than being mistaken for outputs.

    Kahn's algorithm instead of DFS so that 5,000-long chains cannot hit the
    recursion limit; O(V + E).
    """
    if not g.is_directed():
        raise ValueError("layered layout needs a directed graph")
    nodes = list(g.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    # g.succ[n] holds each successor once, however many parallel edges.
    succ = [[index[v] for v in g.succ[n]] for n in nodes]
    indeg = [len(g.pred[n]) for n in nodes]

    depth = [0] * len(nodes)
    waiting = indeg[:]
    queue = deque(i for i, d in enumerate(indeg) if d == 0)
    done = 0
    while queue:
        u = queue.popleft()
        done += 1
        below = depth[u] + 1
        for v in succ[u]:
            if depth[v] < below:
                depth[v] = below
            waiting[v] -= 1
            if waiting[v] == 0:
                queue.append(v)
    if done != len(nodes):
        stuck = next(nodes[i] for i, w in enumerate(waiting) if w > 0)
        raise ValueError(f"graph has a cycle (through {stuck!r}); layered layout needs a DAG")

    last = max(depth, default=0)
    for i, s in enumerate(succ):
        if not s and indeg[i]:
            depth[i] = last
    # Sources are nobody's successor, so their successors are final by now.
    for i, s in enumerate(succ):
        if s and not indeg[i]:
            depth[i] = min(depth[v] for v in s) - 1
    return nodes, depth, succ


# --------------------------------------------------------------------------
# crossing reduction
# --------------------------------------------------------------------------


class _Proper:
    """The graph with every long edge cut into one-column segments.

    Barycentre ordering and crossing counting only make sense between
    neighbouring columns, so an edge spanning k columns is replaced by a
    chain through k - 1 dummy nodes.  Node ids are renumbered so that each
    column is a contiguous id range ``[col_start[c], col_start[c + 1])`` and
    segments are grouped by the column they leave, which lets every sweep
    step work on plain array slices.
    """

    def __init__(self, depth: list[int], succ: list[list[int]]) -> None:
        n_real = len(depth)
        layer = np.asarray(depth, dtype=np.int64)
        eu = np.fromiter((u for u, s in enumerate(succ) for _ in s), np.int64)
        ev = np.fromiter((v for s in succ for v in s), np.int64)
        span = layer[ev] - layer[eu]
        n_dummy_of = span - 1
        n_seg = int(span.sum())

        # Segment j of edge e runs from chain point j to chain point j + 1,
        # where chain point 0 is eu, the last one is ev and the rest are the
        # edge's dummies, numbered consecutively after the real nodes.
        edge_of = np.repeat(np.arange(eu.size), span)
        j = np.arange(n_seg) - np.repeat(np.cumsum(span) - span, span)
        dummy_base = n_real + np.repeat(np.cumsum(n_dummy_of) - n_dummy_of, span)
        seg_u = np.where(j == 0, eu[edge_of], dummy_base + j - 1)
        seg_v = np.where(j == span[edge_of] - 1, ev[edge_of], dummy_base + j)
        is_dummy_head = j > 0
        dummy_layer = layer[eu[edge_of[is_dummy_head]]] + j[is_dummy_head]
        all_layer = np.concatenate([layer, dummy_layer])

        # Initial order inside a column: real nodes in insertion order, then
        # dummies in edge order.  Stable, so it depends on nothing else.
        n_layers = int(layer.max()) + 1 if n_real else 0
        old_ids = _stable_order(all_layer, n_layers)
        new_id = np.empty_like(old_ids)
        new_id[old_ids] = np.arange(old_ids.size)
        col_size = np.bincount(all_layer, minlength=n_layers)
        self.col_start = np.concatenate([[0], np.cumsum(col_size)])
        self.layer = all_layer[old_ids]
        self.real = old_ids  # new id -> original index (>= n_real: dummy)
        self.n_real = n_real

        # Kept for routes: edge e runs eu[e] -> ev[e] (original indices) through
        # the dummies with old ids n_real + edge_dummy[e] + 0 .. span[e] - 2.
        self.edge_u, self.edge_v, self.edge_span = eu, ev, span
        self.edge_dummy = np.cumsum(n_dummy_of) - n_dummy_of

        seg_u, seg_v = new_id[seg_u], new_id[seg_v]
        by_col = _stable_order(self.layer[seg_u], n_layers)
        self.seg_u, self.seg_v = seg_u[by_col], seg_v[by_col]
        self.seg_col = self.layer[self.seg_u]
        self.seg_start = np.searchsorted(self.seg_col, np.arange(n_layers + 1))
        self.u_local = self.seg_u - self.col_start[self.seg_col]
        self.v_local = self.seg_v - self.col_start[self.seg_col + 1]
        self.width = int(col_size.max()) if n_layers else 0
        # rank of each node within its column; starts as the id order
        self.rank = np.arange(old_ids.size) - self.col_start[self.layer]
        self._u_local_list = self.u_local.tolist()
        self._v_local_list = self.v_local.tolist()
        # Segments between two dummies (the inner pieces of long edges) and
        # the others, for the fast crossing count.  A dummy has one segment
        # on each side, so chain segments never share an end node.
        chain = (self.real[self.seg_u] >= n_real) & (self.real[self.seg_v] >= n_real)
        self.chain_u, self.chain_v = self.seg_u[chain], self.seg_v[chain]
        self.chain_slot0 = self.col_start[self.seg_col[chain]]  # first slot of u's column
        self.other_u, self.other_v = self.seg_u[~chain], self.seg_v[~chain]
        self.other_col = self.seg_col[~chain]
        self.slot_col = np.repeat(np.arange(n_layers), col_size)  # column of each slot
        self.groups: GroupOrder | None = None  # set by group_by: columns ordered by group too

    def group_by(self, real_paths: Sequence[tuple[int, ...]]) -> None:
        """Order columns by the open groups ``real_paths[i]`` of each real node (ints, outermost
        first) from now on; a long edge's bend points are in the groups both its ends are in."""
        paths = list(real_paths)
        for u, v, span in zip(self.edge_u.tolist(), self.edge_v.tolist(), self.edge_span.tolist(), strict=True):
            if span > 1:
                a, b = real_paths[u], real_paths[v]
                n = 0
                while n < min(len(a), len(b)) and a[n] == b[n]:
                    n += 1
                paths.extend([a[:n]] * (span - 1))
        by_id = [paths[i] for i in self.real.tolist()]
        self.groups = GroupOrder(by_id, self.layer, self.col_start)
        self.groups.sort_all(self.rank)

    # ---------------------------------------------------------------- sweeps

    def sweep(self, forward: bool) -> None:
        """Reorder every column by the barycentre of its already-placed neighbours.

        A forward pass fixes column c - 1 and sorts column c, a backward pass
        the mirror image; alternating them lets information travel both ways.
        Nodes with no neighbour on the fixed side keep their current rank as
        their key, so they stay roughly where they were instead of all
        collapsing to one end.
        """
        n_cols = self.col_start.size - 1
        cols = range(1, n_cols) if forward else range(n_cols - 2, -1, -1)
        rank, col_start, seg_start = self.rank, self.col_start, self.seg_start
        grouped = self.groups
        if grouped is not None:
            grouped.update_keys(rank)
        for c in cols:
            lo, hi = int(col_start[c]), int(col_start[c + 1])
            if hi - lo < 2:
                continue
            if forward:
                a, b = int(seg_start[c - 1]), int(seg_start[c])
                who, other, who_list = self.v_local, self.seg_u, self._v_local_list
            else:
                a, b = int(seg_start[c]), int(seg_start[c + 1])
                who, other, who_list = self.u_local, self.seg_v, self._u_local_list
            if hi - lo <= _SMALL_LAYER:
                _reorder_small(rank, lo, hi, who_list[a:b], rank[other[a:b]].tolist())
            else:
                _reorder_numpy(rank, lo, hi, who[a:b], rank[other[a:b]])
            if grouped is not None:  # each group's slots together, in the siblings' shared order
                grouped.sort_column(rank, c)

    def crossings(self, stop_at: int | None = None) -> int:
        """Crossings between neighbouring columns, long edges via their dummies.

        With ``stop_at`` the result is exact only when it is below that value.

        After any barycentre sweep the dummy-to-dummy segments never cross
        each other: a dummy has one neighbour on each side, so the column
        being sorted orders its dummies exactly as their neighbours are
        ordered in the fixed column.  When that holds (it is checked, not
        assumed), only the few segments touching a real node need the full
        inversion count; their crossings with the sorted majority are read
        off with binary searches.  Same number, a fraction of the work on
        tapes where long edges are most of the segments.
        """
        if self.seg_u.size < 2:
            return 0
        total = self._crossings_around_chains()
        return total if total is not None else self.crossings_by_sorting(stop_at)

    def crossings_by_sorting(self, stop_at: int | None = None) -> int:
        """:meth:`crossings` for any order: sort all segments, count inversions."""
        if self.seg_u.size < 2:
            return 0
        ru, rv = self.rank[self.seg_u], self.rank[self.seg_v]
        w = max(self.width, 1)
        # (column, left rank, right rank) is unique per segment, so an
        # unstable sort of the packed key is safe and much faster.
        order = np.argsort((self.seg_col * w + ru) * w + rv)
        return _grouped_inversions(self.seg_col[order], rv[order], w, stop_at)

    def _crossings_around_chains(self) -> int | None:
        """:meth:`crossings` if the chain segments are uncrossed, else None.

        Two segments between columns c and c + 1 cross when their left ends
        and their right ends are in opposite orders.  Chain segments have
        distinct ends, so listing them by left end is a scatter into the
        slots (column, rank), no sort; if their right ranks then rise inside
        every column, a segment o touching a real node crosses exactly the
        chain segments left of it that end lower, plus those right of it
        that end higher, and both counts are differences of binary searches
        in that sorted list.  The few segments touching real nodes are
        sorted and counted among themselves as usual.
        """
        n_chain = self.chain_u.size
        if n_chain < 64 or 4 * n_chain < self.seg_u.size:
            return None
        rank, w = self.rank, max(self.width, 1)
        # chain segments by left slot: their columns and right ranks
        right_at = np.empty(self.layer.size, dtype=np.int64)
        used = np.zeros(self.layer.size, dtype=bool)
        slot = self.chain_slot0 + rank[self.chain_u]
        right_at[slot] = rank[self.chain_v]
        used[slot] = True
        bslot = np.flatnonzero(used)
        bkey = self.slot_col[bslot] * w + right_at[bslot]  # (column, right rank)
        if np.any(bkey[1:] < bkey[:-1]):
            return None
        ocol, a, b = self.other_col, rank[self.other_u], rank[self.other_v]
        first = np.searchsorted(bslot, self.col_start[ocol])  # chain segments of earlier columns
        left_of = np.searchsorted(bslot, self.col_start[ocol] + a) - first
        okey = ocol * w + b
        not_above = np.searchsorted(bkey, okey, side="right") - first
        below = np.searchsorted(bkey, okey, side="left") - first
        # The first `left_of` chain segments of the column are also the lowest ending.
        total = int(np.maximum(left_of - not_above, 0).sum()) + int(np.maximum(below - left_of, 0).sum())
        order = np.argsort((ocol * w + a) * w + b)
        return total + _grouped_inversions(ocol[order], b[order], w)

    def coordinates(self, layer_gap: float, node_gap: float) -> tuple[np.ndarray, np.ndarray]:
        """x and y of every node, real and dummy, indexed by original id.

        Real nodes sit on rows ``node_gap`` apart, each column centred on 0,
        counting real nodes only (dummies take no row).  Dummies get the
        slots described in :func:`layered_routes`.  Everything is computed
        on the column-major "slot" order (column, rank) in a few array
        passes.
        """
        n = self.layer.size
        slot = self.col_start[self.layer] + self.rank  # a permutation of 0..n-1
        at = np.empty(n, dtype=np.int64)
        at[slot] = np.arange(n)
        is_real = self.real[at] < self.n_real
        col = self.layer[at]
        # a: real nodes above this slot in its column; k: real nodes in it.
        cum = np.concatenate([[0], np.cumsum(is_real)])
        col_real = np.diff(cum[self.col_start])
        a = cum[:-1] - cum[self.col_start[col]]
        k = col_real[col]
        y = ((k - 1) / 2.0 - a) * node_gap  # real nodes; dummies overwritten

        # Dummies: runs of consecutive dummy slots between the same two real
        # nodes (or above / below all of them) share the free band there.
        dummy = ~is_real
        if dummy.any():
            starts_col = np.zeros(n, dtype=bool)
            starts_col[self.col_start[:-1][np.diff(self.col_start) > 0]] = True
            prev_real = np.concatenate([[True], is_real[:-1]])
            run_start = dummy & (starts_col | prev_real)
            run_id = np.cumsum(run_start) - 1
            ds = np.flatnonzero(dummy)
            rid = run_id[ds]
            j = ds - np.flatnonzero(run_start)[rid]  # index inside the run, top first
            d = np.bincount(rid)[rid]  # run length
            da, dk = a[ds], k[ds]
            half_box = BOX_H * node_gap / 2
            caption = CAPTION_H * node_gap
            free = node_gap - 2 * half_box - caption  # band between a caption and the next box
            stack = _STACK_GAP * node_gap
            top = (dk - 1) / 2.0 * node_gap  # y of the column's top node
            yd = np.where(
                dk == 0,
                ((d - 1) / 2.0 - j) * stack,  # a column of dummies only
                np.where(
                    da == 0,  # above the top box, the lowest one half a band clear of it
                    top + half_box + free / 2 + (d - 1 - j) * stack,
                    np.where(
                        da == dk,  # below the bottom caption, likewise
                        -top - half_box - caption - free / 2 - j * stack,
                        # between node da - 1 and node da: spread over the band
                        top - (da - 1) * node_gap - half_box - caption - (j + 1) * free / (d + 1),
                    ),
                ),
            )
            y[ds] = yd
        y_new = np.empty(n, dtype=np.float64)
        y_new[at] = y
        x_old = np.empty(n, dtype=np.float64)
        y_old = np.empty(n, dtype=np.float64)
        x_old[self.real] = self.layer * layer_gap
        y_old[self.real] = y_new
        return x_old, y_old

    def stacked_coordinates(self, layer_gap: float, node_gap: float, pad: FramePad) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`coordinates` with the rows stacked by group (:meth:`GroupOrder.stacked_y`):
        real nodes where their group's block puts them, and so are bend points next to a
        block (outside its frame); the others, as there, in the free band under the real
        node above them in their column (spread over it), or stacked above the top node /
        below the bottom one."""
        assert self.groups is not None
        n = self.layer.size
        is_real = self.real < self.n_real
        ys = self.groups.stacked_y(self.rank, is_real, pad)
        y = np.zeros(n, dtype=np.float64)
        half_box, caption, stack = BOX_H / 2, CAPTION_H, _STACK_GAP
        free = 1.0 - 2 * half_box - caption
        for c in range(self.col_start.size - 1):
            lo, hi = int(self.col_start[c]), int(self.col_start[c + 1])
            slots = sorted(range(lo, hi), key=lambda i: self.rank[i])
            reals = [i for i in slots if is_real[i]]
            for i in reals:
                y[i] = ys[i]
            # runs of bend points between two real nodes (None: the column's end)
            above: int | None = None
            run: list[int] = []
            ends: list[int | None] = [*slots, None]
            for at in ends:
                if at is not None and not is_real[at]:
                    run.append(at)
                    continue
                d = len(run)
                for j, k in enumerate(run):
                    if above is None and at is None:  # a column of bend points only
                        y[k] = ((d - 1) / 2.0 - j) * stack
                    elif above is None and at is not None:  # above the top box
                        y[k] = ys[at] + half_box + free / 2 + (d - 1 - j) * stack
                    elif above is not None and at is None:  # under the bottom caption
                        y[k] = ys[above] - half_box - caption - free / 2 - j * stack
                    elif above is not None and at is not None:  # between two boxes: over the band between them
                        band = ys[above] - ys[at] - 2 * half_box - caption
                        y[k] = ys[above] - half_box - caption - (j + 1) * band / (d + 1)
                run = []
                above = at
        for k, at_y in ys.items():  # bend points passing a frame: where the stacking put them
            if not is_real[k]:
                y[k] = at_y
        x_old = np.empty(n, dtype=np.float64)
        y_old = np.empty(n, dtype=np.float64)
        x_old[self.real] = self.layer * layer_gap
        y_old[self.real] = y * node_gap
        return x_old, y_old

    def columns(self) -> list[np.ndarray]:
        """Original node indices per column, in rank order, dummies dropped."""
        real = self.real < self.n_real
        ids = np.flatnonzero(real)
        ids = ids[np.lexsort((self.rank[ids], self.layer[ids]))]
        bounds = np.searchsorted(self.layer[ids], np.arange(self.col_start.size))
        return [self.real[ids[bounds[c] : bounds[c + 1]]] for c in range(self.col_start.size - 1)]


def _stable_order(keys: np.ndarray, bound: int) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for ``0 <= keys < bound``.

    Column numbers rarely need more than 16 bits, and numpy sorts 16-bit
    integers stably with a radix sort, several times faster than the merge
    sort it uses for int64.  Same permutation either way.
    """
    if bound <= 1 << 16:
        keys = keys.astype(np.uint16)
    return np.argsort(keys, kind="stable")


def _reorder_numpy(rank: np.ndarray, lo: int, hi: int, who: np.ndarray, other_rank: np.ndarray) -> None:
    w = hi - lo
    cur = rank[lo:hi]
    sums = np.bincount(who, weights=other_rank, minlength=w)
    cnt = np.bincount(who, minlength=w)
    key = cur.astype(np.float64)
    np.divide(sums, cnt, out=key, where=cnt > 0)
    # Sort by (key, cur): a stable sort of the keys listed in current rank
    # order.  Timsort is adaptive and after the first sweeps the keys are
    # nearly in rank order already, so this beats a two-key lexsort.
    by_rank = np.empty(w, dtype=np.int64)
    by_rank[cur] = np.arange(w)
    new_order = by_rank[np.argsort(key[by_rank], kind="stable")]
    rank[lo + new_order] = np.arange(w)


def _reorder_small(rank: np.ndarray, lo: int, hi: int, who: list[int], other_rank: list[int]) -> None:
    w = hi - lo
    cur = rank[lo:hi].tolist()
    sums = [0] * w
    cnt = [0] * w
    for k, r in zip(who, other_rank, strict=True):
        sums[k] += r
        cnt[k] += 1
    key = [(sums[k] / cnt[k] if cnt[k] else float(cur[k]), cur[k]) for k in range(w)]
    new_order = sorted(range(w), key=key.__getitem__)
    rank[[lo + k for k in new_order]] = np.arange(w)


def _place(
    g: nx.DiGraph,
    layer_gap: float,
    node_gap: float,
    sweeps: int,
    *,
    want_routes: bool,
    groups: Mapping[Node, Sequence[Hashable]] | None = None,
    frame_pad: FramePad | None = None,
) -> tuple[dict[Node, Point], dict[tuple[Node, Node], list[Point]]]:
    """Positions (and, if wanted, bend points) for the public layout functions."""
    if layer_gap <= 0 or node_gap <= 0:
        raise ValueError("layer_gap and node_gap must be positive")
    nodes, proper, _, _ = _reduce(g, sweeps, groups)
    if proper is None:  # an empty graph
        return {}, {}
    if proper.groups is not None:
        pad = frame_pad or FramePad(top=0.0, bottom=0.0, nest=0.0, box=BOX_H, caption=CAPTION_H)
        xs, ys = proper.stacked_coordinates(layer_gap, node_gap, pad)
    else:
        xs, ys = proper.coordinates(layer_gap, node_gap)
    n_real = len(nodes)
    pos = {n: (x, y) for n, x, y in zip(nodes, xs[:n_real].tolist(), ys[:n_real].tolist(), strict=True)}
    routes: dict[tuple[Node, Node], list[Point]] = {}
    if want_routes:
        bends = list(zip(xs[n_real:].tolist(), ys[n_real:].tolist(), strict=True))
        eu, ev = proper.edge_u.tolist(), proper.edge_v.tolist()
        first, span = proper.edge_dummy.tolist(), proper.edge_span.tolist()
        for e in np.flatnonzero(proper.edge_span > 1).tolist():
            routes[(nodes[eu[e]], nodes[ev[e]])] = bends[first[e] : first[e] + span[e] - 1]
    return pos, routes


def _ordered_layers(g: nx.DiGraph, sweeps: int) -> tuple[list[Node], list[np.ndarray], int | None, int | None]:
    """Layer ``g`` and run the crossing reduction, keeping the best order seen.

    Barycentre sweeps are not monotone (a pass can undo part of the previous
    one's gain), so the ranks after every pass are scored and the best set
    is kept; ``sweeps`` is then a pure "try harder" knob that can never make
    the result worse.

    Returns (nodes, original indices per column, crossings of the initial
    order, crossings of the kept order), the counts being the internal
    objective with long edges routed through their dummies; with no sweeps
    nothing is counted and both are None.
    """
    nodes, proper, initial, best = _reduce(g, sweeps)
    if proper is None:  # an empty graph
        return [], [], 0, 0
    return nodes, proper.columns(), initial, best


def _reduce(
    g: nx.DiGraph, sweeps: int, groups: Mapping[Node, Sequence[Hashable]] | None = None
) -> tuple[list[Node], _Proper | None, int | None, int | None]:
    """:func:`_ordered_layers` before the columns are read out (dummies included);
    no _Proper (None) for an empty graph. With ``groups`` (node -> its open groups,
    outermost first) every order tried keeps each group's slots together."""
    if sweeps < 0:
        raise ValueError("sweeps must be >= 0")
    nodes, depth, succ = _assign_layers(g)
    if not nodes:
        return [], None, 0, 0
    ids: dict[Hashable, int] = {}
    paths = [tuple(ids.setdefault(gid, len(ids)) for gid in groups.get(n, ())) for n in nodes] if groups else []
    if ids:  # no group shares its columns with what feeds it or uses it
        depth = separate_columns(depth, succ, paths)
    proper = _Proper(depth, succ)
    if ids:
        proper.group_by(paths)
    if not sweeps:
        return nodes, proper, None, None
    initial = best = proper.crossings()
    best_rank = proper.rank.copy()
    for i in range(2 * sweeps):
        if best == 0:
            break
        proper.sweep(forward=(i % 2 == 0))
        score = proper.crossings(stop_at=best)
        if score < best:
            best, best_rank = score, proper.rank.copy()
    proper.rank = best_rank
    if proper.groups is not None:  # one order of sibling groups in every column, for stacking
        proper.groups.sort_all(proper.rank)
    return nodes, proper, initial, best


# --------------------------------------------------------------------------
# counting helpers
# --------------------------------------------------------------------------


def _edge_sort_key(g: nx.DiGraph):
    """Order edges by the insertion order of their end nodes.

    Needed because node ids may be a mix of ints and strings, which do not
    compare with each other, and set order must not leak into any result.
    """
    index = {n: i for i, n in enumerate(g.nodes)}
    return lambda e: (index[e[0]], index[e[1]])


def _grouped_inversions(group: np.ndarray, values: np.ndarray, bound: int, stop_at: int | None = None) -> int:
    """Count pairs i < j with group[i] == group[j] and values[i] > values[j].

    ``group`` must be non-decreasing and ``0 <= values < bound``.  With the
    segments of each column pair sorted by their left end, inversions of the
    right ends are exactly the crossings.

    A Fenwick tree would need a Python loop per segment, far too slow for the
    hundreds of thousands of segments a big graph produces, so this walks the
    bits of the values from the top instead: pairs that first differ in bit b
    are counted with one cumulative sum, then every group is stably split on
    that bit so the next level sees groups of equal prefix, still in original
    order.  O(n log bound), a couple of dozen array passes per bit.  The
    passes are memory bound, hence int32 and reused buffers (fresh
    temporaries of this size cost more in page faults than in arithmetic).

    The total only grows from level to level, so with ``stop_at`` the count
    gives up once it reaches that value: a candidate ordering that is already
    no better than the best one known needs no exact score.
    """
    n = values.size
    if n < 2:
        return 0
    dt = np.int32 if n < 2**31 - 1 else np.int64
    v = values.astype(dt)
    spare_v = np.empty(n, dt)
    fresh = np.empty(n, dtype=bool)  # True where a group of equal prefix starts
    fresh[0] = True
    np.not_equal(group[1:], group[:-1], out=fresh[1:])
    idx = np.arange(n, dtype=dt)
    bit, ones, before, tmp, dest = (np.empty(n, dt) for _ in range(5))
    total = 0
    for b in range(max(1, (bound - 1).bit_length()) - 1, -1, -1):
        starts = np.flatnonzero(fresh).astype(dt)
        if starts.size == n:  # every element alone in its group
            break
        ends = np.append(starts[1:], dt(n))
        sizes = ends - starts
        np.right_shift(v, b, out=bit)
        np.bitwise_and(bit, 1, out=bit)
        np.cumsum(bit, out=ones)
        np.subtract(ones, bit, out=before)  # ones strictly before, globally
        ones_pre = before[starts]  # ... before each group starts
        zeros_in = sizes - (ones[ends - 1] - ones_pre)
        # Each zero pairs with the ones before it in its own group.
        np.multiply(before, bit, out=tmp)
        total += (
            int(before.sum(dtype=np.int64))
            - int(tmp.sum(dtype=np.int64))
            - int(np.dot(zeros_in.astype(np.int64), ones_pre.astype(np.int64)))
        )
        if stop_at is not None and total >= stop_at:
            return total
        # Stable split: zeros go to idx - before + ones_pre[group], ones to
        # starts + zeros_in - ones_pre [group] + before; blend by the bit.
        np.subtract(idx, before, out=dest)
        dest += np.repeat(ones_pre, sizes)
        np.add(before, np.repeat(starts + zeros_in - ones_pre, sizes), out=tmp)
        tmp -= dest
        tmp *= bit
        dest += tmp
        spare_v[dest] = v
        v, spare_v = spare_v, v
        fresh[(starts + zeros_in)[(zeros_in > 0) & (zeros_in < sizes)]] = True
    return total


def _pairs_meeting(strip: np.ndarray, y_here: np.ndarray, y_next: np.ndarray) -> int:
    """Pairs that share (strip, y_here) but not y_next: lines crossing at a border."""
    key = np.stack([strip, y_here, y_next])
    _, meet = np.unique(key[:2], axis=1, return_counts=True)
    _, same = np.unique(key, axis=1, return_counts=True)
    return int((meet * (meet - 1) // 2).sum() - (same * (same - 1) // 2).sum())

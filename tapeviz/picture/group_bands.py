"""Group bands: the layered layout's columns ordered and stacked so that each open group is
one rectangle.

An opened block is drawn as a frame around its boxes (frames.py). The crossing reduction
orders each column by the flow alone, so a group's boxes may sit among those of other
groups (an input beside the model's first op, a loss term between two of the decoder's
layers), and then no rectangle holds the group's boxes and nothing else. Here each
column is ordered by the group tree first: a group's slots are contiguous, nested groups
nested, in one order of sibling groups shared by all columns (a constrained barycentre
ordering). Then the rows are stacked by group, not per column: every group is a block
as tall as its tallest column, with room for its frame and its name above, and the boxes
of other groups go above or below it wherever they share a column (a skyline packing, in
the columns' order). The layout (layout.py) calls this only when it is given groups; a
picture with no open group keeps its plain centred columns.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["FramePad", "GroupOrder", "separate_columns"]

Node = Hashable

#: Space between the blocks of two groups (or a group and a box) stacked in one column, in rows.
BLOCK_GAP = 0.1


@dataclass(frozen=True)
class FramePad:
    """How far a frame reaches beyond its boxes, in rows (frames.py's margins): ``top`` above
    the top box per open group nested in it plus one (its name's band), ``bottom`` under the
    lowest box, ``nest`` more under it per group nested inside; ``box`` and ``caption`` are
    a box's height and the gradient's strip under it; ``stack`` the room each bend point
    passing a frame (above or below it) takes."""

    top: float
    bottom: float
    nest: float
    box: float
    caption: float
    stack: float = 0.2  # rows between bend points passing a group's frame, one above the other


class GroupOrder:
    """The open groups of a layered layout's slots (real nodes and long edges' bend points)
    and the order they impose on its columns.

    ``paths[i]`` is the tuple of open groups (ints, outermost first) holding slot ``i``; a
    bend point belongs to the groups both ends of its edge are in.
    """

    def __init__(self, paths: Sequence[tuple[int, ...]], layer: np.ndarray, col_start: np.ndarray) -> None:
        self.paths = list(paths)
        self.layer = layer
        self.col_start = col_start
        self.keys: dict[int, float] = {}
        self.slot_key: list[tuple] = [()] * len(self.paths)  # the key each slot was last sorted by
        # columns whose slots are all in the same groups: the flow's order is the group's order
        bounds = col_start.tolist()
        self.uniform = [len(set(self.paths[lo:hi])) <= 1 for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]

    def update_keys(self, rank: np.ndarray) -> None:
        """Each group's key: the mean centred rank of its slots over all its columns, so that
        sibling groups take one order in every column (the one the flow prefers on average)."""
        size = np.diff(self.col_start)[self.layer]
        centred = (rank - (size - 1) / 2.0).tolist()
        sums: dict[int, float] = {}
        count: dict[int, int] = {}
        for v, path in zip(centred, self.paths, strict=True):
            for g in path:
                sums[g] = sums.get(g, 0.0) + v
                count[g] = count.get(g, 0) + 1
        self.keys = {g: sums[g] / count[g] for g in sums}

    def sort_column(self, rank: np.ndarray, c: int, *, keep: bool = False) -> None:
        """Reorder column ``c`` by the group tree (groups by their keys, outermost first),
        then by the slot's own rank: each group's slots contiguous, nested ones nested.
        ``keep``: remember every slot's key, even in a column that needs no sorting."""
        if self.uniform[c] and not keep:
            return
        lo, hi = int(self.col_start[c]), int(self.col_start[c + 1])
        mid = (hi - lo - 1) / 2.0
        keys = self.keys
        ranks = rank[lo:hi].tolist()
        for i, r in zip(range(lo, hi), ranks, strict=True):
            self.slot_key[i] = (*((keys[g], g) for g in self.paths[i]), (r - mid, -1))
        if self.uniform[c]:
            return  # the keys differ by rank alone: the order stays
        order = sorted(range(lo, hi), key=self.slot_key.__getitem__)
        rank[order] = np.arange(hi - lo)

    def sort_all(self, rank: np.ndarray) -> None:
        """Fresh keys, then every column sorted by them: one order of siblings everywhere."""
        self.update_keys(rank)
        for c in range(self.col_start.size - 1):
            self.sort_column(rank, c, keep=True)

    # ------------------------------------------------------------------ coordinates

    def stacked_y(self, rank: np.ndarray, is_real: np.ndarray, pad: FramePad) -> dict[int, float]:
        """y (in rows, up positive, centred on 0) of every real slot: groups stacked as blocks.

        In each group (and at the top level) its direct boxes and the blocks of the groups
        inside are placed in the order of their sort keys, each as high as the columns it
        spans allow (a skyline): a box takes one row, a block the rows of its content plus
        its frame's margins. Must follow :meth:`sort_all`, whose keys it reads.
        """
        real = [i for i in range(len(self.paths)) if is_real[i]]
        children: dict[int | None, list] = {}  # container -> [(key, kind, id)]: 0 a box, 1 a group, 2 a bend point
        for i in range(len(self.paths)):
            if not is_real[i]:
                path = self.paths[i]
                children.setdefault(path[-1] if path else None, []).append((self.slot_key[i][-1], 2, i))
        parent: dict[int, int | None] = {}
        cols: dict[int, list[int]] = {}  # group -> [first, last] column of its real slots
        self._cols = cols
        for i in real:
            path = self.paths[i]
            key = self.slot_key[i]
            children.setdefault(path[-1] if path else None, []).append((key[-1], 0, i))
            for depth, g in enumerate(path):
                if g not in parent:
                    parent[g] = path[depth - 1] if depth else None
                    children.setdefault(parent[g], []).append(((self.keys[g], g), 1, g))
                c = int(self.layer[i])
                span = cols.setdefault(g, [c, c])
                span[0], span[1] = min(span[0], c), max(span[1], c)
        inner: dict[int, int] = {}  # open groups nested inside each (on its deepest path)
        for i in real:
            path = self.paths[i]
            for depth, g in enumerate(path):
                inner[g] = max(inner.get(g, 0), len(path) - 1 - depth)

        # Blocks bottom-up (deepest groups first): local tops (down positive) of their content.
        block_h: dict[int, float] = {}
        offset: dict[int | None, dict] = {}  # container -> {item: its top inside the container}
        order = sorted(parent, key=lambda g: -self._depth(g, parent))
        for container in [*order, None]:
            items = sorted(children.get(container, []), key=lambda t: t[0])
            spacers = self._spacers(items)
            sky: dict[int, float] = {}
            tops: dict = {}
            for _, kind, ident in items:
                if kind == 2 and ident not in spacers:
                    continue  # a bend point between boxes: in the band under a box (layout.py)
                lo, hi = (cols[ident][0], cols[ident][1]) if kind == 1 else (int(self.layer[ident]),) * 2
                top = max((sky.get(c, 0.0) for c in range(lo, hi + 1)), default=0.0)
                height = block_h[ident] if kind == 1 else 1.0 if kind == 0 else pad.stack
                tops[(kind, ident)] = top
                for c in range(lo, hi + 1):
                    sky[c] = top + height
            offset[container] = tops
            if container is None:
                continue
            # where the content's boxes are, and the frame around them (frames.py's margins)
            members = [i for i in real if container in self.paths[i]]
            centre = {i: self._centre(i, container, offset, parent) for i in members}
            k = inner[container]
            first = min(centre.values()) - pad.box / 2 - (k + 1) * pad.top - BLOCK_GAP / 2
            last = max(centre.values()) + pad.box / 2 + pad.bottom + k * pad.nest + BLOCK_GAP / 2
            shift = max(0.0, -first)
            for key in tops:
                tops[key] += shift
            block_h[container] = max(max(sky.values(), default=0.0) + shift, last + shift)
        out = {}
        for i in real:
            out[i] = self._centre(i, None, offset, parent)
        for tops in offset.values():
            for kind, ident in tops:
                if kind == 2:
                    out[ident] = self._centre(ident, None, offset, parent, kind=2, half=pad.stack / 2)
        lowest = max(out.values(), default=0.0)
        return {i: lowest / 2 - y for i, y in out.items()}

    def _spacers(self, items: list) -> set[int]:
        """The bend points of ``items`` (one container's, in order) next to a group's block in
        their column, or in a run of bend points that is: they pass the block outside its
        frame, each in a row of its own (:data:`FramePad.stack`), not through its name."""
        by_col: dict[int, list] = {}
        for _, kind, ident in items:
            if kind == 1:
                for c in range(self._cols[ident][0], self._cols[ident][1] + 1):
                    by_col.setdefault(c, []).append((1, ident))
            else:
                by_col.setdefault(int(self.layer[ident]), []).append((kind, ident))
        out: set[int] = set()
        for seq in by_col.values():
            run: list[int] = []
            before = None
            for kind, ident in [*seq, (None, None)]:
                if kind == 2:
                    run.append(ident)
                    continue
                if run and (before == 1 or kind == 1):
                    out.update(run)
                run, before = [], kind
        return out

    @staticmethod
    def _depth(g: int, parent: Mapping[int, int | None]) -> int:
        d = 0
        while (g := parent[g]) is not None:  # type: ignore[assignment]
            d += 1
        return d

    def _centre(self, i: int, container, offset, parent, kind: int = 0, half: float = 0.5) -> float:
        """Row centre of slot ``i`` (a box, or a bend point: ``kind`` 2) from the top of
        ``container`` (None: the picture); ``half`` its row's half height."""
        path = self.paths[i]
        own = path[-1] if path else None
        y = offset[own][(kind, i)] + half
        g = own
        while g is not None and g != container:
            up = parent[g]
            y += offset[up][(1, g)]
            g = up
        return y


def separate_columns(depth: list[int], succ: Sequence[Sequence[int]], paths: Sequence[tuple[int, ...]]) -> list[int]:
    """Columns (``depth``, one per node) moved so that no open group shares its columns with
    the nodes before or after it in the flow: what feeds a group is left of its first
    column, what it feeds is right of its last one. Then a group too long for one row, in
    rows of its own, holds no other box: the boxes beside it in a column (stacked by
    :meth:`GroupOrder.stacked_y`) are the ones that neither feed it nor use it.

    An input (a node with no producer) that feeds the group moves to just left of it; any
    other node that feeds it makes the whole group move right (its columns keep their
    spacing); a node that uses it moves right of it, and with it whatever it feeds; so does
    a node that neither feeds it nor uses it (a branch beside it, a label beside the model's
    last layer): beside a group longer than a row, no place in its columns is outside its
    frame. Groups are taken outermost first; a node that both uses a group and feeds it
    stays where it is.
    """
    n = len(depth)
    depth = list(depth)
    pred: list[list[int]] = [[] for _ in range(n)]
    for u, s in enumerate(succ):
        for v in s:
            pred[v].append(u)
    order = _topological(succ, pred)
    members: dict[int, list[int]] = {}
    for i, path in enumerate(paths):
        for g in path:
            members.setdefault(g, []).append(i)
    groups = sorted(members, key=lambda g: paths[members[g][0]].index(g))  # outermost first

    def push() -> None:  # every edge points right again
        for u in order:
            for v in succ[u]:
                if depth[v] <= depth[u]:
                    depth[v] = depth[u] + 1

    for _ in range(2):
        for g in groups:
            inside = set(members[g])
            later = _reach(inside, succ)
            earlier = _reach(inside, pred)
            for _ in range(n + 1):  # each round moves the group or what is in its columns, or stops
                a = min(depth[i] for i in inside)
                b = max(depth[i] for i in inside)
                stray = [v for v in range(n) if v not in inside and a <= depth[v] <= b]
                stray = [v for v in stray if not (v in later and v in earlier)]
                if not stray:
                    break
                feeding = [v for v in stray if v in earlier]
                shift = max((depth[v] - a + 1 for v in feeding if pred[v] or a == 0), default=0)
                if shift:  # what feeds it and cannot move left: the group moves right
                    for i in inside:
                        depth[i] += shift
                else:
                    for v in feeding:  # inputs: just left of it
                        depth[v] = a - 1
                    for v in stray:
                        if v not in earlier:  # what it feeds, or a branch beside it: after it
                            depth[v] = b + 1
                push()
    low = min(depth, default=0)
    return [d - low for d in depth]


def _topological(succ: Sequence[Sequence[int]], pred: Sequence[Sequence[int]]) -> list[int]:
    waiting = [len(p) for p in pred]
    queue = [i for i, w in enumerate(waiting) if w == 0]
    out = []
    while queue:
        u = queue.pop()
        out.append(u)
        for v in succ[u]:
            waiting[v] -= 1
            if waiting[v] == 0:
                queue.append(v)
    return out


def _reach(start: set[int], step: Sequence[Sequence[int]]) -> set[int]:
    """The nodes reachable from ``start`` along ``step`` (successors or producers), outside it."""
    seen: set[int] = set()
    todo = [v for u in start for v in step[u] if v not in start]
    while todo:
        v = todo.pop()
        if v in seen or v in start:
            continue
        seen.add(v)
        todo.extend(step[v])
    return seen

"""Group bands (tapeviz/picture/group_bands.py): with open groups, the layered layout keeps
each group's boxes in one rectangle holding no other box."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from tapeviz.picture.group_bands import FramePad, GroupOrder, separate_columns
from tapeviz.picture.layout import layered_layout, layered_routes
from tapeviz.picture.style import BOX_H, CAPTION_H

PAD = FramePad(top=0.25, bottom=CAPTION_H + 0.03, nest=0.04, box=BOX_H, caption=CAPTION_H)


def _rectangle(pos, members, pad=PAD, inner=0):
    """The frame frames.py draws around ``members`` (box centres in ``pos``), as (x0, x1, y0, y1)."""
    xs = [pos[n][0] for n in members]
    ys = [pos[n][1] for n in members]
    return (
        min(xs) - 0.4,
        max(xs) + 0.4,
        min(ys) - BOX_H / 2 - pad.bottom - inner * pad.nest,
        max(ys) + BOX_H / 2 + (inner + 1) * pad.top,
    )


def _strangers(pos, rect, members):
    x0, x1, y0, y1 = rect
    return [
        n for n, (x, y) in pos.items() if n not in members and x0 < x < x1 and y0 < y + BOX_H / 2 and y - BOX_H / 2 < y1
    ]


def test_separate_columns_moves_inputs_left_users_right_and_keeps_the_group_whole():
    # x -> a -> b -> c -> loss, a label y -> loss, an input w of b; {a, b, c} is a group
    nodes = ["x", "a", "b", "c", "loss", "y", "w", "side"]
    edges = [("x", "a"), ("a", "b"), ("b", "c"), ("c", "loss"), ("y", "loss"), ("w", "b"), ("a", "side")]
    ix = {n: i for i, n in enumerate(nodes)}
    succ = [[ix[v] for u, v in edges if u == n] for n in nodes]
    depth = [0, 1, 2, 3, 4, 2, 1, 2]  # y and side sit in the group's columns, w in its first
    paths = [(0,) if n in "abc" else () for n in nodes]
    out = dict(zip(nodes, separate_columns(depth, succ, paths), strict=True))
    first, last = out["a"], out["c"]
    assert (out["b"] - first, last - first) == (1, 2)  # the group's own spacing kept
    assert out["w"] < first and out["x"] < first  # what feeds it: left of it
    assert out["side"] > last and out["loss"] > last and out["y"] > last  # what uses it, an input of what follows
    assert all(out[v] > out[u] for u, v in edges)  # every edge still points right


def test_separate_columns_leaves_a_node_that_uses_and_feeds_a_group():
    # a -> o -> b with a, b in one group and o outside: o cannot leave the group's columns
    succ = [[1], [2], []]
    out = separate_columns([0, 1, 2], succ, [(0,), (), (0,)])
    assert out == [0, 1, 2]


def test_group_order_keeps_each_group_contiguous_in_every_column():
    # one column of six slots, groups interleaved: 0 and 1 alternate, the last slot loose
    layer = np.zeros(6, dtype=np.int64)
    col_start = np.array([0, 6])
    paths = [(0,), (1,), (0,), (1,), (0, 2), ()]
    order = GroupOrder(paths, layer, col_start)
    rank = np.arange(6)
    order.sort_all(rank)
    by_rank = [paths[i] for i in np.argsort(rank)]
    seen: list = []
    for p in by_rank:  # each group's slots form one run, nested ones inside
        top = p[0] if p else None
        if seen and seen[-1] != top:
            assert top not in seen, by_rank
        seen.append(top)
    assert sorted(rank.tolist()) == list(range(6))


def test_layered_routes_with_groups_puts_no_other_box_in_a_frame():
    # two chains side by side, one of them a group, plus an input beside the group's ops
    g = nx.DiGraph()
    g.add_edges_from([("x", "a1"), ("a1", "a2"), ("a2", "a3"), ("a3", "loss")])
    g.add_edges_from([("x", "b1"), ("b1", "b2"), ("b2", "loss"), ("k", "a2"), ("c", "b2")])
    plain = layered_layout(g)
    group = {"a1", "a2", "a3", "k"}
    assert _strangers(plain, _rectangle(plain, group), group)  # the flow alone mixes them
    groups = {n: ("A",) if n in group else () for n in g}
    pos, routes = layered_routes(g, groups=groups, frame_pad=PAD)
    assert set(pos) == set(g) and not _strangers(pos, _rectangle(pos, group), group)
    assert all(pos[v][0] > pos[u][0] for u, v in g.edges)
    for (u, v), bends in routes.items():  # one bend point per column passed
        assert len(bends) == round(pos[v][0] - pos[u][0]) - 1


def test_layered_routes_with_nested_groups_nests_their_frames():
    g = nx.DiGraph([("x", "a"), ("a", "b"), ("b", "c"), ("c", "d"), ("x", "e"), ("e", "d"), ("k", "b")])
    groups = {"a": ("M",), "b": ("M", "N"), "c": ("M", "N"), "k": ("M", "N"), "d": (), "x": (), "e": ()}
    pos, _ = layered_routes(g, groups=groups, frame_pad=PAD)
    inner = {"b", "c", "k"}
    outer = inner | {"a"}
    r_in, r_out = _rectangle(pos, inner), _rectangle(pos, outer, inner=1)
    assert not _strangers(pos, r_in, inner) and not _strangers(pos, r_out, outer)
    assert r_out[2] < r_in[2] and r_in[3] < r_out[3]  # the outer frame holds the inner one, its name above


def test_layered_routes_without_groups_is_the_plain_layout():
    g = nx.DiGraph([("a", "b"), ("b", "c"), ("a", "c")])
    assert layered_routes(g, groups={n: () for n in g}) == layered_routes(g)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_layered_routes_with_groups_keeps_edges_pointing_right_on_random_graphs(seed):
    rng = np.random.default_rng(seed)
    g = nx.DiGraph()
    n = 40
    g.add_nodes_from(range(n))
    for v in range(1, n):
        for u in rng.choice(v, size=min(v, 2), replace=False).tolist():
            g.add_edge(int(u), v)
    groups = {v: (("G",) if 10 <= v < 20 else ()) + (("H",) if 14 <= v < 17 else ()) for v in g}
    pos, _ = layered_routes(g, groups=groups, frame_pad=PAD)
    assert all(pos[v][0] > pos[u][0] for u, v in g.edges)
    ys = {}
    for v, (x, y) in pos.items():  # no two boxes share a place
        assert (x, round(y, 6)) not in ys
        ys[(x, round(y, 6))] = v

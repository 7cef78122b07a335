"""Routing (tapeviz/picture/routing.py): an edge from one row into the top box of a column
of the next row goes straight down into that box's top; one into a box under another comes
down beside their column into its top when that is shorter; an edge past whole rows goes
down the right margin; every other edge keeps its port on its consumer's left side."""

from types import SimpleNamespace

import networkx as nx
import pytest

from tapeviz.picture.layout import layered_routes
from tapeviz.picture.routing import (
    BESIDE,
    TOP_IN,
    edge_plans,
    edge_route,
    label_anchor,
    legs_through,
    margin_legs,
    side_entries,
    top_entries,
)
from tapeviz.picture.rows import wrap_bands
from tapeviz.picture.style import BOX_H, BOX_W

LANE_Y = -1.0


def wrapped():
    """a ends row 0; b tops column 0 of row 1 with c under it, d is column 1 of row 1.
    a feeds b and c (one lane back, as rows.wrap_bands gives them), b feeds d."""
    g = nx.MultiDiGraph()
    g.add_edges_from([("a", "b"), ("a", "c"), ("b", "d")])
    pos = {"a": (1.0, 0.0), "b": (0.0, -2.0), "c": (0.0, -3.0), "d": (1.0, -2.0)}
    routes = {("a", "b"): [], ("a", "c"): []}
    lanes = {("a", "b"): [(LANE_Y, 0)], ("a", "c"): [(LANE_Y, 0)]}
    return g, pos, routes, lanes


def test_top_entries_picks_the_edge_into_the_top_box_of_its_column():
    g, pos, routes, lanes = wrapped()
    assert top_entries(g, pos, routes, lanes) == {("a", "b"): pytest.approx(BOX_W / 2 - TOP_IN)}
    assert top_entries(g, pos, routes, lanes, side={("a", "b")}) == {}
    assert top_entries(g, pos, routes, {}) == {}  # no rows, no lanes: every edge from the left


def test_top_entries_leaves_a_box_with_two_such_edges_to_its_left_side():
    g, pos, routes, lanes = wrapped()
    g.add_edge("e", "b")
    pos["e"] = (0.0, 0.0)
    routes[("e", "b")] = []
    lanes[("e", "b")] = [(LANE_Y - 0.14, 1)]
    assert top_entries(g, pos, routes, lanes) == {}


def test_an_edge_from_the_row_above_comes_straight_down_into_the_box_top():
    g, pos, routes, lanes = wrapped()
    plans = edge_plans(SimpleNamespace(nx=g), pos, routes, lanes=lanes, label_h=0.1)
    top = plans[("a", "b", 0)]
    route, anchor, mark = edge_route(top)
    (x0, y0), (x1, y1) = route.vertices[-2], route.vertices[-1]
    assert x0 == x1 == pytest.approx(BOX_W / 2 - TOP_IN)  # straight down ...
    assert y0 == pytest.approx(LANE_Y) and y1 == pytest.approx(-2.0 + BOX_H / 2)  # ... from its lane to the top
    assert all(v[1] >= y1 - 1e-9 for v in route.vertices)  # never below the box's top
    x, y, ha = anchor
    assert anchor == label_anchor(top) and ha == "right"
    assert -BOX_W / 2 < x - top.room and x < x1  # its label over the box, left of the line
    assert y1 < y - 0.05 and y + 0.05 < LANE_Y  # between the box and the lane
    assert mark[1] == pytest.approx(LANE_Y) and mark[2] > 0  # backward: to the right, along the lane

    assert plans[("b", "d", 0)].top is None


def test_an_edge_into_a_box_under_another_comes_down_beside_their_column():
    """a (right of column 0) feeds c under b: down the gap right of the column, left under b,
    into c's top, instead of on to the gap left of the column and back (it crosses b -> d)."""
    g, pos, routes, lanes = wrapped()
    plans = edge_plans(SimpleNamespace(nx=g), pos, routes, lanes=lanes, label_h=0.1)
    c = plans[("a", "c", 0)]
    assert c.beside == pytest.approx(BOX_W / 2 + BESIDE) and c.top == pytest.approx(BOX_W / 2 - TOP_IN)
    verts = edge_route(c)[0].vertices
    assert verts[-1] == pytest.approx((BOX_W / 2 - TOP_IN, -3.0 + BOX_H / 2))  # into c's top
    assert min(x for x, _ in verts) > 0  # never in the gap left of the column
    b_caption = -2.0 - BOX_H / 2 - 0.15
    assert -3.0 + BOX_H / 2 < c.run_y < b_caption  # under b's caption, over c
    x, y, _ = label_anchor(c)
    assert y + 0.05 < b_caption and x < c.top


def test_an_edge_into_a_box_under_another_stays_left_when_beside_crosses_more():
    """Two more edges across the gap right of the column (e -> f, e -> h at b's height and
    under it): the way beside would cross two more edges than the way from the left."""
    g, pos, routes, lanes = wrapped()
    g.add_edges_from([("e", "f"), ("e", "h")])
    pos.update({"e": (0.0, -1.6), "f": (1.0, -2.2), "h": (1.0, -2.4)})
    plans = edge_plans(SimpleNamespace(nx=g), pos, routes, lanes=lanes, label_h=0.1)
    assert side_entries(g, pos, routes, plans, 0.1) == {}
    side = edge_route(plans[("a", "c", 0)])[0]
    assert side.vertices[-1] == pytest.approx((-BOX_W / 2, -3.0))  # from the left, into its side
    g2, pos2, routes2, lanes2 = wrapped()
    plain = edge_plans(SimpleNamespace(nx=g2), pos2, routes2, lanes=lanes2, label_h=0.1)
    assert side_entries(g2, pos2, routes2, plain, 0.1, side={("a", "c")}) == {}


def test_an_edge_past_a_whole_row_goes_down_the_right_margin():
    """A chain 0..5 in rows of two with 0 -> 4 and 0 -> 5: both pass row 1 down the right
    margin, right of every box, as one bundle, and run back along one lane under row 1."""
    g = nx.MultiDiGraph()
    g.add_edges_from([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (0, 4), (0, 5)])
    pos, routes = layered_routes(g)
    pos, routes, lanes = wrap_bands(g, pos, routes, columns=2)
    assert lanes[(0, 4)] == lanes[(0, 5)] and lanes[(0, 4)][0].passed == 1
    legs = margin_legs(pos, routes, lanes)
    right = max(x for x, _ in pos.values()) + BOX_W / 2
    assert set(legs) == {(0, 4), (0, 5)} and legs[(0, 4)] == legs[(0, 5)] > right
    plans = edge_plans(SimpleNamespace(nx=g), pos, routes, lanes=lanes, label_h=0.1)
    # 5 tops its column: straight down into its top; 4 has 3 -> 4 from the row above too: from the left
    assert plans[(0, 5, 0)].top == pytest.approx(1.0 + BOX_W / 2 - TOP_IN) and plans[(0, 4, 0)].top is None
    assert edge_route(plans[(0, 5, 0)])[0].vertices[-1] == pytest.approx((plans[(0, 5, 0)].top, pos[5][1] + BOX_H / 2))
    assert edge_route(plans[(0, 4, 0)])[0].vertices[-1] == pytest.approx((-BOX_W / 2, pos[4][1]))
    for e in ((0, 4, 0), (0, 5, 0)):
        verts = edge_route(plans[e])[0].vertices
        lane_y = lanes[e[:2]][0].y
        back = [(p, q) for p, q in zip(verts, verts[1:], strict=False) if q[0] < p[0] and p[1] == q[1]]
        assert [p[1] for p, _ in back] == [lane_y]  # one run back, along its lane
        assert max(x for x, _ in verts) == pytest.approx(legs[e[:2]])
        assert min(y for _, y in verts) >= pos[e[1]][1] - BOX_H / 2  # never below its target


def test_legs_through_finds_another_edges_way_down():
    """Where a label would be written right of an edge coming down into a box's top, another
    edge's way down (here a -> c's, beside column 0) rules it out."""
    g, pos, routes, lanes = wrapped()
    plans = edge_plans(SimpleNamespace(nx=g), pos, routes, lanes=lanes, label_h=0.1)
    x = plans[("a", "c", 0)].beside
    assert legs_through(plans, ("a", "b", 0), x - 0.05, x + 0.05, -2.4, -2.2)
    assert not legs_through(plans, ("a", "c", 0), x - 0.05, x + 0.05, -2.4, -2.2)  # its own way
    assert not legs_through(plans, ("a", "b", 0), x + 0.02, x + 0.3, -2.4, -2.2)


def test_of_two_edges_that_could_come_down_beside_one_does():
    """One label fits over a box: of a -> c and z -> c, both shorter beside column 0, one comes
    down there and the other keeps its port on c's left side."""
    g, pos, routes, lanes = wrapped()
    g.add_edge("z", "c")
    pos["z"] = (1.0, 0.6)
    routes[("z", "c")] = []
    lanes[("z", "c")] = [(LANE_Y - 0.14, 1)]
    plans = edge_plans(SimpleNamespace(nx=g), pos, routes, lanes=lanes, label_h=0.1)
    beside = [e for e, p in plans.items() if p.beside is not None]
    assert len(beside) == 1 and beside[0][1] == "c"
    [other] = {("a", "c", 0), ("z", "c", 0)} - set(beside)
    assert plans[other].top is None
    assert edge_route(plans[other])[0].vertices[-1] == pytest.approx((-BOX_W / 2, -3.0))

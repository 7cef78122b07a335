"""Routing (tapeviz/picture/routing.py): an edge from one row into the top box of a column
of the next row goes straight down into that box's top; every other edge keeps its port on
its consumer's left side."""

from types import SimpleNamespace

import networkx as nx
import pytest

from tapeviz.picture.routing import TOP_IN, edge_plans, edge_route, label_anchor, top_entries
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

    side = edge_route(plans[("a", "c", 0)])[0]  # c has b above it: from the left, as before
    assert side.vertices[-1][0] == pytest.approx(-BOX_W / 2)
    assert side.vertices[-1][1] == pytest.approx(-3.0)
    assert plans[("b", "d", 0)].top is None

"""Tests for tapeviz.picture.layout (layered left-to-right DAG layout)."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest

from tapeviz.picture import layout as layout_mod
from tapeviz.picture.layout import count_crossings, layered_layout, layered_routes, layers

# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def random_dag(n: int, m: int, seed: int, *, locality: float | None = None, labels=None) -> nx.MultiDiGraph:
    """Seeded random DAG on n nodes with m edges i -> j (i < j), parallel edges allowed."""
    rng = random.Random(seed)
    name = labels or (lambda i: i)
    g = nx.MultiDiGraph()
    g.add_nodes_from(name(i) for i in range(n))
    for _ in range(m):
        j = rng.randrange(1, n)
        i = rng.randrange(j) if locality is None else max(0, j - 1 - int(rng.expovariate(1 / locality)))
        g.add_edge(name(i), name(j))
    return g


def mixed_label(i: int):
    """Ints and strings together: ids that cannot be compared with each other."""
    return i if i % 3 else f"op{i}"


def column_of(pos: dict) -> dict:
    xs = sorted({x for x, _ in pos.values()})
    return {n: xs.index(x) for n, (x, _) in pos.items()}


def brute_force_crossings(g: nx.DiGraph, pos: dict) -> int:
    """Pairs of distinct edges whose segments cross properly, in exact arithmetic.

    Coordinates are read as the decimals they print as (0.1 is 1/10), so that
    meets that are exact on paper stay exact here rather than becoming
    1e-17 near misses of binary floats.
    """

    def orient(a, b, c):
        v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        return (v > 0) - (v < 0)

    pts = {n: (Fraction(str(x)), Fraction(str(y))) for n, (x, y) in pos.items()}
    segs = sorted({(u, v) for u, v in g.edges()}, key=repr)
    total = 0
    for (a, b), (c, d) in itertools.combinations(segs, 2):
        p1, p2, p3, p4 = pts[a], pts[b], pts[c], pts[d]
        if orient(p1, p2, p3) * orient(p1, p2, p4) < 0 and orient(p3, p4, p1) * orient(p3, p4, p2) < 0:
            total += 1
    return total


def twisted_bipartite(n: int) -> nx.MultiDiGraph:
    """a_i -> b_(n-1-i): insertion order gives C(n, 2) crossings, reversing one side gives 0."""
    g = nx.MultiDiGraph()
    g.add_nodes_from(f"a{i}" for i in range(n))
    g.add_nodes_from(f"b{i}" for i in range(n))
    for i in range(n):
        g.add_edge(f"a{i}", f"b{n - 1 - i}")
    return g


# --------------------------------------------------------------------------
# trivial graphs
# --------------------------------------------------------------------------


def test_empty_graph():
    g = nx.MultiDiGraph()
    assert layered_layout(g) == {}
    assert layers(g) == []
    assert count_crossings(g, {}) == 0


@pytest.mark.parametrize("node", [0, "x", ("tuple", 1)])
def test_single_node(node):
    g = nx.MultiDiGraph()
    g.add_node(node)
    assert layered_layout(g) == {node: (0.0, 0.0)}
    assert layers(g) == [[node]]


def test_result_is_plain_floats_for_every_node():
    g = random_dag(50, 100, seed=3, labels=mixed_label)
    pos = layered_layout(g)
    assert list(pos) == list(g.nodes)
    for x, y in pos.values():
        assert type(x) is float and type(y) is float


def test_rejects_cycles_and_undirected_graphs():
    g = nx.MultiDiGraph([("a", "b"), ("b", "c"), ("c", "a")])
    with pytest.raises(ValueError, match="cycle"):
        layered_layout(g)
    with pytest.raises(ValueError, match="cycle"):
        layered_layout(nx.MultiDiGraph([("a", "a")]))
    with pytest.raises(ValueError, match="directed"):
        layered_layout(nx.Graph([(1, 2)]))
    with pytest.raises(ValueError):
        layered_layout(nx.MultiDiGraph([(1, 2)]), sweeps=-1)
    with pytest.raises(ValueError):
        layered_layout(nx.MultiDiGraph([(1, 2)]), node_gap=0)


# --------------------------------------------------------------------------
# determinism and geometry
# --------------------------------------------------------------------------


@pytest.mark.parametrize("locality", [None, 5.0])
def test_deterministic_for_same_insertion_order(locality):
    a = random_dag(300, 700, seed=11, locality=locality, labels=mixed_label)
    b = random_dag(300, 700, seed=11, locality=locality, labels=mixed_label)
    pa, pb = layered_layout(a), layered_layout(b)
    assert list(pa.items()) == list(pb.items())
    assert layered_layout(a) == pa  # and nothing is cached or mutated between calls
    assert layers(a) == layers(b)


def test_numpy_and_python_reorder_paths_agree(monkeypatch):
    """Small columns are sorted in plain Python, big ones with numpy; same result either way."""
    g = random_dag(400, 900, seed=5, locality=8.0, labels=mixed_label)
    monkeypatch.setattr(layout_mod, "_SMALL_LAYER", 0)
    all_numpy = layered_layout(g)
    monkeypatch.setattr(layout_mod, "_SMALL_LAYER", 10**9)
    all_python = layered_layout(g)
    assert all_numpy == all_python


@pytest.mark.parametrize("seed", range(4))
def test_no_overlaps_and_columns_are_centred(seed):
    g = random_dag(200, 450, seed=seed, locality=6.0 if seed % 2 else None)
    pos = layered_layout(g, layer_gap=2.5, node_gap=0.7)
    assert len(set(pos.values())) == len(pos)
    by_x = defaultdict(list)
    for x, y in pos.values():
        by_x[x].append(y)
    xs = sorted(by_x)
    assert xs == pytest.approx([2.5 * i for i in range(len(xs))])
    for ys in by_x.values():
        ys.sort()
        assert all(b - a >= 0.7 - 1e-9 for a, b in itertools.pairwise(ys))
        assert sum(ys) == pytest.approx(0.0, abs=1e-9)


def test_layers_match_positions():
    g = random_dag(150, 300, seed=8, labels=mixed_label)
    pos = layered_layout(g, layer_gap=3.0, node_gap=2.0)
    cols = layers(g)
    assert sorted(map(repr, itertools.chain.from_iterable(cols))) == sorted(map(repr, g.nodes))
    for c, members in enumerate(cols):
        assert all(pos[n][0] == 3.0 * c for n in members)
        ys = [pos[n][1] for n in members]
        assert ys == sorted(ys, reverse=True)  # list order reads top to bottom


@pytest.mark.parametrize("seed", range(6))
def test_every_edge_goes_strictly_left_to_right(seed):
    g = random_dag(250, 600, seed=seed, locality=None if seed < 3 else 4.0, labels=mixed_label)
    pos = layered_layout(g)
    for u, v in g.edges():
        assert pos[u][0] < pos[v][0], (u, v)


def test_multi_edges_x_times_x():
    g = nx.MultiDiGraph()
    g.add_edge("x", "mul")
    g.add_edge("x", "mul")  # x * x
    g.add_edge("mul", "loss")
    g.add_edge("w", "loss")
    assert g.number_of_edges("x", "mul") == 2
    assert layers(g) == [["x"], ["mul", "w"], ["loss"]]
    pos = layered_layout(g)
    assert pos["x"][0] < pos["mul"][0] < pos["loss"][0]


def test_plain_digraph_is_accepted():
    g = nx.DiGraph([(1, 2), (2, 3), (1, 3)])
    assert layers(g) == [[1], [2], [3]]


# --------------------------------------------------------------------------
# layer assignment
# --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_sinks_in_last_layer_sources_next_to_first_consumer(seed):
    g = random_dag(300, 500, seed=seed, locality=10.0)
    g.add_node("unused")  # isolated: neither an input in use nor an output
    col = column_of(layered_layout(g))
    last = max(col.values())
    for n in g.nodes:
        outs, ins = g.out_degree(n), g.in_degree(n)
        if outs == 0 and ins > 0:
            assert col[n] == last, n
        elif ins == 0 and outs > 0:
            assert col[n] == min(col[s] for s in g.successors(n)) - 1, n
    assert col["unused"] == 0


def test_inner_nodes_sit_at_longest_path_depth():
    g = random_dag(300, 700, seed=21, locality=7.0)
    col = column_of(layered_layout(g))
    depth = {}
    for n in nx.topological_sort(g):
        depth[n] = max((depth[p] + 1 for p in g.predecessors(n)), default=0)
    for n in g.nodes:
        if g.in_degree(n) and g.out_degree(n):
            assert col[n] == depth[n], n


def test_constant_is_pulled_next_to_its_consumer():
    g = nx.MultiDiGraph()
    nx.add_path(g, ["x", "a", "b", "c", "d", "loss"])
    g.add_edge("const", "c")
    g.add_edge("x", "aux")  # an early output still ends up with the other outputs
    assert layers(g) == [["x"], ["a"], ["b", "const"], ["c"], ["d"], ["loss", "aux"]]


def test_deep_chain_needs_no_recursion():
    n = 5_000
    g = nx.MultiDiGraph()
    nx.add_path(g, range(n))
    g.add_edge("const", 4_000)
    pos = layered_layout(g)
    assert [pos[i] for i in (0, 1, n - 1)] == [(0.0, 0.0), (1.0, 0.0), (n - 1.0, 0.0)]
    assert pos["const"][0] == 3_999.0
    assert len(layers(g)) == n


def test_large_random_dag_gets_positions_for_all_nodes():
    g = random_dag(5_000, 10_000, seed=0)
    pos = layered_layout(g)
    assert set(pos) == set(g.nodes)
    assert len(set(pos.values())) == len(pos)
    assert all(pos[u][0] < pos[v][0] for u, v in g.edges())


def test_tape_like_random_dag_with_many_long_edges():
    g = random_dag(2_000, 4_000, seed=1, locality=20.0)
    pos = layered_layout(g)
    assert set(pos) == set(g.nodes)
    assert all(pos[u][0] < pos[v][0] for u, v in g.edges())


# --------------------------------------------------------------------------
# crossing reduction
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 5, 12])
def test_twisted_bipartite_is_untangled(n):
    g = twisted_bipartite(n)
    naive = layered_layout(g, sweeps=0)
    assert layers(g, sweeps=0) == [[f"a{i}" for i in range(n)], [f"b{i}" for i in range(n)]]
    assert count_crossings(g, naive) == n * (n - 1) // 2
    assert count_crossings(g, layered_layout(g)) == 0


def test_reduction_on_three_layer_tangle():
    # Each middle node is fed by the "opposite" input and feeds the "opposite" output.
    g = nx.MultiDiGraph()
    n = 6
    g.add_nodes_from([f"in{i}" for i in range(n)] + [f"mid{i}" for i in range(n)] + [f"out{i}" for i in range(n)])
    for i in range(n):
        g.add_edge(f"in{i}", f"mid{(i * 5 + 2) % n}")
        g.add_edge(f"mid{i}", f"out{(i * 5 + 3) % n}")
        g.add_edge(f"in{i}", f"mid{(i + 1) % n}")
    before = count_crossings(g, layered_layout(g, sweeps=0))
    after = count_crossings(g, layered_layout(g))
    assert before > 0
    assert after < before


@pytest.mark.parametrize("seed", range(5))
def test_more_sweeps_never_worse_on_two_layer_graphs(seed):
    # With every edge spanning one column the drawn crossings are exactly the
    # objective the reduction minimises, and the best ordering is kept.
    rng = random.Random(seed)
    g = nx.MultiDiGraph()
    top, bottom = [f"t{i}" for i in range(30)], [f"b{i}" for i in range(30)]
    g.add_nodes_from(top + bottom)
    for _ in range(70):
        g.add_edge(rng.choice(top), rng.choice(bottom))
    for b in bottom:  # keep every bottom node a consumer so it stays in column 1
        if g.in_degree(b) == 0:
            g.add_edge(top[0], b)
    scores = [count_crossings(g, layered_layout(g, sweeps=k)) for k in range(5)]
    assert all(later <= earlier for earlier, later in itertools.pairwise(scores))
    assert scores[-1] < scores[0]


def test_best_ordering_is_kept_not_the_last():
    # Found by search: the forward pass gets 23 -> 5 crossings, the backward
    # pass that follows makes it 6; one sweep must return the 5.
    g = nx.MultiDiGraph()
    g.add_nodes_from([f"t{i}" for i in range(6)] + [f"b{i}" for i in range(6)])
    g.add_edges_from(
        [("t0", "b0"), ("t0", "b3"), ("t0", "b4"), ("t1", "b4"), ("t1", "b5"),
         ("t2", "b2"), ("t2", "b4"), ("t3", "b0"), ("t4", "b0"), ("t5", "b1")]
    )  # fmt: skip
    assert count_crossings(g, layered_layout(g, sweeps=0)) == 23
    assert count_crossings(g, layered_layout(g, sweeps=1)) == 5
    assert layout_mod._ordered_layers(g, sweeps=1)[2:] == (23, 5)


@pytest.mark.parametrize("locality", [None, 5.0])
def test_internal_objective_drops_on_random_dags(locality):
    g = random_dag(400, 800, seed=2, locality=locality)
    _, _, initial, best = layout_mod._ordered_layers(g, sweeps=4)
    assert best < initial / 2


# --------------------------------------------------------------------------
# count_crossings on hand-made drawings
# --------------------------------------------------------------------------


def test_count_two_by_two():
    g = nx.MultiDiGraph([("a", "d"), ("b", "c")])
    pos = {"a": (0, 1), "b": (0, 0), "c": (1, 1), "d": (1, 0)}
    assert count_crossings(g, pos) == 1
    g = nx.MultiDiGraph([("a", "c"), ("b", "d")])
    assert count_crossings(g, pos) == 0


def test_count_complete_bipartite():
    g = nx.MultiDiGraph([(f"u{i}", f"v{j}") for i in range(3) for j in range(4)])
    pos = {f"u{i}": (0, i) for i in range(3)} | {f"v{j}": (1, j) for j in range(4)}
    assert count_crossings(g, pos) == 3 * 6  # C(3,2) * C(4,2)


def test_count_shared_endpoints_and_parallel_edges():
    pos = {"a": (0, 1), "b": (0, 0), "c": (1, 0), "d": (1, 1)}
    # Every pair shares an end node (or is parallel): nothing crosses.
    g = nx.MultiDiGraph([("a", "c"), ("a", "d"), ("b", "c")])
    assert count_crossings(g, pos) == 0
    # b->d crosses a->c only; its other pairs share a node.
    g.add_edge("b", "d")
    assert count_crossings(g, pos) == 1
    g = nx.MultiDiGraph([("a", "d"), ("a", "d"), ("b", "c")])  # x*x-style duplicate
    pos = {"a": (0, 1), "b": (0, 0), "c": (1, 1), "d": (1, 0)}
    assert count_crossings(g, pos) == 1


def test_count_long_edges():
    # X of two long edges meeting exactly on the middle column's x.
    g = nx.MultiDiGraph([("a", "e"), ("b", "f"), ("m", "n")])
    pos = {"a": (0, 0), "b": (0, 2), "e": (2, 2), "f": (2, 0), "m": (1, 5), "n": (2, 5)}
    assert count_crossings(g, pos) == 1
    # A long edge crossed inside the second strip by a short one.
    g = nx.MultiDiGraph([("a", "c"), ("b", "d")])
    pos = {"a": (0, 0), "c": (2, 0), "b": (1, 1), "d": (2, -1)}
    assert count_crossings(g, pos) == 1
    # An edge starting on a long edge (through its node) and a collinear overlap are not crossings.
    g = nx.MultiDiGraph([("a", "c"), ("m", "d")])
    pos = {"a": (0, 0), "c": (2, 0), "m": (1, 0), "d": (2, 1)}
    assert count_crossings(g, pos) == 0
    g = nx.MultiDiGraph([("a", "c"), ("m", "d")])
    pos = {"a": (0, 0), "c": (2, 2), "m": (1, 1), "d": (3, 3)}
    assert count_crossings(g, pos) == 0


def test_count_rejects_vertical_edges():
    g = nx.MultiDiGraph([("a", "b"), ("c", "d")])
    with pytest.raises(ValueError, match="vertical"):
        count_crossings(g, {"a": (0, 0), "b": (0, 1), "c": (1, 0), "d": (2, 0)})


@pytest.mark.parametrize("seed", range(60))
def test_count_matches_brute_force(seed):
    rng = random.Random(seed)
    xs = sorted(rng.sample([0, 0.3, 1, 1.1, 2, 2.9, 3], rng.randint(2, 5)))
    g = nx.MultiDiGraph()
    pos = {}
    for c, x in enumerate(xs):
        # few distinct y values: plenty of exact meets, collinear runs and T-junctions
        for y in rng.sample([-2, -1.5, -1, -0.5, 0, 0.1, 0.5, 0.7, 1, 1.5, 2], rng.randint(1, 5)):
            pos[f"n{c}_{y}"] = (x, y)
            g.add_node(f"n{c}_{y}")
    names = list(pos)
    for _ in range(rng.randint(2, 20)):
        u, v = rng.sample(names, 2)
        if pos[u][0] != pos[v][0]:
            u, v = (u, v) if pos[u][0] < pos[v][0] else (v, u)
            g.add_edge(u, v)
    assert count_crossings(g, pos) == brute_force_crossings(g, pos)


def test_count_matches_brute_force_on_a_real_layout():
    g = random_dag(60, 110, seed=4, locality=5.0)
    pos = layered_layout(g, layer_gap=1.5, node_gap=0.5)
    assert count_crossings(g, pos) == brute_force_crossings(g, pos)


# --------------------------------------------------------------------------
# routes: bend points for edges spanning several columns
# --------------------------------------------------------------------------

ROUTE_GRAPHS = [
    dict(n=60, m=130, seed=0, locality=None),
    dict(n=200, m=450, seed=1, locality=6.0),
    dict(n=400, m=800, seed=2, locality=20.0),
    dict(n=300, m=700, seed=3, locality=None),
]


def route_graph(spec, labels=None):
    return random_dag(spec["n"], spec["m"], spec["seed"], locality=spec["locality"], labels=labels)


def test_routes_on_trivial_graphs():
    assert layered_routes(nx.MultiDiGraph()) == ({}, {})
    g = nx.MultiDiGraph([("a", "b"), ("b", "c")])
    assert layered_routes(g) == (layered_layout(g), {})  # no edge skips a column
    with pytest.raises(ValueError):
        layered_routes(g, layer_gap=0)
    with pytest.raises(ValueError, match="cycle"):
        layered_routes(nx.MultiDiGraph([("a", "b"), ("b", "a")]))


def test_routes_for_the_tape_example():
    # w -> a = w*w -> b = a + w -> c = b * 2: the w -> b edge skips a's column.
    g = nx.MultiDiGraph([("w", "a"), ("w", "a"), ("a", "b"), ("w", "b"), ("b", "c"), ("two", "c")])
    pos, routes = layered_routes(g)
    assert list(routes) == [("w", "b")]
    [(bx, by)] = routes[("w", "b")]
    assert bx == pos["a"][0]
    assert abs(by - pos["a"][1]) >= 0.3 + 0.15  # off a's box and the caption strip under it


@pytest.mark.parametrize("spec", ROUTE_GRAPHS)
@pytest.mark.parametrize("gaps", [(1.0, 1.0), (2.5, 0.7), (0.37, 1.3)])
def test_routes_keep_layout_positions_and_bend_once_per_skipped_column(spec, gaps):
    g = route_graph(spec, labels=mixed_label)
    layer_gap, node_gap = gaps
    pos, routes = layered_routes(g, layer_gap=layer_gap, node_gap=node_gap)
    assert list(pos.items()) == list(layered_layout(g, layer_gap=layer_gap, node_gap=node_gap).items())
    col = column_of(pos)
    long_edges = {(u, v) for u, v in g.edges() if col[v] - col[u] > 1}
    assert set(routes) == long_edges
    for (u, v), bends in routes.items():
        assert len(bends) == col[v] - col[u] - 1
        # one bend per skipped column, in order from u to v, at that column's x
        assert [x for x, _ in bends] == pytest.approx([(col[u] + i) * layer_gap for i in range(1, col[v] - col[u])])
        assert all(type(x) is float and type(y) is float for x, y in bends)


@pytest.mark.parametrize("spec", ROUTE_GRAPHS)
@pytest.mark.parametrize("gaps", [(1.0, 1.0), (2.5, 0.7)])
def test_bend_points_stay_out_of_node_boxes(spec, gaps):
    g = route_graph(spec)
    layer_gap, node_gap = gaps
    pos, routes = layered_routes(g, layer_gap=layer_gap, node_gap=node_gap)
    half_w, half_h = 0.37 * layer_gap, 0.3 * node_gap
    ys_in_col = defaultdict(list)
    for x, y in pos.values():
        ys_in_col[x].append(y)
    bends_in_col = defaultdict(list)
    for bends in routes.values():
        for x, y in bends:
            bends_in_col[x].append(y)
            # boxes of every column, not only the bend's own (wide layer gaps)
            for cx, ys in ys_in_col.items():
                if abs(x - cx) < half_w:
                    assert all(abs(y - ny) >= half_h for ny in ys), (x, y)
    for x, ys in bends_in_col.items():
        assert len(set(ys)) == len(ys), "two routes share a bend point"
        # and bends never sit on a node's centre line (where its box would be)
        assert not set(ys) & set(ys_in_col[x])


@pytest.mark.parametrize("spec", ROUTE_GRAPHS)
def test_routed_drawing_shows_exactly_the_routed_objective(spec):
    # Slots follow the order the reduction chose, so drawing long edges
    # through their bends shows the crossings it minimised, no more.
    g = route_graph(spec)
    _, _, initial, best = layout_mod._ordered_layers(g, sweeps=4)
    pos, routes = layered_routes(g)
    assert count_crossings(g, pos, routes) == best
    pos0, routes0 = layered_routes(g, sweeps=0)
    assert count_crossings(g, pos0, routes0) == layout_mod._ordered_layers(g, sweeps=1)[2] == initial
    assert count_crossings(g, pos, routes) <= count_crossings(g, pos)


def test_routes_are_deterministic():
    spec = dict(n=300, m=700, seed=11, locality=5.0)
    a, b = route_graph(spec, labels=mixed_label), route_graph(spec, labels=mixed_label)
    pa, ra = layered_routes(a)
    pb, rb = layered_routes(b)
    assert list(pa.items()) == list(pb.items())
    assert list(ra.items()) == list(rb.items())
    assert layered_routes(a) == (pa, ra)


def test_routes_numpy_and_python_reorder_paths_agree(monkeypatch):
    g = random_dag(300, 700, seed=6, locality=8.0)
    monkeypatch.setattr(layout_mod, "_SMALL_LAYER", 0)
    all_numpy = layered_routes(g)
    monkeypatch.setattr(layout_mod, "_SMALL_LAYER", 10**9)
    assert layered_routes(g) == all_numpy


def test_bend_slots_between_above_and_below_nodes():
    # Column 1 holds m0 and m1 (rows 0.5 and -0.5); four long edges pass it:
    # one above m0, two between m0 and m1, one below m1.
    g = nx.MultiDiGraph()
    for s, m in [("s0", "m0"), ("s1", "m0"), ("s2", "m1"), ("s3", "m1")]:
        g.add_edge(s, m)
    for s, t in [("s0", "t0"), ("s1", "t1"), ("s2", "t2"), ("s3", "t3")]:
        g.add_edge(s, t)  # column 0 -> column 2
    g.add_edges_from([("m0", "t1"), ("m1", "t2"), ("m0", "t2")])
    pos, routes = layered_routes(g)
    assert layers(g) == [["s0", "s1", "s2", "s3"], ["m0", "m1"], ["t0", "t1", "t2", "t3"]]
    assert pos["m0"] == (1.0, 0.5) and pos["m1"] == (1.0, -0.5)
    ys = {t: routes[(s, t)] for s, t in [("s0", "t0"), ("s1", "t1"), ("s2", "t2"), ("s3", "t3")]}
    assert all(len(b) == 1 and b[0][0] == 1.0 for b in ys.values())
    ys = {t: b[0][1] for t, b in ys.items()}
    box, caption, free = 0.3, 0.15, 1.0 - 0.6 - 0.15
    assert ys["t0"] == pytest.approx(0.5 + box + free / 2)  # above the top box
    # the band between m0's caption and m1's box, split in three
    assert ys["t1"] == pytest.approx(0.5 - box - caption - free / 3)
    assert ys["t2"] == pytest.approx(0.5 - box - caption - 2 * free / 3)
    assert ys["t3"] == pytest.approx(-0.5 - box - caption - free / 2)  # below the bottom caption
    assert count_crossings(g, pos, routes) == layout_mod._ordered_layers(g, sweeps=4)[3]


def test_count_crossings_with_routes_by_hand():
    g = nx.MultiDiGraph([("a", "c"), ("b", "d"), ("b", "m"), ("m", "d")])
    pos = {"a": (0, 1), "b": (0, 0), "m": (1, 0.5), "c": (2, 1), "d": (2, 0)}
    assert count_crossings(g, pos) == 0
    # a -> c dipping below m crosses b -> m and m -> d once each and b -> d
    # twice (going down, then up again): 4, where the straight line shows 0
    assert count_crossings(g, pos, {("a", "c"): [(1, -1)]}) == 4
    # routes for edges that are not in g are ignored; vertical pieces are refused
    assert count_crossings(g, pos, {("x", "y"): [(1, 5)]}) == 0
    with pytest.raises(ValueError, match="vertical"):
        count_crossings(g, pos, {("a", "c"): [(0, -1)]})


# --------------------------------------------------------------------------
# internal inversion counter (the core of both crossing counts)
# --------------------------------------------------------------------------


def test_grouped_inversions_matches_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(500):
        n = int(rng.integers(0, 40))
        bound = int(rng.integers(1, 20))
        group = np.sort(rng.integers(0, 4, n))
        values = rng.integers(0, bound, n)
        expected = sum(1 for i in range(n) for j in range(i + 1, n) if group[i] == group[j] and values[i] > values[j])
        assert layout_mod._grouped_inversions(group, values, bound) == expected
        capped = layout_mod._grouped_inversions(group, values, bound, stop_at=3)
        assert capped == expected if expected < 3 else capped >= 3


@pytest.mark.parametrize("locality", [None, 3.0, 20.0])
def test_fast_crossing_count_matches_sorting_count(locality):
    # The count that skips uncrossed long-edge chains must agree with the
    # plain one on every order the sweeps produce, and fall back otherwise.
    g = random_dag(600, 1_200, seed=7, locality=locality)
    _, depth, succ = layout_mod._assign_layers(g)
    proper = layout_mod._Proper(depth, succ)
    assert proper.chain_u.size >= 64
    assert proper.crossings() == proper.crossings_by_sorting()
    for i in range(6):
        proper.sweep(forward=i % 2 == 0)
        fast = proper._crossings_around_chains()
        assert fast is not None  # after a sweep chains never cross each other
        assert fast == proper.crossings() == proper.crossings_by_sorting()
    rng = np.random.default_rng(0)
    for _ in range(5):  # arbitrary orders: exact either way
        for c in range(proper.col_start.size - 1):
            lo, hi = proper.col_start[c], proper.col_start[c + 1]
            proper.rank[lo:hi] = rng.permutation(hi - lo)
        assert proper.crossings() == proper.crossings_by_sorting()


# --------------------------------------------------------------------------- wrapping into bands


def test_band_columns_grow_slowly_and_stay_readable():
    from tapeviz.picture.rows import band_columns

    assert band_columns(10) == 16 and band_columns(200) == 20 and band_columns(5000) == 24


def test_wrap_bands_folds_a_long_chain_and_keeps_narrow_layouts():
    from tapeviz.picture.rows import wrap_bands

    chain = nx.MultiDiGraph()
    nx.add_path(chain, range(50))
    chain.add_edge(3, 40)  # a long skip: it crosses two band boundaries
    pos, routes = layered_routes(chain)
    same = wrap_bands(chain, pos, routes, columns=60)
    assert same == (pos, routes, {})
    new_pos, new_routes, lanes = wrap_bands(chain, pos, routes, columns=16)
    assert set(new_pos) == set(pos)
    for n, (x, _) in pos.items():
        assert new_pos[n][0] == x % 16  # column inside its band
    bands = [round(pos[n][0]) // 16 for n in range(50)]
    ys = [new_pos[n][1] for n in range(50)]
    for b in range(1, max(bands) + 1):  # every band lies wholly below the one before
        top_of_band = max(y for y, bb in zip(ys, bands, strict=True) if bb == b)
        assert top_of_band < min(y for y, bb in zip(ys, bands, strict=True) if bb == b - 1)
    assert len(lanes[(15, 16)]) == 1 and (15, 16) in new_routes  # neighbours across a boundary get routed
    # past a whole band: its bend points in its own band and one lane, under the band above its target
    assert len(lanes[(3, 40)]) == 1 and lanes[(3, 40)][0].passed == 1
    assert [x for x, _ in new_routes[(3, 40)]] == [float(c) for c in range(4, 16)]
    assert max(ys[32:]) < lanes[(3, 40)][0].y < min(ys[16:32])
    lane_y, _, _ = lanes[(15, 16)][0]
    assert min(ys[:16]) > lane_y > max(ys[16:32])  # the lane runs between the band it leaves and the next


def test_wrap_bands_keeps_the_room_frames_reach_beyond_their_boxes():
    """``reach``: a node's frames reach above its box (their names) and below its text; the
    band keeps that room, so the next band starts that much lower."""
    from tapeviz.picture.rows import wrap_bands

    chain = nx.MultiDiGraph()
    nx.add_path(chain, range(8))
    pos, routes = layered_routes(chain)
    plain, _, _ = wrap_bands(chain, pos, routes, columns=4)
    framed, _, _ = wrap_bands(chain, pos, routes, columns=4, reach={5: (0.7, 0.0), 1: (0.0, 0.3)})
    gap = plain[4][1] - framed[4][1]  # band 1 under band 0: node 1's 0.3 below, node 5's 0.7 above
    assert gap == pytest.approx(1.0)
    assert plain[0][1] == framed[0][1]  # the first band does not move


def test_frame_reach_counts_the_open_groups_around_each_box(recorded):
    """Each box in L open groups: L name bands above it, the outermost frame's margin under it."""
    from tapeviz.picture.frames import PAD_BOTTOM, frame_pad, frame_reach, open_path
    from tapeviz.picture.style import CAPTION_H

    _, _, scene = recorded("U-Net")
    reach = frame_reach(scene, scene.display.nx)
    band = frame_pad(scene).top
    nested = [n for n in scene.display.nx if len(open_path(scene.display, n)) == 2]
    outside = [n for n in scene.display.nx if not open_path(scene.display, n)]
    assert nested and outside
    for n in nested:
        assert reach[n][0] == pytest.approx(2 * band) and reach[n][1] > PAD_BOTTOM - CAPTION_H
    assert not set(outside) & set(reach)

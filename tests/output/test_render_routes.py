"""Edges that skip layers are drawn around the boxes in between, not through them."""

import matplotlib.colors as mcolors
import matplotlib.figure
import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz import examples
from tapeviz.output.artists import draw_edge_labels, draw_edges
from tapeviz.output.view import GraphView
from tapeviz.picture.layout import count_crossings, layered_layout, layered_routes
from tapeviz.picture.style import BOX_H, BOX_W, C_FORWARD, C_GRAD


def skip_example():
    """w -> a = w*w -> b = a + w -> c = b * 2: the w -> AddV2 edge spans two layers."""
    w = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        a = w * w
        b = a + w
        c = b * 2.0
    return tape, dict(w=w, a=a, b=b, c=c)


def parallel_skip_example():
    """add_n([x, x, b]): two parallel edges x -> AddN, both skipping two layers."""
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        a = x * 2.0
        b = a * 3.0
        c = tf.add_n([x, x, b])
    return tape, dict(x=x, c=c)


def drawn_points(arrow, n: int = 60) -> np.ndarray:
    """Points along everything the arrow draws (line and head), in data coordinates."""
    pts = [seg(np.linspace(0.0, 1.0, n)) for seg, _ in arrow.get_path().iter_bezier()]
    return np.concatenate(pts)


def inside_box(points: np.ndarray, centre, eps: float = 1e-3) -> np.ndarray:
    x, y = centre
    return (np.abs(points[:, 0] - x) < BOX_W / 2 - eps) & (np.abs(points[:, 1] - y) < BOX_H / 2 - eps)


def head_tip(arrow) -> np.ndarray:
    """The tip of the arrow head: the middle vertex of the last subpath (barb, tip, barb)."""
    path = arrow.get_path()
    starts = np.flatnonzero(path.codes == path.MOVETO)
    return path.vertices[starts[-1] + 1]


def assert_edges_avoid_other_boxes(view: GraphView):
    for (u, v, k), arrow in view.artists.arrows.items():
        pts = drawn_points(arrow)
        for n, centre in view.pos.items():
            if n not in (u, v):
                assert not inside_box(pts, centre).any(), f"edge {u}->{v} ({k}) runs through {n}"


def assert_edges_end_at_consumer_left_side(view: GraphView):
    """Every edge ends on its consumer's left side, or (an edge from the row above, returning
    along a lane) on its top: then it is the highest box of its column in its row."""
    lanes = view.scene.lanes
    for (u, v, k), arrow in view.artists.arrows.items():
        x, y = view.pos[v]
        tip = head_tip(arrow)
        if tip[1] == pytest.approx(y + BOX_H / 2, abs=0.02):
            assert (u, v) in lanes and len(lanes[(u, v)]) == 1, (u, v, k)
            assert x - BOX_W / 2 < tip[0] < x + BOX_W / 2, (u, v, k)
            lane_y = lanes[(u, v)][0][0]
            above = [n for n, (nx_, ny) in view.pos.items() if abs(nx_ - x) < 0.3 and y < ny < lane_y]
            assert not above, (u, v, k, above)
            continue
        assert tip[0] == pytest.approx(x - BOX_W / 2, abs=0.02), (u, v, k)
        assert abs(tip[1] - y) < BOX_H / 2, (u, v, k)


def colour(arrow) -> str:
    return mcolors.to_hex(arrow.get_edgecolor())


# --------------------------------------------------------------------------


def test_skipping_edge_is_routed_around_the_box_between():
    tape, t = skip_example()
    view = tv.view(tape, t["c"])
    g = view.graph
    w, a, add = g.node_of(t["w"]), g.node_of(t["a"]), g.node_of(t["b"])
    assert g.nx.nodes[add]["op_type"] == "AddV2"
    assert view.pos[add][0] - view.pos[w][0] == 2.0  # really skips a layer
    assert set(view.routes) == {(w, add)}
    [bend] = view.routes[(w, add)]
    assert bend[0] == view.pos[a][0]

    [(key, arrow)] = [(e, ar) for e, ar in view.artists.arrows.items() if e[:2] == (w, add)]
    pts = drawn_points(arrow)
    # A straight arrow from w to AddV2 would cut through a's box; this one must not.
    straight = np.linspace(
        (view.pos[w][0] + BOX_W / 2, view.pos[w][1]), (view.pos[add][0] - BOX_W / 2, view.pos[add][1]), 200
    )
    assert inside_box(straight, view.pos[a]).any(), "the example must be one where routing matters"
    for n, centre in view.pos.items():
        if n not in (w, add):
            assert not inside_box(pts, centre).any(), n
    # it passes through its bend point
    assert np.min(np.hypot(pts[:, 0] - bend[0], pts[:, 1] - bend[1])) < 0.01
    assert_edges_avoid_other_boxes(view)
    assert_edges_end_at_consumer_left_side(view)


def test_routed_edge_enters_the_consumer_horizontally():
    tape, t = skip_example()
    view = tv.view(tape, t["c"])
    w, add = view.graph.node_of(t["w"]), view.graph.node_of(t["b"])
    [arrow] = [ar for e, ar in view.artists.arrows.items() if e[:2] == (w, add)]
    path = arrow.get_path()
    starts = np.flatnonzero(path.codes == path.MOVETO)
    barb1, tip, barb2 = path.vertices[starts[-1] : starts[-1] + 3]
    assert barb1[0] < tip[0] and barb2[0] < tip[0]
    assert barb1[1] - tip[1] == pytest.approx(tip[1] - barb2[1], abs=1e-6)  # symmetric about a horizontal line
    assert tip[1] == pytest.approx(view.pos[add][1], abs=1e-6)


def test_set_step_restyles_routed_arrows_in_place():
    tape, t = skip_example()
    view = tv.view(tape, t["c"], step=0)
    w, add = view.graph.node_of(t["w"]), view.graph.node_of(t["b"])
    [(key, arrow)] = [(e, ar) for e, ar in view.artists.arrows.items() if e[:2] == (w, add)]
    assert colour(arrow) == C_FORWARD
    assert view.artists.edge_labels[key].get_text() == ""
    before = dict(view.artists.arrows)
    view.set_step(None)
    assert all(view.artists.arrows[e] is ar for e, ar in before.items())
    assert colour(arrow) == C_GRAD and arrow.get_linewidth() > 1.5
    assert view.artists.edge_labels[key].get_text() == "2.0"  # d c / d b * d b / d w
    view.set_step(0)
    assert colour(arrow) == C_FORWARD
    # the last step activates the edges into w, the routed one among them
    view.set_step(view.n_steps - 1)
    assert colour(arrow) != C_FORWARD and arrow.get_linewidth() >= 1.8


def test_routed_edge_label_sits_on_its_path_next_to_the_consumer():
    tape, t = skip_example()
    view = tv.view(tape, t["c"])
    w, add = view.graph.node_of(t["w"]), view.graph.node_of(t["b"])
    [(key, arrow)] = [(e, ar) for e, ar in view.artists.arrows.items() if e[:2] == (w, add)]
    label = view.artists.edge_labels[key]
    lx, ly = label.get_position()
    pts = drawn_points(arrow)
    assert np.min(np.hypot(pts[:, 0] - lx, pts[:, 1] - ly)) < 0.05
    # on the last stretch: right of the last bend, left of the consumer
    assert view.routes[(w, add)][-1][0] < lx < view.pos[add][0] - BOX_W / 2
    # and not on any box
    for centre in view.pos.values():
        assert not inside_box(np.array([[lx, ly]]), centre).any()


def test_parallel_routed_edges_stay_apart():
    tape, t = parallel_skip_example()
    view = tv.view(tape, t["c"])
    x, add_n = view.graph.node_of(t["x"]), view.graph.node_of(t["c"])
    pair = [ar for e, ar in view.artists.arrows.items() if e[:2] == (x, add_n)]
    assert len(pair) == 2 and (x, add_n) in view.routes
    p, q = (drawn_points(ar) for ar in pair)
    # at each bend, the two runs are distinguishable (several pixels apart)
    for bx, by in view.routes[(x, add_n)]:
        yp = p[np.abs(p[:, 0] - bx) < 0.01, 1]
        yq = q[np.abs(q[:, 0] - bx) < 0.01, 1]
        assert abs(np.median(yp) - np.median(yq)) >= 0.05
        assert abs(np.median(yp) - by) < 0.05 and abs(np.median(yq) - by) < 0.05
    assert_edges_avoid_other_boxes(view)
    assert_edges_end_at_consumer_left_side(view)


@pytest.mark.parametrize("name", ["clip_by_norm", "clip_by_value", "clip_in_training", "stop_gradient"])
def test_example_pictures_keep_edges_off_boxes(name):
    run = getattr(examples, name)()
    view = tv.view(run.tape, run.target)
    assert_edges_avoid_other_boxes(view)
    assert_edges_end_at_consumer_left_side(view)
    # the drawing shows exactly the crossings the routed order has (in one row: count_crossings
    # reads a layered layout, and rows put boxes of different columns one above the other)
    g = view.display.nx
    if not view.scene.lanes:
        assert count_crossings(g, view.pos, view.routes) <= count_crossings(g, view.pos)


def test_limits_and_figure_cover_the_routes():
    tape, t = parallel_skip_example()
    view = tv.view(tape, t["c"], show_all=True)  # every constant a box: a route must pass above them
    top = max(y for bends in view.routes.values() for _, y in bends)
    assert top > max(y for _, y in view.pos.values())  # this route passes above everything
    assert view.ax.get_ylim()[1] > top


def test_draw_functions_keep_their_signatures():
    tape, t = skip_example()
    graph = tape.graph
    pos = layered_layout(graph.nx)
    ax = matplotlib.figure.Figure().add_subplot()
    straight = draw_edges(ax, graph, pos)
    labels = draw_edge_labels(ax, graph, pos)
    assert set(straight) == set(labels) == set(graph.nx.edges(keys=True))
    pos2, routes = layered_routes(graph.nx)
    assert pos2 == pos
    routed = draw_edges(ax, graph, pos, routes=routes)
    assert set(routed) == set(straight)
    # only the long edge changed shape
    long_edges = {e for e in routed if e[:2] in routes}
    assert long_edges
    for e in routed:
        a, b = routed[e].get_path().vertices, straight[e].get_path().vertices
        same = a.shape == b.shape and np.allclose(a, b)
        assert same == (e not in long_edges)
    # a GraphView given positions but no routes draws straight, as before
    view = GraphView(graph, pos=pos)
    assert view.routes == {}


def long_model(blocks: int, skip_every: int = 0):
    """A chain of name-scoped dense blocks (one collapsed box each), optionally with
    residual connections that jump over several blocks."""
    rng = np.random.default_rng(1)
    ws = [tf.Variable(rng.normal(size=(3, 3)).astype("float32") * 0.4, name=f"w{i}") for i in range(blocks)]
    x = tf.constant(rng.normal(size=(1, 3)).astype("float32"))
    with tv.GradientTape() as tape:
        h, saved = x, x
        for i, w in enumerate(ws):
            with tf.name_scope(f"block{i}"):
                h = tf.tanh(tf.matmul(h, w))
                if skip_every and i % skip_every == skip_every - 1:
                    h, saved = h + saved, h
        loss = tf.reduce_sum(h)
    return tape, ws, loss


@pytest.mark.parametrize("skip_every", [0, 7])
def test_long_graphs_wrap_into_bands_that_keep_edges_off_boxes(skip_every):
    tape, ws, loss = long_model(60, skip_every)
    view = tv.view(tape, loss)  # 60 layers collapse into 60+ boxes: wider than one band
    xs = sorted({round(x, 6) for x, _ in view.pos.values()})
    assert len(xs) <= 24, "the layout wraps into bands instead of one row 60 columns long"
    assert view.scene.lanes, "edges from the end of a band return to the start of the next"
    w_in, h_in = view.scene.size
    assert w_in < 60 and h_in > 2 * 1.15  # several bands, each readable
    assert_edges_avoid_other_boxes(view)
    assert_edges_end_at_consumer_left_side(view)
    centres = np.array(list(view.pos.values()))
    for i, (x, y) in enumerate(centres):  # no two boxes overlap
        overlap = (np.abs(centres[:, 0] - x) < BOX_W) & (np.abs(centres[:, 1] - y) < BOX_H)
        assert overlap.sum() == 1, list(view.pos)[i]
    last = tape.graph.node_of(ws[-1])
    assert view.scene.grads[view.display.of[last]].text  # the flow is drawn across bands

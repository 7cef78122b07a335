"""Big graphs open with one box per layer; expanding a layer shows its ops and keeps totals."""

import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.picture.opening import layer_groups
from tapeviz.picture.visibility import COLLAPSE_THRESHOLD, collapse
from tapeviz.record.values import format_value


def scoped_program(blocks: int):
    rng = np.random.default_rng(0)
    ws = [tf.Variable(rng.normal(size=(3, 3)).astype("float32") * 0.5) for _ in range(blocks)]
    bs = [tf.Variable(np.full(3, 0.1, "float32")) for _ in range(blocks)]
    x = tf.constant(rng.normal(size=(2, 3)).astype("float32"))
    with tv.GradientTape(persistent=True) as tape:
        h = x
        for i in range(blocks):
            with tf.name_scope(f"block{i}"):
                h = tf.tanh(tf.matmul(h, ws[i]) + bs[i])
        loss = tf.reduce_sum(h * h)
    return tape, loss, ws, bs


@pytest.fixture(scope="module")
def big():
    return scoped_program(20)


def test_layers_follow_name_scopes(big):
    tape, loss, ws, bs = big
    groups = layer_groups(tape.graph.nx)
    assert {g for g in groups.values() if g} == {f"block{i}" for i in range(20)}
    assert groups[tape.graph.node_of(ws[3])] == "block3"  # a variable joins its consumer's layer


def test_big_graph_opens_collapsed_with_gradient_norms(big):
    tape, loss, ws, bs = big
    ops = sum(1 for _, d in tape.graph.nx.nodes(data=True) if d["kind"] == "op")
    assert ops > COLLAPSE_THRESHOLD
    view = tv.view(tape, loss)
    assert view.display.collapsed == set(view.layers)
    assert view.display.nx.number_of_nodes() < 30
    text = view.artists.grads["layer:block5"].get_text()
    gw = np.linalg.norm(tape.gradient(loss, ws[5]).numpy())
    gb = np.linalg.norm(tape.gradient(loss, bs[5]).numpy())
    assert f"{gw:.3g}" in text and f"{gb:.3g}" in text
    assert "layers collapsed" in view.caption.get_text()


def test_expanding_a_layer_shows_its_ops_and_keeps_totals(big):
    tape, loss, ws, bs = big
    view = tv.view(tape, loss)
    opened = view.expanded("block5")
    assert "block5" not in opened.display.collapsed
    w5 = tape.graph.node_of(ws[5])
    assert w5 in opened.display.nx and "layer:block5" not in opened.display.nx
    assert opened.artists.grads[w5].get_text() == tv.picture.wording.grad_text(tape.gradient(loss, ws[5]).numpy())
    op_types = {
        tape.graph.nx.nodes[n]["op_type"]
        for n in opened.display.members
        if n in tape.graph.nx and tape.graph.nx.nodes[n]["kind"] == "op" and tape.graph.nx.nodes[n]["scope"] == "block5"
    }
    assert {"MatMul", "AddV2", "Tanh"} <= op_types
    # the same flow, so the other layers' totals are unchanged
    assert opened.artists.grads["layer:block6"].get_text() == view.artists.grads["layer:block6"].get_text()
    back = opened.collapsed_view("block5")
    assert back.display.collapsed == view.display.collapsed


def test_merged_edges_stand_for_the_original_edges(big):
    tape, loss, *_ = big
    c = collapse(tape.graph.nx, collapsed=True)
    covered = set()
    for _, _, d in c.nx.edges(data=True):
        covered.update(d["members"])
    inside = {(u, v, k) for u, v, k in tape.graph.nx.edges(keys=True) if c.of[u] == c.of[v] and c.of[u] != u}
    assert covered | inside == set(tape.graph.nx.edges(keys=True))


def test_small_graphs_stay_expanded_and_unknown_layers_are_refused():
    tape, loss, ws, bs = scoped_program(2)
    view = tv.view(tape, loss)
    assert view.display.collapsed == set()
    with pytest.raises(ValueError, match="No group named"):
        view.expanded("nope")
    forced = tv.view(tape, loss, collapsed=True)
    assert forced.display.collapsed == {"block0", "block1"}


def test_step_highlight_moves_to_the_layer_box(big):
    tape, loss, *_ = big
    view = tv.view(tape, loss)
    fl = view.flow
    k = next(i for i, s in enumerate(fl.steps) if view.display.of[s.node] == "layer:block10")
    view.set_step(k)
    assert view.artists.boxes["layer:block10"].get_linewidth() > 3


@pytest.mark.slow
def test_five_thousand_op_capture_renders(tmp_path):
    tape, loss, ws, bs = scoped_program(1000)
    assert len(tape.graph.capture.ops) >= 5000
    path = tv.save(tape, loss, tmp_path / "big.svg")
    assert path.stat().st_size > 100_000
    png = tv.save(tape, loss, tmp_path / "big.png", dpi=20)
    assert png.stat().st_size > 1000
    view = tv.view(tape, loss)  # 1,000 layer boxes, legible: bands of at most 24 full-size columns
    assert len({round(x, 6) for x, _ in view.pos.values()}) <= 24 and view.scene.size[0] < 60


def test_raster_dpi_keeps_big_pngs_under_the_pixel_limit():
    from matplotlib.figure import Figure

    from tapeviz.output.artists import MAX_PNG_PIXELS, raster_dpi

    assert raster_dpi(Figure(figsize=(6, 4)), 100) == 100
    big = Figure(figsize=(150, 120))
    dpi = raster_dpi(big, 100)
    assert dpi < 100 and 150 * 120 * dpi**2 == pytest.approx(MAX_PNG_PIXELS)


def test_explorer_layer_control_expands_and_collapses(big):
    tape, loss, ws, *_ = big
    ex = tv.explore(tape, loss)
    layers = ex.controls["layers"]
    assert layers.value == ()  # big graph: everything collapsed
    before = ex.canvas.value
    layers.value = (("layer", "block5"),)
    assert tape.graph.node_of(ws[5]) in ex.view.display.nx
    assert ex.canvas.value != before
    layers.value = ()
    assert "layer:block5" in ex.view.display.nx


def test_panel_of_a_big_model_lists_the_largest_gradients(big, monkeypatch):
    import tapeviz.explorer.panels

    monkeypatch.setattr(tapeviz.explorer.panels, "PANEL_ROWS", 5)
    tape, loss, ws, bs = big
    ex = tv.explore(tape, loss)
    ex.controls["clip"].value = "by_norm"
    grads = ex.gradients(clipped=False)
    assert len(grads) == 40
    assert "showing 5 of 40 variables" in ex.panel.value
    order = sorted(grads, key=lambda n: -float(np.linalg.norm(grads[n])))
    for name in order[:5]:
        assert f"<td>{name}</td>" in ex.panel.value
    assert f"<td>{order[-1]}</td>" not in ex.panel.value


def test_tf_function_opens_into_its_body_and_keeps_totals():
    x = tf.Variable(2.0)

    @tf.function
    def f(a, b):
        return tf.sin(a) * b + 1.0

    with tv.GradientTape(persistent=True) as tape:
        y = f(x * 3.0, x)
        z = y * 2.0
    g = tape.graph
    [call] = g.functions()
    view = tv.view(tape, z)
    assert call in view.display.nx  # one node by default
    opened = view.expanded_function(call)
    inner = {d["op_type"] for n, d in opened.display.nx.nodes(data=True) if d["kind"] == "inner"}
    assert {"Sin", "Mul", "AddV2", "Identity"} <= inner and call not in opened.display.nx
    # the call's output value sits on the op that returns it
    ident = next(n for n, d in opened.display.nx.nodes(data=True) if d.get("op_type") == "Identity")
    assert opened.artists.labels[ident][2].get_text() == format_value(y.numpy())
    # gradients still show on the edges into and out of the body, totals unchanged
    x_node = g.node_of(x)
    want = tape.gradient(z, x).numpy()
    assert (
        opened.artists.grads[x_node].get_text()
        == view.artists.grads[x_node].get_text()
        == tv.picture.wording.grad_text(want)
    )
    out_edges = [e for e in opened.artists.arrows if e[0] == ident]
    assert out_edges and opened.artists.edge_labels[out_edges[0]].get_text() == "2.0"
    with pytest.raises(ValueError, match=r"not tf\.function"):
        view.expanded_function(x_node)
    ex = tv.explore(tape, z)
    ex.controls["layers"].value = (("function", call),)
    assert call not in ex.view.display.nx and "Sin" in ex.canvas.value


def test_picture_states_the_memory_budget_when_values_were_dropped():
    x = tf.Variable(tf.ones([64, 64]))
    with tv.GradientTape(budget_bytes=20_000) as tape:
        h = x
        for _ in range(4):
            h = tf.tanh(h * 0.5)
        loss = tf.reduce_sum(h)
    g = tape.graph
    assert g.truncated > 0 and g.kept_bytes <= 20_000
    view = tv.view(tape, loss)
    assert g.budget_note and g.budget_note in view.caption.get_text()
    assert "budget" in view.caption.get_text()
    np.testing.assert_array_equal(view.flow.grad(x), tape.gradient(loss, x).numpy())

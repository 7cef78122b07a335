"""Small public helpers each get a direct test (the bigger tests use them indirectly)."""

import io

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tapeviz as tv
from tapeviz.gradients import clipping
from tapeviz.output.artists import draw_legend, draw_node_labels
from tapeviz.output.view import GraphView
from tapeviz.record.values import format_value, summarize


@pytest.fixture
def fan():
    w = tf.Variable(3.0)
    b = tf.Variable(1.0)
    with tv.GradientTape(persistent=True) as tape:
        a = w * w
        c = (a + w) * 2.0 + b
    return tape, w, b, a, c


def test_flow_gradients_names_every_variable(fan):
    tape, w, b, a, c = fan
    fl = tv.flow(tape, c)
    got = fl.gradients()
    assert set(got) == {"w", "b"}
    assert got["w"] == tape.gradient(c, w).numpy() == 14.0
    assert got["b"] == tape.gradient(c, b).numpy() == 1.0


def test_step_of_orders_nodes_as_tf_processed_them(fan):
    tape, w, b, a, c = fan
    fl = tv.flow(tape, c)
    g = tape.graph
    assert fl.step_of(g.node_of(c)) == 0
    assert fl.step_of(g.node_of(a)) < fl.step_of(g.node_of(w))
    assert fl.step_of("not a node") is None


def test_grad_tensor_keeps_tf_type(fan):
    tape, w, b, a, c = fan
    fl = tv.flow(tape, c)
    t = fl.grad_tensor(w)
    assert isinstance(t, tf.Tensor) and t.numpy() == 14.0
    with pytest.raises(TypeError):
        fl.grad_tensor(3.0)


def test_set_grad_overrides_and_png(fan):
    tape, w, b, a, c = fan
    view = tv.view(tape, c)
    node = tape.graph.node_of(w)
    view.set_grad_overrides({node: "∂ 14.0 → 1.0"})
    assert view.artists.grads[node].get_text() == "∂ 14.0 → 1.0"
    view.set_grad_overrides({})
    assert view.artists.grads[node].get_text() == "∂ 14.0"
    with Image.open(io.BytesIO(view.png(dpi=50))) as im:
        assert im.format == "PNG"


def test_draw_functions_return_their_artists(fan):
    from matplotlib.figure import Figure

    tape, w, b, a, c = fan
    fig = Figure()
    ax = fig.add_subplot()
    view = GraphView(tape.graph, tv.flow(tape, c), ax=ax, show_all=True)  # every node a box
    labels = draw_node_labels(ax, tape.graph, view.pos)
    assert set(labels) == set(tape.graph.nx.nodes)
    title, sub, value = labels[tape.graph.node_of(w)]
    assert title.get_text() == "w" and value.get_text() == "3.0"
    legend = draw_legend(fig, ["stop_gradient"], ["variable", "op"])
    texts = [t.get_text() for t in legend.get_texts()]
    assert "variable" in texts and any("stop_gradient" in t for t in texts)


def test_a_view_drawn_into_a_subfigure_gives_the_figure_that_saves(fan):
    """An Axes inside a matplotlib SubFigure: view.figure (and tv.draw's return) is the
    Figure holding it, so view.png() can save it (a SubFigure has no savefig)."""
    from matplotlib.figure import Figure

    tape, w, b, a, c = fan
    fig = Figure()
    left, _ = fig.subfigures(1, 2)
    inner, _ = left.subfigures(2, 1)  # nested: still the one Figure
    ax = inner.add_subplot()
    view = tv.view(tape, c, ax=ax)
    assert view.figure is fig and view.ax is ax
    with Image.open(io.BytesIO(view.png(dpi=40))) as im:
        assert im.format == "PNG" and im.size == (round(fig.get_figwidth() * 40), round(fig.get_figheight() * 40))
    assert tv.draw(tape, c, ax=fig.subfigures(1, 1).add_subplot()) is fig


def test_contributions_are_arrays_even_where_a_gradient_is_a_tensor_list():
    """Through a TensorList the gradient on the list's edge is a variant handle, not
    numbers: that edge has no contribution (it used to be listed as None)."""
    x = tf.Variable([1.0, 2.0, 3.0])
    no_shape = tf.constant([], tf.int32)
    with tv.GradientTape() as tape:
        handle = tf.raw_ops.TensorListFromTensor(tensor=x * 1.0, element_shape=no_shape)
        y = tf.raw_ops.TensorListStack(input_handle=handle, element_shape=no_shape, element_dtype=tf.float32)
        z = tf.reduce_sum(y * y)
    fl = tv.flow(tape, z)
    np.testing.assert_array_equal(fl.grad(x), tape.gradient(z, x).numpy())
    g = tape.graph
    assert g.tensors[g.key_of(handle)].dtype == "variant"
    for n in g.nx.nodes:
        parts = fl.contributions(n)
        assert all(isinstance(p, np.ndarray) for _, p in parts), (n, parts)
    assert fl.contributions(handle) == [] and fl.grad(handle) is None
    parts = [p for _, p in fl.contributions(y)]  # y * y: one part per use, TF adds them
    assert len(parts) == 2
    np.testing.assert_array_equal(np.sum(parts, axis=0), 2 * y.numpy())


def test_clipping_report_is_tfs():
    grads = {"a": tf.constant([3.0, 4.0]), "b": tf.constant([0.0, 12.0]), "none": None}
    weights = {"a": tf.constant([1.0, 1.0]), "b": tf.constant([2.0, 2.0]), "none": tf.constant(0.0)}
    rep = clipping.report(grads, weights, mode="by_global_norm", clip_norm=6.5, lr=0.5)
    want, gn = tf.clip_by_global_norm([grads["a"], grads["b"]], 6.5)
    np.testing.assert_array_equal(rep.clipped["a"], want[0].numpy())
    np.testing.assert_array_equal(rep.clipped["b"], want[1].numpy())
    assert rep.clipped["none"] is None and rep.updated["none"] is None
    assert rep.global_norm_before == pytest.approx(float(gn.numpy()))
    assert rep.norm_before["a"] == pytest.approx(5.0)
    np.testing.assert_array_equal(rep.updated["a"], (weights["a"] - 0.5 * want[0]).numpy())
    clipping.check_settings("by_value", clip_value=(-1.0, 1.0))
    with pytest.raises(ValueError, match="finite"):
        clipping.check_settings("by_value", clip_value=(-np.inf, 1.0))
    with pytest.raises(ValueError, match="positive"):
        clipping.check_settings("by_global_norm", clip_norm=0.0)


def test_format_and_summarize():
    assert format_value(np.float32(6.0)) == "6.0"
    assert format_value(np.array([[1.0], [2.0]])) == "[[1.0], [2.0]]"
    assert format_value(np.array([1.23456])) == "[1.235]"
    big = np.arange(100, dtype=np.float32)
    s = summarize(big)
    assert s["shape"] == (100,) and s["min"] == 0.0 and s["max"] == 99.0 and s["nan"] == 0
    assert format_value(big).startswith("100 ‖·‖ ")  # shape, then the norm, as the legend explains
    assert format_value(big.reshape(4, 25), norm="‖g‖").startswith("4×25 ‖g‖ ")
    s = summarize(np.array([1.0, np.nan, np.inf]))
    assert s["nan"] == 1 and s["inf"] == 1 and s["max"] == 1.0
    rng = np.random.default_rng(0)  # the short path for small arrays says what the summary says
    for shape in [(2, 4), (64, 64), (7,), (3, 3, 3)]:
        for dtype in ("float32", "float64", "float16", "int32", "uint8"):
            a = (rng.normal(size=shape) * 10).astype(dtype)
            assert format_value(a) == format_value(None, summarize(a)), (shape, dtype)
    with_nan = np.array([1.0, 2.0, np.nan, 3.0, 4.0, 5.0, 6.0], np.float32)
    # NaN left out: sqrt(1+4+9+16+25+36)
    assert format_value(with_nan) == format_value(None, summarize(with_nan)) == "7 ‖·‖ 9.54"


def test_value_of_and_display_name(fan):
    tape, w, b, a, c = fan
    g = tape.graph
    assert g.value_of(g.node_of(w)) == 3.0
    assert g.value_of(g.node_of(a)) == 9.0
    assert g.display_name(g.node_of(w)) == "w"
    assert g.display_name(g.node_of(a)) == "a"


def _dense_values(t):
    """An IndexedSlices' values (what tf.norm sees of it); a dense tensor as it is."""
    return t.values if isinstance(t, tf.IndexedSlices) else t


@pytest.mark.parametrize("mode", ["none", "by_norm", "by_value", "by_global_norm"])
def test_batched_report_equals_eager_tf_bit_for_bit(mode):
    rng = np.random.default_rng(1)
    shapes = [(4, 4), (4,), (), (3, 2)]
    grads = {f"g{i}": tf.constant((rng.normal(size=s) * 3).astype("float32")) for i, s in enumerate(shapes)}
    grads["sparse"] = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([0, 2]), tf.constant([3, 2]))
    weights = {n: tf.zeros_like(tf.convert_to_tensor(g)) + 1.0 for n, g in grads.items()}
    rep = clipping.report(grads, weights, mode=mode, clip_norm=1.3, clip_value=(-0.7, 0.9), lr=0.25)
    eager = clipping.clip(grads, mode, 1.3, (-0.7, 0.9))
    for n, g in grads.items():
        want = tf.convert_to_tensor(eager[n])
        np.testing.assert_array_equal(rep.clipped[n], want.numpy(), err_msg=n)
        assert rep.norm_before[n] == float(tf.norm(_dense_values(g)))
        assert rep.norm_after[n] == float(tf.norm(_dense_values(eager[n])))
        np.testing.assert_array_equal(rep.updated[n], (weights[n] - 0.25 * want).numpy())
    assert rep.global_norm_after == float(tf.linalg.global_norm([eager[n] for n in grads]))


def test_mixed_dtype_gradients_clip_as_tf_does():
    """TF's clip_by_norm / clip_by_value take a float64 gradient beside float32 ones;
    tf.linalg.global_norm and clip_by_global_norm refuse to mix them: so does the panel."""
    grads = {"f32": tf.constant([3.0, 4.0]), "f64": tf.constant([6.0, 8.0], tf.float64)}
    weights = {"f32": tf.constant([1.0, 1.0]), "f64": tf.constant([1.0, 1.0], tf.float64)}
    rep = clipping.report(grads, weights, mode="by_norm", clip_norm=1.0)
    np.testing.assert_array_equal(rep.clipped["f64"], tf.clip_by_norm(grads["f64"], 1.0).numpy())
    assert rep.global_norm_before is None and rep.global_norm_after is None
    rep = clipping.report(grads, weights, mode="by_value", clip_value=(-1.0, 5.0))
    np.testing.assert_array_equal(rep.clipped["f64"], tf.clip_by_value(grads["f64"], -1.0, 5.0).numpy())
    with pytest.raises(ValueError, match=r"clip_by_global_norm refuses these gradients \(float32, float64\)"):
        clipping.report(grads, weights, mode="by_global_norm")

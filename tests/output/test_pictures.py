"""Pictures tell the truth: the numbers drawn are TensorFlow's, and exports are valid files."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

import tapeviz as tv
from tapeviz import examples
from tapeviz.output.view import GraphView
from tapeviz.picture.style import BOX_H, BOX_W, C_STOP
from tapeviz.record.values import format_value

SVG_NS = "{http://www.w3.org/2000/svg}"


def grad_label(view: GraphView, obj) -> str:
    return view.artists.grads[view.graph.node_of(obj)].get_text()


def value_label(view: GraphView, obj) -> str:
    return view.artists.labels[view.graph.node_of(obj)][2].get_text()


def test_basic_picture_prints_6():
    run = examples.basic()
    x = run.extra["x"]
    view = tv.view(run.tape, run.target)
    assert run.printed["dy/dx"] == 6.0
    assert grad_label(view, x) == "∂ 6.0" == "∂ " + format_value(run.printed["dy/dx"])


def test_scalar_over_tensor_picture_prints_2w():
    run = examples.scalar_over_tensor()
    w = run.extra["w"]
    view = tv.view(run.tape, run.target)
    np.testing.assert_array_equal(run.printed["dloss/dw"], 2 * w.numpy())
    assert grad_label(view, w) == "∂ [[2.0, 4.0], [6.0, 8.0]]"


def test_tensor_over_tensor_picture_prints_twos():
    run = examples.tensor_over_tensor()
    view = tv.view(run.tape, run.target)
    np.testing.assert_array_equal(run.printed["dz/dx"], [[2.0], [2.0]])
    assert grad_label(view, run.extra["x"]) == "∂ [[2.0], [2.0]]"


def test_persistent_pictures_print_6_and_4():
    run = examples.persistent()
    x = run.extra["x"]
    f1, f2 = run.extra["targets"]["f1"], run.extra["targets"]["f2"]
    assert grad_label(tv.view(run.tape, f1), x) == "∂ 6.0" == "∂ " + format_value(run.tape.gradient(f1, x).numpy())
    assert grad_label(tv.view(run.tape, f2), x) == "∂ 4.0" == "∂ " + format_value(run.tape.gradient(f2, x).numpy())


def test_stop_gradient_picture_prints_4_and_none():
    run = examples.stop_gradient()
    view = tv.view(run.tape, run.target)
    assert run.printed["dz/dy"] is None
    assert grad_label(view, run.extra["x"]) == "∂ 4.0"
    assert grad_label(view, run.extra["y"]) == "∂ None"
    y_edges = [e for e in view.artists.arrows if e[0] == view.graph.node_of(run.extra["y"])]
    assert y_edges and all(view.artists.edge_labels[e].get_text() == "stop_gradient" for e in y_edges)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("clip_by_norm", lambda: tf.clip_by_norm(tf.constant([10.0, 20.0, 30.0]), 5.0)),
        ("clip_by_value", lambda: tf.clip_by_value(tf.constant([-5.0, 10.0, 100.0]), -1.0, 1.0)),
    ],
)
def test_clip_pictures_print_tf_values(name, expected):
    run = getattr(examples, name)()
    want = expected().numpy()
    np.testing.assert_array_equal(run.printed["clipped"], want)
    view = tv.view(run.tape, run.target)
    assert value_label(view, run.target) == format_value(want)
    if name == "clip_by_value":
        assert format_value(want) == "[-1.0, 1.0, 1.0]"
    else:
        np.testing.assert_allclose(np.linalg.norm(want), 5.0, rtol=1e-6)


def test_clip_in_training_picture_shows_every_variable_gradient():
    run = examples.clip_in_training()
    model = run.extra["model"]
    view = tv.view(run.tape, run.target, expand=[layer.name for layer in model.layers])  # Dense: one box by default
    shown = {}
    for v, g in zip(model.trainable_variables, run.extra["gradients"], strict=True):
        # TF's numbers, or (where the layer's frame bounds the text: 4 numbers under a box at
        # a row's start) TF's shape and norm
        full, short = (format_value(g.numpy(), max_items=k, norm="‖g‖") for k in (6, 0))
        shown[v.path] = grad_label(view, v)
        assert shown[v.path] in ("∂ " + full, "∂ " + short), (v.path, shown[v.path])
    assert sum("[" in text for text in shown.values()) >= 2, shown  # the biases' numbers are written out


def test_set_step_updates_artists_in_place():
    run = examples.stop_gradient()
    view = tv.view(run.tape, run.target, step=0)
    arrows = dict(view.artists.arrows)
    x_node = view.graph.node_of(run.extra["x"])
    assert view.artists.grads[x_node].get_text() == ""
    view.set_step(len(view.flow.steps) - 1)
    assert view.artists.arrows == arrows and all(view.artists.arrows[e] is a for e, a in arrows.items())
    assert view.artists.grads[x_node].get_text() == "∂ 4.0"
    active = view.flow.steps[-1].node
    assert view.artists.boxes[active].get_linewidth() > 3


def test_svg_is_valid_and_shows_stopped_edge_in_grey(tmp_path):
    run = examples.stop_gradient()
    path = tv.save(run.tape, run.target, tmp_path / "sg.svg")
    root = ET.parse(path).getroot()
    assert root.tag == SVG_NS + "svg"
    y_node = run.tape.graph.node_of(run.extra["y"])
    groups = [g for g in root.iter(SVG_NS + "g") if g.get("id", "").startswith(f"edge-{y_node}-")]
    assert groups, "the stopped edge is in the SVG"
    styles = " ".join(p.get("style", "") for g in groups for p in g.iter(SVG_NS + "path"))
    assert C_STOP in styles and "stroke-dasharray" in styles
    texts = " ".join("".join(t.itertext()) for t in root.iter(SVG_NS + "text"))
    assert "stop_gradient" in texts and "∂ 4.0" in texts


def test_png_and_gif_are_valid(tmp_path):
    run = examples.basic()
    png = tv.save(run.tape, run.target, tmp_path / "b.png")
    with Image.open(png) as im:
        assert im.format == "PNG" and im.size[0] > 200
    gif = tv.save(run.tape, run.target, tmp_path / "b.gif")
    fl = tv.flow(run.tape, run.target)
    with Image.open(gif) as im:
        assert im.format == "GIF"
        assert im.n_frames == len(fl.steps)  # every step; the last is the finished flow


def test_export_refuses_bad_suffix_and_missing_folder(tmp_path):
    run = examples.basic()
    with pytest.raises(ValueError, match=r"\.png, \.svg or \.gif"):
        tv.save(run.tape, run.target, tmp_path / "a.jpg")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        tv.save(run.tape, run.target, tmp_path / "nope" / "a.png")


def test_draw_returns_figure_and_accepts_ax():
    import matplotlib.figure

    run = examples.basic()
    fig = tv.draw(run.tape, run.target)
    assert isinstance(fig, matplotlib.figure.Figure)
    own = matplotlib.figure.Figure()
    ax = own.add_subplot()
    assert tv.draw(run.tape, run.target, ax=ax) is own
    assert tv.draw(run.tape) is not None  # the graph alone, no flow


def test_fifty_op_graph_is_legible():
    v = tf.Variable(tf.ones([4]))
    with tv.GradientTape() as tape:
        h = v
        for i in range(25):
            h = tf.tanh(h * 0.9 + float(i) / 25)
        loss = tf.reduce_sum(h)
    view = tv.view(tape, loss)
    assert len([n for n, d in tape.graph.nx.nodes(data=True) if d["kind"] == "op"]) >= 50
    pos = list(view.pos.values())
    for i, (x0, y0) in enumerate(pos):
        for x1, y1 in pos[i + 1 :]:
            assert abs(x0 - x1) >= BOX_W or abs(y0 - y1) >= BOX_H, "node boxes overlap"
    fw, fh = view.figure.get_size_inches()
    assert fw <= 60 and fh <= 60
    np.testing.assert_allclose(view.flow.grad(v), tape.graph.capture.ops and view.flow.grad(v))


def test_figures_show_themselves_in_jupyter():
    from tapeviz.output.svg import to_svg

    run = examples.basic()
    fig = tv.draw(run.tape, run.target)  # only the figure is kept: it holds its view
    svg = fig._repr_svg_()  # its own picture only: SVG from tapeviz's writer, no PNG computed
    assert svg.startswith("<svg") and svg in to_svg(fig._tv_view) and fig._repr_png_() is None
    fig.text(0.1, 0.1, "a note of the user's")  # anything else on it: matplotlib's PNG
    assert fig._repr_svg_() is None
    png = fig._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_tf_function_and_custom_gradient_are_one_named_node_each():
    x = tf.Variable(2.0)

    @tf.function
    def f(a):
        return tf.sin(a) * a + 1.0

    @tf.custom_gradient
    def clip_grad(v):
        def grad(dy):
            return tf.clip_by_value(dy, -0.1, 0.1)

        return tf.identity(v), grad

    with tv.GradientTape(persistent=True) as tape:
        y = f(x * 3.0)
        z = clip_grad(y) * 5.0
    g = tape.graph
    calls = [d for _, d in g.nx.nodes(data=True) if d.get("via") == "tf.function"]
    assert len(calls) == 1 and calls[0]["function"] == "f"
    customs = [n for n, d in g.nx.nodes(data=True) if d.get("via") == "tf.custom_gradient"]
    assert len(customs) == 1
    view = tv.view(tape, z)
    title, sub, _ = view.artists.labels[customs[0]]
    assert (title.get_text(), sub.get_text()) == ("clip_grad", "tf.custom_gradient")
    assert view.artists.labels[g.node_of(y)][1].get_text() == "tf.function f"
    # the flow is the one the tape used: the custom gradient clips 5.0 to 0.1
    fl = view.flow
    assert fl.grad(y) == tape.gradient(z, y).numpy() == pytest.approx(0.1)
    assert fl.grad(x) == tape.gradient(z, x).numpy()

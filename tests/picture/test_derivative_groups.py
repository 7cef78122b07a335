"""Derivative groups: the ops an inner tape.gradient / jacobian ran while an outer tape
recorded are one box named as the user wrote the call ("du = ∂u/∂pts"); numbers stay TF's."""

import re

import numpy as np
import pytest
import tensorflow as tf
from higher_order_models import hessian_program, pinn, wgan_gp

import tapeviz as tv
from tapeviz.output.svg import to_svg
from tapeviz.picture.visibility import decide
from tapeviz.record import hooks

BACKWARD_ONLY = {"TanhGrad", "ReluGrad", "AddN", "BroadcastGradientArgs", "SigmoidGrad"}


def _boxes(tape, loss, **options):
    shown = decide(tape.graph, tv.flow(tape, loss), **options)
    return shown, shown.nx.nodes(data=True)


def _op_types(nodes) -> set:
    return {d.get("op_type") for _, d in nodes if d.get("kind") == "op"}


def _derivative_boxes(nodes) -> dict:
    return {d["layer"]: d for _, d in nodes if d.get("group_kind") == "derivative"}


def _same_grads(fl, program) -> None:
    for v, plain in zip(program.variables, program.plain_grads, strict=True):
        got = fl.grad(v)
        assert (got is None) == (plain is None), v.path
        if plain is not None:
            np.testing.assert_array_equal(got, plain.numpy())  # bit for bit


@pytest.mark.parametrize("inner", [tf.GradientTape, tv.GradientTape], ids=["plain inner", "tv inner"])
def test_pinn_default_picture_names_its_derivatives(inner):
    p = pinn(inner)
    shown, nodes = _boxes(p.tape, p.loss)
    assert len(shown.nx) <= 14
    assert not _op_types(nodes) & BACKWARD_ONLY
    groups = _derivative_boxes(nodes)
    assert set(groups) == {"du = ∂u/∂pts", "u_xx = ∂²u/∂pts²"}
    assert groups["du = ∂u/∂pts"]["note"] == "t1.gradient" and groups["u_xx = ∂²u/∂pts²"]["note"] == "t2.gradient"
    # the group's output feeds what used it, its inputs come from the network it differentiates
    du = shown.of[next(iter(shown.members[f"layer:{'du = ∂u/∂pts'}"]))]
    assert any(shown.nx.nodes[v].get("layer") == "u_xx = ∂²u/∂pts²" for v in shown.nx.successors(du))
    # the network it differentiates is one box by default (u = pinn(pts)), not one edge per activation
    assert [shown.nx.nodes[u].get("layer") for u in shown.nx.predecessors(du)] == ["pinn"]
    _same_grads(tv.flow(p.tape, p.loss), p)
    svg = to_svg(tv.view(p.tape, p.loss))
    assert "du = ∂u/∂pts" in svg and "u_xx = ∂²u/∂pts²" in svg and "t1.gradient" in svg


def test_opening_a_derivative_box_shows_its_ops():
    p = pinn()
    _, opened = _boxes(p.tape, p.loss, expand=["du = ∂u/∂pts"])
    assert set(_derivative_boxes(opened)) == {"u_xx = ∂²u/∂pts²"}
    assert {"TanhGrad", "MatMul"} <= _op_types(opened)
    _, by_name = _boxes(p.tape, p.loss, collapsed=["u_xx = ∂²u/∂pts²", "pinn"])  # the others open
    assert set(_derivative_boxes(by_name)) == {"u_xx = ∂²u/∂pts²"} and "TanhGrad" in _op_types(by_name)
    _, everything = _boxes(p.tape, p.loss, collapsed=False)
    assert not _derivative_boxes(everything) and {"TanhGrad", "AddN"} <= _op_types(everything)


@pytest.mark.parametrize("inner", [tf.GradientTape, tv.GradientTape], ids=["plain inner", "tv inner"])
def test_wgan_gp_default_picture_is_the_losss_story(inner):
    """WGAN-GP as it is usually written (a gradient_penalty helper, keras.io's example has
    one too): the penalty is one box named by its author that names its inner gradient."""
    p = wgan_gp(inner, helpers=True)
    shown, nodes = _boxes(p.tape, p.loss)
    assert len(shown.nx) <= 14
    assert not _op_types(nodes) & BACKWARD_ONLY
    groups = {d["layer"]: d for _, d in nodes if d.get("kind") == "layer"}
    assert groups["gradient_penalty()"]["group_kind"] == "function"
    assert groups["gradient_penalty()"]["note"] == "∂d_hat/∂x_hat"  # the inner gradient, named on the box
    assert groups["critic_loss()"]["group_kind"] == "function"
    _same_grads(tv.flow(p.tape, p.loss), p)
    svg = to_svg(tv.view(p.tape, p.loss))
    assert "gradient_penalty()" in svg and "with ∂d_hat/∂x_hat" in svg
    # opened, the helper shows the inner gradient as its box, fed by the critic it differentiates
    _, opened = _boxes(p.tape, p.loss, expand=["gradient_penalty()"])
    derivative = "layer:gradient_penalty()/grads = ∂d_hat/∂x_hat"
    assert set(_derivative_boxes(opened)) == {"gradient_penalty()/grads = ∂d_hat/∂x_hat"}
    shown_open = decide(p.tape.graph, tv.flow(p.tape, p.loss), expand=["gradient_penalty()"])
    assert "layer:gradient_penalty()/critic" in set(shown_open.nx.predecessors(derivative))
    assert {"Sub", "Pow", "Mean", "Mul", "AddV2"} <= _op_types(opened)  # the penalty's and x_hat's own ops
    # named as the helper names them (its locals, read when it returned)
    assert "x_hat" in {d.get("name") for _, d in opened if d.get("op_type") == "AddV2"}
    _, everything = _boxes(p.tape, p.loss, collapsed=False)
    assert "ReluGrad" in _op_types(everything)


def test_wgan_gp_written_inline():
    """The same loss written inline in the tape's block: the penalty's gradient is one named
    box; the rest is the arithmetic the user wrote there, one box per op (19 boxes: nothing
    groups it, and folding it would hide the grey not_watched path of a forgotten watch)."""
    p = wgan_gp()
    shown, nodes = _boxes(p.tape, p.loss)
    assert not _op_types(nodes) & BACKWARD_ONLY
    assert set(_derivative_boxes(nodes)) == {"grads = ∂d_hat/∂x_hat"}
    assert len(shown.nx) <= 19
    assert [shown.nx.nodes[u].get("layer") for u in shown.nx.predecessors("layer:grads = ∂d_hat/∂x_hat")] == ["critic"]
    _same_grads(tv.flow(p.tape, p.loss), p)
    _, opened = _boxes(p.tape, p.loss, collapsed=False)
    assert "ReluGrad" in _op_types(opened)


def test_inner_results_and_errors_unchanged():
    """The wrapped gradient returns what TF returns and raises what TF raises; the wrap is
    gone after the block."""
    original = tf.GradientTape.gradient
    x = tf.constant([0.3, -0.7])
    results = {}
    for name, outer_type in (("plain", tf.GradientTape), ("tv", tv.GradientTape)):
        with outer_type() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = tf.reduce_sum(tf.tanh(x) ** 3)
            g = inner.gradient(y, x)
            try:
                inner.gradient(y, x)
                error = None
            except RuntimeError as e:
                error = str(e)
            z = tf.reduce_sum(g * g)
        results[name] = (g.numpy(), outer.gradient(z, x).numpy(), error)
    np.testing.assert_array_equal(results["tv"][0], results["plain"][0])
    np.testing.assert_array_equal(results["tv"][1], results["plain"][1])
    assert results["tv"][2] == results["plain"][2] is not None
    assert tf.GradientTape.gradient is original and not hooks.hooks_installed()


def test_tv_tape_as_inner_outer_or_both():
    x = tf.Variable([0.5, 1.5])
    expected = None
    for outer_type, inner_type in ((tf.GradientTape, tf.GradientTape), (tv.GradientTape, tf.GradientTape),
                                   (tf.GradientTape, tv.GradientTape), (tv.GradientTape, tv.GradientTape)):  # fmt: skip
        with outer_type() as outer:
            with inner_type(persistent=True) as inner:
                y = tf.reduce_sum(tf.sin(x) * x)
                dy = inner.gradient(y, x)  # recorded by both tapes
            s = tf.reduce_sum(dy**2)
        got = (dy.numpy(), outer.gradient(s, x).numpy())
        if expected is None:
            expected = got
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)
        for tape in (outer, inner):
            if isinstance(tape, tv.GradientTape):
                titles = [d.title for d in tape.graph.capture.derivatives]
                assert titles == ["dy = ∂y/∂x"], titles


def test_names_from_the_call_site():
    x = tf.constant([1.0, 2.0])
    with tv.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = x**3
        total = tf.reduce_sum(t.gradient(y, x))  # not assigned by itself: the plain form
        jac = t.jacobian(y, x, experimental_use_pfor=False)  # a loop of gradient calls inside
        exec("hidden = t.gradient(y, x)", {"t": t, "y": y, "x": x})  # no source to read
        g = t.gradient(
            y,
            x,
        )  # a call over several lines
    recs = outer.graph.capture.derivatives
    top = [d for d in recs if d.parent is None]
    assert [d.title for d in top] == [
        "∂y/∂x (t.gradient)",
        "jac = ∂y/∂x",
        "∂target/∂sources (tape.gradient)",
        "g = ∂y/∂x",
    ]
    children = [d for d in recs if d.parent == top[1].index]
    assert len(children) == 2 and all(d.method == "gradient" for d in children)  # one per element
    assert [d.title for d in children] == ["∂y/∂x (t.gradient)"] * 2  # TF's call, named by the user's
    assert top[1].children == [d.index for d in children]
    del total, jac, g


def test_derivative_box_in_the_picture_and_the_explorer():
    p = pinn()
    ex = tv.explore(p.tape, p.loss)
    options = [label for label, _ in ex.controls["layers"].options]
    assert "du = ∂u/∂pts" in options and "u_xx = ∂²u/∂pts²" in options
    assert "du = ∂u/∂pts" in ex.canvas.value and "t1.gradient" in ex.canvas.value
    ex.controls["layers"].value = (*ex.controls["layers"].value, ("layer", "du = ∂u/∂pts"))  # open it
    opened = ex.canvas.value  # its ops drawn, its box gone, its frame named (a click there closes it)
    assert "TanhGrad" in opened and 'id="node-layer:du = ∂u/∂pts"' not in opened
    assert 'id="group-du = ∂u/∂pts"' in opened
    assert re.search(r"t1.gradient · \d+ 个运算", to_svg(tv.view(p.tape, p.loss, lang="zh")))


def _jacobian_through(outer_type):
    """An outer tape over t.jacobian's loop of t.gradient calls: (outer, x, sum(jac²))."""
    x = tf.constant([1.0, 2.0])
    with outer_type() as outer:
        outer.watch(x)
        with tf.GradientTape(persistent=True) as t:
            t.watch(x)
            y = tf.sin(x) * x
        jac = t.jacobian(y, x, experimental_use_pfor=False)  # one t.gradient per element inside
        total = tf.reduce_sum(jac * jac)
    return outer, x, total


def test_nested_derivative_boxes_open_one_level_at_a_time():
    outer, x, total = _jacobian_through(tv.GradientTape)
    _, closed = _boxes(outer, total)
    assert set(_derivative_boxes(closed)) == {"jac = ∂y/∂x"}
    _, opened = _boxes(outer, total, expand=["jac = ∂y/∂x"])
    inner = _derivative_boxes(opened)
    assert len(inner) == 2 and {d["name"] for d in inner.values()} == {"∂y/∂x (t.gradient)", "∂y/∂x (t.gradient) #2"}
    assert all(d["level"] == 2 for d in inner.values())
    plain, px, ptotal = _jacobian_through(tf.GradientTape)
    np.testing.assert_array_equal(tv.flow(outer, total).grad(x), plain.gradient(ptotal, px).numpy())


def test_what_an_inner_gradient_differentiates_by_stays_visible():
    """A Hessian: w is the inner gradient's source; it stays a box of its own, not inside
    the group of the slices that read it (which the derivative's default would close)."""
    outer, w, g, hessian = hessian_program()
    shown = decide(outer.graph, hessian.flow(1))
    node = outer.graph.node_of(w)
    assert shown.of[node] == node and set(_derivative_boxes(shown.nx.nodes(data=True))) == {"g = ∂h/∂w"}
    np.testing.assert_array_equal(hessian.flow(1).grad(w), outer.jacobian(g, w, experimental_use_pfor=False)[1])

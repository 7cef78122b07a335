"""Gradient magnitude on the picture, and the explorer of a training run (tv.explore(hist))."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.gradients.magnitude import MagnitudeScale


@pytest.fixture(scope="module")
def vanishing():
    """A deep sigmoid MLP with small initialisation (its first layers' gradients vanish),
    trained a few steps with a tv.GradientTape recorded into a History."""
    keras.utils.set_random_seed(0)
    init = keras.initializers.RandomNormal(stddev=0.05)
    model = keras.Sequential(
        [
            keras.Input((4,)),
            *[keras.layers.Dense(8, activation="sigmoid", kernel_initializer=init, name=f"d{i}") for i in range(8)],
            keras.layers.Dense(1, name="out"),
        ],
        name="deep",
    )
    opt = keras.optimizers.SGD(0.1)
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(16, 4)).astype("float32"))
    y = tf.constant(rng.normal(size=(16, 1)).astype("float32"))
    hist = tv.History()
    for step in range(4):
        with tv.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        hist.add(step, loss=loss, grads=grads, variables=model.trainable_variables, tape=tape)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return model, hist, tape, loss, grads


def test_collapsed_layers_are_coloured_from_vanishing_to_healthy(vanishing):
    model, hist, tape, loss, grads = vanishing
    view = tv.view(tape, loss, magnitude=True, collapsed=True)
    sc = view.scene
    scale = sc.magnitude_scale
    boxes = {n: m for n, m in sc.magnitudes.items()}
    first = next(n for n in boxes if str(n).endswith("deep/d0"))
    last = next(n for n in boxes if str(n).endswith("deep/out"))
    assert scale(boxes[first].relative) < 0.15, "the first layer sits at the low end of the scale"
    assert scale(boxes[last].relative) > 0.85, "the last layer at the high end"
    # the layer's ratio is its variables' norms taken together, as TF computed them
    kernel, bias = model.get_layer("d0").trainable_variables
    g = [
        tape_grad
        for v, tape_grad in zip(model.trainable_variables, grads, strict=True)
        if v.path in (kernel.path, bias.path)
    ]
    want = np.sqrt(sum(float(tf.norm(t)) ** 2 for t in g)) / np.sqrt(
        sum(float(tf.norm(v)) ** 2 for v in (kernel, bias))
    )
    assert boxes[first].relative == pytest.approx(want, rel=1e-5)
    # the fill is the scale's colour (lightened), and a colour bar explains it
    assert sc.boxes[first].fc == sc.magnitude_fill(first) != sc.boxes[last].fc
    assert any(sw.label.text.endswith("‖g‖/‖w‖ (log scale)") for sw in sc.legend)


def test_expanded_variable_boxes_are_coloured_once_their_gradient_arrives(vanishing):
    model, hist, tape, loss, grads = vanishing
    view = tv.view(tape, loss, magnitude=True, collapsed=False, step=0)
    sc = view.scene
    kernel = model.get_layer("d0").trainable_variables[0]
    node = tape.graph.node_of(kernel)
    assert node in sc.magnitudes
    assert sc.boxes[node].fc != sc.magnitude_fill(node), "not coloured before its gradient arrived"
    view.set_step(None)
    assert sc.boxes[node].fc == sc.magnitude_fill(node)


def test_scale_is_log_and_colour_blind_safe_ends_differ():
    scale = MagnitudeScale(1e-8, 1e1)
    assert scale(1e-8) == 0.0 and scale(1e1) == 1.0 and scale(10**-3.5) == pytest.approx(0.5)
    assert scale.color(1e-8) != scale.color(1e1)


def test_explore_a_history_scrubs_training_steps(vanishing):
    model, hist, tape, loss, grads = vanishing
    ex = tv.explore(hist)
    try:
        steps = hist.recorded_steps()
        assert ex.controls["train_step"].options == tuple(steps) and ex.train_step == steps[-1]
        assert ex.state.magnitude, "a training run's picture is coloured by magnitude by default"
        latest_svg = ex.canvas.value
        ex.controls["train_step"].value = steps[0]
        graph, flow = hist.picture(steps[0])
        assert ex.flow is flow and ex.canvas.value != latest_svg
        assert ex.state.step == flow.last_step
        first_kernel = model.get_layer("d0").trainable_variables[0].path
        # the picture's gradients are that step's, as TF computed them then
        assert np.array_equal(ex.gradients(clipped=False)[first_kernel], flow.gradients()[first_kernel])
        assert "vanishing" in ex.flags_view.value and "deep/d0" in ex.flags_view.value
        assert "<svg" in ex.plot_view.value
    finally:
        ex.close()


def test_a_history_without_pictures_says_how_to_keep_them():
    hist = tv.History()
    w = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * w)
    hist.add(0, loss=loss, grads=tape.gradient(loss, [w]), variables=[w])
    with pytest.raises(ValueError, match=r"tape=tape"):
        tv.explore(hist)

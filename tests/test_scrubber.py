"""Gradient magnitude on the picture, and the explorer of a training run (tv.explore(hist))."""

import html
import re

import keras
import numpy as np
import pytest
import tensorflow as tf
from training_runs import sigmoid_run

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
        assert ex.controls["train_step"].options == tuple(int(s) for s in hist.steps()) and ex.train_step == steps[-1]
        pic = ex.picture
        assert pic.state.magnitude, "a training run's picture is coloured by magnitude by default"
        latest_svg = pic.canvas.value
        ex.controls["train_step"].value = steps[0]
        graph, flow = hist.picture(steps[0])
        assert pic.flow is flow and pic.canvas.value != latest_svg
        assert pic.state.step == flow.last_step and pic.layout.display is None
        first_kernel = model.get_layer("d0").trainable_variables[0].path
        # the picture's gradients are that step's, as TF computed them then
        assert np.array_equal(pic.gradients(clipped=False)[first_kernel], flow.gradients()[first_kernel])
        assert "vanishing" in ex.flags_view.value and "deep/d0" in ex.flags_view.value
        assert "<svg" in ex.run.value and "deep/" in ex.run.value
    finally:
        ex.close()


def test_a_history_without_steps_or_norms_says_what_to_pass():
    with pytest.raises(ValueError, match=r"hist.add\(step, loss=loss, grads=grads"):
        tv.explore(tv.History())
    hist = tv.History()
    hist.add(0, loss=1.5)
    with pytest.raises(ValueError, match=r"grads= and variables="):
        tv.explore(hist)


# ---------------------------------------------------------------- a norms-only History
def _bars(svg: str) -> dict[str, float]:
    """{layer: the norm its bar was drawn from} in the run panel's SVG."""
    return {m[0]: float(m[1]) for m in re.findall(r'class="tv-run-bar" data-layer="([^"]+)" data-norm="([^"]+)"', svg)}


def _colours(svg: str) -> dict[str, str]:
    return dict(re.findall(r'class="tv-run-bar" data-layer="([^"]+)" data-norm="[^"]+" [^>]*fill="([^"]+)"', svg))


@pytest.fixture(scope="module")
def norms_only():
    """The user of issue 23: their own loop with a plain tf.GradientTape and one hist.add;
    a deep sigmoid net whose first layers' gradients vanish. Keeps what TF computed."""
    return sigmoid_run([f"d{i}" for i in range(10)], steps=30, lr=0.1)


def test_explore_a_norms_only_history_scrubs_every_step_with_true_numbers(norms_only):
    hist, seen = norms_only
    assert hist.recorded_steps() == []
    ex = tv.explore(hist)
    try:
        slider = ex.controls["train_step"]
        assert slider.options == tuple(range(30)) and ex.train_step == 29
        assert ex.picture is None and "tape=tape" in ex.note.value
        for step in (29, 0, 13):
            slider.value = step  # a real widget move: its observer repaints
            bars = _bars(ex.run.value)
            assert set(bars) == set(hist.layers())
            for layer, norm in bars.items():  # each bar is the norm TF's gradients have at that step
                assert np.float32(norm) == np.float32(seen[step]["layer"][layer])
                assert norm == hist.norms(layer)[step]
            assert f"at step {step}" in ex.run.value and f"{seen[step]['loss']:.4g}" in ex.run.value
        first = hist.flags(kind="vanishing")
        assert first and first[0].step == 0
        slider.value = 0
        at0 = ex.flags_view.value
        assert "vanishing" in at0 and first[0].name in at0 and "since" not in at0
        assert html.escape("use ReLU-family activations") in at0  # the one-sentence fix
        flagged = hist.flagged(0)
        colours = _colours(ex.run.value)
        assert {colours[n] for n in flagged} == {"#1f77b4"}  # flagged layers: the vanishing blue
        assert {colours[n] for n in set(colours) - set(flagged)} == {"#a9a9a9"}
        slider.value = 13
        later = ex.flags_view.value
        assert first[0].name in later and "raised at step 0" in later  # still vanishing, said so
        before = ex.run.value
        ex.controls["train_next"].click()
        assert ex.train_step == 14 and ex.run.value != before
    finally:
        ex.close()


def test_explore_a_norms_only_history_in_chinese(norms_only):
    hist, _ = norms_only
    ex = tv.explore(hist, lang="zh")
    try:
        ex.controls["train_step"].value = 0
        assert "第 0 步的警示" in ex.flags_view.value
        assert "改用 ReLU 类激活函数" in ex.flags_view.value  # the fix, in Chinese
        ex.controls["train_step"].value = 5
        assert "第 0 步发出" in ex.flags_view.value
        assert "只记录了范数" in ex.note.value
    finally:
        ex.close()

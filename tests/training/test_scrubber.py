"""Gradient magnitude on the picture, and the explorer of a training run (tv.explore(hist))."""

import html
import re

import keras
import numpy as np
import pytest
import tensorflow as tf
from picture_text import english_words
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
    boxes = {n: m for n, m in sc.box_magnitudes.items()}
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
    assert node in sc.box_magnitudes
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
                assert norm == pytest.approx(seen[step]["layer"][layer], rel=1e-6)  # tf.norm in float64
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
        assert "第 0 步的标记" in ex.flags_view.value
        assert "改用 ReLU 类激活函数" in ex.flags_view.value  # the fix, in Chinese
        ex.controls["train_step"].value = 5
        assert "第 0 步发出" in ex.flags_view.value
        assert "只记录了范数" in ex.note.value
    finally:
        ex.close()


def _kinds_shown(flags_html: str) -> set[str]:
    return set(re.findall(r"<li class='tv-flag-[a-z_]+'><b>([^<]*)</b>", flags_html))


def test_the_run_panel_speaks_chinese_with_no_english_words(norms_only):
    """Every word the run panel draws in a zh explorer comes from the zh catalogue: at every
    step, its SVG texts hold no English word but the layers' names (issue 24's picture check)
    and NaN / Inf; the flags' kinds are Chinese too."""
    hist, seen = norms_only
    allowed = {part for name in hist.layers() for part in name.split("/")} | {"NaN", "Inf"}
    ex = tv.explore(hist, lang="zh")
    try:
        for step in hist.steps():
            ex.controls["train_step"].value = int(step)
            english = english_words(ex.run.value, allowed)
            assert not english, f"step {step}: English words in the zh run panel: {sorted(english)}"
        ex.controls["train_step"].value = 3
        svg = ex.run.value
        assert f"损失：第 3 步为 {seen[3]['loss']:.4g}" in svg and ">损失<" in svg
        assert "第 3 步 net/ 中各层的梯度范数 ‖g‖（对数刻度）" in svg
        assert "▼ 梯度消失" in svg and "标记：梯度消失（这一步条件成立）" in svg
        assert _bars(svg) == {layer: hist.norms(layer)[3] for layer in hist.layers()}  # the numbers stay TF's
        assert _kinds_shown(ex.flags_view.value) == {"梯度消失"}
    finally:
        ex.close()


def test_the_run_panel_in_english_is_unchanged(norms_only):
    hist, seen = norms_only
    ex = tv.explore(hist)
    try:
        ex.controls["train_step"].value = 3
        svg = ex.run.value
        assert f"loss: {seen[3]['loss']:.4g} at step 3" in svg and ">loss<" in svg
        assert "gradient norm ‖g‖ by layer of net/ at step 3 (log scale)" in svg
        assert "▼ vanishing" in svg and "flag: vanishing (condition holds at this step)" in svg
        assert _kinds_shown(ex.flags_view.value) == {"vanishing"}
        assert not re.search(r"[\u4e00-\u9fff]", svg + ex.flags_view.value + ex.note.value)
    finally:
        ex.close()


def test_the_run_panel_says_log_scale_missing_layers_and_no_loss_in_both_languages():
    """The panel's rarer words: a loss over many decades (log scale), a layer that a step
    did not have, a step whose loss is NaN."""
    from tapeviz.explorer.run_panel import run_data, step_svg

    a, b = tf.Variable([1.0, 2.0], name="a"), tf.Variable([3.0], name="b")
    hist = tv.History()
    for step in range(6):
        used = [a] if step < 2 else [a, b]
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(a * a) * 10.0**step + (tf.reduce_sum(b) if step >= 2 else 0.0)
            loss = loss * float("nan") if step == 5 else loss
        hist.add(step, loss=loss, grads=tape.gradient(loss, used), variables=used)
    data = run_data(hist)
    en0, zh0, en5, zh5 = (step_svg(hist, data, s, lang) for s in (0, 5) for lang in ("en", "zh"))
    assert "loss (log scale): 5 at step 0" in en0 and "not in this step" in en0
    assert "损失（对数刻度）：第 0 步为 5" in zh0 and "这一步没有记录" in zh0
    assert "loss (log scale): none at step 5" in en5 and "损失（对数刻度）：第 5 步无值" in zh5
    for svg in (zh0, zh5):
        assert not english_words(svg, {"NaN", "Inf"}), svg

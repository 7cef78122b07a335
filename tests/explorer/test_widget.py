"""Explorer contract: controls exist, moving them changes what TF says it should."""

import ipywidgets as W
import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz import examples
from tapeviz.gradients import clipping


@pytest.fixture
def persistent_explorer():
    x = tf.Variable(3.0)
    y = tf.Variable(4.0)
    with tv.GradientTape(persistent=True) as tape:
        f1 = x**2 + y
        f2 = x * y
    return tv.explore(tape, {"f1": f1, "f2": f2}), tape, x, y, f1, f2


def test_controls_contract(persistent_explorer):
    ex = persistent_explorer[0]
    assert isinstance(ex, W.VBox)
    c = ex.controls
    assert isinstance(c["step"], W.IntSlider) and isinstance(c["play"], W.Play)
    assert isinstance(c["target"], W.Dropdown) and list(c["target"].options) == ["f1", "f2"]
    # The menu names the TF function each choice calls; its values are the modes.
    assert [v for _, v in c["clip"].options] == ["none", "by_norm", "by_value", "by_global_norm"]
    assert [label for label, _ in c["clip"].options] == [
        "no clipping",
        "tf.clip_by_norm",
        "tf.clip_by_value",
        "tf.clip_by_global_norm",
    ]
    assert isinstance(c["clip_norm"], W.FloatSlider)
    assert isinstance(c["clip_value"], W.FloatRangeSlider)
    assert isinstance(c["lr"], W.FloatSlider)
    from tapeviz.explorer.canvas import Canvas

    assert isinstance(ex.canvas, (Canvas, W.HTML)) and "<svg" in ex.canvas.value
    assert c["play"].max == c["step"].max


def test_single_target_has_no_target_dropdown():
    run = examples.basic()
    ex = tv.explore(run.tape, run.target)
    assert "target" not in ex.controls
    assert ex.gradients() == {"x": pytest.approx(6.0)}


def test_target_switch_recomputes_flow(persistent_explorer):
    ex, tape, x, y, f1, f2 = persistent_explorer
    assert ex.gradients(clipped=False)["x"] == tape.gradient(f1, x).numpy() == 6.0
    before = ex.canvas.value
    ex.controls["target"].value = "f2"
    assert ex.gradients(clipped=False)["x"] == tape.gradient(f2, x).numpy() == 4.0
    assert ex.gradients(clipped=False)["y"] == tape.gradient(f2, y).numpy() == 3.0
    assert ex.canvas.value != before


@pytest.mark.parametrize("norm", [0.5, 2.5, 7.0])
def test_clip_by_norm_slider_matches_tf(persistent_explorer, norm):
    ex, tape, x, y, f1, _ = persistent_explorer
    ex.controls["clip"].value = "by_norm"
    before = ex.canvas.value
    ex.controls["clip_norm"].value = norm
    got = ex.gradients()
    for v, name in ((x, "x"), (y, "y")):
        np.testing.assert_array_equal(got[name], tf.clip_by_norm(tape.gradient(f1, v), norm).numpy())
    if norm < 6.0:
        assert ex.canvas.value != before  # the clipped value of x is on the picture
    assert f"{float(np.linalg.norm(got['x'])):.4g}" in ex.panel.value


def test_clip_by_value_slider_matches_tf(persistent_explorer):
    ex, tape, x, y, f1, _ = persistent_explorer
    ex.controls["clip"].value = "by_value"
    ex.controls["clip_value"].value = (-0.5, 2.0)
    got = ex.gradients()
    np.testing.assert_array_equal(got["x"], tf.clip_by_value(tape.gradient(f1, x), -0.5, 2.0).numpy())
    np.testing.assert_array_equal(got["y"], tf.clip_by_value(tape.gradient(f1, y), -0.5, 2.0).numpy())


def test_clip_by_global_norm_matches_tf(persistent_explorer):
    ex, tape, x, y, f1, _ = persistent_explorer
    ex.controls["clip"].value = "by_global_norm"
    ex.controls["clip_norm"].value = 1.5
    got = ex.gradients()
    want, _ = tf.clip_by_global_norm([tape.gradient(f1, x), tape.gradient(f1, y)], 1.5)
    np.testing.assert_array_equal(got["x"], want[0].numpy())
    np.testing.assert_array_equal(got["y"], want[1].numpy())
    gn = float(tf.linalg.global_norm(want).numpy())
    assert f"{gn:.4g}" in ex.panel.value


def test_lr_slider_updates_sgd_preview(persistent_explorer):
    ex, tape, x, y, f1, _ = persistent_explorer
    ex.controls["lr"].value = 0.5
    # x = 3, dx = 6: 3 - 0.5 * 6 = 0
    assert "3.0 − 0.5·g = 0.0" in ex.panel.value


def test_stepping_moves_the_highlight(persistent_explorer):
    ex = persistent_explorer[0]
    seen = set()
    titles = set()
    for k in range(ex.controls["step"].max + 1):
        ex.controls["step"].value = k
        seen.add(ex.canvas.value)
        titles.add(ex.view.artists.title.get_text())
        if k < len(ex.flow.steps):
            node = ex.flow.steps[k].node
            assert ex.view.artists.boxes[node].get_linewidth() > 3, "the node being processed is highlighted"
    assert len(seen) == ex.controls["step"].max + 1, "every step draws a different picture"
    assert len(titles) == len(seen)
    ex.controls["next"].click()
    assert ex.controls["step"].value == ex.controls["step"].max
    ex.controls["prev"].click()
    assert ex.controls["step"].value == ex.controls["step"].max - 1


def test_none_gradient_is_shown_with_reason_not_a_crash():
    run = examples.stop_gradient()
    ex = tv.explore(run.tape, run.target)
    ex.controls["clip"].value = "by_norm"
    assert ex.gradients()["y"] is None
    assert "gradient is None" in ex.panel.value and "stop_gradient" in ex.panel.value
    assert "raises ValueError" in ex.panel.value  # the tutorial's list comprehension would fail
    with pytest.raises(ValueError):
        tf.clip_by_norm(None, 1.0)


def test_inspector_shows_value_gradient_and_reason():
    run = examples.stop_gradient()
    ex = tv.explore(run.tape, run.target)
    g = run.tape.graph
    ex.controls["node"].value = g.node_of(run.extra["y"])
    assert "stop_gradient" in ex.inspector.value and "3.0" in ex.inspector.value
    ex.controls["node"].value = g.node_of(run.extra["x"])
    assert "4.0" in ex.inspector.value


def test_bad_clip_settings_are_refused():
    with pytest.raises(ValueError, match="positive"):
        clipping.clip({"x": tf.constant(1.0)}, "by_norm", clip_norm=-1.0)
    with pytest.raises(ValueError, match="min"):
        clipping.clip({"x": tf.constant(1.0)}, "by_value", clip_value=(2.0, 1.0))
    with pytest.raises(ValueError, match="Unknown clip mode"):
        clipping.clip({"x": tf.constant(1.0)}, "by_magic")


def test_explorer_save(tmp_path, persistent_explorer):
    ex = persistent_explorer[0]
    ex.controls["step"].value = 1
    p = ex.save(tmp_path / "view.svg")
    assert "Step 1/" in p.read_text()
    assert ex.save(tmp_path / "view.png").stat().st_size > 1000
    with pytest.raises(ValueError):
        ex.save(tmp_path / "view.gif")


def test_keras_training_example_explorer():
    run = examples.clip_in_training()
    ex = tv.explore(run.tape, run.target)
    ex.controls["clip"].value = "by_norm"
    ex.controls["clip_norm"].value = 0.1
    model = run.extra["model"]
    got = ex.gradients()
    assert len(got) == len(model.trainable_variables)
    for g_tf, g_ex in zip(run.extra["gradients"], got.values(), strict=True):
        np.testing.assert_array_equal(g_ex, tf.clip_by_norm(g_tf, 0.1).numpy())


def test_projector_explorer_sizes_its_controls_up():
    from tapeviz import examples
    from tapeviz.explorer import panels

    run = examples.clip_by_norm()
    assert "tv-projector" in tv.explore(run.tape, run.target, theme="projector")._dom_classes
    assert "tv-projector" not in tv.explore(run.tape, run.target, theme="light")._dom_classes
    assert ".tv-projector" in panels.CSS and "--jp-widgets-font-size" in panels.CSS

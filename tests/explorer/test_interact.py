"""tv.interact: sliders on a function's inputs. Every number is checked against a fresh,
plain tf.GradientTape run of the same function at the same values; the slope plot's
tangent against that gradient; the curve against direct calls of the function."""

import html
import re

import ipywidgets as W
import numpy as np
import pytest
import tensorflow as tf
from matplotlib.figure import Figure

import tapeviz as tv
from tapeviz.explorer import whatif_runner
from tapeviz.explorer.slope_plot import slope_svg, tangent_segment

# --------------------------------------------------------------------------- functions


def seed(x=1.0, w=1.5):
    return x**2 * w


def z(x=2.0, y=3.0):
    return x**2 + tf.stop_gradient(y)


def clipping(x=1.0):
    g = tf.stack([x, 2 * x, 3 * x])
    return {"clipped": tf.reduce_sum(tf.clip_by_norm(g, 5.0)), "norm": tf.norm(g), "g": g}


def wave(a=0.3, b=1.0):
    v = tf.constant([0.5, -1.0, 2.0])
    return tf.reduce_sum(tf.sin(a * v) * b + a * b)


def branch(x=1.0):
    if x.numpy() > 0:  # a Python branch: a different graph on each side of 0
        return x**2 * 3.0 + 1.0
    return -x


def plain_gradients(fn, values, target=None):
    """{input: gradient} from a fresh plain tf.GradientTape run of fn at values."""
    vs = {k: tf.Variable(v, dtype=tf.float32) for k, v in values.items()}
    with tf.GradientTape() as tape:
        out = fn(**vs)
    t = out[target] if isinstance(out, dict) else out
    grads = tape.gradient(t, list(vs.values()))
    return {k: None if g is None else g.numpy() for k, g in zip(vs, grads, strict=True)}


def assert_same_gradients(got, want):
    assert set(want) <= set(got)
    for k, w in want.items():
        if w is None:
            assert got[k] is None, k
        else:
            np.testing.assert_array_equal(got[k], w, err_msg=k)


def tangent_slope(fig: Figure) -> float:
    (line,) = [ln for ln in fig.axes[0].lines if ln.get_gid() == "tangent"]
    xs, ys = line.get_data()
    return float((ys[1] - ys[0]) / (xs[1] - xs[0]))


def box_positions(ex):
    return [(b.x, b.y, b.w, b.h) for b in ex.view.scene.boxes.values()]


# --------------------------------------------------------------------------- the seed


def test_seed_example():
    ex = tv.interact(seed, x=(-3.0, 3.0), w=(0.0, 2.0))
    assert isinstance(ex, W.VBox) and "tv-explorer" in ex._dom_classes
    for name in ("step", "play", "prev", "next", "clip", "clip_norm", "clip_value", "lr", "node", "layers", "show_all"):
        assert name in ex.controls, name
    assert isinstance(ex.inputs["x"], W.FloatSlider) and ex.inputs["x"].value == 1.0
    assert (ex.inputs["w"].min, ex.inputs["w"].max, ex.inputs["w"].value) == (0.0, 2.0, 1.5)
    before = ex.canvas.value
    ex.inputs["x"].value = 2.0
    assert ex.canvas.value != before, "the picture repaints"
    assert ex.values == {"x": 2.0, "w": 1.5}
    assert ex.tape.graph is ex.graph and ex.tape.gradient(ex.run.targets["seed"], ex.runner.variables["x"]) == 6.0
    assert ex.gradients(clipped=False) == {"x": 6.0, "w": 4.0}
    assert_same_gradients(ex.gradients(clipped=False), plain_gradients(seed, {"x": 2.0, "w": 1.5}))
    fig = ex.slope_figure("x")
    assert isinstance(fig, Figure)
    assert tangent_slope(fig) == pytest.approx(6.0, rel=1e-6)
    assert ex.key_stepper is not None and ex.key_stepper in ex.children, "keyboard stepping is kept"


@pytest.mark.parametrize(
    "fn, ranges, moves",
    [
        (seed, dict(x=(-3.0, 3.0), w=(0.0, 2.0)), [("x", 2.0), ("w", 0.25), ("x", -2.5), ("w", 2.0)]),
        (z, dict(x=(-2.0, 2.0), y=(0.0, 5.0)), [("y", 4.5), ("x", -1.0), ("y", 0.0)]),
        (wave, dict(a=(-1.0, 1.0), b=(0.5, 2.0)), [("a", -0.7), ("b", 1.75), ("a", 0.9)]),
        (branch, dict(x=(-2.0, 2.0)), [("x", 1.5), ("x", -1.0), ("x", 0.5)]),
    ],
)
def test_gradients_equal_a_plain_tape_after_every_move(fn, ranges, moves):
    ex = tv.interact(fn, **ranges)
    for name, value in moves:
        ex.inputs[name].value = value
        assert ex.values[name] == value
        want = plain_gradients(fn, ex.values)
        assert_same_gradients(ex.gradients(clipped=False), want)
        assert_same_gradients(ex.gradients(), want)  # no clipping chosen: the same


def test_every_target_of_a_dict_matches_tensorflow():
    ex = tv.interact(clipping, x=(0.0, 3.0))
    assert list(ex.controls["target"].options) == ["clipped", "norm", "g"]
    for x in (0.5, 2.0, 1.2):
        ex.inputs["x"].value = x
        for target in ("clipped", "norm", "g"):
            ex.controls["target"].value = target
            assert_same_gradients(ex.gradients(clipped=False), plain_gradients(clipping, {"x": x}, target))
            assert f"→ {target} = " in ex.status.value
        ex.controls["target"].value = "clipped"


def test_clipping_engages_when_the_norm_crosses_the_threshold():
    """The tutorial's clip_by_norm example: below ‖g‖ = 5 the sum of the clipped vector is
    6x (slope 6); above, clip_by_norm rescales it to a constant (slope 0)."""
    ex = tv.interact(clipping, x=(0.0, 3.0))
    ex.inputs["x"].value = 1.0  # ‖g‖ = √14 ≈ 3.74 < 5
    assert ex.gradients(clipped=False)["x"] == pytest.approx(6.0)
    ex.inputs["x"].value = 2.0  # ‖g‖ ≈ 7.48 > 5
    assert abs(float(ex.gradients(clipped=False)["x"])) < 1e-5
    assert tangent_slope(ex.slope_figure("x")) == pytest.approx(float(ex.gradients(clipped=False)["x"]), abs=1e-9)


def test_explorer_clipping_carries_over_moves_and_is_tfs():
    ex = tv.interact(seed, x=(-3.0, 3.0), w=(0.0, 2.0))
    ex.controls["clip"].value = "by_norm"
    ex.controls["clip_norm"].value = 2.0
    for x in (2.0, -3.0):
        ex.inputs["x"].value = x
        assert ex.state.clip_mode == "by_norm" and ex.state.clip_norm == 2.0
        raw = plain_gradients(seed, ex.values)
        got = ex.gradients()
        for k in ("x", "w"):
            np.testing.assert_array_equal(got[k], tf.clip_by_norm(tf.constant(raw[k]), 2.0).numpy())


# --------------------------------------------------------------------------- the slope plot


@pytest.mark.parametrize("x", [-2.5, 0.0, 1.0, 2.0])
def test_tangent_slope_is_the_gradient(x):
    ex = tv.interact(seed, x=(-3.0, 3.0), w=(0.0, 2.0))
    ex.inputs["x"].value = x
    want = plain_gradients(seed, ex.values)
    assert tangent_slope(ex.slope_figure("x")) == pytest.approx(float(want["x"]), rel=1e-6, abs=1e-12)
    assert tangent_slope(ex.slope_figure("w")) == pytest.approx(float(want["w"]), rel=1e-6, abs=1e-12)
    # the live view draws the same tangent, with TF's slope on it
    s = ex.slope("x")
    assert s.slope == float(want["x"])
    svg = slope_svg(s)
    assert f'data-slope="{s.slope!r}"' in svg
    fig = ex.slope_figure("x")
    (point,) = [ln for ln in fig.axes[0].lines if ln.get_gid() == "point"]
    assert point.get_data()[0][0] == x and point.get_data()[1][0] == pytest.approx(x * x * 1.5)


def test_curve_is_the_function_evaluated_by_tensorflow():
    ex = tv.interact(wave, a=(-1.0, 1.0), b=W.FloatSlider(value=1.25, min=0.5, max=2.0))
    s = ex.slope("a")
    assert ("a", "wave") in ex.runner._traced, "wave can be traced: the samples run in a tf.function"
    assert len(s.xs) == whatif_runner.SAMPLES and s.xs[0] == -1.0 and s.xs[-1] == 1.0
    for i in (0, 17, 40, len(s.xs) - 1):
        direct = wave(tf.Variable(s.xs[i], dtype=tf.float32), tf.Variable(1.25, dtype=tf.float32))
        assert s.ys[i] == pytest.approx(float(direct.numpy()), rel=1e-6)  # graph vs eager: round-off at most
    assert s.fixed == {"b": 1.25}
    fig = ex.slope_figure("a")
    (curve,) = [ln for ln in fig.axes[0].lines if ln.get_gid() == "curve"]
    np.testing.assert_array_equal(curve.get_data()[1], s.ys)


def test_curve_of_an_untraceable_function_is_sampled_eagerly():
    ex = tv.interact(branch, x=(-2.0, 2.0))  # x.numpy() cannot run inside a tf.function
    s = ex.slope("x")
    assert ex.runner._traced is False and s.failed == 0
    for i in (0, 20, 45, len(s.xs) - 1):
        assert s.ys[i] == float(branch(tf.Variable(s.xs[i], dtype=tf.float32)).numpy())


def test_a_traced_function_that_disagrees_with_the_eager_run_is_not_used():
    """A function whose Python side changes between calls (here a counter) traces into a
    graph that no longer computes what the eager run did: the check at the current point
    catches it, and the curve is sampled eagerly."""
    calls = []

    def counted(x=0.5):
        calls.append(1)
        return x * float(len(calls))

    ex = tv.interact(counted, x=(0.0, 1.0))
    s = ex.slope("x")
    assert ex.runner._traced is False
    assert s.ys[-1] == float(len(calls)), "the last eager call"


def test_a_sample_point_where_the_function_fails_is_a_gap():
    def partial_domain(x=0.25):
        if x.numpy() > 0.5:
            raise ValueError("outside the domain")
        return x * 2.0

    ex = tv.interact(partial_domain, x=(0.0, 1.0))
    s = ex.slope("x")
    assert s.failed == int(np.sum(s.xs > 0.5)) and np.all(np.isnan(s.ys[s.xs > 0.5]))
    assert "failed at 30 of 61 sample points" in ex.slope_view.value
    assert 'd="M' in slope_svg(s) and tangent_slope(ex.slope_figure("x")) == 2.0


def test_curve_changes_only_when_another_input_moves():
    ex = tv.interact(seed, x=(-3.0, 3.0), w=(0.0, 2.0))
    calls = []
    sample = ex.runner.sample
    ex.runner.sample = lambda *a, **k: calls.append(a) or sample(*a, **k)
    ex.inputs["x"].value = 2.0  # the plotted input: the cached curve, a new point and tangent
    assert calls == []
    ex.inputs["w"].value = 0.5  # another input: the curve is new
    assert len(calls) == 1
    assert ex.slope("x").ys[-1] == pytest.approx(9 * 0.5)


def test_live_slope_view_follows_the_sliders():
    ex = tv.interact(seed, x=(-3.0, 3.0), w=(0.0, 2.0))
    before = ex.slope_view.value
    assert "<svg" in before and "tv-slope-tangent" in before
    ex.inputs["x"].value = 2.0
    assert ex.slope_view.value != before and "slope dseed/dx = 6" in ex.slope_view.value
    ex.controls["slope"].value = "w"
    assert "slope dseed/dw = 4" in ex.slope_view.value


def test_no_gradient_no_tangent_and_the_reason():
    """stop_gradient: moving y changes z, but dz/dy is None and dz/dx does not change."""
    ex = tv.interact(z, x=(-2.0, 2.0), y=(0.0, 5.0))
    ex.controls["slope"].value = "y"
    s = ex.slope("y")
    assert s.slope is None and s.reason == "stop_gradient"
    assert s.ys[-1] - s.ys[0] == pytest.approx(5.0), "z moves with y"
    assert tangent_segment(s) is None and "tv-slope-tangent" not in ex.slope_view.value
    assert "dz/dy is None (stop_gradient)" in ex.slope_view.value
    fig = ex.slope_figure("y")
    assert not [ln for ln in fig.axes[0].lines if ln.get_gid() == "tangent"]
    dx = ex.gradients(clipped=False)["x"]
    ex.inputs["y"].value = 0.5
    assert ex.gradients(clipped=False)["x"] == dx == 4.0 and ex.gradients()["y"] is None
    assert "→ z = <b>4.5</b>" in ex.status.value


def test_non_scalar_target_is_plotted_as_its_sum():
    ex = tv.interact(clipping, x=(0.0, 3.0))
    ex.controls["target"].value = "g"
    s = ex.slope("x")
    assert s.shape == (3,) and s.y_name == "sum(g)" and s.y0 == 6.0
    assert tangent_slope(ex.slope_figure("x")) == pytest.approx(6.0)
    assert "g has shape (3,): the curve is its sum" in ex.slope_view.value
    assert ex.slope_figure("x").axes[0].get_ylabel() == "sum(g)"


def test_slope_of_an_unknown_input_is_refused():
    ex = tv.interact(seed, x=(-3.0, 3.0), w=(0.0, 2.0))
    with pytest.raises(ValueError, match="No input named 'q'; the inputs are: x, w"):
        ex.slope_figure("q")


# --------------------------------------------------------------------------- layout and state


def test_boxes_keep_their_places_while_the_shape_stays():
    ex = tv.interact(wave, a=(-1.0, 1.0), b=(0.5, 2.0))
    first = box_positions(ex)
    shape = ex.run.shape("wave")
    for name, value in (("a", -0.8), ("b", 1.9), ("a", 0.05)):
        old_svg = ex.canvas.value
        ex.inputs[name].value = value
        assert ex.run.shape("wave") == shape
        assert box_positions(ex) == first
        assert ex.canvas.value != old_svg
        assert ex.notice.value == ""


def test_layout_is_deterministic_for_the_same_structure():
    """Two separate captures of one program lay out identically (the property the stable
    boxes rest on), while its values differ."""

    def picture(a):
        run = whatif_runner.Runner(
            wave,
            {
                "a": whatif_runner.InputRange("a", -1.0, 1.0, a, 0.1),
                "b": whatif_runner.InputRange("b", 0.5, 2.0, 1.0, 0.1),
            },
        ).run({"a": a, "b": 1.0})
        state = run.explored.initial()
        return run, run.explored.view(state).scene

    r1, s1 = picture(0.1)
    r2, s2 = picture(-0.9)
    assert r1.shape("wave") == r2.shape("wave")
    assert [(b.x, b.y) for b in s1.boxes.values()] == [(b.x, b.y) for b in s2.boxes.values()]

    # every edge leaves and enters its boxes at the same points (where it turns between them
    # follows its label's width, which follows the numbers)
    def ends(scene):
        return [
            (tuple(np.asarray(a.path.vertices)[0]), tuple(np.asarray(a.path.vertices)[-1]))
            if a.path is not None
            else (a.start, a.end)
            for a in scene.arrows.values()
        ]

    assert ends(s1) == ends(s2)


def test_a_python_branch_relayouts_and_says_why():
    ex = tv.interact(branch, x=(-2.0, 2.0))
    positive = box_positions(ex)
    ex.inputs["x"].value = -1.0
    assert "changed shape at x = -1" in ex.notice.value
    assert "new ops: Neg" in ex.notice.value and "ops gone:" in ex.notice.value and "Pow" in ex.notice.value
    assert "Python if or loop in branch" in ex.notice.value
    assert box_positions(ex) != positive
    assert_same_gradients(ex.gradients(), plain_gradients(branch, {"x": -1.0}))
    ex.inputs["x"].value = -0.5  # same side: same shape, the message goes
    assert ex.notice.value == ""
    ex.inputs["x"].value = 1.0
    assert "changed shape" in ex.notice.value and box_positions(ex) == positive


def test_step_stays_on_the_finished_pass_or_is_clamped():
    ex = tv.interact(branch, x=(-2.0, 2.0))
    long_last = ex.flow.last_step
    assert ex.state.step == long_last
    ex.inputs["x"].value = -1.0  # shorter pass, was finished: stays finished
    short_last = ex.flow.last_step
    assert short_last < long_last
    assert ex.state.step == short_last == ex.controls["step"].value == ex.controls["step"].max
    assert ex.controls["play"].max == short_last
    ex.inputs["x"].value = 1.0  # back to the long pass, still finished
    assert ex.state.step == long_last == ex.controls["step"].max
    ex.controls["step"].value = long_last - 1  # an earlier step: clamped into the short pass
    ex.inputs["x"].value = -1.0
    assert ex.state.step == min(long_last - 1, short_last) == ex.controls["step"].value
    ex.controls["step"].value = 0
    ex.inputs["x"].value = -1.5  # same shape: the same step
    assert ex.state.step == 0 and "Step 0/" in ex.canvas.value


def test_target_groups_and_inspected_node_carry_over():
    ex = tv.interact(clipping, x=(0.0, 3.0))
    ex.controls["target"].value = "norm"
    node = next(n for n, d in ex.graph.nx.nodes(data=True) if d.get("op_type") == "Pack")
    ex.controls["node"].value = node
    assert "Pack" in ex.inspector.value
    ex.controls["lr"].value = 0.5
    ex.inputs["x"].value = 2.5
    assert ex.state.target == "norm" and ex.controls["target"].value == "norm"
    assert ex.state.lr == 0.5
    assert ex.state.node == node and ex.controls["node"].value == node
    assert "Pack" in ex.inspector.value and "7.5" in ex.inspector.value  # the new value of g = [2.5, 5, 7.5]


def test_carry_state_is_a_pure_function_of_two_runs():
    ranges = {"x": whatif_runner.InputRange("x", -2.0, 2.0, 1.0, 0.1)}
    runner = whatif_runner.Runner(branch, ranges)
    a, b, c = runner.run({"x": 1.0}), runner.run({"x": 1.5}), runner.run({"x": -1.0})
    state = a.explored.initial().replace(step=1, clip_mode="by_value")
    same = whatif_runner.carry_state(state, a, b)
    assert same == state, "same shape: nothing to change"
    other = whatif_runner.carry_state(state, a, c)
    assert other.clip_mode == "by_value" and other.step == min(1, c.flow("branch").last_step)
    assert other.node is None and other.collapsed is None
    assert whatif_runner.shape_change(a, c, "branch") == "new ops: Neg; ops gone: AddV2, Mul, Pow"


# --------------------------------------------------------------------------- ipywidgets' conventions


def _numbers(w):
    return type(w), w.min, w.max, getattr(w, "step", None), w.value


@pytest.mark.parametrize(
    "abbrev", [(-3.0, 3.0), (0.0, 2.0, 0.5), (-1.0, 1.0, 0.3), (0, 10), (0, 10, 3), (-2, 2.0), 2.0, -1.5, 0.0, 4]
)
@pytest.mark.parametrize("default", [None, 0.75, 7])
def test_inputs_are_the_widgets_ipywidgets_interact_makes(abbrev, default):
    """Same type, range, step and start as ipywidgets.interactive gives the same abbreviation:
    the start is the function's default (clipped into the range, or left where ipywidgets
    leaves it when it does not fit the slider), else the middle snapped to the step."""
    if default is None:

        def f(x):
            return x * 2.0

    else:

        def f(x=default):
            return x * 2.0

    (theirs,) = W.interactive(f, x=abbrev).kwargs_widgets
    ours = tv.interact(f, x=abbrev).inputs["x"]
    assert _numbers(ours) == _numbers(theirs)
    assert ours.description == theirs.description == "x"


def test_the_start_value_is_the_functions_default():
    ex = tv.interact(seed, x=(-3.0, 3.0), w=(0.0, 2.0, 0.5))
    assert ex.values == {"x": 1.0, "w": 1.5}
    assert ex.gradients(clipped=False) == {"x": 3.0, "w": 1.0}  # d(x²w)/dx = 2xw, d/dw = x²
    assert_same_gradients(ex.gradients(clipped=False), plain_gradients(seed, {"x": 1.0, "w": 1.5}))


def test_a_parameter_with_a_number_as_default_is_a_slider_as_in_ipywidgets():
    def g(x=1.0, scale=2):
        return x * x * float(scale)

    ex = tv.interact(g)
    theirs = W.interactive(g).kwargs_widgets
    assert [_numbers(ex.inputs[w.description]) for w in theirs] == [_numbers(w) for w in theirs]
    assert ex.values == {"x": 1.0, "scale": 2.0}

    def h(x=1.0, mode="square"):  # a default that is no number stays Python's: tapeviz differentiates numbers
        return x * x if mode == "square" else x

    assert "mode" not in tv.interact(h).controls


def test_a_ready_widget_is_used_as_it_is():
    w = W.FloatSlider(value=0.5, min=0.0, max=2.0, step=0.25)
    ex = tv.interact(seed, x=(-3.0, 3.0), w=w)
    assert ex.inputs["w"] is w and w.description == "w"  # labelled as ipywidgets.interact labels it
    assert ex.values == {"x": 1.0, "w": 0.5}
    w.value = 1.75
    assert ex.values["w"] == 1.75
    assert_same_gradients(ex.gradients(clipped=False), plain_gradients(seed, {"x": 1.0, "w": 1.75}))
    labelled = W.IntSlider(value=2, min=0, max=4, description="weight")
    ex = tv.interact(seed, x=(-3.0, 3.0), w=labelled)
    assert labelled.description == "weight" and ex.values["w"] == 2.0


def test_fixed_passes_a_constant_that_is_not_differentiated():
    assert tv.fixed is W.fixed  # ipywidgets' own: `from ipywidgets import fixed` works as well
    seen = []

    def f(x=1.0, w=1.5, label="z"):
        seen.append((type(w), label))
        return x**2 * w

    ex = tv.interact(f, x=(-3.0, 3.0), w=tv.fixed(2.0), label=W.fixed("loss"))
    theirs = W.interactive(f, x=(-3.0, 3.0), w=tv.fixed(2.0), label=W.fixed("loss"))
    assert [w.description for w in theirs.children if isinstance(w, W.FloatSlider)] == ["x"]
    assert "w" not in ex.controls and "label" not in ex.controls
    assert seen[-1] == (float, "loss"), "passed as it is, not as a tf.Variable"
    ex.inputs["x"].value = 2.0
    assert ex.gradients(clipped=False) == {"x": 8.0}
    assert ex.slope("x").slope == pytest.approx(8.0)


# --------------------------------------------------------------------------- errors


def flaky(x=0.5):
    if x.numpy() > 1.0:
        raise ZeroDivisionError("x is too large")
    if x.numpy() < -1.0:
        return float(x.numpy())
    return x * 2.0


def test_errors_keep_the_last_picture_and_say_why():
    ex = tv.interact(flaky, x=(-2.0, 2.0))
    good = ex.canvas.value
    grads = ex.gradients()
    ex.inputs["x"].value = 1.5
    assert ex.canvas.value == good and ex.values == {"x": 0.5} and ex.gradients() == grads
    assert "flaky(x=1.5) raised ZeroDivisionError: x is too large" in ex.notice.value
    assert "The picture still shows x = 0.5" in ex.notice.value and "tv-bad" in ex.notice.value
    ex.inputs["x"].value = -1.5
    assert ex.canvas.value == good
    assert "flaky(x=-1.5) returned a float (-1.5), computed outside TensorFlow" in ex.notice.value
    assert "return the target tensor, or a dict of them" in ex.notice.value
    ex.inputs["x"].value = 0.25  # works again: a new picture, the message goes
    assert ex.canvas.value != good and ex.notice.value == ""
    assert_same_gradients(ex.gradients(), plain_gradients(flaky, {"x": 0.25}))


def test_an_empty_range_keeps_the_picture_and_says_why():
    ex = tv.interact(seed, x=(-3.0, 3.0), w=(0.0, 2.0))
    good = ex.canvas.value
    with pytest.raises(ValueError, match="the range is empty, min must be below max"):
        ex.set_range("x", 2.0, -2.0)
    assert "the range is empty" in ex.notice.value and ex.canvas.value == good
    ex.inputs["w"].value = 2.0
    good = ex.canvas.value
    ex.inputs["w"].min = 2.0  # the slider's own min, up to its max: min == max
    assert "The range of w is empty (min 2 ≥ max 2): set its min below its max" in ex.notice.value
    assert ex.canvas.value == good and ex.values == {"x": 1.0, "w": 2.0}
    ex.inputs["w"].min = 0.0
    ex.set_range("x", -1.0, 0.5)  # a good range: the value is clamped into it, and the plot follows
    assert ex.inputs["x"].value == 0.5 and ex.values["x"] == 0.5 and ex.notice.value == ""
    s = ex.slope("x")
    assert (s.xs[0], s.xs[-1]) == (-1.0, 0.5)


@pytest.mark.parametrize(
    "ranges, error, match",
    [
        (dict(x=(1.0, 1.0)), ValueError, r"x=\(1, 1, ...\): the range is empty, min must be below max"),
        (dict(x=(3.0, -3.0)), ValueError, "min must be below max"),
        (dict(x="a"), TypeError, r"an input is a range \(min, max\[, step\]\)"),
        (dict(x=(0.0, 1.0, 0.5, 0.1)), TypeError, r"give the input's range as \(min, max\[, step\]\)"),
        (dict(x=[0.0, 1.0]), TypeError, "give the range as a tuple"),
        (dict(x=("a", 1.0)), TypeError, "min must be a number, got str"),
        (dict(x=(0.0, 1.0, 2.0)), ValueError, "step 2 must be positive and at most the range's width"),
        (dict(x=(0.0, 1.0, -0.1)), ValueError, "step -0.1 must be positive"),
        (dict(x=W.Checkbox()), TypeError, "a Checkbox cannot be an input.*fixed"),
        (dict(x=W.FloatLogSlider()), TypeError, "a FloatLogSlider cannot be an input"),
        (dict(x=tv.fixed(1.0)), ValueError, "needs at least one input"),
        (dict(x=(0.0, float("nan"))), ValueError, "finite"),
        (dict(q=(0.0, 1.0)), TypeError, "cannot be called with the inputs q"),
        ({}, ValueError, "needs at least one input"),
    ],
)
def test_bad_ranges_raise_at_construction(ranges, error, match):
    with pytest.raises(error, match=match):
        tv.interact(lambda x: x * 2.0, **ranges)


@pytest.mark.parametrize(
    "fn, error, match",
    [
        (lambda x: x / 0 if False else 1 / 0, ValueError, r"fn\(x=0.5\) raised ZeroDivisionError"),
        (lambda x: None, TypeError, r"returned None \(is a `return` missing\?\)"),
        # NumPy 1.x (with TF 2.16) promotes float32 * 2 to float64, NumPy 2 keeps float32.
        (
            lambda x: x.numpy() * 2,
            TypeError,
            rf"returned a numpy.{type(np.float32(0.5) * 2).__name__} \(1.0\), computed outside TensorFlow",
        ),
        (lambda x: x, TypeError, "the tf.Variable x itself"),
        (lambda x: {}, TypeError, "an empty dict"),
        (lambda x: {"a": x * 2.0, "b": 3}, TypeError, "a dict whose 'b' is an int"),
        (lambda x: tf.constant(1.0), ValueError, "raised"),
    ],
)
def test_a_first_call_that_fails_raises(fn, error, match):
    with pytest.raises(error, match=match):
        tv.interact(fn, x=(0.0, 1.0))


def test_construction_errors_are_value_and_type_errors():
    with pytest.raises(whatif_runner.CallFailed) as e:
        tv.interact(lambda x: 1 / 0, x=(0.0, 1.0))
    assert isinstance(e.value, ValueError) and isinstance(e.value.__cause__, ZeroDivisionError)
    with pytest.raises(TypeError, match="needs a function first"):
        tv.interact(3, x=(0.0, 1.0))
    with pytest.raises(ValueError, match="Unknown theme"):
        tv.interact.options(theme="neon")(seed, x=(0.0, 1.0), w=(0.0, 1.0))
    with pytest.raises(ValueError, match="No messages in language"):
        tv.interact.options(lang="fr")(seed, x=(0.0, 1.0), w=(0.0, 1.0))


def test_targets_must_keep_their_names():
    def renamed(x=0.0):
        return {"a": x * 2.0} if x.numpy() < 0.5 else {"b": x * 3.0}

    ex = tv.interact(renamed, x=(0.0, 1.0))
    ex.inputs["x"].value = 0.9
    assert (
        "renamed(x=0.9) returned the targets ['b'], but its first call returned ['a']: return the same names every time"
    ) in html.unescape(ex.notice.value)
    assert ex.values == {"x": 0.0}


# --------------------------------------------------------------------------- options


def test_defaults_language_and_theme():
    def z_no_defaults(x, y):
        return z(x, y)

    ex = tv.interact.options(lang="zh", theme="dark")(z_no_defaults, x=(-2.0, 2.0), y=(0.0, 5.0, 0.5))
    assert ex.inputs["x"].value == 0.0 and ex.inputs["x"].step == 0.1  # the middle; FloatSlider's own step
    assert ex.inputs["y"].value == 2.5 and ex.inputs["y"].step == 0.5
    assert ex.state.lang == "zh" and ex.state.theme == "dark"
    from tapeviz.picture.themes import DARK

    assert "切线" in ex.slope_view.value and DARK.background in ex.slope_view.value  # the slope plot is themed too
    assert ex.controls["slope"].description == "斜率图" and ex.controls["step"].description == "步骤"
    ex.controls["slope"].value = "y"
    assert "为 None（stop_gradient）" in ex.slope_view.value


def test_names_in_the_picture_are_the_inputs_and_the_function():
    ex = tv.interact(z, x=(-2.0, 2.0), y=(0.0, 5.0))
    names = {d.get("name") for _, d in ex.graph.nx.nodes(data=True)}
    assert {"x", "y", "z"} <= names
    ex.controls["step"].value = 0
    assert re.search(r"Step 0/\d+: start at z with dz/dz = 1", ex.canvas.value)


def test_presenter_and_save(tmp_path):
    ex = tv.interact.options(presenter=True)(seed, x=(-3.0, 3.0), w=(0.0, 2.0))
    assert "tv-presenter" in ex._dom_classes and ex.inputs["x"] in ex.children[2].children[0].children
    ex.inputs["x"].value = -1.0
    assert "∂ -3.0" in ex.save(tmp_path / "now.svg").read_text()  # what is on screen: dx = 2 * -1 * 1.5


def test_close_releases_the_widgets():
    ex = tv.interact(seed, x=(-3.0, 3.0), w=(0.0, 2.0))
    sliders = [ex.inputs["x"], ex.inputs["w"], ex.slope_view, ex.notice]
    ex.close()
    assert all(w.comm is None for w in sliders)

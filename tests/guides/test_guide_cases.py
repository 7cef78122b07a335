"""Three autodiff-guide lessons that tapeviz used to refuse or crash on (issue 18): a target
that is a variable, values that went through NumPy, an op with no registered gradient;
and tv.record_step, which records one compiled training step and leaves the run unchanged."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.gradients.stop_reasons import Cause, Reason
from tapeviz.record import hooks, records

PICTURES = (".svg", ".png", ".gif")


def _pictures(tape, target, tmp_path, stem: str) -> None:
    """Every picture path: SVG, PNG, GIF files and the explorer's inline SVG."""
    for ext in PICTURES:
        p = tv.save(tape, target, tmp_path / f"{stem}{ext}", progress=False)
        assert p.stat().st_size > 500
    ex = tv.explore(tape, target)
    assert "<svg" in ex.canvas.value
    ex.controls["step"].value = 0
    assert "<svg" in ex.canvas.value


# --------------------------------------------------------------------------- 1. the target is a source


def _branch(x_value: float):
    x = tf.constant(x_value)
    v0, v1 = tf.Variable(2.0), tf.Variable(2.0)
    with tv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        if x > 0.0:
            result = v0
        else:
            result = v1**2
    return tape, result, v0, v1


def test_a_variable_as_the_target_flows_ones_to_itself_and_none_to_the_branch_not_taken(tmp_path):
    tape, result, v0, v1 = _branch(1.0)
    expected = tape.gradient(result, [v0, v1])
    fl = tv.flow(tape, result)
    assert fl.grad(v0) == expected[0].numpy() == 1.0
    assert expected[1] is None and fl.grad(v1) is None
    why = fl.why_none(v1)
    assert (why.reason, why.cause) == (Reason.UNCONNECTED, Cause.NEVER_USED)
    d = tv.explain(tape, result, v1)
    assert "v1" in d.message and "never used" in d.message and "if/else" in d.fix
    assert tv.explain(tape, result, v0) is None
    assert "从未使用" in tv.explain(tape, result, v1, lang="zh").message
    scene = tv.view(tape, result).scene
    shown = {scene.graph.nx.nodes[n].get("name") for n in scene.display.nx}
    assert {"v1"} <= shown and len(scene.targets) == 1  # the single node and the branch's variable
    svg = tv.save(tape, result, tmp_path / "branch.svg").read_text()
    assert "never used" in svg
    _pictures(tape, result, tmp_path, "branch")


def test_the_other_branch_is_an_ordinary_op():
    tape, result, v0, v1 = _branch(-1.0)
    fl = tv.flow(tape, result)
    assert fl.grad(v1) == tape.gradient(result, v1).numpy() == 4.0
    assert fl.why_none(v0).cause is Cause.NEVER_USED


def test_a_variable_target_the_block_never_named_is_still_accepted():
    holder = {"w": tf.Variable([1.0, 2.0])}
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        y = x * x
    fl = tv.flow(tape, holder["w"])
    np.testing.assert_array_equal(fl.grad(holder["w"]), [1.0, 1.0])  # TF: d w / d w = ones, shaped as w
    assert fl.grad(x) is None and y is not None


def test_a_target_made_of_constants_only_is_drawn(tmp_path):
    w = tf.Variable(1.0)
    with tv.GradientTape() as tape:
        z = w * 2.0
        y = tf.reduce_sum(tf.constant([1.0, 2.0]))
    assert tape.gradient(y, w) is None and z is not None
    assert tv.flow(tape, y).grad(w) is None
    scene = tv.view(tape, y).scene
    assert scene.targets and all(t in scene.boxes for t in scene.targets)
    _pictures(tape, y, tmp_path, "constants")


# --------------------------------------------------------------------------- 2. NumPy round trips


def _through_numpy(how: str):
    x = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tv.GradientTape() as tape:
        x2 = x**2
        if how == "np.mean":
            back = np.mean(x2, axis=0)
        elif how == "np.asarray":
            back = np.asarray(x2) * 2.0
        elif how == ".numpy()":
            back = x2.numpy()
        else:
            back = float(tf.reduce_sum(x2))
        y = tf.reduce_mean(tf.convert_to_tensor(back))
    return tape, x, y


@pytest.mark.parametrize("how", ["np.mean", "np.asarray", ".numpy()", "float()"])
def test_every_numpy_round_trip_is_drawn_on_every_path(how, tmp_path):
    tape, x, y = _through_numpy(how)
    assert tape.gradient(y, x) is None
    fl = tv.flow(tape, y)
    assert fl.grad(x) is None and fl.why_none(x).reason is Reason.OUTSIDE_TF
    scene = tv.view(tape, y).scene
    names = {scene.graph.nx.nodes[n].get("name") for n in scene.display.nx}
    assert "x" in names and scene.targets  # where the value left and the target are both drawn
    _pictures(tape, y, tmp_path, "numpy")


# --------------------------------------------------------------------------- 3. no gradient registered


def _contrast(persistent: bool = False):
    image = tf.Variable([[[0.5, 0.2, 0.1]]])
    delta = tf.Variable(0.1)
    w = tf.Variable(2.0)
    with tv.GradientTape(persistent=persistent) as tape:
        bright = tf.image.adjust_contrast(image * 1.0, delta)
        y = tf.reduce_sum(bright) + w * 3.0
    return tape, y, image, delta, w


def test_an_op_with_no_registered_gradient_is_a_stop_of_its_own(tmp_path):
    tape, y, image, delta, w = _contrast(persistent=True)
    with pytest.raises(LookupError, match="AdjustContrastv2") as theirs:
        tape.gradient(y, [image, w])
    fl = tv.flow(tape, y)  # the flow itself can be had
    for source in (image, delta, w):  # a number is asked for: TF's own error, as tape.gradient raises it
        with pytest.raises(LookupError) as ours:
            fl.grad(source)
        assert str(ours.value) == str(theirs.value)
    why = fl.why_none(image)
    assert (why.reason, why.cause) == (Reason.NO_GRADIENT, Cause.NOT_REGISTERED)
    assert why.facts.op == "AdjustContrastv2" and "no gradient registered" in why.message
    assert [fl.graph.nx.nodes[n]["op_type"] for n in fl.unregistered] == ["AdjustContrastv2"]
    assert fl.computed(w) == 3.0  # what TF's gradient functions gave along the other path
    d = tv.explain(tape, y, image)
    assert "AdjustContrastv2" in d.message and "LookupError" in d.message
    assert all(fix in d.fix for fix in ("tf.custom_gradient", "differentiable", "tf.stop_gradient"))
    zh = tv.explain(tape, y, image, lang="zh")
    assert "AdjustContrastv2" in zh.message and "注册梯度" in zh.message and "tf.custom_gradient" in zh.fix
    elsewhere = tv.explain(tape, y, w)  # a gradient reaches w, yet tape.gradient raises for it too
    assert elsewhere.case == "not_registered_elsewhere" and "AdjustContrastv2" in elsewhere.message
    svg = tv.save(tape, y, tmp_path / "contrast.svg", collapsed=False).read_text()
    assert "not registered" in svg and "No gradient registered for AdjustContrastv2" in svg
    scene = tv.view(tape, y, collapsed=False).scene
    image_box = fl.graph.node_of(image)
    assert image_box in scene.display.nx and fl.step_of(image_box) is None  # drawn, unreached
    _pictures(tape, y, tmp_path, "contrast")


def test_the_suggested_fix_with_stop_gradient_works():
    image, delta = tf.Variable([[[0.5, 0.2, 0.1]]]), tf.Variable(0.1)
    w = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        bright = tf.image.adjust_contrast(tf.stop_gradient(image), tf.stop_gradient(delta))
        y = tf.reduce_sum(bright) + w * 3.0
    assert tv.flow(tape, y).grad(w) == 3.0 and not tv.flow(tape, y).unregistered


def test_a_missing_gradient_leaves_the_users_tape_as_tf_made_it():
    for order in ("tapeviz first", "tf first"):
        tape, y, image, _, _ = _contrast(persistent=True)
        if order == "tapeviz first":
            tv.flow(tape, y)
        with pytest.raises(LookupError, match="AdjustContrastv2"):
            tape.gradient(y, image)
        if order == "tf first":
            assert tv.flow(tape, y).unregistered
    assert not hooks.hooks_installed()


# --------------------------------------------------------------------------- 4. tv.record_step


def _state(*objects) -> list[np.ndarray]:
    out = []
    for obj in objects:
        out += [np.array(v.numpy(), copy=True) for v in obj.variables]
    return out


def _same(before, after) -> bool:
    return len(before) == len(after) and all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))


def _mlp(seed: int = 1, dropout: float = 0.25):
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(4, activation="tanh"),
            keras.layers.Dropout(dropout),
            keras.layers.Dense(1),
        ]
    )


def _eager_grads(model, loss_fn, x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=False))
    return tape.gradient(loss, model.trainable_variables)


def test_record_step_of_a_tf_function_custom_loop():
    model, opt = _mlp(), keras.optimizers.Adam(0.01)
    loss_fn, metric = keras.losses.MeanSquaredError(), keras.metrics.Mean()
    x, y = tf.random.stateless_normal((8, 3), (1, 2)), tf.random.stateless_normal((8, 1), (3, 4))

    @tf.function
    def train_step(x, y, training=True):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=training))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        metric.update_state(loss)
        return loss

    train_step(x, y)  # the user's run has started
    before = _state(model, opt, metric)
    steps = tv.record_step(train_step, x, y, training=False)
    assert _same(before, _state(model, opt, metric)), "record_step changed the user's variables"
    assert len(steps) == 1 and steps.restored
    rec = steps[0]
    fl = tv.flow(rec, rec.target)
    for v, g in zip(model.trainable_variables, _eager_grads(model, loss_fn, x, y), strict=True):
        np.testing.assert_array_equal(fl.grad(v), g.numpy())
    assert tv.view(rec, rec.target).scene.boxes
    assert float(train_step(x, y)) > 0  # the compiled step runs on as before


def test_record_step_of_a_keras_train_step_under_fit():
    model = _mlp(2, dropout=0.0)  # train_step runs training=True: no dropout, so eager grads can match
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="mse", metrics=["mae"])
    x = np.random.default_rng(0).normal(size=(16, 3)).astype("float32")
    y = np.random.default_rng(1).normal(size=(16, 1)).astype("float32")
    seen = {}

    class Look(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 0 and "steps" not in seen:
                before = _state(self.model, self.model.optimizer, *self.model.metrics)
                seen["steps"] = tv.record_step(self.model, x[:4], y[:4])
                seen["same"] = _same(before, _state(self.model, self.model.optimizer, *self.model.metrics))
                seen["grads"] = _eager_grads(self.model, keras.losses.MeanSquaredError(), x[:4], y[:4])

    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[Look()])
    assert seen["same"]
    rec = seen["steps"][0]
    fl = tv.flow(rec, rec.target)
    for v, g in zip(model.trainable_variables, seen["grads"], strict=True):
        np.testing.assert_allclose(fl.grad(v), g.numpy(), rtol=1e-6, atol=1e-7)
    # the same call straight after fit, and the run continues unchanged
    before = _state(model, model.optimizer)
    tv.record_step(model, x[:4], y[:4])
    assert _same(before, _state(model, model.optimizer))


def test_record_step_of_a_gan_step_with_two_tapes():
    keras.utils.set_random_seed(3)
    gen = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, activation="relu"), keras.layers.Dense(2)])
    disc = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, activation="relu"), keras.layers.Dense(1)])
    g_opt, d_opt = keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3)
    bce = keras.losses.BinaryCrossentropy(from_logits=True)
    real, noise = tf.random.stateless_normal((6, 2), (5, 6)), tf.random.stateless_normal((6, 2), (7, 8))

    @tf.function
    def gan_step(real, noise):
        with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
            fake = gen(noise, training=True)
            real_out, fake_out = disc(real, training=True), disc(fake, training=True)
            g_loss = bce(tf.ones_like(fake_out), fake_out)
            d_loss = bce(tf.ones_like(real_out), real_out) + bce(tf.zeros_like(fake_out), fake_out)
        g_opt.apply_gradients(
            zip(g_tape.gradient(g_loss, gen.trainable_variables), gen.trainable_variables, strict=True)
        )
        d_opt.apply_gradients(
            zip(d_tape.gradient(d_loss, disc.trainable_variables), disc.trainable_variables, strict=True)
        )
        return g_loss, d_loss

    gan_step(real, noise)
    before = _state(gen, disc, g_opt, d_opt)
    steps = tv.record_step(gan_step, real, noise)
    assert _same(before, _state(gen, disc, g_opt, d_opt))
    assert len(steps) == 2
    with tf.GradientTape(persistent=True) as tape:  # the same step by hand, eagerly, on the same weights
        fake = gen(noise, training=True)
        real_out, fake_out = disc(real, training=True), disc(fake, training=True)
        g_loss = bce(tf.ones_like(fake_out), fake_out)
        d_loss = bce(tf.ones_like(real_out), real_out) + bce(tf.zeros_like(fake_out), fake_out)
    g_fl, d_fl = tv.flow(steps[0], steps[0].target), tv.flow(steps[1], steps[1].target)
    for v, g in zip(gen.trainable_variables, tape.gradient(g_loss, gen.trainable_variables), strict=True):
        np.testing.assert_array_equal(g_fl.grad(v), g.numpy())
    for v, g in zip(disc.trainable_variables, tape.gradient(d_loss, disc.trainable_variables), strict=True):
        np.testing.assert_array_equal(d_fl.grad(v), g.numpy())


def test_record_step_puts_variables_back_when_the_step_raises():
    w = tf.Variable(1.0)

    @tf.function
    def broken():
        w.assign_add(5.0)
        raise ValueError("the step failed")

    with pytest.raises(ValueError, match="the step failed"):
        tv.record_step(broken)
    assert w.numpy() == 1.0 and not hooks.hooks_installed()


def test_record_step_refuses_what_it_cannot_call():
    with pytest.raises(TypeError, match="record_step"):
        tv.record_step(42)


def test_the_graph_mode_error_names_record_step_first():
    msg = records.GRAPH_MODE_MESSAGE
    assert msg.index("tv.record_step") < msg.index("run_eagerly")

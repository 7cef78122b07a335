"""Every example of the seed tutorial (tf.GradientTape basics), run unchanged inside
tv.GradientTape: tapeviz's flow must agree with tape.gradient and with the numbers the
tutorial states."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv


def _np(t):
    return None if t is None else np.asarray(t.numpy() if hasattr(t, "numpy") else t)


def assert_same_grad(fl, tape_grad, obj):
    """fl.grad(obj) is exactly what tape.gradient returned (None included)."""
    got = fl.grad(obj)
    want = _np(tape_grad)
    if want is None:
        assert got is None, f"tape.gradient gave None, tapeviz gave {got!r}"
        return
    assert got is not None, f"tapeviz gave None, tape.gradient gave {want!r}"
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def assert_contributions_sum(fl, obj):
    parts = [c for _, c in fl.contributions(obj)]
    total = fl.grad(obj)
    if total is None:
        assert parts == []
        return
    assert parts, "a gradient arrived but no edge carries it"
    np.testing.assert_allclose(np.sum(parts, axis=0), total, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------- 基础使用


def test_basic_x_squared():
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        y = x**2

    grad = tape.gradient(y, x)
    assert grad.numpy() == 6.0

    fl = tv.flow(tape, y)  # after gradient() on a non-persistent tape
    assert_same_grad(fl, grad, x)
    assert fl.grad(x) == 6.0
    assert fl.why_none(x) is None
    assert_contributions_sum(fl, x)
    np.testing.assert_array_equal(fl.grad(y), 1.0)  # d y / d y


def test_scalar_wrt_matrix_sum_w_squared():
    w = tf.Variable(tf.constant([[1.0, 2.0], [3.0, 4.0]]))
    with tv.GradientTape() as tape:
        loss = tf.reduce_sum(w**2)

    grad = tape.gradient(loss, w)
    np.testing.assert_array_equal(grad.numpy(), 2 * w.numpy())

    fl = tv.flow(tape, loss)
    assert_same_grad(fl, grad, w)
    np.testing.assert_array_equal(fl.grad(w), [[2.0, 4.0], [6.0, 8.0]])
    assert_contributions_sum(fl, w)


def test_tensor_wrt_tensor_y_times_two():
    x = tf.Variable(tf.constant([[1.0], [2.0]]))
    with tv.GradientTape() as tape:
        y = x * 2
        z = tf.reduce_sum(y)

    grad = tape.gradient(z, x)
    np.testing.assert_array_equal(grad.numpy(), [[2.0], [2.0]])

    fl = tv.flow(tape, z)
    assert_same_grad(fl, grad, x)
    np.testing.assert_array_equal(fl.grad(y), [[1.0], [1.0]])  # an intermediate
    assert_contributions_sum(fl, x)
    assert_contributions_sum(fl, y)


def test_tensor_target_without_reduction():
    # The tutorial notes tensor-to-tensor gradients sum over the target: same for flow.
    x = tf.Variable(tf.constant([[1.0], [2.0]]))
    with tv.GradientTape(persistent=True) as tape:
        y = x * 2
    fl = tv.flow(tape, y)
    assert_same_grad(fl, tape.gradient(y, x), x)
    np.testing.assert_array_equal(fl.grad(x), [[2.0], [2.0]])
    del tape


def test_persistent_tape_two_flows():
    x = tf.Variable(3.0)
    y = tf.Variable(4.0)

    with tv.GradientTape(persistent=True) as tape:
        f1 = x**2 + y
        f2 = x * y

    grad_x_f1 = tape.gradient(f1, x)
    grad_x_f2 = tape.gradient(f2, x)
    assert grad_x_f1.numpy() == 6.0
    assert grad_x_f2.numpy() == 4.0

    fl1 = tv.flow(tape, f1)
    fl2 = tv.flow(tape, f2)
    assert_same_grad(fl1, grad_x_f1, x)
    assert_same_grad(fl2, grad_x_f2, x)
    assert fl1.grad(x) == 6.0 and fl2.grad(x) == 4.0
    assert_same_grad(fl1, tape.gradient(f1, y), y)
    assert_same_grad(fl2, tape.gradient(f2, y), y)
    assert fl1.grad(y) == 1.0 and fl2.grad(y) == 3.0
    # Both flows read one graph; neither disturbs the other.
    assert fl1.graph is fl2.graph is tape.graph
    for v in (x, y):
        assert_contributions_sum(fl1, v)
        assert_contributions_sum(fl2, v)
    # f1 does not depend on f2 and vice versa.
    assert fl1.grad(f2) is None
    assert fl1.why_none(f2).reason == "unconnected"

    del tape


def test_stop_gradient_first_tape():
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)

    with tv.GradientTape() as tape:
        y_stopped = tf.stop_gradient(y)
        z = x**2 + y_stopped

    grad = tape.gradient(z, x)
    assert grad.numpy() == 4.0
    fl = tv.flow(tape, z)
    assert_same_grad(fl, grad, x)
    assert fl.grad(y) is None
    assert fl.why_none(y).reason == "stop_gradient"
    assert "y" in fl.why_none(y).message


def test_stop_gradient_second_tape():
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)

    with tv.GradientTape() as tape:
        z = x**2 + tf.stop_gradient(y)
    grad_y = tape.gradient(z, y)
    assert grad_y is None

    fl = tv.flow(tape, z)
    assert_same_grad(fl, grad_y, y)
    assert fl.grad(x) == 4.0
    reason = fl.why_none(y)
    assert reason is not None
    assert reason.reason == "stop_gradient"
    assert "y" in reason.message
    # The variable read by the fast path is visible (not an orphan input).
    node = tape.graph.node_of(y)
    assert tape.graph.nx.nodes[node]["kind"] == "variable"
    assert tape.graph.nx.nodes[node]["name"] == "y"


# --------------------------------------------------------------------------- 梯度裁剪


def test_clip_by_norm_on_watched_tensor():
    gradients = tf.constant([10.0, 20.0, 30.0])
    weights = tf.constant([1.0, -2.0, 0.5])
    with tv.GradientTape(persistent=True) as tape:
        tape.watch(gradients)
        clipped_gradients = tf.clip_by_norm(gradients, clip_norm=5.0)
        loss = tf.reduce_sum(clipped_gradients * weights)

    # The tutorial's claim: scaled so that the norm does not exceed 5.
    c = clipped_gradients.numpy()
    np.testing.assert_allclose(np.linalg.norm(c), 5.0, rtol=1e-6)
    np.testing.assert_allclose(c, np.array([10.0, 20.0, 30.0]) * 5.0 / np.sqrt(1400.0), rtol=1e-6)

    ops = {d.get("op_type") for _, d in tape.graph.nx.nodes(data=True)}
    assert {"Sqrt", "Maximum"} & ops, ops  # tapeviz saw the ops inside clip_by_norm

    fl = tv.flow(tape, loss)
    assert_same_grad(fl, tape.gradient(loss, gradients), gradients)
    assert_same_grad(fl, tape.gradient(loss, clipped_gradients), clipped_gradients)
    assert fl.grad(gradients) is not None
    assert_contributions_sum(fl, gradients)
    # Every recorded float intermediate inside clip_by_norm agrees with TF too.
    g = tape.graph
    for info in g.tensors.values():
        if info.trainable and info.dtype != "resource" and g.nx.nodes[info.node]["kind"] == "op":
            assert_same_grad(fl, tape.gradient(loss, info.ref), info.ref)
    del tape


def test_clip_by_norm_on_variable_nonscalar_target():
    gradients = tf.Variable([10.0, 20.0, 30.0])
    with tv.GradientTape() as tape:
        clipped_gradients = tf.clip_by_norm(gradients, clip_norm=5.0)
    fl = tv.flow(tape, clipped_gradients)
    assert_same_grad(fl, tape.gradient(clipped_gradients, gradients), gradients)
    assert_contributions_sum(fl, gradients)


def test_clip_by_value():
    gradients = tf.Variable([-5.0, 10.0, 100.0])
    with tv.GradientTape() as tape:
        clipped_gradients = tf.clip_by_value(gradients, clip_value_min=-1.0, clip_value_max=1.0)
        loss = tf.reduce_sum(clipped_gradients)
    np.testing.assert_array_equal(clipped_gradients.numpy(), [-1.0, 1.0, 1.0])

    grad = tape.gradient(loss, gradients)
    fl = tv.flow(tape, loss)
    assert_same_grad(fl, grad, gradients)
    np.testing.assert_array_equal(fl.grad(gradients), [0.0, 0.0, 0.0])  # all three were clipped
    assert_contributions_sum(fl, gradients)


def test_clip_by_value_partly_inside_range():
    t = tf.constant([-5.0, 0.5, 100.0])
    with tv.GradientTape() as tape:
        tape.watch(t)
        clipped = tf.clip_by_value(t, clip_value_min=-1.0, clip_value_max=1.0)
        loss = tf.reduce_sum(clipped * 3.0)
    fl = tv.flow(tape, loss)
    assert_same_grad(fl, tape.gradient(loss, t), t)
    np.testing.assert_array_equal(fl.grad(t), [0.0, 3.0, 0.0])


# --------------------------------------------------------------------------- 在实际训练中的应用


def _seed_model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(5, activation="relu"),
            keras.layers.Dense(4, activation="tanh"),
            keras.layers.Dense(1),
        ]
    )
    xb = tf.random.stateless_normal([16, 3], seed=[1, 2])
    yb = tf.random.stateless_normal([16, 1], seed=[3, 4])
    return model, xb, yb


def test_clipping_before_optimizer_apply_gradients():
    model, xb, yb = _seed_model()
    mse = keras.losses.MeanSquaredError()

    def some_loss_function():
        return mse(yb, model(xb))

    optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)

    with tv.GradientTape() as tape:
        loss = some_loss_function()

    gradients = tape.gradient(loss, model.trainable_variables)
    fl = tv.flow(tape, loss)
    assert len(model.trainable_variables) == 6
    for v, g in zip(model.trainable_variables, gradients, strict=True):
        assert g is not None
        assert_same_grad(fl, g, v)
        assert fl.why_none(v) is None
        assert_contributions_sum(fl, v)
    # Each Keras variable appears once, under its Keras path.
    var_nodes = [d for _, d in tape.graph.nx.nodes(data=True) if d["kind"] == "variable"]
    assert len(var_nodes) == 6
    assert {d["name"] for d in var_nodes} == {v.path for v in model.trainable_variables}

    before = [v.numpy().copy() for v in model.trainable_variables]
    clipped_gradients = [tf.clip_by_norm(g, clip_norm=1.0) for g in gradients]
    optimizer.apply_gradients(zip(clipped_gradients, model.trainable_variables, strict=True))
    for b, v, c in zip(before, model.trainable_variables, clipped_gradients, strict=True):
        assert np.linalg.norm(c.numpy()) <= 1.0 + 1e-6
        np.testing.assert_allclose(v.numpy(), b - 0.01 * c.numpy(), rtol=1e-6, atol=1e-7)

    # A second step after the update still records and agrees with TF.
    with tv.GradientTape(persistent=True) as tape2:
        loss2 = some_loss_function()
    fl2 = tv.flow(tape2, loss2)
    assert loss2.numpy() != loss.numpy()
    for v in model.trainable_variables:
        assert_same_grad(fl2, tape2.gradient(loss2, v), v)
    del tape2


def test_keras_flow_with_tv_record_on_plain_tape():
    model, xb, yb = _seed_model()
    mse = keras.losses.MeanSquaredError()
    with tf.GradientTape() as tape, tv.record(tape) as rec:
        loss = mse(yb, model(xb))
    fl = tv.flow(rec, loss)
    gradients = tape.gradient(loss, model.trainable_variables)
    for v, g in zip(model.trainable_variables, gradients, strict=True):
        assert_same_grad(fl, g, v)


@pytest.mark.parametrize("persistent", [False, True])
def test_seed_x_squared_second_identical_run(persistent):
    # The same program run twice (plain tape, then tapeviz): identical numbers.
    def program(tape_cls):
        x = tf.Variable(3.0)
        with tape_cls(persistent=persistent) as tape:
            y = x**2
        return tape, x, y

    t1, x1, y1 = program(tf.GradientTape)
    t2, x2, y2 = program(tv.GradientTape)
    fl = tv.flow(t2, y2)
    assert_same_grad(fl, t1.gradient(y1, x1), x2)
    assert_same_grad(fl, t2.gradient(y2, x2), x2)

"""Programs in the style of TensorFlow's GradientTape guides, one per guide section (our own
code, written for this suite): the autodiff guide, the advanced-autodiff guide, the basic
training loop, Keras' "training loop from scratch" and "customizing fit".

Each program takes the tape class (``tf.GradientTape`` or ``tv.GradientTape``) and returns
a :class:`Run`: what it printed (``results``, compared between the two tape classes), the
tape and target a picture is drawn of, what the flow must give (``checks``: source ->
TF's own number, or None), and the stop reason expected for each None (``reasons``).
Variables start from fixed values, so two runs compute the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np
import tensorflow as tf

Tape = Any


@dataclass
class Run:
    results: Any  # nested TF values / numbers the program printed (compared tf vs tv)
    tape: Tape = None  # the tape a picture is drawn of (None: graph mode, see `compiled`)
    target: Any = None
    checks: list = field(default_factory=list)  # [(source, TF's gradient or None)]
    reasons: list = field(default_factory=list)  # [(source, the Reason code tv.explain must give)]
    raises: type[BaseException] | None = None  # what asking the flow for a number raises (as TF does)
    compiled: Callable | None = None  # a @tf.function step (and its args) for tv.record_step
    compiled_args: tuple = ()
    state: list = field(default_factory=list)  # every variable a compiled step may write


PROGRAMS: dict[str, Callable[[type], Run]] = {}


def program(section: str):
    def add(fn):
        PROGRAMS[section] = fn
        return fn

    return add


def _jac_sum(jac, target_ndim: int):
    """The gradient a Jacobian adds up to: summed over the target's axes."""
    return tf.reduce_sum(jac, axis=list(range(target_ndim))) if target_ndim else jac


# --------------------------------------------------------------------------- autodiff guide


@program("autodiff: gradient tapes")
def scalar_square(T):
    a = tf.Variable(4.0)
    with T() as tape:
        b = a**2 + 3.0 * a
    g = tape.gradient(b, a)
    return Run([g], tape, b, [(a, g)])


@program("autodiff: tensors and variables as sources")
def affine_sources(T):
    w = tf.Variable([[0.5, -1.0], [2.0, 0.25], [-0.5, 1.5]], name="w")
    b = tf.Variable([0.1, -0.2], name="b")
    x = tf.constant([[1.0, 2.0, 3.0]])
    with T(persistent=True) as tape:
        y = x @ w + b
        loss = tf.reduce_mean(y**2)
    grads = tape.gradient(loss, {"w": w, "b": b})
    return Run([grads["w"], grads["b"]], tape, loss, [(w, grads["w"]), (b, grads["b"])])


@program("autodiff: gradients with respect to a model")
def dense_layer(T):
    layer = keras.layers.Dense(2, activation="relu", kernel_initializer="ones", bias_initializer="zeros")
    x = tf.constant([[1.0, -2.0, 3.0]])
    layer.build(x.shape)
    with T() as tape:
        out = layer(x)
        loss = tf.reduce_sum(out**2)
    grads = tape.gradient(loss, layer.trainable_variables)
    return Run(grads, tape, loss, list(zip(layer.trainable_variables, grads, strict=True)))


@program("autodiff: controlling what the tape watches")
def what_is_watched(T):
    trained = tf.Variable(2.0, name="trained")
    frozen = tf.Variable(2.0, name="frozen", trainable=False)
    plain = tf.constant(2.0)
    shifted = tf.Variable(2.0) + 1.0  # a tensor, not a variable
    with T() as tape:
        y = trained * frozen * plain * shifted
    g = tape.gradient(y, [trained, frozen, plain, shifted])
    checks = list(zip([trained, frozen, plain, shifted], g, strict=True))
    return Run(g, tape, y, checks, [(frozen, "not_watched"), (plain, "not_watched"), (shifted, "not_watched")])


@program("autodiff: watch_accessed_variables=False")
def watch_only_one(T):
    p, q = tf.Variable(0.5, name="p"), tf.Variable(1.5, name="q")
    with T(watch_accessed_variables=False) as tape:
        tape.watch(p)
        y = tf.sin(p) + tf.exp(q)
    g = tape.gradient(y, [p, q])
    return Run(g, tape, y, [(p, g[0]), (q, g[1])], [(q, "not_watched")])


@program("autodiff: intermediate results")
def intermediate(T):
    x = tf.constant(3.0)
    with T(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    dz_dx, dz_dy = tape.gradient(z, x), tape.gradient(z, y)
    return Run([dz_dx, dz_dy], tape, z, [(x, dz_dx), (y, dz_dy)])


@program("autodiff: gradients of non-scalar targets")
def non_scalar(T):
    x = tf.Variable(2.0)
    with T(persistent=True) as tape:
        y0 = x**2
        y1 = 1.0 / x
        ys = tf.stack([y0, y1])
    g_list = tape.gradient({"y0": y0, "y1": y1}, x)  # targets in a dict: their gradients add
    g_stack = tape.gradient(ys, x)
    return Run([g_list, g_stack], tape, ys, [(x, g_stack)])


@program("autodiff: element-wise gradient of a vector target")
def elementwise(T):
    x = tf.linspace(-4.0, 4.0, 9)
    with T() as tape:
        tape.watch(x)
        y = tf.nn.sigmoid(x)
    g = tape.gradient(y, x)
    return Run([g], tape, y, [(x, g)])


@program("autodiff: control flow (the target is a variable)")
def branch(T):
    x = tf.constant(1.0)
    v0, v1 = tf.Variable(2.0), tf.Variable(2.0)
    with T(persistent=True) as tape:
        tape.watch(x)
        if x > 0.0:
            result = v0
        else:
            result = v1**2
    g = tape.gradient(result, [v0, v1])
    return Run(g, tape, result, [(v0, g[0]), (v1, g[1])], [(v1, "unconnected")])


@program("autodiff: None: a variable replaced by a tensor")
def replaced(T):
    x = tf.Variable(2.0)
    for _ in range(2):
        with T() as tape:
            y = x * x + 1.0
        g = tape.gradient(y, x)
        used, x = x, x + 1.0  # now a tensor: the next round's gradient is None
    return Run([g], tape, y, [(used, g)], [(used, "not_watched")])


@program("autodiff: None: calculations outside TensorFlow")
def through_numpy(T):
    x = tf.Variable([[1.0, 2.0], [3.0, 4.0]], dtype=tf.float32)
    with T() as tape:
        x2 = x**2
        y = np.mean(x2, axis=0)  # NumPy: the tape loses the path
        y = tf.reduce_mean(y, axis=0)
    g = tape.gradient(y, x)
    return Run([g], tape, y, [(x, g)], [(x, "outside_tf")])


@program("autodiff: None: integers")
def integers(T):
    x = tf.constant(10)
    with T() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x)
    return Run([g], tape, y, [(x, g)], [(x, "integer_dtype")])


@program("autodiff: None: a stateful object")
def stateful(T):
    x0 = tf.Variable(3.0, name="x0")
    x1 = tf.Variable(0.0, name="x1")
    with T() as tape:
        x1.assign_add(x0)  # the tape does not follow values through a variable's state
        y = x1**2
    g = tape.gradient(y, x0)
    return Run([g], tape, y, [(x0, g)], [(x0, "stateful")])


@program("autodiff: no gradient registered")
def no_registered_gradient(T):
    image = tf.Variable([[[0.5, 0.2, 0.1]]])
    delta = tf.Variable(0.1)
    with T() as tape:
        y = tf.reduce_sum(tf.image.adjust_contrast(image, delta))
    try:
        tape.gradient(y, [image, delta])
        err = None
    except LookupError as e:
        err = str(e)
    return Run([err], tape, y, [], [(image, "no_gradient"), (delta, "no_gradient")], raises=LookupError)


@program("autodiff: zeros instead of None")
def zeros_not_none(T):
    x = tf.Variable([2.0, 2.0])
    y = tf.Variable(3.0)
    with T() as tape:
        z = y**2
    g = tape.gradient(z, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    return Run([g], tape, z, [(x, None)], [(x, "unconnected")])


# --------------------------------------------------------------------------- advanced autodiff


def _x_and_y() -> tuple[tf.Variable, tf.Variable]:
    return tf.Variable(2.0, name="x"), tf.Variable(3.0, name="y")


def _y_stopped(t, z, x, y, code: str) -> Run:
    """d z / d {x, y} as a dict, as the advanced guide asks it; y's path is cut (``code``)."""
    g = t.gradient(z, {"x": x, "y": y})
    return Run([g["x"], g["y"]], t, z, [(x, g["x"]), (y, g["y"])], [(y, code)])


@program("advanced: stop recording")
def paused(T):
    x, y = _x_and_y()
    with T() as t:
        x_sq = x * x
        with t.stop_recording():
            y_sq = y * y
        z = x_sq + y_sq
    return _y_stopped(t, z, x, y, "not_recorded")


@program("advanced: reset")
def reset(T):
    x, y = _x_and_y()
    with T() as t:
        y_sq = y * y
        t.reset()
        z = x * x + y_sq
    return _y_stopped(t, z, x, y, "not_recorded")


@program("advanced: stop gradient")
def stopped(T):
    x, y = _x_and_y()
    with T() as t:
        z = x**2 + tf.stop_gradient(y**2)
    return _y_stopped(t, z, x, y, "stop_gradient")


@tf.custom_gradient
def _clipped_identity(x):
    def backward(upstream):
        return tf.clip_by_norm(upstream, 0.5)

    return x, backward


@program("advanced: custom gradients")
def custom(T):
    v = tf.Variable([3.0, 4.0])
    with T() as t:
        y = tf.reduce_sum(_clipped_identity(v) * 2.0)
    g = t.gradient(y, v)
    return Run([g], t, y, [(v, g)])


@program("advanced: multiple tapes")
def two_tapes(T):
    x0, x1 = tf.constant(0.0), tf.constant(0.0)
    with T() as tape0, T() as tape1:
        tape0.watch(x0)
        tape1.watch(x1)
        y0 = tf.math.sin(x0)
        y1 = tf.nn.sigmoid(x1)
        y = y0 + y1
        ys = tf.reduce_sum(y)
    g0, g1 = tape0.gradient(ys, x0), tape1.gradient(ys, x1)
    return Run([g0, g1], tape1, ys, [(x1, g1), (x0, None)], [(x0, "not_watched")])


@program("advanced: higher-order gradients")
def second_order(T):
    x = tf.Variable(1.5)
    with T() as t2:
        with T() as t1:
            y = x * x * x
        dy_dx = t1.gradient(y, x)
    d2y_dx2 = t2.gradient(dy_dx, x)
    return Run([dy_dx, d2y_dx2], t2, dy_dx, [(x, d2y_dx2)])


@program("advanced: input gradient regularization")
def input_gradient_penalty(T):
    layer = keras.layers.Dense(3, kernel_initializer="ones", bias_initializer="zeros", activation="tanh")
    x = tf.constant([[0.1, -0.2], [0.3, 0.05]])
    layer.build(x.shape)
    with T() as t2:
        with T() as t1:
            t1.watch(x)
            y = layer(x, training=True)
            out = tf.reduce_sum(y**2)
        g1 = t1.gradient(out, x)
        penalty = tf.reduce_sum(g1**2)
    dv = t2.gradient(penalty, layer.trainable_variables)
    return Run([g1, *dv], t2, penalty, list(zip(layer.trainable_variables, dv, strict=True)))


@program("advanced: jacobian, scalar source")
def jacobian_scalar(T):
    x = tf.linspace(-2.0, 2.0, 5)
    delta = tf.Variable(0.0)
    with T() as tape:
        y = tf.nn.sigmoid(x + delta)
    dy = tape.jacobian(y, delta)
    return Run([dy], tape, y, [(delta, _jac_sum(dy, 1))])


@program("advanced: jacobian, tensor source")
def jacobian_tensor(T):
    x = tf.constant([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    layer = keras.layers.Dense(2, activation="relu", kernel_initializer="ones", bias_initializer="zeros")
    layer.build(x.shape)
    with T() as tape:
        y = layer(x)
    j = tape.jacobian(y, layer.kernel)
    return Run([j], tape, y, [(layer.kernel, _jac_sum(j, 2))])


@program("advanced: batch jacobian")
def batch_jacobian(T):
    x = tf.constant([[1.0, -1.0], [0.5, 2.0], [-0.3, 0.7]])
    w = tf.Variable([[1.0, 0.5, -0.5], [0.25, -1.0, 2.0]])
    with T() as tape:
        tape.watch(x)
        y = tf.nn.elu(x @ w)
    j = tape.batch_jacobian(y, x)
    return Run([j], tape, y, [(x, tf.reduce_sum(j, axis=1))])


# --------------------------------------------------------------------------- training loops


def _line_data():
    x = tf.linspace(-2.0, 2.0, 20)
    return x, 3.0 * x + 2.0 + 0.1 * tf.sin(7.0 * x)


class _Line(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(5.0)
        self.b = tf.Variable(0.0)

    def __call__(self, x):
        return self.w * x + self.b


@program("training: basic training loop (tf.Module)")
def basic_loop(T):
    model = _Line()
    x, y = _line_data()
    for _ in range(3):
        with T() as t:
            loss = tf.reduce_mean(tf.square(y - model(x)))
        dw, db = t.gradient(loss, [model.w, model.b])
        model.w.assign_sub(0.1 * dw)
        model.b.assign_sub(0.1 * db)
    return Run([model.w, model.b, dw, db], t, loss, [(model.w, dw), (model.b, db)])


def _mlp(seed: int):
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(6, activation="relu"), keras.layers.Dense(3)], name="mlp"
    )


def _batch():
    x = tf.reshape(tf.range(24, dtype=tf.float32) / 24.0, (6, 4))
    return x, tf.constant([0, 1, 2, 1, 0, 2])


@program("training: Keras loop from scratch, metrics")
def keras_loop(T):
    model, opt = _mlp(0), keras.optimizers.SGD(0.1)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    acc = keras.metrics.SparseCategoricalAccuracy()
    x, y = _batch()
    for _ in range(2):
        with T() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_weights)
        opt.apply_gradients(zip(grads, model.trainable_weights, strict=True))
        acc.update_state(y, logits)
    checks = list(zip(model.trainable_weights, grads, strict=True))
    return Run([*grads, acc.result(), *model.weights], tape, loss, checks)


@program("training: Keras loop from scratch, losses tracked by the model")
def keras_add_loss(T):
    keras.utils.set_random_seed(1)
    inputs = keras.Input((4,))
    h = keras.layers.Dense(5, activity_regularizer=keras.regularizers.L2(0.01))(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1)(h))
    x, y = _batch()
    y = tf.cast(y, tf.float32)[:, None]
    with T() as tape:
        pred = model(x, training=True)
        loss = tf.reduce_mean((pred - y) ** 2) + tf.add_n(model.losses)
    grads = tape.gradient(loss, model.trainable_weights)
    return Run(grads, tape, loss, list(zip(model.trainable_weights, grads, strict=True)))


@program("training: Keras loop from scratch, speeding up with tf.function")
def keras_compiled_loop(T):
    model, opt = _mlp(2), keras.optimizers.Adam(0.01)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = _batch()

    @tf.function
    def train_step(x, y):
        with T() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_weights)
        opt.apply_gradients(zip(grads, model.trainable_weights, strict=True))
        return loss, grads

    losses = [train_step(x, y)[0] for _ in range(2)]
    state = [*model.weights, *opt.variables]
    return Run([*losses, *model.weights], compiled=train_step, compiled_args=(x, y), state=state)


class _Custom(keras.Model):
    tape_class: type = tf.GradientTape
    last: dict = {}

    def train_step(self, data):
        x, y = data
        with self.tape_class() as tape:
            pred = self(x, training=True)
            loss = tf.reduce_mean((pred - y) ** 2)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
        self.last = {"tape": tape, "loss": loss, "grads": grads}
        return {"loss": loss}


@program("training: customizing what happens in fit")
def custom_fit(T):
    keras.utils.set_random_seed(3)
    inputs = keras.Input((4,))
    model = _Custom(inputs, keras.layers.Dense(1)(keras.layers.Dense(3, activation="tanh")(inputs)))
    model.tape_class = T
    model.compile(optimizer=keras.optimizers.SGD(0.05), run_eagerly=True)
    x, _ = _batch()
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    model.fit(x, y, batch_size=6, epochs=2, verbose=0, shuffle=False)
    last = model.last
    checks = list(zip(model.trainable_variables, last["grads"], strict=True))
    return Run([*model.weights, last["loss"]], last["tape"], last["loss"], checks)


@program("training: a GAN step from scratch")
def gan(T):
    keras.utils.set_random_seed(4)
    gen = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, activation="relu"), keras.layers.Dense(2)])
    disc = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, activation="relu"), keras.layers.Dense(1)])
    bce = keras.losses.BinaryCrossentropy(from_logits=True)
    real = tf.constant([[1.0, 0.5], [0.2, -0.3], [0.7, 0.1]])
    noise = tf.constant([[0.3, -0.1], [-0.5, 0.2], [0.9, 0.4]])
    with T() as g_tape, T() as d_tape:
        fake = gen(noise, training=True)
        real_out, fake_out = disc(real, training=True), disc(fake, training=True)
        g_loss = bce(tf.ones_like(fake_out), fake_out)
        d_loss = bce(tf.ones_like(real_out), real_out) + bce(tf.zeros_like(fake_out), fake_out)
    g_grads = g_tape.gradient(g_loss, gen.trainable_variables)
    d_grads = d_tape.gradient(d_loss, disc.trainable_variables)
    checks = list(zip(gen.trainable_variables, g_grads, strict=True))
    return Run([*g_grads, *d_grads], g_tape, g_loss, checks)

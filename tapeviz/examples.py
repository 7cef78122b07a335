"""Built-in examples: one per section of the GradientTape tutorial tapeviz grew from.

Each runs the tutorial's program as written, with ``tv.GradientTape`` in place of
``tf.GradientTape``, and returns the tape, the target and the numbers TF printed, so the
CLI, the notebooks and the tests all show the same thing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from . import api as tv


@dataclass
class ExampleRun:
    tape: Any
    target: Any
    printed: dict[str, Any]  # what the tutorial prints, computed by TF
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Example:
    name: str
    title: str
    heading: str  # the tutorial's Chinese section heading
    run: Callable[[], ExampleRun]


def basic() -> ExampleRun:
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        y = x**2
    grad = tape.gradient(y, x)
    return ExampleRun(tape, y, {"dy/dx": grad.numpy()}, {"x": x})


def scalar_over_tensor() -> ExampleRun:
    w = tf.Variable(tf.constant([[1.0, 2.0], [3.0, 4.0]]))
    with tv.GradientTape() as tape:
        loss = tf.reduce_sum(w**2)
    grad = tape.gradient(loss, w)
    return ExampleRun(tape, loss, {"dloss/dw": grad.numpy()}, {"w": w})


def tensor_over_tensor() -> ExampleRun:
    x = tf.Variable(tf.constant([[1.0], [2.0]]))
    with tv.GradientTape() as tape:
        y = x * 2
        z = tf.reduce_sum(y)
    grad = tape.gradient(z, x)
    return ExampleRun(tape, z, {"dz/dx": grad.numpy()}, {"x": x, "y": y})


def persistent() -> ExampleRun:
    x = tf.Variable(3.0)
    y = tf.Variable(4.0)
    with tv.GradientTape(persistent=True) as tape:
        f1 = x**2 + y
        f2 = x * y
    grad_x_f1 = tape.gradient(f1, x)
    grad_x_f2 = tape.gradient(f2, x)
    return ExampleRun(
        tape,
        f1,
        {"df1/dx": grad_x_f1.numpy(), "df2/dx": grad_x_f2.numpy()},
        {"x": x, "y": y, "targets": {"f1": f1, "f2": f2}},
    )


def stop_gradient() -> ExampleRun:
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        y_stopped = tf.stop_gradient(y)
        z = x**2 + y_stopped
    grad = tape.gradient(z, x)
    with tv.GradientTape() as tape:
        z = x**2 + tf.stop_gradient(y)
    grad_y = tape.gradient(z, y)
    return ExampleRun(tape, z, {"dz/dx": grad.numpy(), "dz/dy": grad_y}, {"x": x, "y": y})


def clip_by_norm() -> ExampleRun:
    gradients = tf.constant([10.0, 20.0, 30.0])
    with tv.GradientTape() as tape:
        tape.watch(gradients)
        clipped_gradients = tf.clip_by_norm(gradients, clip_norm=5.0)
    return ExampleRun(tape, clipped_gradients, {"clipped": clipped_gradients.numpy()}, {"gradients": gradients})


def clip_by_value() -> ExampleRun:
    gradients = tf.constant([-5.0, 10.0, 100.0])
    with tv.GradientTape() as tape:
        tape.watch(gradients)
        clipped_gradients = tf.clip_by_value(gradients, clip_value_min=-1.0, clip_value_max=1.0)
    return ExampleRun(tape, clipped_gradients, {"clipped": clipped_gradients.numpy()}, {"gradients": gradients})


def small_model(target_scale: float = 1.0):
    """A small Keras model and batch, built deterministically (no downloads); targets
    spread by ``target_scale`` (3.0 gives gradients large enough for clip_norm=1.0 to act)."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(8, 3)).astype("float32"))
    y = tf.constant((rng.normal(size=(8, 1)) * target_scale).astype("float32"))
    return model, x, y


def clip_in_training() -> ExampleRun:
    # Targets spread wide enough that clip_norm=1.0 acts: three of the four gradients
    # (norms 1.41, 1.25, 1.03) shrink to norm 1, the first bias's (0.80) stays.
    model, xb, yb = small_model(target_scale=3.0)

    def some_loss_function():
        return tf.reduce_mean(tf.square(model(xb) - yb))

    optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)
    with tv.GradientTape() as tape:
        loss = some_loss_function()
    gradients = tape.gradient(loss, model.trainable_variables)
    clipped_gradients = [tf.clip_by_norm(g, clip_norm=1.0) for g in gradients]
    before = [v.numpy().copy() for v in model.trainable_variables]
    optimizer.apply_gradients(zip(clipped_gradients, model.trainable_variables, strict=True))
    return ExampleRun(
        tape,
        loss,
        {
            "loss": loss.numpy(),
            "grad norms": [float(tf.norm(g)) for g in gradients],
            "clipped norms": [float(tf.norm(g)) for g in clipped_gradients],
        },
        {
            "model": model,
            "gradients": gradients,
            "clipped": clipped_gradients,
            "before": before,
            "optimizer": optimizer,
        },
    )


EXAMPLES: dict[str, Example] = {
    e.name: e
    for e in [
        Example("basic", "y = x**2, dy/dx at x = 3", "基础使用", basic),
        Example("scalar_over_tensor", "loss = sum(w**2), dloss/dw = 2w", "标量对张量求导", scalar_over_tensor),
        Example("tensor_over_tensor", "y = x * 2, z = sum(y), dz/dx", "张量对张量求导", tensor_over_tensor),
        Example("persistent", "persistent tape: f1 = x**2 + y and f2 = x * y", "持久化梯度磁带", persistent),
        Example("stop_gradient", "z = x**2 + stop_gradient(y)", "梯度停止", stop_gradient),
        Example("clip_by_norm", "tf.clip_by_norm([10, 20, 30], 5)", "使用 tf.clip_by_norm", clip_by_norm),
        Example("clip_by_value", "tf.clip_by_value([-5, 10, 100], -1, 1)", "使用 tf.clip_by_value", clip_by_value),
        Example(
            "clip_in_training",
            "clip gradients before optimizer.apply_gradients (Keras)",
            "在实际训练中的应用",
            clip_in_training,
        ),
    ]
}


def get(name: str) -> Example:
    try:
        return EXAMPLES[name]
    except KeyError:
        raise KeyError(f"No example named {name!r}; choose one of: {', '.join(EXAMPLES)}") from None

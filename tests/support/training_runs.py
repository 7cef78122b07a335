"""A training run as issue 23's user writes it, shared by the tests of tv.History's views:
their own loop with a plain tf.GradientTape and one hist.add per step, on a deep sigmoid
net with small weights (its first layers' gradients vanish)."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

import tapeviz as tv


def sigmoid_run(names, *, steps: int, lr: float, width: int = 32, seed: int = 1, flush_every: int = 8):
    """(hist, seen): ``seen[step]`` holds the loss and each layer's gradient norm, computed
    in float64 from the gradients tape.gradient returned."""
    keras.utils.set_random_seed(0)
    init = keras.initializers.RandomNormal(stddev=0.1)
    model = keras.Sequential(
        [keras.Input((16,))]
        + [keras.layers.Dense(width, activation="sigmoid", kernel_initializer=init, name=n) for n in names[:-1]]
        + [keras.layers.Dense(1, name=names[-1])],
        name="net",
    )
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.normal(size=(64, 16)).astype("float32"))
    y = tf.constant((rng.normal(size=(64, 1)) > 0).astype("float32"))
    opt = keras.optimizers.SGD(lr)
    hist = tv.History(flush_every=flush_every)
    seen = []
    for step in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        hist.add(step, loss=loss, grads=grads, variables=model.trainable_variables)
        squares: dict[str, float] = {}
        for v, g in zip(model.trainable_variables, grads, strict=True):
            layer = v.path.rsplit("/", 1)[0]
            squares[layer] = squares.get(layer, 0.0) + float(tf.reduce_sum(tf.square(tf.cast(g, tf.float64))))
        seen.append({"loss": float(loss), "layer": {k: np.sqrt(v) for k, v in squares.items()}})
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return hist, seen


def pictured_run(*, steps: int, lr: float, seed: int, data_seed: int):
    """(model, hist, grads_at): a small tanh MLP trained ``steps`` SGD steps under
    tv.GradientTape, each step added to ``hist`` with its tape (so the History keeps
    pictures), ``grads_at[step]`` the gradients tape.gradient returned at that step."""
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])
    opt = keras.optimizers.SGD(lr)
    x = tf.constant(np.random.default_rng(data_seed).normal(size=(8, 3)).astype("float32"))
    y = tf.constant(np.ones((8, 1), "float32"))
    hist = tv.History()
    grads_at = {}
    for step in range(steps):
        with tv.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        grads_at[step] = grads
        hist.add(step, loss=loss, grads=grads, variables=model.trainable_variables, tape=tape)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return model, hist, grads_at

"""The sums of squares behind tv.History's norms: NumPy on a CPU tensor's buffer, one
tf.function a step elsewhere, both equal to tf.norm in float64 within the documented
tolerance (the order of float64 additions), and History stores them as tf.norm in float64
rounded to float32."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.record.variable_reads import read_variables
from tapeviz.training import squared_norms as sumsq

keras = pytest.importorskip("keras")
RTOL = 1e-13  # squared_norms.py's documented tolerance, with margin for 2**21 values


def tf_sumsq64(t) -> float:
    if isinstance(t, tf.IndexedSlices):
        t = t.values
    if t.dtype.is_complex:
        return tf_sumsq64(tf.math.real(t)) + tf_sumsq64(tf.math.imag(t))
    return float(tf.reduce_sum(tf.square(tf.cast(t, tf.float64))))


TENSORS = {
    "scalar": lambda rng: tf.constant(3.5),
    "bias": lambda rng: tf.constant(rng.normal(size=128).astype("float32")),
    "kernel": lambda rng: tf.constant(rng.normal(size=(128, 128)).astype("float32")),
    "conv": lambda rng: tf.constant(rng.normal(size=(3, 3, 16, 32)).astype("float32")),
    "chunked (2**21)": lambda rng: tf.constant(rng.normal(size=(1 << 21,)).astype("float32")),
    "float16": lambda rng: tf.constant(rng.normal(size=(64, 8)).astype("float16")),
    "bfloat16": lambda rng: tf.cast(tf.constant(rng.normal(size=(64, 8)).astype("float32")), tf.bfloat16),
    "float64": lambda rng: tf.constant(rng.normal(size=(300,))),
    "tiny and huge": lambda rng: tf.constant(np.array([1e-30, 3e30, -2e-20, 7.0], "float32")),
    "zeros": lambda rng: tf.zeros((5, 5)),
    "complex": lambda rng: tf.complex(tf.constant([1.0, -2.0]), tf.constant([0.5, 3.0])),
    "indexed slices": lambda rng: tf.IndexedSlices(
        tf.constant(rng.normal(size=(3, 4)).astype("float32")), tf.constant([0, 2, 0]), tf.constant([5, 4])
    ),
}


@pytest.mark.parametrize("kind", list(TENSORS))
def test_host_and_device_sums_equal_tf_in_float64(kind):
    t = TENSORS[kind](np.random.default_rng(0))
    want = tf_sumsq64(t)
    assert sumsq.on_cpu([t])
    host = sumsq.host_sumsq(t)
    dev = sumsq.device_sums(None, [t]).numpy()
    np.testing.assert_allclose(sumsq.host_sums([t]), [want], rtol=RTOL, atol=0)
    assert dev.dtype == np.float64 and dev.shape == (1,)
    np.testing.assert_allclose(host, want, rtol=RTOL, atol=0)
    np.testing.assert_allclose(dev[0], want, rtol=RTOL, atol=0)


def test_a_step_of_many_tensors_is_summed_in_batches_equal_to_one_by_one():
    rng = np.random.default_rng(3)
    shapes = [(0,), (5,), (300, 300), (7, 9), (1 << 17,), (1000,), (2, 3, 4)]  # empty, over CHUNK, over BATCH
    tensors = [tf.constant(rng.normal(size=s).astype("float32")) for s in shapes] + [TENSORS["indexed slices"](rng)]
    tensors += [tf.constant(rng.normal(size=(1 << 16)).astype("float32")) for _ in range(5)]  # batches split
    got = sumsq.host_sums(tensors)
    want = [tf_sumsq64(t) for t in tensors]
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=0)
    assert got[0] == 0.0 and sumsq.host_sums([tf.ones(2), tf.zeros(0)]) == [2.0, 0.0]


def test_nonfinite_values_give_nonfinite_sums():
    for bad, want in ((np.nan, np.isnan), (np.inf, np.isinf)):
        t = tf.constant([1.0, bad, 2.0])
        assert want(sumsq.host_sumsq(t)) and want(sumsq.device_sums(None, [t]).numpy()[0])
        assert want(sumsq.host_sums([tf.ones(3), t])[1])


def test_a_variable_is_read_with_its_current_value_and_the_loss_leads_the_device_vector():
    v, b = tf.Variable(tf.ones((4, 4))), tf.Variable(tf.fill([3], 2.0))
    assert sumsq.host_sums(read_variables([v, b])) == [16.0, 12.0]  # one batched read
    v.assign_add(tf.ones((4, 4)))
    assert sumsq.host_sums(read_variables([v])) == [64.0]
    got = sumsq.device_sums(tf.constant(2.5), [tf.constant([3.0, 4.0]), v]).numpy()
    np.testing.assert_array_equal(got, [2.5, 25.0, 64.0])


def _mlp_run(hist, steps=6, clip=None):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(4)])
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(32, 16)).astype("float32"))
    y = tf.constant(rng.normal(size=(32, 4)).astype("float32"))
    opt = keras.optimizers.SGD(0.05)
    seen = []
    for step in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        clipped = tf.clip_by_global_norm(grads, clip)[0] if clip else None
        seen.append(
            {
                "grads": [float(tf.norm(tf.cast(g, tf.float64))) for g in grads],
                "weights": [float(tf.norm(tf.cast(v, tf.float64))) for v in model.trainable_variables],
                "clipped": [float(tf.norm(tf.cast(c, tf.float64))) for c in clipped] if clip else None,
                "loss": float(loss),
            }
        )
        hist.add(step, loss=loss, grads=grads, variables=model.trainable_variables, clipped=clipped)
        opt.apply_gradients(zip(clipped or grads, model.trainable_variables, strict=True))
    return model, seen


@pytest.mark.parametrize("device_path", [False, True], ids=["numpy on the buffer", "one tf.function a step"])
def test_history_stores_tf_norm_in_float64_rounded_to_float32(monkeypatch, device_path):
    if device_path:  # what a GPU run takes, forced on CPU
        monkeypatch.setattr("tapeviz.training.history.on_cpu", lambda tensors: False)
    hist = tv.History(flush_every=4)
    model, seen = _mlp_run(hist, clip=0.5)
    assert all(layout.on_host is not device_path for layout in hist._layouts.values())
    for i, v in enumerate(model.trainable_variables):
        for kind, key in (("grad", "grads"), ("weight", "weights"), ("clipped", "clipped")):
            want = np.float32([s[key][i] for s in seen])
            np.testing.assert_array_equal(hist.norms(v.path, kind), want.astype(np.float64), err_msg=f"{v.path} {kind}")
    np.testing.assert_array_equal(hist.losses(), np.float32([s["loss"] for s in seen]))

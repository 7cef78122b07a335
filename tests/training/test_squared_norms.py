"""The sums of squares behind tv.History's norms: a float32 BLAS dot on a CPU tensor's
buffer (other dtypes: exact float64 sums), one tf.function a step elsewhere, each equal to
tf.norm in float64 within its documented tolerance, with overflow / underflow of float32
squares summed exactly in float64."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.record.variable_reads import VariableReader, host_shape, host_views, is_float_scalar, read_variables
from tapeviz.training import squared_norms as sumsq

keras = pytest.importorskip("keras")
RTOL = 1e-13  # the float64 sums' documented tolerance, with margin for 2**21 values
RTOL_DOT = 2e-6  # a float32 tensor's sum on CPU (sdot): norms within 1e-6 (docs/training.md)


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
    rtol = RTOL_DOT if t.dtype == tf.float32 or getattr(t, "values", t).dtype == tf.float32 else RTOL
    np.testing.assert_allclose(sumsq.host_sums([t]), [want], rtol=rtol, atol=0)
    assert dev.dtype == np.float64 and dev.shape == (1,)
    np.testing.assert_allclose(host, want, rtol=RTOL, atol=0)
    np.testing.assert_allclose(dev[0], want, rtol=RTOL, atol=0)


def test_a_step_of_many_tensors_is_summed_in_pieces_within_the_float32_tolerance():
    rng = np.random.default_rng(3)
    shapes = [(0,), (5,), (300, 300), (7, 9), (1 << 17,), (1000,), (2, 3, 4)]  # empty, over DOT_PIECE
    tensors = [tf.constant(rng.normal(size=s).astype("float32")) for s in shapes] + [TENSORS["indexed slices"](rng)]
    tensors += [tf.constant(rng.normal(size=(1 << 16)).astype("float32")) for _ in range(5)]  # batches split
    got = sumsq.host_sums(tensors)
    want = [tf_sumsq64(t) for t in tensors]
    np.testing.assert_allclose(got, want, rtol=RTOL_DOT, atol=0)
    assert got[0] == 0.0 and sumsq.host_sums([tf.ones(2), tf.zeros(0)]) == [2.0, 0.0]


def test_a_step_of_mixed_dtypes_sums_float32_by_dots_and_the_rest_exactly():
    rng = np.random.default_rng(4)
    tensors = [
        tf.constant(rng.normal(size=(300, 300)).astype("float32")),  # float32, in pieces
        tf.constant(rng.normal(size=(50,))),  # float64
        tf.constant(rng.normal(size=(7,)).astype("float32")),
        tf.constant(rng.normal(size=(64, 8)).astype("float16")),
        tf.zeros((3,)),  # float32 zero: exactly 0
    ]
    got = sumsq.host_sums(tensors)
    want = [tf_sumsq64(t) for t in tensors]
    np.testing.assert_allclose(got[0::2], want[0::2], rtol=RTOL_DOT, atol=0)
    np.testing.assert_allclose(got[1::2], want[1::2], rtol=RTOL, atol=0)
    assert got[4] == 0.0


def test_zero_huge_and_tiny_float32_tensors_are_summed_exactly_in_float64():
    zero, huge, tiny = tf.zeros((3, 40000)), tf.fill([5], 1e30), tf.fill([5], 1e-25)
    assert float(tf.reduce_sum(tf.square(huge))) == np.inf  # its float32 squares overflow
    assert float(tf.reduce_sum(tf.square(tiny))) == 0.0  # ... and these underflow
    got = sumsq.host_sums([zero, huge, tiny])
    assert got[0] == 0.0
    np.testing.assert_allclose(got[1:], [tf_sumsq64(huge), tf_sumsq64(tiny)], rtol=RTOL, atol=0)
    assert np.isfinite(got[1]) and got[2] > 0


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


def test_a_reader_made_once_reads_each_steps_values_and_views_share_the_buffers():
    v, b = tf.Variable(tf.ones((4, 4))), tf.Variable(tf.fill([3], 2.0))
    read = VariableReader([v, b])  # what a History keeps per layout, reused at every step
    for k in range(1, 4):
        v.assign(tf.fill((4, 4), float(k)))
        got_v, got_b = read()
        np.testing.assert_array_equal(got_v, v.numpy())
        np.testing.assert_array_equal(got_b, b.numpy())
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    sl = tf.IndexedSlices(tf.constant([[5.0, 6.0]]), tf.constant([1]), tf.constant([2, 2]))
    view, values = host_views([t, sl])
    assert np.shares_memory(view, np.asarray(t)) and view.shape == (2, 2)
    np.testing.assert_array_equal(values, [[5.0, 6.0]])  # an IndexedSlices: its values
    assert host_views([np.arange(3.0)])[0].tolist() == [0.0, 1.0, 2.0]  # not a tensor: np.asarray
    a, c = host_views([t, tf.constant(7.0)])  # all eager tensors: the mapped path, views as well
    assert np.shares_memory(a, view) and c.shape == () and float(c) == 7.0


def test_host_shape_is_the_shape_tuple_without_a_tensorshape():
    assert host_shape(tf.constant(2.0)) == ()
    assert host_shape(tf.zeros((3, 0, 2))) == (3, 0, 2)
    assert host_shape(tf.Variable(tf.ones((2, 5)))) == (2, 5)  # not an eager tensor: tuple(t.shape)
    assert host_shape(np.ones((4,))) == (4,)


def test_views_after_gives_the_tensors_then_the_current_weights_in_place():
    v, b = tf.Variable(tf.ones((4, 4))), tf.Variable(tf.fill([3], 2.0))
    read = VariableReader([v, b])
    g = [tf.constant([[1.0, 2.0]]), tf.constant(3.0)]
    for k in range(1, 3):
        v.assign(tf.fill((4, 4), float(k)))
        got = read.views_after(g)
        assert [a.tolist() for a in got] == [a.tolist() for a in host_views([*g, *read()])]
        assert np.shares_memory(got[0], np.asarray(g[0])) and got[2].tolist() == v.numpy().tolist()
    sl = tf.IndexedSlices(tf.constant([[5.0, 6.0]]), tf.constant([1]), tf.constant([2, 2]))
    got = read.views_after([sl])  # not all eager tensors: host_views' path, the same arrays
    assert got[0].tolist() == [[5.0, 6.0]] and got[1].tolist() == v.numpy().tolist() and len(got) == 3
    single = VariableReader([b])  # one variable: no batched op, read on its own
    assert [a.tolist() for a in single.views_after([])] == [[2.0, 2.0, 2.0]]


def test_is_float_scalar_reads_the_dtype_and_shape_tf_keeps():
    assert is_float_scalar(tf.constant(1.5)) and is_float_scalar(tf.constant(1.5, tf.float16))
    assert is_float_scalar(tf.constant(2.0, tf.bfloat16)) and is_float_scalar(tf.constant(2.0, tf.float64))
    assert not is_float_scalar(tf.constant(3))  # an int
    assert not is_float_scalar(tf.constant([1.5]))  # shape (1,), not a scalar
    assert not is_float_scalar(tf.Variable(1.5)) and not is_float_scalar(1.5) and not is_float_scalar(None)


def test_view_sums_equals_exact_sums_for_small_large_and_other_dtypes():
    """The dots of small views are mapped in C, large ones cut in pieces, other dtypes and
    under / overflowing float32 summed in float64: every path within the documented 1e-6."""
    rng = np.random.default_rng(2)
    big = rng.normal(size=(130, 130)).astype(np.float32)  # 16,900 values: pieces of DOT_PIECE
    arrays = [rng.normal(size=(7,)).astype(np.float32), big, np.array(3.0, np.float32), np.zeros(0, np.float32)]
    want = [float(np.sum(a.astype(np.float64) ** 2)) for a in arrays]
    np.testing.assert_allclose(sumsq.view_sums(arrays), want, rtol=1e-6, atol=0)
    assert big.size > sumsq.DOT_PIECE
    mixed = [*arrays, np.arange(4.0), np.full(3, 1e30, np.float32)]  # float64; float32 squares overflow
    got = sumsq.view_sums(mixed)
    np.testing.assert_allclose(got[:4], want, rtol=1e-6, atol=0)
    assert got[4] == 14.0 and got[5] == pytest.approx(3 * float(np.float32(1e30)) ** 2, rel=1e-15)


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
def test_history_stores_tf_norm_in_float64_within_the_tolerance(monkeypatch, device_path):
    if device_path:  # what a GPU run takes, forced on CPU
        monkeypatch.setattr("tapeviz.training.intake.on_cpu", lambda tensors: False)
    hist = tv.History(flush_every=4)
    model, seen = _mlp_run(hist, clip=0.5)
    assert all(layout.on_host is not device_path for layout in hist._layouts.values())
    for i, v in enumerate(model.trainable_variables):
        for kind, key in (("grad", "grads"), ("weight", "weights"), ("clipped", "clipped")):
            want = np.float32([s[key][i] for s in seen])
            got, err = hist.norms(v.path, kind), f"{v.path} {kind}"
            if device_path:  # float64 sums: tf.norm in float64 rounded to float32, bit for bit
                np.testing.assert_array_equal(got, want.astype(np.float64), err_msg=err)
            else:  # float32 sdot: within 1e-6 (docs/training.md), plus the float32 rounding of the stored value
                np.testing.assert_allclose(got, want, rtol=1e-6 + 2**-24, atol=0, err_msg=err)
    np.testing.assert_array_equal(hist.losses(), np.float32([s["loss"] for s in seen]))

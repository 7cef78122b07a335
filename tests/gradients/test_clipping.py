"""tapeviz.gradients.clipping against the user's own loop: ``[tf.clip_by_norm(g, c) for g in grads]``.

clip() clips gradients of one shape in one stacked TF call; the numbers must be those of
one call per gradient, bit for bit, whatever the shapes, dtypes and values."""

import numpy as np
import pytest
import tensorflow as tf

from tapeviz.gradients import clipping

SHAPES = [(), (1,), (4,), (4, 4), (3, 3, 8, 16), (128, 128), (3, 3, 3, 32), (100_000,), (7,), (2, 1, 5)]


def _grads(seed: int, dtype=np.float32) -> dict:
    rng = np.random.default_rng(seed)
    grads = {}
    for i, shape in enumerate(SHAPES * 3):  # three gradients of each shape: stacked groups
        scale = 10.0 ** rng.uniform(-4, 4)
        grads[f"v{i}"] = tf.constant((rng.normal(size=shape) * scale).astype(dtype))
    grads["zero"] = tf.zeros((4, 4), dtype)  # norm 0: clip_by_norm's other branch
    grads["zero2"] = tf.zeros((4, 4), dtype)
    grads["nan"] = tf.constant(np.array([1.0, np.nan, 2.0], dtype))
    grads["nan2"] = tf.constant(np.array([np.inf, 1.0, 2.0], dtype))
    grads["none"] = None
    grads["rows"] = tf.IndexedSlices(
        tf.constant(rng.normal(size=(3, 4)).astype(dtype)), tf.constant([0, 2, 0]), tf.constant([5, 4])
    )
    return grads


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, tf.IndexedSlices):
        return (
            isinstance(b, tf.IndexedSlices)
            and np.array_equal(a.values.numpy(), b.values.numpy(), equal_nan=True)
            and np.array_equal(a.indices.numpy(), b.indices.numpy())
        )
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.numpy(), b.numpy(), equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("clip_norm", [1e-3, 0.5, 2.7, 1e6])
def test_clip_by_norm_equals_one_call_per_gradient(dtype, clip_norm):
    grads = _grads(int(clip_norm * 1000) % 97, dtype)
    got = clipping.clip(grads, "by_norm", clip_norm=clip_norm)
    for name, g in grads.items():
        want = None if g is None else tf.clip_by_norm(g, clip_norm)
        assert _same(got[name], want), name


@pytest.mark.parametrize("clip_value", [(-1.0, 1.0), (-1e-3, 0.0), (0.0, 0.0), (-5.0, 1e4)])
def test_clip_by_value_equals_one_call_per_gradient(clip_value):
    grads = {n: g for n, g in _grads(3).items() if not isinstance(g, tf.IndexedSlices)}
    got = clipping.clip(grads, "by_value", clip_value=clip_value)
    for name, g in grads.items():
        want = None if g is None else tf.clip_by_value(g, *clip_value)
        assert _same(got[name], want), name


def test_the_report_shows_tfs_numbers_for_a_model_of_many_variables():
    """The explorer's panel on 300 variables of two shapes: per-variable norms after
    clipping and the global norm are those of the user's loop."""
    rng = np.random.default_rng(0)
    grads = {f"w{i}": tf.constant(rng.normal(size=(4, 4)).astype("float32")) for i in range(150)}
    grads.update({f"b{i}": tf.constant(rng.normal(size=(4,)).astype("float32")) for i in range(150)})
    weights = {n: tf.zeros_like(g) for n, g in grads.items()}
    rep = clipping.report(grads, weights, mode="by_norm", clip_norm=0.5)
    loop = [tf.clip_by_norm(g, 0.5) for g in grads.values()]
    assert rep.global_norm_after == float(tf.linalg.global_norm(loop))
    for name, c in zip(grads, loop, strict=True):
        assert np.array_equal(rep.clipped[name], c.numpy())
        assert rep.norm_after[name] == float(tf.norm(c))

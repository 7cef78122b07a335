"""Sums of squares of one training step's tensors (squared norms), the cheapest exact way
on the device that holds them.

- **CPU.** ``np.asarray`` of an eager CPU tensor is a view of the tensor's own buffer (no
  copy); each value is squared in float64 (exact: a float32 square needs 48 bits) and
  summed pairwise by ``np.add.reduce``, in chunks of 2**16 values so a large tensor's
  temporary stays in the cache (512 KiB). About 1.5-3 µs a tensor of 4k-16k values. (BLAS
  ``ddot`` is faster alone but starts OpenBLAS threads that fight TensorFlow's for the
  cores: a training step with it measured 2-5x slower on this 2-core machine.) A variable is read with one
  ``tf.raw_ops.ReadVariableOp`` (5 µs; ``Variable.value()`` costs 8.5 µs through its
  Python wrappers), which hands back its buffer without a copy.
- **Any other device (GPU).** One ``tf.function`` per step computes every sum on the device
  (XLA-compiled on a GPU, so one fused kernel) into one float64 vector that stays there;
  :class:`tapeviz.training.history.History` fetches the vectors of many steps together (one
  ``tf.concat``, one copy) every ``flush_every`` steps.

Tolerance: the sums are float64 sums of exact squares, so they differ from
``tf.reduce_sum(tf.square(tf.cast(t, tf.float64)))`` (and the norms from ``tf.norm`` of
the tensor cast to float64) only by the order of the additions: a relative difference of
at most ``n * 2**-53`` for ``n`` values, in practice a few units in the last place
(tests/test_history.py checks 1e-13 on tensors up to 2**21 values, and that the float32
values a History stores equal ``tf.norm`` in float64 rounded to float32). They are more
exact than ``tf.norm`` of a float32 tensor, which sums in float32 (~1e-7 relative).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

__all__ = ["on_cpu", "host_sumsq", "read", "device_sums", "CHUNK"]

CHUNK = 1 << 16
_F64 = np.float64
# ufuncs called directly (C, no Python wrapper): BLAS ddot would start OpenBLAS threads that
# fight TensorFlow's for the cores (a training step measured 2-5x slower with it here)
_asarray, _square, _sum = np.asarray, np.square, np.add.reduce


def on_cpu(tensors: Sequence[Any]) -> bool:
    """True when every tensor (or variable) lives on a CPU: NumPy can read it in place."""
    for t in tensors:
        if isinstance(t, tf.IndexedSlices):
            t = t.values
        dev = getattr(t, "backing_device", None) if isinstance(t, tf.Tensor) else getattr(t, "device", None)
        if not isinstance(dev, str) or "CPU" not in dev.upper():
            return False
    return True


def host_sumsq(t: Any) -> float:
    """Sum of squares of a CPU tensor, in float64 (an IndexedSlices: of its values, the
    sum TF's clip functions use, a repeated row counting twice)."""
    if t.__class__ is tf.IndexedSlices:
        t = t.values
    a = _asarray(t).reshape(-1)
    if a.dtype.kind == "c":  # |z|^2 = re^2 + im^2: the float pairs, summed as floats
        a = a.view(a.real.dtype)
    if a.size <= CHUNK:
        return _square_sum(a)
    return sum(_square_sum(a[i : i + CHUNK]) for i in range(0, a.size, CHUNK))


def _square_sum(a: np.ndarray) -> float:
    b = a.astype(_F64)  # a copy in float64: squares exact
    _square(b, out=b)
    return float(_sum(b))  # pairwise summation


def read(w: Any) -> Any:
    """The current value of a variable as an eager tensor, read with one op. A variable
    that is not a plain resource variable (a distributed one) is read its own way."""
    handle = getattr(w, "handle", None)
    if handle is None or isinstance(w, tf.distribute.DistributedValues):
        return tf.convert_to_tensor(w)
    return tf.raw_ops.ReadVariableOp(resource=handle, dtype=w.dtype)


def _sumsq(t):
    if isinstance(t, tf.IndexedSlices):
        t = t.values
    if t.dtype.is_complex:
        re, im = tf.cast(tf.math.real(t), tf.float64), tf.cast(tf.math.imag(t), tf.float64)
        return tf.reduce_sum(re * re) + tf.reduce_sum(im * im)
    t = tf.cast(t, tf.float64)
    return tf.reduce_sum(t * t)


def _sums(loss, tensors):
    parts = [tf.reshape(tf.cast(loss, tf.float64), [-1])] + [tf.reshape(_sumsq(t), [1]) for t in tensors]
    return tf.concat(parts, 0)


_on_device = tf.function(_sums, reduce_retracing=True)
_on_gpu = tf.function(_sums, reduce_retracing=True, jit_compile=True)
_xla_failed = False


def device_sums(loss: Any, tensors: Sequence[Any]) -> tf.Tensor:
    """One float64 vector on the tensors' device: ``[loss]`` (when given) then the sum of
    squares of each tensor, computed by one tf.function call (XLA-fused on a GPU)."""
    global _xla_failed
    loss = tf.zeros([0], tf.float64) if loss is None else loss
    if not _xla_failed and any("GPU" in str(getattr(t, "device", "")).upper() for t in tensors[:1]):
        try:
            return _on_gpu(loss, list(tensors))
        except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError, tf.errors.NotFoundError):
            _xla_failed = True  # no XLA for this device: the plain function computes the same sums
    return _on_device(loss, list(tensors))

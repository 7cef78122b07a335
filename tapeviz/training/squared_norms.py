"""Sums of squares of one training step's tensors (squared norms), the cheapest exact way
on the device that holds them.

- **CPU.** ``np.asarray`` of an eager CPU tensor is a view of the tensor's own buffer (no
  copy). A step's small tensors are cast together into one float64 array (a float32
  square is exact in float64), squared in place and summed per tensor by one
  ``np.add.reduceat`` (:func:`host_sums`): four NumPy calls for the step; a tensor over
  2**16 values is summed alone, pairwise, in chunks that keep its temporary in the cache.
  The step's variables are read with one batched op (:mod:`tapeviz.record.variable_reads`).
  BLAS ``ddot`` is not used: it starts OpenBLAS threads that fight TensorFlow's for the
  cores (a training step measured 2-5x slower with it on this 2-core machine).
- **Any other device (GPU).** One ``tf.function`` per step computes every sum on the device
  (XLA-compiled on a GPU, so one fused kernel) into one float64 vector that stays there;
  :class:`tapeviz.training.history.History` fetches the vectors of many steps together (one
  ``tf.concat``, one copy) every ``flush_every`` steps.

Tolerance: the sums are float64 sums of exact squares, so they differ from
``tf.reduce_sum(tf.square(tf.cast(t, tf.float64)))`` (and the norms from ``tf.norm`` of
the tensor cast to float64) only by the order of the additions: a relative difference of
at most ``n * 2**-53`` for ``n`` values, in practice a few units in the last place
(tests/test_squared_norms.py checks 1e-13 on tensors up to 2**21 values, and that the float32
values a History stores equal ``tf.norm`` in float64 rounded to float32). They are more
exact than ``tf.norm`` of a float32 tensor, which sums in float32 (~1e-7 relative).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import Any

import numpy as np
import tensorflow as tf

__all__ = ["on_cpu", "host_sumsq", "host_sums", "device_sums", "CHUNK", "BATCH"]

CHUNK = 1 << 16
BATCH = 1 << 18  # values cast together in host_sums (2 MiB of float64)
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


def host_sums(tensors: Sequence[Any]) -> list[float]:
    """:func:`host_sumsq` of each CPU tensor, small ones batched: their values are cast
    into one float64 array (at most ``BATCH`` values), squared in place and summed per
    tensor by one ``np.add.reduceat``. Four NumPy calls for a whole step of a small model
    instead of four per tensor; tensors larger than ``CHUNK`` go alone, in chunks."""
    arrays = []
    for t in tensors:
        if t.__class__ is tf.IndexedSlices:
            t = t.values
        a = _asarray(t).reshape(-1)
        arrays.append(a.view(a.real.dtype) if a.dtype.kind == "c" else a)
    out = [0.0] * len(arrays)
    group: list[int] = []
    size = 0
    for i, a in enumerate(arrays):
        if a.size > CHUNK:
            out[i] = host_sumsq(a)
            continue
        if size + a.size > BATCH:
            _batch(arrays, group, out)
            group, size = [], 0
        group.append(i)
        size += a.size
    _batch(arrays, group, out)
    return out


def _batch(arrays, group: list[int], out: list[float]) -> None:
    group = [i for i in group if arrays[i].size]  # an empty tensor's sum stays 0.0
    if not group:
        return
    parts = [arrays[i] for i in group]
    b = np.concatenate(parts, dtype=_F64, casting="unsafe") if len(parts) > 1 else parts[0].astype(_F64)
    _square(b, out=b)
    starts = list(accumulate([p.size for p in parts[:-1]], initial=0))
    for i, v in zip(group, np.add.reduceat(b, starts).tolist(), strict=True):
        out[i] = v


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

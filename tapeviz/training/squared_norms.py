"""Sums of squares of one training step's tensors (squared norms), the cheapest way measured
in a real training loop on the device that holds them.

- **CPU.** An eager CPU tensor's NumPy view shares the tensor's own buffer (no copy;
  :func:`~tapeviz.record.variable_reads.host_views`). A float32 tensor's sum is one BLAS
  ``sdot`` on that view (``np.vdot``, :func:`host_sums`), in pieces of ``DOT_PIECE``
  values: OpenBLAS starts threads above 10,000 values, and they fight TensorFlow's for the
  cores (a step measured 2-5x slower with them on 2 cores). The pieces are added in
  float64. Other dtypes, and a float32 sum that overflowed or underflowed, are cast to
  float64 and summed exactly (:func:`host_sumsq`). The step's variables are read with one
  batched op (:class:`~tapeviz.record.variable_reads.VariableReader`). Timings, right after
  real steps on their fresh gradients: docs/training.md, "What it costs".
- **Any other device (GPU).** One ``tf.function`` per step computes every sum on the device
  (XLA-compiled on a GPU, so one fused kernel) into one float64 vector that stays there;
  :class:`tapeviz.training.history.History` fetches the vectors of many steps together (one
  ``tf.concat``, one copy) every ``flush_every`` steps.

Tolerance: a float32 tensor's norm on CPU is within a relative 1e-6 of ``tf.norm`` of the
tensor cast to float64 (float32 accumulation inside sdot; measured at most 5e-8 on 1 to
4 million values, tested at 1e-6). The float64 sums (GPU path, other dtypes, the overflow /
underflow fallback) differ from ``tf.reduce_sum(tf.square(tf.cast(t, tf.float64)))`` only
by the order of the additions, at most ``n * 2**-53`` relative (tested at 1e-13). A zero
tensor sums to 0; a huge but finite one stays finite (no ``nan`` flag); only an Inf / NaN
value gives a non-finite sum.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from ..record.variable_reads import host_views

__all__ = ["on_cpu", "host_sumsq", "host_sums", "view_sums", "device_sums", "CHUNK", "DOT_PIECE"]

CHUNK = 1 << 16
# OpenBLAS's sdot starts its threads above 10,000 values, and they fight TensorFlow's for
# the cores (a training step measured 2-5x slower with them on this 2-core machine)
DOT_PIECE = 8192
_F64 = np.float64
_F32_DT = np.dtype(np.float32)
_TINY, _INF = 2.0**-100, float("inf")
_asarray, _square, _sum, _vdot = np.asarray, np.square, np.add.reduce, np.vdot
_dtype_of, _size_of = operator.attrgetter("dtype"), operator.attrgetter("size")
_NOT_F32 = float("nan")  # marks a sum left to the exact float64 path


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
    """:func:`host_sumsq` of each CPU tensor, by :func:`view_sums` on the tensors' own
    buffers (:func:`~tapeviz.record.variable_reads.host_views`: no copy)."""
    return view_sums(host_views(tensors))


def view_sums(views: Sequence[np.ndarray]) -> list[float]:
    """:func:`host_sumsq` of each array, the cheapest way measured in a real training
    loop: a float32 array by BLAS ``sdot`` (no copy, no cast), in pieces of at most
    ``DOT_PIECE`` values so that OpenBLAS stays on the calling thread, the pieces added in
    float64. A sum that is not finite or below ``2**-100`` (a float32 square overflowed or
    underflowed) and any other dtype are summed exactly in float64 instead
    (:func:`host_sumsq`): so a huge but finite gradient keeps a finite sum, and only a
    real Inf / NaN value gives a non-finite one.

    Written for speed (a History calls it at every step on a dozen or more arrays, views
    of the step's tensors): ``np.vdot`` reads any contiguous array as flat, one C call a
    piece. When every array is float32 and small (the usual step has a few large kernels
    at most), the dots are mapped over the list in C and checked all at once: their sum is
    finite and their minimum at least ``2**-100``, else each is checked on its own (a NaN
    makes the sum NaN)."""
    if list(map(_dtype_of, views)).count(_F32_DT) == len(views):
        sizes = list(map(_size_of, views))
        if not sizes or max(sizes) <= DOT_PIECE:
            out = list(map(float, map(_vdot, views, views)))
        else:  # a Python call only for the large ones (each call costs 1-3 µs right after a step)
            out = [
                float(_vdot(a, a)) if n <= DOT_PIECE else _pieces_dot(a, n) for a, n in zip(views, sizes, strict=True)
            ]
        if not out or (sum(out) < _INF and min(out) >= _TINY):
            return out
    else:
        out = [_pieces_dot(a, a.size) if a.dtype == _F32_DT else _NOT_F32 for a in views]
    # BLAS sets no NumPy error state, so the dots need no np.errstate (5 µs); the exact sums do
    with np.errstate(over="ignore", invalid="ignore"):
        for i, s in enumerate(out):
            if not _TINY <= s < _INF:  # not float32, or its float32 squares overflowed / underflowed
                a = views[i]
                out[i] = host_sumsq(a) if a.any() else 0.0
    return out


def _pieces_dot(a: np.ndarray, n: int) -> float:
    """Sum of squares of a float32 array by sdot, in pieces of ``DOT_PIECE`` values added in
    float64 (one piece: one dot)."""
    if n <= DOT_PIECE:
        return float(_vdot(a, a))
    a = a.reshape(-1)
    s = 0.0
    for i in range(0, n, DOT_PIECE):
        p = a[i : i + DOT_PIECE]
        s += float(_vdot(p, p))
    return s


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

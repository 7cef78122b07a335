"""Clipping, as TensorFlow does it: clip_by_norm, clip_by_value, clip_by_global_norm, and
the SGD step that would follow (``w - lr * g``).

Every number here is computed by the TF function a user would call, on the gradient TF
computed, so what the explorer shows is what their training step would do. A variable
whose gradient is None stays None, with the reason, where the tutorial's
``[tf.clip_by_norm(g, 1.0) for g in gradients]`` would raise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import tensorflow as tf

MODES = ("none", "by_norm", "by_value", "by_global_norm")

def check_settings(mode: str, clip_norm: float = 1.0, clip_value: tuple[float, float] = (-1.0, 1.0)) -> None:
    """Refuse settings that make no sense, with what to do instead."""
    if mode not in MODES:
        raise ValueError(f"Unknown clip mode {mode!r}; use one of {', '.join(MODES)}.")
    if mode in ("by_norm", "by_global_norm"):
        if not np.isfinite(clip_norm) or clip_norm <= 0:
            raise ValueError(f"clip_norm must be a positive number, got {clip_norm}; a norm limit of 0 or less would erase every gradient.")
    if mode == "by_value":
        lo, hi = clip_value
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"clip_value must be two finite numbers, got {clip_value}.")
        if lo > hi:
            raise ValueError(f"clip_value min {lo} is greater than max {hi}; pass (min, max) with min <= max.")


def clip(grads: Mapping[str, Any], mode: str = "none", clip_norm: float = 1.0,
         clip_value: tuple[float, float] = (-1.0, 1.0)) -> dict[str, Any]:
    """{name: clipped TF value or None} using the TF clip function for `mode`."""
    check_settings(mode, clip_norm, clip_value)
    names = list(grads)
    if mode == "none":
        return dict(grads)
    if mode == "by_norm":
        return {n: None if grads[n] is None else tf.clip_by_norm(grads[n], clip_norm) for n in names}
    if mode == "by_value":
        lo, hi = clip_value
        return {n: None if grads[n] is None else tf.clip_by_value(grads[n], lo, hi) for n in names}
    clipped, _ = tf.clip_by_global_norm([grads[n] for n in names], clip_norm)
    return dict(zip(names, clipped))


@dataclass
class ClipReport:
    """Everything the clipping panel shows, for one setting of the controls."""

    mode: str
    raw: dict[str, np.ndarray | None]
    clipped: dict[str, np.ndarray | None]
    norm_before: dict[str, float | None]
    norm_after: dict[str, float | None]
    global_norm_before: float
    global_norm_after: float
    weights: dict[str, np.ndarray]
    updated: dict[str, np.ndarray | None]  # w - lr * clipped g
    lr: float


def to_numpy(g) -> np.ndarray | None:
    if g is None:
        return None
    return np.asarray(tf.convert_to_tensor(g).numpy())


def report(grads: Mapping[str, Any], weights: Mapping[str, Any], *, mode: str = "none", clip_norm: float = 1.0,
           clip_value: tuple[float, float] = (-1.0, 1.0), lr: float = 0.01) -> ClipReport:
    """Raw vs clipped gradients, their norms and the SGD preview, all from TF.

    The TF functions run in one ``tf.function`` over all variables, so a slider move on
    a model with hundreds of variables costs one graph call, not thousands of eager ops
    (the results are the same as calling them eagerly, bit for bit; a test checks it).
    """
    check_settings(mode, clip_norm, clip_value)
    names = list(grads)
    present = [n for n in names if grads[n] is not None]
    ws = [n for n in present if n in weights]
    out = _batched(
        mode, [grads[n] for n in present], [tf.convert_to_tensor(weights[n]) for n in ws],
        [present.index(n) for n in ws],
        tf.constant(clip_norm, tf.float32), tf.constant(clip_value[0], tf.float32),
        tf.constant(clip_value[1], tf.float32), tf.constant(lr, tf.float32),
    )
    clipped_v, nb, na, gnb, gna, upd = out
    none = {n: None for n in names}
    clipped = {**none, **dict(zip(present, clipped_v))}
    updated = {n: None for n in weights}
    updated.update({n: u.numpy() for n, u in zip(ws, upd)})
    return ClipReport(
        mode=mode,
        raw={n: to_numpy(g) for n, g in grads.items()},
        clipped={n: to_numpy(g) for n, g in clipped.items()},
        norm_before={**none, **{n: float(v) for n, v in zip(present, nb)}},
        norm_after={**none, **{n: float(v) for n, v in zip(present, na)}},
        global_norm_before=float(gnb),
        global_norm_after=float(gna),
        weights={n: np.asarray(tf.convert_to_tensor(w).numpy()) for n, w in weights.items()},
        updated=updated,
        lr=lr,
    )


@tf.function(reduce_retracing=True)
def _batched(mode, grads, weights, weight_of, clip_norm, lo, hi, lr):
    if mode == "by_norm":
        clipped = [tf.clip_by_norm(g, clip_norm) for g in grads]
    elif mode == "by_value":
        clipped = [tf.clip_by_value(g, lo, hi) for g in grads]
    elif mode == "by_global_norm" and grads:
        clipped, _ = tf.clip_by_global_norm(grads, clip_norm)
    else:
        clipped = list(grads)
    # Norms as TF's clip functions see them: of an IndexedSlices' values (a row that
    # appears twice counts twice), which is what decides whether TF clips.
    dense_c = [tf.convert_to_tensor(g) for g in clipped]
    zero = tf.constant(0.0)
    return (
        clipped,
        [tf.norm(_values(g)) for g in grads],
        [tf.norm(_values(g)) for g in clipped],
        tf.linalg.global_norm(list(grads)) if grads else zero,
        tf.linalg.global_norm(list(clipped)) if clipped else zero,
        [w - tf.cast(lr, w.dtype) * tf.cast(dense_c[i], w.dtype) for w, i in zip(weights, weight_of)],
    )


def _values(g):
    return g.values if isinstance(g, tf.IndexedSlices) else g

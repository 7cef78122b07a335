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

NONE_ADVICE = (
    "tf.clip_by_norm(None, ...) raises ValueError; keep only the pairs with a gradient: "
    "[(g, v) for g, v in zip(grads, variables) if g is not None]."
)


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


def _norm(g) -> float | None:
    if g is None:
        return None
    return float(tf.norm(tf.convert_to_tensor(g)).numpy())


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
        return {n: None if grads[n] is None else _clip_value(grads[n], lo, hi) for n in names}
    clipped, _ = tf.clip_by_global_norm([grads[n] for n in names], clip_norm)
    return dict(zip(names, clipped))


def _clip_value(g, lo, hi):
    if isinstance(g, tf.IndexedSlices):  # TF clips the slices' values, keeping them sparse
        return tf.IndexedSlices(tf.clip_by_value(g.values, lo, hi), g.indices, g.dense_shape)
    return tf.clip_by_value(g, lo, hi)


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
    """Raw vs clipped gradients, their norms and the SGD preview, all from TF."""
    clipped = clip(grads, mode, clip_norm, clip_value)
    present = [g for g in grads.values() if g is not None]
    present_c = [g for g in clipped.values() if g is not None]
    gn_before = float(tf.linalg.global_norm(present).numpy()) if present else 0.0
    gn_after = float(tf.linalg.global_norm(present_c).numpy()) if present_c else 0.0
    updated = {}
    for n, w in weights.items():
        g = clipped.get(n)
        updated[n] = None if g is None else (tf.convert_to_tensor(w) - lr * tf.convert_to_tensor(g)).numpy()
    return ClipReport(
        mode=mode,
        raw={n: to_numpy(g) for n, g in grads.items()},
        clipped={n: to_numpy(g) for n, g in clipped.items()},
        norm_before={n: _norm(g) for n, g in grads.items()},
        norm_after={n: _norm(g) for n, g in clipped.items()},
        global_norm_before=gn_before,
        global_norm_after=gn_after,
        weights={n: np.asarray(tf.convert_to_tensor(w).numpy()) for n, w in weights.items()},
        updated=updated,
        lr=lr,
    )

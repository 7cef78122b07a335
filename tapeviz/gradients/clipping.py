"""Clipping, as TensorFlow does it: clip_by_norm, clip_by_value, clip_by_global_norm, and
the SGD step that would follow (``w - lr * g``).

Every number here is computed by the TF function a user would call, on the gradient TF
computed, so what the explorer shows is what their training step would do. A variable
whose gradient is None stays None, with the reason, where the tutorial's
``[tf.clip_by_norm(g, 1.0) for g in gradients]`` would raise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

MODES = ("none", "by_norm", "by_value", "by_global_norm")


def check_settings(mode: str, clip_norm: float = 1.0, clip_value: tuple[float, float] = (-1.0, 1.0)) -> None:
    """Refuse settings that make no sense, with what to do instead."""
    if mode not in MODES:
        raise ValueError(f"Unknown clip mode {mode!r}; use one of {', '.join(MODES)}.")
    if mode in ("by_norm", "by_global_norm"):
        if not np.isfinite(clip_norm) or clip_norm <= 0:
            raise ValueError(
                f"clip_norm must be a positive number, got {clip_norm}; "
                "a norm limit of 0 or less would erase every gradient."
            )
    if mode == "by_value":
        lo, hi = clip_value
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"clip_value must be two finite numbers, got {clip_value}.")
        if lo > hi:
            raise ValueError(f"clip_value min {lo} is greater than max {hi}; pass (min, max) with min <= max.")


def clip(
    grads: Mapping[str, Any], mode: str = "none", clip_norm: float = 1.0, clip_value: tuple[float, float] = (-1.0, 1.0)
) -> dict[str, Any]:
    """{name: clipped TF value or None} using the TF clip function for `mode`."""
    check_settings(mode, clip_norm, clip_value)
    names = list(grads)
    if mode == "none":
        return dict(grads)
    if mode == "by_norm":
        return _each(grads, lambda g, axes: tf.clip_by_norm(g, clip_norm, axes=axes))
    if mode == "by_value":
        lo, hi = clip_value
        return _each(grads, lambda g, axes: tf.clip_by_value(g, lo, hi))
    clipped, _ = tf.clip_by_global_norm([grads[n] for n in names], clip_norm)
    return dict(zip(names, clipped, strict=True))


def _each(grads: Mapping[str, Any], fn) -> dict[str, Any]:
    """``fn`` applied to each gradient on its own, as ``[tf.clip_by_norm(g, c) for g in
    grads]`` does, in one TF call per shape: gradients of one shape and dtype are stacked
    and clipped with ``axes`` = every axis but the stacking one, so each slice is clipped by
    its own norm. A model's 400 variables come in a few shapes, so a slider move runs a
    few clip calls instead of 400 (each ~10 eager ops). The results equal one call per
    gradient bit for bit (tests/test_clipping.py checks that against TF, per shape)."""
    out: dict[str, Any] = {n: None for n in grads}
    groups: dict[tuple, list[str]] = {}
    for n, g in grads.items():
        if g is None:
            continue
        if isinstance(g, tf.IndexedSlices) or g.shape.rank == 0:
            out[n] = fn(g, None)  # sparse rows or a scalar: on its own
        else:
            groups.setdefault((tuple(g.shape), g.dtype), []).append(n)
    for (shape, _), members in groups.items():
        if len(members) == 1:
            out[members[0]] = fn(grads[members[0]], None)
            continue
        stacked = fn(tf.stack([grads[n] for n in members]), list(range(1, len(shape) + 1)))
        out.update(zip(members, tf.unstack(stacked), strict=True))
    return out


class Lazy(Mapping):
    """A read-only {name: value} whose values are computed (by TensorFlow) on first access:
    a panel shows 40 rows of a 400-variable model, and each value left uncomputed is a few
    eager ops saved on every slider move."""

    def __init__(self, names, compute):
        self._names = list(names)
        self._compute = compute
        self._done: dict = {}

    def __getitem__(self, name):
        if name not in self._done:
            if name not in self._names:
                raise KeyError(name)
            self._done[name] = self._compute(name)
        return self._done[name]

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


@dataclass
class Measures:
    """What does not depend on the clip setting: raw gradients, their norms and the weights
    (computed once per gradient set, reused by every report)."""

    grads: dict[str, Any]  # TF values (Tensor, IndexedSlices) or None
    raw: dict[str, np.ndarray | None]
    norm_before: dict[str, float | None]
    global_norm_before: float | None
    weights: dict[str, np.ndarray]
    weight_tensors: dict[str, Any] = field(repr=False, default_factory=dict)


def measure(grads: Mapping[str, Any], weights: Mapping[str, Any]) -> Measures:
    """Raw gradients as numpy, their norms as TF's clip functions see them (of an
    IndexedSlices' values: a row that appears twice counts twice), the global norm."""
    present = [g for g in grads.values() if g is not None]
    tensors = {n: tf.convert_to_tensor(w) for n, w in weights.items()}
    return Measures(
        grads=dict(grads),
        raw={n: to_numpy(g) for n, g in grads.items()},
        norm_before={n: None if g is None else float(tf.norm(_values(g))) for n, g in grads.items()},
        global_norm_before=_global_norm(present),
        weights={n: np.asarray(t.numpy()) for n, t in tensors.items()},
        weight_tensors=tensors,
    )


@dataclass
class ClipReport:
    """Everything the clipping panel shows, for one setting of the controls. Per-variable
    norms after clipping and the SGD preview are computed when first read."""

    mode: str
    raw: dict[str, np.ndarray | None]
    clipped: dict[str, np.ndarray | None]
    norm_before: dict[str, float | None]
    norm_after: Mapping[str, float | None]
    global_norm_before: float | None  # None: TF forms no global norm over mixed dtypes
    global_norm_after: float | None
    weights: dict[str, np.ndarray]
    updated: Mapping[str, np.ndarray | None]  # w - lr * clipped g
    lr: float


def to_numpy(g) -> np.ndarray | None:
    if g is None:
        return None
    return np.asarray(tf.convert_to_tensor(g).numpy())


def report(
    grads: Mapping[str, Any],
    weights: Mapping[str, Any],
    *,
    mode: str = "none",
    clip_norm: float = 1.0,
    clip_value: tuple[float, float] = (-1.0, 1.0),
    lr: float = 0.01,
    measured: Measures | None = None,
) -> ClipReport:
    """Raw vs clipped gradients, their norms and the SGD preview, all from TF.

    The TF functions run eagerly, exactly as a user's training step calls them. (They
    once ran in one ``tf.function``: tracing it for a model with 200 variables took
    seconds per clip mode, far more than the eager ops it saved on a slider move.) Pass
    ``measured`` (from :func:`measure`) to reuse what does not depend on the setting.
    """
    check_settings(mode, clip_norm, clip_value)
    m = measured if measured is not None else measure(grads, weights)
    try:
        clipped_tf = clip(m.grads, mode, clip_norm, clip_value)
    except (TypeError, ValueError, tf.errors.InvalidArgumentError) as e:  # as TF refuses it, say why
        dtypes = sorted({g.dtype.name for g in m.grads.values() if g is not None})
        raise ValueError(f"tf.{'clip_' + mode} refuses these gradients ({', '.join(dtypes)}): {e}") from e
    present = [c for c in clipped_tf.values() if c is not None]

    def norm_after(name):
        c = clipped_tf[name]
        return None if c is None else float(tf.norm(_values(c)))

    def updated(name):
        c, w = clipped_tf.get(name), m.weight_tensors[name]
        if c is None:
            return None
        return (w - tf.cast(lr, w.dtype) * tf.cast(tf.convert_to_tensor(c), w.dtype)).numpy()

    return ClipReport(
        mode=mode,
        raw=m.raw,
        clipped={n: to_numpy(c) for n, c in clipped_tf.items()},
        norm_before=m.norm_before,
        norm_after=Lazy(clipped_tf, norm_after),
        global_norm_before=m.global_norm_before,
        global_norm_after=_global_norm(present),
        weights=m.weights,
        updated=Lazy(m.weight_tensors, updated),
        lr=lr,
    )


def _global_norm(tensors: list) -> float | None:
    """tf.linalg.global_norm of the tensors; None where TF cannot form one (gradients of
    different dtypes, float32 and float64, which tf.linalg.global_norm refuses to mix)."""
    if not tensors:
        return 0.0
    if len({t.dtype for t in tensors}) > 1:
        return None
    return float(tf.linalg.global_norm(tensors))


def _values(g):
    return g.values if isinstance(g, tf.IndexedSlices) else g

"""What ``hist.add`` accepts: its arguments checked and put in one form (lists, an int
step, a scalar loss tensor or number, variables and their names), and per-replica values
summed across replicas. Every refusal names the cause and the fix."""

from __future__ import annotations

import operator
import weakref

import numpy as np
import tensorflow as tf

from ..record.variable_reads import EagerTensor

__all__ = [
    "as_list",
    "grad_shape",
    "weak_or_strong_ref",
    "inner_variable",
    "is_variable",
    "variable_name",
    "as_step",
    "loss_tensor",
    "require_scalar",
    "loss_number",
    "sum_replicas",
    "reduce_per_replica",
]


def as_list(seq):
    """grads / variables / clipped as a list or tuple (a generator is read once, here)."""
    if seq is None or isinstance(seq, (list, tuple)):
        return seq
    if isinstance(seq, dict):
        raise TypeError(
            "hist.add takes grads, variables and clipped as lists (what tape.gradient(loss, variables) "
            "returns and the variables), not dicts."
        )
    if isinstance(seq, (tf.Tensor, tf.Variable, tf.IndexedSlices)) or hasattr(seq, "path"):
        return [seq]  # a single variable and its gradient
    return list(seq)


def grad_shape(t) -> tuple:
    """The dense shape of a gradient (an IndexedSlices' dense_shape)."""
    if isinstance(t, tf.IndexedSlices):
        shape = t.dense_shape
        return tuple(int(d) for d in (shape.numpy() if isinstance(shape, tf.Tensor) else shape))
    return tuple(t.shape)


def weak_or_strong_ref(obj):
    """A weak reference when the object allows one, else a strong one (same call shape)."""
    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: obj


def inner_variable(v):
    """What to read a weight from: the tf.Variable inside a Keras variable, else v."""
    if isinstance(v, tf.Variable):
        return v
    inner = getattr(v, "value", None)
    return inner if isinstance(inner, tf.Variable) else v


def is_variable(v) -> bool:
    return isinstance(v, tf.Variable) or (isinstance(getattr(v, "path", None), str) and hasattr(v, "value"))


def variable_name(v) -> str:
    path = getattr(v, "path", None)
    if isinstance(path, str) and path and not isinstance(v, tf.Variable):
        return path
    name = getattr(v, "name", None) or "Variable"
    return name[:-2] if name.endswith(":0") else name.split(":")[0]


def as_step(step) -> int:
    if step.__class__ is int:
        return step
    if isinstance(step, (tf.Tensor, tf.Variable)) or hasattr(step, "numpy"):
        step = step.numpy()
    if isinstance(step, np.ndarray) and step.shape == ():
        step = step.item()
    if isinstance(step, float) and step.is_integer():
        step = int(step)
    try:
        return operator.index(step)
    except TypeError:
        raise TypeError(f"step must be an integer (the training step or batch number), got {step!r}.") from None


def loss_tensor(loss):
    """The scalar loss tensor to measure with the norms, or None for a host number."""
    if loss.__class__ is EagerTensor and loss.dtype.is_floating:  # the usual loss, without the isinstance walk
        return loss
    if isinstance(loss, (tf.Tensor, tf.Variable)) or hasattr(loss, "numpy"):
        t = loss if isinstance(loss, tf.Tensor) else tf.convert_to_tensor(loss)
        if not t.dtype.is_floating:
            raise TypeError(f"hist.add(loss=...) must be a float, got dtype {t.dtype.name}.")
        return t  # its shape is checked where it is read (require_scalar): t.shape costs µs a step
    return None


def require_scalar(shape: tuple) -> None:
    if shape != ():
        raise ValueError(
            f"hist.add(loss=...) needs the scalar loss, got shape {shape}: pass "
            "tf.reduce_mean of per-example losses (what you differentiate)."
        )


def loss_number(loss) -> float:
    arr = np.asarray(loss)
    if arr.shape != () or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"hist.add(loss=...) needs one number (the scalar loss), got {loss!r}.")
    return float(arr)


def sum_replicas(ctx, loss, grads, clipped):
    """Inside MirroredStrategy.run: sum gradients, clipped gradients and losses over the
    replicas (every replica must call hist.add); only replica 0 records."""

    def reduce(seq):
        if seq is None:
            return None
        seq = list(seq)
        idx = [i for i, t in enumerate(seq) if t is not None]
        summed = ctx.all_reduce(tf.distribute.ReduceOp.SUM, [seq[i] for i in idx]) if idx else []
        out = [None] * len(seq)
        for i, t in zip(idx, summed, strict=True):
            out[i] = t
        return out

    grads = reduce(grads)
    clipped = reduce(clipped)
    if loss is not None:
        loss = ctx.all_reduce(tf.distribute.ReduceOp.SUM, tf.cast(tf.convert_to_tensor(loss), tf.float32))
    rid = tf.get_static_value(ctx.replica_id_in_sync_group)
    return loss, grads, clipped, int(rid if rid is not None else ctx.replica_id_in_sync_group) == 0


def reduce_per_replica(loss, grads, clipped):
    """Per-replica results returned by strategy.run: sum them across replicas."""
    strategy = tf.distribute.get_strategy()

    def red(t):
        if isinstance(t, tf.distribute.DistributedValues):
            return strategy.reduce(tf.distribute.ReduceOp.SUM, t, axis=None)
        return t

    return (
        red(loss),
        [None if g is None else red(g) for g in grads],
        None if clipped is None else [None if c is None else red(c) for c in clipped],
    )

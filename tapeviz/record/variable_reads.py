"""Read many variables with one op: TensorFlow's ``_ReadVariablesOp`` (the batched form of
``ReadVariableOp``), for tv.History, which reads every weight at every training step.

One eager op costs about 4.5 µs of dispatch on this machine whatever its size, so reading
a model's variables one by one costs 4.5 µs each; the batched op read six in 8 µs where
six single reads took 25-27 µs (interleaved medians, bench notes in
tapeviz/training/squared_norms.py). The op has no public wrapper (``tf.raw_ops`` leaves out
names starting with ``_``), so it is run through TF's eager ``execute``: a private API,
hence this module sits in the record stage. Where the op cannot run (variables on several
devices, a distributed variable, a TF build without its kernel) each variable is read with
``tf.raw_ops.ReadVariableOp`` instead: the same values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf
from tensorflow.python.eager import context, execute

__all__ = ["read_variables"]

_batched_ok = True


def read_variables(variables: Sequence[Any]) -> list:
    """The current value of each variable (eager tensors, no copy on CPU), with one op
    when they share a device."""
    global _batched_ok
    handles = [getattr(v, "handle", None) for v in variables]
    plain = all(h is not None for h in handles) and not any(
        isinstance(v, tf.distribute.DistributedValues) for v in variables
    )
    if _batched_ok and plain and len(variables) > 1 and len({v.device for v in variables}) == 1:
        try:
            dtypes = [v.dtype.as_datatype_enum for v in variables]
            return list(
                execute.execute(
                    "_ReadVariablesOp", len(handles), handles, ("N", len(handles), "dtypes", dtypes), context.context()
                )
            )
        except (tf.errors.NotFoundError, tf.errors.InvalidArgumentError, tf.errors.UnimplementedError):
            _batched_ok = False  # no such kernel here: read one by one from now on
    return [_read(v, h) for v, h in zip(variables, handles, strict=True)]


def _read(v, handle):
    if handle is None or isinstance(v, tf.distribute.DistributedValues):
        return tf.convert_to_tensor(v)
    return tf.raw_ops.ReadVariableOp(resource=handle, dtype=v.dtype)

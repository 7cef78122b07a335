"""Read many variables with one op, and see eager CPU tensors as NumPy arrays in place,
for tv.History, which reads every weight and gradient at every training step.

- **One op for the weights.** One eager op costs about 4.5 µs of dispatch on this machine
  whatever its size, so reading a model's variables one by one costs 4.5 µs each; the
  batched ``_ReadVariablesOp`` (the batched form of ``ReadVariableOp``) read six in 8 µs
  where six single reads took 25-27 µs (interleaved medians). The op has no public wrapper
  (``tf.raw_ops`` leaves out names starting with ``_``), so it is run through TF's eager
  ``TFE_Py_Execute``: a private API, hence this module sits in the record stage.
  :class:`VariableReader` works out the op's inputs once per list of variables (handles,
  dtypes, one device), because a History reads the same list at every step and those
  property lookups cost more than the op (~10 µs a step for six variables). Where the op
  cannot run (variables on several devices, a distributed variable, a TF build without its
  kernel) each variable is read with ``tf.raw_ops.ReadVariableOp`` instead: the same values.
- **No copy.** ``EagerTensor._numpy()`` is the array ``np.asarray`` ends up with (a view of
  a CPU tensor's own buffer), without the ``__array__`` protocol around it: 1.5 µs a tensor
  instead of 3 µs, measured right after real training steps. When every tensor is an
  EagerTensor, its C method ``_numpy_internal`` is mapped over the list, one C call a
  tensor without a Python frame (:func:`host_views`).
- **A shape without a TensorShape.** ``t.shape`` builds a ``TensorShape`` (~1 µs);
  :func:`host_shape` gives the tuple TF keeps, so a History can check that a loss is a
  scalar without reading it (the read is left to the flush, where it is warm: reading a
  fresh loss right after a step measured 8 µs, the check and a later read 1.7 µs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.python import pywrap_tfe
from tensorflow.python.eager import context, core
from tensorflow.python.framework import ops

__all__ = ["read_variables", "VariableReader", "host_views", "host_shape", "is_float_scalar", "EagerTensor"]

_batched_ok = True
_asarray = np.asarray
_execute = pywrap_tfe.TFE_Py_Execute
# the class of eager tensors: its module is private, and type(tf.constant(0)) at import would start TF
EagerTensor = ops.EagerTensor
_numpy_internal = EagerTensor._numpy_internal


class VariableReader:
    """Reads a fixed list of variables, with one op when they share a device. Calling it
    gives each variable's current value (eager tensors, no copy on CPU)."""

    def __init__(self, variables: Sequence[Any]):
        self.variables = list(variables)
        handles = [getattr(v, "handle", None) for v in self.variables]
        plain = all(h is not None for h in handles) and not any(
            isinstance(v, tf.distribute.DistributedValues) for v in self.variables
        )
        self._handles = handles
        self._batched = plain and len(handles) > 1 and len({v.device for v in self.variables}) == 1
        self._attrs = ("N", len(handles), "dtypes", [v.dtype.as_datatype_enum for v in self.variables])
        self._n = len(handles)

    def __call__(self) -> list:
        """The variables' current values: one ``_ReadVariablesOp`` run straight through TF's
        eager ``TFE_Py_Execute`` when they share a device (no ``execute.execute`` Python
        around it: ~4 µs of a 50 µs read right after a training step, where every code path
        is cold), else one ``ReadVariableOp`` each; TF's own exception on error."""
        global _batched_ok
        if self._batched and _batched_ok:
            try:  # no device asked: a resource op runs where its resources live
                return list(
                    _execute(context.context()._handle, None, "_ReadVariablesOp", self._handles, self._attrs, self._n)
                )
            except core._NotOkStatusException as e:
                error = core._status_to_exception(e)
            if not isinstance(
                error, (tf.errors.NotFoundError, tf.errors.InvalidArgumentError, tf.errors.UnimplementedError)
            ):
                raise error from None
            _batched_ok = False  # no such kernel here: read one by one from now on
        return [_read(v, h) for v, h in zip(self.variables, self._handles, strict=True)]

    def views_after(self, tensors: Sequence[Any]) -> list[np.ndarray]:
        """NumPy views of ``tensors`` followed by views of the variables' current values,
        for a History that sums a step's gradients and weights together.

        The same arrays as ``host_views(tensors + self())``, in one Python call for the
        usual step (eager CPU tensors, variables on one device): right after a training
        step each Python call costs 1-3 µs, as many as the whole read of small tensors."""
        if self._batched and _batched_ok and list(map(type, tensors)).count(EagerTensor) == len(tensors):
            try:
                views = list(map(_numpy_internal, tensors))
                values = _execute(
                    context.context()._handle, None, "_ReadVariablesOp", self._handles, self._attrs, self._n
                )
            except core._NotOkStatusException:
                pass  # TF's own exception comes from the reads below
            else:
                views += map(_numpy_internal, values)
                return views
        return host_views([*tensors, *self()])


def read_variables(variables: Sequence[Any]) -> list:
    """The current value of each variable (eager tensors, no copy on CPU), with one op
    when they share a device."""
    return VariableReader(variables)()


def _read(v, handle):
    if handle is None or isinstance(v, tf.distribute.DistributedValues):
        return tf.convert_to_tensor(v)
    return tf.raw_ops.ReadVariableOp(resource=handle, dtype=v.dtype)


def host_views(tensors: Sequence[Any]) -> list[np.ndarray]:
    """Each CPU tensor as a NumPy array, a view of its buffer where TF allows it (an
    IndexedSlices: its values; anything else: ``np.asarray``)."""
    if list(map(type, tensors)).count(EagerTensor) == len(tensors):
        try:
            return list(map(_numpy_internal, tensors))
        except core._NotOkStatusException:
            pass  # TF's raw status (e.g. a tensor on a lost device): read one by one, for TF's own exception
    out = []
    for t in tensors:
        if t.__class__ is tf.IndexedSlices:
            t = t.values
        numpy = getattr(t, "_numpy", None)
        out.append(numpy() if numpy is not None else _asarray(t))
    return out


def host_shape(t: Any) -> tuple:
    """The shape of a tensor as a tuple (None for an unknown dimension); of an eager
    tensor the tuple TF keeps, without building a ``TensorShape``."""
    if t.__class__ is EagerTensor:
        return t._shape_tuple()
    return tuple(t.shape)


_FLOAT_KINDS: dict[int, bool] = {}  # dtype enum -> is_floating, filled as dtypes are met


def is_float_scalar(t: Any) -> bool:
    """True for an eager tensor holding one floating-point number (a loss, as History
    records it); read from the enum and shape tuple TF keeps, so the check costs one call
    (``t.dtype.is_floating`` and ``t.shape`` build Python objects: ~3 µs right after a step)."""
    if t.__class__ is not EagerTensor or t._shape_tuple() != ():
        return False
    enum = t._datatype_enum()
    floating = _FLOAT_KINDS.get(enum)
    if floating is None:
        floating = _FLOAT_KINDS[enum] = tf.dtypes.as_dtype(enum).is_floating
    return floating

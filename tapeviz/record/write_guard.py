"""WriteGuard: every variable a call may write, put back afterwards (tv.record_step).

Reads TF's resource variables through their private class (to find them among live
objects) and installs an op callback for the call's duration: record stage only."""

from __future__ import annotations

import gc
from threading import get_ident as _get_ident
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context as _context
from tensorflow.python.framework import op_callbacks as _op_callbacks
from tensorflow.python.framework import ops as _ops
from tensorflow.python.ops import resource_variable_ops as _rvo

from .replay import _replay_worker

__all__ = ["WriteGuard"]

#: Ops that take a variable's handle and only read it (every other op given a handle may write it).
_READ_ONLY_OPS = frozenset(
    {"ReadVariableOp", "VarIsInitializedOp", "ResourceGather", "ResourceGatherNd", "VariableShape", "DestroyResourceOp"}
)


def _live_variables() -> list:
    """Every eager tf.Variable alive now (a scan of the garbage collector's objects).
    Checked by type: isinstance against TF's abstract base class costs ~1 us an object,
    and a process with TF and Keras holds ~400,000 objects of ~10,000 types."""
    objects = gc.get_objects()
    base = _rvo.BaseResourceVariable
    variable_types = {t for t in set(map(type, objects)) if issubclass(t, base)}
    out = []
    for obj in objects:
        if type(obj) in variable_types:
            try:
                if type(obj.handle) is _ops.EagerTensor:
                    out.append(obj)
            except Exception:  # noqa: BLE001 - a variable being destroyed, or not yet built
                continue
    return out


def _copies(variables: list) -> list:
    return [np.array(v.read_value(), copy=True) for v in variables]


class WriteGuard:
    """Keep the value of every variable before a call, note which ones the call handed
    to an op that may write them, and put those back: what lets tv.record_step run a
    training step and leave the run unchanged.

    Writes are ops, eager (an optimizer's AssignSubVariableOp) or inside a tf.function
    call op that takes the variable's handle (Keras optimizers and metrics compile
    their updates): an op callback on this thread sees every handle given to an op.
    Values are read before the call on the replay worker thread, so no tape, no
    recording and no op callback of the step sees those reads. A variable the call
    creates (an optimizer's slots, built on its first apply) goes back to the value it
    was initialised with. The op-seed sequence of ``tf.random.set_seed`` is put back
    too; the internal state of a stateful random kernel without a seed is something TF
    does not expose.
    """

    def __init__(self) -> None:
        self._thread = _get_ident()
        self.before: dict[int, Any] = {}
        self.values: dict[int, np.ndarray] = {}
        self.touched: set[int] = set()
        self.made: set[int] = set()
        self.initial: dict[int, Any] = {}  # handle id -> the value a variable made by the call started with
        self._rng_state = None
        self._hook = None

    def __enter__(self) -> WriteGuard:
        rng = getattr(_context.context(), "_rng", None)
        self._rng_state = rng.getstate() if rng is not None else None
        variables = _live_variables()
        self.before = {v.handle._id: v for v in variables}
        values = _replay_worker().submit(_copies, variables).result()
        self.values = {v.handle._id: x for v, x in zip(variables, values, strict=True)}
        self._hook = self._make_callback()
        _op_callbacks.add_op_callback(self._hook)
        return self

    def _make_callback(self):
        thread, touched, made, initial, resource = self._thread, self.touched, self.made, self.initial, tf.resource

        def callback(op_type, inputs, attrs, outputs, op_name=None, graph=None):
            if graph is not None or _get_ident() != thread:
                return None
            op_type = op_type.decode() if type(op_type) is bytes else op_type
            if op_type == "VarHandleOp":
                made.update(o._id for o in outputs if o is not None)
                return None
            for k, t in enumerate(inputs or ()):
                if type(t) is not _ops.EagerTensor or t.dtype != resource:
                    continue
                if op_type == "AssignVariableOp" and k == 0 and t._id in made and t._id not in initial:
                    initial[t._id] = inputs[1]  # the initial value of a variable the call made
                elif op_type not in _READ_ONLY_OPS:
                    touched.add(t._id)
            return None

        return callback

    def __exit__(self, *exc) -> None:
        if self._hook is not None:
            try:
                _op_callbacks.remove_op_callback(self._hook)
            except (KeyError, ValueError):
                pass
            self._hook = None

    def restore(self) -> list:
        """Put back every variable the call may have written (after __exit__); returns them."""
        out = []
        for hid in sorted(self.touched):
            var = self.before.get(hid)
            if var is not None:
                var.assign(self.values[hid])
                out.append(var)
        if self.initial:
            for var in _live_variables():
                value = self.initial.get(var.handle._id)
                if value is not None:
                    var.assign(value)
                    out.append(var)
        rng = getattr(_context.context(), "_rng", None)
        if rng is not None and self._rng_state is not None:
            rng.setstate(self._rng_state)
        return out

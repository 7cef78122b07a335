"""Records: what a recording saw, as plain data (tensors named by integer ids).

The hook logs a plain tuple per op while the block runs (positions R_*); after the
block Capture turns them into OpRecords. Nothing here hooks anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import tensorflow as tf
from tensorflow.python.framework import ops as _ops


@dataclass(slots=True)
class OpRecord:
    """One executed op as plain data: tensors are named by their integer ids."""

    index: int
    op_type: str
    inputs: tuple  # tensor ids
    attrs: tuple  # (name, value, name, value, ...) as TF passed them
    outputs: tuple  # tensor ids
    scope: str  # the TF name scope the op ran in, e.g. "sequential/dense" (no trailing /)
    tape_recording: bool  # the tape was recording (not paused, not globally stopped)
    generation: int  # which internal tape object was live (reset() starts a new one)
    recorded: bool = False  # filled in by Capture.settle(): did *this* tape record the op
    inputs_on_tape: tuple = ()  # per input: does the final tape know it (TF keeps its gradient)
    # True when the op reached the tape through record.record_operation (a tf.function
    # call, tf.custom_gradient): TF's tape calls a Python backward function kept by the
    # capture, not the op's registered gradient.
    custom: bool = False
    # For ops outside any name scope: the public TF function the user called that ran
    # this op ("tf.clip_by_norm") and which call of it (ops of one call share it).
    api: str | None = None
    api_call: int = 0
    # The innermost derivative group (an inner tape.gradient / jacobian call, see
    # derivatives.py) that ran this op: an index into Capture.derivatives, or None.
    derivative: int | None = None
    # The innermost call of a function of the user's that ran this op (see user_calls.py):
    # an index into Capture.functions, or None (run by the block's own code).
    function: int | None = None
    # The line of the user's code that ran this op: the deepest frame of the user's own
    # code on the stack when it ran (a Keras layer's ops: the line that called the layer).
    filename: str = ""
    line: int = 0


@dataclass(frozen=True)
class VariableRecord:
    """A tf.Variable the tape saw, named the way the user knows it."""

    handle: int  # id of its resource handle tensor
    name: str  # the Python name bound to it, else its Keras path, else its TF name
    path: str | None  # the Keras variable path, when a Keras variable wraps it
    trainable: bool
    variable: Any = field(repr=False, compare=False, default=None)  # the tf.Variable itself


@dataclass(frozen=True)
class TensorFacts:
    """dtype name and shape of a tensor (public facts, read once)."""

    dtype: str
    shape: tuple


# What the callback stores per op (a plain tuple: building OpRecords waits until after
# the block). Positions:
R_TYPE, R_IN, R_ATTRS, R_OUT, R_SCOPE, R_REC, R_GEN, R_BACKWARD, R_API, R_FN, R_SITE = range(11)


class GraphModeError(RuntimeError):
    """The tape ran while TensorFlow was building a graph, not executing ops."""


GRAPH_MODE_MESSAGE = (
    "This tape recorded inside a tf.function (or a Keras train_step compiled by model.fit), where "
    "TensorFlow builds a graph instead of running ops one by one; tapeviz sees eager execution only. "
    "Record one step eagerly and leave your run unchanged: steps = tv.record_step(train_step, x, y) "
    "(a @tf.function, or tv.record_step(model, x, y) for a Keras model's train_step; every variable "
    "the step writes is put back), then tv.view(steps[0], steps[0].target). "
    "Or, for a whole debugging run: model.compile(..., run_eagerly=True), "
    "tf.config.run_functions_eagerly(True), or your step function without @tf.function."
)


def key_of(obj) -> int | None:
    """The integer a capture names `obj` by: a tf.Variable's (or a Keras variable's)
    resource handle id, an eager tensor's id; None for anything else."""
    if isinstance(obj, _ops.EagerTensor):
        return obj._id
    handle = getattr(obj, "handle", None)
    if isinstance(handle, _ops.EagerTensor):
        return handle._id
    return None


def is_symbolic(obj) -> bool:
    """A graph tensor (made while tracing a tf.function), which has no value to show."""
    return isinstance(obj, tf.Tensor) and not isinstance(obj, _ops.EagerTensor) and not isinstance(obj, tf.Variable)


_TRAINABLE: dict[Any, bool] = {}


def is_trainable(dtype) -> bool:
    """Same dtype rule as TF's tape: floats, complex, resources and variants."""
    known = _TRAINABLE.get(dtype)
    if known is None:
        d = tf.as_dtype(dtype)
        known = _TRAINABLE[dtype] = bool(d.is_floating or d.is_complex or d in (tf.resource, tf.variant))
    return known


def user_scope(scope: str, layer_scopes, loss_scopes) -> bool:
    """Whether a name scope and every scope holding it were opened by neither a Keras layer
    of Keras's own nor a Keras loss: ``m`` of a subclassed model ``m`` (its ``call`` is the
    user's code), not ``m/dense`` nor ``binary_crossentropy``."""
    parts = scope.split("/")
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        if prefix in layer_scopes or prefix in loss_scopes:
            return False
    return True

"""The replay: TensorFlow's own backprop run again over the recorded ops.

:func:`replay_backward` re-records the captured ops on a private tape and lets
TensorFlow's backprop run over them: that is how the flow gets totals that *are*
``tape.gradient`` and per-edge contributions that are exactly what TF's registered
gradient functions returned.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import tensorflow as tf
from tensorflow.python import pywrap_tfe
from tensorflow.python.eager import backprop as _backprop
from tensorflow.python.eager import record as _record
from tensorflow.python.eager import tape as _tape_lib
from tensorflow.python.framework import ops as _ops
from tensorflow.python.ops import script_ops as _script_ops

from .hooks import callbacks_on_this_thread
from .hookstate import TF_DIRS as _TF_DIRS
from .records import OpRecord


class ReplaySource(Protocol):
    """What the replay reads of a capture.ReplaySource."""

    @property
    def ops(self) -> list[OpRecord]: ...

    def tensor(self, tid: int) -> Any: ...

    def custom_backward(self, index: int) -> Callable | None: ...

    def side_state(self, index: int) -> Any: ...


@dataclass
class BackwardCall:
    """One call of an op's gradient function during the replayed backprop."""

    op: OpRecord
    out_grads: list  # TF values arriving at the op's outputs
    in_grads: list  # TF values (or None) it returned per input
    missing: LookupError | None = None  # TF's own error: the op has no registered gradient


def replay_backward(
    cap: ReplaySource, watched: list, targets: list, sources: list, output_gradients: Sequence[Any] | None
) -> tuple[list, list[BackwardCall]]:
    """Run TF's own backprop over the recorded ops; return (source grads, calls in order).

    The ops are re-recorded on a private tape with a backward function that calls the
    op's registered gradient function (the same function and attrs TF's tape uses) and
    logs what it returned. TF's C++ tape then orders the calls, fills zeros and
    aggregates fan-out exactly as ``tape.gradient`` does. When the calling thread has an
    active tape or op callback, it runs on a worker thread instead, so it never touches
    the user's tapes or callbacks (both are per thread).
    """
    args = (cap, watched, targets, sources, output_gradients)
    if pywrap_tfe.TFE_Py_TapeSetIsEmpty() and not callbacks_on_this_thread():
        return _replay(*args)  # nothing here could see the replay: run it inline
    return _replay_worker().submit(_replay, *args).result()


_worker = None
_worker_lock = threading.Lock()


def _replay_worker():
    """One long-lived thread: TF's per-thread eager state is set up once, not per flow."""
    global _worker
    with _worker_lock:
        if _worker is None:
            from concurrent.futures import ThreadPoolExecutor

            _worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tapeviz-replay")
        return _worker


def _replay(cap: ReplaySource, watched, targets, sources, output_gradients):
    calls: list[BackwardCall] = []
    tensor = cap.tensor
    tape = _tape_lib.push_new_tape(persistent=True, watch_accessed_variables=False)
    try:
        for t in watched:
            _tape_lib.watch(tape, t)
        for op in cap.ops:
            if op.recorded:
                _record.record_operation(
                    op.op_type,
                    [tensor(o) for o in op.outputs],
                    [tensor(i) for i in op.inputs],
                    _backward_fn(cap, op, calls),
                )
    finally:
        _tape_lib.pop_tape(tape)
    grads = pywrap_tfe.TFE_Py_TapeGradient(
        tape._tape, list(targets), list(sources), output_gradients, list(sources), "none"
    )
    return grads, calls


def _backward_fn(cap: ReplaySource, op: OpRecord, calls: list) -> Callable:
    # TF skips the inputs that were not on the tape when the op ran.
    skip = tuple(i for i, on in enumerate(op.inputs_on_tape) if not on)
    custom = cap.custom_backward(op.index)
    side = cap.side_state(op.index)
    tensor = cap.tensor

    if custom is not None and _runs_across_replicas(custom):
        raise ReplayError(
            f"tapeviz cannot replay the gradient of tf.distribute's all_reduce ({op.op_type}, op {op.index}): it is "
            "itself an all-reduce that every replica must run at the same moment, so replaying it on one replica "
            "would wait forever or fail. Record the replica's computation without ReplicaContext.all_reduce inside "
            "the tape (reduce the gradients afterwards, as optimizer.apply_gradients does), or run the step without "
            "the strategy to look at it."
        )

    def backward(*out_grads):
        missing = None
        if custom is not None:  # the Python function TF's tape was given
            grads = custom(*out_grads)
        elif (missing := _unregistered(op.op_type)) is not None:
            # tape.gradient raises here; the replay notes TF's error and goes on with
            # nothing for the op's inputs, so the rest of the pass can still be shown.
            grads = [None] * len(op.inputs)
        else:
            with _restored(side, op):
                grads = _backprop._gradient_function(
                    op.op_type,
                    op.attrs,
                    len(op.inputs),
                    [tensor(i) for i in op.inputs],
                    [tensor(o) for o in op.outputs],
                    list(out_grads),
                    skip,
                    op.scope,
                )
        grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
        calls.append(BackwardCall(op, list(out_grads), grads, missing))
        return grads

    return backward


def _unregistered(op_type: str) -> LookupError | None:
    """TF's own LookupError when no gradient is registered for ``op_type`` (what
    tape.gradient raises: "gradient registry has no entry for: AdjustContrastv2"), else
    None. An op registered as not differentiable (``tf.no_gradient``) has an entry: None."""
    try:
        _ops._gradient_registry.lookup(op_type)
    except LookupError as e:
        return e
    return None


class ReplayError(RuntimeError):
    """tapeviz cannot replay a recorded op's gradient without disturbing the user's run."""


def _runs_across_replicas(fn, depth: int = 3) -> bool:
    """Whether a recorded backward function is (or wraps) tf.distribute's all_reduce
    gradient, which needs every replica at once (custom_gradient wraps the function
    distribute_lib defines; its code lives in tensorflow/python/distribute)."""
    code = getattr(fn, "__code__", None)
    if code is not None and "distribute" + os.sep in code.co_filename and code.co_filename.startswith(_TF_DIRS):
        return True
    if depth == 0:
        return False
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            inner = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if callable(inner) and _runs_across_replicas(inner, depth - 1):
            return True
    return False


class _restored:
    """Put a py_function's tape_cache entry in place for one gradient call, then leave
    the cache exactly as it was (the user's own tape.gradient still finds its entry, or
    finds it gone if it already used it)."""

    def __init__(self, side, op: OpRecord):
        self.side = side
        self.op = op

    def __enter__(self):
        if self.side is None:
            return
        key, entry = self.side
        if entry is None:
            raise ReplayError(
                f"tapeviz cannot replay the gradient of tf.py_function ({self.op.op_type}, op {self.op.index}): its "
                "Python body was recorded on a tape TensorFlow uses up after one gradient, and replaying it would "
                "break your own tape.gradient. Run the py_function on the thread that records the tape."
            )
        self.had = key in _script_ops.tape_cache
        self.before = _script_ops.tape_cache.get(key)
        _script_ops.tape_cache[key] = entry

    def __exit__(self, *exc):
        if self.side is None:
            return False
        key, _ = self.side
        if self.had:
            _script_ops.tape_cache[key] = self.before
        else:
            _script_ops.tape_cache.pop(key, None)
        return False


def local_backward(cap: ReplaySource, op: OpRecord) -> list | None:
    """The op's local derivatives as TensorFlow computes them: its registered gradient
    function called with ones arriving at its one output (d out / d input, summed over
    the output for a non-scalar one). None for an op TF's tape calls a Python backward
    function for (a tf.function call, tf.custom_gradient: calling it again could consume
    state), for an op with several outputs and for an op with no registered gradient.
    Runs where the replay runs, so the user's tapes and op callbacks never see it."""
    if (
        len(op.outputs) != 1
        or cap.custom_backward(op.index) is not None
        or cap.side_state(op.index) is not None
        or _unregistered(op.op_type) is not None
    ):
        return None
    if pywrap_tfe.TFE_Py_TapeSetIsEmpty() and not callbacks_on_this_thread():
        return _local_backward(cap, op)
    return _replay_worker().submit(_local_backward, cap, op).result()


def _local_backward(cap: ReplaySource, op: OpRecord) -> list:
    tensor = cap.tensor
    out = tensor(op.outputs[0])
    skip = tuple(i for i, on in enumerate(op.inputs_on_tape) if not on)
    grads = _backprop._gradient_function(
        op.op_type,
        op.attrs,
        len(op.inputs),
        [tensor(i) for i in op.inputs],
        [out],
        [tf.ones_like(out)],
        skip,
        op.scope,
    )
    return list(grads) if isinstance(grads, (list, tuple)) else [grads]

"""Capture: the one module that touches TensorFlow's private APIs.

While a tape records, an op callback logs every eagerly executed op together with the
tape's recording state. Two narrow patches make otherwise invisible things visible:

* TF's C++ fast path reads a ``tf.Variable`` passed straight to an op
  (``tf.stop_gradient(v)``, the second ``v`` of ``v * v``) without calling any Python
  callback. While *this thread* records, variable arguments are routed through
  ``v.value()``, which performs the very same ``ReadVariableOp`` in Python where we see it.
* ``numpy()`` / ``float()`` on a tensor mark it as exported, so a value that leaves
  TensorFlow and comes back as a constant can be named as the reason a gradient stopped.

Both patches act only on threads that are recording; every other thread goes straight
to TensorFlow's originals. They are installed with the first active recorder and
removed with the last one, on every exit path.

The module also owns :func:`replay_backward`, which re-records the captured ops on a
private tape and lets TensorFlow's own backprop run over them: that is how the flow
gets totals that *are* ``tape.gradient`` and per-edge contributions that are exactly
what TF's registered gradient functions returned.
"""

from __future__ import annotations

import sys
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf
from tensorflow.python import pywrap_tfe
from tensorflow.python.eager import backprop as _backprop
from tensorflow.python.eager import context as _context
from tensorflow.python.eager import record as _record
from tensorflow.python.eager import tape as _tape_lib
from tensorflow.python.framework import op_callbacks as _op_callbacks
from tensorflow.python.framework import ops as _ops
from tensorflow.python.ops import resource_variable_ops as _rvo

_REQUIRED = (
    (pywrap_tfe, "TFE_Py_FastPathExecute"),
    (pywrap_tfe, "TFE_Py_TapeSetIsStopped"),
    (pywrap_tfe, "TFE_Py_TapeGradient"),
    (_op_callbacks, "add_op_callback"),
    (_op_callbacks, "remove_op_callback"),
    (_record, "record_operation"),
    (_tape_lib, "push_new_tape"),
    (_tape_lib, "pop_tape"),
    (_tape_lib, "watch"),
    (_backprop, "_gradient_function"),
    (_rvo.BaseResourceVariable, "_read_variable_op"),
    (_ops._EagerTensorBase, "numpy"),
)
_missing = [f"{getattr(m, '__name__', m)}.{a}" for m, a in _REQUIRED if not hasattr(m, a)]
if _missing:  # pragma: no cover - depends on the installed TF
    raise ImportError(
        f"tapeviz cannot hook into TensorFlow {tf.__version__}: missing {', '.join(_missing)}. "
        "Install a supported version: pip install 'tensorflow-cpu>=2.16,<2.22'."
    )

_local = threading.local()  # .recorders: list of active Recorder on this thread


def _active() -> list["Recorder"]:
    recs = getattr(_local, "recorders", None)
    if recs is None:
        recs = _local.recorders = []
    return recs


# --------------------------------------------------------------------------- patches


class _Patches:
    """Reference-counted global patches; only recording threads see any effect."""

    lock = threading.Lock()
    users = 0
    originals: dict[str, Any] = {}

    @classmethod
    def acquire(cls) -> None:
        with cls.lock:
            if cls.users == 0:
                cls.originals = {
                    "fast": pywrap_tfe.TFE_Py_FastPathExecute,
                    "read": _rvo.BaseResourceVariable._read_variable_op,
                    "numpy": _ops._EagerTensorBase.numpy,
                    "float": _ops._EagerTensorBase.__float__,
                    "array": _ops._EagerTensorBase.__array__,
                }
                pywrap_tfe.TFE_Py_FastPathExecute = _fast_path_execute
                _rvo.BaseResourceVariable._read_variable_op = _read_variable_op
                _ops._EagerTensorBase.numpy = _numpy
                _ops._EagerTensorBase.__float__ = _float
                _ops._EagerTensorBase.__array__ = _array
            cls.users += 1

    @classmethod
    def release(cls) -> None:
        with cls.lock:
            cls.users -= 1
            if cls.users == 0:
                o = cls.originals
                pywrap_tfe.TFE_Py_FastPathExecute = o["fast"]
                _rvo.BaseResourceVariable._read_variable_op = o["read"]
                _ops._EagerTensorBase.numpy = o["numpy"]
                _ops._EagerTensorBase.__float__ = o["float"]
                _ops._EagerTensorBase.__array__ = o["array"]
                # Keep cls.originals: another thread may have looked up a wrapper just
                # before this release and still calls through it (it must reach TF).

    @classmethod
    def installed(cls) -> bool:
        return cls.users > 0


def _fast_path_execute(*args):
    recs = getattr(_local, "recorders", None)
    if recs:
        args = tuple(a.value() if isinstance(a, _rvo.BaseResourceVariable) else a for a in args)
    return _Patches.originals["fast"](*args)


def _read_variable_op(self, *args, **kwargs):
    recs = getattr(_local, "recorders", None)
    if recs:
        for r in recs:
            r._variables[self.handle._id] = self
    return _Patches.originals["read"](self, *args, **kwargs)


def _note_export(t) -> None:
    recs = getattr(_local, "recorders", None)
    if recs:
        for r in recs:
            r._exported[t._id] = t


def _numpy(self):
    _note_export(self)
    return _Patches.originals["numpy"](self)


def _float(self):
    _note_export(self)
    return _Patches.originals["float"](self)


def _array(self, *args, **kwargs):
    _note_export(self)
    return _Patches.originals["array"](self, *args, **kwargs)


# --------------------------------------------------------------------------- records


@dataclass
class OpRecord:
    """One executed op, as the callback saw it."""

    index: int
    op_type: str
    inputs: tuple
    attrs: tuple
    outputs: tuple
    scope: str
    tape_recording: bool  # the tape was recording (not paused, not globally stopped)
    generation: int  # which internal tape object was live (reset() starts a new one)
    recorded: bool = False  # filled in by Recorder.stop(): did *this* tape record the op
    inputs_on_tape: tuple = ()  # per input: was it on this tape when the op ran


@dataclass
class Capture:
    """Everything one recording saw; graph.py turns it into a TapeGraph."""

    ops: list[OpRecord]
    variables: dict[int, Any]  # resource handle id -> tf.Variable
    watched_variables: tuple  # the variables the tape watched when the block ended
    watched: dict[int, Any]  # tensor id -> tensors passed to tape.watch
    exported: dict[int, Any]  # tensor id -> tensors whose value left TF
    start_uid: int
    names: dict[int, str]  # id(python object) -> name in the user's frame
    persistent: bool
    thread_id: int
    tape_ref: Any = None
    final_generation: int = -1
    reset_count: int = 0
    watched_variable_ids: set = field(default_factory=set)
    settled: bool = False

    def settle(self) -> "Capture":
        """Decide which ops this tape recorded (TF's ShouldRecord rule, replayed).

        An op is on the tape when the tape was live and recording and one of its inputs
        was on the tape: a watched variable's handle, a watched tensor, or an output of
        an op already on the tape. Done once, after the block, to keep recording cheap.
        """
        if self.settled:
            return self
        self.watched_variable_ids = {v.handle._id for v in self.watched_variables}
        for v in self.watched_variables:
            self.variables.setdefault(v.handle._id, v)
        on_tape: set[int] = set(self.watched_variable_ids) | set(self.watched)
        final = self.final_generation
        for op in self.ops:
            op.inputs_on_tape = tuple(t._id in on_tape and is_trainable(t.dtype) for t in op.inputs)
            if op.scope.endswith("/"):
                op.scope = op.scope[:-1]
            if final < 0 or not op.tape_recording or op.generation != final:
                continue
            if any(op.inputs_on_tape):
                op.recorded = True
                on_tape.update(o._id for o in op.outputs)
        self.settled = True
        return self


class Recorder:
    """Logs ops for one tape on the current thread; use start()/stop() in try/finally."""

    def __init__(self, tape: tf.GradientTape):
        if not isinstance(tape, tf.GradientTape):
            raise TypeError(
                f"tapeviz.record() needs a tf.GradientTape, got {type(tape).__name__}. "
                "Use it as: with tf.GradientTape() as tape, tv.record(tape) as rec: ..."
            )
        self.tape = tape
        self._ops: list[OpRecord] = []
        self._variables: dict[int, Any] = {}
        self._exported: dict[int, Any] = {}
        self._watched: dict[int, Any] = {}
        self._generations: list[Any] = []
        self._started = False
        self.capture: Capture | None = None

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        if self._started:
            raise RuntimeError("This tapeviz recorder is already recording; use a new one.")
        self._thread_id = threading.get_ident()
        self._start_uid = _ops.uid()
        self._tld = _context.context()._thread_local_data  # name scope of this thread
        _Patches.acquire()
        try:
            _active().append(self)
            _op_callbacks.add_op_callback(self._callback)
        except BaseException:
            self._detach()
            raise
        self._started = True

    def _detach(self) -> None:
        recs = _active()
        if self in recs:
            recs.remove(self)
        try:
            _op_callbacks.remove_op_callback(self._callback)
        except (KeyError, ValueError):
            pass
        _Patches.release()

    def stop(self, frame=None) -> Capture:
        """Remove every hook, then settle which ops this tape recorded."""
        if not self._started:
            raise RuntimeError("This tapeviz recorder was never started.")
        self._started = False
        self._detach()
        self.capture = self._finish(frame)
        return self.capture

    def note_watch(self, tensors) -> None:
        """Called from GradientTape.watch: remember tensors the user asked to watch."""
        for t in tf.nest.flatten(tensors):
            if isinstance(t, tf.Variable):
                continue  # variables are read back from the tape itself
            if hasattr(t, "_id"):
                self._watched[t._id] = t

    # -- the callback ----------------------------------------------------------------
    def _callback(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):
        # Graph construction (inside tf.function tracing) is not an eager execution.
        if graph is not None or threading.get_ident() != self._thread_id:
            return None
        tape = self.tape
        live = tape._tape
        if not self._generations or self._generations[-1] is not live:
            self._generations.append(live)
        recording = bool(tape._recording) and not pywrap_tfe.TFE_Py_TapeSetIsStopped()
        if isinstance(op_type, bytes):
            op_type = op_type.decode()
        self._ops.append(
            OpRecord(
                index=len(self._ops),
                op_type=op_type,
                inputs=tuple(inputs),
                attrs=tuple(attrs) if attrs else (),
                outputs=tuple(outputs) if outputs else (),
                scope=self._tld.scope_name,
                tape_recording=recording,
                generation=len(self._generations) - 1,
            )
        )
        return None

    # -- after the block -------------------------------------------------------------
    def _finish(self, frame) -> Capture:
        """Snapshot the tape's state now; the per-op bookkeeping waits for Capture.settle()."""
        tape = self.tape
        final_tape = tape._tape
        # Which generation is "the" tape: the last live one (gradient() on a
        # non-persistent tape sets _tape to None, reset() starts a new one).
        final_gen = -1
        for i in range(len(self._generations) - 1, -1, -1):
            if self._generations[i] is not None:
                final_gen = i
                break
        watched_vars = final_tape.watched_variables() if final_tape is not None else tape._watched_variables
        return Capture(
            ops=self._ops,
            variables=self._variables,
            watched_variables=tuple(watched_vars),
            watched=self._watched,
            exported=self._exported,
            start_uid=self._start_uid,
            names=_names_in_frame(frame) if frame is not None else {},
            persistent=bool(tape._persistent),
            thread_id=self._thread_id,
            tape_ref=weakref.ref(tape),
            final_generation=final_gen,
            reset_count=max(0, len([g for g in self._generations if g is not None]) - 1),
        )


_TRAINABLE: dict[Any, bool] = {}


def is_trainable(dtype) -> bool:
    """Same dtype rule as TF's tape: floats, complex, resources and variants."""
    known = _TRAINABLE.get(dtype)
    if known is None:
        d = tf.as_dtype(dtype)
        known = _TRAINABLE[dtype] = bool(d.is_floating or d.is_complex or d in (tf.resource, tf.variant))
    return known


def _names_in_frame(frame) -> dict[int, str]:
    """id(object) -> the name the user bound it to in the frame that ran the block.

    Ids are only looked up for objects the capture keeps alive, and every named object
    was alive when this ran, so an id cannot point at the wrong object. Module-level
    names count too (notebooks run cells at module level); private names do not.
    """
    names = {id(v): k for k, v in frame.f_locals.items() if k[:1] != "_"}
    return names


def caller_frame(depth: int):
    """The user's frame `depth` levels above the caller of this function."""
    return sys._getframe(depth + 1)


def current_uid() -> int:
    return _ops.uid()


def tape_is_active(tape: tf.GradientTape) -> bool:
    return bool(tape._recording) and tape._tape is not None


def hooks_installed() -> bool:
    """True while any tapeviz patch is installed (tests check it is gone afterwards)."""
    return _Patches.installed() or bool(getattr(_local, "recorders", None))


def callbacks_on_this_thread() -> int:
    from tensorflow.python.eager import context

    return len(context.context().op_callbacks)


# --------------------------------------------------------------------------- replay


@dataclass
class BackwardCall:
    """One call of an op's registered gradient function during the replayed backprop."""

    op: OpRecord
    out_grads: list
    in_grads: list


def replay_backward(
    ops: Sequence[OpRecord],
    watched_ids: Sequence[Any],
    targets: Sequence[Any],
    sources: Sequence[Any],
    output_gradients: Sequence[Any] | None,
) -> tuple[list, list[BackwardCall]]:
    """Run TF's own backprop over the recorded ops; return (source grads, calls in order).

    The ops are re-recorded on a private tape with a backward function that calls the
    op's registered gradient function (the same function and attrs TF's tape uses) and
    logs what it returned. TF's C++ tape then orders the calls, fills zeros and
    aggregates fan-out exactly as ``tape.gradient`` does. When the calling thread has an
    active tape or op callback, it runs on a worker thread instead, so it never touches
    the user's tapes or callbacks (both are per thread).
    """
    args = (ops, watched_ids, targets, sources, output_gradients)
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


def _replay(ops, watched_ids, targets, sources, output_gradients):
    calls: list[BackwardCall] = []
    tape = _tape_lib.push_new_tape(persistent=True, watch_accessed_variables=False)
    try:
        for t in watched_ids:
            _tape_lib.watch(tape, t)
        for op in ops:
            if op.recorded:
                _record.record_operation(op.op_type, list(op.outputs), list(op.inputs), _backward_fn(op, calls))
    finally:
        _tape_lib.pop_tape(tape)
    grads = pywrap_tfe.TFE_Py_TapeGradient(
        tape._tape, list(targets), list(sources), output_gradients, list(sources), "none"
    )
    return grads, calls


def _backward_fn(op: OpRecord, calls: list) -> Callable:
    # TF skips the inputs that were not on the tape when the op ran.
    skip = tuple(i for i, on in enumerate(op.inputs_on_tape) if not on)

    def backward(*out_grads):
        grads = _backprop._gradient_function(
            op.op_type, op.attrs, len(op.inputs), list(op.inputs), list(op.outputs),
            list(out_grads), skip, op.scope,
        )
        grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
        calls.append(BackwardCall(op, list(out_grads), grads))
        return grads

    return backward

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
    (_record, "record_operation_backprop_only"),
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
                    "record": _record.record_operation,
                    "record_bp": _record.record_operation_backprop_only,
                }
                pywrap_tfe.TFE_Py_FastPathExecute = _fast_path_execute
                _record.record_operation = _record_operation
                _record.record_operation_backprop_only = _record_operation_backprop_only
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
                _record.record_operation = o["record"]
                _record.record_operation_backprop_only = o["record_bp"]
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


def _record_operation(op_type, output_tensors, input_tensors, backward_function, forward_function=None):
    out = _Patches.originals["record"](op_type, output_tensors, input_tensors, backward_function, forward_function)
    _note_record(op_type, output_tensors, input_tensors, backward_function)
    return out


def _record_operation_backprop_only(op_type, output_tensors, input_tensors, backward_function):
    out = _Patches.originals["record_bp"](op_type, output_tensors, input_tensors, backward_function)
    _note_record(op_type, output_tensors, input_tensors, backward_function)
    return out


def _note_record(op_type, outputs, inputs, backward) -> None:
    recs = getattr(_local, "recorders", None)
    if recs:
        for r in recs:
            r._note_record(op_type, outputs, inputs, backward)


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
    inputs_on_tape: tuple = ()  # per input: does the final tape know it (TF keeps its gradient)
    # Set when the op reached the tape through record.record_operation (a tf.function
    # call, tf.custom_gradient): TF's tape calls this Python function, not the op's
    # registered gradient.
    backward: Any = None


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
    # (tensor id or variable handle id, generation, number of ops seen before) per tape.watch
    watch_log: list = field(default_factory=list)
    watch_accessed_variables: bool = True
    # Filled by settle(): when each thing the final tape watches joined it (op index) and
    # the tensors among them; a watch before tape.reset() or after a use does not count there.
    watch_joined: dict = field(default_factory=dict)
    tape_watched: dict = field(default_factory=dict)

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
        final = self.final_generation
        # TF decides at each op whether to record it: something watched only later (or
        # only before tape.reset()) does not make an op recorded.
        joined: dict[int, int] = {}
        for key, gen, at in self.watch_log:
            if gen == final:
                joined.setdefault(key, at)
        for v in self.watched_variables:
            hid = v.handle._id
            if hid not in joined or (self.watch_accessed_variables and v.trainable):
                joined[hid] = 0  # watched on access, before its first read
        pending = sorted((at, key) for key, at in joined.items())
        on_tape: set[int] = set()
        p = 0
        for op in self.ops:
            while p < len(pending) and pending[p][0] <= op.index:
                on_tape.add(pending[p][1])
                p += 1
            if op.scope.endswith("/"):
                op.scope = op.scope[:-1]
            if final < 0 or not op.tape_recording or op.generation != final:
                continue
            if any(t._id in on_tape and is_trainable(t.dtype) for t in op.inputs):
                op.recorded = True
                on_tape.update(o._id for o in op.outputs)
        # At gradient time, TF keeps what reaches a tensor the tape knows in the end
        # (watched at any point of the final tape, or made by a recorded op).
        known = on_tape | set(joined)
        for op in self.ops:
            op.inputs_on_tape = tuple(t._id in known and is_trainable(t.dtype) for t in op.inputs)
        self.watch_joined = joined
        self.tape_watched = {tid: t for tid, t in self.watched.items() if tid in joined}
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
        self._watch_log: list = []
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
        gen = self._generation()
        for t in tf.nest.flatten(tensors):
            if isinstance(t, tf.Variable):
                # the tape lists its variables itself; only the moment is noted here
                self._watch_log.append((t.handle._id, gen, len(self._ops)))
            elif hasattr(t, "_id"):
                self._watched[t._id] = t
                self._watch_log.append((t._id, gen, len(self._ops)))

    def _generation(self) -> int:
        """Index of the tape object live now (tape.reset() replaces it)."""
        live = self.tape._tape
        if not self._generations or self._generations[-1] is not live:
            self._generations.append(live)
        return len(self._generations) - 1

    # -- the callback ----------------------------------------------------------------
    def _callback(self, op_type, inputs, attrs, outputs, op_name=None, graph=None):
        # Graph construction (inside tf.function tracing) is not an eager execution.
        if graph is not None or threading.get_ident() != self._thread_id:
            return None
        tape = self.tape
        gen = self._generation()
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
                generation=gen,
            )
        )
        return None

    def _note_record(self, op_type, outputs, inputs, backward) -> None:
        """record.record_operation puts an entry with its own backward function on the tape.

        A tf.function call runs with recording stopped and is recorded by hand right
        after: that is the call op the callback already logged, so it gets the backward
        function in place. A tf.custom_gradient entry re-declares outputs other ops
        computed: it is logged as an op of its own (graph.py makes it their producer).
        """
        if threading.get_ident() != self._thread_id or not _context.executing_eagerly():
            return
        outputs, inputs = tuple(outputs), tuple(inputs)
        if not all(isinstance(t, _ops.EagerTensor) for t in outputs + inputs):
            return  # symbolic tensors: a graph being traced, not an eager execution
        if isinstance(op_type, bytes):
            op_type = op_type.decode()
        tape = self.tape
        gen = self._generation()
        recording = bool(tape._recording) and not pywrap_tfe.TFE_Py_TapeSetIsStopped()
        out_ids = [o._id for o in outputs]
        for op in self._ops[:-17:-1]:  # the call op ran just before (a few ops at most)
            if op.backward is None and op.op_type == op_type and [o._id for o in op.outputs] == out_ids:
                op.inputs, op.backward, op.tape_recording = inputs, backward, recording
                op.generation = gen
                return
        self._ops.append(
            OpRecord(
                index=len(self._ops),
                op_type=op_type,
                inputs=inputs,
                attrs=(),
                outputs=outputs,
                scope=self._tld.scope_name,
                tape_recording=recording,
                generation=gen,
                backward=backward,
            )
        )

    # -- after the block -------------------------------------------------------------
    def _finish(self, frame) -> Capture:
        """Snapshot the tape's state now; the per-op bookkeeping waits for Capture.settle()."""
        tape = self.tape
        final_tape = tape._tape
        # Which generation is "the" tape: the last live one (gradient() on a
        # non-persistent tape sets _tape to None, reset() starts a new one).
        if final_tape is not None:
            final_gen = self._generation()  # also right after a reset() that no op followed
        else:
            final_gen = next((i for i in range(len(self._generations) - 1, -1, -1) if self._generations[i] is not None), -1)
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
            watch_log=self._watch_log,
            watch_accessed_variables=bool(tape._watch_accessed_variables),
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
        if op.backward is not None:  # the Python function TF's tape was given
            grads = op.backward(*out_grads)
        else:
            grads = _backprop._gradient_function(
                op.op_type, op.attrs, len(op.inputs), list(op.inputs), list(op.outputs),
                list(out_grads), skip, op.scope,
            )
        grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
        calls.append(BackwardCall(op, list(out_grads), grads))
        return grads

    return backward

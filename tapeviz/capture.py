"""Capture: the one module that touches TensorFlow's private APIs.

While a tape records, an op callback logs every eagerly executed op together with the
tape's recording state and name scope (cheaply: a tuple per op; OpRecords are built after
the block). A few narrow patches make otherwise invisible things visible:

* TF's C++ fast path reads a ``tf.Variable`` passed straight to an op
  (``tf.stop_gradient(v)``, the second ``v`` of ``v * v``) without calling any Python
  callback. While *this thread* records, variable arguments are routed through
  ``v.value()``, which performs the very same ``ReadVariableOp`` in Python where we see it
  (variables inside list arguments, as in ``tf.concat([v, w], 0)``, too).
* ``numpy()`` / ``float()`` on a tensor mark it as exported, so a value that leaves
  TensorFlow and comes back as a constant can be named as the reason a gradient stopped.
* ``resource_variable_ops.variable_accessed`` (called on every read, ``tf.gather`` on a
  variable, lazy read after an assign) maps resource handles to their variables (and to
  the path of the Keras variable doing the read, if one is), and
  ``record.record_operation`` shows what ``tf.function`` calls and ``tf.custom_gradient``
  put on the tape.

The patches act only on threads that are recording; every other thread goes straight
to TensorFlow's originals. They are installed with the first active recorder and
removed with the last one, on every exit path.

The module also owns :func:`replay_backward`, which re-records the captured ops on a
private tape and lets TensorFlow's own backprop run over them: that is how the flow
gets totals that *are* ``tape.gradient`` and per-edge contributions that are exactly
what TF's registered gradient functions returned.
"""

from __future__ import annotations

import os
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
    (_rvo, "variable_accessed"),
    (_rvo, "BaseResourceVariable"),
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
#
# The wrappers below run for every eager op of the process while any recorder is
# active, so they are written for speed: TF's functions are module globals (no dict
# lookup), and the fast-path wrapper decides with one C-level set test that an op's
# arguments hold no tf.Variable (the common case) before it does anything else.

_tf_fast: Callable = pywrap_tfe.TFE_Py_FastPathExecute
_tf_accessed: Callable = _rvo.variable_accessed
_tf_numpy: Callable = _ops._EagerTensorBase.numpy
_tf_float: Callable = _ops._EagerTensorBase.__float__
_tf_array: Callable = _ops._EagerTensorBase.__array__
_tf_record: Callable = _record.record_operation
_tf_record_bp: Callable = _record.record_operation_backprop_only
_is_stopped = pywrap_tfe.TFE_Py_TapeSetIsStopped
_get_ident = threading.get_ident

# Argument types of TFE_Py_FastPathExecute known to need no rerouting (learned as they
# are seen); _VAR_TYPES are tf.Variable classes the C++ fast path would read invisibly.
_PLAIN_TYPES: set = {type(None), str, bytes, int, float, bool, _ops.EagerTensor, type(_context.context())}
_VAR_TYPES: set = set()


class _Patches:
    """Reference-counted global patches; only recording threads see any effect."""

    lock = threading.Lock()
    users = 0
    originals: dict[str, Any] = {}

    @classmethod
    def acquire(cls) -> None:
        global _tf_fast, _tf_accessed, _tf_numpy, _tf_float, _tf_array, _tf_record, _tf_record_bp
        with cls.lock:
            if cls.users == 0:
                cls.originals = o = {
                    "fast": pywrap_tfe.TFE_Py_FastPathExecute,
                    "accessed": _rvo.variable_accessed,
                    "numpy": _ops._EagerTensorBase.numpy,
                    "float": _ops._EagerTensorBase.__float__,
                    "array": _ops._EagerTensorBase.__array__,
                    "record": _record.record_operation,
                    "record_bp": _record.record_operation_backprop_only,
                }
                # A wrapper fetched by another thread just before a release still calls
                # through these globals after it, so they are only ever set, never cleared.
                _tf_fast, _tf_accessed = o["fast"], o["accessed"]
                _tf_numpy, _tf_float, _tf_array = o["numpy"], o["float"], o["array"]
                _tf_record, _tf_record_bp = o["record"], o["record_bp"]
                pywrap_tfe.TFE_Py_FastPathExecute = _fast_path_execute
                _record.record_operation = _record_operation
                _record.record_operation_backprop_only = _record_operation_backprop_only
                _rvo.variable_accessed = _variable_accessed
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
                _rvo.variable_accessed = o["accessed"]
                _ops._EagerTensorBase.numpy = o["numpy"]
                _ops._EagerTensorBase.__float__ = o["float"]
                _ops._EagerTensorBase.__array__ = o["array"]
                _record.record_operation = o["record"]
                _record.record_operation_backprop_only = o["record_bp"]

    @classmethod
    def installed(cls) -> bool:
        return cls.users > 0


def _fast_path_execute(*args):
    # One C-level test settles almost every call: no argument is (or holds) a variable.
    if _PLAIN_TYPES.issuperset(map(type, args)) or not getattr(_local, "recorders", None):
        return _tf_fast(*args)
    return _tf_fast(*[_route(a) for a in args])


def _route(a):
    """`a`, with a tf.Variable replaced by v.value(): the same ReadVariableOp, run where
    the op callback sees it (the C++ fast path would read it without any callback)."""
    t = type(a)
    if t in _PLAIN_TYPES:
        return a
    if t in _VAR_TYPES:
        return a.value()
    if t is list or t is tuple:  # list inputs (tf.concat, tf.add_n) may hold variables
        if _PLAIN_TYPES.issuperset(map(type, a)):
            return a
        return t(_route(x) for x in a)
    if issubclass(t, _rvo.BaseResourceVariable):
        _VAR_TYPES.add(t)
        return a.value()
    _PLAIN_TYPES.add(t)
    return a


def _record_operation(op_type, output_tensors, input_tensors, backward_function, forward_function=None):
    out = _tf_record(op_type, output_tensors, input_tensors, backward_function, forward_function)
    recs = getattr(_local, "recorders", None)
    if recs:
        for r in recs:
            r._note_record(op_type, output_tensors, input_tensors, backward_function)
    return out


def _record_operation_backprop_only(op_type, output_tensors, input_tensors, backward_function):
    out = _tf_record_bp(op_type, output_tensors, input_tensors, backward_function)
    recs = getattr(_local, "recorders", None)
    if recs:
        for r in recs:
            r._note_record(op_type, output_tensors, input_tensors, backward_function)
    return out


def _variable_accessed(variable):
    """TF calls this on every read, sparse read (tf.gather), lazy read after an assign
    and captured use in a tf.function: the moment to learn which handle is which variable,
    and, when a Keras variable is doing the read, its Keras path."""
    recs = getattr(_local, "recorders", None)
    if recs:
        handle = getattr(variable, "handle", None)
        if type(handle) is _ops.EagerTensor:
            hid = handle._id
            for r in recs:
                r._variables[hid] = variable
            known = _paths.get(hid, 0)
            if known.__class__ is int and known < _PATH_TRIES:
                _learn_keras_path(hid, variable, known)
    return _tf_accessed(variable)


# A Keras 3 variable wraps a tf.Variable (its ``_value``) that knows nothing of it: the
# tape, the ops and variable_accessed only ever see the inner one. But Keras reads its
# variables in its own methods (``__tf_tensor__``, ``assign``, ``numpy``, operators), so
# while the inner variable is read, the Keras variable is ``self`` in the first frame
# above TensorFlow's own. What a handle's reads showed is kept for the process (handle
# ids are never reused, a Keras path never changes), so a training loop looks only in
# its first step. A read by other Keras code (``seed_state.value * 1``) is looked at
# again on the next reads, at most _PATH_TRIES times; a read by any other code settles
# it: a plain tf.Variable costs one short walk up the stack, once.
_PATH_TRIES = 4
_PATH_DEPTH = 16  # frames looked at above variable_accessed
_PATHS_MAX = 1 << 16  # handles remembered before the memo starts over
# resource handle id -> its Keras path (str), or how often its reads showed none (int)
_paths: dict[int, Any] = {}
_keras_codes: frozenset | None = None  # code objects of the Keras variable classes' methods
_keras_dirs: tuple = ()  # folders of the Keras package (set with _keras_codes)
# code object -> _TF (TensorFlow's, or this module's), _KV (a Keras variable method),
# _KERAS (other Keras code) or _OTHER
_code_kinds: dict = {}
_TF, _KV, _KERAS, _OTHER = range(4)
_TF_DIRS = tuple({os.path.dirname(f) + os.sep for f in (tf.__file__, os.path.realpath(tf.__file__))})


def _keras_variable_codes() -> frozenset | None:
    """Code objects of every method of Keras's Variable class and its subclasses (None
    while Keras is not imported; Keras itself is never imported from here)."""
    global _keras_codes, _keras_dirs
    if _keras_codes is not None:
        return _keras_codes
    mod = sys.modules.get("keras.src.backend.common.variables")
    base = getattr(mod, "Variable", None) if mod is not None else None
    if not isinstance(base, type):
        return None
    codes: set = set()
    classes, seen = [base], set()
    while classes:
        cls = classes.pop()
        if cls in seen:
            continue
        seen.add(cls)
        classes.extend(cls.__subclasses__())
        for attr in vars(cls).values():
            fns = [attr.fget, attr.fset] if isinstance(attr, property) else [attr]
            for fn in fns:
                while fn is not None:
                    code = getattr(fn, "__code__", None)
                    if code is not None:
                        codes.add(code)
                    fn = getattr(fn, "__wrapped__", None)
    # Keras's own code is told by where it lives (not by "keras" anywhere in a path: a
    # user's project folder may be called that).
    package = os.path.dirname(sys.modules[mod.__name__.split(".")[0]].__file__)
    _keras_dirs = tuple({package + os.sep, os.path.realpath(package) + os.sep})
    _keras_codes = frozenset(codes)
    return _keras_codes


def _code_kind(code, codes) -> int:
    if code in codes:
        kind = _KV
    else:
        file = code.co_filename
        if file == __file__ or file.startswith(_TF_DIRS):
            kind = _TF
        elif file.startswith(_keras_dirs):
            kind = _KERAS
        else:
            kind = _OTHER
    _code_kinds[code] = kind
    return kind


def _learn_keras_path(hid: int, variable, tries: int) -> None:
    codes = _keras_codes if _keras_codes is not None else _keras_variable_codes()
    if not codes:
        return  # Keras is not loaded: there is no Keras variable to find
    path = _keras_path_on_stack(variable, sys._getframe(2), codes)  # the caller of variable_accessed
    if len(_paths) >= _PATHS_MAX:
        _paths.clear()
    if path.__class__ is not str:  # True: Keras code read it, so ask again next time
        path = tries + 1 if path else _PATH_TRIES
    _paths[hid] = path


def keras_paths_of(handle_ids) -> dict[int, str]:
    """handle id -> Keras path, for the handles whose reads showed one."""
    found = {}
    for hid in handle_ids:
        path = _paths.get(hid)
        if path.__class__ is str:
            found[hid] = path
    return found


def _keras_path_on_stack(variable, f, codes) -> str | bool:
    """The path of the Keras variable reading tf.Variable `variable`: the first frame from
    `f` up that is not TensorFlow's is that variable's method. Else whether that frame
    is other Keras code (True) or not (False)."""
    kinds = _code_kinds
    for _ in range(_PATH_DEPTH):
        if f is None:
            return False
        code = f.f_code
        kind = kinds.get(code)
        if kind is None:
            kind = _code_kind(code, codes)
        if kind == _KV:
            kv = f.f_locals.get("self")
            try:
                if kv is not None and getattr(kv, "_value", None) is variable:
                    path = kv.path
                    if isinstance(path, str) and path:
                        return path
            except Exception:  # noqa: BLE001, S110 - a half-built variable: no path to learn
                pass
            return True
        if kind != _TF:
            return kind == _KERAS
        f = f.f_back
    return False


def _note_export(t) -> None:
    recs = getattr(_local, "recorders", None)
    if recs:
        for r in recs:
            r._exported[t._id] = t


def _numpy(self):
    _note_export(self)
    return _tf_numpy(self)


def _float(self):
    _note_export(self)
    return _tf_float(self)


def _array(self, *args, **kwargs):
    _note_export(self)
    return _tf_array(self, *args, **kwargs)


# --------------------------------------------------------------------------- records


@dataclass
class OpRecord:
    """One executed op, as the callback saw it."""

    index: int
    op_type: str
    inputs: tuple
    attrs: tuple
    outputs: tuple
    scope: str  # the TF name scope the op ran in, e.g. "sequential/dense" (no trailing /)
    tape_recording: bool  # the tape was recording (not paused, not globally stopped)
    generation: int  # which internal tape object was live (reset() starts a new one)
    recorded: bool = False  # filled in by Capture.settle(): did *this* tape record the op
    inputs_on_tape: tuple = ()  # per input: does the final tape know it (TF keeps its gradient)
    # Set when the op reached the tape through record.record_operation (a tf.function
    # call, tf.custom_gradient): TF's tape calls this Python function, not the op's
    # registered gradient.
    backward: Any = None


# What the callback stores per op (a plain tuple: building OpRecords waits until after
# the block). Positions:
_R_TYPE, _R_IN, _R_ATTRS, _R_OUT, _R_SCOPE, _R_REC, _R_GEN, _R_BACKWARD = range(8)


def _materialize(raw: list) -> list[OpRecord]:
    ops = []
    for i, (op_type, inputs, attrs, outputs, scope, rec, gen, backward) in enumerate(raw):
        if type(op_type) is bytes:
            op_type = op_type.decode()
        if scope.endswith("/"):
            scope = scope[:-1]
        ops.append(OpRecord(i, op_type, tuple(inputs), tuple(attrs) if attrs else (),
                            tuple(outputs) if outputs else (), scope, bool(rec), gen, backward=backward))
    return ops


@dataclass
class FrameInfo:
    """What the user's frame tells about names, read once when the block ends."""

    names: dict  # id(python object) -> the name it is bound to
    variable_names: dict  # resource handle id -> name bound to a Keras variable wrapping it
    holders: list  # weak (or strong) refs to objects with .variables, e.g. Keras models

    def keras_paths(self) -> dict[int, str]:
        """resource handle id -> Keras variable path (``sequential/dense/kernel``).

        A Keras variable wraps a tf.Variable (its ``.value``); the tape and the captured
        ops only ever see the inner one. Every object in the frame that lists variables
        (a model, a layer, an optimizer) is asked for them, and those that carry a
        ``.path`` and wrap a tf.Variable give the mapping."""
        paths: dict[int, str] = {}
        for ref in self.holders:
            obj = ref() if isinstance(ref, weakref.ref) else ref
            if obj is None:
                continue
            for attr in ("variables", "trainable_variables"):
                try:
                    listed = list(getattr(obj, attr))
                except Exception:  # noqa: BLE001 - a property that cannot answer now
                    continue
                for kv in listed:
                    inner = _wrapped_variable(kv)
                    if inner is not None:
                        paths.setdefault(inner.handle._id, kv.path)
                break
        return paths


def _wrapped_variable(kv):
    """The tf.Variable inside a Keras-style variable (``.path`` str, ``.value`` variable)."""
    if isinstance(kv, _rvo.BaseResourceVariable):
        return None  # a tf.Variable itself: its own name is used
    try:
        path, inner = kv.path, kv.value
    except Exception:  # noqa: BLE001
        return None
    if isinstance(path, str) and isinstance(inner, _rvo.BaseResourceVariable) and type(inner.handle) is _ops.EagerTensor:
        return inner
    return None


@dataclass
class Capture:
    """Everything one recording saw; graph.py turns it into a TapeGraph."""

    raw: list  # per op: the tuple the callback stored (see _R_*)
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
    frame: FrameInfo | None = None
    # resource handle id -> Keras path, learned while the Keras variable read it
    access_paths: dict = field(default_factory=dict)
    _ops: list | None = field(default=None, repr=False)
    _keras_paths: dict | None = field(default=None, repr=False)

    @property
    def ops(self) -> list[OpRecord]:
        """The recorded ops as OpRecords (built from the raw log on first use)."""
        if self._ops is None:
            self._ops = _materialize(self.raw)
            self.raw = []
        return self._ops

    def keras_path(self, var) -> str | None:
        """The Keras path of the variable wrapping tf.Variable `var`: seen while the Keras
        variable read it in the block (wherever the model lives: an attribute, a dict, a
        closure), else found through a model or layer in the user's frame."""
        hid = var.handle._id
        path = self.access_paths.get(hid)
        if path is not None:
            return path
        if self._keras_paths is None:
            self._keras_paths = self.frame.keras_paths() if self.frame is not None else {}
        return self._keras_paths.get(hid)

    def variable_name(self, var) -> str:
        """How the graph names a tf.Variable: the Python name bound to it, else the Keras
        path of the Keras variable wrapping it (see keras_path), else the Python name
        bound to that Keras variable, else its TF name."""
        name = self.names.get(id(var)) or self.keras_path(var)
        if not name and self.frame is not None:
            name = self.frame.variable_names.get(var.handle._id)
        return name or var.name.split(":")[0]

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
        self._raw: list[tuple] = []
        self._variables: dict[int, Any] = {}
        self._exported: dict[int, Any] = {}
        self._watched: dict[int, Any] = {}
        self._generations: list[Any] = []
        self._live: Any = _UNSET  # the tape object of generation self._gen
        self._gen = -1
        self._watch_log: list = []
        self._started = False
        self.capture: Capture | None = None

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        if self._started:
            raise RuntimeError("This tapeviz recorder is already recording; use a new one.")
        self._thread_id = _get_ident()
        self._start_uid = _ops.uid()
        self._tld = _context.context()._thread_local_data  # name scope of this thread
        self._callback = self._make_callback()
        _Patches.acquire()
        try:
            _active().append(self)
            # Op callbacks are per thread: ops of other threads never reach this one.
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
                self._watch_log.append((t.handle._id, gen, len(self._raw)))
            elif hasattr(t, "_id"):
                self._watched[t._id] = t
                self._watch_log.append((t._id, gen, len(self._raw)))

    def _generation(self) -> int:
        """Index of the tape object live now (tape.reset() replaces it)."""
        live = self.tape._tape
        if live is not self._live:
            if not self._generations or self._generations[-1] is not live:
                self._generations.append(live)
            self._live, self._gen = live, len(self._generations) - 1
        return self._gen

    # -- the callback ----------------------------------------------------------------
    def _make_callback(self):
        """The op callback: runs for every eager op while recording, so it only stores.

        A closure over locals rather than a method: no attribute lookups on the hot path.
        """
        tape, tld, append, is_stopped, rec = self.tape, self._tld, self._raw.append, _is_stopped, self

        def callback(op_type, inputs, attrs, outputs, op_name=None, graph=None):
            if graph is not None:  # graph construction (tf.function tracing) is not an execution
                return None
            if tape._tape is not rec._live:
                rec._generation()
            if outputs.__class__ is list:
                # TF hands multi-output ops (Unpack, Split) a list that its caller may
                # empty later (Keras's recurrent loop sets the entries to None): keep a
                # snapshot of what the op returned.
                outputs = tuple(outputs)
            append((op_type, inputs, attrs, outputs, tld.scope_name, tape._recording and not is_stopped(), rec._gen, None))
            return None

        return callback

    def _callback(self, *args, **kwargs):  # replaced per instance by start()
        return None

    def _note_record(self, op_type, outputs, inputs, backward) -> None:
        """record.record_operation puts an entry with its own backward function on the tape.

        A tf.function call runs with recording stopped and is recorded by hand right
        after: that is the call op the callback already logged, so it gets the backward
        function in place. A tf.custom_gradient entry re-declares outputs other ops
        computed: it is logged as an op of its own (graph.py makes it their producer).
        """
        if _get_ident() != self._thread_id or not _context.executing_eagerly():
            return
        outputs, inputs = tuple(outputs), tuple(inputs)
        if not all(isinstance(t, _ops.EagerTensor) for t in outputs + inputs):
            return  # symbolic tensors: a graph being traced, not an eager execution
        if isinstance(op_type, bytes):
            op_type = op_type.decode()
        tape = self.tape
        gen = self._generation()
        recording = bool(tape._recording) and not _is_stopped()
        out_ids = [o._id for o in outputs]
        raw = self._raw
        for i in range(len(raw) - 1, max(len(raw) - 17, -1), -1):  # the call op ran just before
            r = raw[i]
            rtype = r[_R_TYPE].decode() if type(r[_R_TYPE]) is bytes else r[_R_TYPE]
            call_out = [o._id for o in (r[_R_OUT] or ())]
            # The forward function may return extra outputs (intermediates kept for its
            # backward pass); the tape records only the leading, user-visible ones.
            if r[_R_BACKWARD] is None and rtype == op_type and call_out[:len(out_ids)] == out_ids:
                raw[i] = (op_type, inputs, r[_R_ATTRS], outputs, r[_R_SCOPE], recording, gen, backward)
                return
        raw.append((op_type, inputs, (), outputs, self._tld.scope_name, recording, gen, backward))

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
        info = _scan_frame(frame) if frame is not None else None
        return Capture(
            raw=self._raw,
            variables=self._variables,
            access_paths=keras_paths_of(self._variables),
            watched_variables=tuple(watched_vars),
            watched=self._watched,
            exported=self._exported,
            start_uid=self._start_uid,
            names=info.names if info is not None else {},
            persistent=bool(tape._persistent),
            thread_id=self._thread_id,
            tape_ref=weakref.ref(tape),
            final_generation=final_gen,
            watch_log=self._watch_log,
            watch_accessed_variables=bool(tape._watch_accessed_variables),
            reset_count=max(0, len([g for g in self._generations if g is not None]) - 1),
            frame=info,
        )


_UNSET = object()
_TRAINABLE: dict[Any, bool] = {}


def is_trainable(dtype) -> bool:
    """Same dtype rule as TF's tape: floats, complex, resources and variants."""
    known = _TRAINABLE.get(dtype)
    if known is None:
        d = tf.as_dtype(dtype)
        known = _TRAINABLE[dtype] = bool(d.is_floating or d.is_complex or d in (tf.resource, tf.variant))
    return known


# type -> 0 (nothing to learn), 1 (lists variables: a model, layer, optimizer),
# 2 (a Keras-style variable: .path and .value)
_FRAME_KIND: dict[type, int] = {}


def _frame_kind(t: type) -> int:
    kind = _FRAME_KIND.get(t)
    if kind is None:
        try:
            if issubclass(t, (_ops.EagerTensor, _rvo.BaseResourceVariable, np.ndarray, type, int, float, str, bytes)):
                kind = 0
            elif hasattr(t, "path") and hasattr(t, "value"):
                kind = 2
            elif hasattr(t, "variables") or hasattr(t, "trainable_variables"):
                kind = 1
            else:
                kind = 0
        except Exception:  # noqa: BLE001 - an exotic class; it names nothing
            kind = 0
        _FRAME_KIND[t] = kind
    return kind


def _scan_frame(frame) -> FrameInfo:
    """Names in the frame that ran the block, and the objects that can name variables.

    ``names`` maps id(object) -> the name the user bound it to. Ids are only looked up
    for objects the capture keeps alive, and every named object was alive when this ran,
    so an id cannot point at the wrong object. Module-level names count too (notebooks
    run cells at module level); private names do not. Objects listing variables (Keras
    models, layers) are kept by weak reference and asked for variable paths only when
    a graph is built.
    """
    names: dict[int, str] = {}
    variable_names: dict[int, str] = {}
    holders: list = []
    local = frame.f_locals
    items = list(local.items())
    n_local = len(items)
    # Globals the block's code refers to (a model defined at module level, used inside a
    # train_step function); the locals' own names win.
    glob = frame.f_globals
    if glob is not local:
        items += [(k, glob[k]) for k in frame.f_code.co_names if k in glob and k not in local]
    kinds = _FRAME_KIND
    for i, (k, v) in enumerate(items):
        if k.startswith("_"):
            continue
        if i < n_local:
            names[id(v)] = k
        else:
            names.setdefault(id(v), k)
        kind = kinds.get(type(v))
        if kind is None:
            kind = _frame_kind(type(v))
        if not kind:
            continue
        if kind == 1:
            try:
                holders.append(weakref.ref(v))
            except TypeError:
                holders.append(v)
        elif kind == 2:
            inner = _wrapped_variable(v)
            if inner is not None:
                variable_names.setdefault(inner.handle._id, k)
    return FrameInfo(names, variable_names, holders)


def _names_in_frame(frame) -> dict[int, str]:
    """id(object) -> the name the user bound it to in `frame` (see _scan_frame)."""
    return _scan_frame(frame).names


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


# --------------------------------------------------------------------------- tf.function bodies


def function_body(name: str) -> dict | None:
    """The ops inside a tf.function as TF registered them (FunctionDef), or None.

    Returns {"nodes": [(node name, op type)], "edges": [(src, dst, dst input index)],
    "args": [arg name per function input], "rets": [node name per function output]}.
    Argument and return placeholders are not nodes; inputs referring to an argument are
    recorded under "args", control inputs are skipped.
    """
    try:
        fd = _context.context().get_function_def(name)
    except Exception:  # noqa: BLE001 - unknown or garbage-collected function
        return None
    args = [a.name for a in fd.signature.input_arg]
    nodes = [(n.name, n.op) for n in fd.node_def if n.op != "NoOp"]  # NoOps only order side effects
    edges, arg_uses = [], []
    for n in fd.node_def:
        for k, ref in enumerate(n.input):
            if ref.startswith("^"):
                continue
            src = ref.split(":")[0]
            if src in args:
                arg_uses.append((args.index(src), n.name, k))
            else:
                edges.append((src, n.name, k))
    rets = [fd.ret[a.name].split(":")[0] for a in fd.signature.output_arg if a.name in fd.ret]
    return {"nodes": nodes, "edges": edges, "args": args, "arg_uses": arg_uses, "rets": rets}

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
import types
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import tensorflow as tf
from tensorflow.python import pywrap_tfe
from tensorflow.python.eager import backprop as _backprop
from tensorflow.python.eager import context as _context
from tensorflow.python.eager import record as _record
from tensorflow.python.eager import tape as _tape_lib
from tensorflow.python.framework import constant_op as _constant_op
from tensorflow.python.framework import op_callbacks as _op_callbacks
from tensorflow.python.framework import ops as _ops
from tensorflow.python.ops import resource_variable_ops as _rvo
from tensorflow.python.ops import script_ops as _script_ops

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
    (_constant_op, "convert_to_eager_tensor"),
    (_script_ops, "tape_cache"),
    (_script_ops, "backprop"),
)
_missing = [f"{getattr(m, '__name__', m)}.{a}" for m, a in _REQUIRED if not hasattr(m, a)]
if _missing:  # pragma: no cover - depends on the installed TF
    raise ImportError(
        f"tapeviz cannot hook into TensorFlow {tf.__version__}: missing {', '.join(_missing)}. "
        "Install a supported version: pip install 'tensorflow-cpu>=2.16,<2.22'."
    )

_local = threading.local()  # .recorders: list of active Recorder on this thread


def _active() -> list[Recorder]:
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
_tf_convert: Callable = _constant_op.convert_to_eager_tensor
_is_stopped = pywrap_tfe.TFE_Py_TapeSetIsStopped
_get_ident = threading.get_ident

# Argument types of TFE_Py_FastPathExecute known to need no rerouting (learned as they
# are seen); _VAR_TYPES are tf.Variable classes the C++ fast path would read invisibly.
_PLAIN_TYPES: set = {type(None), str, bytes, int, float, bool, _ops.EagerTensor, type(_context.context())}
_VAR_TYPES: set = set()
# NumPy values passed straight to an op: where a value comes back from NumPy.
_NUMPY_TYPES = frozenset({np.ndarray, np.float16, np.float32, np.float64, np.int32, np.int64})


_ABSENT = object()


class _Patches:
    """Reference-counted global patches; only recording threads see any effect."""

    lock = threading.Lock()
    users = 0
    originals: dict[str, Any] = {}

    @classmethod
    def acquire(cls) -> None:
        global _tf_fast, _tf_accessed, _tf_numpy, _tf_float, _tf_array, _tf_record, _tf_record_bp, _tf_convert
        with cls.lock:
            if cls.users == 0:
                base = _ops._EagerTensorBase
                cls.originals = o = {
                    "fast": pywrap_tfe.TFE_Py_FastPathExecute,
                    "accessed": _rvo.variable_accessed,
                    "numpy": base.numpy,
                    "float": base.__float__,
                    "array": base.__array__,
                    "array_function": base.__dict__.get("__array_function__", _ABSENT),
                    "record": _record.record_operation,
                    "record_bp": _record.record_operation_backprop_only,
                    "convert": _constant_op.convert_to_eager_tensor,
                    "script_backprop": _script_ops.backprop,
                }
                # A wrapper fetched by another thread just before a release still calls
                # through these globals after it, so they are only ever set, never cleared.
                _tf_fast, _tf_accessed = o["fast"], o["accessed"]
                _tf_numpy, _tf_float, _tf_array = o["numpy"], o["float"], o["array"]
                _tf_record, _tf_record_bp, _tf_convert = o["record"], o["record_bp"], o["convert"]
                pywrap_tfe.TFE_Py_FastPathExecute = _fast_path_execute
                _record.record_operation = _record_operation
                _record.record_operation_backprop_only = _record_operation_backprop_only
                _rvo.variable_accessed = _variable_accessed
                _constant_op.convert_to_eager_tensor = _convert_to_eager_tensor
                _script_ops.backprop = _ScriptBackprop(o["script_backprop"])
                base.numpy = _numpy
                base.__float__ = _float
                base.__array__ = _array
                base.__array_function__ = _array_function
            cls.users += 1

    @classmethod
    def release(cls) -> None:
        with cls.lock:
            cls.users -= 1
            if cls.users == 0:
                o = cls.originals
                base = _ops._EagerTensorBase
                pywrap_tfe.TFE_Py_FastPathExecute = o["fast"]
                _rvo.variable_accessed = o["accessed"]
                _constant_op.convert_to_eager_tensor = o["convert"]
                _script_ops.backprop = o["script_backprop"]
                base.numpy = o["numpy"]
                base.__float__ = o["float"]
                base.__array__ = o["array"]
                if o["array_function"] is _ABSENT:
                    del base.__array_function__
                else:
                    base.__array_function__ = o["array_function"]
                _record.record_operation = o["record"]
                _record.record_operation_backprop_only = o["record_bp"]

    @classmethod
    def installed(cls) -> bool:
        return cls.users > 0


class _ScriptBackprop:
    """The ``backprop`` module as tf.py_function's machinery (script_ops) sees it while a
    tape records: the same module, except that on a recording thread the tape the
    function's Python body is recorded on is persistent.

    TF keeps that tape in ``script_ops.tape_cache`` for the op's gradient, which pops
    it and computes from it once. A persistent tape gives the same gradient as often
    as asked, so the user's ``tape.gradient`` and tapeviz's replay both get TF's number,
    in either order (the replay puts the cache back as it found it)."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        return getattr(self._module, name)

    def GradientTape(self, *args, **kwargs):  # the name script_ops calls
        if getattr(_local, "recorders", None):
            kwargs["persistent"] = True
        return self._module.GradientTape(*args, **kwargs)


def _fast_path_execute(*args):
    # One C-level test settles almost every call: no argument is (or holds) a variable.
    if _PLAIN_TYPES.issuperset(map(type, args)):
        return _tf_fast(*args)
    recs = getattr(_local, "recorders", None)
    if not recs:
        return _tf_fast(*args)
    frame = sys._getframe(1)
    if any(a.__class__ in _NUMPY_TYPES and _passed_by_user(a, frame) for a in args):
        # A NumPy value of the user's enters TF here; C converts it into the op's input
        # tensors, so the inputs made during this call (ids above the counter now) came from NumPy.
        before = _ops.uid()
        out = _tf_fast(*[_route(a) for a in args])
        _note_reentry_by_op(recs, before, frame)
        return out
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
    if t not in _NUMPY_TYPES:
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
        handle: Any = getattr(variable, "handle", None)
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
# id(code) -> (code, kind): _TF (TensorFlow's, or this module's), _KV (a Keras variable
# method), _KERAS (other Keras code) or _OTHER. Keyed by id because hashing a code object
# is not cached by CPython (it hashes its constants every time: ~0.4 us); the code is kept
# in the value, so its id cannot be reused while the entry lives.
_code_kinds: dict[int, tuple[types.CodeType, int]] = {}
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
    if mod is None or not isinstance(base, type):
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
    # user's project folder may be called that). A package without a file (a namespace
    # package) has no folder to tell it by: then only its variable methods are known.
    init_file = sys.modules[mod.__name__.split(".")[0]].__file__
    if init_file is None:
        _keras_dirs = ()
    else:
        package = os.path.dirname(init_file)
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
    _code_kinds[id(code)] = (code, kind)
    return kind


def _learn_keras_path(hid: int, variable, tries: int) -> None:
    codes = _keras_codes if _keras_codes is not None else _keras_variable_codes()
    if not codes:
        return  # Keras is not loaded: there is no Keras variable to find
    path = _keras_path_on_stack(variable, sys._getframe(2), codes)  # the caller of variable_accessed
    if len(_paths) >= _PATHS_MAX:
        _paths.clear()
    if path.__class__ is str:
        _paths[hid] = path
    else:  # True: Keras code read it, so ask again next time
        _paths[hid] = tries + 1 if path else _PATH_TRIES


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
        entry = kinds.get(id(code))
        kind = entry[1] if entry is not None and entry[0] is code else _code_kind(code, codes)
        if kind == _KV:
            kv = f.f_locals.get("self")
            try:
                inner = getattr(kv, "_value", None) if kv is not None else None
                # a MirroredStrategy's replicas read the components of a distributed variable
                if inner is variable or any(c is variable for c in getattr(inner, "values", None) or ()):
                    path = kv.path
                    if isinstance(path, str) and path:
                        return path
            except Exception:  # noqa: BLE001 - a half-built variable: no path to learn
                pass
            return True
        if kind != _TF:
            return kind == _KERAS
        f = f.f_back
    return False


# --------------------------------------------------------------------------- TF API calls
#
# Keras layers and losses run their ops in a name scope, which groups them. TF's own API
# functions (tf.clip_by_norm, tf.nn.softmax_cross_entropy_with_logits) set no scope when
# executing eagerly, so the op of an unscoped op is grouped by the outermost public TF
# function on the stack between the user's code and the op: the call the user wrote.

_API_DEPTH = 48
_API_MODULES = ("math", "nn", "linalg", "signal", "image", "random", "sparse", "strings", "bitwise", "experimental")
_api_names: dict | None = None  # code object of a public TF function -> its public name
# id(code) -> (code, role): its public TF name, _TF_INNER (TensorFlow's, or this module's)
# or None (other code); keyed by id like _code_kinds (the walk looks up 10-20 codes per op)
_code_api: dict[int, tuple[types.CodeType, str | None]] = {}
_TF_INNER = ""
_keras_api_dirs: tuple = ()  # Keras's folders: its code lies between the user and TF


def _public_api_names() -> dict:
    """{code object: "tf.clip_by_norm"} for the public functions of tf and its main
    namespaces (decorators unwrapped; the shortest public name wins), and, once Keras is
    imported, {code: "keras.losses.binary_crossentropy"} for Keras's loss and metric
    functions. Built once (the Keras part when Keras first appears)."""
    global _api_names, _keras_api_dirs
    if _api_names is not None and (_keras_api_dirs or "keras.losses" not in sys.modules):
        return _api_names
    import inspect

    names: dict = dict(_api_names or {})

    def add(obj, full: str) -> None:
        if not callable(obj) or isinstance(obj, type):
            return
        try:
            code = getattr(inspect.unwrap(obj), "__code__", None)
        except Exception:  # noqa: BLE001 - an odd wrapper: not an API function we can see
            return
        if code is not None and (code not in names or len(full) < len(names[code])):
            names[code] = full

    def scan(mod, prefix: str, depth: int) -> None:
        for attr in dir(mod):
            if attr.startswith("_"):
                continue
            try:
                obj = getattr(mod, attr)
            except Exception:  # noqa: BLE001 - a lazy module that cannot load here
                continue
            if isinstance(obj, types.ModuleType):
                if depth == 0 and attr in _API_MODULES and obj.__name__.startswith("tensorflow"):
                    scan(obj, f"{prefix}{attr}.", 1)
                continue
            add(obj, prefix + attr)

    if _api_names is None:
        scan(tf, "tf.", 0)
    keras_losses = sys.modules.get("keras.losses")
    if keras_losses is not None:
        # named by the function's own name: keras.losses.mse is mean_squared_error
        for mod in (keras_losses, sys.modules.get("keras.metrics")):
            for attr in dir(mod) if mod is not None else ():
                obj = getattr(mod, attr, None)
                if isinstance(obj, types.FunctionType):
                    names.setdefault(getattr(inspect.unwrap(obj), "__code__", None), f"keras.losses.{obj.__name__}")
        names.pop(None, None)
        package = os.path.dirname(sys.modules["keras"].__file__ or keras_losses.__file__ or "")
        _keras_api_dirs = tuple({package + os.sep, os.path.realpath(package) + os.sep})
        _code_api.clear()  # Keras code walked before this was "the user's": look again
    _api_names = names
    return names


def _code_role(code):
    """What a frame's code is to an API-call walk (see _code_api), computed once per code."""
    names = _public_api_names()
    role = names.get(code)
    if role is None:
        file = code.co_filename
        keras = bool(_keras_api_dirs) and file.startswith(_keras_api_dirs)
        inner = keras or file == __file__ or file.startswith(_TF_DIRS)
        role = _TF_INNER if inner else None
    _code_api[id(code)] = (code, role)
    return role


def _outer_api_frame(f):
    """The outermost public TF function's frame above `f`, before the user's code (or None)."""
    outer = None
    roles = _code_api
    for _ in range(_API_DEPTH):
        if f is None:
            break
        code = f.f_code
        entry = roles.get(id(code))
        role = entry[1] if entry is not None and entry[0] is code else _code_role(code)
        if role is None:
            break  # the user's code (or Keras): the outermost API call is found
        if role:
            outer = f
        f = f.f_back
    return outer


def _api_call(rec: Recorder) -> tuple[str, int] | None:
    """(public name, call number) of the TF API call running the current op, or None."""
    outer = _outer_api_frame(sys._getframe(2))
    if outer is None:
        return None
    if outer is not rec._api_frame:
        rec._api_frame = outer
        rec._api_seq += 1
    # the walk returns only frames of named public functions (no assert: this runs in the op hook)
    return cast(str, _code_api[id(outer.f_code)][1]), rec._api_seq


_loss_codes: frozenset | None = None  # code objects of Keras's Loss.__call__ (and overrides)


def _keras_loss_codes() -> frozenset:
    """The code objects of ``keras.losses.Loss.__call__`` and its subclasses' overrides
    (CompileLoss): a loss object opens its name scope there. Empty until Keras is imported."""
    global _loss_codes
    if _loss_codes is not None:
        return _loss_codes
    base = getattr(sys.modules.get("keras.src.losses.loss"), "Loss", None)
    if not isinstance(base, type):
        return frozenset()
    codes, classes, seen = set(), [base], set()
    while classes:
        cls = classes.pop()
        if cls not in seen:
            seen.add(cls)
            classes.extend(cls.__subclasses__())
            code = getattr(vars(cls).get("__call__"), "__code__", None)
            if code is not None:
                codes.add(code)
    _loss_codes = frozenset(codes)
    return _loss_codes


def _loss_scopes_at(scope: str, f) -> list[str]:
    """The parts of name scope ``scope`` that Keras loss objects running at frame ``f``
    opened (``compile_loss``, ``compile_loss/mse``): a call-site fact, read once per scope."""
    codes = _keras_loss_codes()
    names = set()
    for _ in range(2 * _API_DEPTH):
        if f is None or not codes:
            break
        if f.f_code in codes:
            name = getattr(f.f_locals.get("self"), "name", None)
            if isinstance(name, str):
                names.add(name)
        f = f.f_back
    parts = scope.rstrip("/").split("/")
    return ["/".join(parts[: i + 1]) for i, part in enumerate(parts) if part in names]


def _passed_by_user(value, frame) -> bool:
    """Whether the user handed `value` to the TF function running at `frame` (not a NumPy
    array TF made for itself, such as the axes of tf.reduce_sum)."""
    outer = _outer_api_frame(frame)
    if outer is None:
        return True  # called from the user's code directly
    for v in outer.f_locals.values():
        if v is value or (v.__class__ in (list, tuple) and any(x is value for x in v)):
            return True
    return False


# --------------------------------------------------------------------------- values leaving TF
#
# .numpy(), float() and __array__ (every NumPy function, np.asarray, np.array) hand a
# tensor's value to Python, where the tape cannot follow it. Each such moment is kept
# with where it happened: the NumPy function (np.mean) or the user's own expression,
# so a diagnosis can name the call and how to stay in TensorFlow.

_NUMPY_DIRS = tuple({os.path.dirname(f) + os.sep for f in (np.__file__, os.path.realpath(np.__file__))})
_EXPORT_DEPTH = 24  # frames looked at above the patched method


@dataclass(frozen=True)
class Export:
    """One moment a tensor's value left TensorFlow while a tape recorded."""

    tensor: int  # tensor id
    how: str  # "numpy" (.numpy()), "float" (float()/int()), "array" (__array__: NumPy)
    numpy_function: str | None  # e.g. "mean" when np.mean did the conversion
    expression: str | None  # the user's code that did it, e.g. "np.mean(x2, axis=0)"
    file: str | None
    line: int | None
    after_uid: int  # tensors with a larger id were created after the value left


def _export_site(frame) -> tuple[str | None, str | None, str | None, int | None]:
    """(NumPy function, user expression, file, line) for an export seen in `frame`.

    Frames of TensorFlow and of this module are skipped; NumPy's own Python frames
    (np.mean is Python code that calls asanyarray) name the NumPy function; the first
    frame after them is the user's, and the instruction it is executing gives the exact
    expression (Python 3.11 keeps column positions for every instruction)."""
    numpy_function = None
    f = frame
    for _ in range(_EXPORT_DEPTH):
        if f is None:
            return numpy_function, None, None, None
        file = f.f_code.co_filename
        if file == __file__ or file.startswith(_TF_DIRS):
            f = f.f_back
            continue
        if file.startswith(_NUMPY_DIRS):
            numpy_function = f.f_code.co_name
            f = f.f_back
            continue
        return numpy_function, _expression_at(f), file, f.f_lineno
    return numpy_function, None, None, None


def _expression_at(frame) -> str | None:
    """The source text of the call `frame` is executing (None when unknown)."""
    import linecache

    try:
        positions = list(frame.f_code.co_positions())
        line, end_line, col, end_col = positions[frame.f_lasti // 2]
    except (AttributeError, IndexError, ValueError):  # Python < 3.11, or no positions
        return None
    if line is None or col is None or end_col is None:
        return None
    filename = frame.f_code.co_filename
    lines = [linecache.getline(filename, n, frame.f_globals) for n in range(line, (end_line or line) + 1)]
    if not lines or not lines[0]:
        return None
    if len(lines) == 1:
        text = lines[0][col:end_col]
    else:
        text = lines[0][col:] + "".join(lines[1:-1]) + lines[-1][:end_col]
    text = " ".join(text.split())
    return text or None


def _note_export(t, how: str, frame=None, numpy_function: str | None = None) -> None:
    recs = getattr(_local, "recorders", None)
    if recs and t.__class__ is _ops.EagerTensor:
        tid = t._id
        if any(tid not in r._exported for r in recs):
            fn, expr, file, line = _export_site(frame or sys._getframe(2))
            export = Export(tid, how, numpy_function or fn, expr, file, line, _ops.uid())
            for r in recs:
                r._exported.setdefault(tid, export)
                r._seen[tid] = t


def _array_function(self, func, types, args, kwargs):
    """NumPy's dispatch hook (NEP 18), defined on tensors only while a tape records.

    NumPy reads a tensor's memory through the buffer protocol, in C, where no Python
    hook sees it; but before a NumPy function (np.mean, np.concatenate ...) converts
    its arguments it asks them for ``__array_function__``. Here the tensors among the
    arguments are noted as leaving TensorFlow through that function, and the function
    runs on their NumPy views, exactly as it would have without the hook."""
    frame = sys._getframe(1)
    name = getattr(func, "__name__", None)
    for t in _tensors_in((args, kwargs)):
        _note_export(t, "array", frame, name)
    return func(*_as_numpy(args), **_as_numpy(kwargs))


def _tensors_in(x, depth: int = 3):
    if x.__class__ is _ops.EagerTensor:
        yield x
    elif depth and x.__class__ in (list, tuple):
        for y in x:
            yield from _tensors_in(y, depth - 1)
    elif depth and x.__class__ is dict:
        for y in x.values():
            yield from _tensors_in(y, depth - 1)


def _as_numpy(x, depth: int = 3):
    """x with every eager tensor replaced by the NumPy view NumPy itself would take."""
    if x.__class__ is _ops.EagerTensor:
        return np.asarray(x)
    if depth and x.__class__ in (list, tuple):
        return x.__class__(_as_numpy(y, depth - 1) for y in x)
    if depth and x.__class__ is dict:
        return {k: _as_numpy(v, depth - 1) for k, v in x.items()}
    return x


@dataclass(frozen=True)
class Reentry:
    """A NumPy value that became a tensor while a tape recorded."""

    tensor: int  # the new tensor's id
    expression: str | None  # the user's code where it happened
    file: str | None
    line: int | None
    view_of: int | None  # the tensor whose memory the NumPy array was a view of (np.asarray(t))


def _user_site(frame) -> tuple[str | None, str | None, int | None]:
    _, expr, file, line = _export_site(frame)
    return expr, file, line


def _view_of(value) -> int | None:
    """The eager tensor whose buffer a NumPy array views (np.asarray(t) and its slices)."""
    base = value
    for _ in range(8):
        base = getattr(base, "base", None)
        if base is None:
            return None
        obj: Any = getattr(base, "obj", None) if isinstance(base, memoryview) else None
        if obj.__class__ is _ops.EagerTensor:
            return obj._id
    return None


def _convert_to_eager_tensor(value, ctx, dtype=None):
    t = _tf_convert(value, ctx, dtype)
    recs = getattr(_local, "recorders", None)
    if (
        recs
        and value.__class__ in _NUMPY_TYPES
        and t.__class__ is _ops.EagerTensor
        and _passed_by_user(value, sys._getframe(1))
    ):
        expr, file, line = _user_site(sys._getframe(1))
        entry = Reentry(t._id, expr, file, line, _view_of(value))
        for r in recs:
            r._reentries.setdefault(t._id, entry)
            r._seen[t._id] = t
    return t


def _note_reentry_by_op(recs, before_uid: int, frame) -> None:
    """After an op call that took NumPy values: its inputs made during the call."""
    site = None
    for r in recs:
        if not r._raw:
            continue
        raw = r._raw[-1]
        for t in raw[_R_IN]:
            if t.__class__ is _ops.EagerTensor and t._id > before_uid:
                if site is None:
                    site = _user_site(frame)
                r._reentries.setdefault(t._id, Reentry(t._id, *site, None))
                r._seen[t._id] = t


def _numpy(self):
    _note_export(self, "numpy")
    return _tf_numpy(self)


def _float(self):
    _note_export(self, "float")
    return _tf_float(self)


def _array(self, *args, **kwargs):
    _note_export(self, "array")
    return _tf_array(self, *args, **kwargs)


# --------------------------------------------------------------------------- records


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
_R_TYPE, _R_IN, _R_ATTRS, _R_OUT, _R_SCOPE, _R_REC, _R_GEN, _R_BACKWARD, _R_API = range(9)


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
                    for inner in _wrapped_variables(kv):
                        paths.setdefault(inner.handle._id, kv.path)
                break
        return paths


def _wrapped_variables(kv) -> list:
    """The tf.Variable(s) inside a Keras-style variable (``.path`` str, ``.value`` variable):
    one, or one per replica when a tf.distribute strategy mirrors it."""
    if isinstance(kv, _rvo.BaseResourceVariable):
        return []  # a tf.Variable itself: its own name is used
    try:
        path, inner = kv.path, kv.value
    except Exception:  # noqa: BLE001
        return []
    if not isinstance(path, str):
        return []
    parts = [inner] if isinstance(inner, _rvo.BaseResourceVariable) else list(getattr(inner, "values", None) or ())
    return [v for v in parts if isinstance(v, _rvo.BaseResourceVariable) and type(v.handle) is _ops.EagerTensor]


class GraphModeError(RuntimeError):
    """The tape ran while TensorFlow was building a graph, not executing ops."""


GRAPH_MODE_MESSAGE = (
    "This tape recorded inside a tf.function (or a Keras train_step compiled by model.fit), where "
    "TensorFlow builds a graph instead of running ops one by one; tapeviz sees eager execution only. "
    "For a debugging run, use model.compile(..., run_eagerly=True), or call "
    "tf.config.run_functions_eagerly(True) first, or call your step function without @tf.function."
)


class Capture:
    """Everything one recording saw, as plain records; graph.py turns it into a TapeGraph.

    ``ops`` are OpRecords whose tensors are integer ids. The other facts are read
    through methods (dtype, shape, value view, Python name of a tensor; the variables;
    what was watched or exported), so no other module needs TensorFlow's internals.
    The TF objects themselves stay here: the replay needs them, and ``tensor(id)``
    hands one to whoever wants the public object (tests, ``tape.gradient`` calls).
    """

    def __init__(
        self,
        *,
        raw: list,
        seen: dict,
        variables: dict,
        access_paths: dict,
        watched_variables: tuple,
        watched: dict,
        exported: dict,
        reentries: dict,
        start_uid: int,
        names: dict,
        persistent: bool,
        thread_id: int,
        tape_ref: Any,
        final_generation: int,
        watch_log: list,
        watch_accessed_variables: bool,
        reset_count: int,
        frame: FrameInfo | None,
        side_state: dict,
        graph_mode: bool,
        loss_scopes: frozenset = frozenset(),
    ):
        self._raw = raw
        self._seen = seen  # tensor id -> EagerTensor (every tensor the records name)
        self._variables = variables  # handle id -> tf.Variable
        self._access_paths = access_paths  # handle id -> Keras path, learned while it was read
        self._watched_variables = watched_variables
        self._watched = watched  # tensor id -> tensor passed to tape.watch
        self.exported: dict[int, Export] = exported
        self.reentries: dict[int, Reentry] = reentries  # tensors made from NumPy values in the block
        self.start_uid = start_uid
        self._names = names  # id(python object) -> name in the user's frame
        self.persistent = persistent
        self.thread_id = thread_id
        self.tape_ref = tape_ref
        self.final_generation = final_generation
        self._watch_log = watch_log
        self.watch_accessed_variables = watch_accessed_variables
        self.reset_count = reset_count
        self._frame = frame
        self._side_state = side_state  # op index -> state its gradient function consumes (py_function)
        self.graph_mode = graph_mode
        self.loss_scopes = loss_scopes  # name scopes a Keras loss object opened ("binary_crossentropy")
        self._ops: list[OpRecord] | None = None
        self._backward: dict[int, Callable] = {}
        self._keras_paths: dict | None = None
        self._facts: dict[int, TensorFacts] = {}
        self.variables: dict[int, VariableRecord] = {}
        self.watched_variable_ids: set[int] = set()
        self.watch_joined: dict[int, int] = {}
        self.tape_watched: set[int] = set()
        self.settled = False

    # -- records ---------------------------------------------------------------------
    @property
    def ops(self) -> list[OpRecord]:
        """The recorded ops as OpRecords (built from the raw log on first use)."""
        if self._ops is None:
            self._ops = self._materialize()
            self._raw = []
        return self._ops

    def _materialize(self) -> list[OpRecord]:
        ops = []
        seen = self._seen
        backward = self._backward
        for i, (op_type, inputs, attrs, outputs, scope, rec, gen, bw, api) in enumerate(self._raw):
            if type(op_type) is bytes:
                op_type = op_type.decode()
            if scope.endswith("/"):
                scope = scope[:-1]
            in_ids = []
            for t in inputs:
                tid = t._id
                seen[tid] = t
                in_ids.append(tid)
            out_ids = []
            for t in outputs or ():
                if t is None:  # an output TF did not hand over: nothing to name
                    continue
                tid = t._id
                seen[tid] = t
                out_ids.append(tid)
            if bw is not None:
                backward[i] = bw
            ops.append(
                OpRecord(
                    i,
                    op_type,
                    tuple(in_ids),
                    tuple(attrs) if attrs else (),
                    tuple(out_ids),
                    scope,
                    bool(rec),
                    gen,
                    custom=bw is not None,
                    api=api[0] if api else None,
                    api_call=api[1] if api else 0,
                )
            )
        return ops

    # -- tensors ---------------------------------------------------------------------
    def facts(self, tid: int) -> TensorFacts:
        """dtype name and shape of tensor `tid`."""
        got = self._facts.get(tid)
        if got is None:
            t = self._seen[tid]
            got = self._facts[tid] = TensorFacts(t.dtype.name, tuple(t.shape))
        return got

    def value_view(self, tid: int) -> np.ndarray | None:
        """The tensor's value as a NumPy view of its buffer (no copy); None for resource
        and variant tensors or a device that cannot be read."""
        t = self._seen.get(tid)
        if t is None or self.facts(tid).dtype in ("resource", "variant"):
            return None
        try:
            return np.asarray(t._numpy())
        except Exception:  # noqa: BLE001 - e.g. a tensor on a device we cannot copy from
            return None

    def tensor(self, tid: int):
        """The EagerTensor with this id (the public object), e.g. for tape.gradient."""
        return self._seen[tid]

    def python_name(self, tid: int) -> str | None:
        """The name the user bound tensor `tid` to in the block's frame, if any."""
        t = self._seen.get(tid)
        return None if t is None else self._names.get(id(t))

    def created_in_block(self, tid: int) -> bool:
        """True for tensors made while the tape recorded (constants inside the block)."""
        return tid > self.start_uid

    def is_watched_tensor(self, tid: int) -> bool:
        """A tensor passed to tape.watch (before or after a reset)."""
        return tid in self._watched

    def handle_of(self, tid: int) -> int | None:
        """The variable whose resource handle tensor `tid` is, if it is one."""
        return tid if tid in self._variables else None

    # -- user objects ----------------------------------------------------------------
    def key_of(self, obj) -> int | None:
        """The id the records use for a user object: a variable's handle id, a tensor's
        id; None for anything else. A Keras variable counts as the tf.Variable inside it."""
        return key_of(obj)

    def name_of_object(self, obj) -> str | None:
        """The Python name the user bound `obj` to in the block's frame."""
        return self._names.get(id(obj))

    # -- variables -------------------------------------------------------------------
    def keras_path(self, var) -> str | None:
        """The Keras path of the variable wrapping tf.Variable `var`: seen while the Keras
        variable read it in the block (wherever the model lives: an attribute, a dict, a
        closure), else found through a model or layer in the user's frame."""
        hid = var.handle._id
        path = self._access_paths.get(hid)
        if path is not None:
            return path
        if self._keras_paths is None:
            self._keras_paths = self._frame.keras_paths() if self._frame is not None else {}
        return self._keras_paths.get(hid)

    def _variable_name(self, var) -> str:
        """The Python name bound to it, else the Keras path of the Keras variable wrapping
        it, else the Python name bound to that Keras variable, else its TF name."""
        name = self._names.get(id(var)) or self.keras_path(var)
        if not name and self._frame is not None:
            name = self._frame.variable_names.get(var.handle._id)
        return name or var.name.split(":")[0]

    def _variable_record(self, hid: int) -> VariableRecord:
        var = self._variables[hid]
        return VariableRecord(hid, self._variable_name(var), self.keras_path(var), bool(var.trainable), var)

    def variable_reads(self, op: OpRecord) -> int | None:
        """The variable handle a ReadVariableOp read, if it is a known variable."""
        if op.op_type == "ReadVariableOp" and op.inputs and op.inputs[0] in self._variables:
            return op.inputs[0]
        return None

    def read_before_reset(self, op: OpRecord) -> bool:
        return op.tape_recording and 0 <= self.final_generation and op.generation < self.final_generation

    # -- after the block -------------------------------------------------------------
    def settle(self) -> Capture:
        """Decide which ops this tape recorded (TF's ShouldRecord rule, replayed).

        An op is on the tape when the tape was live and recording and one of its inputs
        was on the tape: a watched variable's handle, a watched tensor, or an output of
        an op already on the tape. Done once, after the block, to keep recording cheap.
        """
        if self.settled:
            return self
        ops = self.ops
        self.watched_variable_ids = {v.handle._id for v in self._watched_variables}
        for v in self._watched_variables:
            self._variables.setdefault(v.handle._id, v)
            self._seen.setdefault(v.handle._id, v.handle)
        final = self.final_generation
        # TF decides at each op whether to record it: something watched only later (or
        # only before tape.reset()) does not make an op recorded.
        joined: dict[int, int] = {}
        for key, gen, at in self._watch_log:
            if gen == final:
                joined.setdefault(key, at)
        for v in self._watched_variables:
            hid = v.handle._id
            if hid not in joined or (self.watch_accessed_variables and v.trainable):
                joined[hid] = 0  # watched on access, before its first read
        pending = sorted((at, key) for key, at in joined.items())
        on_tape: set[int] = set()
        p = 0
        trainable = self._trainable_id
        for op in ops:
            while p < len(pending) and pending[p][0] <= op.index:
                on_tape.add(pending[p][1])
                p += 1
            if final < 0 or not op.tape_recording or op.generation != final:
                continue
            if any(t in on_tape and trainable(t) for t in op.inputs):
                op.recorded = True
                on_tape.update(op.outputs)
        # At gradient time, TF keeps what reaches a tensor the tape knows in the end
        # (watched at any point of the final tape, or made by a recorded op).
        known = on_tape | set(joined)
        for op in ops:
            op.inputs_on_tape = tuple(t in known and trainable(t) for t in op.inputs)
        self.watch_joined = joined
        self.tape_watched = {tid for tid in self._watched if tid in joined}
        self.variables = {hid: self._variable_record(hid) for hid in self._variables}
        self.settled = True
        return self

    def _trainable_id(self, tid: int) -> bool:
        return is_trainable(self.facts(tid).dtype)

    # -- the backward pass -----------------------------------------------------------
    def replay(
        self, target_ids: Sequence[int], source_ids: Sequence[int], output_gradients: Sequence[Any] | None
    ) -> tuple[list, list[BackwardCall]]:
        """TF's own backprop over the recorded ops: d targets / d sources (TF values, in
        source order) and every backward function call in the order TF made it."""
        watched = [self._seen[h] for h in self.watched_variable_ids]
        watched += [self._watched[tid] for tid in self.tape_watched]  # a watch erased by reset() does not count
        return replay_backward(
            self, watched, [self._seen[t] for t in target_ids], [self._seen[s] for s in source_ids], output_gradients
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


def tape_is_recording(tape: tf.GradientTape) -> bool:
    """Whether we are inside `tape`'s block (tv.record must be entered there)."""
    return bool(tape._recording) and tape._tape is not None


# Registered gradient functions that consume state their forward op left behind, so a
# second backward pass over the same op fails unless the state is kept and put back.
# EagerPyFunc (tf.py_function) pops the tape its Python body was recorded on from
# script_ops.tape_cache, keyed by the op's "token" attribute.
_SIDE_STATE_OPS = frozenset({b"EagerPyFunc", "EagerPyFunc"})


def _attr(attrs, name):
    for i in range(0, len(attrs) - 1, 2):
        if attrs[i] == name:
            return attrs[i + 1]
    return None


def _keep_pyfunc_state(attrs) -> tuple | None:
    """(cache key, tape_cache entry) of a py_function that just ran, or None.

    The entry's tape is persistent when the function ran on this recording thread
    (see _ScriptBackprop); an entry whose tape is not cannot be replayed without
    using it up, so it is kept as unreplayable."""
    token = _attr(attrs, "token")
    if token is None:
        return None
    key = token if isinstance(token, bytes) else str(token).encode()
    entry = _script_ops.tape_cache.get(key)
    if entry is None:
        return None
    return (key, entry if getattr(entry[0], "_persistent", False) else None)


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
        self._exported: dict[int, Export] = {}
        self._reentries: dict[int, Reentry] = {}
        self._seen: dict[int, Any] = {}
        self._watched: dict[int, Any] = {}
        self._side_state: dict[int, Any] = {}
        self._generations: list[Any] = []
        self._live: Any = _UNSET  # the tape object of generation self._gen
        self._gen = -1
        self._watch_log: list = []
        self._started = False
        self._graph_mode = False
        self._api_frame = None  # the frame of the TF API call the last unscoped op ran in
        self._api_seq = 0
        self._scopes_seen: set[str] = set()
        self._loss_scopes: set[str] = set()  # name scopes a Keras loss object opened
        self.capture: Capture | None = None

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        if self._started:
            raise RuntimeError("This tapeviz recorder is already recording; use a new one.")
        self._thread_id = _get_ident()
        self._started = True
        # Inside a tf.function the block is traced, not executed: there is nothing to
        # record, so no hook is installed and flow() explains why.
        self._graph_mode = not _context.executing_eagerly()
        if self._graph_mode:
            return
        self._start_uid = _ops.uid()
        self._tld = _context.context()._thread_local_data  # name scope of this thread
        self._hook = self._make_callback()
        _Patches.acquire()
        try:
            _active().append(self)
            # Op callbacks are per thread: ops of other threads never reach this one.
            _op_callbacks.add_op_callback(self._hook)
        except BaseException:
            self._detach()
            self._started = False
            raise

    def _detach(self) -> None:
        recs = _active()
        if self in recs:
            recs.remove(self)
        try:
            _op_callbacks.remove_op_callback(self._hook)
        except (KeyError, ValueError):
            pass
        _Patches.release()

    def stop(self, frame=None) -> Capture:
        """Remove every hook, then settle which ops this tape recorded."""
        if not self._started:
            raise RuntimeError("This tapeviz recorder was never started.")
        self._started = False
        if self._graph_mode:
            self.capture = self._empty_capture()
            return self.capture
        self._detach()
        self._api_frame = None  # a frame keeps its locals alive
        self.capture = self._finish(frame)
        return self.capture

    def note_watch(self, tensors) -> None:
        """Called from GradientTape.watch: remember tensors the user asked to watch."""
        if self._graph_mode:
            return
        gen = self._generation()
        for t in tf.nest.flatten(tensors):
            if isinstance(t, tf.Variable):
                # the tape lists its variables itself; only the moment is noted here
                self._watch_log.append((t.handle._id, gen, len(self._raw)))
            elif isinstance(t, _ops.EagerTensor):
                self._watched[t._id] = t
                self._seen[t._id] = t
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
        side_ops, side_state, api_call = _SIDE_STATE_OPS, self._side_state, _api_call
        scopes_seen, loss_scopes = self._scopes_seen, self._loss_scopes
        thread, get_ident = self._thread_id, _get_ident

        def callback(op_type, inputs, attrs, outputs, op_name=None, graph=None):
            if graph is not None:  # graph construction (tf.function tracing) is not an execution
                return None
            # Callbacks are per thread, except where TF shares one list between threads
            # (MirroredStrategy's replica threads run with their caller's list): only
            # the recording thread's own ops are this tape's.
            if get_ident() != thread:
                return None
            if tape._tape is not rec._live:
                rec._generation()
            if outputs.__class__ is list:
                # TF hands multi-output ops (Unpack, Split) a list that its caller may
                # empty later (Keras's recurrent loop sets the entries to None): keep a
                # snapshot of what the op returned.
                outputs = tuple(outputs)
            if op_type in side_ops:
                side_state[len(rec._raw)] = _keep_pyfunc_state(attrs)
            scope = tld.scope_name
            if scope and scope not in scopes_seen:
                scopes_seen.add(scope)
                loss_scopes.update(_loss_scopes_at(scope, sys._getframe(1)))
            append(
                (
                    op_type,
                    inputs,
                    attrs,
                    outputs,
                    scope,
                    tape._recording and not is_stopped(),
                    rec._gen,
                    None,
                    None if scope else api_call(rec),
                )
            )
            return None

        return callback

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
            call_out = [o._id for o in (r[_R_OUT] or ()) if o is not None]
            # The forward function may return extra outputs (intermediates kept for its
            # backward pass); the tape records only the leading, user-visible ones.
            if r[_R_BACKWARD] is None and rtype == op_type and call_out[: len(out_ids)] == out_ids:
                raw[i] = (op_type, inputs, r[_R_ATTRS], outputs, r[_R_SCOPE], recording, gen, backward, None)
                return
        raw.append((op_type, inputs, (), outputs, self._tld.scope_name, recording, gen, backward, None))

    # -- after the block -------------------------------------------------------------
    def _empty_capture(self) -> Capture:
        tape = self.tape
        return Capture(
            raw=[],
            seen={},
            variables={},
            access_paths={},
            watched_variables=(),
            watched={},
            exported={},
            reentries={},
            start_uid=0,
            names={},
            persistent=bool(tape._persistent),
            thread_id=self._thread_id,
            tape_ref=weakref.ref(tape),
            final_generation=-1,
            watch_log=[],
            watch_accessed_variables=bool(tape._watch_accessed_variables),
            reset_count=0,
            frame=None,
            side_state={},
            graph_mode=True,
        )

    def _finish(self, frame) -> Capture:
        """Snapshot the tape's state now; the per-op bookkeeping waits for Capture.settle()."""
        tape = self.tape
        final_tape = tape._tape
        # Which generation is "the" tape: the last live one (gradient() on a
        # non-persistent tape sets _tape to None, reset() starts a new one).
        if final_tape is not None:
            final_gen = self._generation()  # also right after a reset() that no op followed
        else:
            final_gen = next(
                (i for i in range(len(self._generations) - 1, -1, -1) if self._generations[i] is not None), -1
            )
        watched_vars = final_tape.watched_variables() if final_tape is not None else tape._watched_variables
        info = _scan_frame(frame) if frame is not None else None
        return Capture(
            raw=self._raw,
            seen=self._seen,
            variables=self._variables,
            access_paths=keras_paths_of(self._variables),
            watched_variables=tuple(watched_vars),
            watched=self._watched,
            exported=self._exported,
            reentries=self._reentries,
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
            side_state={i: s for i, s in self._side_state.items() if s is not None},
            graph_mode=False,
            loss_scopes=frozenset(self._loss_scopes),
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
            for inner in _wrapped_variables(v):
                variable_names.setdefault(inner.handle._id, k)
    return FrameInfo(names, variable_names, holders)


def hooks_installed() -> bool:
    """True while any tapeviz patch is installed (tests check it is gone afterwards)."""
    return _Patches.installed() or bool(getattr(_local, "recorders", None))


def callbacks_on_this_thread() -> int:
    return len(_context.context().op_callbacks)


# --------------------------------------------------------------------------- replay


@dataclass
class BackwardCall:
    """One call of an op's gradient function during the replayed backprop."""

    op: OpRecord
    out_grads: list  # TF values arriving at the op's outputs
    in_grads: list  # TF values (or None) it returned per input


def replay_backward(
    cap: Capture, watched: list, targets: list, sources: list, output_gradients: Sequence[Any] | None
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


def _replay(cap: Capture, watched, targets, sources, output_gradients):
    calls: list[BackwardCall] = []
    seen = cap._seen
    tape = _tape_lib.push_new_tape(persistent=True, watch_accessed_variables=False)
    try:
        for t in watched:
            _tape_lib.watch(tape, t)
        for op in cap.ops:
            if op.recorded:
                _record.record_operation(
                    op.op_type,
                    [seen[o] for o in op.outputs],
                    [seen[i] for i in op.inputs],
                    _backward_fn(cap, op, calls),
                )
    finally:
        _tape_lib.pop_tape(tape)
    grads = pywrap_tfe.TFE_Py_TapeGradient(
        tape._tape, list(targets), list(sources), output_gradients, list(sources), "none"
    )
    return grads, calls


def _backward_fn(cap: Capture, op: OpRecord, calls: list) -> Callable:
    # TF skips the inputs that were not on the tape when the op ran.
    skip = tuple(i for i, on in enumerate(op.inputs_on_tape) if not on)
    custom = cap._backward.get(op.index)
    side = cap._side_state.get(op.index)
    seen = cap._seen

    if custom is not None and _runs_across_replicas(custom):
        raise ReplayError(
            f"tapeviz cannot replay the gradient of tf.distribute's all_reduce ({op.op_type}, op {op.index}): it is "
            "itself an all-reduce that every replica must run at the same moment, so replaying it on one replica "
            "would wait forever or fail. Record the replica's computation without ReplicaContext.all_reduce inside "
            "the tape (reduce the gradients afterwards, as optimizer.apply_gradients does), or run the step without "
            "the strategy to look at it."
        )

    def backward(*out_grads):
        if custom is not None:  # the Python function TF's tape was given
            grads = custom(*out_grads)
        else:
            with _restored(side, op):
                grads = _backprop._gradient_function(
                    op.op_type,
                    op.attrs,
                    len(op.inputs),
                    [seen[i] for i in op.inputs],
                    [seen[o] for o in op.outputs],
                    list(out_grads),
                    skip,
                    op.scope,
                )
        grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
        calls.append(BackwardCall(op, list(out_grads), grads))
        return grads

    return backward


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

"""The hook: the few narrow patches of TensorFlow that make invisible things visible.

While a tape records, an op callback (see recorder.py) logs every eagerly executed op.
These patches show what the callback alone cannot see:

* TF's C++ fast path reads a ``tf.Variable`` passed straight to an op
  (``tf.stop_gradient(v)``, the second ``v`` of ``v * v``) without calling any Python
  callback. While *this thread* records, variable arguments are routed through
  ``v.value()``, which performs the very same ``ReadVariableOp`` in Python where we see it
  (variables inside list arguments, as in ``tf.concat([v, w], 0)``, too).
* ``numpy()`` / ``float()`` / ``__array__`` on a tensor, and NumPy values converted into
  tensors, are handed to numpy_exports.py, so a value that leaves TensorFlow and comes back
  as a constant can be named as the reason a gradient stopped.
* ``resource_variable_ops.variable_accessed`` (called on every read, ``tf.gather`` on a
  variable, lazy read after an assign) maps resource handles to their variables (and to
  the path of the Keras variable doing the read, if one is: callsites.py), and
  ``record.record_operation`` shows what ``tf.function`` calls and ``tf.custom_gradient``
  put on the tape.

The patches act only on threads that are recording; every other thread goes straight
to TensorFlow's originals. They are installed with the first active recorder and
removed with the last one, on every exit path.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import threading
from collections.abc import Callable
from typing import Any

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

from .callsites import learn_keras_path, passed_by_user
from .derivatives import METHODS as _DERIVATIVE_METHODS
from .derivatives import call_site
from .hookstate import NUMPY_TYPES as _NUMPY_TYPES
from .hookstate import TF_DIRS
from .hookstate import local as _local
from .numpy_exports import array_function, note_export, note_reentry, note_reentry_by_op

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
    (_ops, "_gradient_registry"),
    (_rvo, "variable_accessed"),
    (_rvo, "BaseResourceVariable"),
    (_ops._EagerTensorBase, "numpy"),
    (_constant_op, "convert_to_eager_tensor"),
    (_script_ops, "tape_cache"),
    (_script_ops, "backprop"),
    *((_backprop.GradientTape, m) for m in _DERIVATIVE_METHODS),
)
_missing = [f"{getattr(m, '__name__', m)}.{a}" for m, a in _REQUIRED if not hasattr(m, a)]
if _missing:  # pragma: no cover - depends on the installed TF
    raise ImportError(
        f"tapeviz cannot hook into TensorFlow {tf.__version__}: missing {', '.join(_missing)}. "
        "Install a supported version: pip install 'tensorflow-cpu>=2.16,<2.22'."
    )

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

# Argument types of TFE_Py_FastPathExecute known to need no rerouting (learned as they
# are seen); _VAR_TYPES are tf.Variable classes the C++ fast path would read invisibly.
_PLAIN_TYPES: set = {type(None), str, bytes, int, float, bool, _ops.EagerTensor, type(_context.context())}
_VAR_TYPES: set = set()

_ABSENT = object()


class Patches:
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
                    **{f"tape.{m}": _backprop.GradientTape.__dict__[m] for m in _DERIVATIVE_METHODS},
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
                for m in _DERIVATIVE_METHODS:
                    setattr(_backprop.GradientTape, m, _differentiating_cached(m, o[f"tape.{m}"]))
                base.numpy = _numpy
                base.__float__ = _float
                base.__array__ = _array
                base.__array_function__ = array_function
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
                for m in _DERIVATIVE_METHODS:
                    setattr(_backprop.GradientTape, m, o[f"tape.{m}"])
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


#: method -> (the original it wraps, the wrapper): a tape's enter installs the same
#: wrappers as the last one did (building them with functools.wraps cost ~5 us a tape).
_derivative_wrappers: dict[str, tuple[Callable, Callable]] = {}


def _differentiating_cached(method: str, original: Callable) -> Callable:
    """:func:`_differentiating`, built once per method and original (the original is
    compared by identity: a method patched by someone else gets a fresh wrapper)."""
    hit = _derivative_wrappers.get(method)
    if hit is None or hit[0] is not original:
        hit = _derivative_wrappers[method] = (original, _differentiating(method, original))
    return hit[1]


def _differentiating(method: str, original: Callable) -> Callable:
    """``tf.GradientTape.<method>`` as recording threads see it: the same call, with the
    range of ops it runs marked as one derivative group in every recorder on the thread
    (derivatives.py). Nothing else changes: same arguments, same result, same exceptions."""

    @functools.wraps(original)
    def differentiate(self, *args, **kwargs):
        recs = getattr(_local, "recorders", None)
        if not recs or not _context.executing_eagerly():
            return original(self, *args, **kwargs)
        opened = _open_derivatives(recs, method, sys._getframe(1), args, kwargs)
        result = _ABSENT
        try:
            result = original(self, *args, **kwargs)
        finally:
            _close_derivatives(opened, result)
        return result

    return differentiate


def _open_derivatives(recs, method: str, frame, args, kwargs) -> list:
    try:
        file = frame.f_code.co_filename
        outer = next((r.open_derivative for r in recs if r.open_derivative is not None), None)
        if outer is not None and file.startswith(TF_DIRS):
            # TF's own call inside the user's (tape.jacobian's loop of tape.gradient): what the
            # user wrote is the outer call's target and sources, not TF's local names
            site = dataclasses.replace(outer.site, assigned=None)
        else:
            site = call_site(file, frame.f_lineno, method, frame.f_globals)
        target = args[0] if args else kwargs.get("target")
        sources = args[1] if len(args) > 1 else kwargs.get("sources", kwargs.get("source"))
        targets, source_ids = _ids_of(target), _ids_of(sources)
        here = threading.get_ident()
        return [(r, r.open_derivative_call(method, site, targets, source_ids)) for r in recs if r.thread_id == here]
    except Exception:  # noqa: BLE001 - naming a group must never break the user's call
        return []


def _close_derivatives(opened: list, result) -> None:
    for r, record in opened:
        try:
            r.close_derivative_call(record, () if result is _ABSENT or result is None else _ids_of(result))
        except Exception:  # noqa: BLE001
            pass


def _ids_of(x) -> tuple:
    """Tensor ids in a nest (a variable: its handle's), for derivative records."""
    out = []
    for t in tf.nest.flatten(x, expand_composites=True):
        if isinstance(t, _ops.EagerTensor):
            out.append(t._id)
            continue
        inner = t if isinstance(t, _rvo.BaseResourceVariable) else getattr(t, "value", None)  # Keras wraps one
        if isinstance(inner, _rvo.BaseResourceVariable) and type(inner.handle) is _ops.EagerTensor:
            out.append(inner.handle._id)
    return tuple(out)


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
    if any(a.__class__ in _NUMPY_TYPES and passed_by_user(a, frame) for a in args):
        # A NumPy value of the user's enters TF here; C converts it into the op's input
        # tensors, so the inputs made during this call (ids above the counter now) came from NumPy.
        before = _ops.uid()
        out = _tf_fast(*[_route(a) for a in args])
        note_reentry_by_op(recs, before, frame)
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
            r.note_record(op_type, output_tensors, input_tensors, backward_function)
    return out


def _record_operation_backprop_only(op_type, output_tensors, input_tensors, backward_function):
    out = _tf_record_bp(op_type, output_tensors, input_tensors, backward_function)
    recs = getattr(_local, "recorders", None)
    if recs:
        for r in recs:
            r.note_record(op_type, output_tensors, input_tensors, backward_function)
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
                r.variables[hid] = variable
            learn_keras_path(hid, variable)
    return _tf_accessed(variable)


def _numpy(self):
    note_export(self, "numpy")
    return _tf_numpy(self)


def _float(self):
    note_export(self, "float")
    return _tf_float(self)


def _array(self, *args, **kwargs):
    note_export(self, "array")
    return _tf_array(self, *args, **kwargs)


def _convert_to_eager_tensor(value, ctx, dtype=None):
    t = _tf_convert(value, ctx, dtype)
    recs = getattr(_local, "recorders", None)
    if recs and value.__class__ in _NUMPY_TYPES and t.__class__ is _ops.EagerTensor:
        note_reentry(recs, value, t, sys._getframe(1))
    return t


def hooks_installed() -> bool:
    """True while any tapeviz patch is installed (tests check it is gone afterwards)."""
    return Patches.installed() or bool(getattr(_local, "recorders", None))


def callbacks_on_this_thread() -> int:
    return len(_context.context().op_callbacks)

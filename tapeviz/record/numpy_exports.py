"""Values leaving TensorFlow, and NumPy values coming back, while a tape records.

.numpy(), float() and __array__ (every NumPy function, np.asarray, np.array) hand a
tensor's value to Python, where the tape cannot follow it. Each such moment is kept
with where it happened: the NumPy function (np.mean) or the user's own expression,
so a diagnosis can name the call and how to stay in TensorFlow. A NumPy value that
becomes a tensor again is kept too (a Reentry), with the tensor it was a view of.
The patches in hooks.py call in here; the recorders of this thread keep what is found.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
from tensorflow.python.framework import ops as _ops

from .callsites import passed_by_user
from .hookstate import NUMPY_DIRS as _NUMPY_DIRS
from .hookstate import OWN_FILES as _OWN_FILES
from .hookstate import TF_DIRS as _TF_DIRS
from .hookstate import local as _local
from .records import R_IN

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

    Frames of TensorFlow and of the hooks are skipped; NumPy's own Python frames
    (np.mean is Python code that calls asanyarray) name the NumPy function; the first
    frame after them is the user's, and the instruction it is executing gives the exact
    expression (Python 3.11 keeps column positions for every instruction)."""
    numpy_function = None
    f = frame
    for _ in range(_EXPORT_DEPTH):
        if f is None:
            return numpy_function, None, None, None
        file = f.f_code.co_filename
        if file in _OWN_FILES or file.startswith(_TF_DIRS):
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


def note_export(t, how: str, frame=None, numpy_function: str | None = None) -> None:
    recs = getattr(_local, "recorders", None)
    if recs and t.__class__ is _ops.EagerTensor:
        tid = t._id
        if any(tid not in r.exported for r in recs):
            fn, expr, file, line = _export_site(frame or sys._getframe(2))
            export = Export(tid, how, numpy_function or fn, expr, file, line, _ops.uid())
            for r in recs:
                r.exported.setdefault(tid, export)
                r.seen[tid] = t


def array_function(self, func, types, args, kwargs):
    """NumPy's dispatch hook (NEP 18), defined on tensors only while a tape records.

    NumPy reads a tensor's memory through the buffer protocol, in C, where no Python
    hook sees it; but before a NumPy function (np.mean, np.concatenate ...) converts
    its arguments it asks them for ``__array_function__``. Here the tensors among the
    arguments are noted as leaving TensorFlow through that function, and the function
    runs on their NumPy views, exactly as it would have without the hook."""
    frame = sys._getframe(1)
    name = getattr(func, "__name__", None)
    for t in _tensors_in((args, kwargs)):
        note_export(t, "array", frame, name)
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


def note_reentry(recs, value, t, frame) -> None:
    """NumPy value `value` became eager tensor `t` in TF's conversion, called from `frame`."""
    if passed_by_user(value, frame):
        expr, file, line = _user_site(frame)
        entry = Reentry(t._id, expr, file, line, _view_of(value))
        for r in recs:
            r.reentries.setdefault(t._id, entry)
            r.seen[t._id] = t


def note_reentry_by_op(recs, before_uid: int, frame) -> None:
    """After an op call that took NumPy values: its inputs made during the call."""
    site = None
    for r in recs:
        if not r.raw:
            continue
        raw = r.raw[-1]
        for t in raw[R_IN]:
            if t.__class__ is _ops.EagerTensor and t._id > before_uid:
                if site is None:
                    site = _user_site(frame)
                r.reentries.setdefault(t._id, Reentry(t._id, *site, None))
                r.seen[t._id] = t

"""Variables a `with` block names but never reads: the branch that did not run.

``if x > 0: result = v0 else: result = v1 ** 2`` reads only one of v0, v1 while the
tape records; the other is exactly what a student asks about ("why is d result / d v1
None?"). The tape never sees it, so the op log cannot show it. The block's own code
can: the bytecode between the ``with``'s ``__enter__`` and ``__exit__`` calls loads it
by name. This module reads those names (``dis``, no TensorFlow internals) and returns
the float variables they are bound to in the frame when the block ends.
"""

from __future__ import annotations

import dis
import types
from types import CodeType, FrameType
from typing import Any

import tensorflow as tf
from tensorflow.python.framework import ops as _ops

from .bounded_cache import BoundedCache

__all__ = ["named_in_block"]

_LOADS = frozenset({"LOAD_NAME", "LOAD_FAST", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_FAST_CHECK"})


#: (id(code), start, stop) -> (code, the names). Per process: a training loop's block is the
#: same code between the same offsets every step, and reading its bytecode with ``dis``
#: costs ~1.7 us per instruction of the whole code object (64 us for bench_core's
#: 37-instruction step, a third of a micro-program's plain step; a memo hit: 0.12 us). Keyed by id because CPython
#: does not cache a code object's hash; the code is kept in the value, so its id cannot
#: be reused meanwhile (a notebook makes a new code object per cell run: the memo is
#: emptied when it reaches _MEMO_MAX entries, so it keeps at most that many alive).
_MEMO_MAX = 4096
_names_memo: BoundedCache[tuple[int, int, int], tuple[CodeType, tuple[str, ...]]] = BoundedCache(
    _MEMO_MAX, start_over=True
)


def _names_between(code: CodeType, start: int, stop: int) -> tuple[str, ...]:
    """Names loaded by the instructions strictly between two offsets, in order, once each."""
    key = (id(code), start, stop)
    hit = _names_memo.get(key)
    if hit is not None:
        return hit[1]
    out: dict[str, None] = {}
    for ins in dis.get_instructions(code):
        if start < ins.offset < stop and ins.opname in _LOADS and isinstance(ins.argval, str):
            out.setdefault(ins.argval, None)
    names = tuple(out)
    _names_memo.put(key, (code, names))
    return names


# Classes no tf.Variable is an instance of: what a block mostly names (its tensors,
# numbers, functions, modules). tf.Variable's isinstance goes through ABCMeta in Python
# (~0.4 us a name); these skip it, and go on to the Keras-variable test as any value.
_NOT_VARIABLES = frozenset(
    {
        _ops.EagerTensor,
        int,
        float,
        bool,
        str,
        bytes,
        type(None),
        list,
        tuple,
        dict,
        types.FunctionType,
        types.BuiltinFunctionType,
        types.MethodType,
        types.ModuleType,
    }
)


def _float_variables(value: Any) -> list[tf.Variable]:
    """The trainable float tf.Variable(s) a value is: a tf.Variable, or the one a Keras
    variable (``.path`` and ``.value``) wraps; [] for anything else."""
    if type(value) in _NOT_VARIABLES or not isinstance(value, tf.Variable):
        inner = getattr(value, "value", None) if isinstance(getattr(value, "path", None), str) else None
        if not isinstance(inner, tf.Variable):
            return []
        value = inner
    try:
        ok = value.trainable and value.dtype.is_floating
    except Exception:  # noqa: BLE001 - a variable that cannot answer (being destroyed)
        return []
    return [value] if ok else []


def named_in_block(
    frame: FrameType | None, enter: tuple[CodeType, int] | None, local: dict | None = None
) -> dict[str, tf.Variable]:
    """{name: variable} for every trainable float variable the block's code loads by name.

    ``enter`` is (the frame's code, its instruction offset) when the block was entered;
    ``frame`` is the same frame at the block's end (its offset is the __exit__ call).
    Another code object (the tape entered in one function, left in another) gives {}.
    ``local``: the frame's ``f_locals`` when the caller has just read them (each read of
    ``f_locals`` copies every local into the dict again)."""
    if frame is None or enter is None or enter[0] is not frame.f_code:
        return {}
    try:
        names = _names_between(frame.f_code, enter[1], frame.f_lasti)
    except Exception:  # noqa: BLE001 - bytecode dis cannot read: name nothing rather than fail
        return {}
    if not names:
        return {}
    local, glob, builtins = frame.f_locals if local is None else local, frame.f_globals, frame.f_builtins
    out: dict[str, tf.Variable] = {}
    for name in names:
        value = local.get(name, glob.get(name, builtins.get(name)))
        for v in _float_variables(value):
            out.setdefault(name, v)
    return out

"""Names from the user's frame: what the code that ran the block calls its tensors,
variables and models, read once when the block ends."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np
from tensorflow.python.framework import ops as _ops
from tensorflow.python.ops import resource_variable_ops as _rvo

_EAGER = _ops.EagerTensor
#: Lists of tensors longer than this are not read for names (a loop's collected values are fewer).
_LIST_MOST = 10_000


@dataclass
class FrameInfo:
    """What the user's frame tells about names, read once when the block ends."""

    names: dict  # id(python object) -> the name it is bound to
    variable_names: dict  # resource handle id -> name bound to a Keras variable wrapping it
    holders: list  # weak (or strong) refs to objects with .variables, e.g. Keras models
    lists: dict = field(default_factory=dict)  # id(tensor) -> the name of a list holding it (``log_probs``)

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


def scan_frame(frame, local: dict | None = None) -> FrameInfo:
    """Names in the frame that ran the block, and the objects that can name variables.

    ``names`` maps id(object) -> the name the user bound it to. Ids are only looked up
    for objects the capture keeps alive, and every named object was alive when this ran,
    so an id cannot point at the wrong object. Module-level names count too (notebooks
    run cells at module level); private names do not. Objects listing variables (Keras
    models, layers) are kept by weak reference and asked for variable paths only when
    a graph is built. ``local``: the frame's ``f_locals`` when the caller has just read
    them (each read copies every local into the dict again).
    """
    names: dict[int, str] = {}
    variable_names: dict[int, str] = {}
    lists: dict[int, str] = {}
    holders: list = []
    if local is None:
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
        if type(v) is list and i < n_local and v and type(v[0]) is _EAGER and len(v) <= _LIST_MOST:
            # a loop's collected tensors (``log_probs.append(...)``): the picture names
            # what gathers them by the list (``Σ 20 log_probs``)
            for t in v:
                if type(t) is _EAGER:
                    lists.setdefault(id(t), k)
            continue
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
    return FrameInfo(names, variable_names, holders, lists)

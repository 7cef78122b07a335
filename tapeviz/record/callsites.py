"""Call sites: who, on the stack, is running an op or reading a variable.

Two walks up the Python stack, each memoised per code object (in hookstate's
``call_site_memo``, the one place shared state lives) so that a training loop pays for
them once:

* the Keras variable reading a tf.Variable (its path, ``sequential/dense/kernel``);
* the public TF function the user called that runs an unscoped op (``tf.clip_by_norm``),
  numbered per call, so that the ops of one call are grouped.
"""

from __future__ import annotations

import os
import sys
import types
from typing import cast

import tensorflow as tf

from .hookstate import OWN_FILES as _OWN_FILES
from .hookstate import TF_DIRS as _TF_DIRS
from .hookstate import call_site_memo as _memo

# --------------------------------------------------------------------------- Keras variable paths

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
# What a code object is to the walk (memo.code_kinds): _TF (TensorFlow's, or the hooks'),
# _KV (a Keras variable method), _KERAS (other Keras code) or _OTHER.
_TF, _KV, _KERAS, _OTHER = range(4)


def _keras_variable_codes() -> frozenset | None:
    """Code objects of every method of Keras's Variable class and its subclasses (None
    while Keras is not imported; Keras itself is never imported from here)."""
    if _memo.keras_codes is not None:
        return _memo.keras_codes
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
        _memo.keras_dirs = ()
    else:
        package = os.path.dirname(init_file)
        _memo.keras_dirs = tuple({package + os.sep, os.path.realpath(package) + os.sep})
    _memo.keras_codes = frozenset(codes)
    return _memo.keras_codes


def _code_kind(code, codes) -> int:
    if code in codes:
        kind = _KV
    else:
        file = code.co_filename
        if file in _OWN_FILES or file.startswith(_TF_DIRS):
            kind = _TF
        elif file.startswith(_memo.keras_dirs):
            kind = _KERAS
        else:
            kind = _OTHER
    _memo.code_kinds[id(code)] = (code, kind)
    return kind


def learn_keras_path(hid: int, variable) -> None:
    """On a read of tf.Variable `variable` (resource handle id `hid`): learn the path of the
    Keras variable doing the read, unless its reads already told (see _PATH_TRIES)."""
    known = _memo.paths.get(hid, 0)
    if known.__class__ is int and known < _PATH_TRIES:
        _learn_keras_path(hid, variable, known)


def _learn_keras_path(hid: int, variable, tries: int) -> None:
    codes = _memo.keras_codes if _memo.keras_codes is not None else _keras_variable_codes()
    if not codes:
        return  # Keras is not loaded: there is no Keras variable to find
    path = _keras_path_on_stack(variable, sys._getframe(3), codes)  # the caller of variable_accessed
    if path.__class__ is str:
        _memo.paths.put(hid, path)
    else:  # True: Keras code read it, so ask again next time
        _memo.paths.put(hid, tries + 1 if path else _PATH_TRIES)


def keras_paths_of(handle_ids) -> dict[int, str]:
    """handle id -> Keras path, for the handles whose reads showed one."""
    found = {}
    paths = _memo.paths
    for hid in handle_ids:
        path = paths.get(hid)
        if path.__class__ is str:
            found[hid] = path
    return found


def _keras_path_on_stack(variable, f, codes) -> str | bool:
    """The path of the Keras variable reading tf.Variable `variable`: the first frame from
    `f` up that is not TensorFlow's is that variable's method. Else whether that frame
    is other Keras code (True) or not (False)."""
    kinds = _memo.code_kinds
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
# What a code object is to the walk (memo.code_api, 10-20 look-ups per op): its public TF
# name, _TF_INNER (TensorFlow's, or the hooks') or None (other code).
_TF_INNER = ""


def _public_api_names() -> dict:
    """{code object: "tf.clip_by_norm"} for the public functions of tf and its main
    namespaces (decorators unwrapped; the shortest public name wins), and, once Keras is
    imported, {code: "keras.losses.binary_crossentropy"} for Keras's loss and metric
    functions. Built once (the Keras part when Keras first appears)."""
    if _memo.api_names is not None and (_memo.keras_api_dirs or "keras.losses" not in sys.modules):
        return _memo.api_names
    import inspect

    names: dict = dict(_memo.api_names or {})

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
            if not callable(obj) or isinstance(obj, type):
                continue
            try:
                code = getattr(inspect.unwrap(obj), "__code__", None)
            except Exception:  # noqa: BLE001 - an odd wrapper: not an API function we can see
                continue
            full = prefix + attr
            if code is not None and (code not in names or len(full) < len(names[code])):
                names[code] = full

    if _memo.api_names is None:
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
        _memo.keras_api_dirs = tuple({package + os.sep, os.path.realpath(package) + os.sep})
        _memo.code_api.clear()  # Keras code walked before this was "the user's": look again
    _memo.api_names = names
    return names


def _code_role(code):
    """What a frame's code is to an API-call walk (see memo.code_api), computed once per code."""
    names = _public_api_names()
    role = names.get(code)
    if role is None:
        file = code.co_filename
        keras = bool(_memo.keras_api_dirs) and file.startswith(_memo.keras_api_dirs)
        role = _TF_INNER if keras or file in _OWN_FILES or file.startswith(_TF_DIRS) else None
    _memo.code_api[id(code)] = (code, role)
    return role


def _outer_api_frame(f):
    """(the outermost public TF function's frame above `f` before the user's code, or None;
    the frame the walk stopped at: the user's code, or None when it went too far)."""
    outer = None
    roles = _memo.code_api
    for _ in range(_API_DEPTH):
        if f is None:
            break
        code = f.f_code
        entry = roles.get(id(code))
        role = entry[1] if entry is not None and entry[0] is code else _code_role(code)
        if role is None:
            return outer, f  # the user's code (or Keras): the outermost API call is found
        if role:
            outer = f
        f = f.f_back
    return outer, None


class ApiCalls:
    """The TF API calls one recorder's unscoped ops ran in, numbered in order: consecutive
    ops of one call (one frame of the outermost public TF function) share a number."""

    __slots__ = ("frame", "seq", "caller")

    def __init__(self) -> None:
        self.frame = None  # the frame of the TF API call the last unscoped op ran in
        self.seq = 0
        self.caller = None  # the frame the last walk stopped at: the code that called TF

    def current(self) -> tuple[str, int] | None:
        """(public name, call number) of the TF API call running the current op, or None.
        Called from the op callback: the op's frames start two above this one. The frame
        of the code that called TF is left in ``caller`` (for the user-call walk)."""
        outer, self.caller = _outer_api_frame(sys._getframe(2))
        if outer is None:
            return None
        if outer is not self.frame:
            self.frame = outer
            self.seq += 1
        # the walk returns only frames of named public functions (no assert: this runs in the op hook)
        return cast(str, _memo.code_api[id(outer.f_code)][1]), self.seq

    def forget_frame(self) -> None:
        """Drop the last call's frame (a frame keeps its locals alive)."""
        self.frame = self.caller = None


_loss_codes: frozenset | None = None  # code objects of Keras's Loss.__call__ (and overrides)
_loss_code_ids: frozenset = frozenset()  # their ids (the codes are kept alive above): a code's hash is not cached


def _keras_loss_codes() -> frozenset:
    """The code objects of ``keras.losses.Loss.__call__`` and its subclasses' overrides
    (CompileLoss): a loss object opens its name scope there. Empty until Keras is imported."""
    global _loss_codes, _loss_code_ids
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
    _loss_code_ids = frozenset(map(id, codes))
    return _loss_codes


def loss_scopes_at(scope: str, f, stop=None) -> list[str]:
    """The parts of name scope ``scope`` that Keras loss objects running at frame ``f``
    opened (``compile_loss``, ``compile_loss/mse``): a call-site fact, read once per scope.
    The walk ends at ``stop`` (the frame that entered the tape's block: a loss object
    running the op runs below it)."""
    if not _keras_loss_codes():
        return []
    codes = _loss_code_ids
    names = set()
    for _ in range(2 * _API_DEPTH):
        if f is None or f is stop:
            break
        if id(f.f_code) in codes:
            name = getattr(f.f_locals.get("self"), "name", None)
            if isinstance(name, str):
                names.add(name)
        f = f.f_back
    parts = scope.rstrip("/").split("/")
    return ["/".join(parts[: i + 1]) for i, part in enumerate(parts) if part in names]


def layer_scopes_at(scope: str, f, stop=None) -> list[str]:
    """The parts of name scope ``scope`` that Keras's own layers running at frame ``f``
    opened (``gen/dense``, not ``gen``: a Sequential or functional model is the user's
    composition, and a layer class the user wrote is the user's): a call-site fact, read
    once per scope, as :func:`loss_scopes_at`. Empty until Keras is imported."""
    keras_dirs = _keras_dirs()
    if not keras_dirs:
        return []
    model = getattr(sys.modules.get("keras.src.models.model"), "Model", None)
    names = set()
    for _ in range(4 * _API_DEPTH):
        if f is None or f is stop:
            break
        code = f.f_code
        if code.co_name == "__call__" and code.co_filename.startswith(keras_dirs):
            layer = f.f_locals.get("self")
            cls = type(layer)
            name = getattr(layer, "name", None)
            if (
                isinstance(name, str)
                and cls.__module__.startswith("keras.")
                and not (isinstance(model, type) and isinstance(layer, model))
            ):
                names.add(name)
        f = f.f_back
    parts = scope.rstrip("/").split("/")
    return ["/".join(parts[: i + 1]) for i, part in enumerate(parts) if part in names]


def _keras_dirs() -> tuple[str, ...]:
    """Where Keras's own code lives (empty while Keras is not imported)."""
    keras = sys.modules.get("keras")
    file = getattr(keras, "__file__", None)
    if not file:
        return ()
    package = os.path.dirname(file)
    return tuple({package + os.sep, os.path.realpath(package) + os.sep})


def passed_by_user(value, frame) -> bool:
    """Whether the user handed `value` to the TF function running at `frame` (not a NumPy
    array TF made for itself, such as the axes of tf.reduce_sum)."""
    outer = _outer_api_frame(frame)[0]
    if outer is None:
        return True  # called from the user's code directly
    for v in outer.f_locals.values():
        if v is value or (v.__class__ in (list, tuple) and any(x is value for x in v)):
            return True
    return False

"""Keras scopes: which parts of an op's name scope a Keras loss object or a Keras layer of
Keras's own opened (``compile_loss/mse``, ``gen/dense``), read from the stack once per new
name scope of a tape.

One walk of the frames answers both questions. What a
frame's code is to the walk (a loss object's ``__call__``, a ``__call__`` in Keras's own
folder, or neither) depends on the code only, so it is learned once per code object;
only the few frames that are such calls have their locals read (``self``: which loss or
layer runs). The answer itself depends on which objects run now, so it is never kept
beyond the tape (the recorder keeps it per scope).

Most new scopes are a layer's, and Keras 3 says which without a walk: ``Layer.__call__``
opens ``backend.name_scope(self.name, caller=self)``, kept on Keras's own name-scope stack.
When every part of the scope was opened there by a built layer since the tape's block
began (no loss, no metric, no scope of the user's or TF's in between), the stack gives
the walk's answer (``from_keras_stack``); anything else, or a Keras whose stack looks
otherwise, is walked as before.
"""

from __future__ import annotations

import os
import sys
import threading
import types

# How far up the stack each question looks (as the two walks did): a loss object within
# _LOSS_DEPTH frames of the op, a layer within _LAYER_DEPTH.
_LOSS_DEPTH = 96
_LAYER_DEPTH = 192
# What a code object is to the walk (bits): a loss object's __call__, a __call__ in Keras's folder.
_LOSS, _LAYER = 1, 2


class _Known:
    """What the walk learned per process: Keras's folders and Model class (once Keras is
    imported), the loss codes (once keras.losses is), and each code object's kind."""

    __slots__ = ("keras", "dirs", "model", "loss_codes", "kinds", "codes", "stack")

    def __init__(self) -> None:
        self.keras: types.ModuleType | None = None  # the keras module the folders were read from
        self.dirs: tuple[str, ...] = ()
        self.model: type | None = None  # keras.Model: a model is the user's composition, not a layer
        self.loss_codes: frozenset | None = None
        #: id(code) -> kind bits; keyed by id (a code object's hash is not cached), the
        #: code kept in ``codes`` so that its id is not reused meanwhile (emptied together)
        self.kinds: dict[int, int] = {}
        self.codes: list[types.CodeType] = []
        #: (keras module, Keras's global_state module, its name_scope classes, Layer, Model),
        #: read once per keras module; global_state is None where Keras's stack looks otherwise
        self.stack: tuple = (None, None, (), None, None)


_known = _Known()


def _keras_dirs() -> tuple[str, ...]:
    """Where Keras's own code lives (empty while Keras is not imported); read once per
    keras module (``os.path.realpath`` asks the file system)."""
    keras = sys.modules.get("keras")
    if keras is _known.keras:
        return _known.dirs
    file = getattr(keras, "__file__", None)
    if not file:
        return ()
    package = os.path.dirname(file)
    _known.keras, _known.dirs = keras, tuple({package + os.sep, os.path.realpath(package) + os.sep})
    _forget_kinds()
    return _known.dirs


def _loss_codes() -> frozenset:
    """The code objects of ``keras.losses.Loss.__call__`` and its subclasses' overrides
    (CompileLoss): a loss object opens its name scope there. Empty until Keras's losses
    are imported; then read once."""
    if _known.loss_codes is not None:
        return _known.loss_codes
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
    _known.loss_codes = frozenset(codes)
    _forget_kinds()  # kinds learned before knew no loss code
    return _known.loss_codes


def _kind(code: types.CodeType, losses: frozenset, dirs: tuple[str, ...]) -> int:
    kind = _LOSS if code in losses else 0
    if code.co_name == "__call__" and code.co_filename.startswith(dirs):
        kind |= _LAYER
    _known.kinds[id(code)] = kind
    _known.codes.append(code)
    return kind


def _forget_kinds() -> None:
    _known.kinds.clear()
    _known.codes.clear()


def keras_scopes_at(scope: str, f, stop=None) -> tuple[list[str], list[str]]:
    """(loss parts, layer parts) of name scope ``scope`` for an op running at frame ``f``:

    * the parts Keras loss objects running there opened (``compile_loss``,
      ``compile_loss/mse``);
    * the parts Keras's own layers running there opened (``gen/dense``, not ``gen``: a
      Sequential or functional model is the user's composition, and a layer class the
      user wrote is the user's).

    The walk ends at ``stop`` (the frame that entered the tape's block). Both are empty
    until Keras is imported."""
    dirs = _keras_dirs()
    losses = _loss_codes()
    if not dirs and not losses:
        return [], []
    if _known.model is None:
        _known.model = getattr(sys.modules.get("keras.src.models.model"), "Model", None)
    model = _known.model
    kinds = _known.kinds
    loss_names: set[str] = set()
    layer_names: set[str] = set()
    for depth in range(_LAYER_DEPTH):
        if f is None or f is stop:
            break
        code = f.f_code
        kind = kinds.get(id(code))
        if kind is None:
            kind = _kind(code, losses, dirs)
        if kind:
            obj = f.f_locals.get("self")
            name = getattr(obj, "name", None)
            if isinstance(name, str):
                if kind & _LOSS and depth < _LOSS_DEPTH:
                    loss_names.add(name)
                if (
                    kind & _LAYER
                    and type(obj).__module__.startswith("keras.")
                    and not (isinstance(model, type) and isinstance(obj, model))
                ):
                    layer_names.add(name)
        f = f.f_back
    if not loss_names and not layer_names:
        return [], []
    parts = scope.rstrip("/").split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return (
        [p for p, part in zip(prefixes, parts, strict=True) if part in loss_names],
        [p for p, part in zip(prefixes, parts, strict=True) if part in layer_names],
    )


def _stack_parts() -> tuple:
    """(Keras's global_state module, the name_scope classes that push on its
    ``name_scope_stack``, ``Layer``, ``Model``), read once per keras module; the state is
    None where any is missing or ``Layer.__call__`` is not in Keras's folder (the walk
    would not count it)."""
    keras = sys.modules.get("keras")
    known = _known.stack
    if known[0] is keras and keras is not None:
        return known[1:]
    mods = sys.modules
    state = mods.get("keras.src.backend.common.global_state")  # clear_session replaces its tracker
    base = getattr(mods.get("keras.src.backend.common.name_scope"), "name_scope", None)
    tf_scope = getattr(mods.get("keras.src.backend.tensorflow.core"), "name_scope", None)
    exported = getattr(mods.get("keras.src.backend"), "name_scope", None)  # keras.name_scope
    layer = getattr(mods.get("keras.src.layers.layer"), "Layer", None)
    model = getattr(mods.get("keras.src.models.model"), "Model", None)
    call = vars(layer).get("__call__") if isinstance(layer, type) else None
    while call is not None and hasattr(call, "__wrapped__"):  # traceback_utils.filter_traceback's wrapper
        call = call.__wrapped__
    code = getattr(call, "__code__", None)
    dirs = _keras_dirs()
    if (
        keras is None
        or not isinstance(getattr(state, "GLOBAL_STATE_TRACKER", None), threading.local)
        or not all(isinstance(c, type) for c in (base, tf_scope, exported, layer, model))
        or code is None
        or code.co_name != "__call__"
        or not dirs
        or not code.co_filename.startswith(dirs)
    ):
        _known.stack = (keras, None, (), None, None)
    else:
        _known.stack = (keras, state, (base, tf_scope, exported), layer, model)
    return _known.stack[1:]


def keras_stack_mark() -> tuple | None:
    """Keras's name-scope stack and its depth now (at the start of a tape's block): the
    entries below that depth were opened by frames at or above the block, which the walk
    never reaches. None while Keras (or a stack as Keras 3 keeps it) is absent."""
    state = _stack_parts()[0]
    if state is None:
        return None
    stack = getattr(state.GLOBAL_STATE_TRACKER, "name_scope_stack", None)
    if stack is None:
        return (None, 0)
    return (stack, len(stack)) if type(stack) is list else None


def from_keras_stack(scope: str, mark: tuple | None) -> list[str] | None:
    """The layer parts of ``scope`` read from Keras's name-scope stack, or None where the
    stack cannot tell them as the walk would (then walk).

    It tells them when every part of ``scope`` was opened by an entry of the stack (so
    no loss object, metric, user's or TF's own scope is among them), each part once,
    and every entry opened since ``mark`` (the block's start) has a built layer as its
    caller, named as the entry: such an entry is ``Layer.__call__``'s (a build or
    ``add_weight`` outside the layer's own call opens one while the layer, or the layer
    being built around it, is not built yet), so that layer's ``__call__`` runs between
    the block and the op, as the walk would find it. A part is a layer part when its
    caller is Keras's own class and not a Model, as in the walk."""
    if mark is None:
        return None
    state, types_, layer_cls, model = _stack_parts()
    if state is None:
        return None
    stack = getattr(state.GLOBAL_STATE_TRACKER, "name_scope_stack", None)
    began, base = mark
    if type(stack) is not list:
        return None
    if stack is not began:
        if began is not None:
            return None  # the stack was replaced (clear_session): which entries are new is unknown
        base = 0
    n = len(stack)
    if n < base or not scope.endswith("/"):
        return None
    parts = scope[:-1].split("/")
    if len(parts) != n:
        return None
    layers = []
    prefix = ""
    for i, entry in enumerate(stack):
        if type(entry) not in types_:
            return None
        name = parts[i]
        if entry.name != name:
            return None
        prefix = prefix + "/" + name if i else name
        if i < base:
            continue
        caller = entry.caller
        if not isinstance(caller, layer_cls) or caller.built is not True or caller.name != name:
            return None
        if type(caller).__module__.startswith("keras.") and not isinstance(caller, model):
            layers.append(prefix)
    if len(set(parts)) != n:
        return None  # a name twice: the walk marks every part so named
    return layers

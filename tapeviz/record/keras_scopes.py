"""Keras scopes: which parts of an op's name scope a Keras loss object or a Keras layer of
Keras's own opened (``compile_loss/mse``, ``gen/dense``), read from the stack once per new
name scope of a tape.

One walk of the frames answers both questions. What a
frame's code is to the walk (a loss object's ``__call__``, a ``__call__`` in Keras's own
folder, or neither) depends on the code only, so it is learned once per code object;
only the few frames that are such calls have their locals read (``self``: which loss or
layer runs). The answer itself depends on which objects run now, so it is never kept
beyond the tape (the recorder keeps it per scope).
"""

from __future__ import annotations

import os
import sys
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

    __slots__ = ("keras", "dirs", "model", "loss_codes", "kinds", "codes")

    def __init__(self) -> None:
        self.keras: types.ModuleType | None = None  # the keras module the folders were read from
        self.dirs: tuple[str, ...] = ()
        self.model: type | None = None  # keras.Model: a model is the user's composition, not a layer
        self.loss_codes: frozenset | None = None
        #: id(code) -> kind bits; keyed by id (a code object's hash is not cached), the
        #: code kept in ``codes`` so that its id is not reused meanwhile (emptied together)
        self.kinds: dict[int, int] = {}
        self.codes: list[types.CodeType] = []


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

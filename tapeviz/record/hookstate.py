"""The state the op hook and TensorFlow patches share: the recorders active on each thread.

Every hook asks one question first, "is this thread recording?", and answers it here
without a lock: the list of active recorders is thread-local. The other shared facts
are where code lives, so that stack walks can tell TensorFlow's frames (and the hooks'
own) from the user's, and what those walks learned (:data:`call_site_memo`).
"""

from __future__ import annotations

import os
import threading
import types
from typing import Any

import numpy as np
import tensorflow as tf

from .bounded_cache import BoundedCache

local = threading.local()  # .recorders: list of active Recorder on this thread


def active() -> list[Any]:
    """The active recorders of this thread (the list itself: recorders add and remove themselves)."""
    recs = getattr(local, "recorders", None)
    if recs is None:
        recs = local.recorders = []
    return recs


# NumPy values passed straight to an op: where a value comes back from NumPy.
NUMPY_TYPES = frozenset({np.ndarray, np.float16, np.float32, np.float64, np.int32, np.int64})

TF_DIRS = tuple({os.path.dirname(f) + os.sep for f in (tf.__file__, os.path.realpath(tf.__file__))})
NUMPY_DIRS = tuple({os.path.dirname(f) + os.sep for f in (np.__file__, os.path.realpath(np.__file__))})
# The hooks' own files: a stack walk passes through their frames as through TensorFlow's.
_HERE = os.path.dirname(__file__)
OWN_FILES = frozenset(
    os.path.join(_HERE, name)
    for name in (
        "hookstate.py",
        "hooks.py",
        "callsites.py",
        "numpy_exports.py",
        "recorder.py",
        "replay.py",
        "capture.py",
        "user_calls.py",
    )
)


class CallSiteMemo:
    """What the call-site walks (callsites.py) learned, kept for the process: per code
    object and per variable handle, so that a training loop pays for each walk once (code
    objects stay, handle ids are never reused, a Keras path never changes). One object
    holds it all, so a test can start from nothing by replacing a field."""

    __slots__ = (
        "paths",
        "keras_codes",
        "keras_dirs",
        "code_kinds",
        "api_names",
        "code_api",
        "keras_api_dirs",
        "library_dirs",
        "code_user",
        "anchor_depths",
    )

    def __init__(self) -> None:
        #: resource handle id -> its Keras path (str), or how often its reads showed none
        #: (int); 65,536 handles at most before it starts over
        self.paths: BoundedCache[int, Any] = BoundedCache(1 << 16, start_over=True)
        #: code objects of the Keras variable classes' methods (None until Keras is imported)
        self.keras_codes: frozenset | None = None
        #: folders of the Keras package (set with keras_codes)
        self.keras_dirs: tuple[str, ...] = ()
        #: id(code) -> (code, what it is to the Keras-path walk). Keyed by id because
        #: CPython does not cache a code object's hash (it hashes its constants every time:
        #: ~0.4 us); the code is kept in the value, so its id cannot be reused meanwhile.
        self.code_kinds: dict[int, tuple[types.CodeType, int]] = {}
        #: code object of a public TF function -> its public name (None until first needed)
        self.api_names: dict | None = None
        #: id(code) -> (code, what it is to the API-call walk), keyed by id as code_kinds
        self.code_api: dict[int, tuple[types.CodeType, str | None]] = {}
        #: Keras's folders once keras.losses is imported: its code lies between the user and TF
        #: in an API-call walk (empty until then)
        self.keras_api_dirs: tuple[str, ...] = ()
        #: folders whose code is not the user's (standard library, installed packages; None until needed)
        self.library_dirs: tuple[str, ...] | None = None
        #: id(code) -> (code, what it is to the user-call walk: user_calls.py), keyed by id as code_kinds
        self.code_user: dict[int, tuple[types.CodeType, int]] = {}
        #: (name scope, op type) -> how far up the stack, from UserCalls.below, the anchor
        #: of the user-call walk was found the last times such an op ran (newest first)
        self.anchor_depths: dict[tuple, tuple[int, ...]] = {}


call_site_memo = CallSiteMemo()

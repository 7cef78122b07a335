"""The state the op hook and TensorFlow patches share: the recorders active on each thread.

Every hook asks one question first, "is this thread recording?", and answers it here
without a lock: the list of active recorders is thread-local. The other shared facts
are where code lives, so that stack walks can tell TensorFlow's frames (and the hooks'
own) from the user's.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np
import tensorflow as tf

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
    )
)

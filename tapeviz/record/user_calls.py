"""User calls: the user's own functions an op ran in, between the tape's block and the op.

A WGAN-GP critic loss is usually written with a helper, ``gp = gradient_penalty(critic,
real, fake)``, called while the outer tape records; the seed's training example calls
``some_loss_function()``. The ops such a call runs are one thing to its author, as a
``tf.clip_by_norm`` call's are, so capture notes which calls of the user's functions
each op ran in: the frames between the block's frame (the code that entered the tape)
and the op that are the user's code, outermost first. The walk stops at the first frame
that is not: a user function called by Keras (a custom layer's ``call``) or by
TensorFlow (a custom gradient) is already inside a layer or an API call.

Each op costs a walk up the stack only to the first frame the previous op's walk saw:
consecutive ops share their callers, and the frames of the last walk are kept (and
forgotten when the recording stops).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass

from tensorflow.python.framework import ops as _ops

from .hookstate import OWN_FILES, TF_DIRS
from .hookstate import call_site_memo as _memo

__all__ = ["FunctionRecord", "UserCalls"]

_MAX_DEPTH = 256  # frames walked before giving up: the op did not run under the block
# What a code object is to the walk: another's code (ends the chain), the user's code
# with no name a reader knows (a comprehension, a lambda: the chain goes through it),
# or a named function of the user's (a group).
_OTHER, _THROUGH, _USER = range(3)
_TAPEVIZ = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# tapeviz's own examples are the seed tutorial's programs: the user's code, as in the seed
_EXAMPLES = os.path.join(_TAPEVIZ, "examples.py")
_EAGER = _ops.EagerTensor


@dataclass
class FunctionRecord:
    """One call of a function of the user's, as plain data: ``gradient_penalty`` called
    from the block (or from another of the user's calls, ``parent``), running the ops
    ``start <= i < end`` of the recording's log."""

    index: int
    name: str  # the function's name as defined ("gradient_penalty")
    qualname: str  # with its class ("WGAN.gradient_penalty")
    filename: str
    lineno: int  # where it is defined
    start: int
    end: int = -1
    parent: int | None = None

    @property
    def title(self) -> str:
        """What its box says: ``gradient_penalty()``."""
        return f"{self.name}()"


def _library_dirs() -> tuple[str, ...]:
    """Folders whose code is not the user's: the standard library, installed packages,
    TensorFlow's and tapeviz's own."""
    dirs = set(TF_DIRS) | {_TAPEVIZ, os.path.realpath(_TAPEVIZ) + os.sep}
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            dirs |= {paths[key] + os.sep, os.path.realpath(paths[key]) + os.sep}
    for entry in sys.path:
        if entry.endswith(("site-packages", "dist-packages")):
            dirs |= {entry + os.sep, os.path.realpath(entry) + os.sep}
    return tuple(sorted(dirs))


def _code_kind(code) -> int:
    if _memo.library_dirs is None:
        _memo.library_dirs = _library_dirs()
    file = code.co_filename
    if file == _EXAMPLES or file == os.path.realpath(_EXAMPLES):
        kind = _USER
    elif file in OWN_FILES or file.startswith(_memo.library_dirs) or file.startswith("<frozen"):
        kind = _OTHER
    else:
        kind = _THROUGH if code.co_name.startswith("<") else _USER
    _memo.code_user[id(code)] = (code, kind)
    return kind


class UserCalls:
    """The calls of the user's functions one recorder's ops ran in (FunctionRecords).

    ``path`` holds the frames the last walk saw, outermost first (the block's callee at
    0), with ``states[i]``: the user's calls from the block down to ``path[i]`` and
    whether that chain can still grow (every frame above is the user's)."""

    __slots__ = ("block", "path", "states", "pos", "open", "records", "names", "kept")

    def __init__(self, block) -> None:
        self.block = block  # the frame that entered the tape's block
        self.path: list = []
        self.states: list[tuple[tuple, bool]] = []
        self.pos: dict[int, int] = {}
        self.open: list = []  # (frame, record) of the user's calls running now, outermost first
        self.records: list[FunctionRecord] = []
        self.names: dict[int, str] = {}  # id(tensor) -> its name in a call that returned
        self.kept: list = []  # those tensors, kept alive so that their ids name nothing else

    def current(self, f, index: int) -> int | None:
        """The innermost user's call running op number ``index`` (a FunctionRecord's
        index), or None; ``f`` is the frame that ran the op (TF's)."""
        block = self.block
        if block is None:
            return None
        path, pos = self.path, self.pos
        fresh = []
        k = -1
        depth = 0
        while True:
            if f is None or depth > _MAX_DEPTH:
                self._forget_path()
                return self._sync((), index)  # not under the block (another frame ran it)
            if f is block:
                break
            i = pos.get(id(f))
            if i is not None and i < len(path) and path[i] is f:
                k = i
                break
            fresh.append(f)
            f = f.f_back
            depth += 1
        for gone in path[k + 1 :]:
            pos.pop(id(gone), None)
        del path[k + 1 :], self.states[k + 1 :]
        chain, growing = self.states[k] if k >= 0 else ((), True)
        kinds = _memo.code_user
        for fr in reversed(fresh):
            if growing:
                code = fr.f_code
                entry = kinds.get(id(code))
                kind = entry[1] if entry is not None and entry[0] is code else _code_kind(code)
                if kind == _USER:
                    chain = (*chain, fr)
                elif kind == _OTHER:
                    growing = False
            pos[id(fr)] = len(path)
            path.append(fr)
            self.states.append((chain, growing))
        return self._sync(chain, index)

    def _sync(self, chain: tuple, index: int) -> int | None:
        """Close the calls that returned, open the new ones; the innermost one's index."""
        running = self.open
        j = 0
        while j < len(running) and j < len(chain) and running[j][0] is chain[j]:
            j += 1
        for fr, record in running[j:]:
            record.end = index
            self._note_names(fr)
        del running[j:]
        for fr in chain[j:]:
            code = fr.f_code
            parent = running[-1][1].index if running else None
            record = FunctionRecord(
                len(self.records),
                code.co_name,
                getattr(code, "co_qualname", code.co_name),
                code.co_filename,
                code.co_firstlineno,
                index,
                parent=parent,
            )
            self.records.append(record)
            running.append((fr, record))
        return running[-1][1].index if running else None

    def _note_names(self, frame) -> None:
        """The names a returned call gave its tensors (``x_hat``, ``grads`` in
        ``gradient_penalty``): a box drawn from inside it says them once opened. The
        block's own names win (see Recorder); a first call's name wins over a later one's."""
        try:
            local = frame.f_locals
        except Exception:  # noqa: BLE001 - a frame that cannot show its locals: no names
            return
        for k, v in list(local.items()):
            if type(v) is _EAGER and not k.startswith("_") and id(v) not in self.names:
                self.names[id(v)] = k
                self.kept.append(v)

    def _forget_path(self) -> None:
        self.path.clear()
        self.states.clear()
        self.pos.clear()

    def finish(self, end: int) -> list[FunctionRecord]:
        """The calls seen, every one still open ended at ``end``; the frames are let go
        (a frame keeps its locals alive)."""
        for fr, record in self.open:
            record.end = end
            self._note_names(fr)
        self.open.clear()
        self._forget_path()
        self.block = None
        return self.records

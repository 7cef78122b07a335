"""User calls: the user's own functions an op ran in, between the tape's block and the op.

A WGAN-GP critic loss is usually written with a helper, ``gp = gradient_penalty(critic,
real, fake)``, called while the outer tape records; the seed's training example calls
``some_loss_function()``. The ops such a call runs are one thing to its author, as a
``tf.clip_by_norm`` call's are, so capture notes which calls of the user's functions
each op ran in: the frames between the block's frame (the code that entered the tape)
and the op that are the user's code, outermost first. The walk stops at the first frame
that is not: a user function called by Keras (a custom layer's ``call``) or by
TensorFlow (a custom gradient) is already inside a layer or an API call.

The walk runs for every op, so it is kept cheap (bench/RESULTS.md, "the user-call walk"):
what a frame's code is (the user's or not) is learned once per code object; only the
user's running frames are kept, down to the deepest the last op ran under (the
*anchor*). An op the anchor runs directly costs one comparison; an op inside a Keras
layer or a TF function the anchor called costs a bare walk up to the anchor (no list,
no look-up per frame, no frame of another's kept); only an op outside the anchor, or in
a new call of the user's, walks to the block. The frames are let go when the recording
stops. An op deep inside Keras runs at the same depth below the anchor step after step
(one layer's ops, one loss's): ``below`` first asks ``sys._getframe`` (a walk in C)
whether the anchor is where it was the last times an op of that type ran in that name
scope, and walks in Python only when it is not.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass
from types import FrameType

from tensorflow.python.framework import ops as _ops

from .hookstate import OWN_FILES, TF_DIRS
from .hookstate import call_site_memo as _memo

__all__ = ["FunctionRecord", "UserCalls", "function_records"]

# What a code object is to the walk: another's code (ends the chain), the user's code
# with no name a reader knows (a comprehension, a lambda: the chain goes through it),
# or a named function of the user's (a group).
_OTHER, _THROUGH, _USER = range(3)
_TAPEVIZ = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# tapeviz's own examples are the seed tutorial's programs: the user's code, as in the seed
_EXAMPLES = os.path.join(_TAPEVIZ, "examples.py")
_EXAMPLES_REAL = os.path.realpath(_EXAMPLES)  # read once: realpath asks the file system
_EAGER = _ops.EagerTensor
_getframe = sys._getframe
_DEPTHS_KEPT = 4096  # kinds of op whose anchor depth `below` remembers (then it starts over)
_DEPTH_LIMIT = 400  # frames looked at to learn a depth


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
    if file == _EXAMPLES or file == _EXAMPLES_REAL:
        kind = _USER
    elif file in OWN_FILES or file.startswith(_memo.library_dirs) or file.startswith("<frozen"):
        kind = _OTHER
    else:
        kind = _THROUGH if code.co_name.startswith("<") else _USER
    _memo.code_user[id(code)] = (code, kind)
    return kind


class UserCalls:
    """The calls of the user's functions one recorder's ops ran in (see function_records).

    ``path`` holds the frames of the user's code from the block's callee (at 0) down to
    the *anchor*: the deepest one the last op ran under (the block while it is empty);
    ``chains[i]``: the user's calls from the block down to ``path[i]``. ``last`` is the
    innermost call the last op ran in, which every op the anchor runs shares: whether
    directly or through a frame that is not the user's (a Keras layer, a TF function),
    below which nothing the user wrote opens a call."""

    __slots__ = ("block", "path", "chains", "anchor", "last", "open", "calls", "names", "kept")

    def __init__(self, block) -> None:
        self.block = block  # the frame that entered the tape's block
        self.path: list = []
        self.chains: list[tuple] = []
        self.anchor = block  # path[-1], or the block while the path is empty
        self.last: int | None = None  # the innermost call the last op ran in
        self.open: list = []  # (frame, call, its index) of the user's calls running now, outermost first
        self.calls: list[list] = []  # [code, start, end, parent] of each call seen
        self.names: dict[int, str] = {}  # id(tensor) -> its name in a call that returned
        self.kept: list = []  # those tensors, kept alive so that their ids name nothing else

    def current(self, f, index: int) -> int | None:
        """The innermost user's call running op number ``index`` (a FunctionRecord's
        index), or None; ``f`` is the frame that ran the op (TF's, or the code that
        called TF). Runs for every op: the common cases make no list and keep no frame."""
        anchor = self.anchor
        if f is anchor:
            return self.last  # the code that ran the last op (or its caller) runs this one
        block, g = self.block, f
        try:
            up = g.f_back
            while up is not anchor:
                if up is block:
                    return self._walk(f, index)  # the anchor has returned
                g, up = up, up.f_back
        except AttributeError:  # past the outermost frame: not under the block
            return self._walk(f, index)
        # g: the frame the anchor called. Not the user's: nothing below opens a call.
        code = g.f_code
        entry = _memo.code_user.get(id(code))
        kind = entry[1] if entry is not None and entry[0] is code else _code_kind(code)
        return self.last if kind == _OTHER else self._walk(f, index)

    def below(self, index: int, key: tuple) -> int | None:
        """``current(f, index)`` for ``f`` the frame that called the op callback, which calls
        this directly; ``key`` says what the op is (its name scope and type). When the
        anchor is found at the depth where it was the last time such an op ran, the frame
        it called is read from there (a frame is on the stack once: it is the frame the
        walk up in ``current`` would reach)."""
        anchor = self.anchor
        if anchor is not None:
            for d in _memo.anchor_depths.get(key, ()):
                if d == 2:
                    if _getframe(2) is anchor:
                        return self.last  # f is the anchor
                    continue
                try:
                    g = _getframe(d - 1)  # 0: this frame, 1: the callback, 2: f; g: the frame the anchor called
                except ValueError:  # the stack is not that deep now
                    continue
                if g.f_back is anchor:
                    code = g.f_code
                    entry = _memo.code_user.get(id(code))
                    kind = entry[1] if entry is not None and entry[0] is code else _code_kind(code)
                    return self.last if kind == _OTHER else self._walk(_getframe(2), index)
        result = self.current(_getframe(2), index)
        self._learn_depth(key)
        return result

    def _learn_depth(self, key: tuple) -> None:
        """Remember the depth, from ``below``, at which the anchor runs now (if it does)."""
        depths = _memo.anchor_depths
        anchor = self.anchor
        f: FrameType | None = _getframe(3)  # 0: this frame, 1: below, 2: the callback, 3: f (below's 2)
        d = 2  # f's depth as `below` counts
        while f is not None and d < _DEPTH_LIMIT:
            if f is anchor:
                if len(depths) >= _DEPTHS_KEPT:
                    depths.clear()
                # a few depths per kind of op (a layer reads its kernel and its bias at two)
                depths[key] = (d, *[k for k in depths.get(key, ()) if k != d][:3])
                return
            f, d = f.f_back, d + 1

    def _walk(self, f, index: int) -> int | None:
        """Walk up to the block (an op that runs outside the anchor, or in a new call of
        the user's under it): ``path`` is a run of frames down from the block, so what it
        shares with this op's stack is a common prefix; below it come the frames the
        user's code runs now, down to the first that is not the user's."""
        block = self.block
        if block is None:
            return None
        fresh: list = []
        append = fresh.append
        try:
            while f is not block:
                append(f)
                f = f.f_back
        except AttributeError:  # past the outermost frame: not under the block (another frame ran it)
            self._forget_path()
            return self._sync((), index)
        fresh.reverse()
        path, chains = self.path, self.chains
        k = 0
        if path:
            n = min(len(path), len(fresh))
            while k < n and path[k] is fresh[k]:
                k += 1
            del path[k:], chains[k:]
        chain = chains[k - 1] if k else ()
        kinds = _memo.code_user
        for fr in fresh[k:] if k else fresh:
            code = fr.f_code
            entry = kinds.get(id(code))
            kind = entry[1] if entry is not None and entry[0] is code else _code_kind(code)
            if kind == _OTHER:
                break  # frames from the first that is not the user's down are never kept
            if kind == _USER:
                chain = (*chain, fr)
            path.append(fr)
            chains.append(chain)
        self.anchor = path[-1] if path else block
        return self._sync(chain, index)

    def _sync(self, chain: tuple, index: int) -> int | None:
        """Close the calls that returned, open the new ones; the innermost one's index.
        A call is noted as a list ``[code, start, end, parent]`` (FunctionRecords are
        made from them only when a picture asks: function_records)."""
        running = self.open
        j = 0
        while j < len(running) and j < len(chain) and running[j][0] is chain[j]:
            j += 1
        for fr, call, _ in running[j:]:
            call[2] = index
            self._note_names(fr)
        del running[j:]
        calls = self.calls
        for fr in chain[j:]:
            running.append((fr, [fr.f_code, index, -1, running[-1][2] if running else None], len(calls)))
            calls.append(running[-1][1])
        self.last = running[-1][2] if running else None
        return self.last

    def _note_names(self, frame) -> None:
        """The names a returned call gave its tensors (``x_hat``, ``grads`` in
        ``gradient_penalty``): a box drawn from inside it says them once opened. The
        block's own names win (see Recorder); a first call's name wins over a later one's."""
        try:
            local = frame.f_locals
        except Exception:  # noqa: BLE001 - a frame that cannot show its locals: no names
            return
        for k, v in local.items():  # a snapshot: no code runs while it is read
            if type(v) is _EAGER and not k.startswith("_") and id(v) not in self.names:
                self.names[id(v)] = k
                self.kept.append(v)

    def _forget_path(self) -> None:
        self.path.clear()
        self.chains.clear()
        self.anchor = self.block

    def finish(self, end: int) -> list[list]:
        """The calls seen (for function_records), every one still open ended at ``end``;
        the frames are let go (a frame keeps its locals alive)."""
        for fr, call, _ in self.open:
            call[2] = end
            self._note_names(fr)
        self.open.clear()
        self._forget_path()
        self.block = self.anchor = None
        return self.calls


def function_records(calls: list[list]) -> list[FunctionRecord]:
    """FunctionRecords of the calls UserCalls noted (made after the recording: the op
    hook only notes the code object and the op range)."""
    return [
        FunctionRecord(
            i,
            code.co_name,
            getattr(code, "co_qualname", code.co_name),
            code.co_filename,
            code.co_firstlineno,
            start,
            end,
            parent,
        )
        for i, (code, start, end, parent) in enumerate(calls)
    ]

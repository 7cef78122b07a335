"""The recorder: one tape's op log on the current thread, from start() to stop().

While a tape records, an op callback logs every eagerly executed op together with the
tape's recording state and name scope (cheaply: a tuple per op; OpRecords are built after
the block). The patches of hooks.py are installed with the first active recorder and
removed with the last one, on every exit path; what they see lands in the recorder's
public dicts (variables, exported, reentries, seen).
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import weakref
from typing import Any

import tensorflow as tf
from tensorflow.python import pywrap_tfe
from tensorflow.python.eager import context as _context
from tensorflow.python.framework import op_callbacks as _op_callbacks
from tensorflow.python.framework import ops as _ops
from tensorflow.python.ops import script_ops as _script_ops

from .blockvars import named_in_block
from .callsites import ApiCalls, keras_paths_of
from .capture import Capture
from .derivatives import DerivativeRecord
from .hooks import Patches
from .hookstate import active as _active
from .keras_scopes import from_keras_stack, keras_scopes_at, keras_stack_mark
from .numpy_exports import Export, Reentry
from .records import R_ATTRS, R_BACKWARD, R_FN, R_IN, R_OUT, R_SCOPE, R_SITE, R_TYPE, user_scope
from .user_calls import UserCalls
from .user_frame import scan_frame

_is_stopped = pywrap_tfe.TFE_Py_TapeSetIsStopped
_get_ident = threading.get_ident
_UNSET = object()

# Ops that pass a value on unchanged or as a part (a slice of a gradient is still "the
# gradient" when it is differentiated again: u_x = du[:, 0:1]).
_VIEW_OPS = frozenset(
    {"StridedSlice", "Slice", "Reshape", "Identity", "Squeeze", "ExpandDims", "GatherV2", "Unpack", "Split"}
)


def _name_order(record: DerivativeRecord, records: list, raw: list) -> None:
    """A call that differentiates (a view of) an earlier call's result by the same sources
    is a higher derivative: ∂²u/∂x² rather than ∂u_x/∂x. Found by walking back from the
    target through view ops in the op log (a few steps; names only, never an error)."""
    if not record.target_ids or not record.source_ids:
        return
    produced: dict[int, int] = {}
    for i in range(record.start - 1, max(record.start - 400, -1), -1):
        for o in raw[i][R_OUT] or ():
            if o is not None:
                produced.setdefault(o._id, i)
    tid = record.target_ids[0]
    for _ in range(4):
        earlier = next((d for d in records if d is not record and tid in d.output_ids), None)
        if earlier is not None:
            if set(earlier.source_ids) == set(record.source_ids):
                record.order = earlier.order + 1
                record.of_target = earlier.of_target or earlier.site.target
            return
        at = produced.get(tid)
        if at is None:
            return
        op_type = raw[at][R_TYPE].decode() if type(raw[at][R_TYPE]) is bytes else raw[at][R_TYPE]
        if op_type not in _VIEW_OPS or not raw[at][R_IN]:
            return
        tid = raw[at][R_IN][0]._id


def tape_is_recording(tape: tf.GradientTape) -> bool:
    """Whether we are inside `tape`'s block (tv.record must be entered there)."""
    return bool(tape._recording) and tape._tape is not None


# Registered gradient functions that consume state their forward op left behind, so a
# second backward pass over the same op fails unless the state is kept and put back.
# EagerPyFunc (tf.py_function) pops the tape its Python body was recorded on from
# script_ops.tape_cache, keyed by the op's "token" attribute.
_SIDE_STATE_OPS = frozenset({b"EagerPyFunc", "EagerPyFunc"})


def _attr(attrs, name):
    for i in range(0, len(attrs) - 1, 2):
        if attrs[i] == name:
            return attrs[i + 1]
    return None


def _keep_pyfunc_state(attrs) -> tuple | None:
    """(cache key, tape_cache entry) of a py_function that just ran, or None.

    The entry's tape is persistent when the function ran on this recording thread
    (see _ScriptBackprop); an entry whose tape is not cannot be replayed without
    using it up, so it is kept as unreplayable."""
    token = _attr(attrs, "token")
    if token is None:
        return None
    key = token if isinstance(token, bytes) else str(token).encode()
    entry = _script_ops.tape_cache.get(key)
    if entry is None:
        return None
    return (key, entry if getattr(entry[0], "_persistent", False) else None)


class Recorder:
    """Logs ops for one tape on the current thread; use start()/stop() in try/finally."""

    def __init__(self, tape: tf.GradientTape):
        if not isinstance(tape, tf.GradientTape):
            raise TypeError(
                f"tapeviz.record() needs a tf.GradientTape, got {type(tape).__name__}. "
                "Use it as: with tf.GradientTape() as tape, tv.record(tape) as rec: ..."
            )
        self.tape = tape
        # Filled while the block runs, by the op callback and by the hooks (hooks.py,
        # numpy_exports.py) on this thread; handed to the Capture when it stops.
        self.raw: list[tuple] = []  # one tuple per op (positions records.R_*)
        self.variables: dict[int, Any] = {}
        self.exported: dict[int, Export] = {}
        self.reentries: dict[int, Reentry] = {}
        self.seen: dict[int, Any] = {}
        self._watched: dict[int, Any] = {}
        self._side_state: dict[int, Any] = {}
        self._generations: list[Any] = []
        self._live: Any = _UNSET  # the tape object of generation self._gen
        self._gen = -1
        self._watch_log: list = []
        self._started = False
        self._graph_mode = False
        self.api_calls = ApiCalls()  # the TF API calls unscoped ops ran in
        self.user_calls = UserCalls(None)  # the user's own functions ops ran in (from start())
        self._scopes_seen: set[str] = set()
        self._loss_scopes: set[str] = set()  # name scopes a Keras loss object opened
        self._layer_scopes: set[str] = set()  # name scopes Keras's own layers opened (Dense, Conv2D...)
        self._derivatives: list[DerivativeRecord] = []
        self._open: list[DerivativeRecord] = []  # derivative calls running now, outermost first
        self.capture: Capture | None = None
        self._last_site: list = [None, -1, None]  # the last op's site: frame, instruction offset, (code, line)

    # -- lifecycle -----------------------------------------------------------------
    def start(self, frame=None) -> None:
        """Install the hooks. ``frame``: the user's frame entering the block (its code and
        offset let the end of the block find the variables the block names)."""
        if self._started:
            raise RuntimeError("This tapeviz recorder is already recording; use a new one.")
        self._thread_id = _get_ident()
        self._started = True
        self._enter = (frame.f_code, frame.f_lasti) if frame is not None else None
        self.user_calls = UserCalls(frame)
        # Inside a tf.function the block is traced, not executed: there is nothing to
        # record, so no hook is installed and flow() explains why.
        self._graph_mode = not _context.executing_eagerly()
        if self._graph_mode:
            return
        self._start_uid = _ops.uid()
        self._tld = _context.context()._thread_local_data  # name scope of this thread
        self._hook = self._make_callback()
        Patches.acquire()
        try:
            _active().append(self)
            # Op callbacks are per thread: ops of other threads never reach this one.
            _op_callbacks.add_op_callback(self._hook)
        except BaseException:
            self._detach()
            self._started = False
            raise

    def _detach(self) -> None:
        recs = _active()
        if self in recs:
            recs.remove(self)
        try:
            _op_callbacks.remove_op_callback(self._hook)
        except (KeyError, ValueError):
            pass
        # The callback closes over this recorder: dropped, the pair is freed by reference
        # counting when the tape lets go of it, not left to the cyclic collector.
        self._hook = None
        Patches.release()

    def stop(self, frame=None) -> Capture:
        """Remove every hook, then settle which ops this tape recorded."""
        if not self._started:
            raise RuntimeError("This tapeviz recorder was never started.")
        self._started = False
        if self._graph_mode:
            self.capture = self._empty_capture()
            return self.capture
        self._detach()
        self.api_calls.forget_frame()  # a frame keeps its locals alive
        self._last_site[:] = None, -1, None
        self._functions = self.user_calls.finish(len(self.raw))
        self.capture = self._finish(frame)
        self.capture.keep(self.user_calls.kept)
        return self.capture

    def note_watch(self, tensors) -> None:
        """Called from GradientTape.watch: remember tensors the user asked to watch."""
        if self._graph_mode:
            return
        gen = self._generation()
        for t in tf.nest.flatten(tensors):
            if isinstance(t, tf.Variable):
                # the tape lists its variables itself; only the moment is noted here
                self._watch_log.append((t.handle._id, gen, len(self.raw)))
            elif isinstance(t, _ops.EagerTensor):
                self._watched[t._id] = t
                self.seen[t._id] = t
                self._watch_log.append((t._id, gen, len(self.raw)))

    def _generation(self) -> int:
        """Index of the tape object live now (tape.reset() replaces it)."""
        live = self.tape._tape
        if live is not self._live:
            if not self._generations or self._generations[-1] is not live:
                self._generations.append(live)
            self._live, self._gen = live, len(self._generations) - 1
        return self._gen

    # -- the callback ----------------------------------------------------------------
    def _make_callback(self):
        """The op callback: runs for every eager op while recording, so it only stores.

        A closure over locals rather than a method: no attribute lookups on the hot path.
        """
        tape, tld, append, is_stopped, rec = self.tape, self._tld, self.raw.append, _is_stopped, self
        side_ops, side_state, api_call = _SIDE_STATE_OPS, self._side_state, self.api_calls.current
        user_call, api_calls, user_calls_ = self.user_calls.current, self.api_calls, self.user_calls
        user_below = self.user_calls.below  # user_call(the frame that called this callback, ...)
        scopes_seen, loss_scopes, layer_scopes = self._scopes_seen, self._loss_scopes, self._layer_scopes
        user_scopes: dict[str, bool] = {}  # scope -> opened by no Keras layer or loss (see records.user_scope)
        thread, get_ident = self._thread_id, _get_ident
        block = self.user_calls.block  # the frame that entered the block: where a loss-scope walk ends
        last_site = self._last_site
        keras_mark = keras_stack_mark()  # Keras's name-scope stack as the block begins

        def callback(op_type, inputs, attrs, outputs, op_name=None, graph=None):
            if graph is not None:  # graph construction (tf.function tracing) is not an execution
                return None
            # Callbacks are per thread, except where TF shares one list between threads
            # (MirroredStrategy's replica threads run with their caller's list): only
            # the recording thread's own ops are this tape's.
            if get_ident() != thread:
                return None
            if tape._tape is not rec._live:
                rec._generation()
            if outputs.__class__ is list:
                # TF hands multi-output ops (Unpack, Split) a list that its caller may
                # empty later (Keras's recurrent loop sets the entries to None): keep a
                # snapshot of what the op returned.
                outputs = tuple(outputs)
            if op_type in side_ops:
                side_state[len(rec.raw)] = _keep_pyfunc_state(attrs)
            scope = tld.scope_name
            if scope and scope not in scopes_seen:
                scopes_seen.add(scope)
                # a layer's scope is told by Keras's own name-scope stack; the rest is walked
                layers = from_keras_stack(scope, keras_mark) if block is not None else None
                if layers is None:
                    losses, layers = keras_scopes_at(scope, sys._getframe(1), block)
                    loss_scopes.update(losses)
                layer_scopes.update(layers)
                user_scopes[scope] = user_scope(scope, layer_scopes, loss_scopes)
            if scope:
                # a model's own call (a subclassed model's ``a + b``) is the user's code: its
                # TF calls are named as at top level; a Keras layer's or loss's ops are not
                api = api_call() if user_scopes[scope] else None
                fn = user_below(len(rec.raw), (scope, op_type))
            else:
                api = api_call()
                # the API walk of an unscoped op stopped at the code that called TF: go on from there
                caller = api_calls.caller
                fn = user_below(len(rec.raw), (scope, op_type)) if caller is None else user_call(caller, len(rec.raw))
            site = user_calls_.anchor  # the deepest frame of the user's code running this op
            if site is not None:
                # the same frame at the same instruction as for the last op is on the same
                # line: the (code, line) pair is shared (f_lineno reads the line table)
                lasti = site.f_lasti
                if site is not last_site[0] or lasti != last_site[1]:
                    last_site[:] = site, lasti, (site.f_code, site.f_lineno)
                site = last_site[2]
            append(
                (
                    op_type,
                    inputs,
                    attrs,
                    outputs,
                    scope,
                    tape._recording and not is_stopped(),
                    rec._gen,
                    None,
                    api,
                    fn,
                    site,
                )
            )
            return None

        return callback

    def note_record(self, op_type, outputs, inputs, backward) -> None:
        """record.record_operation puts an entry with its own backward function on the tape.

        A tf.function call runs with recording stopped and is recorded by hand right
        after: that is the call op the callback already logged, so it gets the backward
        function in place. A tf.custom_gradient entry re-declares outputs other ops
        computed: it is logged as an op of its own (graph.py makes it their producer).
        """
        if _get_ident() != self._thread_id or not _context.executing_eagerly():
            return
        outputs, inputs = tuple(outputs), tuple(inputs)
        if not all(isinstance(t, _ops.EagerTensor) for t in outputs + inputs):
            return  # symbolic tensors: a graph being traced, not an eager execution
        if isinstance(op_type, bytes):
            op_type = op_type.decode()
        tape = self.tape
        gen = self._generation()
        recording = bool(tape._recording) and not _is_stopped()
        out_ids = [o._id for o in outputs]
        raw = self.raw
        for i in range(len(raw) - 1, max(len(raw) - 17, -1), -1):  # the call op ran just before
            r = raw[i]
            rtype = r[R_TYPE].decode() if type(r[R_TYPE]) is bytes else r[R_TYPE]
            call_out = [o._id for o in (r[R_OUT] or ()) if o is not None]
            # The forward function may return extra outputs (intermediates kept for its
            # backward pass); the tape records only the leading, user-visible ones.
            if r[R_BACKWARD] is None and rtype == op_type and call_out[: len(out_ids)] == out_ids:
                raw[i] = (
                    op_type,
                    inputs,
                    r[R_ATTRS],
                    outputs,
                    r[R_SCOPE],
                    recording,
                    gen,
                    backward,
                    None,
                    r[R_FN],
                    r[R_SITE],
                )
                return
        fn = self.user_calls.current(sys._getframe(1), len(raw))
        at = self.user_calls.anchor
        site = None if at is None else (at.f_code, at.f_lineno)
        raw.append((op_type, inputs, (), outputs, self._tld.scope_name, recording, gen, backward, None, fn, site))

    # -- derivative groups -------------------------------------------------------------
    @property
    def thread_id(self) -> int:
        """The thread this recorder records (set when it starts)."""
        return self._thread_id

    @property
    def open_derivative(self) -> DerivativeRecord | None:
        """The innermost inner gradient / jacobian call running now, or None."""
        return self._open[-1] if self._open else None

    def open_derivative_call(self, method: str, site, target_ids: tuple, source_ids: tuple) -> DerivativeRecord:
        """An inner gradient / jacobian call starts: its ops are those logged from now on
        (hooks.py wraps the tape's methods while recording)."""
        parent = self.open_derivative
        record = DerivativeRecord(
            len(self._derivatives),
            method,
            site,
            len(self.raw),
            target_ids=target_ids,
            source_ids=source_ids,
            parent=parent.index if parent is not None else None,
        )
        if parent is not None:
            parent.children.append(record.index)
        self._derivatives.append(record)
        self._open.append(record)
        return record

    def close_derivative_call(self, record: DerivativeRecord, output_ids: tuple) -> None:
        record.end = len(self.raw)
        record.output_ids = output_ids
        if record in self._open:
            self._open.remove(record)
        _name_order(record, self._derivatives, self.raw)

    # -- after the block -------------------------------------------------------------
    def _empty_capture(self) -> Capture:
        tape = self.tape
        return Capture(
            unread={},
            raw=[],
            seen={},
            variables={},
            access_paths={},
            watched_variables=(),
            watched={},
            exported={},
            reentries={},
            start_uid=0,
            names={},
            persistent=bool(tape._persistent),
            thread_id=self._thread_id,
            tape_ref=weakref.ref(tape),
            final_generation=-1,
            watch_log=[],
            watch_accessed_variables=bool(tape._watch_accessed_variables),
            reset_count=0,
            frame=None,
            side_state={},
            graph_mode=True,
        )

    def _finish(self, frame) -> Capture:
        """Snapshot the tape's state now; the per-op bookkeeping waits for Capture.settle()."""
        tape = self.tape
        final_tape = tape._tape
        # Which generation is "the" tape: the last live one (gradient() on a
        # non-persistent tape sets _tape to None, reset() starts a new one).
        if final_tape is not None:
            final_gen = self._generation()  # also right after a reset() that no op followed
        else:
            final_gen = next(
                (i for i in range(len(self._generations) - 1, -1, -1) if self._generations[i] is not None), -1
            )
        watched_vars = final_tape.watched_variables() if final_tape is not None else tape._watched_variables
        local = frame.f_locals if frame is not None else None  # read once for both
        info = scan_frame(frame, local) if frame is not None else None
        return Capture(
            # the block's variables the tape never read (settle() leaves out those it saw)
            unread={v.handle._id: v for v in named_in_block(frame, self._enter, local).values()},
            raw=self.raw,
            seen=self.seen,
            variables=self.variables,
            access_paths=keras_paths_of(self.variables),
            watched_variables=tuple(watched_vars),
            watched=self._watched,
            exported=self.exported,
            reentries=self.reentries,
            start_uid=self._start_uid,
            # names the user's functions gave their tensors, then the block's own (which win)
            names={**self.user_calls.names, **(info.names if info is not None else {})},
            persistent=bool(tape._persistent),
            thread_id=self._thread_id,
            tape_ref=weakref.ref(tape),
            final_generation=final_gen,
            watch_log=self._watch_log,
            watch_accessed_variables=bool(tape._watch_accessed_variables),
            reset_count=max(0, len([g for g in self._generations if g is not None]) - 1),
            frame=info,
            side_state={i: s for i, s in self._side_state.items() if s is not None},
            graph_mode=False,
            loss_scopes=frozenset(self._loss_scopes),
            layer_scopes=frozenset(self._layer_scopes),
            # a call still open here (the block ended inside it: an exception) ran to the end
            derivatives=[d if d.end >= 0 else dataclasses.replace(d, end=len(self.raw)) for d in self._derivatives],
            functions=self._functions,
        )

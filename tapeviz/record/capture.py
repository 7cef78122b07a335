"""Capture: everything one recording saw, as plain records, and what TF knows of tf.function bodies.

The recorder (recorder.py) hands its log over when the block ends; graph.py turns a
Capture into a TapeGraph; the flow asks it to replay TF's backprop (replay.py). The TF
objects themselves stay in here, so no other stage needs TensorFlow's internals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tensorflow.python.eager import context as _context

from .derivatives import DerivativeRecord
from .numpy_exports import Export, Reentry
from .records import OpRecord, TensorFacts, VariableRecord, is_trainable, key_of
from .replay import BackwardCall, replay_backward
from .user_calls import FunctionRecord, function_records
from .user_frame import FrameInfo

# ``x[:, 0:1]`` runs in a name scope TF opens even when executing eagerly (its stack of
# begin / end / strides, then StridedSlice): not a layer of the user's; the slice is its op.
_SLICE_SCOPE = "strided_slice"


class Capture:
    """Everything one recording saw, as plain records; graph.py turns it into a TapeGraph.

    ``ops`` are OpRecords whose tensors are integer ids. The other facts are read
    through methods (dtype, shape, value view, Python name of a tensor; the variables;
    what was watched or exported), so no other module needs TensorFlow's internals.
    The TF objects themselves stay here: the replay needs them, and ``tensor(id)``
    hands one to whoever wants the public object (tests, ``tape.gradient`` calls).
    """

    def __init__(
        self,
        *,
        raw: list,
        seen: dict,
        variables: dict,
        access_paths: dict,
        watched_variables: tuple,
        watched: dict,
        exported: dict,
        reentries: dict,
        start_uid: int,
        names: dict,
        persistent: bool,
        thread_id: int,
        tape_ref: Any,
        final_generation: int,
        watch_log: list,
        watch_accessed_variables: bool,
        reset_count: int,
        frame: FrameInfo | None,
        side_state: dict,
        graph_mode: bool,
        unread: dict,
        loss_scopes: frozenset = frozenset(),
        layer_scopes: frozenset = frozenset(),
        derivatives: list | None = None,
        functions: list | None = None,
    ):
        self._raw = raw
        #: inner gradient / jacobian calls this recording saw, in call order (derivatives.py)
        self.derivatives: list[DerivativeRecord] = list(derivatives or ())
        self._calls = functions or []  # the user's calls as UserCalls noted them
        self._functions: list[FunctionRecord] | None = None
        self._unread = unread  # handle id -> a variable the block names but never read
        self._seen = seen  # tensor id -> EagerTensor (every tensor the records name)
        self._variables = variables  # handle id -> tf.Variable
        self._access_paths = access_paths  # handle id -> Keras path, learned while it was read
        self._watched_variables = watched_variables
        self._watched = watched  # tensor id -> tensor passed to tape.watch
        self.exported: dict[int, Export] = exported
        self.reentries: dict[int, Reentry] = reentries  # tensors made from NumPy values in the block
        self.start_uid = start_uid
        self._names = names  # id(python object) -> name in the user's frame (or a function of theirs)
        self._kept: list = []  # objects named by id that must outlive the capture's records
        self.persistent = persistent
        self.thread_id = thread_id
        self.tape_ref = tape_ref
        self.final_generation = final_generation
        self._watch_log = watch_log
        self.watch_accessed_variables = watch_accessed_variables
        self.reset_count = reset_count
        self._frame = frame
        self._side_state = side_state  # op index -> state its gradient function consumes (py_function)
        self.graph_mode = graph_mode
        self.loss_scopes = loss_scopes  # name scopes a Keras loss object opened ("binary_crossentropy")
        self.layer_scopes = layer_scopes  # name scopes Keras's own layers opened ("gen/dense")
        self._ops: list[OpRecord] | None = None
        self._backward: dict[int, Callable] = {}
        self._keras_paths: dict | None = None
        self._facts: dict[int, TensorFacts] = {}
        self.variables: dict[int, VariableRecord] = {}
        #: variables the block's code names that the tape never saw read (an untaken branch)
        self.unread: dict[int, VariableRecord] = {}
        self.watched_variable_ids: set[int] = set()
        self.watch_joined: dict[int, int] = {}
        self.tape_watched: set[int] = set()
        self.settled = False

    # -- records ---------------------------------------------------------------------
    @property
    def functions(self) -> list[FunctionRecord]:
        """Calls of the user's own functions the recorded ops ran in (user_calls.py),
        made on first use."""
        if self._functions is None:
            self._functions = function_records(self._calls)
        return self._functions

    @property
    def ops(self) -> list[OpRecord]:
        """The recorded ops as OpRecords (built from the raw log on first use)."""
        if self._ops is None:
            self._ops = self._materialize()
            self._raw = []
        return self._ops

    def _materialize(self) -> list[OpRecord]:
        ops = []
        seen = self._seen
        backward = self._backward
        for i, (op_type, inputs, attrs, outputs, scope, rec, gen, bw, api, fn, site) in enumerate(self._raw):
            if type(op_type) is bytes:
                op_type = op_type.decode()
            if scope.endswith("/"):
                scope = scope[:-1]
            if scope == _SLICE_SCOPE or scope.endswith("/" + _SLICE_SCOPE):
                scope = scope[: -len(_SLICE_SCOPE)].rstrip("/")
            in_ids = []
            for t in inputs:
                tid = t._id
                seen[tid] = t
                in_ids.append(tid)
            out_ids = []
            for t in outputs or ():
                if t is None:  # an output TF did not hand over: nothing to name
                    continue
                tid = t._id
                seen[tid] = t
                out_ids.append(tid)
            if bw is not None:
                backward[i] = bw
            ops.append(
                OpRecord(
                    i,
                    op_type,
                    tuple(in_ids),
                    tuple(attrs) if attrs else (),
                    tuple(out_ids),
                    scope,
                    bool(rec),
                    gen,
                    custom=bw is not None,
                    api=api[0] if api else None,
                    api_call=api[1] if api else 0,
                    function=fn,
                    filename=site[0].co_filename if site else "",
                    line=site[1] if site else 0,
                )
            )
        for d in self.derivatives:  # in call order: an inner call's range overrides its parent's
            for op in ops[d.start : d.end]:
                op.derivative = d.index
        return ops

    def keep(self, objects: list) -> None:
        """Keep these objects alive with the capture: tensors named by id (``python_name``)
        that no op record holds, so that no later tensor can take their id."""
        self._kept = objects

    # -- tensors ---------------------------------------------------------------------
    def facts(self, tid: int) -> TensorFacts:
        """dtype name and shape of tensor `tid`."""
        got = self._facts.get(tid)
        if got is None:
            t = self._seen[tid]
            got = self._facts[tid] = TensorFacts(t.dtype.name, tuple(t.shape))
        return got

    def value_view(self, tid: int) -> np.ndarray | None:
        """The tensor's value as a NumPy view of its buffer (no copy); None for resource
        and variant tensors or a device that cannot be read."""
        t = self._seen.get(tid)
        if t is None or self.facts(tid).dtype in ("resource", "variant"):
            return None
        try:
            return np.asarray(t._numpy())
        except Exception:  # noqa: BLE001 - e.g. a tensor on a device we cannot copy from
            return None

    def tensor(self, tid: int):
        """The EagerTensor with this id (the public object), e.g. for tape.gradient."""
        return self._seen[tid]

    def python_name(self, tid: int) -> str | None:
        """The name the user bound tensor `tid` to in the block's frame, if any."""
        t = self._seen.get(tid)
        return None if t is None else self._names.get(id(t))

    def list_name(self, tid: int) -> str | None:
        """The name of a list in the block's frame that holds tensor `tid` (a loop's
        collected values, ``log_probs``), if any."""
        t = self._seen.get(tid)
        if t is None or self._frame is None:
            return None
        return self._frame.lists.get(id(t))

    def created_in_block(self, tid: int) -> bool:
        """True for tensors made while the tape recorded (constants inside the block)."""
        return tid > self.start_uid

    def is_watched_tensor(self, tid: int) -> bool:
        """A tensor passed to tape.watch (before or after a reset)."""
        return tid in self._watched

    def handle_of(self, tid: int) -> int | None:
        """The variable whose resource handle tensor `tid` is, if it is one."""
        return tid if tid in self._variables else None

    # -- user objects ----------------------------------------------------------------
    def key_of(self, obj) -> int | None:
        """The id the records use for a user object: a variable's handle id, a tensor's
        id; None for anything else. A Keras variable counts as the tf.Variable inside it."""
        return key_of(obj)

    def name_of_object(self, obj) -> str | None:
        """The Python name the user bound `obj` to in the block's frame."""
        return self._names.get(id(obj))

    # -- variables -------------------------------------------------------------------
    def keras_path(self, var) -> str | None:
        """The Keras path of the variable wrapping tf.Variable `var`: seen while the Keras
        variable read it in the block (wherever the model lives: an attribute, a dict, a
        closure), else found through a model or layer in the user's frame."""
        hid = var.handle._id
        path = self._access_paths.get(hid)
        if path is not None:
            return path
        if self._keras_paths is None:
            self._keras_paths = self._frame.keras_paths() if self._frame is not None else {}
        return self._keras_paths.get(hid)

    def _variable_name(self, var) -> str:
        """The Python name bound to it, else the Keras path of the Keras variable wrapping
        it, else the Python name bound to that Keras variable, else its TF name."""
        name = self._names.get(id(var)) or self.keras_path(var)
        if not name and self._frame is not None:
            name = self._frame.variable_names.get(var.handle._id)
        return name or var.name.split(":")[0]

    def _variable_record(self, hid: int, var=None) -> VariableRecord:
        var = self._variables[hid] if var is None else var
        return VariableRecord(hid, self._variable_name(var), self.keras_path(var), bool(var.trainable), var)

    def variable_reads(self, op: OpRecord) -> int | None:
        """The variable handle a ReadVariableOp read, if it is a known variable."""
        if op.op_type == "ReadVariableOp" and op.inputs and op.inputs[0] in self._variables:
            return op.inputs[0]
        return None

    def read_before_reset(self, op: OpRecord) -> bool:
        return op.tape_recording and 0 <= self.final_generation and op.generation < self.final_generation

    # -- after the block -------------------------------------------------------------
    def settle(self) -> Capture:
        """Decide which ops this tape recorded (TF's ShouldRecord rule, replayed).

        An op is on the tape when the tape was live and recording and one of its inputs
        was on the tape: a watched variable's handle, a watched tensor, or an output of
        an op already on the tape. Done once, after the block, to keep recording cheap.
        """
        if self.settled:
            return self
        ops = self.ops
        self.watched_variable_ids = {v.handle._id for v in self._watched_variables}
        for v in self._watched_variables:
            self._variables.setdefault(v.handle._id, v)
            self._seen.setdefault(v.handle._id, v.handle)
        final = self.final_generation
        # TF decides at each op whether to record it: something watched only later (or
        # only before tape.reset()) does not make an op recorded.
        joined: dict[int, int] = {}
        for key, gen, at in self._watch_log:
            if gen == final:
                joined.setdefault(key, at)
        for v in self._watched_variables:
            hid = v.handle._id
            if hid not in joined or (self.watch_accessed_variables and v.trainable):
                joined[hid] = 0  # watched on access, before its first read
        pending = sorted((at, key) for key, at in joined.items())
        on_tape: set[int] = set()
        p = 0
        trainable = self._trainable_id
        for op in ops:
            while p < len(pending) and pending[p][0] <= op.index:
                on_tape.add(pending[p][1])
                p += 1
            if final < 0 or not op.tape_recording or op.generation != final:
                continue
            if any(t in on_tape and trainable(t) for t in op.inputs):
                op.recorded = True
                on_tape.update(op.outputs)
        # At gradient time, TF keeps what reaches a tensor the tape knows in the end
        # (watched at any point of the final tape, or made by a recorded op).
        known = on_tape | set(joined)
        for op in ops:
            op.inputs_on_tape = tuple(t in known and trainable(t) for t in op.inputs)
        self.watch_joined = joined
        self.tape_watched = {tid for tid in self._watched if tid in joined}
        self.variables = {hid: self._variable_record(hid) for hid in self._variables}
        for hid, var in self._unread.items():
            if hid not in self._variables:
                self.note_unread(var)
        self.settled = True
        return self

    def note_unread(self, var) -> VariableRecord:
        """A tf.Variable the tape never saw read, named by the block or asked about as a
        target (``tape.gradient(v, [v, w])`` is valid TF): it gets a record of its own."""
        hid = var.handle._id
        record = self.variables.get(hid) or self.unread.get(hid)
        if record is None:
            record = self.unread[hid] = self._variable_record(hid, var)
            self._seen[hid] = var.handle  # the replay may be asked d v / d v
        return record

    def _trainable_id(self, tid: int) -> bool:
        return is_trainable(self.facts(tid).dtype)

    def custom_backward(self, index: int) -> Callable | None:
        """The backward function TF's tape was handed for op `index` (a tf.function call,
        tf.custom_gradient), or None for an op with a registered gradient."""
        return self._backward.get(index)

    def side_state(self, index: int) -> Any:
        """What op `index`'s gradient function consumes (a py_function's tape), kept to put back."""
        return self._side_state.get(index)

    # -- the backward pass -----------------------------------------------------------
    def replay(
        self, target_ids: Sequence[int], source_ids: Sequence[int], output_gradients: Sequence[Any] | None
    ) -> tuple[list, list[BackwardCall]]:
        """TF's own backprop over the recorded ops: d targets / d sources (TF values, in
        source order) and every backward function call in the order TF made it."""
        watched = [self._seen[h] for h in self.watched_variable_ids]
        watched += [self._watched[tid] for tid in self.tape_watched]  # a watch erased by reset() does not count
        return replay_backward(
            self, watched, [self._seen[t] for t in target_ids], [self._seen[s] for s in source_ids], output_gradients
        )


# --------------------------------------------------------------------------- tf.function bodies


def function_body(name: str) -> dict | None:
    """The ops inside a tf.function as TF registered them (FunctionDef), or None.

    Returns {"nodes": [(node name, op type)], "edges": [(src, dst, dst input index)],
    "args": [arg name per function input], "rets": [node name per function output]}.
    Argument and return placeholders are not nodes; inputs referring to an argument are
    recorded under "args", control inputs are skipped.
    """
    try:
        fd = _context.context().get_function_def(name)
    except Exception:  # noqa: BLE001 - unknown or garbage-collected function
        return None
    args = [a.name for a in fd.signature.input_arg]
    nodes = [(n.name, n.op) for n in fd.node_def if n.op != "NoOp"]  # NoOps only order side effects
    edges, arg_uses = [], []
    for n in fd.node_def:
        for k, ref in enumerate(n.input):
            if ref.startswith("^"):
                continue
            src = ref.split(":")[0]
            if src in args:
                arg_uses.append((args.index(src), n.name, k))
            else:
                edges.append((src, n.name, k))
    rets = [fd.ret[a.name].split(":")[0] for a in fd.signature.output_arg if a.name in fd.ret]
    return {"nodes": nodes, "edges": edges, "args": args, "arg_uses": arg_uses, "rets": rets}

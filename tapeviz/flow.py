"""GradientFlow: how d target / d everything came about, edge by edge, step by step.

TensorFlow itself does the arithmetic: the recorded ops are replayed into TF's backprop
(see ``capture.replay_backward``), so totals are what ``tape.gradient`` computes and every
edge carries exactly what the op's registered gradient function returned for that input.
This module only reads the result: which edge got what, in which order, and for every
edge that got nothing, the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
import tensorflow as tf

from .capture import BackwardCall, replay_backward
from .graph import STATEFUL_OPS, TapeGraph

STOP_GRADIENT_OPS = frozenset({"StopGradient", "PreventGradient"})
CAST_OPS = frozenset({"Cast", "Bitcast"})

REASONS = {
    "stop_gradient": "tf.stop_gradient",
    "not_recorded": "not recorded by the tape",
    "not_watched": "not watched by the tape",
    "integer_dtype": "integer / non-float tensor",
    "no_gradient": "op has no gradient",
    "stateful": "written into a variable",
    "outside_tf": "value left TensorFlow",
    "unconnected": "does not lead to the target",
}


@dataclass(frozen=True)
class StopReason:
    """Why nothing flows through an edge or into a node."""

    where: Any  # a node id, or an edge (u, v, key)
    reason: str  # one of REASONS
    message: str  # one plain sentence a student understands
    origin: Any = None  # the node or edge where the path was actually cut

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


@dataclass
class Step:
    """One step of the backward pass: a node receives its gradient and passes it on."""

    index: int
    node: Any
    tf_grad: Any  # what arrives at the node as TF value(s), a list for several outputs; step 0: the seed
    edges: list = field(default_factory=list)  # (u, v, key) edges that receive a contribution now
    _grad: Any = field(default=None, repr=False)
    _converted: bool = field(default=False, repr=False)

    @property
    def grad(self):
        """The gradient arriving at the node as numpy (a list for several outputs)."""
        if not self._converted:
            g = self.tf_grad
            self._grad = [_to_numpy(x) for x in g] if isinstance(g, list) else _to_numpy(g)
            self._converted = True
        return self._grad


def _to_numpy(t) -> np.ndarray | None:
    if t is None:
        return None
    if isinstance(t, tf.IndexedSlices):
        t = tf.convert_to_tensor(t)
    if getattr(t, "dtype", None) in (tf.variant, tf.resource):
        # e.g. a tf.function's extra outputs for its backward pass (a while loop's
        # TensorList accumulators): a handle, not numbers there is an array of
        return None
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


class GradientFlow:
    """The backward pass of one target over a TapeGraph.

    ``grad`` gives totals, ``contributions`` the per-edge split, ``steps`` the order TF
    processed the ops in, ``stopped`` every edge and node that carries no gradient.
    """

    def __init__(self, graph: TapeGraph, target, sources=None, output_gradients=None):
        self.graph = graph
        self.target = target
        self._targets = self._resolve_targets(target)
        self.target_nodes = [graph.node_of(t) for t in tf.nest.flatten(target)]
        self.sources = self._resolve_sources(sources)
        self._run(output_gradients)
        self._classify()

    # -- inputs ------------------------------------------------------------------------
    def _resolve_targets(self, target) -> list:
        flat = tf.nest.flatten(target)
        if not flat:
            raise ValueError("tapeviz.flow needs a target: pass the tensor you would give tape.gradient().")
        out = []
        for t in flat:
            if isinstance(t, tf.Variable):
                node = self.graph.node_of(t)
                if node is None:
                    raise ValueError(
                        f"The target variable {t.name} was not read while the tape recorded; "
                        "pass a tensor computed inside the `with` block."
                    )
                out.append(t.handle)
                continue
            if not isinstance(t, tf.Tensor) or not hasattr(t, "_id"):
                raise TypeError(
                    f"The target must be a tensor computed inside the tape's `with` block, got {type(t).__name__}. "
                    "Pass e.g. the loss tensor: tv.flow(tape, loss)."
                )
            if t._id not in self.graph.tensors:
                raise ValueError(
                    "The target was not produced while this tape recorded. "
                    "Compute it inside the `with tv.GradientTape() as tape:` block, then call tv.flow(tape, target)."
                )
            out.append(t)
        return out

    def _resolve_sources(self, sources) -> list:
        if sources is None:
            return []
        out = []
        for s in tf.nest.flatten(sources):
            if self.graph.node_of(s) is None:
                raise ValueError(
                    f"Source {getattr(s, 'name', type(s).__name__)!s} is neither a variable read nor a tensor seen "
                    "while the tape recorded; pass variables or tensors used inside the `with` block."
                )
            out.append(s)
        return out

    # -- the backward pass -------------------------------------------------------------------
    def _run(self, output_gradients) -> None:
        g = self.graph
        cap = g.capture
        watched = [v.handle for hid, v in cap.variables.items() if hid in cap.watched_variable_ids]
        watched += list(cap.tape_watched.values())  # a watch erased by tape.reset() does not count
        # d target / d t for every float tensor the tape holds, plus every watched leaf.
        on_tape = {}
        for op in cap.ops:
            if op.recorded:
                for o in op.outputs:
                    if g.tensors[o._id].trainable:
                        on_tape[o._id] = o
        for t in watched:
            on_tape.setdefault(t._id, t)
        for t in self._targets:  # TF gives d target / d target (the seed) even off the tape
            info = g.tensors.get(t._id)
            if info is not None and info.trainable and info.dtype != "resource":
                on_tape.setdefault(t._id, t)
        self._source_ids = list(on_tape)
        if output_gradients is not None:
            output_gradients = [None if x is None else tf.convert_to_tensor(x) for x in tf.nest.flatten(output_gradients)]
        grads, calls = replay_backward(cap.ops, watched, self._targets, list(on_tape.values()), output_gradients)
        self._grad_tensor = dict(zip(self._source_ids, grads))
        self.calls: list[BackwardCall] = calls
        self._edge_grad: dict[tuple, Any] = {}
        self._processed: dict[Any, int] = {}
        seed = output_gradients if output_gradients is not None else None
        self.steps: list[Step] = [
            Step(0, self.target_nodes[0], seed[0] if seed else np.ones(self._targets[0].shape, dtype=self._targets[0].dtype.as_numpy_dtype))
        ]
        for call in calls:
            node = g.op_node[call.op.index]
            step = Step(len(self.steps), node, None)
            self._processed.setdefault(node, step.index)
            if g.nx.nodes[node]["kind"] == "op":
                outs = [None if x is None else x for x in call.out_grads]
                step.tf_grad = outs[0] if len(outs) == 1 else outs
                on = call.op.inputs_on_tape
                for k, gi in enumerate(call.in_grads):
                    if gi is None or (k < len(on) and not on[k]):
                        continue  # TF drops what reaches an input that is not on the tape
                    t = call.op.inputs[k]
                    src = g.tensors[t._id].node
                    e = (src, node, k)
                    self._edge_grad[e] = gi
                    step.edges.append(e)
            else:  # a folded variable read: the gradient reaches the variable
                step.tf_grad = call.out_grads[0]
            self.steps.append(step)
        # A node TF runs no backward function for (a watched tensor, a variable reached
        # through its handle, e.g. by tf.gather) has its gradient once the last of its
        # contributions has arrived.
        called = set(self._processed)
        arrivals = {}
        for step in self.steps:
            for e in step.edges:
                if e[0] not in called:
                    arrivals[e[0]] = step.index
        self._processed.update(arrivals)
        self._np_cache: dict = {}

    def step_of(self, node) -> int | None:
        """The backward step at which node received its gradient (0 for the target)."""
        if node in self.target_nodes:
            return 0
        return self._processed.get(node)

    # -- totals --------------------------------------------------------------------------
    def grad_tensor(self, obj):
        """The TF value (Tensor or IndexedSlices) of d target / d obj, or None."""
        g = self.graph
        if isinstance(obj, str) and obj in g.nx:
            d = g.nx.nodes[obj]
            if d["kind"] == "variable":
                return self._grad_tensor.get(d["handle"])
            outs = d.get("outputs") or []
            return self._grad_tensor.get(outs[0]) if outs else None
        handle = getattr(obj, "handle", None)
        if handle is not None and hasattr(handle, "_id"):
            return self._grad_tensor.get(handle._id)
        tid = getattr(obj, "_id", None)
        if tid is None:
            raise TypeError(f"Expected a tf.Variable, a tensor or a node id, got {type(obj).__name__}.")
        return self._grad_tensor.get(tid)

    def grad(self, obj) -> np.ndarray | None:
        """d target / d obj as numpy (IndexedSlices made dense), None where TF gives None."""
        key = obj if isinstance(obj, str) else id(obj)
        if key not in self._np_cache:
            self._np_cache[key] = _to_numpy(self.grad_tensor(obj))
        return self._np_cache[key]

    def edge_grad(self, u, v, key) -> np.ndarray | None:
        """What flowed back along one edge (None if nothing did)."""
        return _to_numpy(self._edge_grad.get((u, v, key)))

    def contributions(self, obj) -> list[tuple[Any, np.ndarray]]:
        """[(consumer node, contribution)] for each edge leaving obj that carries gradient.

        For a tensor with several consumers these are the pieces TF adds up (fan-out)."""
        g = self.graph
        node = obj if isinstance(obj, str) else g.node_of(obj)
        if node is None:
            return []
        tid = None if isinstance(obj, str) or isinstance(obj, tf.Variable) else getattr(obj, "_id", None)
        out = []
        for u, v, k, d in g.data_edges(node):
            if tid is not None and d["tensor"] != tid:
                continue
            c = self._edge_grad.get((u, v, k))
            if c is not None:
                out.append((v, _to_numpy(c)))
        return out

    def gradients(self) -> dict[str, np.ndarray | None]:
        """{variable name: d target / d variable} for every variable the tape saw."""
        g = self.graph
        return {d["name"]: self.grad(n) for n, d in g.nx.nodes(data=True) if d["kind"] == "variable"}

    # -- stop reasons -------------------------------------------------------------------
    def why_none(self, obj) -> StopReason | None:
        """None if a gradient reaches obj, else the reason it does not."""
        g = self.graph
        node = obj if isinstance(obj, str) and obj in g.nx else g.node_of(obj)
        if node is None:
            name = getattr(obj, "name", None) or type(obj).__name__
            if isinstance(obj, tf.Variable):
                name = self._python_name(obj) or name.split(":")[0]
            elif isinstance(getattr(obj, "path", None), str):  # a Keras variable: its path
                name = self._python_name(obj) or obj.path
            return StopReason(None, "unconnected", f"{name} was never used while the tape was recording, so the target cannot depend on it.")
        if self.grad_tensor(obj if not isinstance(obj, str) else node) is not None:
            return None
        tid = getattr(obj, "_id", None)
        if tid is not None and not isinstance(obj, tf.Variable):
            info = g.tensors.get(tid)
            if info is not None and not info.trainable:
                return StopReason(node, "integer_dtype", self._msg_integer(node, info.dtype))
        return self.node_reason.get(node)

    def _python_name(self, var):
        return self.graph.capture.names.get(id(var))

    def _classify(self) -> None:
        g = self.graph
        G = g.nx
        cap = g.capture
        self._last_gen = cap.final_generation if cap.final_generation >= 0 else None
        self._target_name = g.display_name(self.target_nodes[0])
        called = {g.op_node[c.op.index] for c in self.calls}
        try:
            forward = list(nx.topological_sort(G))
        except nx.NetworkXUnfeasible:  # pragma: no cover - a tape cannot produce cycles
            forward = list(G.nodes)
        # Why a node's value is not on the tape at all (forward pass, causes flow downstream).
        self._off = {}
        for n in forward:
            self._off[n] = self._off_tape_cause(n)
        edge_reason: dict[tuple, StopReason] = {}
        node_reason: dict[Any, StopReason] = {}
        for n in reversed(forward):
            # edges leaving n are judged after their consumers (backward pass)
            for u, v, k, d in G.out_edges(n, keys=True, data=True):
                e = (u, v, k)
                if d["kind"] == "outside":
                    edge_reason[e] = StopReason(
                        e, "outside_tf",
                        f"{g.display_name(u)} left TensorFlow through .numpy() and came back as the constant "
                        f"{G.nodes[v]['label']}; the tape cannot follow values through Python or NumPy.", e,
                    )
                elif e not in self._edge_grad:
                    edge_reason[e] = self._edge_cause(e, d, v in called, node_reason)
            if n in self.target_nodes or self.grad_tensor(n) is not None:
                continue
            node_reason[n] = self._node_cause(n, edge_reason)
        self.edge_reason = edge_reason
        self.node_reason = node_reason
        self.stopped: list[StopReason] = list(edge_reason.values()) + list(node_reason.values())

    def _off_tape_cause(self, n) -> StopReason | None:
        """None if n's value is on the tape, else the first reason it is not."""
        g = self.graph
        d = g.nx.nodes[n]
        name = g.display_name(n)
        kind = d["kind"]
        if kind == "variable":
            if d["watched"]:
                return None
            ops = g.capture.ops
            if self._last_gen is not None and any(ops[i].tape_recording and ops[i].generation < self._last_gen for i in d["reads"]):
                return StopReason(n, "not_recorded", f"{name} was read before tape.reset(), which erased everything recorded so far.", n)
            return StopReason(n, "not_watched", self._msg_not_watched(n), n)
        if kind in ("constant", "input"):
            if d.get("came_from") is not None:
                src = g.display_name(d["came_from"])
                return StopReason(n, "outside_tf", f"{src} left TensorFlow through .numpy() and came back as the constant {d['label']}; the tape cannot follow values through Python or NumPy.", n)
            return StopReason(n, "not_watched", self._msg_not_watched(n), n)
        if kind == "watched":
            if d["outputs"][0] in g.capture.tape_watched:
                return None
            return StopReason(n, "not_recorded", f"tape.reset() erased the watch on {name}; call tape.watch({name}) again after the reset.", n)
        op = g.capture.ops[d["op_index"]]
        if op.recorded:
            return None
        if op.op_type in STOP_GRADIENT_OPS:
            src = [g.display_name(u) for u, _, _, _ in g.data_edges(n, out=False)]
            what = f"tf.stop_gradient({src[0]})" if src else "tf.stop_gradient"
            if d.get("name"):
                return StopReason(n, "stop_gradient", f"{name} comes out of {what}, which tells the tape to pass no gradient back.", n)
            return StopReason(n, "stop_gradient", f"{what} tells the tape to pass no gradient back through it.", n)
        if not op.tape_recording:
            return StopReason(n, "not_recorded", f"{name} was computed while the tape was paused (tape.stop_recording()), so it was never recorded.", n)
        if self._last_gen is not None and op.generation < self._last_gen:
            return StopReason(n, "not_recorded", f"{name} was computed before tape.reset(), which erased everything recorded so far.", n)
        joined = g.capture.watch_joined
        for u, _, _, dd in g.data_edges(n, out=False):
            key = g.nx.nodes[u].get("handle") if g.nx.nodes[u]["kind"] == "variable" else dd["tensor"]
            if joined.get(key, -1) > op.index:
                uname = g.display_name(u)
                return StopReason(n, "not_watched", f"{name} was computed before tape.watch({uname}), so the tape did not record it.", n)
        ints = None
        for u, _, k, dd in g.data_edges(n, out=False):
            info = g.tensors[dd["tensor"]]
            if not info.trainable:
                ints = ints or self._integer_cause(n, u, info.dtype, n)
                continue
            cause = self._off.get(u)
            if cause is not None:
                return StopReason(n, cause.reason, cause.message, cause.origin)
        if ints is not None:
            return ints
        return StopReason(n, "not_watched", f"{name} was computed only from values the tape does not watch.", n)

    def _edge_cause(self, e, d, consumer_called: bool, node_reason) -> StopReason:
        g = self.graph
        u, v, k = e
        vd = g.nx.nodes[v]
        info = g.tensors[d["tensor"]]
        uname, vname = g.display_name(u), g.display_name(v)
        op = g.capture.ops[vd["op_index"]] if vd["kind"] == "op" else None
        if op is not None and op.op_type in STOP_GRADIENT_OPS:
            return StopReason(e, "stop_gradient", f"{uname} goes through tf.stop_gradient, which tells the tape to pass no gradient back to it.", e)
        if not info.trainable:
            return self._integer_cause(e, u, info.dtype, e)
        if op is not None and op.op_type in STATEFUL_OPS:
            var = self._assigned_variable(v)
            var = g.display_name(var) if var is not None else "a variable"
            return StopReason(e, "stateful", f"{uname} was written into {var} by {op.op_type}; assigning to a variable is a side effect, not a differentiable step.", e)
        if op is not None and not op.tape_recording:
            return StopReason(e, "not_recorded", f"{vname} ran while the tape was paused (tape.stop_recording()), so it was never recorded.", e)
        if op is not None and self._last_gen is not None and op.generation < self._last_gen:
            return StopReason(e, "not_recorded", f"{vname} ran before tape.reset(), which erased everything recorded so far.", e)
        off = self._off.get(u)
        if off is not None:
            return StopReason(e, off.reason, off.message, off.origin)
        if op is not None and consumer_called:
            return StopReason(e, "no_gradient", f"{op.op_type} has no gradient in TensorFlow (it is not differentiable), so nothing flows back to {uname}.", e)
        if vd.get("replaced_by") is not None:
            custom = g.nx.nodes[vd["replaced_by"]].get("op_type")
            return StopReason(e, "unconnected", f"{custom} (tf.custom_gradient) supplies the gradient of what {vname} computed, so the tape does not differentiate {vname} and {uname} gets nothing through it.", e)
        inner = node_reason.get(v)
        if inner is None or inner.reason == "unconnected":
            return StopReason(e, "unconnected", f"{vname} does not lead to {self._target_name}, so {uname} gets no gradient through it.", e)
        return StopReason(e, inner.reason, inner.message, inner.origin)

    def _node_cause(self, n, edge_reason) -> StopReason:
        g = self.graph
        reasons = [edge_reason[e] for e in g.nx.out_edges(n, keys=True) if e in edge_reason]
        for r in reasons:
            if r.reason != "unconnected":
                return StopReason(n, r.reason, r.message, r.origin)
        off = self._off.get(n)
        if off is not None:
            return off
        info = g.output_info(n)
        if info is not None and not info.trainable:
            return self._integer_cause(n, n, info.dtype, n)
        return StopReason(n, "unconnected", f"{self._target_name} does not depend on {g.display_name(n)}.", n)

    def _assigned_variable(self, v):
        for u, _, _, d in self.graph.data_edges(v, out=False):
            if self.graph.nx.nodes[u]["kind"] == "variable" and self.graph.tensors[d["tensor"]].dtype == "resource":
                return u
        return None

    def _msg_not_watched(self, n) -> str:
        g = self.graph
        d = g.nx.nodes[n]
        name = g.display_name(n)
        if d["kind"] == "variable":
            # tape.watch() takes a tf.Variable: for a Keras variable, the one inside it.
            watch = f"tape.watch({name})" if not d.get("path") else f"tape.watch(v.value) with v the Keras variable {name}"
            if not d["trainable"]:
                return f"{name} is a non-trainable variable (trainable=False), so the tape does not watch it; call {watch} to get its gradient."
            return f"{name} was not watched: the tape was created with watch_accessed_variables=False; call {watch}."
        if d["kind"] == "constant":
            return f"{name} is not a variable, so the tape does not track it (it tracks variables and tensors passed to tape.watch())."
        if d["kind"] == "input":
            return f"{name} is a plain tensor, not a variable; the tape only tracks it after tape.watch({name})."
        return f"{name} was computed only from values the tape does not watch, so it is not on the tape."

    def _integer_cause(self, where, producer, dtype, origin) -> StopReason:
        """A non-float tensor made by `producer` cuts the path at `where`.

        If an op other than a cast made it from float inputs (ArgMax, Shape, Equal, ...),
        that op is the cut: it has no gradient, and casting its result back to float
        does not change that. Otherwise the dtype is the reason (a tf.cast to int)."""
        g = self.graph
        d = g.nx.nodes[producer]
        if d["kind"] == "op" and d["op_type"] not in CAST_OPS and any(
            g.tensors[dd["tensor"]].trainable for _, _, _, dd in g.data_edges(producer, out=False)
        ):
            return StopReason(
                where, "no_gradient",
                f"{g.display_name(producer)} comes from {d['op_type']}, which has no gradient in TensorFlow: "
                f"its {dtype} result is not differentiable, and casting it to float does not change that.",
                producer,
            )
        return StopReason(where, "integer_dtype", self._msg_integer(producer, dtype), origin)

    def _msg_integer(self, n, dtype) -> str:
        return f"{self.graph.display_name(n)} is a {dtype} tensor; gradients only flow through floating-point tensors (cast to tf.float32 first)."

    def __repr__(self) -> str:
        return f"GradientFlow(target={self.graph.display_name(self.target_nodes[0])}, steps={len(self.steps)}, stopped={len(self.stopped)})"


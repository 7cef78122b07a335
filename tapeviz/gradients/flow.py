"""GradientFlow: how d target / d everything came about, edge by edge, step by step.

TensorFlow itself does the arithmetic: the recorded ops are replayed into TF's backprop
(``Capture.replay``), so totals are what ``tape.gradient`` computes and every edge carries
exactly what the op's gradient function returned for that input. This module only reads
the result: which edge got what, at which step, and for every edge that got nothing,
the reason (structured: see ``tapeviz.gradients.stop_reasons``).

Steps: ``steps[0]`` seeds the target with d target / d target; step k (k >= 1) is the
k-th backward function TF called. A picture "at step k" shows what steps 0..k computed
and nothing more; the last step is the finished backward pass.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
import tensorflow as tf

from ..messages import say
from ..record.capture import GRAPH_MODE_MESSAGE, BackwardCall, GraphModeError, is_symbolic
from ..record.graph import STATEFUL_OPS, TapeGraph
from .stop_reasons import Cause, Facts, Reason, StopReason, tf_equivalent

__all__ = ["GradientFlow", "Step", "StopReason", "Reason", "Cause", "REASONS"]

#: A graph edge: (producer node, consumer node, the consumer's input position).
Edge = tuple[str, str, int]

STOP_GRADIENT_OPS = frozenset({"StopGradient", "PreventGradient"})
CAST_OPS = frozenset({"Cast", "Bitcast"})

#: reason code -> the legend's short English label (each language: messages "legend.<code>").
REASONS = {r.value: say(f"legend.{r.value}") for r in Reason}


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
    processed the ops in, ``stopped`` every edge and node that carries no gradient and
    ``cuts`` each place where a path is cut, once.
    """

    def __init__(self, graph: TapeGraph, target: Any, sources: Any = None, output_gradients: Any = None):
        self.graph = graph
        self.target = target
        self._target_ids = self._resolve_targets(target)
        self.target_nodes = [graph.tensors[t].node if t in graph.tensors else f"var{t}" for t in self._target_ids]
        self.sources = self._resolve_sources(sources)
        self._run(output_gradients)
        self._classify()

    # -- inputs ------------------------------------------------------------------------
    def _resolve_targets(self, target) -> list[int]:
        flat = tf.nest.flatten(target)
        if not flat:
            raise ValueError("tapeviz.flow needs a target: pass the tensor you would give tape.gradient().")
        g = self.graph
        out = []
        for t in flat:
            if is_symbolic(t):
                raise GraphModeError(GRAPH_MODE_MESSAGE)
            if isinstance(t, tf.Variable) or hasattr(t, "path") and hasattr(t, "handle"):
                var_key = g.key_of(t)
                if var_key is None or g.node_of(t) is None:
                    raise ValueError(
                        f"The target variable {t.name} was not read while the tape recorded; "
                        "pass a tensor computed inside the `with` block."
                    )
                out.append(var_key)
                continue
            key = g.key_of(t) if isinstance(t, tf.Tensor) else None
            if key is None:
                raise TypeError(
                    f"The target must be a tensor computed inside the tape's `with` block, got {type(t).__name__}. "
                    "Pass e.g. the loss tensor: tv.flow(tape, loss)."
                )
            if key not in g.tensors:
                raise ValueError(
                    "The target was not produced while this tape recorded. "
                    "Compute it inside the `with tv.GradientTape() as tape:` block, then call tv.flow(tape, target)."
                )
            out.append(key)
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
        # d target / d t for every float tensor the tape holds, plus every watched leaf.
        on_tape: dict[int, None] = {}
        for op in cap.ops:
            if op.recorded:
                for o in op.outputs:
                    if g.tensors[o].trainable:
                        on_tape[o] = None
        for h in cap.watched_variable_ids:
            on_tape.setdefault(h, None)
        for t in cap.tape_watched:
            on_tape.setdefault(t, None)
        for t in self._target_ids:  # TF gives d target / d target (the seed) even off the tape
            info = g.tensors.get(t)
            if info is not None and info.trainable and info.dtype != "resource":
                on_tape.setdefault(t, None)
        self._source_ids = list(on_tape)
        if output_gradients is not None:
            output_gradients = [
                None if x is None else tf.convert_to_tensor(x) for x in tf.nest.flatten(output_gradients)
            ]
        grads, calls = cap.replay(self._target_ids, self._source_ids, output_gradients)
        self._grad_tensor = dict(zip(self._source_ids, grads, strict=True))
        self.calls: list[BackwardCall] = calls
        self._edge_grad: dict[tuple, Any] = {}
        #: edge -> the step at which its contribution was computed
        self.edge_step: dict[tuple, int] = {}
        first = g.tensors[self._target_ids[0]] if self._target_ids[0] in g.tensors else None
        if output_gradients is not None:
            seed = output_gradients[0]
        else:
            dtype = first.dtype if first is not None and first.trainable else "float32"
            seed = np.ones(first.shape if first is not None else (), dtype=tf.as_dtype(dtype).as_numpy_dtype)
        self.steps: list[Step] = [Step(0, self.target_nodes[0], seed)]
        last_step: dict[Any, int] = {}  # node -> its last backward call
        for call in calls:
            node = g.op_node[call.op.index]
            step = Step(len(self.steps), node, None)
            last_step[node] = step.index
            if g.nx.nodes[node]["kind"] == "op":
                outs = list(call.out_grads)
                step.tf_grad = outs[0] if len(outs) == 1 else outs
                on = call.op.inputs_on_tape
                for k, gi in enumerate(call.in_grads):
                    if gi is None or (k < len(on) and not on[k]):
                        continue  # TF drops what reaches an input that is not on the tape
                    src = g.tensors[call.op.inputs[k]].node
                    e = (src, node, k)
                    self._edge_grad[e] = gi
                    self.edge_step[e] = step.index
                    step.edges.append(e)
            else:  # a folded variable read: part of the variable's gradient arrives
                step.tf_grad = call.out_grads[0]
            self.steps.append(step)
        # A node has its whole gradient once its last backward call ran; a node TF runs no
        # backward function for (a watched tensor, a variable reached through its handle,
        # e.g. by tf.gather) once the last of its contributions has arrived.
        done = dict(last_step)
        for e, s in self.edge_step.items():
            if e[0] not in last_step:
                done[e[0]] = max(done.get(e[0], 0), s)
        for target_node in self.target_nodes:
            done[target_node] = 0
        self._done = done
        self._np_cache: dict = {}

    @property
    def last_step(self) -> int:
        """Index of the last step: the picture at this step is the finished backward pass."""
        return len(self.steps) - 1

    def check_step(self, step: int | None) -> int:
        """``step`` as a valid step index (None: the finished pass), or a clear error."""
        if step is None:
            return self.last_step
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
            raise TypeError(f"step must be an int (or None for the finished pass), got {type(step).__name__}.")
        if not 0 <= step <= self.last_step:
            raise ValueError(
                f"step {step} is out of range: the backward pass of {self.graph.display_name(self.target_nodes[0])} "
                f"has steps 0 to {self.last_step} (0 seeds the target, {self.last_step} is the finished pass)."
            )
        return int(step)

    def step_of(self, node: Hashable) -> int | None:
        """The backward step after which node's gradient is complete (0 for the target)."""
        return self._done.get(node)

    def arrived(self, edge: Edge, step: int) -> bool:
        """Whether the edge's contribution was computed at or before `step`."""
        s = self.edge_step.get(edge)
        return s is not None and s <= step

    # -- totals --------------------------------------------------------------------------
    def grad_tensor(self, obj: Any) -> tf.Tensor | tf.IndexedSlices | None:
        """The TF value (Tensor or IndexedSlices) of d target / d obj, or None."""
        g = self.graph
        if isinstance(obj, str) and obj in g.nx:
            d = g.nx.nodes[obj]
            if d["kind"] == "variable":
                return self._grad_tensor.get(d["handle"])
            outs = d.get("outputs") or []
            return self._grad_tensor.get(outs[0]) if outs else None
        key = g.key_of(obj)
        if key is None:
            raise TypeError(f"Expected a tf.Variable, a tensor or a node id, got {type(obj).__name__}.")
        return self._grad_tensor.get(key)

    def grad(self, obj: Any) -> np.ndarray | None:
        """d target / d obj as numpy (IndexedSlices made dense), None where TF gives None."""
        key = obj if isinstance(obj, str) else id(obj)
        if key not in self._np_cache:
            self._np_cache[key] = _to_numpy(self.grad_tensor(obj))
        return self._np_cache[key]

    def edge_grad(self, u: str, v: str, key: int) -> np.ndarray | None:
        """What flowed back along one edge (None if nothing did)."""
        e = (u, v, key)
        cache = self.__dict__.setdefault("_edge_np", {})
        if e not in cache:
            cache[e] = _to_numpy(self._edge_grad.get(e))
        return cache[e]

    def total_along(self, edges: Iterable[Edge]) -> np.ndarray | None:
        """What flowed back along several edges together, added by TensorFlow (tf.math.add_n:
        the sum TF itself forms when one tensor feeds several ops). None when none carries
        anything; the parts' shapes must agree (they do for the uses of one tensor)."""
        parts = [self._edge_grad[e] for e in edges if e in self._edge_grad]
        if not parts:
            return None
        key = tuple(sorted(edges, key=str))
        cache = self.__dict__.setdefault("_sums", {})
        if key not in cache:
            dense = [tf.convert_to_tensor(p) for p in parts]
            cache[key] = _to_numpy(dense[0] if len(dense) == 1 else tf.math.add_n(dense))
        return cache[key]

    def carries(self, edge: Edge) -> bool:
        """Whether any gradient flowed back along the edge."""
        return edge in self._edge_grad

    def contributions(self, obj: Any) -> list[tuple[str, np.ndarray]]:
        """[(consumer node, contribution)] for each edge leaving obj that carries gradient.

        For a tensor with several consumers these are the pieces TF adds up (fan-out). An
        edge whose gradient is a handle, not numbers (a TensorList's variant), has none."""
        g = self.graph
        node = obj if isinstance(obj, str) else g.node_of(obj)
        if node is None:
            return []
        tid = None
        if not isinstance(obj, str) and g.nx.nodes[node]["kind"] != "variable":
            tid = g.key_of(obj)
        out = []
        for u, v, k, d in g.data_edges(node):
            if tid is not None and d["tensor"] != tid:
                continue
            c = _to_numpy(self._edge_grad.get((u, v, k)))
            if c is not None:
                out.append((v, c))
        return out

    def gradients(self) -> dict[str, np.ndarray | None]:
        """{variable name: d target / d variable} for every variable the tape saw."""
        g = self.graph
        return {d["name"]: self.grad(n) for n, d in g.nx.nodes(data=True) if d["kind"] == "variable"}

    # -- stop reasons -------------------------------------------------------------------
    def why_none(self, obj: Any) -> StopReason | None:
        """None if a gradient reaches obj, else the reason it does not."""
        g = self.graph
        node = obj if isinstance(obj, str) and obj in g.nx else g.node_of(obj)
        if node is None:
            name = getattr(obj, "name", None) or type(obj).__name__
            if isinstance(obj, tf.Variable):
                name = g.capture.name_of_object(obj) or name.split(":")[0]
            elif isinstance(getattr(obj, "path", None), str):  # a Keras variable: its path
                name = g.capture.name_of_object(obj) or obj.path
            return StopReason(None, Reason.UNCONNECTED, Cause.NEVER_USED, Facts(subject=name, target=self._target_name))
        if self.grad_tensor(obj if not isinstance(obj, str) else node) is not None:
            return None
        if not isinstance(obj, str) and g.nx.nodes[node]["kind"] != "variable":
            key = g.key_of(obj)
            info = g.tensors.get(key) if key is not None else None
            if info is not None and not info.trainable:
                return StopReason(
                    node,
                    Reason.INTEGER_DTYPE,
                    Cause.INTEGER,
                    Facts(subject=g.display_name(node), dtype=info.dtype),
                    node,
                )
        return self.node_reason.get(node)

    def _classify(self) -> None:
        g = self.graph
        G = g.nx
        cap = g.capture
        self._last_gen = cap.final_generation if cap.final_generation >= 0 else None
        self._target_name = g.display_name(self.target_nodes[0])
        called = {g.op_node[c.op.index] for c in self.calls}
        forward = g.forward_order
        # Why a node's value is not on the tape at all (forward pass, causes flow downstream).
        self._off = {}
        for n in forward:
            self._off[n] = self._off_tape_cause(n)
        left = self._left_tf()
        edge_reason: dict[tuple, StopReason] = {}
        node_reason: dict[Any, StopReason] = {}
        for n in reversed(forward):
            # edges leaving n are judged after their consumers (backward pass)
            for u, v, k, d in G.out_edges(n, keys=True, data=True):
                e = (u, v, k)
                if d["kind"] == "outside":
                    edge_reason[e] = self._round_trip(e, u, v)
                elif e not in self._edge_grad:
                    cause = self._edge_cause(e, d, v in called, node_reason)
                    if cause.reason is Reason.UNCONNECTED and v in left:
                        cause = left[v].moved(e)
                    edge_reason[e] = cause
            if n in self.target_nodes or self.grad_tensor(n) is not None:
                continue
            cause = self._node_cause(n, edge_reason)
            if cause.reason is Reason.UNCONNECTED and n in left:
                cause = left[n].moved(n)
            node_reason[n] = cause
        self.edge_reason = edge_reason
        self.node_reason = node_reason
        self.stopped: list[StopReason] = list(edge_reason.values()) + list(node_reason.values())
        cuts: dict[Any, StopReason] = {}
        for s in self.stopped:
            cuts.setdefault((s.reason, s.origin if s.origin is not None else s.where), s)
        #: each place where a path to the target is cut, once (fl.stopped lists every edge and node)
        self.cuts: list[StopReason] = list(cuts.values())

    def _facts(self, **kw) -> Facts:
        return Facts(target=self._target_name, **kw)

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
            if any(g.capture.read_before_reset(ops[i]) for i in d["reads"]):
                return StopReason(n, Reason.NOT_RECORDED, Cause.READ_BEFORE_RESET, self._facts(subject=name), n)
            return self._not_watched(n)
        if kind in ("constant", "input"):
            if d.get("came_from") is not None:
                return self._round_trip(n, d["came_from"], n)
            return self._not_watched(n)
        if kind == "watched":
            if d["outputs"][0] in g.capture.tape_watched:
                return None
            return StopReason(n, Reason.NOT_RECORDED, Cause.WATCH_RESET, self._facts(subject=name), n)
        op = g.capture.ops[d["op_index"]]
        if op.recorded:
            return None
        if op.op_type in STOP_GRADIENT_OPS:
            src = [g.display_name(u) for u, _, _, _ in g.data_edges(n, out=False)]
            return StopReason(
                n,
                Reason.STOP_GRADIENT,
                Cause.STOP_OUTPUT,
                self._facts(subject=name, source=src[0] if src else "", named=bool(d.get("name"))),
                n,
            )
        if not op.tape_recording:
            return StopReason(n, Reason.NOT_RECORDED, Cause.PAUSED, self._facts(subject=name), n)
        if self._last_gen is not None and op.generation < self._last_gen:
            return StopReason(n, Reason.NOT_RECORDED, Cause.BEFORE_RESET, self._facts(subject=name), n)
        joined = g.capture.watch_joined
        for u, _, _, dd in g.data_edges(n, out=False):
            key = g.nx.nodes[u].get("handle") if g.nx.nodes[u]["kind"] == "variable" else dd["tensor"]
            if joined.get(key, -1) > op.index:
                return StopReason(
                    n, Reason.NOT_WATCHED, Cause.WATCHED_LATE, self._facts(subject=name, source=g.display_name(u)), n
                )
        ints = None
        for u, _, _key, dd in g.data_edges(n, out=False):
            info = g.tensors[dd["tensor"]]
            if not info.trainable:
                ints = ints or self._integer_cause(n, u, info.dtype, n)
                continue
            cause = self._off.get(u)
            if cause is not None:
                return cause.moved(n)
        if ints is not None:
            return ints
        return StopReason(n, Reason.NOT_WATCHED, Cause.DERIVED, self._facts(subject=name), n)

    def _not_watched(self, n) -> StopReason:
        g = self.graph
        d = g.nx.nodes[n]
        name = g.display_name(n)
        kind = d["kind"]
        if kind == "variable":
            keras = bool(d.get("path"))
            cause = Cause.NON_TRAINABLE if not d["trainable"] else Cause.UNWATCHED_VARIABLE
            return StopReason(n, Reason.NOT_WATCHED, cause, self._facts(subject=name, keras=keras), n)
        cause = {"constant": Cause.CONSTANT, "input": Cause.PLAIN_TENSOR}.get(kind, Cause.DERIVED)
        return StopReason(n, Reason.NOT_WATCHED, cause, self._facts(subject=name), n)

    def _round_trip(self, where, exported_node, constant_node) -> StopReason:
        """A value that left TF and came back equal, as a new constant."""
        g = self.graph
        d = g.nx.nodes[constant_node]
        export = self._export_of(exported_node)
        facts = self._export_facts(exported_node, export, label=d["label"])
        return StopReason(where, Reason.OUTSIDE_TF, Cause.ROUND_TRIP, facts, where)

    def _export_of(self, node):
        g = self.graph
        for t in g.nx.nodes[node].get("outputs") or []:
            export = g.export_of(t)
            if export is not None:
                return export
        return None

    def _export_facts(self, node, export, **kw) -> Facts:
        via = ".numpy()"
        fn = None
        if export is not None:
            fn = export.numpy_function
            if export.how == "float":
                via = "float()"
            elif export.how == "array":
                via = f"np.{fn}()" if fn else (export.expression or "np.asarray()")
        return self._facts(
            subject=self.graph.display_name(node),
            source=self.graph.display_name(node),
            via=via,
            expression=(export.expression or "") if export is not None else "",
            line=(export.line or 0) if export is not None else 0,
            tf_equivalent=tf_equivalent(fn),
            **kw,
        )

    def _left_tf(self) -> dict[Any, StopReason]:
        """Nodes whose only way to the target went through NumPy or Python.

        The evidence: a value computed from something watched ends there (it was handed
        to NumPy, np.mean(x2), or to Python, float(t); or nothing in TF used it), and the
        target depends on a tensor made from a NumPy value after that moment. That tensor
        most likely is the value coming back, and the tape cannot trace it. Every node
        that reaches such a dead end (and would otherwise be "unconnected") gets that
        reason instead, naming the call when tapeviz saw it."""
        g = self.graph
        G = g.nx
        cap = g.capture
        self.left_links: list[tuple[Any, Any]] = []
        if not cap.reentries:
            return {}
        to_target: set = set()
        for t in self.target_nodes:
            to_target |= nx.ancestors(G, t) | {t}
        back = sorted(
            (tid, r)
            for tid, r in cap.reentries.items()
            if tid in g.tensors and g.tensors[tid].node in to_target and g.tensors[tid].trainable
        )
        if not back:
            return {}
        ends: list[tuple[int, Any]] = []  # (tensor id, export or None)
        for tid, export in cap.exported.items():
            if tid in g.tensors and g.tensors[tid].trainable:
                ends.append((tid, export))
        exported = {tid for tid, _ in ends}
        for n, d in G.nodes(data=True):
            if d["kind"] == "op" and d["recorded"] and G.out_degree(n) == 0:
                ends.extend((t, None) for t in d["outputs"] if t not in exported and g.tensors[t].trainable)
        out: dict[Any, StopReason] = {}
        links: list[tuple[Any, Any]] = []
        for tid, export in ends[:64]:
            node = g.tensors[tid].node
            if node in to_target or self._off.get(node) is not None:
                continue  # it still reaches the target, or carried no gradient anyway
            after = export.after_uid if export is not None else tid
            came = next(((t, r) for t, r in back if t > after), None)
            if came is None:
                continue
            t_back, r = came
            extra = dict(label=G.nodes[g.tensors[t_back].node]["label"], back=r.expression or "", back_line=r.line or 0)
            if export is not None:
                stop_cause, facts = Cause.LEFT, self._export_facts(node, export, **extra)
            else:
                stop_cause = Cause.LEFT_UNSEEN
                facts = self._facts(subject=g.display_name(node), source=g.display_name(node), **extra)
            links.append((node, g.tensors[t_back].node))
            for n in nx.ancestors(G, node) | {node}:
                out.setdefault(n, StopReason(n, Reason.OUTSIDE_TF, stop_cause, facts, node))
        #: (where a value left TF, the tensor it most likely came back as): pictures draw it
        self.left_links = links
        return out

    def _edge_cause(self, e, d, consumer_called: bool, node_reason) -> StopReason:
        g = self.graph
        u, v, k = e
        vd = g.nx.nodes[v]
        info = g.tensors[d["tensor"]]
        uname, vname = g.display_name(u), g.display_name(v)
        op = g.capture.ops[vd["op_index"]] if vd["kind"] == "op" else None
        if op is not None and op.op_type in STOP_GRADIENT_OPS:
            return StopReason(e, Reason.STOP_GRADIENT, Cause.STOP_EDGE, self._facts(subject=uname), v)
        if not info.trainable:
            return self._integer_cause(e, u, info.dtype, e)
        if op is not None and op.op_type in STATEFUL_OPS:
            var = g.assigned_variable(v)
            return StopReason(
                e,
                Reason.STATEFUL,
                Cause.ASSIGNED,
                self._facts(subject=uname, op=op.op_type, variable=g.display_name(var) if var is not None else ""),
                e,
            )
        if op is not None and not op.tape_recording:
            return StopReason(e, Reason.NOT_RECORDED, Cause.PAUSED, self._facts(subject=vname), e)
        if op is not None and self._last_gen is not None and op.generation < self._last_gen:
            return StopReason(e, Reason.NOT_RECORDED, Cause.BEFORE_RESET, self._facts(subject=vname), e)
        off = self._off.get(u)
        if off is not None:
            return off.moved(e)
        if op is not None and consumer_called:
            return StopReason(
                e, Reason.NO_GRADIENT, Cause.NOT_DIFFERENTIABLE, self._facts(subject=uname, op=op.op_type), e
            )
        if vd.get("replaced_by") is not None:
            custom = g.nx.nodes[vd["replaced_by"]].get("op_type", "")
            return StopReason(
                e, Reason.UNCONNECTED, Cause.CUSTOM_GRADIENT, self._facts(subject=uname, consumer=vname, op=custom), e
            )
        inner = node_reason.get(v)
        if inner is None or inner.reason is Reason.UNCONNECTED:
            return StopReason(e, Reason.UNCONNECTED, Cause.NOT_LEADING, self._facts(subject=uname, consumer=vname), e)
        return inner.moved(e)

    def _node_cause(self, n, edge_reason) -> StopReason:
        g = self.graph
        reasons = [edge_reason[e] for e in g.nx.out_edges(n, keys=True) if e in edge_reason]
        for r in reasons:
            if r.reason is not Reason.UNCONNECTED:
                return r.moved(n)
        off = self._off.get(n)
        if off is not None:
            return off
        info = g.output_info(n)
        if info is not None and not info.trainable:
            return self._integer_cause(n, n, info.dtype, n)
        return StopReason(n, Reason.UNCONNECTED, Cause.NO_DEPENDENCY, self._facts(subject=g.display_name(n)), n)

    def _integer_cause(self, where, producer, dtype, origin) -> StopReason:
        """A non-float tensor made by `producer` cuts the path at `where`.

        If an op other than a cast made it from float inputs (ArgMax, Shape, Equal, ...),
        that op is the cut: it has no gradient, and casting its result back to float
        does not change that. Otherwise the dtype is the reason (a tf.cast to int)."""
        g = self.graph
        d = g.nx.nodes[producer]
        name = g.display_name(producer)
        if (
            d["kind"] == "op"
            and d["op_type"] not in CAST_OPS
            and any(g.tensors[dd["tensor"]].trainable for _, _, _, dd in g.data_edges(producer, out=False))
        ):
            return StopReason(
                where,
                Reason.NO_GRADIENT,
                Cause.INTEGER_RESULT,
                self._facts(subject=name, op=d["op_type"], dtype=dtype),
                producer,
            )
        return StopReason(where, Reason.INTEGER_DTYPE, Cause.INTEGER, self._facts(subject=name, dtype=dtype), origin)

    def __repr__(self) -> str:
        target = self.graph.display_name(self.target_nodes[0])
        return f"GradientFlow(target={target}, steps={len(self.steps)}, stopped={len(self.stopped)})"


def flow_over(graph: TapeGraph, target, *, sources=None, output_gradients=None) -> GradientFlow:
    """tv.flow on a graph: a recording does not change after its block, so the flow of one
    target is computed once and reused (a view, then a save, then the explorer replay TF's
    backprop once); with ``output_gradients`` it is computed each time."""
    if not graph.capture.ops:
        raise ValueError("The tape recorded no operations: run your computation inside the `with` block.")
    if output_gradients is not None:
        return GradientFlow(graph, target, sources=sources, output_gradients=output_gradients)
    return graph.flow_of(target, sources, lambda: GradientFlow(graph, target, sources=sources))

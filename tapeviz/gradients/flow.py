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
from typing import Any, cast

import numpy as np
import tensorflow as tf

from ..messages import say
from ..record.graph import TapeGraph
from ..record.records import GRAPH_MODE_MESSAGE, GraphModeError, is_symbolic
from ..record.replay import BackwardCall
from ..record.values import sum_squares
from .stop_causes import classify, read_facts
from .stop_reasons import Cause, Facts, Reason, StopReason

__all__ = ["GradientFlow", "Step", "StopReason", "Reason", "Cause", "REASONS"]

#: A graph edge: (producer node, consumer node, the consumer's input position).
Edge = tuple[str, str, int]

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
    if isinstance(t, tf.Tensor) and hasattr(t, "numpy"):
        try:
            # TF's documented zero-copy view of a CPU tensor; read-only, as the tensor is
            # immutable (t.numpy() copies: 0.2 s for ResNet50's 276 gradients)
            return np.asarray(memoryview(t))
        except (TypeError, ValueError, BufferError, NotImplementedError):
            return np.asarray(t.numpy())  # a dtype with no buffer format (strings, bfloat16)
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
        self._target_name = graph.display_name(self.target_nodes[0])
        self.sources = self._resolve_sources(sources)
        self._backward(output_gradients)
        stops = classify(
            read_facts(graph),
            self.target_nodes,
            called={step.node for step in self.steps[1:]},
            carried=self._edge_grad,
            reached={n for n in graph.nx if self.computed_tensor(n) is not None},
            unregistered=self.unregistered,
        )
        self.edge_reason = stops.edge_reason
        self.node_reason = stops.node_reason
        self.stopped: list[StopReason] = stops.stopped
        #: each place where a path to the target is cut, once (fl.stopped lists every edge and node)
        self.cuts: list[StopReason] = stops.cuts
        #: (where a value left TF, the tensor it most likely came back as): pictures draw it
        self.left_links: list[tuple[Any, Any]] = stops.left_links

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
                # A variable as the target is valid TF (tape.gradient(v, [v, w]) = [ones, None]):
                # the target is then a source itself, whether or not the tape saw it read.
                g.variable_node(t)
                out.append(cast(int, g.key_of(t)))  # a variable's handle id: never None
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
    def _backward(self, output_gradients) -> None:
        """TF runs the backward pass (the replay); this reads it, one step per backward
        function TF called, in TF's order: reversed topological order, as in any backprop."""
        seeds = None
        if output_gradients is not None:
            seeds = [None if x is None else tf.convert_to_tensor(x) for x in tf.nest.flatten(output_gradients)]
        self._source_ids = self._on_tape()
        grads, self.calls = self.graph.capture.replay(self._target_ids, self._source_ids, seeds)
        #: tensor id (a variable's: its handle id) -> d target / d tensor, as TF computed it
        self._grad_of: dict[int, Any] = dict(zip(self._source_ids, grads, strict=True))
        #: op node -> TF's LookupError for each op with no registered gradient that the pass
        #: reached: tape.gradient raises it, so grad() does too (the picture still draws)
        self.unregistered: dict[Any, LookupError] = {
            self.graph.op_node[c.op.index]: c.missing for c in self.calls if c.missing is not None
        }
        #: edge -> what TF's gradient function passed back along it
        self._edge_grad: dict[tuple, Any] = {}
        #: edge -> the step at which its contribution was computed
        self.edge_step: dict[tuple, int] = {}
        self.steps: list[Step] = [Step(0, self.target_nodes[0], self._seed(seeds))]
        for call in self.calls:
            self.steps.append(self._read(call, len(self.steps)))
        self._done = self._completed_at()
        self._np_cache: dict = {}

    def _on_tape(self) -> list[int]:
        """What to ask d target / d of: every float tensor the tape holds, every watched
        leaf, and the target itself (TF gives d target / d target even off the tape)."""
        g = self.graph
        cap = g.capture
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
        for t in self._target_ids:
            info = g.tensors.get(t)
            if info is not None and info.trainable and info.dtype != "resource" or self._is_variable(t):
                on_tape.setdefault(t, None)
        return list(on_tape)

    def _seed(self, seeds: list | None) -> Any:
        """d target / d target: the user's output_gradients, else ones shaped as the target."""
        t = self._target_ids[0]
        if seeds is not None:
            return seeds[0]
        if self._is_variable(t):  # d v / d v: TF's own ones, shaped as v
            return self._grad_of[t]
        first = self.graph.tensors.get(t)
        dtype = first.dtype if first is not None and first.trainable else "float32"
        return np.ones(first.shape if first is not None else (), dtype=tf.as_dtype(dtype).as_numpy_dtype)

    def _read(self, call: BackwardCall, index: int) -> Step:
        """One backward call: the gradient that arrived at its node, and what the op's
        gradient function passed back to each input on the tape."""
        g = self.graph
        node = g.op_node[call.op.index]
        if g.nx.nodes[node]["kind"] != "op":  # a folded variable read: part of the variable's gradient
            return Step(index, node, call.out_grads[0])
        outs = list(call.out_grads)
        step = Step(index, node, outs[0] if len(outs) == 1 else outs)
        on_tape = call.op.inputs_on_tape
        for k, d_input in enumerate(call.in_grads):
            if d_input is None or (k < len(on_tape) and not on_tape[k]):
                continue  # TF drops what reaches an input that is not on the tape
            e = (g.tensors[call.op.inputs[k]].node, node, k)
            self._edge_grad[e] = d_input
            self.edge_step[e] = index
            step.edges.append(e)
        return step

    def _completed_at(self) -> dict[Any, int]:
        """node -> the step after which its gradient is whole: its last backward call; for a
        node TF runs no backward function for (a watched tensor, a variable reached through
        its handle, e.g. by tf.gather), the last of its contributions; 0 for the target."""
        done = {step.node: step.index for step in self.steps[1:]}
        called = set(done)
        for e, s in self.edge_step.items():
            if e[0] not in called:
                done[e[0]] = max(done.get(e[0], 0), s)
        for target_node in self.target_nodes:
            done[target_node] = 0
        return done

    def _is_variable(self, key: int) -> bool:
        """Whether a target id is a variable's handle (the target is a source)."""
        node = f"var{key}"
        return node in self.graph.nx and self.graph.nx.nodes[node]["kind"] == "variable"

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
        """The TF value (Tensor or IndexedSlices) of d target / d obj, or None.

        Raises TF's own LookupError, as tape.gradient does for every source, when the
        backward pass reaches an op with no registered gradient (see ``unregistered``)."""
        self._raise_unregistered()
        return self.computed_tensor(obj)

    def _raise_unregistered(self) -> None:
        if self.unregistered:
            raise next(iter(self.unregistered.values()))

    def computed_tensor(self, obj: Any) -> tf.Tensor | tf.IndexedSlices | None:
        """What TF's gradient functions delivered to obj (None where nothing arrived): the
        same as grad_tensor, except that it also answers when an op on the way has no
        registered gradient (then nothing arrives behind that op). Pictures read this."""
        g = self.graph
        if isinstance(obj, str) and obj in g.nx:
            d = g.nx.nodes[obj]
            if d["kind"] == "variable":
                return self._grad_of.get(d["handle"])
            outs = d.get("outputs") or []
            return self._grad_of.get(outs[0]) if outs else None
        key = g.key_of(obj)
        if key is None:
            raise TypeError(f"Expected a tf.Variable, a tensor or a node id, got {type(obj).__name__}.")
        return self._grad_of.get(key)

    def grad(self, obj: Any) -> np.ndarray | None:
        """d target / d obj as numpy (IndexedSlices made dense), None where TF gives None;
        TF's LookupError where tape.gradient raises it (see grad_tensor)."""
        self._raise_unregistered()
        return self.computed(obj)

    def computed(self, obj: Any) -> np.ndarray | None:
        """computed_tensor as numpy: what a picture shows at obj."""
        key = obj if isinstance(obj, str) else id(obj)
        if key not in self._np_cache:
            self._np_cache[key] = _to_numpy(self.computed_tensor(obj))
        return self._np_cache[key]

    def sum_squares(self, obj: Any) -> float:
        """The float64 sum of squares of :meth:`computed` (0 where nothing arrived), kept:
        every new picture's group boxes show their variables' gradient norms (ResNet50's
        23 M numbers: ~40 ms a picture, when a click opens a block)."""
        key = obj if isinstance(obj, str) else id(obj)
        cache = self.__dict__.setdefault("_sumsq", {})
        if key not in cache:
            a = self.computed(obj)
            if a is None:
                cache[key] = 0.0
            else:
                cache[key] = sum_squares(a) if a.dtype.kind in "fiu" else float(np.linalg.norm(a)) ** 2
        return cache[key]

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
        self._raise_unregistered()
        return {d["name"]: self.computed(n) for n, d in g.nx.nodes(data=True) if d["kind"] == "variable"}

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
        if self.computed_tensor(obj if not isinstance(obj, str) else node) is not None:
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

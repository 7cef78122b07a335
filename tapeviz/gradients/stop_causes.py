"""Stop causes: why each edge and node that carries no gradient carries none.

The backward pass (flow.py) says *what* reached where; this module says why nothing
reached the rest, as structured reasons (stop_reasons.py): a walk forward finds what
never got onto the tape, then a walk backward judges every edge after its consumer.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

import networkx as nx

from ..record.graph import STATEFUL_OPS, TapeGraph
from .stop_reasons import Cause, Facts, Reason, StopReason, tf_equivalent

STOP_GRADIENT_OPS = frozenset({"StopGradient", "PreventGradient"})
CAST_OPS = frozenset({"Cast", "Bitcast"})


class StopCauses:
    """The stop reasons of one backward pass.

    ``edge_reason`` / ``node_reason``: every edge and node that carries no gradient, with
    its reason; ``stopped`` both lists together; ``cuts`` each place a path is cut, once;
    ``left_links`` where a value left TF and the tensor it most likely came back as.
    """

    def __init__(
        self,
        graph: TapeGraph,
        target_nodes: list,
        called_ops: Iterable[int],
        carries: Callable[[tuple], bool],
        has_grad: Callable[[Any], bool],
        unregistered: Collection = (),
    ):
        """``called_ops``: indices of the ops whose backward function TF called;
        ``carries(edge)``: whether a gradient flowed back along it; ``has_grad(node)``:
        whether d target / d node is not None; ``unregistered``: op nodes the pass reached
        that have no registered gradient (tape.gradient raises there)."""
        self.graph = graph
        self._unregistered = set(unregistered)
        self.target_nodes = target_nodes
        self._called_ops = called_ops
        self._carries = carries
        self._has_grad = has_grad
        self._classify()

    def _classify(self) -> None:
        g = self.graph
        G = g.nx
        cap = g.capture
        self._last_gen = cap.final_generation if cap.final_generation >= 0 else None
        self.target_name = g.display_name(self.target_nodes[0])
        called = {g.op_node[i] for i in self._called_ops}
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
                elif not self._carries(e):
                    cause = self._edge_cause(e, d, v in called, node_reason)
                    if cause.reason is Reason.UNCONNECTED and v in left:
                        cause = left[v].moved(e)
                    edge_reason[e] = cause
            if n in self.target_nodes or self._has_grad(n):
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
        return Facts(target=self.target_name, **kw)

    def _off_tape_cause(self, n) -> StopReason | None:
        """None if n's value is on the tape, else the first reason it is not."""
        g = self.graph
        d = g.nx.nodes[n]
        name = g.display_name(n)
        kind = d["kind"]
        if kind == "variable":
            if d["watched"]:
                return None
            if not d["reads"] and d.get("unread"):  # named in the block, never read: a branch not taken
                return StopReason(n, Reason.UNCONNECTED, Cause.NEVER_USED, self._facts(subject=name), n)
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
        if op is not None and v in self._unregistered:
            return StopReason(e, Reason.NO_GRADIENT, Cause.NOT_REGISTERED, self._facts(subject=uname, op=op.op_type), v)
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

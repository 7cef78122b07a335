"""Stop causes: why each edge and node that carries no gradient carries none.

The backward pass (flow.py) says *what* reached where; this module says why nothing
reached the rest, as structured reasons (stop_reasons.py). Its input is plain data read
from the graph and the capture once (:func:`read_facts`: one :class:`NodeFacts` per node,
one :class:`EdgeFacts` per edge); everything after that is a pure function of those facts
and of what the backward pass delivered. :func:`classify` runs them in order: a walk
forward finds what never got onto the tape, a look at the values that left TensorFlow
finds dead ends, then a walk backward judges every edge after its consumer, and every
node after the edges leaving it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ..record.graph import STATEFUL_OPS, TapeGraph
from ..record.numpy_exports import Export, Reentry
from ..record.records import is_trainable
from .stop_reasons import Cause, Facts, Reason, StopReason, tf_equivalent

STOP_GRADIENT_OPS = frozenset({"StopGradient", "PreventGradient"})
CAST_OPS = frozenset({"Cast", "Bitcast"})
_NOT_OPS = frozenset({"variable", "constant", "input", "watched"})
_LEFT_MOST = 64  # values that left TF looked at for a way back (bounds a loop's many exports)

#: A graph edge: (producer node, consumer node, the consumer's input position).
Edge = tuple[Any, Any, Any]


# --------------------------------------------------------------------------- the facts


@dataclass(slots=True)
class EdgeFacts:
    """What the classifier needs to know of one edge (plain data: read once, never changed;
    not frozen, as a frozen dataclass is built ~2x slower and a graph has thousands)."""

    key: Edge
    producer: str
    consumer: str
    outside: bool  # a value that left TF and came back equal (drawn, but no data flows)
    tensor: int
    floating: bool  # of a dtype gradients flow through
    dtype: str
    watched_after: bool  # the producer was watched only after the consumer op ran


@dataclass(slots=True)
class NodeFacts:
    """What the classifier needs to know of one node: the graph's and the capture's facts
    about it, read once. Fields that do not apply to the node's kind keep their default."""

    id: str
    kind: str  # "op", "variable", "constant", "input" or "watched"
    name: Any  # how sentences name it (a Python name, else a phrase)
    label: str
    named: bool  # it has a Python name of its own
    on_tape: bool  # variable: watched; watched tensor: still watched; op: recorded
    ins: list[EdgeFacts]  # data edges in, in the graph's order
    outs: list[EdgeFacts]  # every edge out (data and outside), in the graph's order
    export: Export | None  # how one of its outputs left TF, if one did
    output_floating: bool | None  # output 0 (a variable's first read): None when it has none
    output_dtype: str
    # variables
    trainable: bool = True
    keras: bool = False  # a Keras variable (it has a path)
    never_read: bool = False  # named in the block, never read (a branch not taken)
    read_before_reset: bool = False  # read only before tape.reset()
    # constants and inputs
    came_from: str | None = None  # the exported node this constant equals (a round trip)
    replaced_by: str | None = None  # the op type of the tf.custom_gradient op that re-declares it
    # ops
    op_type: str = ""
    recording: bool = True  # the tape was recording (not inside stop_recording())
    before_reset: bool = False  # run before the last tape.reset()
    assigns: Any = ""  # the variable a stateful op writes into (its name)


@dataclass(frozen=True)
class GraphFacts:
    """Every node's and edge's facts, and the values that crossed TF's border."""

    nodes: dict[str, NodeFacts]  # in forward (topological) order
    #: (tensor id, its node, the re-entry) of each float tensor made from a NumPy value, by id
    returned: list[tuple[int, str, Reentry]]
    #: (tensor id, its node, its export or None) of each float value that ended: handed to
    #: NumPy or Python, then the outputs of recorded ops that nothing in TF used
    ends: list[tuple[int, str, Export | None]]


def read_facts(graph: TapeGraph) -> GraphFacts:
    """The classifier's input, read from the graph and its capture once: every edge, then
    every node in forward order, then the values that crossed TF's border."""
    cap = graph.capture
    G = graph.nx
    tensors = graph.tensors
    last_gen = cap.final_generation if cap.final_generation >= 0 else None
    joined = cap.watch_joined
    node_data = dict(G.nodes(data=True))  # read once: the look-ups below are plain dict reads

    def export_of(outputs) -> Export | None:  # how the first of them that left TF left it
        return next((e for e in map(graph.export_of, outputs) if e is not None), None)

    edges: dict[Edge, EdgeFacts] = {}
    outs: dict[str, list[EdgeFacts]] = {}
    for u, v, k, d in G.edges(keys=True, data=True):
        t = d["tensor"]
        if d["kind"] == "outside":
            e = EdgeFacts((u, v, k), u, v, True, t, True, "", False)
        else:
            dtype = tensors[t].dtype
            late = False
            if joined and node_data[v]["kind"] not in _NOT_OPS:
                ud = node_data[u]
                key = ud.get("handle") if ud["kind"] == "variable" else t
                late = joined.get(key, -1) > cap.ops[node_data[v]["op_index"]].index
            e = EdgeFacts((u, v, k), u, v, False, t, is_trainable(dtype), dtype, late)
        edges[(u, v, k)] = e
        outs.setdefault(u, []).append(e)
    ins: dict[str, list[EdgeFacts]] = {}
    for u, v, k, dd in G.in_edges(keys=True, data=True):
        if dd["kind"] == "data":
            ins.setdefault(v, []).append(edges[(u, v, k)])
    nodes: dict[str, NodeFacts] = {}
    for n in graph.forward_order:
        d = node_data[n]
        kind = d["kind"]
        if kind == "variable":
            by_kind: dict[str, Any] = dict(
                on_tape=d["watched"],
                trainable=d["trainable"],
                keras=bool(d.get("path")),
                never_read=not d["reads"] and bool(d.get("unread")),
                read_before_reset=any(cap.read_before_reset(cap.ops[i]) for i in d["reads"]),
            )
        elif kind in ("constant", "input"):
            by_kind = dict(on_tape=False, came_from=d.get("came_from"))
        elif kind == "watched":
            by_kind = dict(on_tape=d["outputs"][0] in cap.tape_watched)
        else:
            op = cap.ops[d["op_index"]]
            assigned = graph.assigned_variable(n) if op.op_type in STATEFUL_OPS else None
            by_kind = dict(
                on_tape=op.recorded,
                op_type=op.op_type,
                recording=op.tape_recording,
                before_reset=last_gen is not None and op.generation < last_gen,
                assigns=graph.display_name(assigned) if assigned is not None else "",
            )
        out0 = graph.output_info(n)
        replacement = d.get("replaced_by")
        nodes[n] = NodeFacts(
            id=n,
            kind=kind,
            name=graph.display_name(n),
            label=d["label"],
            named=bool(d.get("name")),
            ins=ins.get(n, []),
            outs=outs.get(n, []),
            export=export_of(d.get("outputs") or ()) if cap.exported else None,
            output_floating=None if out0 is None else out0.trainable,
            output_dtype="" if out0 is None else out0.dtype,
            replaced_by=None if replacement is None else node_data[replacement].get("op_type", ""),
            **by_kind,
        )
    returned = sorted(
        (t, tensors[t].node, r) for t, r in cap.reentries.items() if t in tensors and tensors[t].trainable
    )
    ends: list[tuple[int, str, Export | None]] = [
        (t, tensors[t].node, e) for t, e in cap.exported.items() if t in tensors and tensors[t].trainable
    ]
    for n, d in node_data.items():
        if d["kind"] == "op" and d["recorded"] and n not in outs:
            ends.extend((t, n, None) for t in d["outputs"] if t not in cap.exported and tensors[t].trainable)
    return GraphFacts(nodes, returned, ends)


# --------------------------------------------------------------------------- the classifier


@dataclass(frozen=True)
class StopCauses:
    """The stop reasons of one backward pass.

    ``edge_reason`` / ``node_reason``: every edge and node that carries no gradient, with
    its reason; ``stopped`` both lists together; ``cuts`` each place a path is cut, once;
    ``left_links`` where a value left TF and the tensor it most likely came back as.
    """

    edge_reason: dict[Edge, StopReason]
    node_reason: dict[Any, StopReason]
    stopped: list[StopReason]
    cuts: list[StopReason]
    left_links: list[tuple[Any, Any]]


def classify(
    facts: GraphFacts,
    targets: list,
    called: Collection,
    carried: Collection,
    reached: Collection,
    unregistered: Collection = (),
) -> StopCauses:
    """Why nothing reached every edge and node it did not reach.

    ``targets``: the target nodes; ``called``: nodes whose backward function TF called;
    ``carried``: edges a gradient flowed back along; ``reached``: nodes d target / d node
    is not None for; ``unregistered``: op nodes the pass reached that have no registered
    gradient (tape.gradient raises there)."""
    nodes = facts.nodes
    target = nodes[targets[0]].name
    off: dict[str, StopReason | None] = {}  # why a node's value is not on the tape (flows downstream)
    for n in nodes:
        off[n] = off_tape_cause(nodes, nodes[n], off, target)
    left, left_links = left_tf(facts, targets, off, target)
    edge_reason: dict[Edge, StopReason] = {}
    node_reason: dict[Any, StopReason] = {}
    for n in reversed(list(nodes)):
        for e in nodes[n].outs:  # the edges leaving n, judged after their consumers
            if e.outside:
                edge_reason[e.key] = round_trip(nodes, e.key, e.producer, e.consumer, target)
            elif e.key not in carried:
                cause = edge_cause(nodes, e, e.consumer in called, e.consumer in unregistered, off, node_reason, target)
                if cause.reason is Reason.UNCONNECTED and e.consumer in left:
                    cause = left[e.consumer].moved(e.key)
                edge_reason[e.key] = cause
        if n in targets or n in reached:
            continue
        cause = node_cause(nodes, nodes[n], edge_reason, off, target)
        if cause.reason is Reason.UNCONNECTED and n in left:
            cause = left[n].moved(n)
        node_reason[n] = cause
    stopped = list(edge_reason.values()) + list(node_reason.values())
    cuts: dict[Any, StopReason] = {}
    for s in stopped:
        cuts.setdefault((s.reason, s.origin if s.origin is not None else s.where), s)
    return StopCauses(edge_reason, node_reason, stopped, list(cuts.values()), left_links)


def off_tape_cause(nodes: dict[str, NodeFacts], n: NodeFacts, off: dict, target: str) -> StopReason | None:
    """None if n's value is on the tape, else the first reason it is not (``off``: the
    causes of the nodes before n in forward order)."""
    if n.kind == "variable":
        if n.on_tape:
            return None
        if n.never_read:
            return StopReason(n.id, Reason.UNCONNECTED, Cause.NEVER_USED, Facts(target=target, subject=n.name), n.id)
        if n.read_before_reset:
            return StopReason(
                n.id, Reason.NOT_RECORDED, Cause.READ_BEFORE_RESET, Facts(target=target, subject=n.name), n.id
            )
        return not_watched(n, target)
    if n.kind in ("constant", "input"):
        if n.came_from is not None:
            return round_trip(nodes, n.id, n.came_from, n.id, target)
        return not_watched(n, target)
    if n.kind == "watched":
        if n.on_tape:
            return None
        return StopReason(n.id, Reason.NOT_RECORDED, Cause.WATCH_RESET, Facts(target=target, subject=n.name), n.id)
    if n.on_tape:
        return None
    if n.op_type in STOP_GRADIENT_OPS:
        source = nodes[n.ins[0].producer].name if n.ins else ""
        facts = Facts(target=target, subject=n.name, source=source, named=n.named)
        return StopReason(n.id, Reason.STOP_GRADIENT, Cause.STOP_OUTPUT, facts, n.id)
    if not n.recording:
        return StopReason(n.id, Reason.NOT_RECORDED, Cause.PAUSED, Facts(target=target, subject=n.name), n.id)
    if n.before_reset:
        return StopReason(n.id, Reason.NOT_RECORDED, Cause.BEFORE_RESET, Facts(target=target, subject=n.name), n.id)
    for e in n.ins:
        if e.watched_after:
            facts = Facts(target=target, subject=n.name, source=nodes[e.producer].name)
            return StopReason(n.id, Reason.NOT_WATCHED, Cause.WATCHED_LATE, facts, n.id)
    ints = None
    for e in n.ins:
        if not e.floating:
            if ints is None:
                ints = integer_cause(nodes, n.id, nodes[e.producer], e.dtype, n.id, target)
            continue
        cause = off.get(e.producer)
        if cause is not None:
            return cause.moved(n.id)
    if ints is not None:
        return ints
    return StopReason(n.id, Reason.NOT_WATCHED, Cause.DERIVED, Facts(target=target, subject=n.name), n.id)


def not_watched(n: NodeFacts, target: str) -> StopReason:
    """A leaf the tape never watched: a variable, a constant, a tensor from outside."""
    if n.kind == "variable":
        cause = Cause.NON_TRAINABLE if not n.trainable else Cause.UNWATCHED_VARIABLE
        return StopReason(n.id, Reason.NOT_WATCHED, cause, Facts(target=target, subject=n.name, keras=n.keras), n.id)
    cause = {"constant": Cause.CONSTANT, "input": Cause.PLAIN_TENSOR}.get(n.kind, Cause.DERIVED)
    return StopReason(n.id, Reason.NOT_WATCHED, cause, Facts(target=target, subject=n.name), n.id)


def round_trip(nodes: dict[str, NodeFacts], where, exported: str, constant: str, target: str) -> StopReason:
    """A value that left TF and came back equal, as a new constant."""
    source = nodes[exported]
    facts = export_facts(source, source.export, target, label=nodes[constant].label)
    return StopReason(where, Reason.OUTSIDE_TF, Cause.ROUND_TRIP, facts, where)


def export_facts(n: NodeFacts, export: Export | None, target: str, **kw) -> Facts:
    """The facts of a value leaving TF at node n: how (``.numpy()``, ``float()``, a NumPy
    call), the user's code that did it, and what keeps it in TF."""
    via = ".numpy()"
    fn = None
    if export is not None:
        fn = export.numpy_function
        if export.how == "float":
            via = "float()"
        elif export.how == "array":
            via = f"np.{fn}()" if fn else (export.expression or "np.asarray()")
    return Facts(
        target=target,
        subject=n.name,
        source=n.name,
        via=via,
        expression=(export.expression or "") if export is not None else "",
        line=(export.line or 0) if export is not None else 0,
        tf_equivalent=tf_equivalent(fn),
        **kw,
    )


def left_tf(
    facts: GraphFacts, targets: list, off: dict, target: str
) -> tuple[dict[Any, StopReason], list[tuple[Any, Any]]]:
    """Nodes whose only way to the target went through NumPy or Python, and the links
    (where a value left TF, the tensor it most likely came back as) pictures draw.

    The evidence: a value computed from something watched ends there (it was handed
    to NumPy, np.mean(x2), or to Python, float(t); or nothing in TF used it), and the
    target depends on a tensor made from a NumPy value after that moment. That tensor
    most likely is the value coming back, and the tape cannot trace it. Every node
    that reaches such a dead end (and would otherwise be "unconnected") gets that
    reason instead, naming the call when tapeviz saw it."""
    nodes = facts.nodes
    if not facts.returned:
        return {}, []
    to_target = ancestors(nodes, targets)
    back = [(t, node, r) for t, node, r in facts.returned if node in to_target]
    if not back:
        return {}, []
    out: dict[Any, StopReason] = {}
    links: list[tuple[Any, Any]] = []
    for tid, node, export in facts.ends[:_LEFT_MOST]:
        if node in to_target or off.get(node) is not None:
            continue  # it still reaches the target, or carried no gradient anyway
        after = export.after_uid if export is not None else tid
        came = next(((node_back, r) for t, node_back, r in back if t > after), None)
        if came is None:
            continue
        node_back, r = came
        extra: dict[str, Any] = dict(label=nodes[node_back].label, back=r.expression or "", back_line=r.line or 0)
        if export is not None:
            cause, why = Cause.LEFT, export_facts(nodes[node], export, target, **extra)
        else:
            name = nodes[node].name
            cause, why = Cause.LEFT_UNSEEN, Facts(target=target, subject=name, source=name, **extra)
        links.append((node, node_back))
        for n in ancestors(nodes, [node]):
            out.setdefault(n, StopReason(n, Reason.OUTSIDE_TF, cause, why, node))
    return out, links


def ancestors(nodes: dict[str, NodeFacts], starts: list) -> set:
    """The starts and every node with a path to one of them (iterative: deep graphs). The
    edges into a node are its data edges and, for a constant, the round trip it came by."""
    seen = set(starts)
    todo = list(starts)
    while todo:
        n = nodes[todo.pop()]
        for p in [e.producer for e in n.ins] + ([n.came_from] if n.came_from is not None else []):
            if p not in seen:
                seen.add(p)
                todo.append(p)
    return seen


def edge_cause(
    nodes: dict[str, NodeFacts],
    e: EdgeFacts,
    consumer_called: bool,
    unregistered: bool,
    off: dict,
    node_reason: dict,
    target: str,
) -> StopReason:
    """Why no gradient flows back along data edge e (its consumer is judged already)."""
    u, v = nodes[e.producer], nodes[e.consumer]
    op = v.op_type if v.kind == "op" else None
    if op in STOP_GRADIENT_OPS:
        return StopReason(e.key, Reason.STOP_GRADIENT, Cause.STOP_EDGE, Facts(target=target, subject=u.name), v.id)
    if not e.floating:
        return integer_cause(nodes, e.key, u, e.dtype, e.key, target)
    if op in STATEFUL_OPS:
        facts = Facts(target=target, subject=u.name, op=op, variable=v.assigns)
        return StopReason(e.key, Reason.STATEFUL, Cause.ASSIGNED, facts, e.key)
    if op is not None and not v.recording:
        return StopReason(e.key, Reason.NOT_RECORDED, Cause.PAUSED, Facts(target=target, subject=v.name), e.key)
    if op is not None and v.before_reset:
        return StopReason(e.key, Reason.NOT_RECORDED, Cause.BEFORE_RESET, Facts(target=target, subject=v.name), e.key)
    cause = off.get(u.id)
    if cause is not None:
        return cause.moved(e.key)
    if op is not None and unregistered:
        facts = Facts(target=target, subject=u.name, op=op)
        return StopReason(e.key, Reason.NO_GRADIENT, Cause.NOT_REGISTERED, facts, v.id)
    if op is not None and consumer_called:
        facts = Facts(target=target, subject=u.name, op=op)
        return StopReason(e.key, Reason.NO_GRADIENT, Cause.NOT_DIFFERENTIABLE, facts, e.key)
    if v.replaced_by is not None:
        facts = Facts(target=target, subject=u.name, consumer=v.name, op=v.replaced_by)
        return StopReason(e.key, Reason.UNCONNECTED, Cause.CUSTOM_GRADIENT, facts, e.key)
    inner = node_reason.get(v.id)
    if inner is None or inner.reason is Reason.UNCONNECTED:
        facts = Facts(target=target, subject=u.name, consumer=v.name)
        return StopReason(e.key, Reason.UNCONNECTED, Cause.NOT_LEADING, facts, e.key)
    return inner.moved(e.key)


def node_cause(nodes: dict[str, NodeFacts], n: NodeFacts, edge_reason: dict, off: dict, target: str) -> StopReason:
    """Why nothing reaches node n: the first edge leaving it that is cut for a reason,
    else why its value is off the tape, else its dtype, else that nothing depends on it."""
    for e in n.outs:
        r = edge_reason.get(e.key)
        if r is not None and r.reason is not Reason.UNCONNECTED:
            return r.moved(n.id)
    cause = off.get(n.id)
    if cause is not None:
        return cause
    if n.output_floating is False:
        return integer_cause(nodes, n.id, n, n.output_dtype, n.id, target)
    return StopReason(n.id, Reason.UNCONNECTED, Cause.NO_DEPENDENCY, Facts(target=target, subject=n.name), n.id)


_SHAPE_OPS = frozenset({"Shape", "ShapeN", "Size", "Rank"})


def integer_cause(
    nodes: dict[str, NodeFacts], where, producer: NodeFacts, dtype: str, origin, target: str
) -> StopReason:
    """A non-float tensor made by `producer` cuts the path at `where`.

    If an op other than a cast made it from float inputs (ArgMax, Shape, Equal, ...),
    that op is the cut: it has no gradient, and casting its result back to float
    does not change that. Otherwise the dtype is the reason (a tf.cast to int)."""
    if producer.kind == "op" and producer.op_type not in CAST_OPS and any(e.floating for e in producer.ins):
        if producer.op_type in _SHAPE_OPS:  # the value's shape, not the value (a broadcast's gradient reads it)
            read = nodes[producer.ins[0].producer].name
            facts = Facts(target=target, subject=read, op=producer.op_type, dtype=dtype)
            return StopReason(where, Reason.NO_GRADIENT, Cause.SHAPE_ONLY, facts, producer.id)
        facts = Facts(target=target, subject=producer.name, op=producer.op_type, dtype=dtype)
        return StopReason(where, Reason.NO_GRADIENT, Cause.INTEGER_RESULT, facts, producer.id)
    return StopReason(
        where, Reason.INTEGER_DTYPE, Cause.INTEGER, Facts(target=target, subject=producer.name, dtype=dtype), origin
    )

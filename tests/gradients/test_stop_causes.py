"""The stop-cause classifier is pure: plain facts in (read_facts), structured reasons out
(classify). Facts written by hand give the reasons TF's own run gives."""

import tensorflow as tf

import tapeviz as tv
from tapeviz.gradients.stop_causes import EdgeFacts, GraphFacts, NodeFacts, classify, read_facts
from tapeviz.gradients.stop_reasons import Cause, Reason


def _node(id, kind, name, ins=(), outs=(), **kw):
    return NodeFacts(
        id=id,
        kind=kind,
        name=name,
        label=name,
        named=True,
        ins=list(ins),
        outs=list(outs),
        export=None,
        output_floating=True,
        output_dtype="float32",
        **kw,
    )


def _stop_gradient_program():
    w = tf.Variable(2.0, name="w")
    with tv.GradientTape() as tape:
        s = tf.stop_gradient(w)
        y = s * 3.0
    return tape, y, w


def test_hand_written_facts_classify_as_the_recorded_program_does():
    """w -> StopGradient -> Mul(., 3.0), the target: with no graph and no TF, facts written by
    hand give the reasons tv.flow gives for the recorded program."""
    into_stop = EdgeFacts(("w", "sg", 0), "w", "sg", False, 1, True, "float32", False)
    into_mul = EdgeFacts(("sg", "y", 0), "sg", "y", False, 2, True, "float32", False)
    three = EdgeFacts(("c", "y", 1), "c", "y", False, 3, True, "float32", False)
    nodes = {
        "w": _node("w", "variable", "w", outs=[into_stop], on_tape=False),
        "sg": _node("sg", "op", "s", ins=[into_stop], outs=[into_mul], on_tape=False, op_type="StopGradient"),
        "c": _node("c", "constant", "3.0", outs=[three], on_tape=False),
        "y": _node("y", "op", "y", ins=[into_mul, three], on_tape=False, op_type="Mul"),
    }
    stops = classify(GraphFacts(nodes, [], []), ["y"], called=(), carried=(), reached={"y"})
    hand = {where: (s.reason, s.cause) for where, s in {**stops.edge_reason, **stops.node_reason}.items()}
    assert hand == {
        ("sg", "y", 0): (Reason.STOP_GRADIENT, Cause.STOP_OUTPUT),
        ("w", "sg", 0): (Reason.STOP_GRADIENT, Cause.STOP_EDGE),
        ("c", "y", 1): (Reason.NOT_WATCHED, Cause.CONSTANT),
        "sg": (Reason.STOP_GRADIENT, Cause.STOP_OUTPUT),
        "w": (Reason.STOP_GRADIENT, Cause.STOP_EDGE),
        "c": (Reason.NOT_WATCHED, Cause.CONSTANT),
    }
    assert {s.facts.target for s in stops.stopped} == {"y"}

    tape, y, w = _stop_gradient_program()
    assert tape.gradient(y, w) is None
    fl = tv.flow(tape, y)
    g = tape.graph
    kinds = {"variable": "w", "StopGradient": "sg", "Mul": "y", "constant": "c"}
    rename = {n: kinds[d.get("op_type") or d["kind"]] for n, d in g.nx.nodes(data=True)}

    def named(where):
        return tuple(rename.get(p, p) for p in where) if isinstance(where, tuple) else rename[where]

    assert {named(s.where): (s.reason, s.cause) for s in fl.stopped} == hand


def test_read_facts_gives_one_fact_per_node_and_edge_in_forward_order():
    tape, y, w = _stop_gradient_program()
    g = tape.graph
    facts = read_facts(g)
    assert list(facts.nodes) == g.forward_order
    edges = {e.key for n in facts.nodes.values() for e in n.outs}
    assert edges == set(g.nx.edges(keys=True))
    assert {e.key for n in facts.nodes.values() for e in n.ins} == {e[:3] for e in g.data_edges()}
    stop = next(n for n in facts.nodes.values() if n.op_type == "StopGradient")
    assert not stop.on_tape and stop.kind == "op"
    assert facts.nodes[g.node_of(w)].kind == "variable"
    assert not facts.nodes[g.node_of(w)].on_tape  # read only by tf.stop_gradient: the tape never saw it
    assert facts.returned == [] and facts.ends == []

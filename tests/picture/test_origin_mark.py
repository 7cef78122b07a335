"""The picture marks where a NaN, Inf or zero gradient starts (issue 34): the op's box is
outlined dashed in the NaN colour with a "NaN starts here" tag over it, and the edges of
the backward path from it to the source are drawn thick in that colour, from the step the
problem starts at. The op is the one tv.explain names; the path is every edge on a
forward path source → … → op that carried a gradient (found here with networkx's simple
paths, not the way the picture finds it); TF's gradient at the source is the bad one.
Programs whose gradients are finite and not all zero get no mark."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import networkx as nx
import numpy as np
import pytest
import tensorflow as tf
from placement_check import check

import tapeviz as tv
from tapeviz.gradients.origin import flow_origin, path_edges
from tapeviz.output.svg import to_svg
from tapeviz.picture.legend import origin_entries
from tapeviz.picture.style import LW_ORIGIN, LW_ORIGIN_PATH

SVG = "{http://www.w3.org/2000/svg}"


def where_trap():
    x = tf.Variable([0.0, 1.0])
    with tv.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(tf.where(x > 0, tf.math.log(x), tf.zeros_like(x)))
    return tape, y, x


def norm_at_zero():
    v = tf.Variable([0.0, 0.0])
    with tv.GradientTape(persistent=True) as tape:
        length = tf.norm(v)
    return tape, length, v


def log_of_zero_backward():
    w = tf.Variable([0.0, 0.5])
    with tv.GradientTape(persistent=True) as tape:
        logs = tf.math.log(w)
        loss = tf.reduce_sum(tf.maximum(logs, -1.0))
    return tape, loss, w


def log_of_zero_forward():
    y_true = tf.constant([1.0, 0.0])
    y_pred = tf.Variable([1.0, 0.0])
    with tv.GradientTape(persistent=True) as tape:
        loss = -tf.reduce_sum(y_true * tf.math.log(y_pred))
    return tape, loss, y_pred


def division_by_zero():
    values = tf.Variable([1.0, 2.0, 3.0])
    mask = tf.constant([0.0, 0.0, 0.0])
    with tv.GradientTape(persistent=True) as tape:
        masked_mean = tf.reduce_sum(values * mask) / tf.reduce_sum(mask)
    return tape, masked_mean, values


def exp_overflow():
    logits = tf.Variable([100.0, 1.0])
    with tv.GradientTape(persistent=True) as tape:
        e = tf.exp(logits)
        probs = e / tf.reduce_sum(e)
        loss = -tf.math.log(probs[0])
    return tape, loss, logits


def dead_relu():
    w = tf.Variable([[1.0], [1.0]])
    x = tf.constant([[-1.0, -2.0], [-3.0, -0.5]])
    with tv.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(tf.nn.relu(x @ w))
    return tape, loss, w


PROGRAMS = {
    f.__name__: (f, op, problem)
    for f, op, problem in [
        (where_trap, "Log", "non_finite"),
        (norm_at_zero, "Sqrt", "non_finite"),
        (log_of_zero_backward, "Log", "non_finite"),
        (log_of_zero_forward, "Log", "forward"),
        (division_by_zero, "RealDiv", "forward"),
        (exp_overflow, "Exp", "forward"),
        (dead_relu, "Relu", "zero"),
    ]
}


def expected_path(fl, source_node, origin_node) -> set:
    """The recorded edges on any simple path source → … → origin that carried a gradient."""
    g = fl.graph.nx
    out = set()
    for path in nx.all_simple_paths(g, source_node, origin_node):
        for u, v in zip(path, path[1:], strict=False):
            out |= {(u, v, k) for k in g[u][v] if fl.carries((u, v, k))}
    return out


def drawn_path(scene) -> set:
    th = scene.theme
    return {e for e, a in scene.arrows.items() if a.color == th.bad and a.lw == LW_ORIGIN_PATH * th.line}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_picture_marks_the_op_tv_explain_names(name):
    build, op, problem = PROGRAMS[name]
    tape, target, source = build()
    want = tape.gradient(target, source).numpy()  # TF's gradient: NaN / Inf, or all zero
    assert (not np.all(np.isfinite(want))) if problem != "zero" else not np.any(want != 0)
    d = tv.explain(tape, target, source)
    assert d is not None and d.finding.op == op and d.reason == problem
    v = tv.view(tape, target)
    sc, fl = v.scene, v.flow
    o = sc.origin
    assert o is not None and o.node == d.finding.node and o.problem == problem
    assert o.source == fl.graph.node_of(source) and o.step == d.finding.step
    assert sc.origin_box == sc.display.of[d.finding.node]
    # the path: the edges between source and origin that carried a gradient, drawn thick in the NaN colour
    path = expected_path(fl, o.source, o.node)
    assert set(o.edges) == path == path_edges(fl, o.node, o.source)
    assert drawn_path(sc) == sc.display.display_edges_of(path)
    if name == "where_trap":  # the one edge x → Log, and not the edges through ZerosLike or where
        (edge,) = path
        assert fl.graph.nx.nodes[edge[1]]["op_type"] == "Log" and fl.graph.nx.nodes[edge[0]]["kind"] == "variable"
    # the box: dashed, in the NaN colour, tagged; the tag and the caption say it in words
    box = sc.boxes[sc.origin_box]
    assert box.ec == sc.theme.bad and box.lw == LW_ORIGIN * sc.theme.line and box.linestyle != "-"
    tag = sc.origin_label
    if problem == "forward":  # the tag says what the op made (log 0 = -∞), not what the loss became
        assert o.value == {"Log": "-∞", "RealDiv": "NaN", "Exp": "∞"}[op] and o.value in tag.text
    assert tag.visible and ("starts here" in tag.text or "made here" in tag.text or "becomes 0" in tag.text)
    assert d.summary() in sc.caption  # (the caption label holds it wrapped into lines)
    legend = [sw.label.text for sw in sc.legend]
    assert any("the op where" in t for t in legend)
    entries = origin_entries(sc)  # the box's entry, and the path's where the path has an arrow
    assert entries[0][0] == "box" and len(entries) == 1 + bool(drawn_path(sc))
    # the SVG: the tag over the box, the box's dashed outline
    svg = to_svg(v)
    root = ET.fromstring(svg[svg.find("<svg") :])
    groups = {g.get("id"): g for g in root.iter(f"{SVG}g")}
    assert "".join(groups["origin-mark"].itertext()) == tag.text
    rect = groups[sc.boxes[sc.origin_box].gid].find(f"{SVG}rect")
    assert "stroke-dasharray" in rect.get("style") and sc.theme.bad.lower() in rect.get("style").lower()
    check(sc, name)  # the tag overlaps no label or box and stays on the canvas


@pytest.mark.parametrize("name", ["where_trap", "log_of_zero_backward", "dead_relu"])
def test_the_mark_waits_for_the_step_it_starts_at(name):
    tape, target, _ = PROGRAMS[name][0]()
    v = tv.view(tape, target)
    sc = v.scene
    start = sc.origin.step
    assert start > 0
    v.set_step(start - 1)
    assert not sc.origin_shown(start - 1) and sc.origin_shown(start)
    assert not sc.origin_label.visible and not drawn_path(sc)
    assert sc.boxes[sc.origin_box].linestyle == "-"
    assert 'id="origin-mark"' not in to_svg(v)
    v.set_step(start)
    assert sc.origin_label.visible and 'id="origin-mark"' in to_svg(v)
    # at that step the op passes the bad gradient back for the first time: TF's numbers
    fl = v.flow
    bad = [e for e in fl.steps[start].edges if not _healthy(fl.edge_grad(*e))]
    assert bad and all(_healthy(fl.edge_grad(*e)) for s in fl.steps[1:start] for e in s.edges if e in sc.origin.edges)
    check(sc, f"{name} at step {start}")


def _healthy(a) -> bool:
    return a is None or (bool(np.all(np.isfinite(a))) and bool(np.any(a != 0)))


def test_the_matplotlib_figure_shows_the_mark_too():
    tape, target, _ = where_trap()
    v = tv.view(tape, target)
    assert v.figure is not None  # drawn: the artists exist
    art = v.artists.origin
    assert art is not None and art.get_visible() and art.get_text() == v.scene.origin_label.text
    v.set_step(0)
    assert not art.get_visible()


def test_the_mark_speaks_chinese():
    tape, target, _ = norm_at_zero()
    sc = tv.view(tape, target, lang="zh").scene
    assert sc.origin_label.text == "⚠ NaN 从这里开始"
    assert "问题始于 Sqrt" in sc.caption and any("NaN 开始出现的运算" in sw.label.text for sw in sc.legend)


def test_seed_examples_get_a_mark_only_where_tf_gives_a_bad_gradient():
    from tapeviz import examples

    marked = []
    for ex in examples.EXAMPLES.values():
        run = ex.run()
        fl = tv.flow(run.tape, run.target)
        g = fl.graph
        sources = [n for n, d in g.nx.nodes(data=True) if d["kind"] in ("variable", "watched", "input")]
        bad = [n for n in sources if fl.computed(n) is not None and not _healthy(fl.computed(n))]
        o = flow_origin(fl)
        assert (o is None) == (not bad), (ex.name, o)
        if o is not None:
            marked.append((ex.name, g.nx.nodes[o.node]["op_type"], o.problem))
    # clip_by_value clips every value: TF's gradient is [0, 0, 0] (a true diagnosis, at Minimum)
    assert marked == [("clip_by_value", "Minimum", "zero")]


def test_the_groups_holding_the_origin_open_so_the_op_itself_is_marked():
    """tf.norm is one box by default; with a NaN starting at its Sqrt, the picture opens it
    (its groups are the picture's to choose) and marks the Sqrt. Groups the caller chose
    stay as chosen: the mark goes on the box that holds the op."""
    tape, length, _ = norm_at_zero()
    sc = tv.view(tape, length).scene
    assert sc.origin_box == sc.origin.node and sc.graph.nx.nodes[sc.origin_box]["op_type"] == "Sqrt"
    healthy = tf.Variable([3.0, 4.0])
    with tv.GradientTape(persistent=True) as tape2:
        other = tf.norm(healthy)
    assert tv.view(tape2, other).scene.layers == ["tf.norm"]  # no NaN: tf.norm stays one box
    closed = tv.view(tape, length, collapsed=True).scene
    assert closed.display.nx.nodes[closed.origin_box]["kind"] == "layer"
    assert closed.origin_box == closed.display.of[closed.origin.node] and closed.origin_label.visible


def test_a_keras_loss_opens_down_to_the_op():
    """Keras's cross-entropy on probabilities clips them: a zero gradient that starts at the
    loss's Maximum (a known pattern); the loss's box opens and the Maximum is marked."""
    import keras

    w = tf.Variable([[50.0, -50.0]])
    labels = tf.constant([[0.0, 1.0]])
    cce = keras.losses.CategoricalCrossentropy()
    with tv.GradientTape(persistent=True) as tape:
        probs = tf.nn.softmax(w)
        loss = cce(labels, probs)
    assert not np.any(tape.gradient(loss, w).numpy() != 0)  # TF: all zero
    d = tv.explain(tape, loss, w)
    sc = tv.view(tape, loss).scene
    assert sc.origin is not None and sc.origin.node == d.finding.node and d.finding.op == "Maximum"
    assert sc.origin_box == d.finding.node  # the op itself, not the loss's box
    assert sc.graph.nx.nodes[d.finding.node].get("scope")  # (it is inside the loss's group)
    check(sc, "keras loss")

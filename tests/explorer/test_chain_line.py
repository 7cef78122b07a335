"""The step's chain rule under the explorer's picture (chain_line.py, state.chain_line):
for every seed example the line's numbers are TensorFlow's (compared with tape.gradient
and tf.clip_by_norm), its pieces are exactly the writer's line in en and zh, and every term
names boxes and arrows that the step's picture draws."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz import examples
from tapeviz.explorer import chain_line as cl
from tapeviz.explorer import state as st
from tapeviz.explorer.html_page import page_fragment
from tapeviz.messages import describe
from tapeviz.record.values import GRAD_NORM, format_value

_IDS = re.compile(r'\bid="([^"]+)"')


def _states(ex, **changes):
    gt = ex.graph_targets
    last = gt.flow(ex.state.target).last_step
    return gt, [ex.state.replace(step=k, **changes) for k in range(last + 1)]


def _check_every_step(ex) -> list[str]:
    """Every step's line, en and zh: its joined pieces are the chain rule's own lines (or
    the group's), and each term names elements of that step's picture. Returns the en lines."""
    out = []
    for lang in ("en", "zh"):
        gt, states = _states(ex, lang=lang)
        for s in states:
            line = st.chain_line(gt, s)
            assert line is not None and line.lines
            ids = set(_IDS.findall(st.picture(gt, s)))
            named = cl.refs_of(line)
            assert named and named <= ids, (s.step, named - ids)
            rule = st.chain_rule(gt, s)
            box = gt.view(s).scene.display.of.get(rule.flow.steps[s.step].node)
            if not str(box).startswith("layer:"):
                assert line.texts() == rule[s.step].lines(lang)
            if lang == "en":
                out.extend(line.texts())
    return out


def _texts(ex, k: int, lang: str) -> list[str]:
    return st.chain_line(ex.graph_targets, ex.state.replace(step=k, lang=lang)).texts()


def test_x_squared_at_2_gives_4():
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        z = x**2
    ex = tv.explore(tape, z)
    lines = _check_every_step(ex)
    assert float(tape.gradient(z, x)) == 4.0
    assert "∂z/∂x = ∂z/∂z · ∂z/∂x = 1.0 × (2·x) = 1.0 × 4.0 = 4.0" in lines
    gt = ex.graph_targets
    line = st.chain_line(gt, ex.state.replace(step=1))
    terms = {p.text: p.refs for p in line.lines[0] if p.refs}
    x_node = next(n for n, d in gt.graph.nx.nodes(data=True) if d.get("name") == "x")
    assert terms["x"] == (f"node-{x_node}",)
    assert terms["4.0"][0].startswith(f"edge-{x_node}-")  # TF's gradient along the edge to x


def test_sum_of_w_squared_is_2w():
    run = examples.get("scalar_over_tensor").run()
    ex = tv.explore(run.tape, run.target)
    lines = _check_every_step(ex)
    want = format_value(run.printed["dloss/dw"], norm=GRAD_NORM)
    assert any("(2·w)" in line and line.endswith(f"= {want}") for line in lines), lines


def test_the_persistent_tapes_two_targets():
    run = examples.get("persistent").run()
    x, y = run.extra["x"], run.extra["y"]
    ex = tv.explore(run.tape, run.extra["targets"])
    gt = ex.graph_targets
    got = {}
    for target, printed in (("f1", "df1/dx"), ("f2", "df2/dx")):
        ex.controls["target"].value = target
        lines = _check_every_step(ex)
        assert f"∂{target}/∂x = {float(run.printed[printed])}" in lines
        got[target] = lines
    assert "∂f1/∂x = ∂f1/∂Pow · ∂Pow/∂x = 1.0 × (2·x) = 1.0 × 6.0 = 6.0" in got["f1"]
    assert any(line.startswith("∂f2/∂x = ∂f2/∂f2 · ∂f2/∂x = 1.0 × (y) = 1.0 × 4.0 = 4.0") for line in got["f2"])
    assert float(run.printed["df2/dx"]) == float(y.numpy()) == 4.0 and float(x.numpy()) == 3.0
    assert gt.flow("f2") is not gt.flow("f1")


def test_stop_gradient_says_none_with_its_reason_and_names_the_stopped_arrow():
    run = examples.get("stop_gradient").run()
    ex = tv.explore(run.tape, run.target)
    lines = _check_every_step(ex)
    assert run.printed["dz/dy"] is None
    fl = ex.graph_targets.flow(ex.state.target)
    (edge, reason), *_ = [(e, r) for e, r in fl.edge_reason.items() if r.reason.value == "stop_gradient"] or [
        next(iter(fl.edge_reason.items()))
    ]
    said = [line for line in lines if "= None: " in line]
    assert said and said[0].endswith(describe(reason, "en")), said
    gt = ex.graph_targets
    k = next(k for k in range(fl.last_step + 1) if st.chain_rule(gt, ex.state)[k].stopped)
    line = st.chain_line(gt, ex.state.replace(step=k))
    stopped = [p for pieces in line.lines for p in pieces if p.text == "StopGradient"]
    assert any(r.startswith("edge-") for p in stopped for r in p.refs)
    assert "∂z/∂x = ∂z/∂Pow · ∂Pow/∂x = 1.0 × (2·x) = 1.0 × 4.0 = 4.0" in lines
    assert float(run.printed["dz/dx"]) == 4.0


def test_clip_by_norm_shows_the_clipped_number_and_the_blocks_line():
    run = examples.get("clip_by_norm").run()
    ex = tv.explore(run.tape, run.target)
    lines = _check_every_step(ex)
    g = tf.constant([10.0, 20.0, 30.0])
    with tf.GradientTape() as t:
        t.watch(g)
        clipped = tf.clip_by_norm(g, clip_norm=5.0)
    want_grad = t.gradient(clipped, g)
    assert lines[0].startswith(f"start at clipped_gradients = {format_value(clipped.numpy())}")
    # clip_by_norm is one box: its line says what it takes in and passes out (TF's, with norms)
    assert lines[-2].startswith("clip_by_norm takes in ‖g‖ 1.73 at its outputs")
    assert f"passes out ‖g‖ {float(tf.norm(want_grad)):.3g} to its inputs (gradients)" in lines[-2]
    assert lines[-1] == f"  g_gradients: {format_value(want_grad.numpy(), norm=GRAD_NORM)}"
    # inside the box, before any gradient has left it: it says so, not "passes out ‖g‖ 0 ... ()"
    early = [line for line in lines if line.startswith("clip_by_norm takes in") and "nothing has left" in line]
    assert early == ["clip_by_norm takes in ‖g‖ 1.73 at its outputs (RealDiv); nothing has left it for its inputs yet"]
    assert not any("()" in line or "‖g‖ 0 " in line for line in lines)
    last = ex.flow.last_step
    k = next(k for k in range(last + 1) if "nothing has left" in " ".join(_texts(ex, k, "en")))
    assert _texts(ex, k, "zh")[0] == "clip_by_norm 在输出处（RealDiv）收到 ‖g‖ 1.73，还没有向输入传出梯度"
    assert "passes out" in " ".join(_texts(ex, last, "en"))
    gt = ex.graph_targets
    line = st.chain_line(gt, ex.state)
    assert line.lines[0][0] == cl.Piece("clip_by_norm", ("node-layer:tf.clip_by_norm",))


def test_a_quiz_hides_the_line_until_the_step_is_answered():
    run = examples.get("basic").run()
    ex = tv.explore(run.tape, run.target, quiz=True)
    gt, s = ex.graph_targets, ex.state.replace(step=1)
    assert st.chain_line(gt, s) is None
    html = st.chain_html(gt, s)
    assert "tv-chain-line" not in html and "aria-live='polite'" in html and "6.0" not in html
    answered = st.reveal(gt, s)
    assert "1.0 × 6.0 = 6.0" in re.sub("<[^>]+>", "", st.chain_html(gt, answered))


def test_line_html_is_a_live_region_of_focusable_terms():
    line = cl.ChainLine(((cl.Piece("∂z/∂"), cl.Piece("x<y", ("node-a", "edge-a-b-0")), cl.Piece(" = 4.0")),))
    html = cl.line_html("Step 1/2: <b>", line, "zh")
    assert html.startswith("<div class='tv-chain' lang='zh' aria-live='polite'>")
    assert "Step 1/2: &lt;b&gt;" in html
    assert "<span class='tv-term' tabindex='0' data-tv-refs='node-a edge-a-b-0'>x&lt;y</span> = 4.0" in html
    assert line.text() == "∂z/∂x<y = 4.0"
    assert cl.refs_of(line) == {"node-a", "edge-a-b-0"}


def test_refs_name_the_box_a_node_is_drawn_in():
    run = examples.get("clip_by_norm").run()
    ex = tv.explore(run.tape, run.target)
    gt = ex.graph_targets
    display = gt.view(ex.state).scene.display
    refs = cl.Refs(gt.flow(ex.state.target), display)
    inside = next(n for n, b in display.of.items() if b == "layer:tf.clip_by_norm" and n != b)
    assert refs.node(inside) == ("node-layer:tf.clip_by_norm",)
    assert refs.node("no such node") == ()
    assert cl.Refs(gt.flow(ex.state.target), None).edge(("a", "b", 0)) == ("edge-a-b-0",)


def test_the_widget_shows_each_steps_line_and_the_inspector_the_formula():
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        z = x**2
    ex = tv.explore(tape, z)
    ex.controls["step"].value = 1
    shown = re.sub("<[^>]+>", "", ex.canvas.chain)
    assert "1.0 × 4.0 = 4.0" in shown and "aria-live='polite'" in ex.canvas.chain
    assert "Step 1/2" in shown
    assert ex.chain_line.text() == "∂z/∂x = ∂z/∂z · ∂z/∂x = 1.0 × (2·x) = 1.0 × 4.0 = 4.0"
    ex.controls["step"].value = 0
    assert "start at z = 4.0" in re.sub("<[^>]+>", "", ex.canvas.chain)
    assert ex.chain_line.text() == "start at z = 4.0: ∂z/∂z = 1.0"
    pow_node = next(n for n, d in ex.graph.nx.nodes(data=True) if d.get("op_type") == "Pow")
    ex.controls["node"].value = pow_node
    assert "∂z/∂x = ∂z/∂z · ∂z/∂x = 1.0 × (2·x) = 1.0 × 4.0 = 4.0" in ex.inspector.value
    ex.close()


def test_the_exported_page_holds_each_steps_line():
    run = examples.get("stop_gradient").run()
    ex = tv.explore(run.tape, run.target, lang="zh")
    gt = ex.graph_targets
    html = page_fragment(gt, ex.state)
    data = json.loads(re.search(r"class='tv-page-data'>(.*?)</script>", html, re.S).group(1).replace("<\\/", "</"))
    chain = data["targets"][0]["chain"]
    assert len(chain) == gt.flow(ex.state.target).last_step + 1
    assert chain == [st.chain_html(gt, s) for s in _states(ex)[1]]
    assert "<div class='tv-chain-box'></div>" in html
    assert "2·x" in re.sub("<[^>]+>", "", chain[2]) and "tf.stop_gradient(y)" in re.sub("<[^>]+>", "", chain[1])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_pieces_join_to_the_writers_lines_for_a_keras_layer_opened(lang):
    keras = pytest.importorskip("keras")
    tf.random.set_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation="tanh")])
    xs = tf.constant(np.arange(6, dtype="float32").reshape(2, 3) / 6)
    with tv.GradientTape() as tape:
        loss = tf.reduce_mean(model(xs) ** 2)
    ex = tv.explore(tape, loss, collapsed=False, lang=lang)
    gt, states = _states(ex)
    for s in states:
        line = st.chain_line(gt, s)
        assert line.texts() == st.chain_rule(gt, s)[s.step].lines(lang)


def test_without_the_canvas_the_line_is_a_widget_of_its_own(monkeypatch):
    import warnings

    monkeypatch.setenv("TAPEVIZ_CANVAS", "html")
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        z = x**2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fallback says once that the canvas is missing
        ex = tv.explore(tape, z)
    assert not hasattr(ex.canvas, "chain")  # an ipywidgets.HTML picture: the line is ex.chain
    assert ex.chain.layout.display != "none" and ex.chain in ex.children
    ex.controls["step"].value = 1
    assert "1.0 × (2·x) = 1.0 × 4.0 = 4.0" in re.sub("<[^>]+>", "", ex.chain.value)
    assert "aria-live='polite'" in ex.chain.value
    ex.close()

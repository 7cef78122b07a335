"""tv.compare's picture: a's graph coloured and labelled by ‖g_b‖ / ‖g_a‖ (compare_scene.py),
checked against TensorFlow's own gradients, clipped by TF's own clip functions."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import tensorflow as tf
from placement_check import check
from training_runs import pictured_run

import tapeviz as tv
from tapeviz.gradients.compare import Change, StructureMismatch
from tapeviz.picture.compare_scene import CompareScene, RatioScale, combined, ratio_text
from tapeviz.picture.themes import THEMES


def _norm(t) -> float:
    return float(np.linalg.norm(np.asarray(tf.convert_to_tensor(t), dtype=np.float64).ravel()))


def _scaled(s1: float, s2: float):
    """loss = Σ w·s1 + Σ v·s2 + Σ u: the same program, run with other constants."""
    w, v, u = tf.Variable([1.0, 2.0], name="w"), tf.Variable([3.0], name="v"), tf.Variable([0.5], name="u")
    with tv.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(w * s1) + tf.reduce_sum(v * s2) + tf.reduce_sum(u * 2.0)
    return tape, loss, (w, v, u)


def test_edge_colours_follow_the_ratios_sign():
    ta, la, va = _scaled(1.0, 1.0)
    tb, lb, vb = _scaled(10.0, 0.1)
    scene = tv.compare((ta, la), (tb, lb)).scene()
    th = scene.theme
    assert scene.ratio_scale == RatioScale(10.0)  # ×0.1 .. ×10: one decade each way
    shown = scene.changes
    grown = {scene.graph.display_name(e[0]): (c, t) for e, c, t in shown["grown"]}
    shrunk = {scene.graph.display_name(e[0]): (c, t) for e, c, t in shown["shrunk"]}
    unchanged = {scene.graph.display_name(e[0]): (c, t) for e, c, t in shown["unchanged"]}
    # TF's gradients of each variable, in a and in b: their norms' ratio is written on its edge
    for name, var_a, var_b, where in (
        ("w", va[0], vb[0], grown),
        ("v", va[1], vb[1], shrunk),
        ("u", va[2], vb[2], unchanged),
    ):
        want = _norm(tb.gradient(lb, var_b)) / _norm(ta.gradient(la, var_a))
        assert name in where, (name, shown)
        assert where[name][1] == ratio_text(want)  # the label is TF's norms' ratio
    assert grown["w"] == (th.grown, "×10")  # the scale's end: the full hue
    assert shrunk["v"][0] == th.shrunk and shrunk["v"][1] == "×0.1"
    assert unchanged["u"] == (th.unchanged, "×1")
    assert not shown["lost"]
    plain = th.kinds["op"][0]
    fills = {scene.graph.display_name(n): b.fc for n, b in scene.boxes.items()}
    assert fills["u"] == plain and fills["w"] != plain and fills["v"] != plain  # colour says the ratio alone
    assert all(entry.label.text != "variable" for entry in scene.legend)
    check(scene, "ratios")


def test_the_ratio_written_is_tfs_and_the_colour_sits_on_its_side():
    """Ratios between the ends: the text is TF's norms' ratio, the colour between grey and the hue."""
    ta, la, (wa, _, _) = _scaled(1.0, 1.0)
    tb, lb, (wb, _, _) = _scaled(3.0, 0.5)
    c = tv.compare((ta, la), (tb, lb))
    scene = c.scene()
    want = _norm(tb.gradient(lb, wb)) / _norm(ta.gradient(la, wa))
    node = scene.graph.node_of(wa)
    assert c.ratio(wa) == want and scene.grads[node].text.startswith(ratio_text(want))
    th = scene.theme
    got = scene.box_change(node)
    assert got.change is Change.CHANGED and got.ratio == want
    colour = scene.ratio_scale.colour(want, th)
    assert colour not in (th.grown, th.unchanged) and scene.boxes[node].ec == colour
    assert scene.ratio_scale.colour(1 / want, th) != colour
    # orange side: more red than blue; blue side: the other way
    r, _, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    assert r > b


@pytest.mark.parametrize("by", ["by_norm", "by_global_norm"])
def test_clip_on_and_off_writes_tfs_clipped_over_raw_norm(by, tmp_path):
    w1 = tf.Variable([[1.0, -2.0], [0.5, 3.0]], name="w1")
    w2 = tf.Variable([[2.0], [-1.5]], name="w2")
    x = tf.constant([[1.0, 2.0]])
    with tv.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum((tf.tanh(x @ w1) @ w2) ** 2)
    fl = tv.flow(tape, loss)
    c = tv.compare(fl, fl, clip=by, clip_norm=0.2)
    raw = tape.gradient(loss, [w1, w2])
    clipped = [tf.clip_by_norm(g, 0.2) for g in raw] if by == "by_norm" else tf.clip_by_global_norm(raw, 0.2)[0]
    scene = c.scene()
    for v, g, gc in zip([w1, w2], raw, clipped, strict=True):
        want = _norm(gc) / _norm(g)
        assert want < 1
        node = scene.graph.node_of(v)
        text = scene.grads[node].text
        assert text.startswith(ratio_text(want)), text
        assert scene.boxes[node].ec == scene.ratio_scale.colour(want, scene.theme)
    assert by in scene.caption  # the caption says how b was clipped
    check(scene, "clip")
    out = c.save(tmp_path / "clip.png", names=("raw", "clipped"))
    assert out.stat().st_size > 1000
    svg = c.save(tmp_path / "clip.svg").read_text(encoding="utf-8")
    assert ratio_text(_norm(clipped[1]) / _norm(raw[1])) in svg


def test_stop_gradient_on_and_off_calls_the_lost_edge_out(tmp_path):
    def run(stop: bool):
        w = tf.Variable([1.0, 2.0], name="w")
        b = tf.Variable(0.5, name="b")
        with tv.GradientTape(persistent=True) as tape:
            h = w * 3.0
            if stop:
                h = tf.stop_gradient(h)
            loss = tf.reduce_sum(h * b)
        return tape, loss, w

    ta, la, wa = run(False)
    tb, lb, wb = run(True)
    assert ta.gradient(la, wa) is not None and tb.gradient(lb, wb) is None  # what TF says
    c = tv.compare((ta, la), (tb, lb))
    scene = c.scene()
    lost = scene.changes["lost"]
    assert lost and all(text == "lost" for _, _, text in lost)
    for e, colour, _ in lost:
        arrow = scene.arrows[e]
        assert arrow.linestyle != "-" and colour == scene.theme.shrunk  # dashed: not by colour alone
        assert scene.edge_labels[e].weight == "bold"
    assert scene.grads[scene.graph.node_of(wa)].text.startswith("lost")
    # the legend says what the dashed line means, and the table lists the lost gradients
    legend = [sw.label.text for sw in scene.legend]
    assert any(t.startswith("lost:") for t in legend) and "×1" in legend
    assert "(lost)" in scene.caption
    svg = c.svg()
    e = lost[0][0]
    edge = re.search(rf'<g id="edge-{re.escape(e[0])}-{re.escape(e[1])}-{e[2]}">(.*?)</g>', svg, re.S)
    assert edge and "stroke-dasharray" in edge.group(1)
    zh = c.scene(lang="zh")
    assert all(text == "丢失" for _, _, text in zh.changes["lost"])
    check(scene, "stop_gradient")
    check(zh, "stop_gradient zh")


def test_two_history_steps(tmp_path):
    model, hist, grads_at = pictured_run(steps=4, lr=0.3, seed=5, data_seed=1)
    k, later = hist.recorded_steps()[0], hist.recorded_steps()[-1]
    c = tv.compare(hist.picture(k), hist.picture(later))
    scene = c.scene(collapsed=False)
    for v, g0, g1 in zip(model.trainable_variables, grads_at[k], grads_at[later], strict=True):
        want = _norm(g1) / _norm(g0)
        node = scene.graph.node_of(v)
        assert scene.grads[node].text.startswith(ratio_text(want)), (v.path, scene.grads[node].text)
        side = "grown" if want > 1 else "shrunk"
        assert scene.box_change(node).ratio == want, side
    # a layer drawn as one box: its variables' norms taken together
    boxed = c.scene()
    layer = next(n for n, d in boxed.display.nx.nodes(data=True) if d["kind"] == "layer")
    got = boxed.box_change(layer)
    members = [m for m in boxed.display.members[layer] if boxed.graph.nx.nodes[m]["kind"] == "variable"]
    na = math.sqrt(sum(c.nodes[m].norm_a ** 2 for m in members))
    nb = math.sqrt(sum(c.nodes[m].norm_b ** 2 for m in members))
    assert got.ratio == pytest.approx(nb / na, rel=1e-12)
    c.save(tmp_path / "steps.png")


def test_structure_mismatch_names_the_first_op_before_any_picture(tmp_path):
    w = tf.Variable([1.0, 2.0])
    with tv.GradientTape() as t1:
        l1 = tf.reduce_sum(tf.square(w))
    with tv.GradientTape() as t2:
        l2 = tf.reduce_sum(tf.exp(w))
    with pytest.raises(StructureMismatch, match=r"a has Square on line \d+, b has Exp on line \d+"):
        tv.compare((t1, l1), (t2, l2)).save(tmp_path / "never.png")
    assert not (tmp_path / "never.png").exists()


def test_ratio_scale_and_texts():
    assert RatioScale.fit([0.7, 1.2]) == RatioScale(2.0)  # clipping's ratios: ×0.5 .. ×2
    assert RatioScale.fit([0.5, 2.0]) == RatioScale(2.0)
    assert RatioScale.fit([0.3]) == RatioScale(10.0)
    assert RatioScale.fit([0.004, 1.0]) == RatioScale(1000.0)  # ×0.004 is 2.4 decades down: 3 whole ones
    assert RatioScale.fit([1e-9]) == RatioScale(1000.0)  # at most 3
    assert RatioScale.fit([None, math.inf, 0.0]) == RatioScale(2.0)
    assert RatioScale(2.0).ticks() == [0.5, 1.0, 2.0] and RatioScale(10.0).ticks() == [0.1, 1.0, 10.0]
    s = RatioScale(100.0)
    assert s.ticks() == [0.01, 0.1, 1.0, 10.0, 100.0]
    assert s.position(0.01) == -1 and s.position(1.0) == 0 and s.position(1e6) == 1 and s.position(0.0) == -1
    th = THEMES["light"]
    assert s.colour(1.0, th) == th.unchanged and s.colour(None, th) == th.bad and s.colour(math.nan, th) == th.bad
    texts = [ratio_text(r) for r in (0.25, 1.0, 12.5, math.inf, math.nan, None)]
    assert texts == ["×0.25", "×1", "×12.5", "×∞", "NaN", "—"]


def test_combined_rows():
    from tapeviz.gradients.compare import Row

    def row(a, b, change):
        return Row("edge", None, "e", a, b, None if a is None or b is None else b / a, change)

    assert combined([]).change is Change.NONE
    assert combined([row(3.0, None, Change.LOST), row(4.0, None, Change.LOST)]).norm_a == 5.0
    both = combined([row(3.0, 6.0, Change.CHANGED), row(4.0, 8.0, Change.CHANGED)])
    assert both.change is Change.CHANGED and both.ratio == 2.0
    assert combined([row(3.0, 0.0, Change.ZEROED), row(4.0, 0.0, Change.ZEROED)]).change is Change.ZEROED


def test_is_a_scene_of_a():
    ta, la, _ = _scaled(1.0, 1.0)
    tb, lb, _ = _scaled(2.0, 1.0)
    c = tv.compare((ta, la), (tb, lb))
    scene = CompareScene(c)
    assert scene.graph is c.a.graph and scene.flow is c.a
    scene.set_step(0)  # a comparison has no steps: always the finished pass, restyled
    assert scene.changes["grown"]

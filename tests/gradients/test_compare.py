"""tv.compare: two backward passes of one program, node by node and edge by edge."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf
from training_runs import pictured_run

import tapeviz as tv
from tapeviz.gradients.compare import Change, StructureMismatch


def _norm(t) -> float:
    return float(np.linalg.norm(np.asarray(tf.convert_to_tensor(t), dtype=np.float64).ravel()))


def _two_layer(w1, w2, x):
    with tv.GradientTape(persistent=True) as tape:
        h = tf.tanh(x @ w1)
        loss = tf.reduce_sum((h @ w2) ** 2)
    return tape, loss


@pytest.mark.parametrize("mode", ["by_global_norm", "by_norm", "by_value"])
def test_clip_on_and_off_gives_tf_clipped_over_raw_norms(mode):
    w1 = tf.Variable([[1.0, -2.0], [0.5, 3.0]])
    w2 = tf.Variable([[2.0], [-1.5]])
    x = tf.constant([[1.0, 2.0]])
    tape, loss = _two_layer(w1, w2, x)
    fl = tv.flow(tape, loss)
    c = tv.compare(fl, fl, clip=mode, clip_norm=0.05, clip_value=(-0.1, 0.1))
    raw = tape.gradient(loss, [w1, w2])
    if mode == "by_global_norm":
        clipped, _ = tf.clip_by_global_norm(raw, 0.05)
    elif mode == "by_norm":
        clipped = [tf.clip_by_norm(g, 0.05) for g in raw]
    else:
        clipped = [tf.clip_by_value(g, -0.1, 0.1) for g in raw]
    for v, g, gc in zip([w1, w2], raw, clipped, strict=True):
        want = _norm(gc) / _norm(g)
        assert want < 1
        assert c.ratio(v) == want  # the same TF numbers, the same float64 arithmetic
    # clipping acts on what the optimizer gets: the edges inside the graph are unchanged
    assert all(r.change is Change.SAME for r in c.edges.values() if r.change is not Change.NONE)
    assert c.clip == mode and not c.lost()
    # the largest changes are the clipped variables
    assert {r.name for r in c.rows(2)} == {"w1", "w2"}


def test_with_and_without_stop_gradient():
    def run(stop: bool):
        w = tf.Variable([1.0, 2.0])
        b = tf.Variable(0.5)
        with tv.GradientTape() as tape:
            h = w * 3.0
            if stop:
                h = tf.stop_gradient(h)
            loss = tf.reduce_sum(h * b)
        return tape, loss, w, b

    ta, la, wa, ba = run(False)
    tb, lb, wb, bb = run(True)
    c = tv.compare((ta, la), (tb, lb))
    assert c.ratio(wa) is None and c.nodes[c.a.graph.node_of(wa)].change is Change.LOST
    assert c.ratio(ba) == 1.0  # b's own gradient does not change
    lost_names = [r.name for r in c.lost()]
    assert "w" in lost_names and any("Mul" in n and r.kind == "edge" for r in c.lost() for n in [r.name])
    rows = c.rows(3)
    assert rows[0].change in (Change.LOST, Change.ZEROED)
    text = c.table()
    assert "lost" in text and "‖g_a‖" in text.splitlines()[0]
    assert "<table>" in c._repr_html_() and "lost" in c._repr_html_()


def test_two_history_steps():
    model, hist, grads_at = pictured_run(steps=3, lr=0.5, seed=3, data_seed=0)
    first, last = hist.recorded_steps()[0], hist.recorded_steps()[-1]
    c = tv.compare(hist.picture(first), hist.picture(last))
    for v, g0, g1 in zip(model.trainable_variables, grads_at[first], grads_at[last], strict=True):
        assert c.ratio(v) == _norm(g1) / _norm(g0), v.path
    assert not c.lost()
    assert len(c.rows(None, kind="node")) >= 4 and all(r.kind == "edge" for r in c.rows(5, kind="edge"))
    with pytest.raises(ValueError, match='kind must be "node", "edge"'):
        c.rows(kind="op")
    edge, row = next(iter(c.edges.items()))
    assert c.edge_ratio(edge) == row.ratio


def test_structure_mismatch_names_the_first_op_that_differs():
    w = tf.Variable([1.0, 2.0])
    with tv.GradientTape() as t1:
        l1 = tf.reduce_sum(w * w)
    with tv.GradientTape() as t2:
        l2 = tf.reduce_sum(w + w)
    with pytest.raises(StructureMismatch, match=r"a has Mul on line \d+, b has AddV2 on line \d+") as e:
        tv.compare((t1, l1), (t2, l2))
    assert "same program recorded twice" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_bad_arguments_say_what_to_pass():
    w = tf.Variable(1.0)
    with tv.GradientTape() as tape:
        y = w * 2.0
    with pytest.raises(TypeError, match=r"pass tv.flow\(tape, loss\)"):
        tv.compare(tape, tape)
    with pytest.raises(TypeError, match="recorded_steps"):
        tv.compare(None, (tape, y))
    with pytest.raises(ValueError, match="Unknown clip mode"):
        tv.compare((tape, y), (tape, y), clip="sometimes")


def test_gained_and_zeroed_rows():
    w = tf.Variable([1.0, -1.0])

    def run(scale):
        with tv.GradientTape() as tape:
            loss = tf.reduce_sum(tf.nn.relu(w * scale))
        return tape, loss

    c = tv.compare(run(1.0), run(-1.0))
    kinds = {r.change for r in c.rows(None)}
    assert Change.CHANGED in kinds or Change.SAME in kinds
    assert all(math.isfinite(r.ratio) for r in c.rows(None) if r.change is Change.SAME)
    assert repr(c).startswith("Comparison(")

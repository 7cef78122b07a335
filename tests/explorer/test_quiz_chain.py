"""The quiz asks the chain rule (tv.explore(..., quiz="local" | "product" | "chain")): an
op's local derivative at its inputs' values, or the missing factor of the product
("1.0 × ? = 4.0"), as well as the gradient. Every answer is TensorFlow's number from the
flow: here compared with tape.gradient of the op alone and of the whole target."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.explorer import quiz
from tapeviz.explorer import state as st
from tapeviz.explorer.html_page import page_fragment


@pytest.fixture
def example():
    """z = x * x**2 at x = 2 (∂z/∂x = 3·x² = 12), each op's local derivative known to TF."""
    x = tf.Variable(2.0)
    with tv.GradientTape(persistent=True) as tape:
        p = x**2
        z = p * x
    return tape, x, p, z


def _tf_local(f, at: float) -> float:
    """TF's derivative of ``f`` alone at ``at`` (no tapeviz)."""
    v = tf.constant(at)
    with tf.GradientTape() as t:
        t.watch(v)
        out = f(v)
    return float(t.gradient(out, v))


def test_a_local_question_is_answered_by_tfs_local_derivative(example):
    tape, x, p, z = example
    ex = tv.explore(tape, z, quiz="local")
    gt = ex.graph_targets
    fl = gt.flow(ex.state.target)
    asked = [quiz.question(fl, k, "local") for k in range(fl.last_step + 1)]
    pow_q = next(q for q in asked if q.kind == "local" and fl.graph.nx.nodes[q.node].get("op_type") == "Pow")
    assert float(pow_q.value) == _tf_local(lambda v: v**2, 2.0) == 4.0
    text = quiz.question_text(fl, pow_q)
    assert "∂p/∂x = 2·x, at x = 2.0" in text and "4.0" not in text.split("at x = 2.0")[1]
    mul_q = next(q for q in asked if q.kind == "local" and fl.graph.nx.nodes[q.node].get("op_type") == "Mul")
    assert float(mul_q.value) in (float(p.numpy()), float(x.numpy()))  # ∂(a·b)/∂a = b, TF's
    assert asked[0].kind == "gradient"  # the seed: no op, the gradient
    s = ex.state.replace(step=pow_q.step)
    right, problem = st.answer(gt, s, "4")
    assert problem is None and right.answers[-1].outcome == "right"
    wrong, _ = st.answer(gt, s, "12")
    assert wrong.answers[-1].outcome == "wrong"
    ex.close()


def test_a_product_question_misses_the_factor_between_tfs_numbers(example):
    tape, x, p, z = example
    fl = tv.flow(tape, z)
    want = float(tape.gradient(z, x))
    assert want == 12.0
    for k in range(1, fl.last_step + 1):
        q = quiz.question(fl, k, "product")
        if q.kind != "product":
            continue
        lk = q.link
        # TF's numbers: arriving × the asked factor = what TF passed along the edge
        assert float(lk.arriving.value) * float(q.value) == pytest.approx(float(lk.result.value))
        assert float(lk.result.value) == pytest.approx(float(fl.edge_grad(*q.edge)))
        text = quiz.question_text(fl, q, "zh")
        assert f"{lk.arriving.text} × ? = {lk.result.text}" in text and "缺少的因子" in text
    asked = [quiz.question(fl, k, "product") for k in range(1, fl.last_step + 1)]
    pow_q = next(q for q in asked if q.kind == "product" and fl.graph.nx.nodes[q.node].get("op_type") == "Pow")
    assert float(pow_q.value) == _tf_local(lambda v: v**2, 2.0) == 4.0  # ∂p/∂x at x = 2, TF's
    assert quiz.judge(pow_q, "4") == "right" and quiz.judge(pow_q, "3") == "wrong"


def test_chain_asks_local_product_and_gradient_by_turns(example):
    tape, _, _, z = example
    fl = tv.flow(tape, z)
    kinds = [quiz.question(fl, k, "chain").kind for k in range(fl.last_step + 1)]
    assert kinds[0] == "gradient" and "local" in kinds and "product" in kinds and "gradient" in kinds[1:]


def test_a_tensor_step_asks_the_gradient():
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tv.GradientTape() as tape:
        loss = tf.reduce_sum(w**2)
    fl = tv.flow(tape, loss)
    for k in range(fl.last_step + 1):
        q = quiz.question(fl, k, "local")
        assert q.kind == "gradient" and q == quiz.question(fl, k)
    np.testing.assert_array_equal(quiz.question(fl, fl.last_step).value, tape.gradient(loss, w).numpy())


def test_the_page_asks_the_chain_rule_and_holds_tfs_answers(example):
    tape, x, _, z = example
    ex = tv.explore(tape, z, quiz="product")
    html = page_fragment(ex.graph_targets, ex.state)
    data = json.loads(re.search(r"class='tv-page-data'>(.*?)</script>", html, re.S).group(1).replace("<\\/", "</"))
    questions = data["targets"][0]["quiz"]
    fl = ex.graph_targets.flow(ex.state.target)
    for k, q in enumerate(questions):
        want = quiz.question(fl, k, "product")
        assert q["e"] == [float(v) for v in want.expected]
    assert any("× ? =" in q["q"] for q in questions)
    ex.close()


def test_a_bad_quiz_setting_says_what_to_give(example):
    tape, _, _, z = example
    with pytest.raises(ValueError, match="'gradient', 'local', 'product', 'chain'"):
        tv.explore(tape, z, quiz="derivative")
    with pytest.raises(TypeError, match="give True, False or what to ask"):
        tv.explore(tape, z, quiz=3)

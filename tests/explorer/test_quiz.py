"""Predict, then reveal (tv.explore(..., quiz=True), tv.export_html(..., quiz=True)).

A step's number is hidden ("?") on the edge being processed and on the nodes still to be
reached until the student types a prediction (judged against TensorFlow's number within a
tolerance, then revealed) or presses reveal; a per-step score is kept and the teacher's
button resets it. The answers are TensorFlow's: each test compares them with tape.gradient.
The exported page checks answers in its own script: the same rule, tested here with Node
against the Python one, and its buttons in Chromium.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.explorer import quiz
from tapeviz.explorer import state as st
from tapeviz.messages import catalogue

TEXT = re.compile(r"<text[^>]*>(.*?)</text>", re.S)


def texts(svg: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", t) for t in TEXT.findall(svg)]


@pytest.fixture
def square():
    x = tf.Variable(3.0)
    with tv.GradientTape(persistent=True) as tape:
        y = x**2
    return tape, x, y


# --------------------------------------------------------------------------- questions and judging


def test_each_step_asks_for_tensorflows_number(square):
    tape, x, y = square
    fl = tv.flow(tape, y)
    qs = [quiz.question(fl, k) for k in range(fl.last_step + 1)]
    assert [q.step for q in qs] == [0, 1, 2]
    assert float(qs[0].value) == 1.0 and qs[0].to is None  # the seed: dy/dy
    assert qs[1].to == tape.graph.node_of(x) and float(qs[1].received) == 1.0  # Pow passes 2x to x
    assert float(qs[1].value) == float(tape.gradient(y, x)) == 6.0
    assert float(qs[2].value) == 6.0 and qs[2].node == tape.graph.node_of(x)  # x's total
    assert "x" in quiz.question_text(fl, qs[1], "en") and "y" in quiz.question_text(fl, qs[1], "en")
    assert quiz.question_text(fl, qs[1], "zh").startswith("y 收到了 1.0。它传回给 x 的梯度是多少？")


@pytest.mark.parametrize(
    ("typed", "outcome"),
    [
        ("6", "right"),
        ("6.0", "right"),
        (" 6.04 ", "right"),  # within 1 %
        ("5.9", "wrong"),
        ("-6", "wrong"),
        ("six", None),  # no number: nothing judged, nothing revealed
        ("", None),
        ("6, 6", None),  # a number asks for one number
    ],
)
def test_a_number_is_judged_within_the_tolerance(square, typed, outcome):
    tape, x, y = square
    q = quiz.question(tv.flow(tape, y), 1)
    assert quiz.judge(q, typed) == outcome


def test_tensors_are_answered_element_by_element_or_by_one_equal_number_or_by_norm():
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    big = tf.Variable(tf.reshape(tf.range(12, dtype=tf.float32), (3, 4)))
    with tv.GradientTape() as tape:
        loss = tf.reduce_sum(w**2) + tf.reduce_sum(big * 2.0)
    fl = tv.flow(tape, loss)
    grad_w = tape.gradient(loss, w).numpy()  # 2w
    by_node = {quiz.question(fl, k).node: quiz.question(fl, k) for k in range(fl.last_step + 1)}
    q_w = by_node[tape.graph.node_of(w)]
    np.testing.assert_allclose(q_w.expected, grad_w.ravel())
    assert quiz.judge(q_w, "[[2, 4], [6, 8]]") == "right"
    assert quiz.judge(q_w, "2，4，6，8") == "right"  # full-width commas (a Chinese keyboard)
    assert quiz.judge(q_w, "2, 4, 6, 9") == "wrong"
    assert quiz.judge(q_w, "2, 4, 6") is None
    # Sum passes a block of ones: "1" answers it
    sums = [q for q in by_node.values() if q.to is not None and np.size(q.value) == 4 and np.all(q.value == 1)]
    assert sums and quiz.judge(sums[0], "1") == "right"
    # a 3x4 gradient is answered by its norm, as the picture writes it
    q_big = by_node[tape.graph.node_of(big)]
    assert q_big.by_norm
    norm = float(np.linalg.norm(fl.grad(big)))
    assert norm == pytest.approx(float(tf.norm(tf.fill((3, 4), 2.0))))
    assert quiz.judge(q_big, f"{norm:.3f}") == "right"
    assert "‖·‖" in quiz.question_text(fl, q_big, "en")


TYPED = (
    "6",
    "6.04",
    "5.9",
    "-6",
    "six",
    "",
    "1",
    "2, 4, 6, 8",
    "[[2,4],[6,8.1]]",
    "2，4，6，8",
    "1e0",
    "−6",
    "+6.",
    ".5",
)


# --------------------------------------------------------------------------- the explorer


def test_quiz_hides_the_steps_numbers_until_answered(square):
    tape, x, y = square
    ex = tv.explore(tape, y, quiz=True, lang="en")
    assert ex.controls["step"].value == 0, "a quiz starts at the seed"
    assert "∂ ?" in texts(ex.canvas.value) and "What is dy/dy?" in ex.quiz.value
    ex.controls["step"].value = 2  # jumping ahead gives nothing away: step 1's 6.0 stays hidden too
    assert not [t for t in texts(ex.canvas.value) if "6.0" in t] and "?" in texts(ex.canvas.value)
    ex.controls["step"].value = 1
    shown = texts(ex.canvas.value)
    assert "?" in shown, "the edge Pow -> x shows ?"
    assert "6.0" not in shown and "∂ 6.0" not in shown, "no 6 anywhere before the answer"
    assert any(t.startswith("Step 1/2: y: predict") for t in shown)
    assert "∂ ?" in shown, "x, still to be reached, shows ∂ ?"
    assert "What gradient does it pass back to x?" in ex.quiz.value
    assert ex.panel.value.count("6") == 0, "the gradients' table waits: it would give the answer away"
    # an unreadable answer changes nothing and says what to type
    ex.controls["answer"].value = "six"
    ex.controls["check"].click()
    assert "Type a number" in ex.message.value and "?" in texts(ex.canvas.value)
    # a wrong answer: said so, then revealed
    ex.controls["answer"].value = "5"
    ex.controls["check"].click()
    assert "tv-quiz-wrong" in ex.quiz.value and "you typed 5; TensorFlow computed 6.0" in ex.quiz.value
    assert "6.0" in texts(ex.canvas.value) and "?" not in texts(ex.canvas.value)
    assert ex.controls["check"].disabled and ex.controls["reveal"].disabled
    # a right answer at the next step
    ex.controls["step"].value = 2
    assert "∂ ?" in texts(ex.canvas.value)
    ex.controls["answer"].value = "6.0"
    ex.controls["check"].click()
    assert "tv-quiz-right" in ex.quiz.value and "Right!" in ex.quiz.value
    assert "∂ 6.0" in texts(ex.canvas.value)
    assert "x" in ex.panel.value and "6" in ex.panel.value, "the last step answered: the table appears"
    # reveal at step 0
    ex.controls["step"].value = 0
    assert "What is dy/dy?" in ex.quiz.value
    ex.controls["reveal"].click()
    assert "Revealed: TensorFlow computed 1.0." in ex.quiz.value
    assert "Score: 1 right, 1 wrong, 1 revealed (3 steps)" in ex.quiz.value
    assert ["0 ◎", "1 ✗", "2 ✓"] == re.findall(r"data-step='\d'>([^<]*)<", ex.quiz.value)
    # the teacher resets the score: every step hidden again
    ex.controls["reset"].click()
    assert "Score: 0 right, 0 wrong, 0 revealed" in ex.quiz.value
    ex.controls["step"].value = 1
    assert "?" in texts(ex.canvas.value) and not ex.controls["check"].disabled
    ex.close()


def test_quiz_in_chinese():
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        z = x**2 + tf.stop_gradient(y)
    ex = tv.explore(tape, z, quiz=True, lang="zh")
    fl = ex.flow
    ex.controls["step"].value = 1
    assert "第 1/" in " ".join(texts(ex.canvas.value)) and "先预测标着 ? 的数" in " ".join(texts(ex.canvas.value))
    assert "得分：答对 0，答错 0，揭晓 0" in ex.quiz.value
    for k in range(fl.last_step + 1):
        ex.controls["step"].value = k
        q = quiz.question(fl, k)
        ex.controls["answer"].value = quiz.format_value(q.value)  # what TF computed, as the picture shows it
        ex.controls["check"].click()
        assert "答对了！" in ex.quiz.value
    assert f"答对 {fl.last_step + 1}，答错 0" in ex.quiz.value
    assert float(tape.gradient(z, x)) == 4.0 and "4.0" in " ".join(texts(ex.canvas.value))
    ex.close()


def test_answers_belong_to_their_target(square):
    x = tf.Variable(3.0)
    y = tf.Variable(4.0)
    with tv.GradientTape(persistent=True) as tape:
        f1 = x**2 + y
        f2 = x * y
    ex = tv.explore(tape, {"f1": f1, "f2": f2}, quiz=True)
    ex.controls["reveal"].click()
    assert "1 revealed" in ex.quiz.value
    ex.controls["target"].value = "f2"
    assert "0 revealed" in ex.quiz.value and "∂ ?" in texts(ex.canvas.value)
    ex.close()


def test_the_state_functions_are_pure(square):
    tape, x, y = square
    ex = tv.explore(tape, y, quiz=True)
    model, s0 = ex.graph_targets, ex.state.replace(step=1)
    hidden_svg = st.picture(model, s0)
    s1, problem = st.answer(model, s0, "6")
    assert problem is None and s0.answers == () and s1.answers == (quiz.Answer(1, "right", "6", "y"),)
    assert st.picture(model, s0) == hidden_svg, "the old state still shows its picture"
    assert st.picture(model, s1) != hidden_svg
    assert st.answer(model, s1, "7")[0] == s1, "a step is answered once"
    assert st.reset_score(s1).answers == ()
    assert st.quiz_hidden(model, s0.replace(quiz=False)) is None
    ex.close()


def test_without_quiz_nothing_is_hidden(square):
    tape, x, y = square
    ex = tv.explore(tape, y)
    ex.controls["step"].value = 1
    assert "6.0" in texts(ex.canvas.value) and ex.quiz.value == "" and "answer" not in ex.controls
    ex.close()


# --------------------------------------------------------------------------- the exported page


def test_export_html_quiz_holds_hidden_and_revealed_pictures_and_tf_answers(square, tmp_path):
    """The page's data: TF's answers per step, the pictures with every step hidden and the
    revealed ones as overlays, words in the page's language. Chromium runs it in
    test_browser_page.py (check, reveal, score, reset)."""
    from page_check import page_data

    tape, x, y = square
    path = tv.export_html(tape, y, tmp_path / "quiz.html", quiz=True, lang="zh")
    page = path.read_text(encoding="utf-8")
    (data,) = page_data(page)
    (t,) = data["targets"]
    assert [q["e"] for q in t["quiz"]] == [[1.0], [6.0], [6.0]]
    assert float(tape.gradient(y, x)) == 6.0
    assert set(t["overlays"]["reveal"]) == {"0", "1", "2"}
    assert "tvQuizJudge" in page and "tv-quiz-reset" in page and "重置得分" in page
    assert data["words"]["quiz"]["score"] == catalogue("zh")["quiz.score"]
    assert "梯度表格（会泄露答案）" in t["panels"][0]

"""The docs' teacher's page: the questions each lesson's quiz asks are computed from the
lessons themselves when the docs are built (docs/_ext/tapeviz_docs.py), in both languages,
with TensorFlow's answers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import tensorflow as tf

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def docs_ext():
    pytest.importorskip("sphinx")
    spec = importlib.util.spec_from_file_location("tapeviz_docs", ROOT / "docs" / "_ext" / "tapeviz_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_first_lessons_questions_and_tensorflows_answers(docs_ext):
    ex = docs_ext.lesson_explorer(ROOT / "notebooks" / "en" / "01_basics.ipynb")
    assert ex is not None and ex.state.quiz, "the lesson ran with QUIZ = True"
    rows = docs_ext.quiz_questions(ex)
    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = x**2
    tf_answer = f"{float(tape.gradient(y, x))}"  # 6.0
    assert [(r["step"], r["answer"]) for r in rows] == [(0, "1.0"), (1, tf_answer), (2, tf_answer)]
    assert rows[1]["en"].startswith("y received 1.0. What gradient does it pass back to x?")
    assert rows[1]["zh"].startswith("y 收到了 1.0。它传回给 x 的梯度是多少？")
    ex.close()


def test_a_lesson_without_a_quiz_says_so(docs_ext, tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import tapeviz as tv\nex = tv.interact(lambda x: x * x, x=(0.0, 1.0))")]
    nbformat.write(nb, str(tmp_path / "10_x.ipynb"))
    assert docs_ext.lesson_explorer(tmp_path / "10_x.ipynb") is None
    assert "No quiz" in docs_ext.teaching_markdown(tmp_path)

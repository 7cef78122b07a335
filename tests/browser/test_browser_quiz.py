"""Predict, then reveal in Voilà, as a class sees it: a Chinese lesson served as an app with
the teacher's settings (QUIZ = True, THEME = "projector" in its first cell), answered on
the page. The numbers are hidden, a wrong and a right prediction each get their verdict and
reveal TensorFlow's number, reveal works, the score counts each step and the teacher's
reset hides them again. Screenshots go to tests/artifacts/ (voila_quiz_zh_*.png).
"""

from __future__ import annotations

import re

import nbformat
import pytest
from browser import (
    NOTEBOOKS_DIR,
    canvas_svg,
    open_voila,
    screenshot,
    unexpected_page_errors,
    wait_svg_changed,
    watch_page_errors,
)

pytestmark = pytest.mark.browser

ROOT = "body[data-voila] .tv-explorer"
CANVAS = f"{ROOT} .tv-canvas"
_TEXTS_JS = "sel => Array.from(document.querySelectorAll(sel + ' svg text')).map(t => (t.textContent || '').trim())"


def _lesson_with_quiz(server, name: str) -> str:
    """The served copy of a lesson with the teacher's settings in its first code cell."""
    nb = nbformat.read(str(NOTEBOOKS_DIR.parent / "zh" / name), as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert "QUIZ = False" in first.source and 'THEME = "auto"' in first.source
    first.source = first.source.replace("QUIZ = False", "QUIZ = True").replace('THEME = "auto"', 'THEME = "projector"')
    out = f"quiz_{name}"
    nbformat.write(nb, str(server.root / out))
    return out


def test_voila_quiz_hides_checks_reveals_and_scores(server_factory, page):
    from playwright.sync_api import expect

    voila = server_factory("voila", NOTEBOOKS_DIR.parent / "zh")
    errors = watch_page_errors(page)
    open_voila(page, voila, _lesson_with_quiz(voila, "01_basics.ipynb"))
    expect(page.locator(f"{CANVAS} svg")).to_be_visible()
    page.locator(ROOT).scroll_into_view_if_needed()
    texts = lambda: page.evaluate(_TEXTS_JS, CANVAS)  # noqa: E731
    quiz = page.locator(f"{ROOT} .tv-quiz-panel")
    typed = page.locator(f"{ROOT} .tv-quiz-input input")
    check = page.locator(f"{ROOT} .tv-quiz-check")
    reveal = page.locator(f"{ROOT} .tv-quiz-reveal")
    step = page.locator(f"{ROOT} .tv-step .noUi-handle")

    # A quiz opens at the seed (step 0/2), every number hidden: y's ∂ and x's are "∂ ?".
    expect(quiz).to_contain_text("dy/dy 是多少？")
    expect(quiz).to_contain_text("得分：答对 0，答错 0，揭晓 0（共 3 步）")
    shown = texts()
    assert shown.count("∂ ?") == 2 and not [t for t in shown if "1.0" in t or "6.0" in t], shown
    assert any(t.startswith("第 0/2 步") and "先预测" in t for t in shown), shown
    screenshot(page, "voila_quiz_zh_hidden")

    # Step 0: reveal without predicting (TensorFlow's seed, 1.0, appears on the picture).
    reveal.click()
    expect(quiz.locator(".tv-quiz-revealed")).to_have_text("已揭晓：TensorFlow 算出的是 1.0。")
    page.wait_for_function(f"() => ({_TEXTS_JS})('{CANVAS}').includes('∂ 1.0')")
    expect(check).to_be_disabled()

    # Step 1: Pow's edge to x is "?"; a wrong prediction is said so, then revealed.
    step.press("ArrowRight")
    expect(quiz).to_contain_text("它传回给 x 的梯度是多少？")
    page.wait_for_function(f"() => ({_TEXTS_JS})('{CANVAS}').includes('?')")
    svg = canvas_svg(page, CANVAS)
    typed.fill("5")
    check.click()
    expect(quiz.locator(".tv-quiz-wrong")).to_have_text("不对：你输入的是 5，TensorFlow 算出的是 6.0。")
    wait_svg_changed(page, CANVAS, svg)
    assert "6.0" in texts()

    # Step 2: x's total; a right prediction.
    step.press("ArrowRight")
    expect(quiz).to_contain_text("y 对 x 的梯度是多少？")
    page.wait_for_function(f"() => ({_TEXTS_JS})('{CANVAS}').includes('∂ ?')")
    typed.fill("6")
    check.click()
    expect(quiz.locator(".tv-quiz-right")).to_contain_text("答对了！")
    page.wait_for_function(f"() => ({_TEXTS_JS})('{CANVAS}').includes('∂ 6.0')")
    expect(quiz).to_contain_text("得分：答对 1，答错 1，揭晓 1（共 3 步）")
    marks = quiz.locator(".tv-quiz-cell").all_inner_texts()
    assert [re.sub(r"\s+", " ", m) for m in marks] == ["0 ◎", "1 ✗", "2 ✓"], marks
    screenshot(page, "voila_quiz_zh_scored")

    # The teacher's reset: the score is zero and the step is hidden again.
    page.locator(f"{ROOT} .tv-quiz-reset").click()
    expect(quiz).to_contain_text("得分：答对 0，答错 0，揭晓 0（共 3 步）")
    expect(check).to_be_enabled()
    assert page.locator(f"{ROOT}.tv-projector").count() == 1, "THEME = 'projector' sizes the explorer up"
    assert not unexpected_page_errors(errors, voila), errors

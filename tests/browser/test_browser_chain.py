"""The chain rule under the picture of an exported page, in Chromium from disk: each step
shows its sentence and chain-rule line in an aria-live region; hovering or focusing a term
gives the box (or arrow) it names the highlight class, and leaving it takes it off."""

from __future__ import annotations

import re

import pytest
import tensorflow as tf
from browser import screenshot

import tapeviz as tv

pytestmark = pytest.mark.browser


def _page(page, tmp_path, lang: str = "en"):
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        z = x**2 + tf.stop_gradient(y)
    path = tv.export_html(tape, z, tmp_path / f"chain_{lang}.html", lang=lang)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector(".tv-page[data-tv-ready='1'] .tv-page-picture svg")
    return page, errors


def _linked(page) -> list[str]:
    return page.evaluate("() => Array.from(document.querySelectorAll('svg .tv-linked'), (e) => e.id).sort()")


def test_hovering_a_term_highlights_its_box_in_the_exported_page(page, tmp_path):
    page, errors = _page(page, tmp_path)
    region = page.locator(".tv-chain-box .tv-chain")
    assert region.get_attribute("aria-live") == "polite"
    # the finished pass: "∂z/∂x = 4.0"
    assert "∂z/∂x = 4.0" in region.inner_text()
    page.locator(".tv-step").fill("2")
    assert "Step 2/3" in page.locator(".tv-chain-sentence").inner_text()
    assert "∂z/∂x = ∂z/∂Pow · ∂Pow/∂x = 1.0 × (2·x) = 1.0 × 4.0 = 4.0" in region.inner_text()
    x_term = page.locator(".tv-chain-line .tv-term", has_text="x").first
    refs = x_term.get_attribute("data-tv-refs").split()
    assert refs and all(page.locator(f"svg [id='{r}']").count() == 1 for r in refs)
    x_term.hover()
    assert _linked(page) == sorted(refs)
    box = page.locator(f"svg [id='{refs[0]}']")
    assert "tv-linked" in box.get_attribute("class")
    screenshot(page, "chain-line-hover")
    page.mouse.move(5, 5)
    assert _linked(page) == []
    # keyboard: a term takes focus and highlights what it names; leaving it clears it
    edge_term = page.locator(".tv-chain-line .tv-term", has_text="4.0").last
    edge_refs = edge_term.get_attribute("data-tv-refs").split()
    assert edge_refs[0].startswith("edge-")
    edge_term.focus()
    assert _linked(page) == sorted(edge_refs)
    page.locator(".tv-step").focus()
    assert _linked(page) == []
    assert errors == []


def test_the_stop_reason_and_the_chinese_line_in_the_page(page, tmp_path, cjk_font):
    page, errors = _page(page, tmp_path, "zh")
    page.locator(".tv-step").fill("1")
    text = page.locator(".tv-chain").inner_text()
    assert "第 1/3 步" in text and "= None：" in text and "tf.stop_gradient(y)" in text
    stopped = page.locator(".tv-chain-line .tv-term", has_text="StopGradient").first
    stopped.hover()
    assert any(i.startswith("edge-") for i in _linked(page))
    screenshot(page, "chain-line-zh")
    assert errors == []


CHAIN_NOTEBOOK = "chain_line.ipynb"
CHAIN_CELLS = [
    "import tensorflow as tf\nimport tapeviz as tv",
    (
        "x = tf.Variable(2.0)\ny = tf.Variable(3.0)\nwith tv.GradientTape() as tape:\n"
        "    z = x**2 + tf.stop_gradient(y)\nex = tv.explore(tape, z)\nex"
    ),
]


def test_the_live_explorer_shows_each_steps_line_and_links_its_terms(server_factory, page):
    """In JupyterLab: the canvas's live region follows the step (a key press), and a term's
    hover highlights its box in the live picture."""
    from browser import run_notebook, unexpected_page_errors, watch_page_errors, write_notebook
    from page_explorer import ExplorerOnPage
    from playwright.sync_api import expect

    server = server_factory("lab")
    write_notebook(server.root / CHAIN_NOTEBOOK, CHAIN_CELLS)
    errors = watch_page_errors(page)
    run_notebook(page, server, CHAIN_NOTEBOOK)
    ex = ExplorerOnPage(page, server)
    ex.wait_shown()
    region = page.locator(f"{ex.canvas} .tv-chain-box .tv-chain")
    expect(region).to_have_attribute("aria-live", "polite")
    expect(region).to_contain_text("∂z/∂x = 4.0")
    page.locator(f"{ex.canvas} svg").click()  # focus in the explorer: ← steps back
    page.keyboard.press("ArrowLeft")
    expect(region).to_contain_text("∂z/∂x = ∂z/∂Pow · ∂Pow/∂x = 1.0 × (2·x) = 1.0 × 4.0 = 4.0")
    term = page.locator(f"{ex.canvas} .tv-chain-line .tv-term", has_text="x").first
    refs = term.get_attribute("data-tv-refs").split()
    term.hover()
    for r in refs:
        expect(page.locator(f"{ex.canvas} svg [id='{r}']")).to_have_class(re.compile(r"\btv-linked\b"))
    screenshot(page, "chain-line-lab")
    page.mouse.move(2, 2)
    expect(page.locator(f"{ex.canvas} svg .tv-linked")).to_have_count(0)
    assert not unexpected_page_errors(errors, server), errors


def test_a_chain_quiz_page_asks_the_factor_and_shows_the_line_once_answered(page, tmp_path):
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        z = x**2
    path = tv.export_html(tape, z, tmp_path / "quiz.html", quiz="product")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector(".tv-page[data-tv-ready='1'] .tv-page-picture svg")
    page.locator(".tv-next").click()  # step 1: z = x**2, the factor ∂z/∂x at x = 2
    question = page.locator(".tv-quiz-question").inner_text()
    assert "∂z/∂x = ∂z/∂z · ∂z/∂x = 1.0 × ? = 4.0" in question
    assert page.locator(".tv-chain-line").count() == 0  # the line would give the answer away
    page.locator(".tv-quiz-input").fill("4")
    page.locator(".tv-quiz-check").click()
    assert "tv-quiz-right" in page.locator(".tv-quiz-verdict").get_attribute("class")
    assert "1.0 × (2·x) = 1.0 × 4.0 = 4.0" in page.locator(".tv-chain-line").first.inner_text()
    screenshot(page, "chain-quiz-page")
    assert errors == []

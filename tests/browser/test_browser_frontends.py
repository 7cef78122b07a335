"""The Explorer in the other front ends a class meets, and its keyboard stepping.

- Jupyter Notebook 7: the notebook runs from the Run menu; dragging the step slider
  repaints the picture (Notebook 7 keeps arrow keys from sliders, so the handle is
  dragged), and the explorer's own ← works there too.
- Voilà: the notebook served as an app. It runs when the page opens, shows outputs and
  text but no code, and the explorer works against the page's live kernel.
- Keyboard stepping (tapeviz/explorer/keyboard.py) in JupyterLab and Voilà: with focus in the
  explorer, ← / → step within the slider's range and space plays / pauses; keys typed
  into a text input elsewhere on the page do not step.

Each test checks what the picture shows after the move against the step it was moved to
(the title "Step k/n", the amber highlight of the active step). Servers are shared per
front end for the session; screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import re
import time

import pytest
from browser import (
    notebook_root,
    run_notebook,
    screenshot,
    unexpected_page_errors,
    wait_svg_changed,
    watch_page_errors,
    write_notebook,
)
from page_explorer import ExplorerOnPage

pytestmark = pytest.mark.browser

TEACHING_NOTEBOOK = "05_stop_gradient.ipynb"

# A small class notebook: the explorer, then a notes box in another cell (to type into).
KEYS_NOTEBOOK = "keys.ipynb"
KEYS_CELLS = [
    "import ipywidgets as W\nimport tensorflow as tf\nimport tapeviz as tv",
    ("x = tf.Variable(3.0)\nwith tv.GradientTape() as tape:\n    y = x * x + 2.0 * x\nex = tv.explore(tape, y)\nex"),
    "notes = W.Text(placeholder='notes')\nnotes.add_class('tv-test-notes')\nnotes",
]


def _drag_handle_to(page, handle, track, value: int, lo: int, hi: int) -> None:
    """Drag a noUiSlider handle with the mouse to where ``value`` sits on its track (in view
    first: an explorer taller than the window, scrolled into view, can hide it above)."""
    handle.scroll_into_view_if_needed()
    box = track.bounding_box()
    hb = handle.bounding_box()
    x = box["x"] + box["width"] * (value - lo) / (hi - lo)
    y = hb["y"] + hb["height"] / 2
    page.mouse.move(hb["x"] + hb["width"] / 2, y)
    page.mouse.down()
    page.mouse.move(x, y, steps=8)
    page.mouse.up()


def test_notebook7_runs_the_explorer_and_a_dragged_slider_repaints_it(notebook7, page):
    errors = watch_page_errors(page)
    run_notebook(page, notebook7, TEACHING_NOTEBOOK)
    ex = ExplorerOnPage(page, notebook7)
    ex.wait_shown()
    last = int(ex.step.get_attribute("aria-valuetext"))
    svg0 = ex.svg()
    ex.expect_finished_title()
    screenshot(page, "notebook7_explorer")

    track = page.locator(f"{ex.root} .tv-step .noUi-base")
    _drag_handle_to(page, ex.step, track, last - 2, 0, last)
    ex.expect_step(last - 2)
    svg1 = ex.expect_picture_of_step(last - 2, last, svg0)
    screenshot(page, "notebook7_explorer_dragged")

    # Notebook 7 keeps arrow keys from a focused slider, but the explorer's own key
    # handling sees them first: a click on the picture, then ← steps back.
    page.locator(f"{ex.canvas} svg").click()
    page.keyboard.press("ArrowLeft")
    ex.expect_step(last - 3)
    ex.expect_picture_of_step(last - 3, last, svg1)
    assert not unexpected_page_errors(errors, notebook7), errors


def test_voila_serves_the_notebook_as_an_app(voila, page):
    from playwright.sync_api import expect

    errors = watch_page_errors(page)
    run_notebook(page, voila, TEACHING_NOTEBOOK)
    screenshot(page, "voila_app_top")
    body = page.locator("body")
    # The text and what the kernel printed are there (TensorFlow ran in a live kernel) ...
    expect(page.get_by_role("heading", name=re.compile("05 · Stopping the gradient"))).to_be_visible()
    expect(body).to_contain_text("the gradient of z with respect to y: None")
    expect(body).to_contain_text("why_none(y): stop_gradient")
    # ... the code is not.
    assert page.locator(".cm-editor").count() == 0, "Voilà shows a code editor"
    shown_inputs = page.evaluate("""() => Array.from(document.querySelectorAll('.jp-CodeCell .jp-InputArea'))
        .filter(e => e.offsetParent !== null && (e.innerText || '').trim() !== '').length""")
    assert shown_inputs == 0, "Voilà shows code cells' inputs"
    text = body.inner_text()
    for source_line in ("ex = tv.explore(tape, z, lang=LANG", "import tapeviz as tv", "for s in fl.stopped"):
        assert source_line not in text, f"Voilà shows code: {source_line!r}"

    ex = ExplorerOnPage(page, voila)
    ex.wait_shown()
    last = int(ex.step.get_attribute("aria-valuetext"))
    svg0 = ex.svg()
    ex.expect_finished_title()
    screenshot(page, "voila_app_explorer")
    ex.step.press("ArrowLeft")  # Voilà passes arrow keys to the slider
    ex.expect_step(last - 1)
    ex.expect_picture_of_step(last - 1, last, svg0)
    screenshot(page, "voila_app_step_back")
    assert not unexpected_page_errors(errors, voila), errors


_FOCUS_IN_EXPLORER_JS = "sel => { const a = document.activeElement; return !!a && !!a.closest(sel); }"


@pytest.mark.parametrize("frontend", ["lab", "voila"])
def test_keyboard_steps_and_plays_when_the_explorer_has_focus(frontend, server_factory, page):
    from playwright.sync_api import expect

    server = server_factory(frontend)
    write_notebook(server.root / KEYS_NOTEBOOK, KEYS_CELLS)
    errors = watch_page_errors(page)
    run_notebook(page, server, KEYS_NOTEBOOK)
    ex = ExplorerOnPage(page, server)
    ex.wait_shown()
    expect(page.locator(f"{ex.root}[data-tv-keys='on']")).to_have_count(1)  # the key widget found its box
    last = int(ex.step.get_attribute("aria-valuetext"))
    assert last >= 4, "the test needs a few steps"
    svg = ex.svg()
    ex.expect_finished_title()

    # Focus: a click on the picture.
    page.locator(f"{ex.canvas} svg").click()
    assert page.evaluate(_FOCUS_IN_EXPLORER_JS, ex.root), "a click on the picture focuses the explorer"

    # → at the last step stays there; ← runs down to the first step and stops at 0
    # (the readout is the model's value: a step below min would show there).
    page.keyboard.press("ArrowRight")
    ex.expect_step(last)
    for _ in range(last + 2):
        page.keyboard.press("ArrowLeft")
    ex.expect_step(0)
    svg = ex.expect_picture_of_step(0, last, svg)

    # → twice, ← once: step 1, and the picture shows step 1.
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowLeft")
    ex.expect_step(1)
    svg = ex.expect_picture_of_step(1, last, svg)
    screenshot(page, f"keys_{frontend}_step1")

    # Space plays: the Play button turns into pause and the steps advance on their own ...
    expect(ex.play_icon).to_have_class(re.compile(r"\bfa-play\b"))
    page.keyboard.press(" ")
    expect(ex.play_icon).to_have_class(re.compile(r"\bfa-pause\b"))
    page.wait_for_function(
        "([sel]) => { const h = document.querySelector(sel);"
        " return h && Number(h.getAttribute('aria-valuetext')) >= 2; }",
        arg=[f"{ex.root} .tv-step .noUi-handle"],
        polling=50,
    )
    wait_svg_changed(page, ex.canvas, svg)
    # ... and space again pauses where it is.
    page.keyboard.press(" ")
    expect(ex.play_icon).to_have_class(re.compile(r"\bfa-play\b"))
    paused_at = int(ex.step.get_attribute("aria-valuetext"))
    assert 2 <= paused_at <= last
    time.sleep(2.0)  # two play intervals (900 ms): a running Play would have moved on
    ex.expect_step(paused_at)

    # Keys typed into a text box in another cell are the text box's, not the explorer's.
    notes = page.locator(f"{notebook_root(server)} .tv-test-notes input")
    notes.click()
    assert not page.evaluate(_FOCUS_IN_EXPLORER_JS, ex.root)
    for key in ("a", "ArrowLeft", "ArrowLeft", " ", "ArrowRight", "b"):
        page.keyboard.press(key)
    expect(notes).to_have_value(" ab")  # the arrows moved the caret, space typed a space
    ex.expect_step(paused_at)
    expect(ex.play_icon).to_have_class(re.compile(r"\bfa-play\b"))
    screenshot(page, f"keys_{frontend}_notes")
    assert not unexpected_page_errors(errors, server), errors

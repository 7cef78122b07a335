"""tv.interact in a real JupyterLab: a student moves an input slider with the keyboard and
the picture, the slope plot's tangent and the clipping panel change to what TensorFlow
computes here, in the test process, with a plain tf.GradientTape at the same values.

Waits use Playwright's retrying expectations; nothing here asserts how long anything took.
"""

from __future__ import annotations

import pytest
from browser import SEL_PANEL, canvas_svg, run_notebook, screenshot, wait_svg_changed, write_notebook

pytestmark = pytest.mark.browser

NOTEBOOK = "interact_seed.ipynb"
CELLS = [
    """\
import tensorflow as tf
import tapeviz as tv

def f(x=1.0, w=1.5):
    return x**2 * w

ex = tv.interact(f, x=(-3.0, 3.0, 0.1), w=(0.0, 2.0, 0.02))
ex"""
]

EXPLORER = f"{SEL_PANEL} .tv-explorer"
CANVAS = f"{EXPLORER} .tv-canvas"
TANGENT = f"{EXPLORER} .tv-slope .tv-slope-tangent"


def plain_gradient(x: float, w: float) -> tuple[float, float]:
    import tensorflow as tf

    xv, wv = tf.Variable(x, dtype=tf.float32), tf.Variable(w, dtype=tf.float32)
    with tf.GradientTape() as tape:
        y = xv**2 * wv
    gx, gw = tape.gradient(y, [xv, wv])
    return float(gx.numpy()), float(gw.numpy())


_BOXES_JS = """
sel => Array.from(document.querySelectorAll(sel + ' svg g[id^="node-"]')).map(g => {
  const b = g.querySelector(':scope > rect').getBBox();   // the box itself (after its <title>)
  return [g.id, Math.round(b.x * 100), Math.round(b.y * 100), Math.round(b.width * 100)];
})
"""


def boxes(page) -> list:
    """Each node's box as drawn on the page now: (id, x, y, width)."""
    return page.evaluate(_BOXES_JS, CANVAS)


def test_input_slider_reruns_and_repaints(jupyterlab, page):
    from playwright.sync_api import expect

    write_notebook(jupyterlab.root / NOTEBOOK, CELLS)
    run_notebook(page, jupyterlab, NOTEBOOK)
    expect(page.locator(f"{CANVAS} svg")).to_be_visible()
    page.locator(EXPLORER).scroll_into_view_if_needed()
    tangent = page.locator(TANGENT)
    expect(tangent).to_have_attribute("data-slope", repr(plain_gradient(1.0, 1.5)[0]))  # 3.0 at x = 1
    svg0 = canvas_svg(page, CANVAS)
    boxes0 = boxes(page)
    assert len(boxes0) == 4, boxes0  # x, w, Pow, Mul
    screenshot(page, "interact_start")

    # -- x: 1.0 -> 2.0 with the keyboard (the slider's step is 0.1) ----------------------
    handle = page.locator(f"{EXPLORER} .tv-input-x .noUi-handle")
    for _ in range(10):
        handle.press("ArrowRight")
    expect(handle).to_have_attribute("aria-valuenow", "2.0")
    gx, gw = plain_gradient(2.0, 1.5)
    expect(tangent).to_have_attribute("data-slope", repr(gx))  # 6.0: TF's gradient at x = 2
    expect(page.locator(f"{EXPLORER} .tv-status")).to_contain_text("f(x=2, w=1.5) → f = 6.0")
    expect(page.locator(f"{EXPLORER} .tv-panel td.tv-norm[data-var='x']")).to_contain_text(f"{gx:.4g} →")
    expect(page.locator(f"{EXPLORER} .tv-panel td.tv-norm[data-var='w']")).to_contain_text(f"{gw:.4g} →")
    svg1 = wait_svg_changed(page, CANVAS, svg0)
    assert "6.0" in svg1, "x's gradient, 6.0, is drawn on the new picture"
    assert boxes(page) == boxes0, "the boxes stay where they were"
    screenshot(page, "interact_x_moved")

    # -- w: another input; the slope plot's curve is evaluated again ----------------------
    slope_svg = page.locator(f"{EXPLORER} .tv-slope svg")
    expect(slope_svg).to_contain_text("f against x (w = 1.5)")
    w_handle = page.locator(f"{EXPLORER} .tv-input-w .noUi-handle")
    for _ in range(5):
        w_handle.press("ArrowLeft")  # 1.5 -> 1.4 (step 0.02)
    expect(w_handle).to_have_attribute("aria-valuenow", "1.4")
    gx, _ = plain_gradient(2.0, 1.4)
    expect(tangent).to_have_attribute("data-slope", repr(gx))
    expect(slope_svg).to_contain_text("f against x (w = 1.4)")  # the curve of x**2 * 1.4
    screenshot(page, "interact_w_moved")

"""tv.explore(jacobian) in a real JupyterLab: a click on a row of the heatmap picks that
row, and the explorer below shows that row's backward pass (the row menu follows)."""

from __future__ import annotations

import pytest
from browser import SEL_PANEL, open_notebook, run_all, screenshot, write_notebook

pytestmark = pytest.mark.browser

PROGRAM = """
import tensorflow as tf
import tapeviz as tv

z = tf.Variable([0.3, -1.2, 2.0, 0.7])
with tv.GradientTape(persistent=True) as tape:
    y = tf.nn.softmax(z * 2.0)
jac = tv.jacobian(tape, y, z)
"""
ROOT = f"{SEL_PANEL} .tv-jacobian"


def test_a_click_on_a_heatmap_row_shows_its_backward_pass(jupyterlab, page):
    from playwright.sync_api import expect

    from tapeviz.explorer.jacobian_explorer import JacobianExplorer

    scope: dict = {}
    exec(PROGRAM, scope)  # the same Jacobian here: where its rows are on the image
    picker = JacobianExplorer(scope["jac"]).picker
    write_notebook(jupyterlab.root / "jacobian_rows.ipynb", [PROGRAM, "ex = tv.explore(jac)\nex"])
    open_notebook(page, jupyterlab, "jacobian_rows.ipynb")
    run_all(page)
    image = page.locator(f"{ROOT} .tv-heatmap img")
    expect(image).to_be_visible()
    menu = page.locator(f"{ROOT} .tv-target select")
    expect(menu).to_have_value("y[0]")
    image.scroll_into_view_if_needed()
    box = image.bounding_box()
    assert box is not None and box["height"] > 100
    for row in (2, 3, 1):
        before = image.get_attribute("src")
        fraction = picker.top + (picker.bottom - picker.top) * (row + 0.5) / picker.rows
        image.click(position={"x": box["width"] / 2, "y": box["height"] * fraction})
        expect(menu).to_have_value(f"y[{row}]")
        # the explorer's picture is row `row`'s backward pass: its seed is 1 at element `row`
        seed = ", ".join("1.0" if k == row else "0.0" for k in range(picker.rows))
        expect(page.locator(f"{ROOT} .tv-canvas svg")).to_contain_text(f"∂ [{seed}]")
        expect(image).not_to_have_attribute("src", before)  # the heatmap outlines the new row
    screenshot(page, "jacobian_explorer")

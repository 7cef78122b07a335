"""JupyterLab picks the widget view of an explorer's output and shows nothing else, though
the output also carries the explorer's picture as image/svg+xml (explorer/fallback.py) for
front ends without the widget."""

from __future__ import annotations

import pytest
from browser import SEL_PANEL, open_notebook, run_all, screenshot, write_notebook

pytestmark = pytest.mark.browser

CELLS = [
    (
        "import tensorflow as tf\nimport tapeviz as tv\n"
        "x = tf.Variable(3.0)\nwith tv.GradientTape() as tape:\n    y = x * x\n"
        "ex = tv.explore(tape, y)\nex"
    ),
    "print(sorted(ex._repr_mimebundle_()))",
]


def test_jupyterlab_shows_only_the_widget_of_an_output_that_also_has_its_picture(jupyterlab, page):
    from playwright.sync_api import expect

    write_notebook(jupyterlab.root / "fallback.ipynb", CELLS)
    open_notebook(page, jupyterlab, "fallback.ipynb")
    run_all(page)
    cells = page.locator(f"{SEL_PANEL} .jp-CodeCell")
    expect(cells.nth(1)).to_contain_text("'image/svg+xml'")  # the bundle the front end got has it
    expect(cells.nth(1)).to_contain_text("'application/vnd.jupyter.widget-view+json'")
    first = cells.nth(0)
    expect(first.locator(".tv-explorer .tv-canvas svg").first).to_be_visible()
    outputs = first.locator(".jp-OutputArea-output")
    expect(outputs).to_have_count(1)
    # one renderer per output: the widget's; no image renderer beside it
    assert first.locator(".jp-RenderedSVG, .jp-RenderedImage").count() == 0
    assert first.locator(".jp-OutputArea-output > .jp-RenderedSVG").count() == 0
    screenshot(page, "browser_fallback_jupyterlab")

"""The compare explorer (``tv.explore(tv.compare(a, b))``) in JupyterLab: both passes and
the ratio picture are drawn, and one slider moves both sides (a shorter pass stays at its
end); what each side shows after a move is the step the slider says, as the kernel's
compare state draws it (its heading and the picture's title "Step k/n")."""

from __future__ import annotations

import pytest
from browser import run_notebook, screenshot, unexpected_page_errors, watch_page_errors, write_notebook

pytestmark = pytest.mark.browser

NOTEBOOK = "compare.ipynb"
CELLS = [
    "import tensorflow as tf\nimport tapeviz as tv",
    (
        "def run(stop):\n"
        "    w = tf.Variable([1.0, 2.0], name='w')\n"
        "    b = tf.Variable(0.5, name='b')\n"
        "    with tv.GradientTape() as tape:\n"
        "        h = w * 3.0\n"
        "        if stop:\n"
        "            h = tf.stop_gradient(h)\n"
        "        loss = tf.reduce_sum(h * b)\n"
        "    return tape, loss\n"
        "c = tv.compare(run(False), run(True))\n"
        "print('steps', c.a.last_step, c.b.last_step)\n"
        "ex = tv.explore(c, names=('plain', 'stopped'))\n"
        "ex"
    ),
    "tv.explore(*run(False))",  # the main explorer of one pass, in the same cell width
]

ROOT = ".jp-NotebookPanel:not(.lm-mod-hidden) .tv-compare-explorer"
CANVAS = ".jp-NotebookPanel:not(.lm-mod-hidden) .tv-canvas"

# Right and left edges (CSS px) of each picture and of the output area holding it, and
# whether anything around a picture scrolls sideways (scrollWidth beyond clientWidth).
_EDGES_JS = """
(sel) => Array.from(document.querySelectorAll(sel)).map(svg => {  // (an svg, or any element)
  const area = svg.closest('.jp-OutputArea-output');
  const a = area.getBoundingClientRect(), r = svg.getBoundingClientRect();
  let scrolls = false;
  for (let e = svg.parentElement; e && e !== area; e = e.parentElement) {
    if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible') scrolls = true;
  }
  return {left: r.left, right: r.right, width: r.width, areaLeft: a.left, areaRight: a.right,
          scrolls: scrolls || area.scrollWidth > area.clientWidth + 1};
})
"""


def _edges(page, sel: str) -> list[dict]:
    return page.evaluate(_EDGES_JS, sel)


def _inside(got: dict) -> bool:
    return got["areaLeft"] - 1 <= got["left"] and got["right"] <= got["areaRight"] + 1 and not got["scrolls"]


# Each pane's heading and its picture's title; the ratio pane's texts.
_PANES_JS = """
(root) => Array.from(document.querySelectorAll(root + ' .tv-compare')).map(p => {
  const svg = p.querySelector('svg');
  const title = svg && svg.querySelector('g#title');
  return {
    heading: (p.querySelector('b') || {}).textContent || '',
    title: title ? title.textContent.trim() : null,
    texts: svg ? Array.from(svg.querySelectorAll('text'), t => t.textContent) : [],
    width: svg ? svg.getBoundingClientRect().width : 0,
  };
})
"""


def _panes(page) -> list[dict]:
    return page.evaluate(_PANES_JS, ROOT)


def _wait_headings(page, a: str, b: str) -> list[dict]:
    page.wait_for_function(
        "([root, a, b]) => { const h = Array.from(document.querySelectorAll(root + ' .tv-compare b'),"
        " e => e.textContent); return h[0] === a && h[1] === b; }",
        arg=[ROOT, a, b],
        timeout=30_000,
    )
    return _panes(page)


def test_the_compare_explorer_draws_both_passes_and_the_ratios_and_one_slider_moves_both(server_factory, page):
    from playwright.sync_api import expect

    server = server_factory("lab")
    write_notebook(server.root / NOTEBOOK, CELLS)
    errors = watch_page_errors(page)
    run_notebook(page, server, NOTEBOOK)
    page.wait_for_selector(f"{ROOT} .tv-compare svg", timeout=60_000)
    last_a, last_b = 5, 3  # b's pass stops at the stop_gradient (the notebook prints them)
    expect(page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output").first).to_be_attached()
    expect(page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")).to_contain_text(f"steps {last_a} {last_b}")

    a, b, ratios = _wait_headings(page, f"plain: step {last_a} of {last_a}", f"stopped: step {last_b} of {last_b}")
    assert a["title"].startswith(f"Step {last_a}/{last_a}") and b["title"].startswith(f"Step {last_b}/{last_b}")
    assert a["width"] > 100 and b["width"] > 100 and ratios["width"] > 100, "every picture is drawn, not empty"
    assert "lost" in ratios["texts"], "the ratio picture says what b lost"
    # both sides whole in the cell: no side cut at its right edge, nothing to scroll sideways
    sides = _edges(page, f"{ROOT} .tv-compare-sides svg")
    assert len(sides) == 2 and all(_inside(e) for e in sides), sides
    ratio = _edges(page, f"{ROOT} > .tv-compare svg")
    assert len(ratio) == 1 and _inside(ratio[0]), ratio
    # the main explorer in the same cell width is not cut either
    page.wait_for_selector(f"{CANVAS} svg", timeout=60_000)
    canvas = _edges(page, f"{CANVAS} svg")
    assert len(canvas) == 1 and _inside(canvas[0]), canvas
    page.locator(f"{ROOT} .tv-compare-sides").scroll_into_view_if_needed()
    screenshot(page, "compare_explorer_lab")
    page.locator(f"{ROOT} .tv-compare").nth(2).scroll_into_view_if_needed()
    screenshot(page, "compare_explorer_lab_ratios")

    handle = page.locator(f"{ROOT} .tv-step .noUi-handle")
    handle.scroll_into_view_if_needed()
    handle.focus()
    for k in range(last_a - 1, 0, -1):  # back along the slider: a follows it, b stays at its end until k < 3
        handle.press("ArrowLeft")
        a, b, _ = _wait_headings(page, f"plain: step {k} of {last_a}", f"stopped: step {min(k, last_b)} of {last_b}")
        assert a["title"].startswith(f"Step {k}/{last_a}"), a["title"]
        assert b["title"].startswith(f"Step {min(k, last_b)}/{last_b}"), b["title"]
    screenshot(page, "compare_explorer_lab_step1")
    page.locator(f"{ROOT} .tv-next").click()  # ▶ moves both too
    a, b, _ = _wait_headings(page, f"plain: step 2 of {last_a}", f"stopped: step 2 of {last_b}")
    assert a["title"].startswith(f"Step 2/{last_a}") and b["title"].startswith(f"Step 2/{last_b}")
    assert handle.get_attribute("aria-valuetext") == "2"

    # a narrower window: a side wider than the cell scales down to its width (its viewBox), still whole
    wide = [e["width"] for e in _edges(page, f"{ROOT} .tv-compare-sides svg")]
    page.set_viewport_size({"width": 900, "height": 1000})
    page.wait_for_function(
        "sel => { const r = document.querySelector(sel); return r && r.getBoundingClientRect().right <= 900; }",
        arg=ROOT,
        timeout=30_000,
    )
    sides = _edges(page, f"{ROOT} .tv-compare-sides svg")
    assert all(_inside(e) for e in sides), sides
    assert any(e["width"] < w - 1 for e, w in zip(sides, wide, strict=True)), (sides, wide)  # scaled, not cut
    # the main explorer keeps its 9 pt text (to_svg fit=True): a picture wider than the cell pans
    # and scrolls inside the canvas's viewport, and that viewport is inside the cell
    viewport = _edges(page, f"{CANVAS} .tv-viewport")
    assert viewport[0]["right"] <= viewport[0]["areaRight"] + 1, viewport
    page.locator(f"{ROOT} .tv-compare-sides").scroll_into_view_if_needed()
    screenshot(page, "compare_explorer_lab_narrow")
    assert not unexpected_page_errors(errors, server), errors

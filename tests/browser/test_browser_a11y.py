"""Keyboards and screen readers in Chromium: Tab and the arrows walk every box of the picture
in the order Python wrote (the backward pass's), Enter opens and closes a group (JupyterLab)
or inspects a box (the exported page), Escape goes back to the step slider, and an axe-core
scan (npm's axe-core, injected from node_modules) finds no serious or critical violation,
in an exported page opened from file:// and in the explorer in JupyterLab."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser import run_notebook, screenshot, write_notebook
from page_explorer import ExplorerOnPage
from test_browser_page import Page, stop_gradient_example

import tapeviz as tv
from tapeviz.api import _explored

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"

# The focused element's id when it is a box of the picture, else its tag and class.
_FOCUSED_JS = """() => { const a = document.activeElement;
  if (!a) return null;
  if (a.dataset && a.dataset.tvOrder !== undefined) return a.id;
  return a.tagName.toLowerCase() + '.' + (a.getAttribute('class') || ''); }"""

# The boxes of the picture under `sel`, in the order Python wrote on them.
_ORDER_JS = """(sel) => Array.from(document.querySelector(sel).querySelectorAll('[data-tv-order]'))
  .sort((a, b) => a.dataset.tvOrder - b.dataset.tvOrder).map((e) => e.id)"""


def _axe(page, selector: str) -> list[dict]:
    """axe-core's serious and critical violations inside ``selector`` (skip without axe-core)."""
    if not AXE.is_file():
        pytest.skip(f"axe-core is not installed ({AXE} missing): run `make node-tools` (npm ci)")
    page.add_script_tag(path=str(AXE))  # inlined: no request leaves the page
    got = page.evaluate(
        "async (sel) => (await axe.run(document.querySelector(sel), {resultTypes: ['violations']})).violations"
        ".map((v) => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' '))}))",
        selector,
    )
    bad = [v for v in got if v["impact"] in ("serious", "critical")]
    assert bad == [], "axe-core: " + "; ".join(f"{v['id']} ({v['impact']}: {v['help']}) at {v['nodes']}" for v in bad)
    return bad


def _walk(page, order: list[str], key: str) -> list[str]:
    """Press ``key`` once per box after the first; the ids focused on the way."""
    seen = [page.evaluate(_FOCUSED_JS)]
    for _ in order[1:]:
        page.keyboard.press(key)
        seen.append(page.evaluate(_FOCUSED_JS))
    return seen


def test_exported_page_boxes_by_keyboard_and_axe(page, tmp_path):
    from playwright.sync_api import expect

    tape, x, y, z = stop_gradient_example()
    path = tv.export_html(tape, z, tmp_path / "page.html")
    p = Page(page, path)
    pic = ".tv-page .tv-page-picture:not([hidden])"
    order = page.evaluate(_ORDER_JS, pic)
    assert len(order) == 5 and order[0].startswith("node-")
    # Tab from the ▶ button reaches the picture at its first box (the target) ...
    page.locator(".tv-page .tv-next").focus()
    for _ in range(6):
        page.keyboard.press("Tab")
        if page.evaluate(_FOCUSED_JS) == order[0]:
            break
    assert page.evaluate(_FOCUSED_JS) == order[0]
    screenshot(page, "a11y_page_focus_ring")
    # ... then Tab walks every box in Python's order, and Shift+Tab and ← walk back
    assert _walk(page, order, "Tab") == order
    assert _walk(page, order, "Shift+Tab") == order[::-1]
    assert _walk(page, order, "ArrowRight") == order
    step = p.step()
    page.keyboard.press("ArrowRight")  # at the last box the arrows stay: no step moves either
    assert page.evaluate(_FOCUSED_JS) == order[-1] and p.step() == step
    page.keyboard.press("Home")
    assert page.evaluate(_FOCUSED_JS) == order[0]
    # each box has its name: x's says TF's gradient
    xbox = page.locator(f"{pic} g[id='node-{_explored(tape, z, None).graph.node_of(x)}']")
    assert re.search(r"gradient 4\.0$", xbox.get_attribute("aria-label"))
    # Enter on a box inspects it, as a click does
    xbox.focus()
    page.keyboard.press("Enter")
    expect(page.locator(".tv-page .tv-inspect")).to_contain_text("dz/d")
    # space on a box still plays; the patched box keeps focus while the picture steps
    page.keyboard.press(" ")
    expect(p.root).not_to_have_attribute("data-tv-step", str(step), timeout=5000)
    page.keyboard.press(" ")
    assert page.evaluate(_FOCUSED_JS) == xbox.get_attribute("id")
    # Escape goes to the step slider, where the arrows step again
    page.keyboard.press("Escape")
    assert page.evaluate(_FOCUSED_JS) == "input.tv-step"
    p.root.focus()
    before = p.step()
    page.keyboard.press("ArrowLeft" if before else "ArrowRight")
    assert p.step() != before
    assert _axe(page, ".tv-page") == []
    p.done()


def test_exported_keras_page_has_groups_that_say_they_stay_closed_and_passes_axe(page, tmp_path):
    ns: dict = {}
    exec(KERAS_CELLS[0], ns)
    exec(KERAS_CELLS[1].removesuffix("\nex = tv.explore(tape, loss, depth=1)\nex"), ns)  # the notebook's model
    tape, loss = ns["tape"], ns["loss"]
    path = tv.export_html(tape, loss, tmp_path / "keras.html", lang="zh")
    p = Page(page, path)
    group = page.locator(".tv-page .tv-page-picture:not([hidden]) g[aria-expanded]").first
    assert group.get_attribute("role") == "button" and group.get_attribute("aria-disabled") == "true"
    assert re.search("已(展开|收起)的组", group.get_attribute("aria-label"))
    assert _axe(page, ".tv-page") == []
    p.done()


KERAS_CELLS = [
    "import numpy as np\nimport tensorflow as tf\nimport keras\nimport tapeviz as tv",
    (
        "keras.utils.set_random_seed(0)\n"
        "block = keras.Sequential([keras.layers.Dense(4, activation='tanh', name='a'),"
        " keras.layers.Dense(4, activation='tanh', name='b')], name='block')\n"
        "model = keras.Sequential([keras.Input((3,)), block, keras.layers.Dense(1, name='head')], name='net')\n"
        "x = tf.constant(np.random.default_rng(0).normal(size=(2, 3)).astype('float32'))\n"
        "with tv.GradientTape() as tape:\n    loss = tf.reduce_mean(model(x) ** 2)\n"
        "ex = tv.explore(tape, loss, depth=1)\nex"
    ),
]


def test_jupyterlab_boxes_by_keyboard_groups_open_and_close_and_axe(jupyterlab, page):
    from playwright.sync_api import expect

    write_notebook(jupyterlab.root / "a11y.ipynb", KERAS_CELLS)
    run_notebook(page, jupyterlab, "a11y.ipynb")
    ex = ExplorerOnPage(page, jupyterlab)
    ex.wait_shown()
    pic = f"{ex.canvas} svg"
    order = page.evaluate(_ORDER_JS, ex.canvas)
    assert "node-layer:net" in order
    first = page.locator(f"{pic} [data-tv-order='0']")
    expect(first).to_have_attribute("tabindex", "0")
    first.focus()
    assert _walk(page, order, "Tab") == order
    assert _walk(page, order, "ArrowLeft") == order[::-1]
    # Enter on the closed group opens it (the kernel draws the new picture); focus goes to its frame
    page.locator(f"{pic} g[id='node-layer:net']").focus()
    page.keyboard.press("Enter")
    frame = page.locator(f"{pic} g[id='group-net']")
    expect(frame).to_have_attribute("aria-expanded", "true", timeout=20000)
    expect(frame).to_be_focused()
    screenshot(page, "a11y_lab_group_open")
    opened = page.evaluate(_ORDER_JS, ex.canvas)
    assert len(opened) > len(order) and opened.index("group-net") < opened.index("node-layer:net/head")
    frame.focus()
    assert _walk(page, opened[opened.index("group-net") :], "ArrowRight") == opened[opened.index("group-net") :]
    # Enter on the frame closes the group; focus comes back to its box
    frame.focus()
    page.keyboard.press("Enter")
    box = page.locator(f"{pic} g[id='node-layer:net']")
    expect(box).to_have_attribute("aria-expanded", "false", timeout=20000)
    expect(box).to_be_focused()
    # Escape goes to the step slider's handle; ← there steps as before
    page.keyboard.press("Escape")
    expect(ex.step).to_be_focused()
    assert _axe(page, ex.root) == []

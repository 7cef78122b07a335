"""The Explorer in a real JupyterLab, driven like a student drives it: keyboard on the
sliders, the clip menu, the target menu. What the page shows is checked against numbers
TensorFlow computes in this test process (tf.clip_by_norm on the same gradients).

Waits use Playwright's retrying expectations; nothing here asserts how long anything took.
"""

from __future__ import annotations

import functools
import math
import re
import time

import pytest
from browser import (
    SEL_PANEL,
    canvas_svg,
    canvas_title,
    open_notebook,
    run_all,
    screenshot,
    wait_svg_changed,
    wait_title_changed,
    write_notebook,
)

pytestmark = pytest.mark.browser

EXPLORER = f"{SEL_PANEL} .tv-explorer"
CANVAS = f"{EXPLORER} .tv-canvas"
PANEL = f"{EXPLORER} .tv-panel"


def _svg(page) -> str:
    return canvas_svg(page, CANVAS)


def _title(page) -> str | None:
    return canvas_title(page, CANVAS)


def _wait_svg_changed(page, old: str) -> str:
    return wait_svg_changed(page, CANVAS, old)


def _wait_title_changed(page, old: str) -> str:
    return wait_title_changed(page, CANVAS, old)


def value_text_of(x: float) -> str:
    """How the slider handle spells a value in aria-valuetext (0.3 -> "0.3")."""
    return f"{round(x, 6):g}"


def _fmt(x: float) -> str:
    return f"{x:.4g}"  # the panel's format


@functools.lru_cache(maxsize=1)
def _notebook_08_gradients():
    """The 08 notebook's gradients, recomputed in this process: tapeviz.examples runs the same
    model, batch and loss (the notebook's cells and examples.clip_in_training are the same code)."""
    from tapeviz import examples

    return tuple(g.numpy() for g in examples.clip_in_training().extra["gradients"])


def _expected_norms(clip_norm: float):
    """(raw norms, norms after tf.clip_by_norm(g, clip_norm)), both computed by TF."""
    import tensorflow as tf

    grads = [tf.constant(g) for g in _notebook_08_gradients()]
    raw = [float(tf.norm(g)) for g in grads]
    clipped = [float(tf.norm(tf.clip_by_norm(g, clip_norm))) for g in grads]
    return raw, clipped


def _panel_norms(page) -> list[tuple[str, str]]:
    """[(before, after)] for each variable row of the clipping panel."""
    cells = page.locator(f"{PANEL} td.tv-norm").all_inner_texts()
    out = []
    for text in cells:
        before, _, after = text.partition("→")
        out.append((before.strip(), after.strip()))
    return out


def _open_explorer(page, lab, notebook: str):
    from playwright.sync_api import expect

    open_notebook(page, lab, notebook)
    run_all(page)
    explorer = page.locator(EXPLORER)
    expect(explorer).to_be_visible()
    expect(page.locator(f"{CANVAS} svg")).to_be_visible()
    explorer.scroll_into_view_if_needed()
    return explorer


def test_clip_norm_slider_and_step_slider(jupyterlab, page):
    from playwright.sync_api import expect

    from tapeviz.picture.style import C_ACTIVE

    _open_explorer(page, jupyterlab, "08_clipping_in_training.ipynb")
    svg0 = _svg(page)
    assert svg0 and "<text" in svg0

    # -- clip mode: none -> by_norm (the notebook set clip_norm to 1.0) -------------------
    page.locator(f"{EXPLORER} .tv-clip-mode select").select_option("tf.clip_by_norm")
    handle = page.locator(f"{EXPLORER} .tv-clip-norm .noUi-handle")
    expect(handle).to_be_visible()  # shown only for by_norm / by_global_norm
    start = float(handle.get_attribute("aria-valuetext"))
    raw, clipped = _expected_norms(start)
    after_cells = page.locator(f"{PANEL} b.tv-clipped-norm")
    expect(after_cells).to_have_text([_fmt(c) for c in clipped])
    svg1 = _wait_svg_changed(page, svg0)  # clipped values appear under the variables
    screenshot(page, "explorer_08_by_norm")

    # -- clip_norm slider with the keyboard -------------------------------------------
    for _ in range(3):
        handle.press("ArrowLeft")  # one slider step (0.01) each
    expect(handle).to_have_attribute("aria-valuetext", value_text_of(start - 0.03))
    clip_norm = float(handle.get_attribute("aria-valuetext"))
    raw, clipped = _expected_norms(clip_norm)
    assert any(c < r for c, r in zip(clipped, raw, strict=True)), "the test needs a clip_norm that actually clips"

    # (b) the panel's clipped norms are what tf.clip_by_norm gives for the slider's value
    expect(after_cells).to_have_text([_fmt(c) for c in clipped])
    norms = _panel_norms(page)
    assert [b for b, _ in norms] == [_fmt(r) for r in raw], "the page shows other gradients than TF computed here"
    for (_, after), r in zip(norms, raw, strict=True):
        assert float(after) == pytest.approx(min(r, clip_norm), rel=1e-3)
    gn_text = page.locator(f"{PANEL} b.tv-global-norm").inner_text()
    assert float(gn_text) == pytest.approx(math.sqrt(sum(c * c for c in clipped)), rel=1e-3)

    # (a) the canvas changed, and a variable's gradient text now reads "raw → clipped" with the
    # new clip_norm as the clipped norm (the first kernel's norm, 1.41, is above every value here)
    _wait_svg_changed(page, svg1)
    page.wait_for_function(
        """([sel, v]) => Array.from(document.querySelectorAll(sel + ' svg text'))
             .some(t => { const s = t.textContent.split('→'); return s.length === 2 && s[1].includes(v); })""",
        arg=[CANVAS, f"{clip_norm:g}"],
        polling=50,
    )
    svg2 = _svg(page)
    screenshot(page, "explorer_08_clip_norm_moved")

    # -- step slider: back one step from the finished pass ----------------------------
    step = page.locator(f"{EXPLORER} .tv-step .noUi-handle")
    last = int(step.get_attribute("aria-valuetext"))
    title_before = _title(page)
    assert title_before and re.match(rf"Step {last}/{last}\b.*backward pass of .* done", title_before), title_before
    assert C_ACTIVE in svg2, "the last step, which finishes the pass, is highlighted too"
    step.press("ArrowLeft")
    expect(step).to_have_attribute("aria-valuetext", str(last - 1))
    _wait_svg_changed(page, svg2)
    title_after = _wait_title_changed(page, title_before)
    assert re.match(rf"Step {last - 1}/{last}\b", title_after), title_after
    assert C_ACTIVE in _svg(page), "the active step is highlighted in amber"
    screenshot(page, "explorer_08_step_back")


def test_target_menu_switches_the_backward_pass(jupyterlab, page):
    from playwright.sync_api import expect

    _open_explorer(page, jupyterlab, "04_persistent_tape.ipynb")
    title = _title(page)
    assert title and "f1" in title, title
    svg0 = _svg(page)
    page.locator(f"{EXPLORER} .tv-target select").select_option("f2")
    _wait_svg_changed(page, svg0)
    _wait_title_changed(page, title)
    # the canvas may show the new target's pass at the old step first (a patch), then its
    # finished pass once the step slider follows: wait for the finished title
    deadline = time.monotonic() + 15
    while "f2" not in (_title(page) or "") and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert "f2" in (_title(page) or ""), _title(page)
    # x's gradient in the panel is now df2/dx = y = 4 (TF printed 4.0 in the notebook)
    x_row = page.locator(f"{PANEL} td.tv-norm[data-var='x']")
    expect(x_row).to_contain_text("4 →")
    screenshot(page, "explorer_04_target_f2")


def test_explorer_follows_the_page_theme(jupyterlab, page):
    """theme="auto" (the default): when JupyterLab's theme turns dark, the picture is
    redrawn in tapeviz's dark theme, and back."""
    from tapeviz.picture.themes import DARK, LIGHT

    _open_explorer(page, jupyterlab, "05_stop_gradient.ipynb")
    light = _svg(page)
    assert LIGHT.background in light and DARK.background not in light
    # What JupyterLab does when the user picks its dark theme (Settings → Theme).
    page.evaluate("() => { document.body.dataset.jpThemeLight = 'false'; }")
    dark = _wait_svg_changed(page, light)
    assert DARK.background in dark
    screenshot(page, "explorer_05_dark_page")
    page.evaluate("() => { document.body.dataset.jpThemeLight = 'true'; }")
    back = _wait_svg_changed(page, dark)
    assert LIGHT.background in back and DARK.background not in back


_TEXTS_JS = "sel => Array.from(document.querySelectorAll(sel + ' svg text')).map(t => (t.textContent || '').trim())"


def _texts_of(svg: str) -> list[str]:
    """Every <text> element's text, in document order, as the page's textContent gives it."""
    import xml.etree.ElementTree as ET

    return ["".join(t.itertext()).strip() for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]


ZH_PROJECTOR_NOTEBOOK = "zh_projector.ipynb"
ZH_PROJECTOR_CELLS = [
    "import tensorflow as tf\nimport tapeviz as tv",
    "x = tf.Variable([3.0, 4.0])\nwith tv.GradientTape() as tape:\n    y = tf.reduce_sum(x ** 2)",
    'ex = tv.explore(tape, y, lang="zh", theme="projector")\nex.controls["clip"].value = "by_norm"\nex',
]


def test_chinese_projector_explorer(jupyterlab, page):
    """A class in Chinese on a projector: the page shows the picture, the controls and the
    clipping panel in Chinese with the projector's text sizes, and the numbers are
    TensorFlow's (‖g‖ = ‖2x‖ = 10, clipped to clip_norm = 1). Screenshot for the eye."""
    import tensorflow as tf
    from playwright.sync_api import expect

    import tapeviz as tv
    from tapeviz.messages import say
    from tapeviz.picture.style import DPI
    from tapeviz.picture.themes import LIGHT, PROJECTOR, explorer_theme

    write_notebook(jupyterlab.root / ZH_PROJECTOR_NOTEBOOK, ZH_PROJECTOR_CELLS)
    _open_explorer(page, jupyterlab, ZH_PROJECTOR_NOTEBOOK)

    # The same explorer built here: the page must show its words, text for text.
    x = tf.Variable([3.0, 4.0])
    with tv.GradientTape() as tape:
        y = tf.reduce_sum(x**2)
    here = tv.explore(tape, y, lang="zh", theme="projector")
    here.controls["clip"].value = "by_norm"
    expected = _texts_of(here.canvas.value)
    assert "∂ [6.0, 8.0] → [0.6, 0.8]" in expected  # x's gradient, and tf.clip_by_norm's of it
    assert any(re.search(r"[\u4e00-\u9fff]", t) for t in expected), expected  # Chinese words
    assert page.evaluate(_TEXTS_JS, CANVAS) == expected

    svg = _svg(page)
    sizes = {float(s) for s in re.findall(r'font-size="([0-9.]+)', svg)}
    light = tv.explore(tape, y, lang="zh", theme="light")
    light_sizes = {float(s) for s in re.findall(r'font-size="([0-9.]+)', light.canvas.value)}
    # projector text is bigger than the light explorer's (itself raised to 9 pt: explorer_theme),
    # its smallest text bigger than the light one's box titles
    titles = explorer_theme("light").font * DPI / 72  # font-size is in viewBox units (canvas px)
    assert PROJECTOR.font > LIGHT.font and max(sizes) > max(light_sizes), (sizes, light_sizes)
    assert min(sizes) > titles > min(light_sizes), (sizes, light_sizes)

    expect(page.locator(PANEL).first).to_contain_text(say("panel.global", "zh").strip())
    raw = float(tf.norm(2 * x))
    clipped = float(tf.norm(tf.clip_by_norm(2 * x, 1.0)))
    expect(page.locator(f"{PANEL} td.tv-norm[data-var='x']")).to_contain_text(f"{_fmt(raw)} → {_fmt(clipped)}")
    expect(page.locator(f"{EXPLORER} .tv-clip-mode")).to_contain_text(say("ui.control.clip", "zh"))
    screenshot(page, "explorer_zh_projector")


GALLERY_NOTEBOOK = "explorer_transformer.ipynb"


def test_a_transformers_explorer_fits_the_cell_at_full_text_size(jupyterlab, page):
    """Issue 20: the explorer's picture of a 30-box Transformer is laid out for a notebook
    cell (rows.CELL_WIDTH): in JupyterLab it shows whole, neither scrolled nor shrunk, its
    smallest text (tags, edge labels, values) at 9 pt as the browser lays it out.
    Screenshot for the eye."""
    from pathlib import Path

    from tapeviz.picture.themes import EXPLORER_TEXT

    support = str(Path(__file__).resolve().parents[1] / "support")
    cells = [
        f"import sys\nsys.path.insert(0, {support!r})\nimport gallery_models\nimport tapeviz as tv",
        'step = gallery_models.GALLERY["Transformer"]()',
        "tv.explore(step.tape, step.loss)",
    ]
    write_notebook(jupyterlab.root / GALLERY_NOTEBOOK, cells)
    _open_explorer(page, jupyterlab, GALLERY_NOTEBOOK)
    got = page.evaluate(
        """(sel) => {
            const canvas = document.querySelector(sel);
            const svg = canvas.querySelector('svg');
            const box = svg.getBoundingClientRect();
            const sizes = [...svg.querySelectorAll('text[font-size]')]
                .map(t => parseFloat(t.getAttribute('font-size')));
            const scale = box.width / svg.viewBox.baseVal.width;
            return {cell: canvas.clientWidth, scroll: canvas.scrollWidth, width: box.width,
                    fontPx: Math.min(...sizes) * scale};
        }""",
        CANVAS,
    )
    assert got["width"] <= got["cell"] + 1 and got["scroll"] <= got["cell"] + 1, got  # whole, no scroll bar
    smallest_pt = got["fontPx"] * 72 / 96  # CSS px -> pt
    assert smallest_pt >= EXPLORER_TEXT - 0.05, got  # 9 pt, titles 9.5 (a file: tags 6.5 pt)
    screenshot(page, "explorer_transformer")

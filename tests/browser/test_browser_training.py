"""tv.explore(hist) on a norms-only History in a real JupyterLab: the user's own training
loop with a plain tf.GradientTape and one hist.add a step, then the run explorer, driven from
the keyboard, its buttons and the kernel. After each move the page's run panel shows the new
step: the loss curve marked at that step's point, each layer's bar drawn from the norm the
History holds there, which the kernel also computed with tf.norm in float64.

Waits use Playwright's retrying expectations; nothing here asserts how long anything took.
"""

from __future__ import annotations

import json

import pytest
from browser import SEL_PANEL, kernel_client, kernel_eval, open_notebook, run_all, screenshot, write_notebook

pytestmark = pytest.mark.browser

NOTEBOOK = "train_run_explorer.ipynb"
STEPS = 12
TRAIN = f"""
import json
import keras
import numpy as np
import tensorflow as tf
import tapeviz as tv

keras.utils.set_random_seed(0)
small = keras.initializers.RandomNormal(stddev=0.1)
model = keras.Sequential(
    [keras.Input((8,))]
    + [keras.layers.Dense(16, activation="sigmoid", kernel_initializer=small, name=f"d{{i}}") for i in range(5)]
    + [keras.layers.Dense(1, name="out")],
    name="net",
)
rng = np.random.default_rng(0)
x = tf.constant(rng.normal(size=(32, 8)).astype("float32"))
y = tf.constant(rng.normal(size=(32, 1)).astype("float32"))
opt = keras.optimizers.SGD(0.1)
hist = tv.History()
truth = []  # per step: the loss and each layer's gradient norm, tf.norm in float64
for step in range({STEPS}):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    hist.add(step, loss=loss, grads=grads, variables=model.trainable_variables)
    squares = {{}}
    for v, g in zip(model.trainable_variables, grads):
        layer = v.path.rsplit("/", 1)[0]
        squares[layer] = squares.get(layer, 0.0) + float(tf.reduce_sum(tf.square(tf.cast(g, tf.float64))))
    truth.append({{"loss": float(loss), "norms": {{k: s ** 0.5 for k, s in squares.items()}}}})
    opt.apply_gradients(zip(grads, model.trainable_variables))
"""
SHOW = "ex = tv.explore(hist)\nex"
ROOT = f"{SEL_PANEL} .tv-training"
PANEL = f"{ROOT} .tv-run-panel"

_READ_PANEL = """(sel) => {
  const svg = document.querySelector(sel + ' svg');
  if (!svg) return null;
  const bars = {};
  for (const r of svg.querySelectorAll('rect.tv-run-bar')) bars[r.dataset.layer] = r.dataset.norm;
  const dot = svg.querySelector('circle.tv-run-dot');
  const line = svg.querySelector('polyline');
  const marker = svg.querySelector('line.tv-run-marker');
  return {
    title: svg.querySelector('text').textContent,
    bars,
    dot: dot && [dot.getAttribute('cx'), dot.getAttribute('cy')],
    points: line ? line.getAttribute('points').trim().split(/\\s+/) : [],
    marker: marker && marker.getAttribute('x1'),
  };
}"""


def _panel_at(page, step: int) -> dict:
    """The run panel once its title names ``step`` (the kernel's repaint reached the page)."""
    page.wait_for_function(
        "([sel, s]) => { const t = document.querySelector(sel + ' svg text');"
        " return t && t.textContent.endsWith(' at step ' + s); }",
        arg=[PANEL, step],
        polling=50,
    )
    return page.evaluate(_READ_PANEL, PANEL)


def _check_step(panel: dict, step: int, held: dict, truth: list) -> None:
    """The panel shows ``step``: its loss in the title, the dot on that step's point of the
    loss curve and the marker through it, each bar the History's norm (TF's, in float64)."""
    assert panel["title"] == f"loss: {truth[step]['loss']:.4g} at step {step}", panel["title"]
    assert len(panel["points"]) == STEPS and panel["dot"] is not None
    assert ",".join(panel["dot"]) == panel["points"][step], "the marked point is this step's on the loss curve"
    assert panel["marker"] == panel["dot"][0]
    bars = {layer: float(norm) for layer, norm in panel["bars"].items()}
    assert set(bars) == set(held), "one bar per layer"
    for layer, norm in bars.items():
        assert norm == held[layer][step], f"{layer} at step {step}: the bar is not the norm the History holds"
        assert norm == pytest.approx(truth[step]["norms"][layer], rel=1e-6), f"{layer}: not tf.norm's"


def test_the_train_step_slider_scrubs_a_norms_only_run(jupyterlab, page):
    from playwright.sync_api import expect

    write_notebook(jupyterlab.root / NOTEBOOK, [TRAIN, SHOW])
    open_notebook(page, jupyterlab, NOTEBOOK)
    run_all(page)
    expect(page.locator(f"{PANEL} svg")).to_be_visible()
    page.locator(ROOT).scroll_into_view_if_needed()
    kc = kernel_client(jupyterlab)
    try:
        read = "print(json.dumps({'truth': truth, 'held': {n: hist.norms(n).tolist() for n in hist.layers()}}))"
        got = json.loads(kernel_eval(kc, read))
        truth, held = got["truth"], got["held"]
        assert len(truth) == STEPS and set(held) == {f"net/d{i}" for i in range(5)} | {"net/out"}

        handle = page.locator(f"{ROOT} .tv-train-step .noUi-handle")
        expect(handle).to_have_attribute("aria-valuetext", str(STEPS - 1))  # opens at the last step
        last = _panel_at(page, STEPS - 1)
        _check_step(last, STEPS - 1, held, truth)
        expect(page.locator(f"{ROOT} .tv-picture-note")).to_contain_text("tape=tape")  # no picture kept

        # -- the keyboard: three steps back -------------------------------------------------
        for _ in range(3):
            handle.press("ArrowLeft")
        expect(handle).to_have_attribute("aria-valuetext", str(STEPS - 4))
        moved = _panel_at(page, STEPS - 4)
        _check_step(moved, STEPS - 4, held, truth)
        assert moved["bars"] != last["bars"] and moved["marker"] != last["marker"]
        assert kernel_eval(kc, "print(ex.train_step)").strip() == str(STEPS - 4)  # the kernel followed

        # -- Home: the first step, where the first layers' gradients vanish ------------------
        handle.press("Home")
        expect(handle).to_have_attribute("aria-valuetext", "0")
        _check_step(_panel_at(page, 0), 0, held, truth)
        first = json.loads(kernel_eval(kc, "print(json.dumps([f.name for f in hist.flags(step=0)]))"))
        assert first, "the small sigmoid net's first layers are flagged at step 0"
        flags = page.locator(f"{ROOT} .tv-flags")
        expect(flags).to_contain_text("Flags at step 0:")
        for name in first:
            expect(flags).to_contain_text(name)
        screenshot(page, "run_explorer_step_0")

        # -- set from the kernel, then the ▶ button ------------------------------------------
        kernel_eval(kc, "ex.controls['train_step'].value = 5")
        expect(handle).to_have_attribute("aria-valuetext", "5")
        _check_step(_panel_at(page, 5), 5, held, truth)
        page.locator(f"{ROOT} .tv-train-next").click()
        expect(handle).to_have_attribute("aria-valuetext", "6")
        _check_step(_panel_at(page, 6), 6, held, truth)
        assert kernel_eval(kc, "print(ex.train_step)").strip() == "6"
    finally:
        kc.stop_channels()

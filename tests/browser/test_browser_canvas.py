"""The explorer's canvas (issue 21) in a real JupyterLab and Voilà, driven with the mouse
and the keyboard: clicks open and close groups and select boxes, hover shows the tip,
the wheel zooms and a drag pans, ← / → step; after every move the SVG on the page is
the same DOM as a fresh parse of the picture Python holds (``ex.canvas.value``), read
from the kernel through a second client: the patch contract.

Waits use Playwright's retrying expectations; nothing here asserts how long anything took.
"""

from __future__ import annotations

import json
import time

import pytest
from browser import kernel_client, kernel_eval, run_notebook, screenshot, write_notebook
from page_explorer import ExplorerOnPage

pytestmark = pytest.mark.browser

NOTEBOOK = "canvas.ipynb"
CELLS = [
    """\
import numpy as np, tensorflow as tf, keras, tapeviz as tv
keras.utils.set_random_seed(0)
block = keras.Sequential([keras.layers.Dense(4, activation="tanh", name="a"),
                          keras.layers.Dense(4, activation="tanh", name="b")], name="block")
model = keras.Sequential([keras.Input((3,)), block, keras.layers.Dense(1, name="head")], name="net")
x = tf.constant(np.random.default_rng(0).normal(size=(2, 3)).astype("float32"))
with tv.GradientTape() as tape:
    loss = tf.reduce_mean(model(x) ** 2)
ex = tv.explore(tape, loss, theme="light", depth=1)
ex""",
]

# The canvas's SVG, and a fresh parse of `markup` with the same whitespace rule (the
# front end drops whitespace-only text between elements), both serialised by the browser.
# The selected box's highlight is a class the page puts on top of the picture (as the
# view's zoom): it is left out, and which box has it is returned.
_SAME_AS_FRESH_JS = r"""
([sel, markup]) => {
  const svg = document.querySelector(sel + " svg").cloneNode(true);
  const selected = Array.from(svg.querySelectorAll(".tv-selected")).map((e) => e.id);
  for (const e of svg.querySelectorAll(".tv-selected")) {
    e.classList.remove("tv-selected");
    if (!e.classList.length) e.removeAttribute("class");
  }
  const div = document.createElement("div");
  div.innerHTML = markup;
  const fresh = div.querySelector("svg");
  const layers = Array.from(fresh.children).filter((c) => c.tagName === "g" && c.id.startsWith("layer-"));
  for (const box of [fresh, ...layers])
    for (const n of Array.from(box.childNodes)) if (n.nodeType === 3 && !n.data.trim()) n.remove();
  return {page: svg.outerHTML, fresh: fresh.outerHTML, selected};
}
"""


class Canvas(ExplorerOnPage):
    """The explorer's parts on a page, its canvas's too, and a kernel client to compare with."""

    def __init__(self, page, server):
        super().__init__(page, server)
        self.sel = self.canvas
        self.viewport = page.locator(f"{self.sel} .tv-viewport")
        self.kc = None

    def box(self, element_id: str):
        return self.page.locator(f'{self.sel} g[id="{element_id}"]')

    def kernel(self, code: str) -> str:
        return kernel_eval(self.kc, code)

    def select_a_variable(self):
        """Click a variable's box (opening the head when every variable is inside a closed
        box): the inspector shows it and the canvas draws it highlighted. (locator, name)"""
        from playwright.sync_api import expect

        variable = self.page.locator(f'{self.sel} g[id^="node-var"]').first
        if variable.count() == 0:
            self.box("node-layer:net/head").click()
            variable = self.page.locator(f'{self.sel} g[id^="node-var"]').first
        expect(variable).to_have_count(1)
        name = variable.locator("title").text_content()
        variable.click()
        expect(self.page.locator(f"{self.root} .tv-inspect")).to_contain_text(name)
        expect(self.page.locator(f"{self.root} .tv-inspect")).to_contain_text("shape")
        expect(variable).to_have_class("tv-selected")  # drawn highlighted on the canvas
        assert variable.evaluate("g => getComputedStyle(g.querySelector('rect')).strokeWidth") == "4.5px"
        self.check_contract()
        return variable, name

    def keys_step(self, step, *moves: tuple[str, int]) -> None:
        """A click on the picture's title (no box: it focuses the explorer), then each key
        moves the step slider to its step; the patch contract holds after each."""
        from playwright.sync_api import expect

        self.box("title").click()
        for key, k in moves:
            self.page.keyboard.press(key)
            expect(step).to_have_attribute("aria-valuetext", str(k))
            self.check_contract()

    def check_contract(self) -> dict:
        """Wait until the page shows the kernel's current picture, then compare the DOMs."""
        # the kernel has heard of the slider's last move (its step is the slider's), then read its state
        slider = self.page.locator(f"{self.root} .tv-step .noUi-handle").get_attribute("aria-valuetext")
        code = "import json; print(json.dumps([ex.canvas._seq, ex.canvas.frame['kind'], ex.canvas._at]))"
        for _ in range(200):
            state = json.loads(self.kernel(code))
            if str(state[2]) == slider:
                break
            time.sleep(0.05)
        # the page has the kernel's picture seq and shows its step (walked there by itself, or sent)
        self.page.wait_for_function(
            "([sel, seq, at]) => { const e = document.querySelector(`${sel}.tv-canvas-view, ${sel} .tv-canvas-view`);"
            " return e && Number(e.dataset.tvSeq) >= seq && e.dataset.tvStep === String(at); }",
            arg=[self.sel, state[0], state[2]],
            polling=50,
        )
        markup = json.loads(self.kernel("import json; print(json.dumps(ex.canvas.value))"))
        got = self.page.evaluate(_SAME_AS_FRESH_JS, [self.sel, markup])
        a, b = got["page"], got["fresh"]
        at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        where = f"{at}:\n{a[at - 300 : at + 300]}\n{b[at - 300 : at + 300]}"
        assert a == b, f"the patched SVG differs from a fresh SVG of the same state at {where}"
        node = json.loads(self.kernel("import json; print(json.dumps(ex.canvas.selected))"))
        assert got["selected"] == ([node] if node and f'id="{node}"' in markup else []), got["selected"]
        return {"seq": state[0], "kind": state[1], "at": state[2]}


def _open(page, server, kernel: bool = True) -> Canvas:
    from playwright.sync_api import expect

    write_notebook(server.root / NOTEBOOK, CELLS)
    run_notebook(page, server, NOTEBOOK)
    c = Canvas(page, server)
    expect(page.locator(f"{c.sel} svg")).to_be_visible()
    page.locator(c.root).scroll_into_view_if_needed()
    if kernel:  # Voilà has no REST API to find its kernel by
        c.kc = kernel_client(server)
    return c


def test_canvas_clicks_hover_zoom_keys_and_patches_in_jupyterlab(jupyterlab, page):
    from playwright.sync_api import expect

    c = _open(page, jupyterlab)
    try:
        c.check_contract()
        # -- a click on a closed group's box opens it; its groups inside stay closed --------
        expect(c.box("node-layer:net")).to_have_count(1)
        c.box("node-layer:net").click()
        expect(c.box("group-net")).to_have_count(1)  # the open group's frame, with its name
        expect(c.box("group-net")).to_contain_text("net")
        expect(c.box("node-layer:net/block")).to_have_count(1)
        assert c.check_contract()["kind"] == "full"  # a new layout is sent whole
        c.box("node-layer:net/block").click()
        expect(c.box("group-net/block")).to_have_count(1)
        expect(c.box("node-layer:net/block/a")).to_have_count(1)
        opened = c.check_contract()
        screenshot(page, "canvas_opened")
        closed = json.loads(c.kernel("import json; print(json.dumps(sorted(ex.graph_targets.collapsed(ex.state))))"))
        assert "net/block" not in closed

        # -- steps: the page walks them with the patches sent ahead (the kernel sends no
        # picture), and equals a fresh picture after each --------------------------------------
        step = page.locator(f"{c.root} .tv-step .noUi-handle")
        last = int(step.get_attribute("aria-valuetext"))
        for key in ("ArrowLeft", "ArrowLeft", "ArrowLeft", "ArrowRight"):
            step.press(key)
            page.wait_for_timeout(150)
        expect(step).to_have_attribute("aria-valuetext", str(last - 2))
        assert c.check_contract()["seq"] == opened["seq"], "the kernel sent a picture for a step the page had"
        # a burst of keys, faster than the kernel answers: the page still ends on the slider's step
        for _ in range(4):
            step.press("ArrowLeft")
        for _ in range(6):
            step.press("ArrowRight")
        expect(step).to_have_attribute("aria-valuetext", str(last))
        c.check_contract()
        # a jump out of reach of the patches sent (Home: step 0), then back: patches from the kernel
        step.press("Home")
        expect(step).to_have_attribute("aria-valuetext", "0")
        c.check_contract()
        step.press("End")
        expect(step).to_have_attribute("aria-valuetext", str(last))
        c.check_contract()
        # a clip move on the finished pass changes the variables' texts: a patch from the kernel
        page.locator(f"{c.root} .tv-clip-mode select").select_option("tf.clip_by_value")
        page.wait_for_timeout(300)
        assert c.check_contract()["kind"] == "patch"
        step.press("ArrowLeft")  # other settings: a new seq, its own step patches
        expect(step).to_have_attribute("aria-valuetext", str(last - 1))
        c.check_contract()

        # clip_norm keys on the finished pass: the page patches the picture by itself (the
        # kernel sent, ahead, TF's clipped pictures one and two slider steps away) and the
        # kernel's frame for the move confirms it: the same picture as a fresh one
        step.press("End")
        expect(step).to_have_attribute("aria-valuetext", str(last))
        page.locator(f"{c.root} .tv-clip-mode select").select_option("tf.clip_by_norm")
        clip = page.locator(f"{c.root} .tv-clip-norm .noUi-handle")
        expect(clip).to_be_visible()
        c.check_contract()
        view = page.locator(f"{c.sel}.tv-canvas-view, {c.sel} .tv-canvas-view").first
        for key in ("ArrowLeft", "ArrowLeft", "ArrowRight"):
            seq = int(c.kernel("print(ex.canvas._seq)"))
            for _ in range(200):  # the kernel sent the clipped pictures around this one
                if c.kernel("print(ex.canvas.clips.get('seq') == ex.canvas._seq)") == "True":
                    break
                time.sleep(0.05)
            done = int(view.get_attribute("data-tv-local-clips") or 0)
            clip.press(key)
            expect(view).to_have_attribute("data-tv-local-clips", str(done + 1))  # the page went first
            for _ in range(200):  # then the kernel heard of the move and sent its frame
                if int(c.kernel("print(ex.canvas._seq)")) > seq:
                    break
                time.sleep(0.05)
            c.check_contract()
        page.locator(f"{c.root} .tv-clip-mode select").select_option("tf.clip_by_value")
        step.press("ArrowLeft")
        expect(step).to_have_attribute("aria-valuetext", str(last - 1))

        # -- a click on an open group's frame closes it ---------------------------------
        c.box("group-net/block").locator("text").first.click()
        expect(c.box("group-net/block")).to_have_count(0)
        expect(c.box("node-layer:net/block")).to_have_count(1)
        c.check_contract()

        # -- a click on any other box selects it: the inspector shows it -----------------
        variable, name = c.select_a_variable()

        # -- hover: the tip has the full name, shape, value and gradient summaries --------
        variable.hover()
        tip = page.locator(f"{c.sel} .tv-tip")
        expect(tip).to_be_visible()
        expect(tip).to_contain_text(name)
        expect(tip).to_contain_text("value")
        expect(tip).to_contain_text("gradient")
        screenshot(page, "canvas_tip")
        page.mouse.move(5, 5)
        expect(tip).to_be_hidden()

        # -- zoom with the wheel, pan with a drag; a step keeps the view; reset ------------
        bb = c.viewport.bounding_box()
        page.mouse.move(bb["x"] + bb["width"] / 2, bb["y"] + 40)
        page.mouse.wheel(0, -300)
        expect(c.viewport).not_to_have_attribute("data-tv-scale", "1.000")
        scale = float(c.viewport.get_attribute("data-tv-scale"))
        assert scale > 1.0
        page.mouse.move(bb["x"] + 60, bb["y"] + 30)
        page.mouse.down()
        page.mouse.move(bb["x"] + 160, bb["y"] + 70, steps=6)
        page.mouse.up()
        pan = c.viewport.get_attribute("data-tv-pan")
        assert pan and pan != "0,0"
        step.press("ArrowLeft")
        expect(step).to_have_attribute("aria-valuetext", str(last - 2))
        c.check_contract()
        assert c.viewport.get_attribute("data-tv-scale") == f"{scale:.3f}"
        assert c.viewport.get_attribute("data-tv-pan") == pan
        screenshot(page, "canvas_zoomed")
        page.locator(f"{c.sel} .tv-reset").click()
        expect(c.viewport).to_have_attribute("data-tv-scale", "1.000")
        expect(c.viewport).to_have_attribute("data-tv-pan", "0,0")

        # -- keyboard, once the canvas has focus -------------------------------------------
        c.keys_step(step, ("ArrowLeft", last - 3), ("ArrowRight", last - 2))
    finally:
        if c.kc is not None:
            c.kc.stop_channels()


def test_canvas_in_voila(voila, page):
    from playwright.sync_api import expect

    c = _open(page, voila, kernel=False)
    try:
        c.box("node-layer:net").click()
        expect(c.box("group-net")).to_have_count(1)
        c.box("node-layer:net/block").hover()
        expect(page.locator(f"{c.sel} .tv-tip")).to_contain_text("net/block")
        step = page.locator(f"{c.root} .tv-step .noUi-handle")
        last = int(step.get_attribute("aria-valuetext"))
        step.press("ArrowLeft")
        expect(step).to_have_attribute("aria-valuetext", str(last - 1))
        view = page.locator(f"{c.sel}.tv-canvas-view, {c.sel} .tv-canvas-view")
        expect(view).to_have_attribute("data-tv-step", str(last - 1))
        expect(view).to_have_attribute("data-tv-seq", "2")  # the first picture, the group opened: the step walked
        screenshot(page, "canvas_voila")
    finally:
        if c.kc is not None:
            c.kc.stop_channels()


def test_canvas_in_notebook7(notebook7, page):
    """Notebook 7: a click opens a group, a click on a box selects it (the inspector shows
    it, the canvas highlights it), and ← steps once the picture has focus (Notebook 7
    keeps arrow keys from a focused slider); the patch contract holds after each."""
    from playwright.sync_api import expect

    c = _open(page, notebook7)
    try:
        c.check_contract()
        c.box("node-layer:net").click()
        expect(c.box("group-net")).to_have_count(1)
        expect(c.box("node-layer:net/head")).to_have_count(1)
        assert c.check_contract()["kind"] == "full"
        c.box("node-layer:net/head").click()  # the head's variables: boxes of their own
        expect(c.box("group-net/head")).to_have_count(1)
        c.check_contract()
        c.select_a_variable()
        screenshot(page, "notebook7_canvas_selected")
        edges = page.evaluate(
            """(root) => {
                const r = document.querySelector(root);
                const cell = r.closest('.jp-Cell') || r.parentElement;
                const controls = [...r.querySelectorAll('.tv-lower select, .tv-lower input, .tv-lower table')];
                return {cell: cell.getBoundingClientRect().right,
                        controls: Math.max(...controls.map(e => e.getBoundingClientRect().right))};
            }""",
            c.root,
        )
        assert edges["controls"] <= edges["cell"] + 1, edges  # the inspector is not cut at the cell's edge
        page.locator(f"{c.root} .tv-lower").scroll_into_view_if_needed()
        screenshot(page, "notebook7_canvas_lower")

        step = page.locator(f"{c.root} .tv-step .noUi-handle")
        last = int(step.get_attribute("aria-valuetext"))
        # walked by the page: the selected box is still highlighted (check_contract checks it)
        c.keys_step(step, ("ArrowLeft", last - 1), ("ArrowLeft", last - 2), ("ArrowRight", last - 1))
    finally:
        if c.kc is not None:
            c.kc.stop_channels()


LOOP_NOTEBOOK = "loop.ipynb"
LOOP_CELLS = [
    """\
import numpy as np, tensorflow as tf, keras, tapeviz as tv
keras.utils.set_random_seed(0)

class ActorCritic(keras.Model):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.torso = keras.layers.Dense(8, activation="relu", name="torso")
        self.policy = keras.layers.Dense(3, name="policy")
        self.value = keras.layers.Dense(1, name="value")

    def call(self, state):
        h = self.torso(state)
        return self.policy(h), self.value(h)

model = ActorCritic(name="ac")
rng = np.random.default_rng(0)
states = rng.normal(size=(10, 1, 4)).astype("float32")
model(tf.constant(states[0]))
log_probs, values = [], []
with tv.GradientTape() as tape:
    for t in range(10):
        logits, value = model(tf.constant(states[t]))
        log_probs.append(tf.nn.log_softmax(logits)[0, t % 3])
        values.append(value[0, 0])
    advantage = tf.constant(np.arange(10.0, dtype="float32")) - tf.stack(values)
    loss = -tf.reduce_sum(tf.stack(log_probs) * tf.stop_gradient(advantage)) + tf.reduce_sum(advantage**2)
ex = tv.explore(tape, loss, theme="light")
ex""",
]


def test_closing_an_opened_loop_brings_back_its_default_picture_in_jupyterlab(jupyterlab, page):
    """Issue 32 on the page: the episode's model is one box of its steps; a click opens step
    0 in a frame, a click on a box of the other steps opens step 1, a click on the frame
    closes the loop, and the page shows the default picture again, element for element."""
    from playwright.sync_api import expect

    write_notebook(jupyterlab.root / LOOP_NOTEBOOK, LOOP_CELLS)
    run_notebook(page, jupyterlab, LOOP_NOTEBOOK)
    c = Canvas(page, jupyterlab)
    expect(page.locator(f"{c.sel} svg")).to_be_visible()
    page.locator(c.root).scroll_into_view_if_needed()
    c.kc = kernel_client(jupyterlab)
    try:
        c.check_contract()
        default = json.loads(c.kernel("import json; print(json.dumps(ex.canvas.value))"))
        assert "ac ×10 (steps 0–9)" in default and "LogSoftmax ×10" in default  # as tv.save draws it
        c.box("node-layer:ac").click()
        expect(c.box("group-ac")).to_have_count(1)  # the loop opened: step 0 framed
        c.check_contract()
        rest = page.locator(f'{c.sel} g[id^="node-layer:"]', has_text="ac ×9")
        expect(rest).to_have_count(1)
        rest.click()
        expect(page.locator(f"{c.sel} svg")).to_contain_text("ac · step 1")
        c.check_contract()
        screenshot(page, "canvas_loop_step1")
        c.box("group-ac").locator("text").first.click()  # the frame's name: close the loop
        expect(c.box("group-ac")).to_have_count(0)
        c.check_contract()
        assert c.kernel("print(ex.state.collapsed)").strip() == "None"
        got = page.evaluate(_SAME_AS_FRESH_JS, [c.sel, default])
        assert got["page"] == got["fresh"], "the page shows the default picture again"
        screenshot(page, "canvas_loop_closed")
    finally:
        c.kc.stop_channels()

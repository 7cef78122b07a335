"""The exported page in Chromium, opened from disk with every request but the file's own
refused: it steps (keys, slider, ◀ ▶, play), shows tips, zooms, selects a box, switches
targets, moves clip_norm and runs the quiz with its own script, and after each move its
picture is the one Python draws for that step (st.picture), element for element."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tensorflow as tf
from browser import screenshot
from page_check import SAME_AS_FRESH_JS

import tapeviz as tv
from tapeviz.api import _explored
from tapeviz.explorer import state as st
from tapeviz.picture.options import Options

pytestmark = pytest.mark.browser

_AS_PARSED_JS = "(h) => { const d = document.createElement('div'); d.innerHTML = h; return d.innerHTML; }"


def stop_gradient_example():
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        z = x**2 + tf.stop_gradient(y)
    return tape, x, y, z


class Page:
    """An exported page open in Chromium from file://, with the requests it tried."""

    def __init__(self, page, path: Path):
        self.page = page
        self.asked: list[str] = []  # every request that is not the page's own file
        self.errors: list[str] = []

        def route(r):
            if r.request.url.startswith("file:"):
                r.continue_()
            else:
                self.asked.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else self.asked.append(r.url))
        page.goto(path.as_uri())
        page.wait_for_selector(".tv-page[data-tv-ready='1'] .tv-page-picture svg")
        self.root = page.locator(".tv-page").first

    def step(self) -> int:
        return int(self.root.get_attribute("data-tv-step"))

    def same_as(self, markup: str, root: int = 0) -> None:
        got = self.page.evaluate(SAME_AS_FRESH_JS, [root, markup])
        assert got["page"] == got["fresh"]

    def key(self, key: str) -> None:
        self.root.focus()
        self.page.keyboard.press(key)

    def done(self) -> None:
        assert self.asked == [], f"the page asked for other addresses: {self.asked}"
        assert self.errors == [] and self.root.get_attribute("data-tv-error") is None, self.errors


def _file_state(tape, target, **settings):
    """The explored recording and state tv.export_html draws the page from."""
    explored = _explored(tape, target, None)
    return explored, explored.initial(**Options.of(None).in_file().keywords(), **settings)


def test_seed_page_steps_hovers_zooms_and_selects_offline(page, tmp_path):
    from playwright.sync_api import expect

    tape, x, y, z = stop_gradient_example()
    path = tv.export_html(tape, z, tmp_path / "page.html")
    model, state = _file_state(tape, z)
    n = len(model.flow(state.target).steps)
    p = Page(page, path)
    assert p.step() == n - 1
    p.same_as(st.picture(model, state))
    screenshot(page, "export_page")
    for key, want in (("ArrowLeft", n - 2), ("ArrowLeft", n - 3), ("ArrowRight", n - 2)):
        p.key(key)
        assert p.step() == want
        p.same_as(st.picture(model, state.replace(step=want)))
    slider = page.locator(".tv-page .tv-step")
    slider.focus()
    page.keyboard.press("Home")  # the range input moves itself; the page follows
    assert p.step() == 0
    p.same_as(st.picture(model, state.replace(step=0)))
    slider.fill(str(n - 1))
    assert p.step() == n - 1
    p.same_as(st.picture(model, state.replace(step=n - 1)))
    page.locator(".tv-page .tv-prev").click()
    assert p.step() == n - 2
    page.locator(".tv-page .tv-next").click()
    assert p.step() == n - 1
    # play from the end starts over at 0 and moves on by itself
    page.locator(".tv-page .tv-play").click()
    expect(p.root).to_have_attribute("data-tv-step", "1", timeout=5000)
    p.key(" ")  # space pauses
    paused = p.step()
    page.wait_for_timeout(1200)
    assert p.step() == paused
    p.same_as(st.picture(model, state.replace(step=paused)))

    node = model.graph.node_of(x)
    box = page.locator(f".tv-page .tv-page-picture:not([hidden]) g[id='node-{node}']")
    box.hover()
    tip = page.locator(".tv-page .tv-tip")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("gradient")
    assert "click: open" not in tip.inner_text()
    box.click()
    expect(page.locator(".tv-page .tv-inspect")).to_contain_text("dz/d")
    want = st.inspector(model, state.replace(node=node))  # the notebook's inspector, as the browser reads it
    normal = page.evaluate(_AS_PARSED_JS, want)
    assert page.locator(".tv-page .tv-inspect").inner_html() == normal
    assert page.evaluate(SAME_AS_FRESH_JS, [0, st.picture(model, state.replace(step=paused))])["selected"] == [
        f"node-{node}"
    ]
    p.key("ArrowRight")  # the selected box stays highlighted on the next step's picture
    got = page.evaluate(SAME_AS_FRESH_JS, [0, st.picture(model, state.replace(step=paused + 1))])
    assert got["page"] == got["fresh"] and got["selected"] == [f"node-{node}"]
    screenshot(page, "export_page_selected")

    viewport = page.locator(".tv-page .tv-viewport")
    bb = viewport.bounding_box()
    page.mouse.move(bb["x"] + bb["width"] / 2, bb["y"] + 60)
    page.mouse.wheel(0, -300)
    expect(viewport).not_to_have_attribute("data-tv-scale", "1.000")
    scale = viewport.get_attribute("data-tv-scale")
    p.key("ArrowLeft")
    assert viewport.get_attribute("data-tv-scale") == scale  # stepping keeps the view
    page.locator(".tv-page .tv-reset").click()
    expect(viewport).to_have_attribute("data-tv-scale", "1.000")
    p.done()


def test_two_targets_of_a_persistent_tape(page, tmp_path):
    x = tf.Variable([1.0, 2.0])
    with tv.GradientTape(persistent=True) as tape:
        h = tf.tanh(x * 3.0)
        loss = tf.reduce_sum(h**2)
        other = tf.reduce_mean(h * x)
    ex = tv.explore(tape, {"loss": loss, "other": other})
    path = ex.export_html(tmp_path / "two.html", all_targets=True)
    model, state = ex.graph_targets, ex.state
    p = Page(page, path)
    p.same_as(st.picture(model, state))
    page.locator(".tv-page .tv-target").select_option("1")
    other_state = state.replace(target="other", step=None, collapsed=None)
    n = len(model.flow("other").steps)
    assert p.root.get_attribute("data-tv-target") == "1" and p.step() == n - 1
    p.same_as(st.picture(model, other_state))
    for k in (n - 2, n - 3):
        p.key("ArrowLeft")
        p.same_as(st.picture(model, other_state.replace(step=k)))
    page.locator(".tv-page .tv-step").fill("0")
    p.same_as(st.picture(model, other_state.replace(step=0)))
    page.locator(".tv-page .tv-page-picture:not([hidden]) g[id^='node-']").first.hover()
    assert page.locator(".tv-page .tv-tip").is_visible()
    page.locator(".tv-page .tv-target").select_option("0")  # back: loss is where it was
    p.same_as(st.picture(model, state))
    assert page.locator(".tv-page .tv-step").input_value() == str(len(model.flow("loss").steps) - 1)
    screenshot(page, "export_page_targets")
    ex.close()
    p.done()


def test_clip_norm_slider_patches_the_finished_pass_and_panel(page, tmp_path):
    from playwright.sync_api import expect

    tape, x, y, z = stop_gradient_example()
    ex = tv.explore(tape, z)
    path = ex.export_html(tmp_path / "clip.html", clip_norms=[0.5, 2.0, 10.0])
    model, state = ex.graph_targets, ex.state.replace(clip_mode="by_norm")
    p = Page(page, path)
    p.same_as(st.picture(model, state.replace(clip_norm=0.5)))
    norm = page.locator(".tv-page .tv-clip-panel .tv-clipped-norm").first
    expect(norm).to_have_text("0.5")
    clip = page.locator(".tv-page .tv-clip-norm")
    for i, v, shown in ((1, 2.0, "2"), (2, 10.0, "4")):
        clip.fill(str(i))
        expect(norm).to_have_text(shown)  # tf.clip_by_norm: 4 clipped to 2, unclipped under 10
        p.same_as(st.picture(model, state.replace(clip_norm=v)))
        assert p.root.get_attribute("data-tv-overlay") == f"clip{i}"
    p.key("ArrowLeft")  # an earlier step: the clip changes nothing drawn there
    p.same_as(st.picture(model, state.replace(clip_norm=10.0, step=p.step())))
    p.key("ArrowRight")
    p.same_as(st.picture(model, state.replace(clip_norm=10.0)))
    clip.fill("0")
    p.same_as(st.picture(model, state.replace(clip_norm=0.5)))
    page.locator(".tv-page .tv-step").fill("0")
    p.same_as(st.picture(model, state.replace(clip_norm=0.5, step=0)))
    page.locator(".tv-page .tv-step").fill(str(len(model.flow(state.target).steps) - 1))
    p.same_as(st.picture(model, state.replace(clip_norm=0.5)))
    page.locator(".tv-page .tv-page-picture:not([hidden]) g[id^='node-']").first.hover()
    expect(page.locator(".tv-page .tv-tip")).to_contain_text("gradient")
    screenshot(page, "export_page_clip")
    ex.close()
    p.done()


def test_quiz_page_checks_reveals_scores_and_resets(page, tmp_path):
    from playwright.sync_api import expect

    tape, x, y, z = stop_gradient_example()
    path = tv.export_html(tape, z, tmp_path / "quiz.html", quiz=True)
    model, state = _file_state(tape, z, quiz=True)
    hidden = state.replace(answers=())
    n = len(model.flow(state.target).steps)
    p = Page(page, path)
    score = page.locator(".tv-page .tv-quiz-score")
    expect(score).to_have_text(f"Score: 0 right, 0 wrong, 0 revealed ({n} steps)")
    page.locator(".tv-page .tv-step").fill("1")
    p.same_as(st.picture(model, hidden.replace(step=1)))
    answer = page.locator(".tv-page .tv-quiz-input")
    answer.fill("one")
    page.locator(".tv-page .tv-quiz-check").click()
    expect(page.locator(".tv-page .tv-quiz-verdict")).to_contain_text("Type a number first")
    p.same_as(st.picture(model, hidden.replace(step=1)))  # nothing revealed
    answer.fill("1")
    answer.press("Enter")
    expect(page.locator(".tv-page .tv-quiz-verdict")).to_have_text("Right! You typed 1; TensorFlow computed 1.0.")
    p.same_as(st.picture(model, hidden.replace(step=1, quiz=False)))
    assert p.root.get_attribute("data-tv-overlay") == "reveal"
    p.key("ArrowRight")
    p.same_as(st.picture(model, hidden.replace(step=2)))
    answer.fill("7")
    page.locator(".tv-page .tv-quiz-check").click()
    expect(page.locator(".tv-page .tv-quiz-verdict")).to_have_class(re.compile("tv-quiz-wrong"))
    p.key("ArrowRight")
    page.locator(".tv-page .tv-quiz-reveal").click()
    expect(page.locator(".tv-page .tv-quiz-verdict")).to_contain_text("Revealed")
    expect(score).to_have_text(f"Score: 1 right, 1 wrong, 1 revealed ({n} steps)")
    expect(page.locator(".tv-page .tv-inspect")).to_be_empty()  # the last step is not answered yet
    page.locator(".tv-page .tv-page-picture:not([hidden]) g[id^='node-']").first.hover()
    expect(page.locator(".tv-page .tv-tip")).to_be_visible()
    assert "gradient" not in page.locator(".tv-page .tv-tip").inner_text()  # it would give the answer away
    screenshot(page, "export_page_quiz")
    page.locator(".tv-page .tv-quiz-reset").click()
    expect(score).to_have_text(f"Score: 0 right, 0 wrong, 0 revealed ({n} steps)")
    p.same_as(st.picture(model, hidden.replace(step=p.step())))
    assert page.locator(".tv-page .tv-quiz-input").is_enabled()
    p.done()


@pytest.mark.slow
def test_resnet50_page_steps_offline(page, tmp_path):
    from gallery_models import GALLERY

    run = GALLERY["ResNet50"]()
    path = tv.export_html(run.tape, run.loss, tmp_path / "resnet50.html")
    assert path.stat().st_size < 3_000_000
    model, state = _file_state(run.tape, run.loss)
    n = len(model.flow(state.target).steps)
    p = Page(page, path)
    p.same_as(st.picture(model, state))
    for k in (n - 2, n - 3):
        p.key("ArrowLeft")
        assert p.step() == k
    p.same_as(st.picture(model, state.replace(step=n - 3)))
    page.locator(".tv-page .tv-step").fill("700")  # a walk of hundreds of patches
    p.same_as(st.picture(model, state.replace(step=700)))
    page.locator(".tv-page .tv-step").fill("3")
    p.same_as(st.picture(model, state.replace(step=3)))
    p.key("ArrowRight")
    p.same_as(st.picture(model, state.replace(step=4)))
    page.locator(".tv-page .tv-page-picture:not([hidden]) g[id^='node-']").first.hover()
    assert page.locator(".tv-page .tv-tip").is_visible()
    screenshot(page, "export_page_resnet50")
    p.done()


def test_two_fragments_on_one_page_step_on_their_own(page, tmp_path):
    """page_fragment inline in another document, twice: each draws, steps and shows its tips
    by itself, keys move only the one with focus, and nothing is fetched."""
    from tapeviz.explorer.html_page import page_fragment

    tape, x, y, z = stop_gradient_example()
    a = tv.explore(tape, z)
    w = tf.Variable([1.0, -2.0])
    with tv.GradientTape() as t2:
        loss = tf.reduce_sum(tf.tanh(w) ** 2)
    b = tv.explore(t2, loss)
    doc = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>lesson</title>"
        "<style>p { color: #333 }</style></head><body><p>before</p>"
        + page_fragment(a.graph_targets, a.state, title="first")
        + "<p>between</p>"
        + page_fragment(b.graph_targets, b.state, title="second")
        + "</body></html>"
    )
    (tmp_path / "lesson.html").write_text(doc, encoding="utf-8")
    p = Page(page, tmp_path / "lesson.html")
    roots = page.locator(".tv-page")
    assert roots.count() == 2
    page.wait_for_selector(".tv-page >> nth=1 >> .tv-page-picture svg")
    p.same_as(st.picture(a.graph_targets, a.state), root=0)
    p.same_as(st.picture(b.graph_targets, b.state), root=1)
    roots.nth(1).focus()
    page.keyboard.press("ArrowLeft")
    nb, na = len(b.flow.steps), len(a.flow.steps)
    assert roots.nth(1).get_attribute("data-tv-step") == str(nb - 2)
    assert roots.nth(0).get_attribute("data-tv-step") == str(na - 1)
    p.same_as(st.picture(b.graph_targets, b.state.replace(step=nb - 2)), root=1)
    p.same_as(st.picture(a.graph_targets, a.state), root=0)
    roots.nth(0).locator(".tv-prev").click()
    p.same_as(st.picture(a.graph_targets, a.state.replace(step=na - 2)), root=0)
    roots.nth(1).locator(".tv-page-picture:not([hidden]) g[id^='node-']").first.hover()
    assert roots.nth(1).locator(".tv-tip").is_visible() and not roots.nth(0).locator(".tv-tip").is_visible()
    screenshot(page, "export_page_two_fragments", full_page=True)
    a.close()
    b.close()
    p.done()


def test_the_jump_button_goes_where_the_nan_starts_from_file_and_by_keyboard(page, tmp_path):
    """The exported page's "Go to step k, where it starts" (the live explorer's
    jump_to_origin): labelled in the page's language, reached by Tab, pressed by Enter; it
    moves to that step with its op in the inspector, and the picture is Python's for that
    state. A target with a healthy gradient has no button."""
    from diagnosis_check import JUMP_WORDS, log_of_zero
    from playwright.sync_api import expect

    tape, targets, lg = log_of_zero()
    for lang, words in JUMP_WORDS:
        model = _explored(tape, targets, None)
        state = model.initial(**Options.of(None, lang=lang).in_file().keywords())
        there = st.jump_to_origin(model, state)
        assert there.node == model.graph.node_of(lg)
        path = tv.export_html(tape, targets, tmp_path / f"jump_{lang}.html", lang=lang)
        p = Page(page, path)
        jump = page.locator(".tv-page .tv-jump")
        expect(jump).to_be_visible()
        expect(jump).to_have_text(words.format(k=there.step))
        assert p.step() == state.step != there.step
        p.root.focus()
        for _ in range(80):  # Tab from the page's box until the button has focus
            if page.evaluate("document.activeElement && document.activeElement.classList.contains('tv-jump')"):
                break
            page.keyboard.press("Tab")
        else:
            raise AssertionError("Tab never reached the jump button")
        page.keyboard.press("Enter")
        assert p.step() == there.step
        got = page.evaluate(SAME_AS_FRESH_JS, [0, st.picture(model, there)])
        assert got["page"] == got["fresh"] and got["selected"] == [f"node-{there.node}"]
        normal = page.evaluate(_AS_PARSED_JS, st.node_inspector(model, there, there.node))
        assert page.locator(".tv-page .tv-inspect").inner_html() == normal
        if lang == "en":
            screenshot(page, "export_page_jump", full_page=True)
        page.locator(".tv-page .tv-target").select_option("1")  # the healthy target: no button
        expect(jump).to_be_hidden()
        page.locator(".tv-page .tv-target").select_option("0")
        expect(jump).to_be_visible()
        p.done()

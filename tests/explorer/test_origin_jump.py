"""The explorer and a NaN gradient (issue 34): the inspector says why the gradient is NaN,
Inf or zero (the diagnosis the picture marks), and a button jumps to the step where it
first appears: a state change (state.jump_to_origin), which the widget only maps to its
step slider and node menu. The step is checked against TensorFlow: the gradient TF gives
at the op's output is finite, the one at the source is not, and that step is the first
whose op passes a non-finite gradient back."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

import tapeviz as tv
from tapeviz.explorer import panels
from tapeviz.explorer import state as st


def where_trap():
    x = tf.Variable([0.0, 1.0])
    with tv.GradientTape(persistent=True) as tape:
        lg = tf.math.log(x)
        y = tf.reduce_sum(tf.where(x > 0, lg, tf.zeros_like(x)))
    return tape, y, x, lg


def test_jump_lands_on_the_first_step_whose_gradient_is_not_finite():
    tape, y, x, lg = where_trap()
    assert np.all(np.isfinite(tape.gradient(y, lg).numpy()))  # TF: finite where Log's gradient arrives ...
    assert np.isnan(tape.gradient(y, x).numpy()[0])  # ... NaN past it
    ex = tv.explore(tape, y)
    try:
        model, state = ex.graph_targets, ex.state
        fl = model.flow(state.target)
        assert state.step == fl.last_step  # it opens at the finished pass
        jumped = st.jump_to_origin(model, state)
        k = jumped.step
        assert st.origin_step(model, state) == k
        assert fl.steps[k].node == fl.graph.node_of(lg) and jumped.node == fl.steps[k].node
        passed = [[fl.edge_grad(*e) for e in fl.steps[j].edges] for j in range(len(fl.steps))]
        finite = [all(p is None or np.all(np.isfinite(p)) for p in ps) for ps in passed]
        assert finite.index(False) == k  # the first step that passes a NaN back
        assert 'id="origin-mark"' in st.picture(model, jumped)
        assert 'id="origin-mark"' not in st.picture(model, jumped.replace(step=k - 1))
        # the widget: the button says the step, a click moves the slider and the inspector
        jump = ex.controls["jump"]
        assert jump.layout.display != "none" and str(k) in jump.description
        jump.click()
        assert ex.state.step == k and ex.controls["step"].value == k and ex.state.node == fl.steps[k].node
        assert "tf.where trap" in ex.inspector.value and "Why the gradient is NaN" in ex.inspector.value
        assert "Log" in ex.inspector.value  # the op, inspected
    finally:
        ex.close()


def test_inspector_shows_the_diagnosis_before_any_node_is_chosen():
    tape, y, _, _ = where_trap()
    ex = tv.explore(tape, y, lang="zh")
    try:
        assert ex.state.node is None
        html = st.inspector(ex.graph_targets, ex.state)
        assert "梯度为什么是 NaN" in html and "tf.where 陷阱" in html
        origin = st.diagnosis(ex.graph_targets, ex.state)
        assert html == panels.diagnosis(origin, "zh") and f"data-step='{origin.step}'" in html
    finally:
        ex.close()


def test_no_jump_and_no_diagnosis_for_a_healthy_gradient():
    from tapeviz import examples

    run = examples.basic()
    ex = tv.explore(run.tape, run.target)
    try:
        assert st.diagnosis(ex.graph_targets, ex.state) is None
        assert st.jump_to_origin(ex.graph_targets, ex.state) is ex.state
        assert ex.controls["jump"].layout.display == "none"
        assert st.inspector(ex.graph_targets, ex.state) == ""
        assert 'id="origin-mark"' not in st.picture(ex.graph_targets, ex.state)
    finally:
        ex.close()


def test_the_exported_page_says_why_too(tmp_path):
    tape, y, _, _ = where_trap()
    ex = tv.explore(tape, y)
    try:
        path = ex.export_html(tmp_path / "trap.html")
        page = path.read_text(encoding="utf-8")
        assert "tv-diagnosis" in page and "tf.where trap" in page and "origin-mark" in page
    finally:
        ex.close()


def test_the_canvas_patches_bring_the_mark_in_and_out():
    """The live canvas steps by patches (patches.diff): the step where the NaN starts adds
    the tag and restyles the box; stepping back removes them: the patched page equals the
    picture drawn fresh, both ways."""
    from tapeviz.explorer import patches

    tape, y, _, _ = where_trap()
    ex = tv.explore(tape, y)
    try:
        model, state = ex.graph_targets, ex.state
        k = st.origin_step(model, state)
        before, at = st.picture(model, state.replace(step=k - 1)), st.picture(model, state.replace(step=k))
        forward = patches.diff(patches.parse(before), patches.parse(at))
        back = patches.diff(patches.parse(at), patches.parse(before))
        assert forward is not None and back is not None  # patches, not a whole new document
        assert any("origin-mark" in str(p) for p in forward["put"]) and "origin-mark" in back["drop"]
        assert patches.apply(before, forward) == at and patches.apply(at, back) == before
    finally:
        ex.close()


def _page_data(html: str) -> dict:
    import json
    import re

    data = re.search(r"class='tv-page-data'>(.*?)</script>", html, re.S).group(1)
    return json.loads(data.replace("<\\/", "</"))


def test_the_exported_page_holds_the_jump_of_each_target(tmp_path):
    """The page's "Go to step k, where it starts" button: per target, the live explorer's
    jump (its step, its op's box and the inspector that box shows), labelled in the page's
    language; none for a target whose gradient is healthy."""
    from diagnosis_check import JUMP_WORDS, log_of_zero

    from tapeviz.api import _explored
    from tapeviz.explorer.html_page import page_fragment

    tape, targets, lg = log_of_zero()
    for lang, words in JUMP_WORDS:
        model = _explored(tape, targets, None)
        state = model.initial(lang=lang)
        html = page_fragment(model, state, targets=["y", "healthy"])
        assert "class='tv-jump' hidden" in html  # shown by the script, for a target with a jump
        trap, fine = _page_data(html)["targets"]
        there = st.jump_to_origin(model, state)
        assert trap["jump"] == {"step": there.step, "id": f"node-{there.node}", "label": words.format(k=there.step)}
        assert there.node == model.graph.node_of(lg)
        assert trap["inspect"][trap["jump"]["id"]] == st.node_inspector(model, there, there.node)
        assert fine["jump"] is None
    # a quiz page has no diagnosis and no jump (they would give the answers away)
    quiz = page_fragment(model, model.initial(quiz=True))
    assert _page_data(quiz)["targets"][0]["jump"] is None

"""The compare explorer: tv.explore(tv.compare(a, b)) steps both passes with one slider."""

from __future__ import annotations

import re

import ipywidgets as W
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.explorer import compare_state as cs
from tapeviz.explorer import state as st


def _run(stop: bool):
    w = tf.Variable([1.0, 2.0], name="w")
    b = tf.Variable(0.5, name="b")
    with tv.GradientTape() as tape:
        h = w * 3.0
        if stop:
            h = tf.stop_gradient(h)
        loss = tf.reduce_sum(h * b)
    return tape, loss


def _title(svg: str) -> str:
    m = re.search(r'<g id="title">(.*?)</g>', svg, re.S)
    assert m
    return re.sub(r"<[^>]+>", "", m.group(1))


def test_the_state_steps_both_sides_together():
    c = tv.compare(_run(False), _run(True))
    pair = cs.ComparedPair(c)
    assert c.b.last_step < c.a.last_step  # b's pass stops at the stop_gradient
    assert pair.last_step == c.a.last_step
    state = pair.initial()
    assert state.step == pair.last_step
    for k in range(pair.last_step + 1):
        s = state.replace(step=k)
        assert cs.side_step(pair, s, "a") == k and cs.side_step(pair, s, "b") == min(k, c.b.last_step)
        a_state, b_state = cs.side_state(pair, s, "a"), cs.side_state(pair, s, "b")
        assert (a_state.step, b_state.step) == (k, min(k, c.b.last_step))
        a, b = cs.pictures(pair, s)
        # each side's picture is the explorer's own picture of that pass at that step
        assert a == st.picture(pair.sides["a"], a_state) and b == st.picture(pair.sides["b"], b_state)
        assert _title(a).startswith(f"Step {k}/{c.a.last_step}")
        assert _title(b).startswith(f"Step {min(k, c.b.last_step)}/{c.b.last_step}")
    with pytest.raises(ValueError, match=r"outside 0\.\.5"):
        cs.side_step(pair, state.replace(step=99), "a")
    with pytest.raises(ValueError, match="side must be one of"):
        cs.side_state(pair, state, "c")
    assert state.replace(lang="zh").options.lang == "zh"


def test_the_ratio_picture_is_the_comparisons():
    c = tv.compare(_run(False), _run(True))
    pair = cs.ComparedPair(c, names=("plain", "stopped"))
    svg = cs.ratio_picture(pair, pair.initial())
    assert svg.startswith("<svg") and ">lost<" in svg and "stopped" in svg
    assert cs.ratio_picture(pair, pair.initial()) is svg  # kept: every step shows the same one


def test_explore_a_comparison_moves_both_sides_with_one_slider():
    c = tv.compare(_run(False), _run(True))
    ex = tv.explore(c, names=("plain", "stopped"))
    assert isinstance(ex, W.VBox) and isinstance(ex.controls["step"], W.IntSlider)
    assert ex.controls["step"].max == c.a.last_step
    assert "plain: step 5 of 5" in ex.panes["a"].value and "stopped: step 3 of 3" in ex.panes["b"].value
    ex.controls["step"].value = 2
    assert ex.state.step == 2
    assert "plain: step 2 of 5" in ex.panes["a"].value and "stopped: step 2 of 3" in ex.panes["b"].value
    ex.controls["prev"].click()
    assert ex.state.step == 1 and "step 1 of 3" in ex.panes["b"].value
    ex.controls["next"].click()
    ex.controls["next"].click()
    assert ex.state.step == 3
    assert ">lost<" in ex.ratios.value and "<table>" in ex.table.value
    # a notebook saved without the widget shows the two sides and the ratio picture
    bundle = ex._repr_mimebundle_()
    assert bundle["image/svg+xml"].count("<svg") >= 4  # the document and its three pictures
    zh = tv.explore(c, lang="zh")
    assert "第 5 步" in zh.panes["a"].value
    ex.close()
    zh.close()


def test_two_history_steps_side_by_side():
    w = tf.Variable([1.0, -2.0], name="w")
    hist = tv.History()
    for step in range(3):
        with tv.GradientTape() as tape:
            loss = tf.reduce_sum(tf.tanh(w * 2.0) ** 2)
        grads = tape.gradient(loss, [w])
        hist.add(step, loss=loss, grads=grads, variables=[w], tape=tape)
        w.assign_sub(0.3 * grads[0])
    first, last = hist.recorded_steps()[0], hist.recorded_steps()[-1]
    ex = tv.explore(tv.compare(hist.picture(first), hist.picture(last)), names=(f"step {first}", f"step {last}"))
    n = ex.pair.last_step
    assert ex.pair.comparison.a.last_step == ex.pair.comparison.b.last_step == n
    ex.controls["step"].value = 1
    assert f"step {first}: step 1 of {n}" in ex.panes["a"].value
    assert f"step {last}: step 1 of {n}" in ex.panes["b"].value
    ex.close()


def test_theme_auto_follows_the_page_as_the_explorer_does():
    from tapeviz.picture.themes import DARK, LIGHT

    c = tv.compare(_run(False), _run(True))
    ex = tv.explore(c)  # theme="auto" by default
    try:
        assert ex.auto_theme and ex.state.options.theme == "light" and ex.page_theme in ex.children
        light = (ex.panes["a"].value, ex.panes["b"].value, ex.ratios.value)
        assert all(LIGHT.background in v and DARK.background not in v for v in light)
        ex.page_theme.dark = True  # what the front end reports in JupyterLab's dark theme
        assert ex.state.options.theme == "dark"
        dark = (ex.panes["a"].value, ex.panes["b"].value, ex.ratios.value)
        assert all(DARK.background in v for v in dark), "both sides and the ratio picture turn dark"
        ex.controls["step"].value = 1  # a move keeps the page's theme
        assert DARK.background in ex.panes["a"].value and DARK.background in ex.panes["b"].value
        ex.controls["step"].value = c.a.last_step
        ex.page_theme.dark = False
        assert (ex.panes["a"].value, ex.panes["b"].value, ex.ratios.value) == light
        ex.page_theme.dark = None  # the page cannot tell: the picture stays as it is
        assert ex.state.options.theme == "light"
    finally:
        ex.close()
    assert ex.page_theme.comm is None, "closing the explorer closes its theme reporter"
    fixed = tv.explore(c, theme="dark")
    try:
        assert not fixed.auto_theme and fixed.page_theme is None and fixed.state.options.theme == "dark"
        assert DARK.background in fixed.ratios.value
    finally:
        fixed.close()

"""What an explorer's output holds for a front end without its widget (explorer/fallback.py):
the current view as one image/svg+xml beside the widget view, and, in a kernel that runs a
lesson for a static page, the stepping page (or the pictures) instead of the widget."""

from __future__ import annotations

import base64
import re
import xml.dom.minidom

import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.explorer import fallback
from tapeviz.explorer import state as st
from tapeviz.messages import say

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _tape():
    x = tf.Variable([1.0, 2.0], name="x")
    with tv.GradientTape(persistent=True) as tape:
        y = x * x
        z = tf.reduce_sum(y)
    return tape, x, y, z


def _nested(svg: str) -> list[str]:
    """The pictures stacked in a fallback SVG: each nested <svg>'s contents after its tag."""
    xml.dom.minidom.parseString(svg)  # a whole XML document, as a front end gets it
    inside = svg.strip().removesuffix("</svg>")  # the stacking SVG's own end
    return [m.strip() for m in re.split(r"<svg x=\"0\" y=\"[0-9.]+\"[^>]*>", inside)[1:]]


def _body(svg: str) -> str:
    """An SVG's contents after its root tag, as a nested part holds them."""
    return svg[svg.index(">", svg.index("<svg")) + 1 :].strip()


@pytest.fixture
def no_page_mode(monkeypatch):
    monkeypatch.delenv(fallback.PAGE_ENV, raising=False)


def test_explorer_bundle_keeps_the_widget_and_adds_the_current_view(no_page_mode):
    tape, _, _, z = _tape()
    ex = tv.explore(tape, z)
    try:
        first = ex._repr_mimebundle_()
        assert WIDGET_VIEW in first
        assert first["text/plain"] == "tapeviz explorer (a live widget): run this cell to use it."
        assert _nested(first["image/svg+xml"]) == [_body(st.picture(ex.graph_targets, ex.state))]
        ex.controls["step"].value = 1  # the user moves the slider: the picture follows
        moved = ex._repr_mimebundle_()["image/svg+xml"]
        assert _nested(moved) == [_body(st.picture(ex.graph_targets, ex.state))]
        assert "Step 1/" in moved and moved != first["image/svg+xml"]
    finally:
        ex.close()


def test_interact_shows_its_slope_plot_above_the_graph(no_page_mode):
    def f(x=1.0):
        return x * x

    ex = tv.interact(f, x=(-2.0, 2.0))
    try:
        parts = _nested(ex._repr_mimebundle_()["image/svg+xml"])
        assert len(parts) == 2
        assert 'class="tv-slope-svg"' in ex._repr_mimebundle_()["image/svg+xml"]
        assert parts[1] == _body(st.picture(ex.graph_targets, ex.state))
    finally:
        ex.close()


def test_a_picture_that_fails_leaves_the_widget_alone(no_page_mode, monkeypatch):
    tape, _, _, z = _tape()
    ex = tv.explore(tape, z)
    try:

        def broken(*a, **k):
            raise RuntimeError("no picture today")

        monkeypatch.setattr(fallback.st, "picture", broken)
        with pytest.warns(UserWarning, match="no picture today"):
            bundle = ex._repr_mimebundle_()
        assert WIDGET_VIEW in bundle and "image/svg+xml" not in bundle
    finally:
        monkeypatch.undo()
        ex.close()


def test_plain_text_says_what_the_output_is_in_the_explorers_language(no_page_mode):
    tape, _, _, z = _tape()
    ex = tv.explore(tape, z, lang="zh")
    try:
        assert ex._repr_mimebundle_()["text/plain"] == say("fallback.text", "zh")
        assert "tapeviz" in say("fallback.text", "zh")
    finally:
        ex.close()


def test_jacobian_shows_its_heatmap_and_the_rows_pass(no_page_mode):
    tape, x, y, _ = _tape()
    ex = tv.explore(tv.jacobian(tape, y, x))
    try:
        svg = ex._repr_mimebundle_()["image/svg+xml"]
        png = base64.b64decode(re.search(r'href="data:image/png;base64,([^"]+)"', svg).group(1))
        assert png == base64.b64decode(ex.picker.src.partition(",")[2])
        assert _nested(svg) == [_body(st.picture(ex.explorer.graph_targets, ex.explorer.state))]
    finally:
        ex.close()


def test_history_shows_the_run_panel_and_a_picture_only_where_the_step_kept_one(no_page_mode):
    w = tf.Variable([0.5, -0.3], name="w")
    hist = tv.History()
    for step in range(3):
        with tv.GradientTape() as t:
            loss = tf.reduce_sum(w * w)
        hist.add(step, loss=loss, grads=t.gradient(loss, [w]), variables=[w], tape=t if step == 2 else None)
    ex = tv.explore(hist)
    try:
        parts = _nested(ex._repr_mimebundle_()["image/svg+xml"])
        assert len(parts) == 2 and 'class="tv-run"' in ex._repr_mimebundle_()["image/svg+xml"]
        ex.controls["train_step"].value = 0  # no picture kept there: the explorer is hidden
        svg = ex._repr_mimebundle_()["image/svg+xml"]
        assert len(_nested(svg)) == 1 and "at step 0" in svg
    finally:
        ex.close()


def test_page_mode_drops_the_widget_and_writes_the_stepping_page_or_the_pictures(monkeypatch):
    monkeypatch.setenv(fallback.PAGE_ENV, "1")
    tape, _, _, z = _tape()
    ex = tv.explore(tape, z)
    try:
        bundle = ex._repr_mimebundle_()
        assert WIDGET_VIEW not in bundle and "image/svg+xml" in bundle
        page = bundle["text/html"]
        make = fallback._fragment_maker()
        if make is None:  # this tapeviz has no stepping page yet: the picture, inline
            assert "data-tv-static='pictures'" in page and st.picture(ex.graph_targets, ex.state) in page
        else:
            assert "data-tv-static='stepping'" in page
            assert make(ex.graph_targets, ex.state, targets=None) in page
    finally:
        ex.close()


def test_page_mode_is_only_the_exact_flag():
    assert fallback.page_mode({fallback.PAGE_ENV: "1"})
    assert not fallback.page_mode({fallback.PAGE_ENV: "0"}) and not fallback.page_mode({})


def test_sizes_of_svg_and_png():
    assert fallback.svg_size('<svg width="30pt" height="15pt">') == pytest.approx((40.0, 20.0))
    assert fallback.svg_size('<svg width="30" height="15px">') == (30.0, 15.0)
    assert fallback.svg_size('<svg viewBox="0 0 12 8" width="100%">') == (12.0, 8.0)
    with pytest.raises(ValueError, match="no <svg>"):
        fallback.svg_size("<div>")
    with pytest.raises(ValueError, match="neither"):
        fallback.svg_size("<svg>")
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAYAAACddGYaAAAAEElEQVR4nGNgYGD4z8DAAAAIAAH/3ndJ3gAAAABJRU5ErkJggg=="
    )
    assert fallback.png_size(png) == (3, 2)
    with pytest.raises(ValueError, match="not a PNG"):
        fallback.png_size(b"GIF89a")


def test_static_svg_stacks_its_parts_and_refuses_none():
    a = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="5"><rect width="10" height="5"/></svg>'
    b = '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="4" viewBox="0 0 40 8"><circle r="1"/></svg>'
    out = fallback.static_svg([fallback.Part(svg=a), fallback.Part(svg=b)])
    xml.dom.minidom.parseString(out)
    assert 'width="20" height="17"' in out  # the widest part; 5 + 8 (gap) + 4
    assert '<svg x="0" y="13" width="20" height="4" viewBox="0 0 40 8">' in out
    assert 'viewBox="0 0 10 5"' in out  # a part without one gets its own size as viewBox
    with pytest.raises(ValueError, match="no picture"):
        fallback.static_svg([])


def test_static_html_holds_each_part_inline():
    svg = '<svg width="2" height="2"></svg>'
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAYAAACddGYaAAAAEElEQVR4nGNgYGD4z8DAAAAIAAH/3ndJ3gAAAABJRU5ErkJggg=="
    )
    out = fallback.static_html([fallback.Part(svg=svg), fallback.Part(png=png)])
    assert out.startswith("<div class='tv-static' data-tv-static='pictures'>")
    assert svg in out and "src='data:image/png;base64," in out

"""A loop's default folding in the explorer (issue 32): the explorer's first picture of an
episode is the file's default (the model called once per step one box, ``ac ×20``, the
loop's own ops folded), and closing the opened loop, by its frame or the groups list,
brings that picture back exactly; other choices of groups stay what they name."""

import numpy as np
import pytest
import tensorflow as tf
from front_end import send_from_page
from gallery_models import actor_critic

import tapeviz as tv
from tapeviz.api import _explored
from tapeviz.explorer import state as st
from tapeviz.output.svg import to_svg
from tapeviz.picture.themes import explorer_theme


@pytest.fixture(scope="module")
def episode():
    return actor_critic(steps=20)


def boxes(ex, state) -> dict:
    """What a picture shows, box by box: each box's id and full name (its tooltip)."""
    return {b.gid: b.tip for b in ex.view(state).scene.boxes.values()}


def first_lines(ex, state) -> list[str]:
    return sorted(t.split("\n")[0] for t in st.tips(ex, state).values())


def test_the_explorer_opens_on_the_files_default_folding(episode):
    ex = _explored(episode.tape, episode.loss, None)
    s = ex.initial()
    fresh = tv.view(episode.tape, episode.loss, theme=explorer_theme("light"))
    assert boxes(ex, s) == {b.gid: b.tip for b in fresh.scene.boxes.values()}
    assert len(boxes(ex, s)) <= 30
    assert "ac ×20 (steps 0–19)" in first_lines(ex, s) and "LogSoftmax ×20" in first_lines(ex, s)
    # the same groups chosen by hand draw what they name: every step's ops, unfolded
    chosen = s.replace(collapsed=ex.collapsed(s))
    assert "LogSoftmax ×20" not in first_lines(ex, chosen) and len(boxes(ex, chosen)) > 60


def test_closing_an_opened_loop_brings_back_its_default_folding(episode):
    ex = _explored(episode.tape, episode.loss, None)
    s = ex.initial()
    default_svg = st.picture(ex, s)
    ac = next(k for k, t in st.tips(ex, s).items() if t.startswith("ac ×20"))
    hit = st.box_at(ex, s, ac)
    assert hit == ("open", "ac")
    opened = st.open_group(ex, s, "ac")
    assert opened.collapsed is not None and "ac" not in opened.collapsed
    assert "ac ×19 (steps 1–19)" in first_lines(ex, opened)
    third = st.open_step(ex, opened, 3)
    assert third.repeat_step == 3 and "ac ×16 (steps 4–19)" in first_lines(ex, third)
    for where in (opened, third):
        closed = st.close_group(ex, where, "ac")
        assert closed.collapsed is None, "the default's groups are the default"
        assert boxes(ex, closed) == boxes(ex, s)
        assert first_lines(ex, closed) == first_lines(ex, s)
        assert st.picture(ex, closed) == default_svg
    # the numbers on the folded picture stay TensorFlow's
    view = ex.view(st.close_group(ex, third, "ac"))
    for v, g in zip(episode.variables, episode.tape.gradient(episode.loss, episode.variables), strict=True):
        np.testing.assert_array_equal(view.flow.grad(v), tf.convert_to_tensor(g).numpy())


def test_closing_a_loop_opened_by_expand_gives_the_plain_default(episode):
    ex = _explored(episode.tape, episode.loss, None)
    plain = ex.initial()
    s = ex.initial(expand="ac", repeat_step=2)
    assert "ac ×17 (steps 3–19)" in first_lines(ex, s)
    closed = st.close_group(ex, s, "ac")
    assert closed.collapsed is None and closed.expand == () and closed.depth is None
    assert boxes(ex, closed) == boxes(ex, plain)
    assert st.picture(ex, closed) == st.picture(ex, plain)
    # opening it again starts from the groups a click opens, at the step last shown
    again = st.open_group(ex, closed, "ac")
    assert "ac ×17 (steps 3–19)" in first_lines(ex, again)


def test_other_choices_of_groups_stay_chosen(episode):
    ex = _explored(episode.tape, episode.loss, None)
    s = ex.initial()
    inside = st.open_group(ex, st.open_group(ex, s, "ac"), "ac/torso")
    assert "ac/torso" not in inside.collapsed
    # closing the inner layer again is the loop opened, not the default
    back = st.close_group(ex, inside, "ac/torso")
    assert back.collapsed == st.open_group(ex, s, "ac").collapsed
    # what a closed group holds changes nothing: closing the loop with its layer open is the default
    assert st.close_group(ex, inside, "ac").collapsed is None
    everything = st.with_groups(ex, s, frozenset())
    assert everything.collapsed == frozenset()


def test_the_canvas_frame_click_closes_the_loop_to_its_default_picture(episode):
    ex = tv.explore(episode.tape, episode.loss)
    try:
        first = ex.canvas.value
        listed = ex.controls["layers"].value
        ac = next(k for k, t in ex.canvas.tips.items() if t.startswith("ac ×20"))
        send_from_page(ex.canvas, {"event": "click", "id": ac})
        assert "group-ac" in ex.canvas.value and ex.canvas.value != first
        assert ("layer", "ac") in ex.controls["layers"].value
        rest = next(k for k, t in ex.canvas.tips.items() if t.startswith("ac ×19"))
        send_from_page(ex.canvas, {"event": "click", "id": rest})
        assert ex.state.repeat_step == 1
        send_from_page(ex.canvas, {"event": "click", "id": "group-ac"})
        assert ex.state.collapsed is None
        assert ex.canvas.value == first
        assert ex.controls["layers"].value == listed
        # the groups list: ticking the loop opens it, unticking closes it to the default
        ex.controls["layers"].value = (*listed, ("layer", "ac"))
        assert "group-ac" in ex.canvas.value
        ex.controls["layers"].value = listed
        assert ex.state.collapsed is None and ex.canvas.value == first
    finally:
        ex.close()


def test_a_fresh_default_svg_is_what_the_closed_loop_draws(episode):
    ex = _explored(episode.tape, episode.loss, None)
    s = st.close_group(ex, st.open_group(ex, ex.initial(), "ac"), "ac")
    fresh = tv.view(episode.tape, episode.loss, theme=explorer_theme("light"))
    texts = sorted(t.split(">")[1].split("<")[0] for t in to_svg(fresh, fit=True, frames=True).split("<text")[1:])
    assert sorted(t.split(">")[1].split("<")[0] for t in st.picture(ex, s).split("<text")[1:]) == texts

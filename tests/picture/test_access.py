"""What keyboards and screen readers get from a picture (picture/access.py, written by
output/svg.py): each box's role and spoken name (name, value, TF's gradient; en and zh),
the keys' order (the backward pass's), and groups as buttons that open and close."""

from __future__ import annotations

import re
from html import unescape

import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.api import _explored
from tapeviz.explorer import state as st
from tapeviz.picture.access import accessible, box_order
from tapeviz.picture.frames import group_frames, open_path
from tapeviz.picture.options import Options
from tapeviz.record.values import GRAD_NORM, format_value

_BOX = re.compile(r'<g id="((?:node|group)-[^"]*)"([^>]*)>')


def _attrs(markup: str) -> dict[str, dict[str, str]]:
    """{element id: {attribute: value}} of every box and frame in an SVG."""
    out = {}
    for m in _BOX.finditer(markup):
        out[unescape(m.group(1))] = {k: unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', m.group(2))}
    return out


def _seed():
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape(persistent=True) as tape:
        z = x**2 + tf.stop_gradient(y)
    return tape, x, y, z


@pytest.fixture(scope="module")
def seed():
    tape, x, y, z = _seed()
    ex = _explored(tape, z, None)
    state = ex.initial(**Options.of(None).in_file().keywords())
    return ex, state, tape, x, y, z


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_seed_boxes_are_named_with_tensorflow_s_numbers_in_the_backward_order(seed, lang):
    ex, state, tape, x, y, z = seed
    s = state.replace(lang=lang)
    g = ex.graph
    ids = {name: f"node-{g.node_of(t)}" for name, t in (("x", x), ("y", y), ("z", z))}
    box = _attrs(st.picture(ex, s))
    # the keys' order: z (the target), then the op its gradient reaches, then x; then the
    # boxes no step reaches (the stop_gradient and y), last drawn first
    order = sorted(box, key=lambda k: int(box[k]["data-tv-order"]))
    assert order[0] == ids["z"] and order[2] == ids["x"] and order[-1] == ids["y"]
    assert [int(box[k]["data-tv-order"]) for k in order] == list(range(len(box)))
    assert [box[k]["tabindex"] for k in order] == ["0"] + ["-1"] * (len(box) - 1)  # one Tab stop
    assert all(a["role"] == "img" and "aria-expanded" not in a for a in box.values())
    # the finished pass: x's name says TF's gradient, y's says None, z's its own value
    want = format_value(tape.gradient(z, x).numpy(), norm=GRAD_NORM)
    assert want == "4.0"
    word = {"en": "gradient", "zh": "梯度"}[lang]
    label = box[ids["x"]]["aria-label"]
    assert label.startswith("x") and f"{word} {want}" in label and "2.0" in label
    assert tape.gradient(z, y) is None and f"{word} None" in box[ids["y"]]["aria-label"]
    assert format_value(z.numpy()) in box[ids["z"]]["aria-label"]
    # before the gradient reaches x, its name says it has not arrived
    early = _attrs(st.picture(ex, s.replace(step=0)))
    not_yet = {"en": "not arrived yet", "zh": "尚未到达"}[lang]
    assert early[ids["x"]]["aria-label"].endswith(f"{word} {not_yet}")


def test_a_quiz_picture_names_no_hidden_gradient(seed):
    ex, state, tape, x, *_ = seed
    s = state.replace(quiz=True, answers=())
    label = _attrs(st.picture(ex, s))[f"node-{ex.graph.node_of(x)}"]["aria-label"]
    assert "4.0" not in label and label.endswith("gradient ?")


def _nested():
    import keras

    keras.utils.set_random_seed(0)
    block = keras.Sequential(
        [keras.layers.Dense(4, activation="tanh", name="a"), keras.layers.Dense(4, activation="tanh", name="b")],
        name="block",
    )
    model = keras.Sequential([keras.Input((3,)), block, keras.layers.Dense(1, name="head")], name="net")
    x = tf.constant(np.random.default_rng(0).normal(size=(2, 3)).astype("float32"))
    with tv.GradientTape(persistent=True) as tape:
        loss = tf.reduce_mean(model(x) ** 2)
    return tape, loss, model


def test_groups_are_buttons_and_frames_come_before_their_boxes():
    tape, loss, model = _nested()
    ex = tv.explore(tape, loss, theme="light", depth=1)
    try:
        gt = ex.graph_targets
        closed = _attrs(st.picture(gt, ex.state))
        net = closed["node-layer:net"]
        assert net["role"] == "button" and net["aria-expanded"] == "false" and net["data-tv-group"] == "net"
        assert net["aria-label"].startswith("net ") and ", closed group" in net["aria-label"]
        s = ex.state.replace(collapsed=frozenset({"net/head"}))
        opened = _attrs(st.picture(gt, s))
        frame = opened["group-net/block"]
        assert frame["role"] == "button" and frame["aria-expanded"] == "true" and frame["data-tv-group"] == "net/block"
        scene = gt.view(s).scene
        frames = group_frames(scene)
        order = box_order(scene, frames)
        assert set(order) == set(opened)
        # each frame comes just before the first of its boxes the keys reach (outer frames first)
        for f in frames:
            i = order.index(f"group-{f.gid}")
            first = next(k for k in order if k.startswith("node-") and f.gid in open_path(scene.display, k[5:]))
            assert i < order.index(first)
            assert all(k.startswith("group-") for k in order[i : order.index(first)])
        # the head's kernel is reached before the block's (its gradient arrives first)
        head = order.index("node-layer:net/head")
        assert head < min(i for i, k in enumerate(order) if k.startswith("node-") and "net/block" in str(opened[k]))
        acc = accessible(scene, frames)
        assert {a.order for a in acc.values()} == set(range(len(order)))
    finally:
        ex.close()

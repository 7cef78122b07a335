"""Placement, measured on the scene's geometry with the text metrics the SVG writer uses:
no label overlaps another label, covers a box it does not belong to, or leaves the canvas,
over every built-in example, real Keras models, generated programs, several steps, and
collapsed / expanded / show_all views in every theme."""

import importlib.util
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras_models import MODELS
from placement_check import check, problems
from random_programs import OPS, SHAPES, build

import tapeviz as tv
from tapeviz.examples import EXAMPLES
from tapeviz.picture.rows import CELL_WIDTH
from tapeviz.picture.scene import Scene
from tapeviz.picture.themes import explorer_theme

REPO = Path(__file__).resolve().parents[2]


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


VIEWS = [dict(), dict(show_all=True), dict(collapsed=True), dict(collapsed=False)]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_built_in_examples_in_every_view_and_theme(name):
    run = EXAMPLES[name].run()
    target = run.target if not isinstance(run.target, dict) else next(iter(run.target.values()))
    g, fl = run.tape.graph, tv.flow(run.tape, target)
    for kw in VIEWS:
        check(Scene(g, fl, **kw), (name, kw))
    for theme in ("dark", "projector"):
        check(Scene(g, fl, theme=theme), (name, theme))
    explorer = explorer_theme("light")  # the explorer's canvas: 9 pt text, frames drawn, a cell wide
    check(Scene(g, fl, theme=explorer, page=CELL_WIDTH, frames=True), (name, "explorer"))


def small_cnn():
    """Conv2D -> BatchNormalization -> MaxPooling2D -> Conv2D -> GlobalAveragePooling2D ->
    Dropout -> Dense: the CNN of docs/pictures.md."""
    return _module("tapeviz_readme_pictures", REPO / "notebooks" / "img" / "regenerate.py").small_cnn_model()


def lstm():
    model = keras.Sequential([keras.Input((5, 3)), keras.layers.LSTM(4), keras.layers.Dense(2)], name="lstm")
    rng = np.random.default_rng(1)
    return model, (tf.constant(rng.normal(size=(2, 5, 3)).astype("float32")),), tf.constant([0, 1])


def training_step_tape(make):
    """One training step of the model `make` builds, on a tapeviz tape: (tape, loss)."""
    keras.utils.set_random_seed(0)
    model, args, y = make()
    model(*args)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tv.GradientTape() as tape:
        loss = loss_fn(y, model(*args, training=True))
    return tape, loss


@pytest.mark.parametrize("make", [small_cnn, lstm, *MODELS], ids=lambda m: m.__name__)
def test_keras_models_collapsed_and_expanded(make):
    tape, loss = training_step_tape(make)
    fl = tv.flow(tape, loss)
    for kw in VIEWS:
        check(Scene(tape.graph, fl, **kw), (make.__name__, kw))
    check(Scene(tape.graph, fl, collapsed=False, theme="projector"), (make.__name__, "projector"))


def test_generated_programs():
    rng = np.random.default_rng(7)
    for trial in range(12):
        leaves = []
        for _ in range(int(rng.integers(1, 4))):
            shape = SHAPES[int(rng.integers(len(SHAPES)))]
            value = rng.normal(size=shape).astype("float32")
            leaves.append(tf.Variable(value) if rng.random() < 0.7 else tf.constant(value))
        steps = [
            (OPS[int(rng.integers(len(OPS)))], int(rng.integers(99)), int(rng.integers(99)))
            for _ in range(int(rng.integers(3, 12)))
        ]
        steps = [s for s in steps if s[0] not in ("reset", "watch", "paused")]
        with tv.GradientTape(persistent=True) as tape:
            target = build(tape, [("variable", v) for v in leaves], steps, [int(rng.integers(99))])
        fl = tv.flow(tape, target)
        for kw in (dict(), dict(show_all=True)):
            check(Scene(tape.graph, fl, **kw), (trial, steps, kw))


def test_wide_fan_in_and_a_long_banded_graph():
    xs = [tf.Variable(float(i + 1), name=f"x{i}") for i in range(14)]
    with tv.GradientTape() as tape:
        total = tf.add_n([x * x for x in xs] + [x * 2.0 for x in xs])  # 28 edges into one op
    check(Scene(tape.graph, tv.flow(tape, total)), "fan-in 28")
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from bench_scale import tf_program
    finally:
        sys.path.pop(0)
    run, _ = tf_program(300)
    with tv.GradientTape() as tape:
        loss = run()
    fl = tv.flow(tape, loss)
    check(Scene(tape.graph, fl), "300 ops collapsed")
    check(Scene(tape.graph, fl, collapsed=False), "300 ops expanded, banded")


def test_long_titles_and_captions_wrap_inside_narrow_pictures():
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        y = x * x
    long = "a caption that is much longer than the picture is wide " * 6
    s = Scene(tape.graph, tv.flow(tape, y), title="一个很长的中文标题" * 8, caption=long)
    check(s, "long texts")
    assert len(s.caption_label.text.split("\n")) > 1 and len(s.title_label.text.split("\n")) > 1


def test_the_counter_sees_overlaps_and_escapes():
    """The measure itself: a label moved onto a box, onto another label and off the canvas is counted."""
    run = EXAMPLES["stop_gradient"].run()
    s = Scene(run.tape.graph, tv.flow(run.tape, run.target))
    assert problems(s) == {"label/label": [], "label/box": [], "outside": [], "frame/chrome": []}
    n, box = next(iter(s.boxes.items()))
    e, label = next((e, t) for e, t in s.edge_labels.items() if t.text)
    label.x, label.y = box.x + box.w / 2, box.y + box.h / 2
    found = problems(s)
    assert found["label/box"] and found["label/label"]  # on the box and on the box's own texts
    s.grads[n].x = -50.0
    assert problems(s)["outside"]
    # a group's frame (the explorer's canvas) across the caption, or through a gradient's text
    run = EXAMPLES["clip_in_training"].run()
    s = Scene(run.tape.graph, tv.flow(run.tape, run.target), theme=explorer_theme("light"), frames=True)
    assert s.frames and not problems(s)["frame/chrome"]
    top = max(s.frames, key=lambda f: f.y + f.h)
    s.caption_label.y = s.data_to_px(top.x, top.y + top.h)[1] + 5.0  # hanging down across the frame's top
    assert (top.gid, "caption") in problems(s)["frame/chrome"]
    n = next(n for n in s.boxes if s.grads[n].text)
    s.grads[n].text = "∂ " + "9" * 60  # wider than any frame around it
    assert any(what == f"gradient {n}" for _, what in problems(s)["frame/chrome"])


@pytest.mark.parametrize("wrap", [2, 3, 4, 7])
def test_wrap_folds_a_picture_into_rows_of_at_most_k_boxes(wrap, tmp_path):
    """The CNN pictures of docs/pictures.md use wrap=4 so that a page column shows them readably."""
    tape, loss = training_step_tape(small_cnn)
    wide, wrapped = tv.view(tape, loss, wrap=100), tv.view(tape, loss, wrap=wrap)  # one row / rows of k
    assert len({x for x, _ in wide.pos.values()}) > wrap  # the test needs a picture that wraps
    columns_per_row: dict[float, set] = {}
    for x, y in wrapped.pos.values():
        columns_per_row.setdefault(y, set()).add(x)
    rows = sorted(columns_per_row)
    assert len({x for x, _ in wrapped.pos.values()}) <= wrap
    assert wrapped.scene.lanes and len(rows) > len({y for _, y in wide.pos.values()})
    assert wrapped.scene.canvas[0] < wide.scene.canvas[0]
    check(wrapped.scene, ("cnn", "wrap", wrap))
    # the same boxes and the same numbers, only placed differently
    assert set(wrapped.pos) == set(wide.pos)
    assert {n: g.text for n, g in wrapped.scene.grads.items()} == {n: g.text for n, g in wide.scene.grads.items()}
    # kept by the views made from it, and by tv.save
    assert wrapped.expanded(wrapped.layers[0]).scene.wrap == wrap
    assert tv.save(tape, loss, tmp_path / "cnn.svg", wrap=wrap).exists()


@pytest.mark.parametrize("wrap", [0, 1, True, 2.5, "4"])
def test_wrap_refuses_what_is_not_a_row_length(wrap):
    tape, loss = training_step_tape(small_cnn)
    with pytest.raises(ValueError, match=r"wrap=.*the most boxes a row may hold"):
        tv.view(tape, loss, wrap=wrap)

"""Issue 20's "done when", on the architectures people bring after the tutorial
(tests/support/gallery_models.py: ResNet50, MobileNetV2, DenseNet121, EfficientNetB0, a subclassed
Transformer, a U-Net, a seq2seq LSTM, a GAN, a VAE). Every default picture:

- has at most 30 boxes;
- fits a 1,600 px page at full text size and is no wider than 3.5 x its height;
- cuts no title with "…" (a long name takes a second line) and has 0 overlaps (the
  placement checks of tests/support/placement_check.py, at the first, a middle and the last step);
- names each named box in its SVG <title> (hover shows the full path);

and the numbers it shows are TensorFlow's: the flow equals tape.gradient bit for bit.
Each model is built and recorded once per module (small inputs: ~15 s for all nine).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest
import tensorflow as tf
from gallery_models import GALLERY, MORE
from placement_check import check

import tapeviz as tv
from tapeviz.output.svg import to_svg
from tapeviz.picture import fonts
from tapeviz.picture.frames import frame_of
from tapeviz.picture.names import name_lines, short_names
from tapeviz.picture.rows import CELL_WIDTH, MAX_RATIO, PAGE_WIDTH, row_lengths, row_starts
from tapeviz.picture.scene import Scene
from tapeviz.picture.wording import box_names

MOST_BOXES = 30
ELLIPSIS = "…"
SVG = "{http://www.w3.org/2000/svg}"

MODELS = list(GALLERY)


@pytest.fixture(scope="module")
def recorded():
    """name -> (Step, GradientFlow, default Scene), each made once per module, on demand."""
    made: dict = {}

    def get(name: str):
        if name not in made:
            step = {**GALLERY, **MORE}[name]()
            fl = tv.flow(step.tape, step.loss)
            made[name] = (step, fl, Scene(step.tape.graph, fl))
        return made[name]

    return get


@pytest.mark.parametrize("name", MODELS)
def test_default_picture_has_at_most_30_boxes(recorded, name):
    _, _, scene = recorded(name)
    assert len(scene.boxes) <= MOST_BOXES, (name, len(scene.boxes))


@pytest.mark.parametrize("name", MODELS)
def test_default_picture_fits_a_page_and_is_not_a_strip(recorded, name):
    _, _, scene = recorded(name)
    width, height = scene.canvas
    assert width <= PAGE_WIDTH, (name, round(width))
    assert width <= MAX_RATIO * height, (name, round(width), round(height))


@pytest.mark.parametrize("name", MODELS)
def test_default_picture_frames_every_open_group_whole_and_named(recorded, name):
    """Each open group is a frame (one rectangle: it does not split across rows) with its
    short name on it, and no box of another group inside; a group left without a frame
    (its boxes among others') has its boxes named with its name."""
    from tapeviz.picture.frames import open_groups

    step, _, scene = recorded(name)
    opened = open_groups(scene.display)
    framed = {f.gid for f in scene.frames}
    assert framed | set(scene.unframed) == opened and not framed & set(scene.unframed)
    root = ET.fromstring(to_svg(scene).split("?>", 1)[1])
    drawn = {g.get("id") for g in root.iter(f"{SVG}g")}
    for f in scene.frames:
        assert not f.parts, (name, f.gid)
        assert f"group-{f.gid}" in drawn and f.name == scene.display.tree.groups[f.gid].name
        for n, b in scene.boxes.items():  # boxes inside the frame are the group's
            inside = f.x <= b.x and b.x + b.w <= f.x + f.w and f.y <= b.y and b.y + b.h <= f.y + f.h
            assert inside == (f.gid in _open_groups_of(scene, n)), (name, f.gid, n)


@pytest.mark.parametrize("name", MODELS)
def test_default_picture_frames_every_opened_group(recorded, name):
    """Every opened group of a file's default picture is a labelled frame: none is left
    unframed (its boxes among other groups' boxes)."""
    from tapeviz.picture.frames import open_groups

    _, _, scene = recorded(name)
    assert open_groups(scene.display) == {f.gid for f in scene.frames}, sorted(scene.unframed)
    assert not scene.unframed


def test_an_opened_decoder_is_a_frame(recorded):
    """seq2seq with expand="decoder": the opened decoder (and its cell) are frames in a file."""
    from tapeviz.picture.frames import open_groups

    step, fl, _ = recorded("seq2seq LSTM")
    scene = Scene(step.tape.graph, fl, options=tv.Options(expand=("decoder",)))
    assert "seq2seq/decoder" in {f.gid for f in scene.frames}, sorted(scene.unframed)
    assert open_groups(scene.display) == {f.gid for f in scene.frames} and not scene.unframed


@pytest.mark.parametrize("depth", [2, 3])
@pytest.mark.parametrize("name", MODELS)
def test_depth_pictures_frame_every_opened_group_nested_or_apart(recorded, name, depth):
    """depth= opens other groups than the default: each is a frame too, and two frames are
    nested or apart, never overlapping (no rows cut one, no other box sits in one)."""
    from tapeviz.picture.frames import open_groups

    step, fl, _ = recorded(name)
    scene = Scene(step.tape.graph, fl, options=tv.Options(depth=depth))
    assert open_groups(scene.display) == {f.gid for f in scene.frames}, (name, sorted(scene.unframed))
    for i, a in enumerate(scene.frames):
        assert not a.parts, (name, a.gid)
        for b in scene.frames[i + 1 :]:
            ax, ay, bx, by = (a.x, a.x + a.w), (a.y, a.y + a.h), (b.x, b.x + b.w), (b.y, b.y + b.h)
            apart = ax[1] <= bx[0] or bx[1] <= ax[0] or ay[1] <= by[0] or by[1] <= ay[0]
            a_in_b = bx[0] <= ax[0] and ax[1] <= bx[1] and by[0] <= ay[0] and ay[1] <= by[1]
            b_in_a = ax[0] <= bx[0] and bx[1] <= ax[1] and ay[0] <= by[0] and by[1] <= ay[1]
            assert apart or a_in_b or b_in_a, (name, depth, a.gid, b.gid)


def _open_groups_of(scene, n) -> set:
    from tapeviz.picture.frames import _open_path

    return set(_open_path(scene.display, n))


@pytest.mark.parametrize("name", MODELS)
def test_default_picture_opens_no_layer_of_keras_own(recorded, name):
    """Dense, Conv, BatchNormalization, MultiHeadAttention... are one box each by default,
    their variables inside (no op drawn from inside one, no loose kernel beside it)."""
    _, _, scene = recorded(name)
    display = scene.display
    tree = display.tree
    builtin = {gid for gid, g in tree.groups.items() if g.builtin}
    assert builtin or name == "WGAN-GP", name  # WGAN-GP's critic is differentiated: closed anyway
    for n in display.nx:
        if display.nx.nodes[n].get("kind") != "layer":
            assert not builtin & set(tree.paths.get(n, ())), (name, n, tree.paths.get(n))


def test_gan_reads_z_gen_disc_loss_in_frames(recorded):
    _, _, scene = recorded("GAN")
    titles = {n: t.text for n, (t, _, _) in scene.labels.items()}
    frames = {f.name: f for f in scene.frames}
    assert set(frames) == {"gen", "disc"}
    inside = {
        name: sorted(
            titles[n]
            for n, b in scene.boxes.items()
            if f.x <= b.x and b.x + b.w <= f.x + f.w and f.y <= b.y and b.y + b.h <= f.y + f.h
        )
        for name, f in frames.items()
    }
    assert inside == {"gen": ["dense", "dense_1"], "disc": ["dense_2", "dense_3"]}
    d = scene.display.nx
    order = {titles[n]: i for i, n in enumerate(n for n in __import__("networkx").topological_sort(d))}
    assert order["z"] < order["dense"] < order["dense_1"] < order["dense_2"] < order["dense_3"] < order["loss"]


def test_mobilenet_conv_with_no_bias_is_one_box_with_its_kernel():
    """MobileNetV2's Conv1 has no bias: one op and its kernel, still the layer's box."""
    step = GALLERY["MobileNetV2"]()
    scene = Scene(step.tape.graph, tv.flow(step.tape, step.loss))
    titles = {t.text for t, _, _ in scene.labels.values()}
    assert {"Conv1", "Conv_1"} <= titles and not any(t.endswith("kernel") for t in titles)
    assert "Conv2D" not in titles


def test_the_transformer_names_its_blocks(recorded):
    _, _, scene = recorded("Transformer")
    frames = {f.name for f in scene.frames}
    assert {"block0", "block1", "block2"} <= frames


def test_a_48_block_decoder_shows_its_blocks_as_one_run(recorded):
    """Alike runs are found before boxes are counted: 48 decoder blocks are h0–47, not one
    box for the whole model (and the numbers are TensorFlow's)."""
    step, fl, scene = recorded("GPT-48")
    titles = [t.text.replace("\n", " ") for t, _, _ in scene.labels.values()]
    assert "h0–47 (48\u00a0alike)" in titles, titles
    assert len(scene.boxes) <= MOST_BOXES and "gpt" not in titles
    for v, g in zip(step.variables[:6], step.tape.gradient(step.loss, step.variables[:6]), strict=True):
        np.testing.assert_array_equal(fl.grad(v), tf.convert_to_tensor(g).numpy())


def test_an_episode_of_20_steps_is_one_repeat(recorded):
    """The model called once per step of an RL episode inside one tape, and each step's
    ops, are one box each for all 20 steps: at most 30 boxes, at most 1,600 px tall, the
    numbers TensorFlow's."""
    step, fl, scene = recorded("actor-critic")
    titles = [t.text.replace("\n", " ") for t, _, _ in scene.labels.values()]
    assert len(scene.boxes) <= MOST_BOXES and scene.canvas[1] <= 1600, (len(scene.boxes), scene.canvas)
    assert "ac ×20 (steps 0–19)" in titles and any(t.endswith("×20") and t != titles[0] for t in titles), titles
    check(scene, "actor-critic")
    for v, g in zip(step.variables, step.tape.gradient(step.loss, step.variables), strict=True):
        np.testing.assert_array_equal(fl.grad(v), tf.convert_to_tensor(g).numpy())


def test_what_gathers_a_folded_loop_says_how_many_and_what(recorded):
    """The values a loop collected stay visible where they are gathered: tf.stack of the
    episode's 20 log-probs is titled by the list the user collected them in, and by the
    count the tape recorded (its op type in the tooltip)."""
    step, _, scene = recorded("actor-critic")
    titles = {t.text.replace("\n", " "): n for n, (t, _, _) in scene.labels.items()}
    assert {"stack of 20 log_probs", "stack of 20 values"} <= set(titles), sorted(titles)
    g = step.tape.graph.nx
    n = titles["stack of 20 log_probs"]
    assert g.nodes[n]["op_type"] == "Pack" and g.in_degree(n) == 20
    assert {g.nodes[u]["listed"] for u in g.predecessors(n)} == {"log_probs"}
    assert scene.boxes[n].tip == "stack of 20 log_probs: Pack"


def test_a_loop_gathered_with_no_list_is_named_by_its_repeat():
    """tf.add_n over a generator (no list in the frame names the values): the gatherer is
    named by the op its repeat box draws, and its sum is TensorFlow's."""
    w = tf.Variable([1.0, 2.0, 3.0])
    with tv.GradientTape() as tape:
        loss = 0.5 * tf.add_n([tf.reduce_sum(tf.square(w * float(t))) for t in range(12)])
    fl = tv.flow(tape, loss)
    scene = Scene(tape.graph, fl)
    titles = [t.text.replace("\n", " ") for t, _, _ in scene.labels.values()]
    assert any(t.startswith("Σ 12 ") for t in titles), titles
    np.testing.assert_allclose(fl.grad(w), tape.gradient(loss, w).numpy())


def test_a_one_layer_model_still_shows_its_ops():
    """Fewer than about 6 boxes with the layer closed: the ops are the lesson."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    x = tf.ones((1, 3))
    with tv.GradientTape() as tape:
        loss = tf.reduce_sum(model(x))
    scene = Scene(tape.graph, tv.flow(tape, loss))
    titles = {t.text for t, _, _ in scene.labels.values()}
    assert {"MatMul", "BiasAdd"} <= titles


@pytest.mark.parametrize("name", GALLERY)
def test_default_picture_cuts_no_title_and_has_no_overlaps(recorded, name):
    _, _, scene = recorded(name)
    cut = [trio[0].text for trio in scene.labels.values() if ELLIPSIS in trio[0].text]
    assert cut == [], (name, cut[:5])
    check(scene, name)


@pytest.mark.parametrize("name", ["Transformer", "GAN", "VAE"])
def test_each_named_box_shows_its_full_path_on_hover(recorded, name):
    step, _, scene = recorded(name)
    root = ET.fromstring(to_svg(scene).split("?>", 1)[1])
    tips = {g.get("id"): g.find(f"{SVG}title") for g in root.iter(f"{SVG}g") if g.get("id", "").startswith("node-")}
    names = box_names(step.tape.graph, scene.display, scene.lang, scene.unframed)
    for n, box in scene.boxes.items():
        title, full = names[n]
        tip = tips[box.gid]
        assert (tip.text if tip is not None else "") == box.tip == full
        # a path ends with its title; an op titled by the call that ran it tells its type
        assert full.endswith(title) or full.endswith(": " + step.tape.graph.nx.nodes[n]["op_type"]), (title, full)
    # Keras paths: in one frame, different paths have different titles (the frame's name tells the rest)
    framed = {
        names[n][1]: (frame_of(scene.display, n, scene.unframed), names[n][0])
        for n in scene.boxes
        if "/" in names[n][1]
    }
    paths = {full: t for full, t in framed.items() if ": " not in full}
    assert paths and len(set(paths.values())) == len(paths)
    assert all(len(t) < len(full) for full, (_, t) in paths.items())  # the model's prefix dropped


#: Rows of the explorer's picture and its height as shown (CSS px) at 9 pt, in rows that keep
#: every open group's frame whole (a block gets rows of its own: the Transformer's three
#: blocks of seven boxes take three rows each at three boxes a row).
EXPLORER_ROWS = {"Transformer": (12, 2547), "U-Net": (7, 1643), "VAE": (6, 2336)}


@pytest.mark.parametrize("name", list(EXPLORER_ROWS))
def test_explorer_picture_fits_a_notebook_cell_with_no_text_below_9_pt(recorded, name):
    """The explorer lays its picture out for a cell (CELL_WIDTH), so it shows whole, not
    scrolled and not shrunk, with every text at 9 pt or more as shown (a flatter, larger
    scale than a file's 8 / 6.5 pt, on columns that grew less than the text): three boxes a
    row, the rows measured, no taller than measured (with 5% to spare); frames off the caption
    and no overlaps (test_placement.check, which looks at the frames' names too)."""
    from svg_text import CSS_PX_PER_PT, shown_text_pt, shown_width_pt

    from tapeviz.explorer.state import picture
    from tapeviz.picture.themes import EXPLORER_TEXT

    step, _, page_scene = recorded(name)
    explorer = tv.explore(step.tape, step.loss)
    scene = explorer.view.scene
    assert scene.canvas[0] <= CELL_WIDTH < page_scene.canvas[0], (name, round(scene.canvas[0]))
    assert set(scene.boxes) == set(page_scene.boxes)  # the same picture, in more rows
    svg = picture(explorer.graph_targets, explorer.state)
    assert min(shown_text_pt(svg) + shown_text_pt(svg, shrunk=True)) >= EXPLORER_TEXT - 0.01, name
    rows, height = EXPLORER_ROWS[name]
    columns = {round(x) for x, _ in scene.pos.values()}
    assert len(columns) == 3 and len(scene.frames) > 0, (name, columns)
    assert not [t.text for t, _, _ in scene.labels.values() if ELLIPSIS in t.text], name  # titles whole
    assert len(_row_firsts(scene)) == rows, name
    shown_h = shown_width_pt(svg) * CSS_PX_PER_PT * scene.canvas[1] / scene.canvas[0]
    assert shown_h <= 1.05 * height, (name, round(shown_h), height)
    check(scene, (name, "explorer"))


def _row_firsts(scene) -> set:
    """The first column of each row the scene folded its layout into: a box's column in
    the layered layout, less its column in its row."""
    from tapeviz.picture.layout import layered_layout

    unfolded = layered_layout(scene.display.nx)
    return {round(unfolded[n][0]) - round(x) for n, (x, _) in scene.pos.items()}


@pytest.mark.parametrize("name", GALLERY)
def test_flow_equals_tape_gradient_bit_for_bit(recorded, name):
    step, fl, _ = recorded(name)
    grads = step.tape.gradient(step.loss, step.variables)
    assert step.variables and all(g is not None for g in grads)
    for v, g in zip(step.variables, grads, strict=True):
        np.testing.assert_array_equal(fl.grad(v), tf.convert_to_tensor(g).numpy(), err_msg=v.path)


# --------------------------------------------------------------------------- names


def test_short_names_keep_the_shortest_suffix_no_other_path_ends_with():
    paths = {
        1: "generator/dense/kernel",
        2: "discriminator/dense_2/kernel",
        3: "generator/dense/bias",
        4: "encoder/block1/attention",
        5: "encoder/block2/attention",
        6: "loss",
        7: "encoder/my_dense",
        8: "encoder/dense",  # "dense" alone: no other path ends with it ("…/dense/kernel" ends with kernel)
    }
    assert short_names(paths) == {
        1: "dense/kernel",
        2: "dense_2/kernel",
        3: "bias",
        4: "block1/attention",
        5: "block2/attention",
        6: "loss",
        7: "my_dense",
        8: "dense",
    }
    assert short_names({1: "a/b", 2: "a/b"}) == {1: "b", 2: "b"}  # one layer called twice: the caller tells them apart
    assert short_names({}) == {}


def test_a_long_name_takes_a_second_line_broken_after_a_separator():
    width, size = 100.0, 8.0  # a box's text width at the default theme's size (points)
    assert name_lines("dense", width, size, "bold") == ["dense"]
    lines = name_lines("sparse_categorical_crossentropy", width, size, "bold")
    assert lines == ["sparse_categorical_", "crossentropy"]
    assert all(fonts.text_width(line, size, "bold") <= width for line in lines)
    lines = name_lines("encoder/block1/multi_head_attention", width, size, "bold")
    assert "".join(lines) == "encoder/block1/multi_head_attention" and len(lines) == 2
    assert lines[0].endswith(("/", "_"))
    assert name_lines("conv2_block2–3 (2 alike)", width, size, "bold") == ["conv2_block2–3", "(2 alike)"]
    # no separator: broken where the line is full; only a name longer than two lines is cut
    lines = name_lines("x" * 30, width, size, "bold")
    assert "".join(lines) == "x" * 30 and len(lines) == 2
    lines = name_lines("x" * 80, width, size, "bold")
    assert len(lines) == 2 and lines[1].endswith(ELLIPSIS)
    # a separator in the last ellipsis' width of the line: taken when the name would be cut
    # otherwise (the explorer's 9.5 pt titles in its 113 pt boxes), as a file's 8 pt title breaks
    head = fonts.text_width("sparse_categorical_", 9.5, "bold")
    width = head + fonts.text_width(ELLIPSIS, 9.5, "bold") / 2
    assert name_lines("sparse_categorical_crossentropy", width, 9.5, "bold") == ["sparse_categorical_", "crossentropy"]


def test_an_op_the_users_call_ran_is_titled_by_that_call():
    """The call as written, short; an operator's symbol; the op type where it says the same."""
    from tapeviz.picture.names import call_title

    assert call_title("tf.nn.sparse_softmax_cross_entropy_with_logits", "SparseSoftmaxCrossEntropyWithLogits") == (
        "sparse_softmax_cross_entropy"
    )
    assert call_title(None, "AddV2") == "+"  # a + b: no public function on the stack
    assert call_title("tf.multiply", "Mul") == "*"  # a * b goes through tf.multiply
    assert call_title("tf.reduce_sum", "Sum") == "reduce_sum"
    assert call_title("tf.matmul", "MatMul") == "MatMul" and call_title("tf.square", "Square") == "Square"
    assert call_title(None, "Relu") == "Relu"  # no call known: the op type
    assert call_title("tf.clip_by_norm", "Mul") == "clip_by_norm"  # not an operator's call


def test_a_picture_titles_a_users_tf_call_and_keeps_the_op_type_below():
    """tf.nn.sparse_softmax_cross_entropy_with_logits is one op: its box says the call (on
    two lines if need be, never cut), the op type under it and in its tooltip; a + b is +."""
    w = tf.Variable([[0.5, -1.0, 2.0]])
    with tv.GradientTape() as tape:
        logits = w + tf.constant([[0.1, 0.2, 0.3]])
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1], logits=logits * 2.0))
    scene = Scene(tape.graph, tv.flow(tape, loss))
    shown = {t.text.replace("\n", ""): (s.text, scene.boxes[n].tip) for n, (t, s, _) in scene.labels.items()}
    sub, tip = shown["sparse_softmax_cross_entropy"]
    assert sub.startswith("SparseSoftmax")  # under a two-line title, the op type may be cut: the tooltip has it
    assert tip == "tf.nn.sparse_softmax_cross_entropy_with_logits: SparseSoftmaxCrossEntropyWithLogits"
    assert shown["*"][0] == "Mul" and shown["loss"][0] == "reduce_mean"  # a named op: the call under its name
    assert shown["logits"][0] == "AddV2"  # a name the user gave wins; the op type below it
    assert not [t for t in shown if ELLIPSIS in t]


def test_ops_in_a_subclassed_models_call_are_titled_by_the_call_too():
    """``a + b`` inside a model's own ``call`` is ``+`` as at top level (the op type in the
    tooltip); the ops of Keras's own layers keep their op types."""
    import keras

    class Twin(keras.Model):
        def __init__(self):
            super().__init__(name="twin")
            self.d1 = keras.layers.Dense(3, name="d1")
            self.d2 = keras.layers.Dense(3, name="d2")

        def call(self, x):
            a, b = self.d1(x), self.d2(x)
            return tf.reduce_sum(a + b * 2.0)

    keras.utils.set_random_seed(0)
    model = Twin()
    x = tf.ones((2, 4))
    model(x)
    with tv.GradientTape() as tape:
        loss = model(x) + 1.0
    fl = tv.flow(tape, loss)
    scene = Scene(tape.graph, fl, options=tv.Options(expand=("twin", "d1")))
    shown = {t.text.replace("\n", ""): (s.text, scene.boxes[n].tip) for n, (t, s, _) in scene.labels.items()}
    assert shown["+"] == ("AddV2", "+: AddV2") and shown["*"][1] == "tf.multiply: Mul"
    assert shown["reduce_sum"][1] == "tf.reduce_sum: Sum"
    assert {"MatMul", "BiasAdd"} <= set(shown), sorted(shown)  # inside Dense d1: op types
    assert "AddV2" not in shown
    grads = tape.gradient(loss, model.trainable_variables)
    for v, g in zip(model.trainable_variables, grads, strict=True):
        np.testing.assert_array_equal(fl.grad(v), g.numpy())


def test_row_lengths_are_balanced_and_each_tried_once():
    assert row_lengths(26) == [26, 13, 9, 7, 6, 5, 4, 3, 2]
    assert row_lengths(9) == [9, 5, 3, 2]  # 3 rows of 3, not 4 + 4 + 1
    assert row_lengths(2) == [2]
    assert row_lengths(1) == [2]  # at least two columns a row (wrap_bands leaves one row alone)


def test_rows_are_cut_where_the_fewest_edges_return():
    """Each edge crossing a cut is a lane back under its row. A chain 0..5 with a skip 1 -> 4,
    in two rows of at most 4: every cut (before column 2, 3 or 4) crosses 2 edges, so the
    even one wins; with a second skip 0 -> 3, the cut before 4 crosses fewest."""
    import networkx as nx

    g = nx.DiGraph([(i, i + 1) for i in range(5)] + [(1, 4)])
    pos = {i: (float(i), 0.0) for i in range(6)}
    assert row_starts(g, pos, 4) == [0, 3]
    g.add_edge(0, 3)  # crossings before columns 2, 3, 4: 3, 3, 2
    assert row_starts(g, pos, 4) == [0, 4]
    assert row_starts(g, pos, 6) == [0]  # one row holds it
    assert row_starts(g, pos, 2) == [0, 2, 4]  # no choice


def test_edges_of_one_source_back_to_the_next_row_share_a_lane():
    """A bundle from one source runs back as one line (one lane) and splits near its
    targets; another source's edge gets a lane of its own."""
    import networkx as nx

    from tapeviz.picture.rows import wrap_bands

    g = nx.DiGraph([(0, 2), (0, 3), (1, 2), (2, 3)])
    pos = {0: (0.0, 0.0), 1: (1.0, 0.0), 2: (2.0, 0.0), 3: (3.0, -1.0)}
    _, _, lanes = wrap_bands(g, pos, {}, columns=2)
    assert lanes[(0, 2)] == lanes[(0, 3)]
    assert lanes[(1, 2)] != lanes[(0, 2)]


def test_an_edge_to_the_next_row_goes_down_from_its_source():
    """An edge between neighbouring rows leaves its bend points along the rest of its row
    behind: it runs from its source down to its lane and on to its target. One that
    crosses two rows keeps those in its own row only and one lane, under the row above its
    target: it passes the row between down the right margin."""
    import networkx as nx

    from tapeviz.picture.rows import wrap_bands

    g = nx.DiGraph([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (0, 3), (0, 5)])
    pos = {i: (float(i), 0.0) for i in range(6)}
    routes = {(0, 3): [(1.0, -1.0), (2.0, -1.0)], (0, 5): [(x, -2.0) for x in (1.0, 2.0, 3.0, 4.0)]}
    _, new_routes, lanes = wrap_bands(g, pos, routes, columns=2)
    assert new_routes[(0, 3)] == [] and len(lanes[(0, 3)]) == 1
    assert [x for x, _ in new_routes[(0, 5)]] == [1.0] and len(lanes[(0, 5)]) == 1
    assert lanes[(0, 3)][0].passed == 0 and lanes[(0, 5)][0].passed == 1


@pytest.mark.parametrize("name", MODELS)
def test_default_picture_marks_no_nan_origin(recorded, name):
    """Issue 34: no "NaN starts here" mark on the gallery: TF's gradients are finite; the few
    that are exactly zero (MobileNetV2's last BatchNorm betas on 1×1 maps, WGAN-GP's critic
    score bias under mean(fake) - mean(real)) are sums that come to 0, no op's fault: no mark."""
    from tapeviz.gradients.origin import flow_origin

    step, fl, _ = recorded(name)
    # TF's gradients, as the flow replayed them (equal to tape.gradient bit for bit: see above;
    # some gallery tapes are not persistent and were asked once already)
    grads = [g for g in fl.gradients().values() if g is not None]
    assert grads and all(np.all(np.isfinite(g)) for g in grads)
    assert flow_origin(fl) is None


def test_explorer_frames_are_whole_where_that_keeps_the_picture_short(recorded):
    """The explorer lays its picture out by the flow; where that draws a frame in pieces
    (EfficientNetB0: the inputs' boxes inside the model's rectangle), it takes the file's
    whole frames instead, unless they make it more than WHOLE_TALLER times as tall (the
    VAE: a strip, 1.35 times as tall), where the pieces stay."""
    for name in ("EfficientNetB0", "VAE"):
        step, _, _ = recorded(name)
        scene = tv.explore(step.tape, step.loss).view.scene
        pieces = [f.gid for f in scene.frames if f.parts]
        if name == "EfficientNetB0":
            assert scene.frames and not pieces, name
        else:
            assert pieces == ["vae"] and scene.canvas[1] <= 2.5 * scene.canvas[0], name  # not a strip
        check(scene, (name, "explorer"))

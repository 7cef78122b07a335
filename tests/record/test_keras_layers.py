"""Keras 3 layer coverage: for each layer, a tiny model (input -> layer -> small Dense head
-> scalar loss) trained one step under a tapeviz tape.

For every trainable variable the flow must give exactly what ``tape.gradient`` gives
(bit for bit), on a persistent tape and on a non-persistent one with ``tv.flow`` called
before or after the user's own ``tape.gradient``; that call must return what a plain
``tf.GradientTape`` returns on the same model and inputs. The picture exports (SVG, PNG)
must work. The "Keras layer coverage" table of docs/models.md is written from these results.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import keras
import networkx as nx
import numpy as np
import pytest
import tensorflow as tf
from diagnosis_check import check_no_false_diagnosis
from PIL import Image

import tapeviz as tv
from tapeviz.picture.opening import layer_calls, layer_groups
from tapeviz.picture.visibility import collapse
from tapeviz.record import hooks

L = keras.layers


def _normal(*shape) -> tf.Tensor:
    return tf.constant(np.random.default_rng(0).normal(size=shape).astype("float32"))


def _head(*layers, out: int = 1) -> list:
    """The layers under test, flattened into a one-unit Dense head."""
    return [*layers, L.Flatten(), L.Dense(out, name="head")]


def _mha():
    q = keras.Input((3, 4))
    h = L.MultiHeadAttention(num_heads=2, key_dim=2, name="mha")(q, q)
    return keras.Model(q, L.Dense(1, name="head")(L.Flatten()(h)), name="attention"), _normal(2, 3, 4)


# name -> (input shape, layers, input tensor); inputs are kept tiny so each case takes
# well under a second.
def _case(name: str):
    if name == "MultiHeadAttention":
        return _mha()
    if name == "Embedding":
        ids = tf.constant([[1, 2, 1], [4, 0, 1]], dtype=tf.int32)  # index 1 twice: summed slices
        return keras.Sequential([keras.Input((3,), dtype="int32"), *_head(L.Embedding(5, 2))]), ids
    shape, layers = {
        "Dense": ((3,), [L.Dense(2, activation="tanh")]),
        "Conv1D": ((5, 2), [L.Conv1D(2, 3, activation="relu")]),
        "Conv2D": ((4, 4, 1), [L.Conv2D(2, 3)]),
        "Conv3D": ((3, 3, 3, 1), [L.Conv3D(2, 2)]),
        "Conv2DTranspose": ((3, 3, 1), [L.Conv2DTranspose(2, 2, strides=2)]),
        "SeparableConv2D": ((4, 4, 2), [L.SeparableConv2D(2, 3)]),
        "DepthwiseConv2D": ((4, 4, 2), [L.DepthwiseConv2D(3)]),
        "SimpleRNN": ((3, 2), [L.SimpleRNN(3)]),
        "LSTM": ((3, 2), [L.LSTM(3)]),
        "GRU": ((3, 2), [L.GRU(3)]),
        "Bidirectional": ((3, 2), [L.Bidirectional(L.LSTM(2))]),
        "ConvLSTM2D": ((2, 3, 3, 1), [L.ConvLSTM2D(2, 2)]),
        "LSTM->GRU": ((3, 2), [L.LSTM(3, return_sequences=True), L.GRU(2)]),
        "LayerNormalization": ((4,), [L.Dense(4), L.LayerNormalization()]),
        "BatchNormalization": ((4,), [L.Dense(4), L.BatchNormalization()]),
        "GroupNormalization": ((4,), [L.Dense(4), L.GroupNormalization(groups=2)]),
        "PReLU": ((4,), [L.Dense(4), L.PReLU()]),
        "EinsumDense": ((4,), [L.EinsumDense("ab,bc->ac", output_shape=3, bias_axes="c")]),
        "TimeDistributed": ((3, 4), [L.TimeDistributed(L.Dense(2))]),
    }[name]
    return keras.Sequential([keras.Input(shape), *_head(*layers)]), _normal(2, *shape)


LAYERS = [
    "Dense",
    "Conv1D",
    "Conv2D",
    "Conv3D",
    "Conv2DTranspose",
    "SeparableConv2D",
    "DepthwiseConv2D",
    "SimpleRNN",
    "LSTM",
    "GRU",
    "Bidirectional",
    "ConvLSTM2D",
    "LSTM->GRU",
    "LayerNormalization",
    "BatchNormalization",
    "GroupNormalization",
    "MultiHeadAttention",
    "PReLU",
    "Embedding",
    "EinsumDense",
    "TimeDistributed",
]


def build(name: str):
    """The model of one case, seeded and built before any tape runs."""
    keras.utils.set_random_seed(0)
    model, x = _case(name)
    model(x)
    return model, x


def loss_of(model, x) -> tf.Tensor:
    # training=True: BatchNormalization uses the batch's statistics (and updates its
    # moving ones), as in a training step.
    return tf.reduce_mean(tf.square(model(x, training=True)))


def dense(g) -> np.ndarray:
    return tf.convert_to_tensor(g).numpy()  # IndexedSlices (Embedding) made dense


def reference_gradients(model, x) -> list[np.ndarray]:
    """What a plain tf.GradientTape gives on the same model and inputs."""
    with tf.GradientTape() as tape:
        loss = loss_of(model, x)
    return [dense(g) for g in tape.gradient(loss, model.trainable_variables)]


def assert_flow_matches(fl, model, grads) -> None:
    assert len(grads) == len(model.trainable_variables) > 0
    for v, want in zip(model.trainable_variables, grads, strict=True):
        got = fl.grad(v)
        assert got is not None, v.path
        assert got.dtype == want.dtype and got.shape == want.shape, v.path
        assert np.array_equal(got, want), v.path  # bit for bit
        check_no_false_diagnosis(fl, v, want, v.path)


@pytest.mark.slow
@pytest.mark.parametrize("name", LAYERS)
def test_flow_equals_tape_gradient_on_a_persistent_tape(name):
    model, x = build(name)
    with tv.GradientTape(persistent=True) as tape:
        loss = loss_of(model, x)
    fl = tv.flow(tape, loss)
    grads = tape.gradient(loss, model.trainable_variables)
    assert_flow_matches(fl, model, [dense(g) for g in grads])
    for v, g in zip(model.trainable_variables, grads, strict=True):
        assert type(fl.grad_tensor(v)) is type(g), v.path  # IndexedSlices stay IndexedSlices
        # The per-edge contributions are what TF adds up into the total.
        parts = [c for _, c in fl.contributions(v)]
        assert parts, v.path
        np.testing.assert_allclose(np.sum(parts, axis=0), dense(g), rtol=1e-5, atol=1e-6, err_msg=v.path)
    # Every variable is named by its Keras path.
    g = fl.graph
    for v in model.trainable_variables:
        assert g.nx.nodes[g.node_of(v)]["name"] == v.path
    assert not hooks.hooks_installed()


@pytest.mark.slow
@pytest.mark.parametrize("order", ["flow first", "gradient first"])
@pytest.mark.parametrize("name", LAYERS)
def test_non_persistent_tape_gives_the_plain_tapes_gradients(name, order):
    model, x = build(name)
    want = reference_gradients(model, x)
    with tv.GradientTape() as tape:
        loss = loss_of(model, x)
    if order == "flow first":
        fl = tv.flow(tape, loss)
        user = tape.gradient(loss, model.trainable_variables)
    else:
        user = tape.gradient(loss, model.trainable_variables)
        fl = tv.flow(tape, loss)
    for v, got, w in zip(model.trainable_variables, user, want, strict=True):
        assert np.array_equal(dense(got), w), v.path  # the user's call is untouched
    assert_flow_matches(fl, model, want)
    assert not hooks.hooks_installed()


@pytest.mark.slow
@pytest.mark.parametrize("name", LAYERS)
def test_pictures_export(name, tmp_path):
    model, x = build(name)
    with tv.GradientTape() as tape:
        loss = loss_of(model, x)
    svg, png = tmp_path / "x.svg", tmp_path / "x.png"
    tv.save(tape, loss, svg)
    tv.save(tape, loss, png)
    root = ET.parse(svg).getroot()
    text = " ".join(t for t in root.itertext())
    assert "loss" in text  # the target is named after the Python variable
    with Image.open(png) as im:
        im.verify()
        assert im.size[0] > 100 and im.size[1] > 100


def test_layers_built_by_their_first_call_inside_the_tape():
    """The usual first training step: the model's variables are created inside the block.
    The handle a VarHandleOp creates is the variable: one node for it, not a second one
    holding the same tensor (whose gradient no edge would carry)."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([L.LSTM(2), L.Dense(1, name="head")])  # not built yet
    x = _normal(2, 3, 2)
    with tv.GradientTape(persistent=True) as tape:
        loss = loss_of(model, x)
    fl = tv.flow(tape, loss)
    g = fl.graph
    assert not [n for n, d in g.nx.nodes(data=True) if d.get("op_type") == "VarHandleOp"]
    for v in model.trainable_variables:
        node = g.node_of(v)
        assert g.nx.nodes[node]["name"] == v.path
        want = tape.gradient(loss, v).numpy()
        assert np.array_equal(fl.grad(v), want), v.path
        assert np.array_equal(fl.grad(v.value.handle), want), v.path  # the handle is the variable
        # The initial value is written into it (stateful), its reads carry the gradient.
        inits = [
            (u, w, k)
            for u, w, k in g.nx.out_edges(node, keys=True)
            if g.nx.nodes[w].get("op_type") == "AssignVariableOp"
        ]
        assert inits and all(fl.edge_reason[e].reason == "stateful" for e in inits), v.path
        parts = [c for _, c in fl.contributions(v)]
        np.testing.assert_allclose(np.sum(parts, axis=0), want, rtol=1e-5, atol=1e-6, err_msg=v.path)


# --------------------------------------------------------------------------- collapsed pictures


class _SharedLayer(keras.Model):
    """One Dense called twice (shared weights), with an op of the model between the calls."""

    def __init__(self):
        super().__init__(name="shared")
        self.inner = L.Dense(3, name="inner")
        self.head = L.Dense(1, name="head")

    def call(self, x):
        return self.head(self.inner(tf.tanh(self.inner(x))))


def _mixed_precision_model():
    """Keras casts the input, and the float16 output of one layer for a float32 layer, in
    the model's own scope: the model's ops sit on both sides of a layer."""
    before = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((3,)), L.Dense(3), L.Dense(1, dtype="float32")], name="mp")
        x = _normal(2, 3)
        model(x)
    finally:
        keras.mixed_precision.set_global_policy(before)
    return model, x


def _shared_layer_model():
    keras.utils.set_random_seed(0)
    model, x = _SharedLayer(), _normal(2, 3)
    model(x)
    return model, x


@pytest.mark.parametrize("make", [_mixed_precision_model, _shared_layer_model], ids=["mixed precision", "shared layer"])
def test_collapsed_picture_of_a_layer_left_and_entered_again(make, tmp_path):
    """Collapsing such a layer into one box would draw edges out of it and back in (a
    cycle the layered layout cannot place): each call of the layer gets a box."""
    model, x = make()
    with tv.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(tf.square(model(x, training=True)))
    fl = tv.flow(tape, loss)
    for v in model.trainable_variables:
        assert np.array_equal(fl.grad(v), dense(tape.gradient(loss, v))), v.path
    view = tv.view(tape, loss, collapsed=True)
    shown = view.display.nx
    assert nx.is_directed_acyclic_graph(shown)
    boxes = [d for _, d in shown.nodes(data=True) if d.get("kind") == "layer"]
    tree = view.display.tree
    innermost = {gid for gid in view.layers if not tree.groups[gid].children}
    assert {d["layer"] for d in boxes} == innermost  # every layer (innermost group) is collapsed
    tv.save(tape, loss, tmp_path / "x.svg", collapsed=True)
    if make is _shared_layer_model:
        calls = sorted(d["call"] for d in boxes if d["layer"] == "shared/inner")
        assert calls == [0, 1]
        assert "inner (call 2)" in " ".join(ET.parse(tmp_path / "x.svg").getroot().itertext())


def test_layer_calls_leave_layers_open_when_boxes_would_still_close_a_cycle():
    """Boxes join a call's ops that no path links: here layer G's call 0 feeds H's call 1
    and H's call 1 feeds G's call 0 through different ops. Those layers stay expanded."""
    g = nx.MultiDiGraph()
    scope = {"x": "", "y": "", "h0": "H", "z": "", "h": "H", "g": "G", "gp": "G", "w": "", "hp": "H"}
    for n, s in scope.items():
        g.add_node(n, kind="op" if s or n in "zw" else "input", scope=s)
    for u, v in [("x", "h0"), ("h0", "z"), ("z", "h"), ("h", "g"), ("y", "gp"), ("gp", "hp"), ("h0", "w"), ("w", "hp")]:
        g.add_edge(u, v, key=0)
    groups = layer_groups(g)
    assert layer_calls(g, groups) == {"h0": 0, "h": 1, "hp": 1, "g": 0, "gp": 0}
    shown = collapse(g, collapsed=True)
    assert nx.is_directed_acyclic_graph(shown.nx)
    assert shown.collapsed == set()


def test_loop_in_a_tf_function_called_inside_the_tape(tmp_path):
    """The call op's forward function also returns what its backward pass needs: for a
    loop (tf.while_loop, as Keras's recurrent layers run under tf.function), TensorList
    accumulators (dtype variant). Their gradients are no arrays: the step shows None for
    them instead of failing to convert them. (A Keras LSTM under tf.function fails the
    same way; its tracing costs ~5 s, so the loop is written out here.)"""
    keras.utils.set_random_seed(0)
    layer = L.Dense(2, name="step")
    x = _normal(2, 2)
    layer(x)

    @tf.function
    def forward(t):
        return tf.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, tf.tanh(layer(h))), (0, t))[1]

    with tv.GradientTape(persistent=True) as tape:
        loss = tf.reduce_mean(tf.square(forward(x)))
    fl = tv.flow(tape, loss)
    for v in layer.trainable_variables:
        assert np.array_equal(fl.grad(v), dense(tape.gradient(loss, v))), v.path
    (call,) = [s for s in fl.steps if fl.graph.nx.nodes[s.node].get("function")]
    kinds = [None if t is None else t.dtype for t in call.tf_grad]
    assert tf.variant in kinds
    assert [g is None for g in call.grad] == [k in (None, tf.variant, tf.resource) for k in kinds]
    tv.save(tape, loss, tmp_path / "x.svg")
    tv.save(tape, loss, tmp_path / "x.png")


def _coverage_rows() -> dict[str, list[str]]:
    """docs/models.md's "Keras layer coverage" table: layer -> its cells."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "models.md").read_text()
    section = text.split("## Keras layer coverage", 1)[1].split("Also checked", 1)[0]
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return {cells[0].strip(): [c.strip() for c in cells] for cells in rows[1:]}


def test_coverage_table_lists_exactly_the_layers_tested_here():
    """docs/models.md's "Keras layer coverage" table is written from these tests' results."""
    table = _coverage_rows()
    assert list(table) == LAYERS
    assert {cells[1] for cells in table.values()} == {"works"}


@pytest.mark.slow
@pytest.mark.parametrize("name", LAYERS)
def test_coverage_row_counts_are_measured(name):
    """The table's Ops and Boxes columns are what this model records and draws by default
    (on the TensorFlow the table names: other versions' Keras runs other ops)."""
    if not tf.__version__.startswith("2.21."):
        pytest.skip(f"docs/models.md's counts are TF 2.21's; this is TF {tf.__version__}")
    model, x = build(name)
    with tv.GradientTape() as tape:
        loss = loss_of(model, x)
    display = tv.view(tape, loss).display
    row = _coverage_rows()[name]
    assert (int(row[2]), int(row[3])) == (len(tape.graph.capture.ops), display.nx.number_of_nodes()), row

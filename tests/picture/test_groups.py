"""The hierarchy of groups (issue 20, items 1-4): pictures read like the architecture.

Keras layer paths nest (a model's layers, a TransformerBlock's MultiHeadAttention and its
projections), flat functional models group by shared name prefixes (ResNet50's
conv3 -> conv3_block2), TF API calls and Keras losses are one box each, a model's own ops
stay ops, a group of one is no group; the default opens the tree to the deepest level
that shows at most 30 boxes, ``depth=`` / ``expand=`` choose otherwise, and no number on
the picture changes (the flow is still tape.gradient, bit for bit).
"""

from __future__ import annotations

import keras
import networkx as nx
import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.picture.groups import build_tree
from tapeviz.picture.wording import node_title

MOST_BOXES = 30


@pytest.fixture
def made(recorded):
    """name -> (Step, GradientFlow), each recorded once per module (picture/conftest.py)."""
    return lambda name: recorded(name)[:2]


def boxes(view) -> dict:
    """Display node -> its title, as the picture writes it."""
    return {n: node_title(view.graph, n, view.display) for n in view.display.nx}


def groups_drawn(view) -> set[str]:
    """The groups drawn as boxes (each group of a run of alike blocks counts)."""
    out = set()
    runs = {run.id: run for run in view.display.runs.values()}
    for _, d in view.display.nx.nodes(data=True):
        if d.get("kind") == "layer":
            out.update(runs[d["layer"]].groups if d.get("alike") else [d["layer"]])
    return out


def runs_drawn(view) -> set[str]:
    return {d["layer"] for _, d in view.display.nx.nodes(data=True) if d.get("alike")}


def same_as_tape(step, fl) -> None:
    for v, want in zip(step.variables, step.tape.gradient(step.loss, step.variables), strict=True):
        got = fl.grad(v)
        want = tf.convert_to_tensor(want).numpy()
        assert got.dtype == want.dtype and np.array_equal(got, want), v.path


# ----------------------------------------------------------------------------- the tree


@pytest.mark.parametrize(
    ("name", "chain"),
    [
        (
            "ResNet50",
            ["resnet50", "resnet50/conv3", "resnet50/conv3/conv3_block2", "resnet50/conv3/conv3_block2/conv3_block2_1"],
        ),
        ("MobileNetV2", ["mobilenetv2_1.00_32/block_5"]),
        ("DenseNet121", ["densenet121/conv4", "densenet121/conv4/conv4_block12"]),
        (
            "Transformer (named layers)",
            ["encoder", "encoder/block1", "encoder/block1/attention", "encoder/block1/attention/query"],
        ),
    ],
)
def test_the_tree_follows_stages_blocks_and_layers_inside_layers(made, name, chain):
    step, fl = made(name)
    view = tv.view(step.tape, step.loss)
    tree = view.display.tree
    for parent, child in zip(chain, chain[1:], strict=False):
        assert tree.groups[child].parent == parent
    assert all(tree.groups[g].level == i + tree.groups[chain[0]].level for i, g in enumerate(chain))
    # parents first, every group once
    order = [g.id for g in tree.walk()]
    assert sorted(order) == sorted(tree.groups) and all(
        order.index(g.parent) < order.index(g.id) for g in tree.walk() if g.parent
    )


@pytest.mark.parametrize("name", ["ResNet50", "MobileNetV2", "DenseNet121", "Transformer", "GAN"])
def test_default_opens_the_deepest_level_with_at_most_30_boxes_and_keeps_the_numbers(made, name):
    step, fl = made(name)
    view = tv.view(step.tape, step.loss)
    n = view.display.nx.number_of_nodes()
    assert n <= MOST_BOXES, n
    deeper = tv.view(
        step.tape, step.loss, expand=[g for g in groups_drawn(view) if view.display.tree.groups[g].kind == "block"][:1]
    )
    assert deeper.display.nx.number_of_nodes() >= n
    same_as_tape(step, fl)


def test_resnet50_opens_to_its_blocks_and_depth_chooses_the_level(made):
    step, fl = made("ResNet50")
    view = tv.view(step.tape, step.loss)
    drawn = groups_drawn(view)
    assert {
        f"resnet50/conv{s}/conv{s}_block{b}" for s, n in ((2, 3), (3, 4), (4, 6), (5, 3)) for b in range(1, n + 1)
    } <= drawn
    stages = groups_drawn(tv.view(step.tape, step.loss, depth=2))
    assert {"resnet50/conv2", "resnet50/conv3", "resnet50/conv4", "resnet50/conv5"} <= stages
    whole = tv.view(step.tape, step.loss, depth=1)
    assert groups_drawn(whole) == {"resnet50", "sparse_categorical_crossentropy"}  # the model, and the loss
    assert whole.display.nx.number_of_nodes() <= 5
    # a group box's gradient is the one TF computed for its variables
    box = "layer:resnet50/conv3/conv3_block1"
    kernels = [m for m in view.display.members[box] if view.graph.nx.nodes[m]["kind"] == "variable"]
    assert kernels and all(
        np.array_equal(
            fl.grad(m), fl.grad(step.tape.graph.capture.variables[view.graph.nx.nodes[m]["handle"]].variable)
        )
        for m in kernels[:3]
    )


def test_alike_blocks_are_one_box_and_its_numbers_are_tensorflows(made):
    """ResNet50's identity blocks conv3_block2..4 (the same ops and shapes, each feeding only
    the next) are one box "conv3_block2–4 (3 alike)": its input is block 2's, its output
    block 4's, its gradient line the norm of all their variables, as tape.gradient gives them."""
    step, fl = made("ResNet50")
    view = tv.view(step.tape, step.loss)
    assert runs_drawn(view) == {
        "resnet50/conv2/conv2_block2–3",
        "resnet50/conv3/conv3_block2–4",
        "resnet50/conv4/conv4_block2–6",
        "resnet50/conv5/conv5_block2–3",
    }
    box = "layer:resnet50/conv3/conv3_block2–4"
    assert boxes(view)[box] == "conv3_block2–4 (3\u00a0alike)"
    assert view.display.nx.number_of_nodes() == 18
    members = set(view.display.members[box])
    for b in (2, 3, 4):
        assert {n for n, p in view.display.tree.paths.items() if f"resnet50/conv3/conv3_block{b}" in p} <= members
    assert [u for u, _ in view.display.nx.in_edges(box)] == ["layer:resnet50/conv3/conv3_block1"]
    g = step.tape.graph.nx
    variables = [g.nodes[m]["variable"] for m in members if g.nodes[m]["kind"] == "variable"]
    squares = [float(np.sum(np.square(t.numpy().astype(np.float64)))) for t in step.tape.gradient(step.loss, variables)]
    text = view.scene.grads[box].text
    assert f"{np.sqrt(sum(squares)):.3g}" in text and f"over {len(variables)} variables" in text, text
    # opening one block of a run breaks the run around it
    opened = tv.view(step.tape, step.loss, expand=["conv3_block3"])
    assert "resnet50/conv3/conv3_block2–4" not in runs_drawn(opened)
    assert {"resnet50/conv3/conv3_block2", "resnet50/conv3/conv3_block4"} <= groups_drawn(opened)
    same_as_tape(step, fl)


def test_expand_opens_a_block_and_the_groups_holding_it(made):
    step, fl = made("ResNet50")
    view = tv.view(step.tape, step.loss, depth=2, expand=["conv3_block2"])
    drawn = groups_drawn(view)
    assert "resnet50/conv3" not in drawn and "resnet50/conv3/conv3_block2" not in drawn  # opened, with its stage
    assert {
        "resnet50/conv3/conv3_block1",
        "resnet50/conv3/conv3_block3",
        "resnet50/conv3/conv3_block4",
        "resnet50/conv2",
    } <= drawn  # the rest as they were (blocks 3 and 4, alike, as one box)
    assert "resnet50/conv3/conv3_block3–4" in runs_drawn(view)
    assert "resnet50/conv3/conv3_block2/conv3_block2_1" in drawn  # its units as boxes
    assert "AddV2" in boxes(view).values()  # the residual add of the block, an op
    assert nx.is_directed_acyclic_graph(view.display.nx)
    # the same on a GraphView
    again = tv.view(step.tape, step.loss, depth=2).expanded("conv3_block2")
    assert groups_drawn(again) == drawn


def test_transformer_depth_and_expand(made):
    step, fl = made("Transformer (named layers)")
    default = tv.view(step.tape, step.loss)
    assert {"encoder/block1/attention", "encoder/block2/attention", "encoder/block3/attention"} <= groups_drawn(default)
    blocks = tv.view(step.tape, step.loss, depth=2)
    assert {"encoder/block1", "encoder/block2", "encoder/block3"} <= groups_drawn(blocks)
    assert runs_drawn(blocks) == {"encoder/block1–3"}  # three alike blocks in a chain: one box
    opened = tv.view(step.tape, step.loss, depth=2, expand=["block2/attention"])
    drawn = groups_drawn(opened)
    assert {"encoder/block1", "encoder/block3", "encoder/block2/attention/query"} <= drawn
    assert "encoder/block2" not in drawn and "encoder/block2/attention" not in drawn
    assert "Softmax" in boxes(opened).values()  # attention's own ops, between its projections
    same_as_tape(step, fl)


def test_ops_in_a_models_own_call_are_ops_not_a_box_named_after_the_model(made):
    """The residual x + attention(x) and the positional add run in the model's (or the
    block's) own scope: drawn as ops, never as a box titled 'encoder (call 2)'."""
    step, fl = made("Transformer (named layers)")
    for view in (tv.view(step.tape, step.loss), tv.view(step.tape, step.loss, depth=3)):
        titles = boxes(view)
        group_titles = [t for n, t in titles.items() if view.display.nx.nodes[n].get("kind") == "layer"]
        assert not any(t.startswith("encoder") for t in group_titles), group_titles
        assert "+" in titles.values()  # the add written in the call, titled as written (AddV2 in the tooltip)
    everything = tv.view(step.tape, step.loss, collapsed=False)
    residuals = [
        n
        for n, d in everything.display.nx.nodes(data=True)
        if d.get("op_type") == "AddV2" and d.get("scope") == "encoder/block1"
    ]
    assert len(residuals) == 2


def test_gan_loss_is_one_box_named_after_the_loss_and_opens_like_a_group(made):
    step, fl = made("GAN")
    view = tv.view(step.tape, step.loss)
    titles = boxes(view)
    assert "binary_crossentropy" in titles.values()
    loss_box = next(n for n, t in titles.items() if t == "binary_crossentropy")
    assert view.display.nx.nodes[loss_box]["group_kind"] == "loss"
    assert not {"Log1p", "Exp", "Select", "ZerosLike"} & set(titles.values())
    opened = tv.view(step.tape, step.loss, expand=["binary_crossentropy"])
    assert {"Log1p", "Exp"} <= set(boxes(opened).values())
    assert "binary_crossentropy" not in groups_drawn(opened)
    same_as_tape(step, fl)


def test_keras_loss_functions_and_compute_loss_are_one_box_each():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3), keras.layers.Dense(1)], name="mlp")
    model.compile(loss="mse")
    x, y = tf.random.normal((4, 2), seed=1), tf.random.normal((4, 1), seed=2)
    with tv.GradientTape(persistent=True) as tape:
        p = model(x)
        loss = (
            tf.reduce_mean(keras.losses.mean_squared_error(y, p))
            + keras.losses.MeanAbsoluteError()(y, p)
            + model.compute_loss(x=x, y=y, y_pred=p)
        )
    view = tv.view(tape, loss)
    kinds = {d["name"]: d["group_kind"] for _, d in view.display.nx.nodes(data=True) if d.get("kind") == "layer"}
    losses = {name: kind for name, kind in kinds.items() if kind == "loss"}
    assert losses == {"mean_squared_error": "loss", "mean_absolute_error": "loss", "mse": "loss"}
    assert {kinds[n] for n in set(kinds) - set(losses)} == {"layer"} and len(kinds) == 5  # two Dense: a box each
    fl = tv.flow(tape, loss)
    for v in model.trainable_variables:
        assert np.array_equal(fl.grad(v), tape.gradient(loss, v).numpy())


def test_a_group_of_one_is_no_group():
    """A ReLU layer is its Relu op; tf.pow(x, 2) is its Pow op (x beside it), titled as the operator."""
    x = tf.Variable([1.0, -2.0])
    model = keras.Sequential(
        [keras.Input((2,)), keras.layers.Dense(2), keras.layers.ReLU(name="act"), keras.layers.Dense(1)]
    )
    with tv.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(model(x[None, :])) + tf.reduce_sum(tf.pow(x, 2.0))
    view = tv.view(tape, loss, collapsed=False)
    tree = view.display.tree
    assert not any(g.name in ("act", "tf.pow") for g in tree.groups.values())
    assert {"Relu", "**"} <= set(boxes(view).values())


# ----------------------------------------------------------------------------- name prefixes


def _flat_model(names: list[str]) -> nx.MultiDiGraph:
    """A chain of ops, two per layer, each layer a scope of model 'm'."""
    g = nx.MultiDiGraph()
    prev = None
    for i, name in enumerate(names):
        for j in range(2):
            n = f"op{i}_{j}"
            g.add_node(n, kind="op", scope=f"m/{name}", op_index=2 * i + j)
            if prev is not None:
                g.add_edge(prev, n, key=0)
            prev = n
    return g


def _tree_of(names):
    g = _flat_model(names)
    return build_tree(g, g.nodes, list(g))


def test_prefix_groups_need_consecutive_layers_and_a_stage_or_block_name():
    tree = _tree_of(
        [
            "conv1_conv",
            "conv1_bn",
            "conv2_block1_1_conv",
            "conv2_block1_2_conv",
            "conv2_block2_1_conv",
            "dense",
            "dense_1",
            "dense_2",
            "block_1_expand",
            "block_1_project",
        ]
    )
    ids = set(tree.groups)
    assert {"m/conv1", "m/conv2", "m/conv2/conv2_block1", "m/block_1"} <= ids
    assert "m/conv2/conv2_block2" not in ids  # a group of one layer is no group
    assert not any(g.name == "dense" and g.children for g in tree.groups.values())  # dense_1 is not part of a 'dense'
    split = _tree_of(["conv3_block1_conv", "pool", "conv3_block1_bn"])
    assert "m/conv3" not in split.groups and "m/conv3_block1" not in split.groups  # not consecutive


def test_a_deep_tree_is_built_without_recursion():
    """2,000 nested scopes (twice Python's recursion limit), each holding an op and the next."""
    g = nx.MultiDiGraph()
    scope = ""
    for i in range(2000):
        scope = f"{scope}/s{i}" if scope else f"s{i}"
        g.add_node(f"op{i}", kind="op", scope=scope, op_index=i)
    g.add_node("last", kind="op", scope=scope, op_index=2000)
    tree = build_tree(g, g.nodes, list(g))
    assert tree.depth == 2000 and len(tree.walk()) == 2000
    assert tree.paths["last"] == tree.paths["op1999"] and len(tree.paths["last"]) == 2000


# ----------------------------------------------------------------------------- the options


def test_depth_and_expand_reach_every_entry_point(made, tmp_path):
    step, fl = made("Transformer (named layers)")
    blocks = {"encoder/block1", "encoder/block2", "encoder/block3"}
    assert blocks <= groups_drawn(tv.view(step.tape, step.loss, depth=2))
    fig = tv.draw(step.tape, step.loss, depth=2)
    assert fig is not None
    svg = tv.save(step.tape, step.loss, tmp_path / "t.svg", depth=2, expand="block2").read_text()
    # block1 and block3 are boxes; block2 opened is a frame with its name, around its layers
    assert ">block1<" in svg and ">block3<" in svg and 'id="group-encoder/block2"' in svg
    assert 'id="node-layer:encoder/block2"' not in svg and 'id="node-layer:encoder/block2/attention"' in svg
    ex = tv.explore(step.tape, step.loss, depth=2, expand=["block2"])
    assert blocks - {"encoder/block2"} <= set(
        ex.graph_targets.collapsed(ex.state)
    ) and "encoder/block2" not in ex.graph_targets.collapsed(ex.state)
    page = tv.export_html(step.tape, step.loss, tmp_path / "t.html", depth=1)
    assert page.exists()


def test_explorer_lists_the_tree_indented_and_ticking_opens_ancestors(made):
    step, fl = made("Transformer (named layers)")
    ex = tv.explore(step.tape, step.loss, depth=2)
    w = ex.controls["layers"]
    labels = dict((v, k) for k, v in w.options)
    assert labels[("layer", "encoder")] == "encoder"
    assert labels[("layer", "encoder/block2/attention")] == "\u00a0" * 6 + "block2/attention"  # unique
    ticked = set(w.value) | {("layer", "encoder/block2/attention")}
    w.value = tuple(ticked)
    closed = ex.graph_targets.collapsed(ex.state)
    assert "encoder/block2" not in closed and "encoder/block2/attention" not in closed
    assert ("layer", "encoder/block2") in w.value
    w.value = tuple(x for x in w.value if x != ("layer", "encoder/block2"))  # untick: what it holds closes too
    closed = ex.graph_targets.collapsed(ex.state)
    assert {"encoder/block2", "encoder/block2/attention"} <= set(closed)


def test_bad_depth_and_unknown_or_ambiguous_groups_say_what_to_pass(made):
    step, fl = made("Transformer (named layers)")
    with pytest.raises(ValueError, match="whole number of levels"):
        tv.view(step.tape, step.loss, depth=0)
    with pytest.raises(ValueError, match="No group named 'nope'; groups are"):
        tv.view(step.tape, step.loss, expand=["nope"])
    with pytest.raises(ValueError, match=r"ambiguous.*encoder/block1/attention"):
        tv.view(step.tape, step.loss, expand=["attention"])
    with pytest.raises(ValueError, match="not both"):
        tv.view(step.tape, step.loss, depth=2, collapsed=True)


def test_cli_depth_and_expand(tmp_path):
    from tapeviz import cli

    assert cli.main(["export", "clip_by_norm", "-o", str(tmp_path / "a.svg"), "--depth", "1"]) == 0
    assert cli.main(["export", "clip_by_norm", "-o", str(tmp_path / "b.svg"), "--expand", "tf.clip_by_norm"]) == 0
    a, b = (tmp_path / "a.svg").read_text(), (tmp_path / "b.svg").read_text()
    assert ">clip_by_norm<" in a and ">clip_by_norm<" not in b
    assert cli.main(["export", "clip_by_norm", "-o", str(tmp_path / "c.svg"), "--expand", "nope"]) == 2

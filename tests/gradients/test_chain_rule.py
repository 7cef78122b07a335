"""The chain rule at each backward step: every line's numbers are TensorFlow's, and every
formula a line shows is checked here against the flow's own values (TF's registered
gradients), for the seed examples, a MatMul, a Keras Dense layer as one group, an op
without a table entry, and both languages."""

from __future__ import annotations

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz import examples
from tapeviz.gradients.chain_rule import ChainRule, symbol, symbols
from tapeviz.gradients.chain_steps import ChainStep, GroupStep, amount
from tapeviz.gradients.chain_words import link_line
from tapeviz.gradients.local_derivatives import TABLE, lookup
from tapeviz.messages import describe
from tapeviz.record.values import GRAD_NORM, format_value


def _links(rule: ChainRule):
    return [(step, link) for step in rule for link in step.links]


def _link_to(rule: ChainRule, name: str):
    """The (step, link) passing a gradient to the input called ``name``."""
    found = [(s, lk) for s, lk in _links(rule) if lk.input == name]
    assert found, f"no step passes a gradient to {name}: {rule.text()}"
    return found[0]


def _check_formulas_against_the_flow(rule: ChainRule) -> int:
    """Every link with a table entry: the formula, evaluated on the forward values the tape
    kept and the gradient TF passed in, gives TF's gradient along the edge."""
    fl = rule.flow
    g = fl.graph
    checked = 0
    for step, link in _links(rule):
        if link.partial is None or link.arriving is None:
            continue
        op = g.capture.ops[g.nx.nodes[step.node]["op_index"]]
        inputs = [g.tensors[t].value for t in op.inputs]
        attrs = dict(zip(op.attrs[::2], op.attrs[1::2], strict=True))
        entry = lookup(op.op_type)
        want = entry.expected(link.arriving.value, inputs, attrs, link.edge[2])
        np.testing.assert_allclose(want, link.result.value, rtol=1e-5, atol=1e-6, err_msg=str(link))
        checked += 1
    return checked


def test_x_squared_at_2_gives_4_with_the_rule_written_out():
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        z = x**2
    rule = tv.chain_rule(tape, z)
    step, link = _link_to(rule, "x")
    assert link_line(link, "z", step.name, "en") == "∂z/∂x = ∂z/∂z · ∂z/∂x = 1.0 × (2·x) = 1.0 × 4.0 = 4.0"
    assert float(link.result.value) == float(tape.gradient(z, x)) == 4.0
    assert float(link.local.value) == 4.0  # ∂z/∂x from TF's registered gradient, not from the formula
    assert rule[0].text() == "start at z = 4.0: ∂z/∂z = 1.0"
    assert rule[rule.flow.last_step].text() == "∂z/∂x = 4.0"
    assert _check_formulas_against_the_flow(rule) == 1


def test_the_basic_example_at_x_3_gives_6():
    run = examples.get("basic").run()
    rule = tv.chain_rule(run.tape, run.target)
    step, link = _link_to(rule, "x")
    assert step.text() == "∂y/∂x = ∂y/∂y · ∂y/∂x = 1.0 × (2·x) = 1.0 × 6.0 = 6.0"
    assert float(link.result.value) == float(run.printed["dy/dx"]) == 6.0
    assert "∂y/∂x = ∂y/∂y · ∂y/∂x = 1.0 × (2·x) = 1.0 × 6.0 = 6.0" in step.text("zh")


def test_sum_of_w_squared_is_2w():
    run = examples.get("scalar_over_tensor").run()
    rule = tv.chain_rule(run.tape, run.target)
    step, link = _link_to(rule, "w")
    w = run.extra["w"].numpy()
    np.testing.assert_array_equal(link.result.value, 2 * w)
    np.testing.assert_array_equal(link.result.value, run.printed["dloss/dw"])
    assert (
        step.text()
        == f"g_w = g_Pow ⊙ (2·w): (2×2) ⊙ (2×2) → 2×2, ‖g_w‖ {np.linalg.norm(2 * w):.3g} = [[2.0, 4.0], [6.0, 8.0]]"
    )
    sum_step = rule[1]
    assert sum_step.op == "Sum" and sum_step.links[0].partial.vjp == "broadcast({g})"
    assert "g_Pow = broadcast(g_loss): (scalar) → 2×2" in sum_step.text()
    # a lesson prints it in Chinese: the word for a shape of no axes is the catalogue's too
    assert "g_Pow = broadcast(g_loss)：(标量) → 2×2" in sum_step.text("zh")
    assert "scalar" not in rule.text("zh")
    assert _check_formulas_against_the_flow(rule) == 2


def test_the_persistent_tapes_two_targets():
    run = examples.get("persistent").run()
    targets = run.extra["targets"]
    f1 = tv.chain_rule(run.tape, targets["f1"])
    f2 = tv.chain_rule(run.tape, targets["f2"])
    _, link1 = _link_to(f1, "x")
    assert link_line(link1, "f1", "Pow", "en") == "∂f1/∂x = ∂f1/∂Pow · ∂Pow/∂x = 1.0 × (2·x) = 1.0 × 6.0 = 6.0"
    assert float(link1.result.value) == float(run.printed["df1/dx"])
    step2, link2 = _link_to(f2, "x")
    assert link_line(link2, "f2", step2.name, "en") == "∂f2/∂x = ∂f2/∂f2 · ∂f2/∂x = 1.0 × (y) = 1.0 × 4.0 = 4.0"
    assert float(link2.result.value) == float(run.printed["df2/dx"])
    assert f1[0].text() == "start at f1 = 13.0: ∂f1/∂f1 = 1.0" and f2[0].text() == "start at f2 = 12.0: ∂f2/∂f2 = 1.0"
    # x is read twice, once on f1's path only: f1's pass has one read step for x, whole
    assert [s.read for s in f1 if s.node == link1.edge[0]] == [(1, 1)]
    assert _check_formulas_against_the_flow(f1) == 3 and _check_formulas_against_the_flow(f2) == 2


def test_stop_gradient_gets_none_with_its_reason_in_both_languages():
    run = examples.get("stop_gradient").run()
    rule = tv.chain_rule(run.tape, run.target)
    assert run.printed["dz/dy"] is None
    stopped = [(s, lk) for s in rule for lk in s.stopped]
    assert len(stopped) == 1
    step, link = stopped[0]
    assert link.result is None and link.stop.reason == "stop_gradient"
    assert link.stop == rule.flow.edge_reason[link.edge]
    assert f"∂z/∂StopGradient = None: {describe(link.stop, 'en')}" in step.lines("en")
    assert "tf.stop_gradient(y)" in step.text("en")
    assert f"∂z/∂StopGradient = None：{describe(link.stop, 'zh')}" in step.lines("zh")
    _, x_link = _link_to(rule, "x")
    assert float(x_link.result.value) == float(run.printed["dz/dx"]) == 4.0


def test_clip_by_norm_shows_the_clipped_numbers_and_tfs_gradient():
    run = examples.get("clip_by_norm").run()
    rule = tv.chain_rule(run.tape, run.target)
    clipped = run.printed["clipped"]
    assert rule[0].text() == (
        f"start at clipped_gradients = {format_value(clipped)}: ∂clipped_gradients/∂clipped_gradients = [1.0, 1.0, 1.0]"
    )
    gradients = run.extra["gradients"]
    with tf.GradientTape() as tape:
        tape.watch(gradients)
        again = tf.clip_by_norm(gradients, clip_norm=5.0)
    want = tape.gradient(again, gradients).numpy()
    last = rule[rule.flow.last_step]
    ((name, total, terms),) = last.completed
    assert name == "gradients" and len(terms) == 3  # used three times: x * x, and x * clip_norm
    np.testing.assert_array_equal(total.value, want)
    # x * x gives two terms from one Mul, x * clip_norm's scale the third: ops of one type are numbered
    assert last.lines()[-1].startswith("g_gradients = Σ over its 3 uses (Mul₁, Mul₁, Mul₂) = ")
    assert last.lines()[-1].endswith(f" = {format_value(want)}")
    assert _check_formulas_against_the_flow(rule) >= 9


def test_a_matmul_step_shows_the_vector_jacobian_product_with_shapes_and_norm():
    rng = np.random.default_rng(0)
    x = tf.Variable(rng.normal(size=(2, 3)).astype("float32"), name="x")
    W = tf.Variable(rng.normal(size=(3, 4)).astype("float32"), name="W")
    with tv.GradientTape() as tape:
        y = x @ W
        loss = tf.reduce_sum(tf.tanh(y))
    rule = tv.chain_rule(tape, loss)
    gx, gW = tape.gradient(loss, [x, W])
    step, link = _link_to(rule, "x")
    assert step.op == "MatMul" and step.name == "y"
    line = link_line(link, "loss", "y", "en")
    assert line.startswith(f"g_x = g_y·Wᵀ: (2×4)·(4×3) → 2×3, ‖g_x‖ {np.linalg.norm(gx):.3g}")
    np.testing.assert_array_equal(link.result.value, gx.numpy())
    _, w_link = _link_to(rule, "W")
    assert link_line(w_link, "loss", "y", "en").startswith(
        f"g_W = xᵀ·g_y: (3×2)·(2×4) → 3×4, ‖g_W‖ {np.linalg.norm(gW):.3g}"
    )
    assert _check_formulas_against_the_flow(rule) == 4  # Sum, Tanh, MatMul twice


def test_a_dense_layer_as_one_group_passes_tfs_norms_in_and_out():
    keras.utils.set_random_seed(0)
    dense = keras.layers.Dense(4, activation="relu")
    dense.build((None, 3))  # its weights made before the block: the block holds the layer's call only
    x = tf.constant(np.random.default_rng(0).normal(size=(5, 3)).astype("float32"))
    with tv.GradientTape(persistent=True) as tape:
        tape.watch(x)
        h = dense(x)
        loss = tf.reduce_sum(h**2)
    rule = tv.chain_rule(tape, loss)
    group = rule.group(dense.name)
    assert isinstance(group, GroupStep)
    assert {rule.flow.graph.nx.nodes[n]["op_type"] for n in group.members} == {"MatMul", "BiasAdd", "Relu"}
    g_h, g_x, g_kernel, g_bias = tape.gradient(loss, [h, x, dense.kernel, dense.bias])
    assert group.norm_in == pytest.approx(float(tf.norm(g_h)), rel=1e-6)
    out = np.sqrt(sum(float(tf.norm(t)) ** 2 for t in (g_x, g_kernel, g_bias)))
    assert group.norm_out == pytest.approx(out, rel=1e-6)
    assert dict(group.outputs)["x"].value.tolist() == g_x.numpy().tolist()
    assert group.text().startswith(
        f"{dense.name} takes in ‖g‖ {float(tf.norm(g_h)):.3g} at its outputs (h) "
        f"and passes out ‖g‖ {out:.3g} to its inputs ("
    )
    assert group.text("zh").startswith(f"{dense.name} 在输出处（h）收到 ‖g‖ {float(tf.norm(g_h)):.3g}")
    # by node ids, and before anything reached it: nothing in, nothing out
    same = rule.group(group.members, name="the layer")
    assert same.norm_in == group.norm_in and same.norm_out == group.norm_out
    early = rule.group(group.members, step=0, name="the layer")
    assert early.inputs == () and early.outputs == ()
    assert early.text() == "nothing has reached the layer yet" and early.text("zh") == "the layer 还没有收到梯度"
    # in, and nothing out yet: the step where the gradient reached the layer's last op
    k = min(s for s in range(rule.flow.last_step + 1) if rule.group(group.members, step=s).inputs)
    half = rule.group(group.members, step=k, name="the layer")
    assert half.outputs == () and half.later
    norm = f"{float(tf.norm(g_h)):.3g}"
    assert half.text().startswith(f"the layer takes in ‖g‖ {norm} at its outputs (h); nothing has left")
    assert "还没有向输入传出梯度" in half.text("zh")
    # the whole program as one block: what comes in is the seed, what goes out every gradient
    ops = [n for n, d in rule.flow.graph.nx.nodes(data=True) if d["kind"] == "op"]
    whole = rule.group(ops, name="all")
    assert [(name, float(a.value)) for name, a in whole.inputs] == [("loss", 1.0)]
    assert whole.norm_out == pytest.approx(out, rel=1e-6)
    assert _check_formulas_against_the_flow(rule) >= 5


def test_a_group_with_no_gradient_passes_nothing_out():
    x = tf.Variable(2.2)
    with tv.GradientTape() as tape:
        w = x * 3.0
        z = x * tf.round(w)  # Round has no gradient: nothing leaves it for w
    rule = tv.chain_rule(tape, z)
    g = rule.flow.graph
    ops = [n for n, d in g.nx.nodes(data=True) if d["kind"] == "op" and d["op_type"] == "Round"]
    block = rule.group(ops, name="block")
    assert block.inputs and block.outputs == () and not block.later
    assert tape.gradient(z, x) is not None
    assert block.text().startswith("block takes in ‖g‖ ") and block.text().split("\n")[0].endswith(
        "and passes nothing out to its inputs"
    )
    assert block.text("zh").split("\n")[0].endswith("不向输入传出任何梯度")


def test_an_op_without_an_entry_names_tfs_registered_gradient_and_shows_its_numbers():
    assert lookup("Atan") is None
    x = tf.Variable(0.5)
    with tv.GradientTape() as tape:
        z = tf.atan(x)
    rule = tv.chain_rule(tape, z)
    step, link = _link_to(rule, "x")
    want = float(tape.gradient(z, x))
    assert float(link.result.value) == want
    local = format_value(np.float32(want))
    assert step.text() == f"∂z/∂x = ∂z/∂z · ∂z/∂x = 1.0 × {local} = {local} (∂ by TF's registered gradient for Atan)"
    assert step.text("zh").endswith("（∂ 由 TF 为 Atan 注册的梯度函数算出）")
    v = tf.Variable([0.5, 1.0])
    with tv.GradientTape() as tape:
        s = tf.reduce_sum(tf.atan(v))
    _, vec = _link_to(tv.chain_rule(tape, s), "v")
    assert link_line(vec, "s", "Atan", "en").startswith(
        "g_v = TF's registered gradient for Atan applied to g_Atan: (2) → 2"
    )


def test_sums_of_paths_add_up_to_tfs_total():
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        p = x * x
        z = p + 2.0 * p
    rule = tv.chain_rule(tape, z)
    step = next(s for s in rule if s.name == "p")
    assert [(t.consumer, float(t.amount.value)) for t in step.terms] == [("Mul", 2.0), ("z", 1.0)]
    assert step.lines()[0] == "∂z/∂p = Σ over its 2 uses (Mul, z) = 2.0 + 1.0 = 3.0"
    assert float(step.arriving.value) == 3.0  # what TF added up and handed to p's op
    as_x = [line for line in step.lines() if line.startswith("as ")]
    assert as_x == [
        "as x: ∂z/∂x = ∂z/∂p · ∂p/∂x = 3.0 × (x) = 3.0 × 2.0 = 6.0",
        "as y: ∂z/∂x = ∂z/∂p · ∂p/∂x = 3.0 × (x) = 3.0 × 2.0 = 6.0",
    ]
    # x * x reads x twice: the last read's step completes x's gradient, TF's total
    assert (
        rule[rule.flow.last_step]
        .text()
        .endswith(f"∂z/∂x = Σ over its 2 reads = {format_value(tape.gradient(z, x).numpy())}")
    )


def test_a_variable_read_twice_sums_its_reads():
    x = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        a = tf.sin(x)
        b = x.read_value() * 2.0
        z = a + b
    rule = tv.chain_rule(tape, z)
    reads = [s for s in rule if s.read is not None]
    assert [s.read for s in reads] == [(1, 2), (2, 2)]
    last = reads[-1]
    want = float(tape.gradient(z, x))
    assert float(last.total.value) == pytest.approx(want)
    assert last.text().endswith(f"∂z/∂x = Σ over its 2 reads = {format_value(np.float32(want))}")


def test_chain_rule_is_public_printable_and_checks_its_arguments():
    run = examples.get("basic").run()
    rule = tv.chain_rule(run.tape, run.target, lang="zh")
    assert isinstance(rule, ChainRule) and len(rule) == 3 and all(isinstance(s, ChainStep) for s in rule)
    assert str(rule).startswith("[0] 从 y = 9.0 开始") and repr(rule) == "ChainRule(target=y, steps=3)"
    assert str(rule[1]) == rule[1].text("en")
    assert rule[1] is rule[1]  # made once
    with pytest.raises(ValueError, match="No messages in language 'fr'"):
        tv.chain_rule(run.tape, run.target, lang="fr")
    with pytest.raises(ValueError, match="step 7 is out of range"):
        rule[7]
    with pytest.raises(ValueError, match="A group needs nodes of the graph: nope"):
        rule.group(["nope"])
    with pytest.raises(ValueError, match="no op matches"):
        rule.group("no_such_scope")
    assert symbol(rule.flow, rule[1].node) == "y"
    assert amount(None) is None and amount(np.float32(2.0)).text == "2.0"


def test_the_local_derivative_is_computed_without_touching_the_users_tape():
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:
        z = x**3
    with tf.GradientTape() as outer:  # the user's tape, live while the rule is read
        outer.watch(x)
        w = x * 5.0
        rule = tv.chain_rule(tape, z)
        text = rule.text()
    assert "1.0 × (3·x²) = 1.0 × 12.0 = 12.0" in text
    assert float(outer.gradient(w, x)) == 5.0


def test_every_vjp_template_names_only_g_and_the_ops_inputs():
    import string

    for entry in TABLE.values():
        for p in entry.partials:
            if p.vjp:
                fields = {name for _, name, _, _ in string.Formatter().parse(p.vjp) if name}
                assert fields <= {"g", *entry.inputs}, (entry.op, p.vjp)
                assert {name for name, _ in p.operands} <= {"g", *entry.inputs}, entry.op
            assert p.input in entry.inputs, entry.op


def test_the_chain_rule_lines_use_the_catalogues():
    run = examples.get("scalar_over_tensor").run()
    rule = tv.chain_rule(run.tape, run.target)
    en, zh = rule[0].text("en"), rule[0].text("zh")
    assert en.startswith("start at loss = 30.0") and zh.startswith("从 loss = 30.0 开始")
    assert re.search(r"g_w = g_Pow ⊙ \(2·w\)", rule[2].text("zh"))
    assert rule[2].text("zh").startswith("g_w = g_Pow ⊙ (2·w)：(2×2) ⊙ (2×2) → 2×2，‖g_w‖ 11")
    assert rule[2].text("en").startswith("g_w = g_Pow ⊙ (2·w): (2×2) ⊙ (2×2) → 2×2, ‖g_w‖ 11")


@pytest.mark.parametrize("name", sorted(examples.EXAMPLES))
def test_every_seed_example_reads_step_by_step_with_tfs_numbers(name):
    """Every step of every seed example writes in both languages; each link's number is what
    TF passed along its edge, each formula holds on the flow's values, and where a variable's
    gradient is whole the step says TF's total."""
    run = examples.get(name).run()
    rule = tv.chain_rule(run.tape, run.target)
    fl = rule.flow
    for step in rule:
        assert step.lines("en") and step.lines("zh"), (name, step.index)
        for link in step.links:
            np.testing.assert_array_equal(link.result.value, fl.edge_grad(*link.edge))
    _check_formulas_against_the_flow(rule)
    for node, d in fl.graph.nx.nodes(data=True):
        if d["kind"] == "variable" and fl.computed(node) is not None:
            last = rule[fl.step_of(node)]
            assert format_value(fl.computed(node), norm=GRAD_NORM) in last.text(), (name, node)


def test_clip_by_value_passes_nothing_to_the_clipped_values():
    run = examples.get("clip_by_value").run()
    rule = tv.chain_rule(run.tape, run.target)
    step, link = _link_to(rule, "gradients")
    np.testing.assert_array_equal(link.result.value, [0.0, 0.0, 0.0])  # -5 and 10, 100 are all clipped
    assert step.text() == (
        "g_gradients = g_Minimum ⊙ (1 if gradients ≤ 1 else 0): (3) ⊙ (3) → 3, ‖g_gradients‖ 0 = [0.0, 0.0, 0.0]"
    )


def test_a_custom_gradient_is_said_as_the_backward_function_it_was_given():
    @tf.custom_gradient
    def halved(x):
        return tf.identity(x), lambda dy: dy * 0.5

    v = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        z = halved(v) * 4.0
    rule = tv.chain_rule(tape, z)
    step, link = _link_to(rule, "v")
    assert link.via == "tf.custom_gradient" and float(link.result.value) == float(tape.gradient(z, v)) == 2.0
    assert link.local is None  # the function's backward is not called again: it may keep state
    assert step.text().endswith("= 2.0 (∂ by the backward function tf.custom_gradient was given for halved)")
    assert step.text("zh").endswith("（∂ 由 tf.custom_gradient 为 halved 提供的反向函数算出）")


def test_addn_inputs_and_ops_of_one_type_are_told_apart():
    x = tf.Variable(1.5)
    with tv.GradientTape() as tape:
        a, b = x * 2.0, x * 3.0
        z = tf.add_n([a, b, x * x])
    rule = tv.chain_rule(tape, z)
    first = rule[1]
    assert first.op == "AddN"
    assert [lk.arg for lk in first.links] == ["inputs[0]", "inputs[1]", "inputs[2]"]
    # a and b have names; x * x is the one Mul without a name, so it needs no number
    assert [lk.input for lk in first.links] == ["a", "b", "Mul"]
    assert symbols(rule.flow)[first.links[2].edge[0]] == "Mul"
    assert _check_formulas_against_the_flow(rule) == 7  # AddN three times, Mul once each, x * x twice


def test_an_op_with_two_outputs_takes_the_gradient_of_the_one_used():
    """softmax_cross_entropy_with_logits has two outputs (the loss and its backprop): the
    gradient arriving is the loss's, and the table's formula holds on TF's numbers."""
    rng = np.random.default_rng(1)
    logits = tf.Variable(rng.normal(size=(3, 4)).astype("float32"), name="logits")
    labels = tf.constant(np.eye(4, dtype="float32")[[0, 3, 1]])
    with tv.GradientTape() as tape:
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    rule = tv.chain_rule(tape, loss)
    step = next(s for s in rule if s.op == "SoftmaxCrossEntropyWithLogits")  # TF reshapes the logits first
    assert step.arriving.shape == (3,) and len(step.links) == 1
    link = step.links[0]
    assert link.values["features"].shape == (3, 4) and link.values["labels"].value.tolist() == labels.numpy().tolist()
    features, labels_name = link.names["features"], link.names["labels"]
    norm = np.linalg.norm(tape.gradient(loss, logits))  # the Reshape passes it on unchanged
    assert link_line(link, "loss", step.name, "en") == (
        f"g_{features} = g_{step.name}·(softmax({features}) − {labels_name}): (3) → 3×4, ‖g_{features}‖ {norm:.3g}"
    )
    assert _check_formulas_against_the_flow(rule) >= 2


def test_reading_the_chain_rule_leaves_tape_gradient_as_it_was():
    x = tf.Variable(2.0)
    with tv.GradientTape() as tape:  # not persistent: one tape.gradient call allowed
        z = tf.exp(x) * x
    print(tv.chain_rule(tape, z))
    assert float(tape.gradient(z, x)) == pytest.approx(float(tf.exp(2.0) * 3.0))
    with pytest.raises(RuntimeError):  # TF's own rule for a used non-persistent tape, unchanged
        tape.gradient(z, x)

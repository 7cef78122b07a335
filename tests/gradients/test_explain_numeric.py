"""tv.explain for NaN, Inf and zero gradients: a corpus of programs as people write them.

For each program: TF's gradient is what the flow gives, bit for bit (NaN positions
included); explain names the op, the pattern, the element indices and the user's source
line; the English and Chinese sentences state the facts. Programs whose gradients are
finite and not all zero get no diagnosis (see also test_properties, test_keras_layers,
test_models and the seed examples below)."""

from __future__ import annotations

import inspect

import keras
import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.gradients.numeric import Pattern, Problem

_SOURCE = inspect.getsource(inspect.getmodule(inspect.currentframe())).splitlines()


def line_of(snippet: str) -> int:
    """The line of this file that holds ``snippet`` (once)."""
    found = [
        i + 1 for i, text in enumerate(_SOURCE) if snippet in text and "line_of(" not in text and "snippet=" not in text
    ]
    assert len(found) == 1, (snippet, found)
    return found[0]


def same_bits(a, b) -> None:
    """Equal bit for bit, NaN positions included (the flow's total is TF's own number)."""
    a, b = np.asarray(a), np.asarray(tf.convert_to_tensor(b))
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.tobytes() == b.tobytes(), (a, b)


def check(tape, target, source, *, op, pattern, problem, indices=None, snippet=None, facts=(), index=None, marked=True):
    """The common checks; returns the diagnosis (its sentences printed once, to be read)."""
    want = tape.gradient(target, source)
    if want is not None:
        same_bits(tv.flow(tape, target).grad(source), want)
    d = tv.explain(tape, target, source, index=index)
    assert d is not None
    assert d.reason == problem and d.pattern == pattern, (d.reason, d.pattern, d.message)
    assert d.finding.op == op and d.case == pattern.value
    if indices is not None:
        assert d.finding.indices == indices, d.finding.indices
    if snippet is not None:
        assert d.line == line_of(snippet), (d.line, snippet)
        assert snippet in d.finding.code
        assert f"line {d.line}" in d.message and f"第 {d.line} 行" in d.text("zh")
    zh = d.in_language("zh")
    assert zh.lang == "zh" and zh.finding is d.finding
    for fact in (op, *facts):
        assert fact in d.message + d.fix and fact in zh.message + zh.fix, fact
    print(f"\n[{pattern.value}]\n  en: {d.text()}\n  zh: {zh.text()}")
    if marked:
        marks_origin(tape, target, source, d)
    return d


def marks_origin(tape, target, source, d) -> None:
    """The default picture marks the op the diagnosis names, with its way back to ``source``
    (tests/picture/test_origin_mark.py checks the mark itself in detail)."""
    sc = tv.view(tape, target).scene
    o = sc.origin
    assert o is not None, "the picture marks no origin"
    assert o.node == d.finding.node and o.source == sc.flow.graph.node_of(source), (o.node, d.finding.node)
    assert sc.origin_box == sc.display.of[d.finding.node] and sc.origin_label.visible


# -- NaN / Inf on the backward pass ------------------------------------------------------
def test_where_trap_with_log():
    x = tf.Variable([0.0, 1.0])
    with tv.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(tf.where(x > 0, tf.math.log(x), tf.zeros_like(x)))
    assert np.isnan(tape.gradient(y, x).numpy()[0])
    d = check(
        tape,
        y,
        x,
        op="Log",
        pattern=Pattern.WHERE_TRAP,
        problem=Problem.NON_FINITE,
        indices=((0,),),
        snippet="y = tf.reduce_sum(tf.where(x > 0, tf.math.log(x)",
        facts=("tf.where", "1/x", "0 × ∞ = NaN", "[0]"),
    )
    f = d.finding
    assert (f.arriving, f.forward, f.local_value) == (0.0, 0.0, float("inf")) and np.isnan(f.result)
    assert f.value == "NaN" and f.count == 1 and f.size == 2 and f.other_op == "SelectV2"
    assert "safe" in d.fix and "陷阱" in d.text("zh")


def test_where_trap_with_a_division():
    num = tf.Variable([1.0, 2.0, 3.0])
    den = tf.Variable([2.0, 0.0, 4.0])
    with tv.GradientTape(persistent=True) as tape:
        ratio = tf.where(den != 0.0, num / den, 0.0)
        loss = tf.reduce_mean(ratio)
    d = check(
        tape,
        loss,
        den,
        op="RealDiv",
        pattern=Pattern.WHERE_TRAP,
        problem=Problem.NON_FINITE,
        indices=((1,),),
        snippet="ratio = tf.where(den != 0.0, num / den, 0.0)",
        facts=("-x/y²",),
    )
    assert d.finding.forward == 0.0 and d.finding.variable == "y"
    # d loss / d num is NaN there too: 0 × 1/y at y = 0
    d = tv.explain(tape, loss, num)
    assert d.pattern is Pattern.WHERE_TRAP and d.finding.local == "1/y" and d.finding.indices == ((1,),)
    assert d.finding.safe_code == (
        "safe_den = tf.where(cond, den, tf.ones_like(den))",
        "tf.where(cond, num / safe_den, 0.0)",
    )
    # the fix, as the diagnosis writes it, gives a finite gradient and no diagnosis
    with tv.GradientTape(persistent=True) as tape:
        safe_den = tf.where(den != 0.0, den, tf.ones_like(den))
        loss = tf.reduce_mean(tf.where(den != 0.0, num / safe_den, 0.0))
    assert np.all(np.isfinite(tape.gradient(loss, den))) and tv.explain(tape, loss, den) is None


def test_where_trap_with_a_power():
    x = tf.Variable([[0.0, 4.0], [9.0, 0.0]])
    with tv.GradientTape(persistent=True) as tape:
        root = tf.where(x > 0, x**0.5, 0.0)
        loss = tf.reduce_sum(root)
    d = check(
        tape,
        loss,
        x,
        op="Pow",
        pattern=Pattern.WHERE_TRAP,
        problem=Problem.NON_FINITE,
        indices=((0, 0), (1, 1)),
        snippet="root = tf.where(x > 0, x**0.5, 0.0)",
        facts=("p·x^(p-1)",),
    )
    assert d.finding.local_value == float("inf") and d.finding.count == 2


def test_norm_of_a_zero_vector():
    v = tf.Variable([0.0, 0.0])
    with tv.GradientTape(persistent=True) as tape:
        length = tf.norm(v)
    assert np.all(np.isnan(tape.gradient(length, v).numpy()))
    d = check(
        tape,
        length,
        v,
        op="Sqrt",
        pattern=Pattern.NORM_AT_ZERO,
        problem=Problem.NON_FINITE,
        indices=((0,), (1,)),
        snippet="length = tf.norm(v)",
        facts=("tf.norm", "1/(2·√x)", "1e-12"),
    )
    assert d.finding.api == "tf.norm" and d.finding.value == "NaN"


def test_sqrt_at_zero_in_a_hand_written_distance():
    p = tf.Variable([1.0, 2.0])
    q = tf.constant([1.0, 2.0])
    with tv.GradientTape(persistent=True) as tape:
        distance = tf.sqrt(tf.reduce_sum(tf.square(p - q)))
    check(
        tape,
        distance,
        p,
        op="Sqrt",
        pattern=Pattern.SQRT_AT_ZERO,
        problem=Problem.NON_FINITE,
        snippet="distance = tf.sqrt(tf.reduce_sum(tf.square(p - q)))",
        facts=("1/(2·√x)",),
    )


def test_log_of_zero_in_the_backward_pass_only():
    # the loss is finite (0 * log(0) is NaN, so: weight the log by 0 after a maximum)
    w = tf.Variable([0.0, 0.5])
    with tv.GradientTape(persistent=True) as tape:
        logs = tf.math.log(w)
        loss = tf.reduce_sum(tf.maximum(logs, -1.0))
    d = check(
        tape,
        loss,
        w,
        op="Log",
        pattern=Pattern.LOG_OF_ZERO,
        problem=Problem.NON_FINITE,
        snippet="logs = tf.math.log(w)",
        facts=("1/x",),
    )
    assert np.isfinite(loss.numpy())
    assert d.finding.value in ("NaN", "∞")


# -- the loss itself is NaN or Inf: the forward pass ---------------------------------------
def test_log_of_zero_makes_the_loss_nan():
    y_true = tf.constant([1.0, 0.0])
    y_pred = tf.Variable([1.0, 0.0])
    with tv.GradientTape(persistent=True) as tape:
        loss = -tf.reduce_sum(y_true * tf.math.log(y_pred))
    assert np.isnan(loss.numpy())
    d = check(
        tape,
        loss,
        y_pred,
        op="Log",
        pattern=Pattern.LOG_OF_ZERO,
        problem=Problem.FORWARD,
        indices=((),),
        snippet="loss = -tf.reduce_sum(y_true * tf.math.log(y_pred))",
        facts=("-∞", "log(0)"),
    )
    assert d.finding.op_indices == ((1,),) and d.finding.forward == 0.0


def test_log_of_a_negative_number():
    scale = tf.Variable([2.0, -0.5])
    with tv.GradientTape(persistent=True) as tape:
        log_scale = tf.math.log(scale)
        nll = tf.reduce_sum(log_scale)
    check(
        tape,
        nll,
        scale,
        op="Log",
        pattern=Pattern.LOG_OF_NEGATIVE,
        problem=Problem.FORWARD,
        snippet="log_scale = tf.math.log(scale)",
        facts=("-0.5", "NaN"),
    )


def test_division_by_zero_when_the_mask_is_empty():
    values = tf.Variable([1.0, 2.0, 3.0])
    mask = tf.constant([0.0, 0.0, 0.0])
    with tv.GradientTape(persistent=True) as tape:
        masked_mean = tf.reduce_sum(values * mask) / tf.reduce_sum(mask)
    d = check(
        tape,
        masked_mean,
        values,
        op="RealDiv",
        pattern=Pattern.DIVISION_BY_ZERO,
        problem=Problem.FORWARD,
        snippet="masked_mean = tf.reduce_sum(values * mask) / tf.reduce_sum(mask)",
        facts=("divide_no_nan",),
    )
    assert d.finding.variable == "y" and d.finding.forward == 0.0


def test_exp_overflow_in_a_hand_written_softmax():
    logits = tf.Variable([100.0, 1.0])
    with tv.GradientTape(persistent=True) as tape:
        e = tf.exp(logits)
        probs = e / tf.reduce_sum(e)
        loss = -tf.math.log(probs[0])
    check(
        tape,
        loss,
        logits,
        op="Exp",
        pattern=Pattern.EXP_OVERFLOW,
        problem=Problem.FORWARD,
        indices=((),),
        snippet="e = tf.exp(logits)",
        facts=("88.7", "∞"),
    )


def test_cross_entropy_on_softmax_probabilities():
    w = tf.Variable([[1.0, 2.0]])
    labels = tf.constant([[0.0, 1.0]])
    with tv.GradientTape(persistent=True) as tape:
        probs = tf.nn.softmax(-w * 100.0)
        loss = -tf.reduce_sum(labels * tf.math.log(probs))
    d = check(
        tape,
        loss,
        w,
        op="Log",
        pattern=Pattern.LOG_OF_PROBABILITY,
        problem=Problem.FORWARD,
        snippet="loss = -tf.reduce_sum(labels * tf.math.log(probs))",
        facts=("Softmax", "from_logits=True", "logits"),
    )
    assert d.finding.other_line == line_of("probs = tf.nn.softmax(-w * 100.0)")


def test_binary_cross_entropy_on_a_saturated_sigmoid():
    z = tf.Variable([40.0])
    y = tf.constant([0.0])
    with tv.GradientTape(persistent=True) as tape:
        p = tf.sigmoid(z)
        bce = -tf.reduce_mean(y * tf.math.log(p) + (1.0 - y) * tf.math.log(1.0 - p))
    check(
        tape,
        bce,
        z,
        op="Log",
        pattern=Pattern.LOG_OF_PROBABILITY,
        problem=Problem.FORWARD,
        snippet="bce = -tf.reduce_mean(",
        facts=("Sigmoid", "sigmoid_cross_entropy_with_logits"),
    )


# -- zero gradients -------------------------------------------------------------------------
def test_dead_relu():
    x = tf.constant([[1.0, 2.0]])
    w = tf.Variable([[0.5, -0.3], [0.2, 0.1]])
    b = tf.Variable([-10.0, -10.0])
    v = tf.Variable([[1.0], [1.0]])
    with tv.GradientTape(persistent=True) as tape:
        hidden = tf.nn.relu(x @ w + b)
        out = tf.reduce_sum(hidden @ v)
    d = check(
        tape,
        out,
        w,
        op="Relu",
        pattern=Pattern.DEAD_RELU,
        problem=Problem.ZERO,
        snippet="hidden = tf.nn.relu(x @ w + b)",
        facts=("≤ 0", "LeakyReLU"),
    )
    assert d.finding.extra["max"] < 0 and d.finding.arriving == 1.0 and d.finding.local_value == 0.0
    assert tv.explain(tape, out, b).pattern is Pattern.DEAD_RELU
    # v's gradient is zero too (the hidden values are 0): the product, not the ReLU
    assert tv.explain(tape, out, v).pattern is Pattern.MULTIPLIED_BY_ZERO


def test_relu_dead_on_some_inputs_only_is_no_diagnosis():
    w = tf.Variable([-1.0, 2.0])
    with tv.GradientTape() as tape:
        y = tf.reduce_sum(tf.nn.relu(w))
    assert tv.explain(tape, y, w) is None


def test_saturated_sigmoid():
    w = tf.Variable([30.0, 40.0])
    with tv.GradientTape(persistent=True) as tape:
        gate = tf.sigmoid(w * 2.0)
        out = tf.reduce_sum(gate)
    d = check(
        tape,
        out,
        w,
        op="Sigmoid",
        pattern=Pattern.SATURATED,
        problem=Problem.ZERO,
        snippet="gate = tf.sigmoid(w * 2.0)",
        facts=("sigmoid", "60", "σ(x)·(1 - σ(x))"),
    )
    assert d.finding.extra["min_abs"] == 60.0


def test_saturated_tanh():
    h = tf.Variable([25.0])
    with tv.GradientTape(persistent=True) as tape:
        act = tf.tanh(h)
        out = tf.reduce_sum(act * 3.0)
    check(
        tape,
        out,
        h,
        op="Tanh",
        pattern=Pattern.SATURATED,
        problem=Problem.ZERO,
        snippet="act = tf.tanh(h)",
        facts=("tanh", "1 - tanh²(x)"),
    )


def test_sign_is_a_step_function():
    w = tf.Variable([0.3, -0.7])
    with tv.GradientTape(persistent=True) as tape:
        binary = tf.sign(w)
        out = tf.reduce_sum(binary * tf.constant([1.0, 2.0]))
    check(
        tape,
        out,
        w,
        op="Sign",
        pattern=Pattern.STEP_FUNCTION,
        problem=Problem.ZERO,
        snippet="binary = tf.sign(w)",
        facts=("stop_gradient",),
    )


def test_round_argmax_and_int_cast_have_no_gradient_at_all():
    w = tf.Variable([0.3, 1.7])
    with tv.GradientTape(persistent=True) as tape:
        rounded = tf.reduce_sum(tf.round(w) * w[0])
        picked = tf.cast(tf.argmax(w), tf.float32) * 2.0
        as_int = tf.cast(tf.cast(w, tf.int32), tf.float32)
    # round: TF's gradient is None; the None diagnosis names the op
    d = tv.explain(tape, picked, w)
    assert tape.gradient(picked, w) is None and d.reason == "no_gradient" and "ArgMax" in d.message
    d = tv.explain(tape, as_int, w)
    assert tape.gradient(as_int, w) is None and d.reason in ("integer_dtype", "no_gradient")
    # through round, w[0] still reaches the sum through the product: finite, nonzero
    assert tv.explain(tape, rounded, w) is None
    with tv.GradientTape(persistent=True) as tape:
        only_round = tf.reduce_sum(tf.round(w))
    d = tv.explain(tape, only_round, w)
    assert tape.gradient(only_round, w) is None and d.reason == "no_gradient" and "Round" in d.message


def test_clip_by_value_outside_the_range():
    w = tf.Variable([5.0, 7.0])
    with tv.GradientTape(persistent=True) as tape:
        clipped = tf.clip_by_value(w, -1.0, 1.0)
        out = tf.reduce_sum(clipped)
    check(
        tape,
        out,
        w,
        op="Minimum",
        pattern=Pattern.CLIPPED,
        problem=Problem.ZERO,
        snippet="clipped = tf.clip_by_value(w, -1.0, 1.0)",
    )


def test_keras_binary_cross_entropy_on_saturated_sigmoid_probabilities():
    z = tf.Variable([[40.0], [-40.0]])
    y = tf.constant([[0.0], [1.0]])
    bce = keras.losses.BinaryCrossentropy()
    with tv.GradientTape(persistent=True) as tape:
        p_hat = tf.sigmoid(z)
        loss = bce(y, p_hat)
    assert np.isfinite(loss.numpy())
    d = check(
        tape,
        loss,
        z,
        op="Minimum",
        pattern=Pattern.PROBABILITY_CLIPPED,
        problem=Problem.ZERO,
        snippet="loss = bce(y, p_hat)",
        facts=("Sigmoid", "from_logits=True", "[ε, 1 - ε]"),
    )
    assert d.finding.other_line == line_of("p_hat = tf.sigmoid(z)")


def test_keras_categorical_cross_entropy_on_softmax_probabilities():
    w = tf.Variable([[50.0, -50.0]])
    labels = tf.constant([[0.0, 1.0]])
    cce = keras.losses.CategoricalCrossentropy()
    with tv.GradientTape(persistent=True) as tape:
        probs = tf.nn.softmax(w)
        loss = cce(labels, probs)
    d = check(
        tape,
        loss,
        w,
        op="Maximum",
        pattern=Pattern.PROBABILITY_CLIPPED,
        problem=Problem.ZERO,
        snippet="loss = cce(labels, probs)",
        facts=("Softmax", "from_logits=True"),
    )
    assert d.finding.arriving != 0  # told where a gradient that is not zero arrived


def test_where_that_never_picks_the_branch():
    w = tf.Variable([1.0, 2.0])
    with tv.GradientTape(persistent=True) as tape:
        out = tf.reduce_sum(tf.where(w > 10.0, w * 3.0, 1.0))
    check(
        tape,
        out,
        w,
        op="SelectV2",
        pattern=Pattern.WHERE_UNSELECTED,
        problem=Problem.ZERO,
        snippet="out = tf.reduce_sum(tf.where(w > 10.0, w * 3.0, 1.0))",
    )


def test_embedding_row_not_looked_up():
    emb = keras.layers.Embedding(5, 2)
    ids = tf.constant([[0, 2, 2]])
    emb.build((None, 3))
    with tv.GradientTape(persistent=True) as tape:
        vectors = emb(ids)
        loss = tf.reduce_sum(vectors**2)
    table = emb.embeddings
    # the table's gradient is not zero as a whole: no diagnosis without an index
    assert tv.explain(tape, loss, table) is None
    d = check(
        tape,
        loss,
        table,
        op="GatherV2",
        pattern=Pattern.ROW_NOT_READ,
        problem=Problem.ZERO,
        index=3,
        indices=((3, 0), (3, 1)),
        snippet="vectors = emb(ids)",
        facts=("[0, 2]",),
        # a row not read in one batch is normal, and explain without an index says nothing:
        # the picture (which asks for no element) marks nothing either
        marked=False,
    )
    sc = tv.view(tape, loss).scene
    assert sc.origin is None and sc.origin_label is None
    assert d.finding.extra["ids"] == [0, 2]
    assert tv.explain(tape, loss, table, index=2) is None  # row 2 was read: its gradient is not zero
    with pytest.raises(IndexError, match="not an element or row"):
        tv.explain(tape, loss, table, index=9)


# -- no false diagnosis ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["basic", "scalar_over_tensor", "tensor_over_tensor"])
def test_seed_examples_have_no_diagnosis(name):
    from tapeviz import examples

    run = getattr(examples, name)()
    sources = [v for v in run.extra.values() if isinstance(v, tf.Variable)]
    assert sources
    for s in sources:
        assert tv.explain(run.tape, run.target, s) is None


def test_every_seed_example_has_no_false_diagnosis():
    from tapeviz import examples

    checked = 0
    for ex in examples.EXAMPLES.values():
        run = ex.run()
        fl = tv.flow(run.tape, run.target)
        for n, d in fl.graph.nx.nodes(data=True):
            if d["kind"] != "variable":
                continue
            grad = fl.computed(n)
            diagnosis = tv.explain(run.tape, run.target, d["variable"]) if grad is not None else None
            if grad is None:
                continue
            healthy = bool(np.all(np.isfinite(grad)) and np.any(grad != 0))
            assert (diagnosis is None) == healthy, (ex.name, d["name"], diagnosis)
            checked += 1
    assert checked >= 10


def test_index_selects_an_element():
    w = tf.Variable([-1.0, 2.0])
    with tv.GradientTape() as tape:
        y = tf.reduce_sum(tf.nn.relu(w))
    d = tv.explain(tape, y, w, index=0)
    assert d.pattern is Pattern.DEAD_RELU and d.finding.indices == ((0,),)
    assert tv.explain(tape, y, w, index=1) is None


def test_explain_leaves_the_users_gradient_alone():
    x = tf.Variable([0.0, 1.0])
    with tv.GradientTape() as tape:
        total = tf.reduce_sum(tf.where(x > 0, tf.math.log(x), tf.zeros_like(x)))
    assert tv.explain(tape, total, x) is not None
    got = tape.gradient(total, x).numpy()
    assert np.isnan(got[0]) and got[1] == 1.0


def test_output_gradients_that_are_zero_or_nan_are_named_as_the_seed():
    v = tf.Variable([1.0, 2.0])
    with tv.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(v * 2.0)
    for seed, problem in [(0.0, Problem.ZERO), (float("nan"), Problem.NON_FINITE)]:
        want = tape.gradient(y, v, output_gradients=tf.constant(seed))
        same_bits(tv.flow(tape, y, output_gradients=tf.constant(seed)).grad(v), want)
        d = tv.explain(tape, y, v, output_gradients=tf.constant(seed))
        assert d.reason == problem and d.finding.seeded and d.finding.op == ""
        assert "output_gradients" in d.message and "output_gradients" in d.fix
        assert "output_gradients" in d.text("zh")


def test_a_tf_function_call_is_named_as_the_function():
    x = tf.Variable(0.0)

    @tf.function
    def branch(v):
        return tf.cond(v > 0, lambda: tf.math.log(v), lambda: tf.zeros_like(v))

    with tv.GradientTape() as tape:
        y = branch(x)
    d = tv.explain(tape, y, x)
    # tf.cond runs only the branch it takes: zeros_like, whose gradient is zero (no trap)
    assert d.reason == Problem.ZERO and d.finding.label == "branch()" and "branch()" in d.message
    assert d.line == line_of("y = branch(x)")


def test_languages_of_a_diagnosis():
    x = tf.Variable([0.0, 1.0])
    y0 = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        z = tf.reduce_sum(tf.where(x > 0, tf.math.log(x), tf.zeros_like(x))) + tf.stop_gradient(y0)
    zh = tv.explain(tape, z, x, lang="zh")
    assert zh.lang == "zh" and "陷阱" in zh.message and zh.in_language("en").message.startswith("dz/dx is NaN")
    assert str(zh) == zh.text() and zh.in_language("zh") is zh
    none = tv.explain(tape, z, y0)  # a None gradient says itself in another language too
    assert none.reason == "stop_gradient" and none.finding is None and none.pattern is None and none.line == 0
    assert "tf.stop_gradient" in none.in_language("zh").message and none.in_language("zh").lang == "zh"
    with pytest.raises(ValueError, match="No messages in language"):
        none.in_language("xx")


def test_a_large_activation_whose_value_the_graph_does_not_keep():
    big = np.ones(300_000, "float32")
    big[123_456] = 0.0
    w = tf.Variable(big)
    with tv.GradientTape() as tape:
        log_w = tf.math.log(w)
        loss = tf.reduce_sum(log_w)
    graph = tv.flow(tape, loss).graph
    info = graph.output_info(graph.node_of(log_w))
    assert info.value is None  # only a summary is kept for the picture
    d = tv.explain(tape, loss, w)
    assert d.reason == Problem.FORWARD and d.pattern is Pattern.LOG_OF_ZERO
    assert d.finding.op_indices == ((123_456,),) and d.finding.forward == 0.0
    assert d.line == line_of("log_w = tf.math.log(w)")

"""Real Keras 3 models in a custom training step: tv.GradientTape (or tv.record on a plain
tape) must give tape.gradient's exact values for every trainable variable, leave the
optimizer step working, name variables by their Keras path and keep each op's layer
scope; BatchNormalization's moving-stat updates show as `stateful` edges."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from diagnosis_check import check_no_false_diagnosis
from keras_models import MODELS, sequential_cnn, subclassed_embedding

import tapeviz as tv
from tapeviz.record import hooks, hookstate

L = keras.layers
LOSS = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def build(make):
    keras.utils.set_random_seed(0)
    model, args, y = make()
    model(*args)  # build the weights before the step
    return model, args, y


def dense(g):
    return tf.convert_to_tensor(g).numpy()


def train_step(model, args, y, how):
    """One custom training step: forward under the tape, gradients, optimizer update."""
    if how == "tv.GradientTape":
        with tv.GradientTape(persistent=True) as tape:
            logits = model(*args, training=True)
            loss = LOSS(y, logits)
        rec = tape
    else:
        with tf.GradientTape(persistent=True) as tape, tv.record(tape) as rec:
            logits = model(*args, training=True)
            loss = LOSS(y, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    return tape, rec, loss, grads


# --------------------------------------------------------------------------- gradients


@pytest.mark.slow
@pytest.mark.parametrize("how", ["tv.GradientTape", "tv.record"])
@pytest.mark.parametrize("make", MODELS, ids=lambda m: m.__name__)
def test_flow_equals_tape_gradient_and_step_runs(make, how):
    model, args, y = build(make)
    tape, rec, loss, grads = train_step(model, args, y, how)
    fl = tv.flow(rec, loss)
    assert len(grads) == len(model.trainable_variables) > 0
    for v, g in zip(model.trainable_variables, grads, strict=True):
        assert g is not None, v.path
        got = fl.grad(v)
        assert got is not None, v.path
        np.testing.assert_array_equal(got, dense(g), err_msg=v.path)
        assert type(fl.grad_tensor(v)) is type(g), v.path  # IndexedSlices stay IndexedSlices
        parts = [c for _, c in fl.contributions(v)]
        np.testing.assert_allclose(np.sum(parts, axis=0), got, rtol=1e-5, atol=1e-6, err_msg=v.path)
        assert check_no_false_diagnosis(fl, v, got, v.path), v.path
    before = [v.numpy().copy() for v in model.trainable_variables]
    opt = keras.optimizers.Adam(0.01)
    opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    assert all(not np.array_equal(b, v.numpy()) for b, v in zip(before, model.trainable_variables, strict=True))
    # The flow's own gradients (TF values) feed the optimizer just as well.
    flowed = [fl.grad_tensor(v) for v in model.trainable_variables]
    opt.apply_gradients(zip(flowed, model.trainable_variables, strict=True))
    assert not hooks.hooks_installed()
    del tape


@pytest.mark.parametrize("make", MODELS, ids=lambda m: m.__name__)
def test_non_persistent_training_loop(make):
    """The usual loop: one gradient() call, apply_gradients, then look at the flow."""
    model, args, y = build(make)
    opt = keras.optimizers.SGD(0.1)
    for _ in range(2):
        with tv.GradientTape() as tape:
            loss = LOSS(y, model(*args, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        fl = tv.flow(tape, loss)  # after the step: recorded values, not the updated weights
        for v, g in zip(model.trainable_variables, grads, strict=True):
            np.testing.assert_array_equal(fl.grad(v), dense(g), err_msg=v.path)
    assert not hooks.hooks_installed()


def test_tv_tape_gradients_identical_to_tf_tape():
    """Recording changes nothing: same loss, same gradients, same updated weights."""
    results = []
    for cls in (tf.GradientTape, tv.GradientTape):
        model, args, y = build(subclassed_embedding)
        opt = keras.optimizers.Adam(0.01)
        with cls() as tape:
            loss = LOSS(y, model(*args, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        results.append((loss.numpy(), [dense(g) for g in grads], [v.numpy() for v in model.variables]))
    (l1, g1, w1), (l2, g2, w2) = results
    assert l1 == l2
    for a, b in zip(g1 + w1, g2 + w2, strict=True):
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------- names and scopes


def _layers_with_weights(model):
    return [layer for layer in model.layers if layer.weights]


@pytest.mark.parametrize("make", MODELS, ids=lambda m: m.__name__)
def test_variables_are_named_by_keras_path(make):
    model, args, y = build(make)
    tape, rec, loss, grads = train_step(model, args, y, "tv.GradientTape")
    g = rec.graph
    for v in model.trainable_variables:
        node = g.node_of(v)
        assert node is not None, v.path
        d = g.nx.nodes[node]
        assert d["kind"] == "variable"
        assert d["name"] == v.path
        assert d["path"] == v.path
        assert g.display_name(node) == v.path
    # Non-trainable ones that were read (BatchNormalization's moving stats) too.
    for v in model.non_trainable_variables:
        node = g.node_of(v)
        if node is not None and "batch_normalization" in v.path:
            assert g.nx.nodes[node]["name"] == v.path
    names = [d["name"] for _, d in g.nx.nodes(data=True) if d["kind"] == "variable"]
    assert len(names) == len(set(names))  # subclassed models too: no two variables named alike


@pytest.mark.slow
@pytest.mark.parametrize("make", MODELS, ids=lambda m: m.__name__)
def test_ops_keep_their_layer_scope(make):
    model, args, y = build(make)
    tape, rec, loss, grads = train_step(model, args, y, "tv.GradientTape")
    g = rec.graph
    ops = {n: d for n, d in g.nx.nodes(data=True) if d["kind"] == "op"}
    for layer in _layers_with_weights(model):
        want = f"{model.name}/{layer.name}"
        for w in layer.trainable_weights:
            consumers = list(g.nx.successors(g.node_of(w)))
            assert consumers, w.path
            for c in consumers:
                assert ops[c]["scope"] == want, (w.path, ops[c]["op_type"], ops[c]["scope"])
    scopes = {d["scope"] for d in ops.values()}
    for layer in model.layers:
        if isinstance(layer, keras.layers.InputLayer):
            continue
        want = f"{model.name}/{layer.name}"
        assert any(s == want or s.startswith(want + "/") for s in scopes), (want, sorted(scopes))
    for d in ops.values():
        assert not d["scope"].endswith("/")
    # The loss ran outside the model.
    (target,) = [n for n in ops if g.node_of(loss) == n]
    assert not ops[target]["scope"].startswith(model.name)


def test_subclassed_model_ops_outside_layers_have_the_model_scope():
    model, args, y = build(subclassed_embedding)
    tape, rec, loss, grads = train_step(model, args, y, "tv.GradientTape")
    g = rec.graph
    means = [d for _, d in g.nx.nodes(data=True) if d.get("op_type") == "Mean" and d["scope"] == model.name]
    assert means, sorted({d.get("scope") for _, d in g.nx.nodes(data=True)})


def test_model_used_as_a_global_inside_a_train_step_function():
    """The model is not a local of the frame that runs the block: names still resolve."""
    global GLOBAL_MODEL
    GLOBAL_MODEL, args, y = build(subclassed_embedding)
    tape, loss = _step_on_global_model(args, y)
    g = tape.graph
    for v in GLOBAL_MODEL.trainable_variables:
        assert g.nx.nodes[g.node_of(v)]["name"] == v.path
    del GLOBAL_MODEL


def _step_on_global_model(args, y):
    with tv.GradientTape() as tape:
        loss = LOSS(y, GLOBAL_MODEL(*args, training=True))
    return tape, loss


class _Trainer:
    """Holds the model as an attribute: the frame running the block sees only `self`."""

    def __init__(self, net):
        self.net = net

    def step(self, args, y):
        with tv.GradientTape(persistent=True) as tape:
            loss = LOSS(y, self.net(*args, training=True))
        return tape, loss


@pytest.mark.slow
@pytest.mark.parametrize("make", MODELS, ids=lambda m: m.__name__)
def test_model_reached_through_an_attribute_is_named_by_keras_path(make, monkeypatch):
    monkeypatch.setattr(
        hookstate.call_site_memo, "paths", hookstate.CallSiteMemo().paths
    )  # learn the paths in this very block
    net, args, y = build(make)
    tape, loss = _Trainer(net).step(args, y)
    g = tape.graph
    fl = tv.flow(tape, loss)
    for v in net.trainable_variables:
        d = g.nx.nodes[g.node_of(v)]
        assert d["name"] == d["path"] == v.path
        np.testing.assert_array_equal(fl.grad(v), dense(tape.gradient(loss, v)), err_msg=v.path)
    names = [d["name"] for _, d in g.nx.nodes(data=True) if d["kind"] == "variable"]
    assert set(names) <= {v.path for v in net.variables} and len(names) == len(set(names))


def test_python_name_of_a_keras_variable_outside_any_model():
    scale = keras.Variable(2.0, name="scale")
    x = tf.constant([1.0, 2.0])
    with tv.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(x * scale)
    g = tape.graph
    node = g.node_of(scale)
    assert g.nx.nodes[node]["name"] == "scale"
    assert tv.flow(tape, y).grad(scale) == tape.gradient(y, scale).numpy() == 3.0


# --------------------------------------------------------------------------- stateful updates


@pytest.mark.parametrize("make", [sequential_cnn, subclassed_embedding], ids=lambda m: m.__name__)
def test_batchnorm_moving_stat_updates_are_stateful_edges(make):
    model, args, y = build(make)
    (bn,) = [layer for layer in model.layers if isinstance(layer, L.BatchNormalization)]
    mean_before = bn.moving_mean.numpy().copy()
    tape, rec, loss, grads = train_step(model, args, y, "tv.GradientTape")
    assert not np.array_equal(bn.moving_mean.numpy(), mean_before)  # the update happened
    g = rec.graph
    fl = tv.flow(rec, loss)
    assigns = [
        n
        for n, d in g.nx.nodes(data=True)
        if d.get("op_type") == "AssignVariableOp" and d["scope"] == f"{model.name}/{bn.name}"
    ]
    assert len(assigns) == 2  # moving_mean and moving_variance
    targets = set()
    for n in assigns:
        edges = g.data_edges(n, out=False)
        assert edges
        for u, v, k, d in edges:
            r = fl.edge_reason[(u, v, k)]
            assert r.reason == "stateful", r
            if g.nx.nodes[u]["kind"] == "variable":
                targets.add(g.nx.nodes[u]["name"])
            else:
                assert g.tensors[d["tensor"]].dtype == "float32"
                assert fl.edge_grad(u, v, k) is None
    assert targets == {bn.moving_mean.path, bn.moving_variance.path}
    for v in model.trainable_variables:  # and nothing else changed
        np.testing.assert_array_equal(fl.grad(v), dense(tape.gradient(loss, v)))


# --------------------------------------------------------------------------- memory


def test_large_activations_stay_within_the_value_budget():
    import tracemalloc

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((128, 128, 3)), L.Conv2D(8, 3, activation="relu"), L.MaxPooling2D(4), L.Flatten(), L.Dense(2)]
    )
    x = tf.random.normal((8, 128, 128, 3))  # conv output: 8x126x126x8 floats, about 4 MiB
    y = tf.constant([0, 1] * 4)
    model(x)
    budget = 256 << 10
    with tv.GradientTape(persistent=True, max_value_bytes=budget, budget_bytes=budget) as tape:
        loss = LOSS(y, model(x, training=True))
    tracemalloc.start()
    try:
        g = tape.graph
        assert all("shape" in info.summary for info in g.tensors.values())  # computed on first use
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    kept = sum(info.value.nbytes for info in g.tensors.values() if info.value is not None)
    assert kept == g.kept_bytes <= budget
    big = [info for info in g.tensors.values() if info.value is None and info.summary.get("size", 0) * 4 > budget]
    assert len(big) >= 3 and g.oversized == len(big)
    assert max(info.summary["size"] for info in big) * 4 > 3 << 20
    for info in big:  # what is left of a big tensor: its statistics
        assert info.summary["shape"] == info.shape and "norm" in info.summary and "mean" in info.summary
    # Summaries are computed in chunks: no float64 copy of a whole 4 MiB activation.
    assert peak < budget + (4 << 20), peak
    assert g.truncated >= 2  # each fits max_value_bytes, but not what is left of the budget
    assert g.budget_note == f"values of {g.truncated} tensors not kept: over the 256 KiB budget"
    fl = tv.flow(tape, loss)  # the flow still uses the real tensors, so it stays exact
    for v in model.trainable_variables:
        np.testing.assert_array_equal(fl.grad(v), dense(tape.gradient(loss, v)))


def test_budget_note_is_none_when_everything_was_kept():
    model, args, y = build(sequential_cnn)
    tape, rec, loss, grads = train_step(model, args, y, "tv.GradientTape")
    assert rec.graph.truncated == 0
    assert rec.graph.budget_note is None


def test_unwatched_keras_variable_reason_says_how_to_watch_it():
    keras.utils.set_random_seed(0)
    layer = L.Dense(2)
    x = tf.ones([1, 3])
    layer(x)
    with tv.GradientTape(watch_accessed_variables=False, persistent=True) as tape:
        tape.watch(layer.kernel.value)  # tape.watch takes the tf.Variable inside
        y = tf.reduce_sum(layer(x))
    fl = tv.flow(tape, y)
    np.testing.assert_array_equal(fl.grad(layer.kernel), tape.gradient(y, layer.kernel).numpy())
    assert fl.grad(layer.bias) is None and tape.gradient(y, layer.bias) is None
    r = fl.why_none(layer.bias)
    assert r.reason == "not_watched"
    assert layer.bias.path in r.message and "tape.watch(v.value)" in r.message

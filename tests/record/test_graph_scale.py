"""Graph building that grows linearly with the program, and Keras paths for variables
whose model the user's code reaches only through an attribute, a dict or a closure.

* Linking constants to the exported values they equal ("came back from outside TF") used
  to compare every constant with every exported value: a loop that calls ``float(...)``
  each step and multiplies by a Python number each step cost (steps x steps). The result
  must be exactly what that all-pairs search gave.
* A Keras 3 variable wraps a tf.Variable that knows nothing of it; the capture learns the
  wrapper's path while the wrapper reads it, wherever the model is kept.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.record import callsites, hooks, hookstate

L = keras.layers


# --------------------------------------------------------------------------- outside values


def _reference_links(g):
    """The original all-pairs search: constant node -> first exported value's node."""
    exported = [
        g.tensors[tid]
        for tid in g.capture.exported
        if tid in g.tensors and g.tensors[tid].value is not None and g.tensors[tid].trainable
    ]
    links = {}
    for n, d in g.nx.nodes(data=True):
        if d["kind"] != "constant":
            continue
        c = g.tensors[d["outputs"][0]]
        if c.value is None:
            continue
        for e in exported:
            same_value = np.array_equal(e.value, c.value.astype(e.value.dtype, copy=False))
            if e.node != n and e.shape == c.shape and same_value:
                links[n] = e.node
                break
    return links


def _links(g):
    got = {n: d["came_from"] for n, d in g.nx.nodes(data=True) if "came_from" in d}
    edges = {v: u for u, v, k in g.nx.edges(keys=True) if k == "outside"}
    assert edges == got
    return got


def _exporting_loop(steps: int):
    """Each step exports a value (float / .numpy()) and makes constants (Python numbers)."""
    x = tf.Variable([1.0, -2.0, 0.5])
    with tv.GradientTape() as tape:
        h = x
        for i in range(steps):
            h = tf.tanh(h) * 0.5 + float(i % 3)  # constants 0.5 and 0.0 / 1.0 / 2.0
            logged = float(tf.reduce_sum(h))  # exported, like a loss printed every step
            h = h * tf.constant(logged)  # ... and back as a constant
            tf.reduce_max(h * 0.0 + float(i % 4)).numpy()  # exports equal to later constants
    return tape


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
def test_outside_links_equal_the_all_pairs_search_on_edge_values():
    x = tf.Variable([1.0, 2.0])
    with tv.GradientTape() as tape:
        a = x * 0.0
        neg = -tf.reduce_sum(a)  # -0.0
        nan = tf.reduce_sum(x) * float("nan")
        y = x * 2
        y64 = tf.cast(y, tf.float64)
        exported = [neg.numpy(), nan.numpy(), y.numpy(), y64.numpy(), y.numpy()]  # y twice
        uses = [
            tf.constant(0.0) + neg,  # equals -0.0
            tf.constant(float("nan")) + nan,  # NaN equals nothing
            tf.constant(exported[2]) * x,  # float32 round trip
            tf.constant(exported[2].astype(np.float64)) * 1.0,  # equal after a cast
            tf.constant(exported[2][:1]) * x,  # another shape
            tf.constant([2.0, 4.5]) * x,  # same shape, other values
            tf.constant(np.array([2, 4], np.int32)) * 1,  # ints equal to a float export
            tf.constant(3 + 0j) * 1.0,  # complex, nothing complex was exported
        ]
        own = tf.constant([7.0, 8.0])
        own.numpy()  # a constant exported itself is not its own source
        z = own * x
    g = tape.graph
    want = _reference_links(g)
    assert _links(g) == want
    assert len(want) >= 4  # -0.0, the float32 and float64 round trips, the int constant
    assert g.node_of(neg) in want.values() and g.node_of(y) in want.values()
    assert g.node_of(nan) not in want.values()
    del uses, z


@pytest.mark.parametrize("steps", [5, 40])
def test_outside_links_equal_the_all_pairs_search_in_a_logging_loop(steps):
    g = _exporting_loop(steps).graph
    want = _reference_links(g)
    assert len(want) >= steps  # every logged value, and the step numbers
    assert _links(g) == want


def test_outside_links_compare_each_constant_with_few_exports(monkeypatch):
    """Linear, not (exports x constants): each constant is compared with the exports that
    have its exact contents, not with every export of its shape."""
    tape = _exporting_loop(200)
    calls = []
    real = np.array_equal

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(np, "array_equal", counting)
    g = tape.graph
    monkeypatch.undo()
    n_constants = sum(1 for _, d in g.nx.nodes(data=True) if d["kind"] == "constant")
    n_exported = len(g.capture.exported)
    assert n_exported >= 400 and n_constants >= 600
    assert len(calls) <= n_constants  # the all-pairs search made ~ n_constants * n_exported / 3
    assert _links(g) == _reference_links(g)


# --------------------------------------------------------------------------- Keras paths


class MLP(keras.Model):
    """Layers made in __init__, built on first call: their tf.Variables are named
    "mlp/kernel", "mlp/bias" (twice), their Keras paths "mlp/hidden/kernel", ..."""

    def __init__(self):
        super().__init__(name="mlp")
        self.hidden = L.Dense(4, activation="tanh", name="hidden")
        self.drop = L.Dropout(0.2)
        self.out = L.Dense(1, name="out")

    def call(self, x, training=False):
        return self.out(self.drop(self.hidden(x), training=training))


def _mlp():
    keras.utils.set_random_seed(0)
    net = MLP()
    x = tf.constant(np.random.default_rng(0).normal(size=(5, 3)).astype("float32"))
    y = tf.constant(np.arange(5, dtype="float32").reshape(5, 1))
    net(x)
    # The case that matters: TF's names are not the Keras paths.
    assert any(v.value.name.split(":")[0] != v.path for v in net.trainable_variables)
    return net, x, y


class Trainer:
    def __init__(self, net):
        self.model = net
        self.optimizer = keras.optimizers.SGD(0.05)

    def loss(self, x, y):
        return tf.reduce_mean((self.model(x, training=True) - y) ** 2)

    def train_step(self, x, y):
        raise NotImplementedError


class MLPTrainer(Trainer):
    def train_step(self, x, y):
        with tv.GradientTape(persistent=True) as tape:
            loss = self.loss(x, y)
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables, strict=True))
        return tape, loss, grads


def _assert_named_by_path(g, net):
    for v in net.trainable_variables:
        node = g.node_of(v)
        assert node is not None, v.path
        d = g.nx.nodes[node]
        assert d["name"] == v.path
        assert d["path"] == v.path
        assert g.display_name(node) == v.path
    paths = {v.path for v in net.variables}
    names = [d["name"] for _, d in g.nx.nodes(data=True) if d["kind"] == "variable"]
    assert set(names) <= paths  # the dropout's seed state too
    assert len(names) == len(set(names))


@pytest.fixture
def fresh_paths(monkeypatch):
    """Forget what earlier tests' reads showed: the paths must come from this block."""
    monkeypatch.setattr(hookstate.call_site_memo, "paths", hookstate.CallSiteMemo().paths)


def test_subclassed_trainer_with_self_model_names_variables_by_keras_path(fresh_paths):
    net, x, y = _mlp()
    trainer = MLPTrainer(net)
    for _ in range(2):  # the second step names them from what the first one learned
        tape, loss, grads = trainer.train_step(x, y)
        g = tape.graph
        _assert_named_by_path(g, net)
        fl = tv.flow(tape, loss)
        for v, grad in zip(net.trainable_variables, grads, strict=True):
            np.testing.assert_array_equal(fl.grad(v), grad.numpy(), err_msg=v.path)
            np.testing.assert_array_equal(fl.grad(v), tape.gradient(loss, v).numpy(), err_msg=v.path)
    assert not hooks.hooks_installed()


def test_model_held_in_a_dict_or_a_closure_is_named_by_keras_path(fresh_paths):
    net, x, y = _mlp()
    bundle = {"nets": [net]}

    def step(b):
        with tv.GradientTape() as tape:
            loss = tf.reduce_mean((b["nets"][0](x) - y) ** 2)
        return tape, loss

    tape, loss = step(bundle)
    _assert_named_by_path(tape.graph, net)
    fl = tv.flow(tape, loss)
    plain = _plain_gradients(lambda: bundle["nets"][0](x), y, net)
    grads = dict(zip([v.path for v in net.trainable_variables], plain, strict=True))
    for v in net.trainable_variables:
        np.testing.assert_allclose(fl.grad(v), grads[v.path], rtol=1e-6, err_msg=v.path)

    def make_step():
        def inner():
            with tv.GradientTape() as tape:
                tf.reduce_mean((net(x) - y) ** 2)  # net: a closure cell
            return tape

        return inner

    _assert_named_by_path(make_step()().graph, net)


def _plain_gradients(forward, y, net):
    with tf.GradientTape() as t:
        loss = tf.reduce_mean((forward() - y) ** 2)
    return [g.numpy() for g in t.gradient(loss, net.trainable_variables)]


def test_tv_record_on_a_plain_tape_in_a_trainer_names_variables_by_keras_path(fresh_paths):
    net, x, y = _mlp()

    class RecordingTrainer(Trainer):
        def train_step(self, x, y):
            with tf.GradientTape() as tape, tv.record(tape) as rec:
                loss = self.loss(x, y)
            return rec, loss, tape.gradient(loss, self.model.trainable_variables)

    rec, loss, grads = RecordingTrainer(net).train_step(x, y)
    _assert_named_by_path(rec.graph, net)
    fl = tv.flow(rec, loss)
    for v, grad in zip(net.trainable_variables, grads, strict=True):
        np.testing.assert_array_equal(fl.grad(v), grad.numpy(), err_msg=v.path)


def test_plain_tf_variables_keep_their_names_and_are_looked_at_once(fresh_paths, monkeypatch):
    ws = [tf.Variable(float(i + 1), name=f"w{i}") for i in range(3)]
    walks = []
    real = callsites._keras_path_on_stack

    def counting(*args):
        walks.append(1)
        return real(*args)

    monkeypatch.setattr(callsites, "_keras_path_on_stack", counting)
    for _ in range(3):
        with tv.GradientTape() as tape:
            loss = ws[0] * ws[1] + ws[2] * ws[0]
        g = tape.graph
        assert sorted(d["name"] for _, d in g.nx.nodes(data=True) if d["kind"] == "variable") == ["w0", "w1", "w2"]
        assert all(d["path"] is None for _, d in g.nx.nodes(data=True) if d["kind"] == "variable")
    assert len(walks) == len(ws)  # one look per variable, in the first recording only
    del loss

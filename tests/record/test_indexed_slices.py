"""IndexedSlices gradients (tf.gather on a variable, Keras Embedding): the flow gives TF's
exact values (dense as numpy, the IndexedSlices itself as a TF value), contributions add
up, and clipping gives what TF's clip functions give on the very same IndexedSlices."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.gradients import clipping


def dense(g):
    return tf.convert_to_tensor(g).numpy()


def assert_same_slices(a, b):
    assert isinstance(a, tf.IndexedSlices) and isinstance(b, tf.IndexedSlices)
    np.testing.assert_array_equal(a.values.numpy(), b.values.numpy())
    np.testing.assert_array_equal(a.indices.numpy(), b.indices.numpy())
    np.testing.assert_array_equal(np.asarray(a.dense_shape), np.asarray(b.dense_shape))


def gather_program():
    """tf.gather on a tf.Variable (a ResourceGather), repeated rows included."""
    w = tf.Variable(np.arange(12, dtype="float32").reshape(4, 3) / 10.0, name="table")
    with tv.GradientTape(persistent=True) as tape:
        rows = tf.gather(w, [0, 2, 2])
        loss = tf.reduce_sum(tf.tanh(rows) * rows)
    return tape, loss, w


def embedding_program():
    """A Keras Embedding layer (a GatherV2 on the variable's value)."""
    keras.utils.set_random_seed(0)
    emb = keras.layers.Embedding(6, 2)
    ids = tf.constant([[1, 2, 2], [5, 1, 0]])
    emb(ids)
    with tv.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(tf.square(emb(ids) - 0.5))
    return tape, loss, emb.embeddings


PROGRAMS = [gather_program, embedding_program]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_grad_is_dense_numpy_and_grad_tensor_is_the_indexed_slices(program):
    tape, loss, var = program()
    want = tape.gradient(loss, var)
    assert isinstance(want, tf.IndexedSlices)
    fl = tv.flow(tape, loss)
    got = fl.grad(var)
    assert isinstance(got, np.ndarray)
    assert got.shape == tuple(var.shape)
    np.testing.assert_array_equal(got, tf.convert_to_tensor(want).numpy())
    assert_same_slices(fl.grad_tensor(var), want)
    # The node id gives the same answers.
    node = fl.graph.node_of(var)
    np.testing.assert_array_equal(fl.grad(node), got)
    assert_same_slices(fl.grad_tensor(node), want)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_contributions_and_steps_with_indexed_slices(program):
    tape, loss, var = program()
    fl = tv.flow(tape, loss)
    g = fl.graph
    parts = fl.contributions(var)
    assert parts
    for consumer, c in parts:
        assert isinstance(c, np.ndarray) and c.shape == tuple(var.shape)
        for u, v, k, _ in g.data_edges(g.node_of(var)):
            if v == consumer:
                np.testing.assert_array_equal(fl.edge_grad(u, v, k), c)
    np.testing.assert_array_equal(np.sum([c for _, c in parts], axis=0), fl.grad(var))
    for step in fl.steps:  # every step's gradient is plain numpy
        grads = step.grad if isinstance(step.grad, list) else [step.grad]
        assert all(x is None or isinstance(x, np.ndarray) for x in grads)
    assert fl.step_of(g.node_of(var)) is not None
    assert fl.why_none(var) is None


def test_sparse_and_dense_uses_of_one_variable_add_up():
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="w")
    with tv.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(tf.gather(w, [2, 2, 0]) ** 2) + tf.reduce_sum(w * 3.0)
    want = tape.gradient(loss, w)
    fl = tv.flow(tape, loss)
    np.testing.assert_array_equal(fl.grad(w), dense(want))
    assert type(fl.grad_tensor(w)) is type(want)
    parts = fl.contributions(w)
    assert len(parts) == 2  # the gather (sparse) and the multiply (dense)
    np.testing.assert_allclose(np.sum([c for _, c in parts], axis=0), fl.grad(w), rtol=1e-6)


def test_gather_on_a_non_trainable_variable_shows_the_variable():
    table = tf.Variable([1.0, 2.0, 3.0], trainable=False)
    w = tf.Variable(2.0)
    with tv.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(tf.gather(table, [0, 2])) * w
    g = tape.graph
    node = g.node_of(table)
    assert node is not None and g.nx.nodes[node]["kind"] == "variable"
    assert g.nx.nodes[node]["name"] == "table"
    assert not [n for n, d in g.nx.nodes(data=True) if d["kind"] == "input"]
    fl = tv.flow(tape, loss)
    assert fl.grad(table) is None and tape.gradient(loss, table) is None
    assert fl.why_none(table).reason == "not_watched"
    assert fl.grad(w) == tape.gradient(loss, w).numpy() == 4.0


def test_optimizer_step_with_flow_grad_tensor_equals_step_with_tape_gradient():
    results = []
    for use_flow in (False, True):
        keras.utils.set_random_seed(0)
        emb = keras.layers.Embedding(5, 3)
        ids = tf.constant([[0, 3, 3, 4]])
        emb(ids)
        with tv.GradientTape(persistent=True) as tape:
            loss = tf.reduce_sum(emb(ids) ** 2)
        grad = tv.flow(tape, loss).grad_tensor(emb.embeddings) if use_flow else tape.gradient(loss, emb.embeddings)
        keras.optimizers.SGD(0.1).apply_gradients([(grad, emb.embeddings)])
        results.append(emb.embeddings.numpy())
    np.testing.assert_array_equal(results[0], results[1])


# --------------------------------------------------------------------------- clipping


def _grads():
    """{name: TF gradient}: an IndexedSlices with repeated rows, and a dense tensor."""
    tape, loss, w = gather_program()
    b = tf.Variable([3.0, -4.0])
    with tv.GradientTape() as tape2:
        loss2 = tf.reduce_sum(b * b)
    grads = {"table": tape.gradient(loss, w), "b": tape2.gradient(loss2, b)}
    assert isinstance(grads["table"], tf.IndexedSlices)
    return grads


@pytest.mark.parametrize("clip_norm", [0.5, 1.0, 100.0])
def test_clip_by_norm_equals_tf_on_indexed_slices(clip_norm):
    grads = _grads()
    out = clipping.clip(grads, "by_norm", clip_norm=clip_norm)
    assert_same_slices(out["table"], tf.clip_by_norm(grads["table"], clip_norm))
    np.testing.assert_array_equal(out["b"].numpy(), tf.clip_by_norm(grads["b"], clip_norm).numpy())


def test_clip_by_value_equals_tf_on_indexed_slices():
    grads = _grads()
    out = clipping.clip(grads, "by_value", clip_value=(-0.3, 0.5))
    assert_same_slices(out["table"], tf.clip_by_value(grads["table"], -0.3, 0.5))
    assert np.abs(out["table"].values.numpy()).max() <= 0.5
    np.testing.assert_array_equal(out["b"].numpy(), tf.clip_by_value(grads["b"], -0.3, 0.5).numpy())


def test_clip_by_global_norm_equals_tf_with_indexed_slices():
    grads = _grads()
    out = clipping.clip(grads, "by_global_norm", clip_norm=1.0)
    want, _ = tf.clip_by_global_norm([grads["table"], grads["b"]], 1.0)
    assert_same_slices(out["table"], want[0])
    np.testing.assert_array_equal(out["b"].numpy(), want[1].numpy())


def test_clip_none_keeps_the_indexed_slices():
    grads = _grads()
    out = clipping.clip(grads, "none")
    assert out["table"] is grads["table"]


@pytest.mark.parametrize("mode", ["none", "by_norm", "by_value", "by_global_norm"])
def test_clip_report_with_indexed_slices(mode):
    grads = _grads()
    weights = {"table": tf.ones([4, 3]), "b": tf.constant([1.0, 1.0])}
    rep = clipping.report(grads, weights, mode=mode, clip_norm=1.0, clip_value=(-0.3, 0.5), lr=0.1)
    clipped = clipping.clip(grads, mode, clip_norm=1.0, clip_value=(-0.3, 0.5))
    for name in grads:
        np.testing.assert_array_equal(rep.raw[name], dense(grads[name]))
        np.testing.assert_array_equal(rep.clipped[name], dense(clipped[name]))
        np.testing.assert_allclose(rep.updated[name], weights[name].numpy() - 0.1 * dense(clipped[name]), rtol=1e-6)
        g = grads[name]
        seen_by_tf = g.values if isinstance(g, tf.IndexedSlices) else g
        assert rep.norm_before[name] == float(tf.norm(seen_by_tf))
    # The panel's norms are the ones TF's clip functions use: an IndexedSlices' values
    # (repeated rows counted as often as they appear), so "under the limit" means TF won't clip.
    want = float(tf.linalg.global_norm(list(grads.values())))
    assert rep.global_norm_before == pytest.approx(want, rel=1e-6)


def test_clip_flow_gradients_of_an_embedding():
    """The explorer's path: gradients straight from the flow, clipped by TF."""
    tape, loss, var = embedding_program()
    fl = tv.flow(tape, loss)
    raw = {"embeddings": fl.grad_tensor(var)}
    out = clipping.clip(raw, "by_norm", clip_norm=0.1)
    assert_same_slices(out["embeddings"], tf.clip_by_norm(tape.gradient(loss, var), 0.1))

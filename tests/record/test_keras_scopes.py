"""keras_scopes_at: which parts of a name scope Keras's own layers and Keras loss objects
running on the stack opened, read in one walk (the recorder asks once per new scope)."""

from __future__ import annotations

import sys

import keras
import pytest
import tensorflow as tf
from gallery_models import GALLERY, MORE

import tapeviz as tv
from tapeviz.record import recorder
from tapeviz.record.keras_scopes import from_keras_stack, keras_scopes_at, keras_stack_mark


def test_a_keras_layer_counts_and_a_layer_class_of_the_users_does_not():
    found = {}

    def probe(x):
        found["at"] = keras_scopes_at("mine/probe/x/", sys._getframe(), None)
        return x

    class Mine(keras.layers.Layer):  # the user's class: its scope is the user's composition
        def __init__(self):
            super().__init__(name="mine")
            self.inner = keras.layers.Lambda(probe, name="probe")

        def call(self, x):
            return self.inner(x)

    Mine()(tf.ones((1, 2)))
    assert found["at"] == ([], ["mine/probe"])


def test_a_loss_object_counts_as_a_loss_and_its_class_of_the_users_not_as_a_layer():
    found = {}

    class Probe(keras.losses.Loss):
        def call(self, y, p):
            found["at"] = keras_scopes_at("compile/mse_probe/", sys._getframe(), None)
            return tf.reduce_mean((y - p) ** 2)

    Probe(name="mse_probe")(tf.ones((2,)), tf.zeros((2,)))
    assert found["at"] == (["compile/mse_probe"], [])


def test_the_walk_ends_at_the_block_frame():
    found = {}

    def probe(x):
        here = sys._getframe()
        found["at"] = keras_scopes_at("probe/", here, here)  # the block is the op's own frame
        return x

    keras.layers.Lambda(probe, name="probe")(tf.ones((1, 2)))
    assert found["at"] == ([], [])


def test_a_recorded_step_keeps_the_scopes_of_its_layers_and_loss():
    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(4, name="d1"), keras.layers.Dense(1, name="d2")], name="seq"
    )
    loss_fn = keras.losses.MeanSquaredError(name="mse")
    x, y = tf.ones((2, 3)), tf.zeros((2, 1))
    with tv.GradientTape() as tape:
        loss = loss_fn(y, model(x))
    cap = tape.graph.capture
    assert {"seq/d1", "seq/d2"} <= set(cap.layer_scopes)
    assert "seq" not in cap.layer_scopes  # a Sequential is the user's composition
    assert "mse" in cap.loss_scopes
    assert tape.gradient(loss, model.trainable_variables)[0] is not None


# -- Keras's own name-scope stack (from_keras_stack) against the walk ---------------------
#
# The recorder asks from_keras_stack first and walks only where it answers None. The
# fixture below makes every answer it gives be checked against the walk from the same op
# frame to the same block: the two must be equal on every scope of the programs below.


@pytest.fixture
def crosscheck(monkeypatch):
    """Wraps the recorder's from_keras_stack: each answer it gives is compared with the
    walk's (``keras_scopes_at`` from the op's frame to the block, as the recorder would
    walk); returns {"told": [(scope, layers)], "walked": [scope], "differ": [...]}."""
    seen: dict = {"told": [], "walked": [], "differ": []}
    told = recorder.from_keras_stack

    def checked(scope, mark):
        layers = told(scope, mark)
        callback = sys._getframe(1)  # the recorder's op callback: its closure holds the block
        if layers is None:
            seen["walked"].append(scope)
            return None
        walk = keras_scopes_at(scope, callback.f_back, callback.f_locals["block"])
        seen["told"].append((scope, layers))
        if walk != ([], layers):
            seen["differ"].append((scope, layers, walk))
        return layers

    monkeypatch.setattr(recorder, "from_keras_stack", checked)
    return seen


@pytest.mark.parametrize("name", ["Transformer", "U-Net", "seq2seq LSTM", "GAN", "VAE", "GPT-48", "actor-critic"])
def test_the_keras_stack_answers_as_the_walk_on_the_gallery_models(crosscheck, name):
    step = {**GALLERY, **MORE}[name]()
    assert crosscheck["told"], "no scope was told by Keras's stack"
    assert crosscheck["differ"] == []
    cap = step.tape.graph.capture
    assert {s for _, layers in crosscheck["told"] for s in layers} <= set(cap.layer_scopes)


def test_a_users_name_scope_named_like_a_keras_layer_is_not_that_layer(crosscheck):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="dense")], name="seq")
    x = tf.ones((2, 3))
    model(x)
    with tv.GradientTape() as tape:
        with tf.name_scope("dense"):
            alone = tf.reduce_sum(x * 2.0)  # the user's scope, no layer running
        loss = alone + tf.reduce_sum(model(x))
    assert crosscheck["differ"] == []
    assert "dense/" in crosscheck["walked"]  # the user's scope is not on Keras's stack: walked
    assert ("seq/dense/", ["seq/dense"]) in crosscheck["told"]  # the layer's own, told by the stack
    assert "dense" not in tape.graph.capture.layer_scopes
    assert "seq/dense" in tape.graph.capture.layer_scopes
    assert tape.gradient(loss, model.trainable_variables)[0] is not None

    with tv.GradientTape() as tape:
        with tf.name_scope("dense"):
            loss = tf.reduce_sum(model(x))  # the user's "dense" around the layer "dense"
    # a part that is not Keras's is walked; the walk's rule (a part named as a running
    # layer is that layer's) holds as before
    assert crosscheck["differ"] == []
    assert "dense/seq/dense/" in crosscheck["walked"]
    assert "dense/seq/dense" in tape.graph.capture.layer_scopes
    assert tape.gradient(loss, model.trainable_variables)[0] is not None


def test_a_layer_called_inside_another_layers_call(crosscheck):
    class Mine(keras.layers.Layer):  # the user's layer calling a Keras layer in its call
        def __init__(self):
            super().__init__(name="mine")
            self.inner = keras.layers.Dense(2, name="inner")

        def call(self, x):
            return self.inner(x)

    mine = Mine()
    attention = keras.layers.MultiHeadAttention(2, 2, name="att")  # Keras's layer calling Keras's
    x = tf.ones((1, 3, 4))
    mine(x), attention(x, x)
    with tv.GradientTape() as tape:
        loss = tf.reduce_sum(mine(x)) + tf.reduce_sum(attention(x, x))
    cap = tape.graph.capture
    assert crosscheck["differ"] == []
    told = dict(crosscheck["told"])
    assert told["mine/inner/"] == ["mine/inner"]  # the user's class is not a Keras layer
    assert told["att/query/"] == ["att", "att/query"]
    assert {"mine/inner", "att", "att/query"} <= set(cap.layer_scopes)
    assert "mine" not in cap.layer_scopes
    assert tape.gradient(loss, attention.trainable_variables)[0] is not None


def test_a_sequential_inside_a_model(crosscheck):
    inner = keras.Sequential([keras.layers.Dense(3, name="d1")], name="inner_seq")
    inp = keras.Input((2,))
    model = keras.Model(inp, keras.layers.Dense(1, name="d2")(inner(inp)), name="outer")
    x = tf.ones((2, 2))
    model(x)
    with tv.GradientTape() as tape:
        loss = tf.reduce_sum(model(x))
    cap = tape.graph.capture
    assert crosscheck["differ"] == []
    told = dict(crosscheck["told"])
    assert told["outer/inner_seq/d1/"] == ["outer/inner_seq/d1"]  # neither model is a layer
    assert told["outer/d2/"] == ["outer/d2"]
    assert {"outer/inner_seq/d1", "outer/d2"} <= set(cap.layer_scopes)
    assert not {"outer", "outer/inner_seq"} & set(cap.layer_scopes)
    assert tape.gradient(loss, model.trainable_variables)[0] is not None


def test_a_loss_objects_scope_is_walked(crosscheck):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name="d")], name="seq")
    model.compile(loss="mse")
    x, y = tf.ones((2, 3)), tf.zeros((2, 1))
    model(x)
    with tv.GradientTape() as tape:
        loss = model.compute_loss(x=x, y=y, y_pred=model(x))
    cap = tape.graph.capture
    assert crosscheck["differ"] == []
    assert "compile_loss/mse/" in crosscheck["walked"]  # a loss object has no caller on the stack
    assert {"compile_loss", "compile_loss/mse"} <= set(cap.loss_scopes)
    assert "seq/d" in cap.layer_scopes
    assert tape.gradient(loss, model.trainable_variables)[0] is not None


def test_a_model_built_inside_the_tape(crosscheck):
    model = keras.Sequential([keras.layers.Dense(2, name="d")], name="seq")  # built at its first call
    with tv.GradientTape() as tape:
        loss = tf.reduce_sum(model(tf.ones((2, 3))))
    assert crosscheck["differ"] == []
    assert "seq/d/kernel/" in crosscheck["walked"]  # the variable's own scope, made as the layer builds
    assert ("seq/d/", ["seq/d"]) in crosscheck["told"]  # its call, once built
    assert "seq/d" in tape.graph.capture.layer_scopes
    assert tape.gradient(loss, model.trainable_variables)[0] is not None


def test_from_keras_stack_reads_only_what_the_block_opened():
    found: dict = {"mark": None}

    def probe(x):
        found["outer"] = from_keras_stack("seq/probe/", found["mark"])
        found["here"] = from_keras_stack("seq/probe/", keras_stack_mark())  # both opened before
        found["other"] = from_keras_stack("seq/probe/x/", found["mark"])  # a part not on the stack
        found["none"] = from_keras_stack("seq/probe/", None)
        return x

    model = keras.Sequential([keras.layers.Lambda(probe, name="probe")], name="seq")
    model(tf.ones((1, 2)))  # built
    found["mark"] = keras_stack_mark()
    model(tf.ones((1, 2)))
    assert found["outer"] == ["seq/probe"]  # the Lambda is Keras's layer, the Sequential not
    assert found["here"] == []
    assert found["other"] is None
    assert found["none"] is None


def test_from_keras_stack_walks_after_clear_session_replaced_the_stack():
    found = {}

    def probe(x):
        found["at"] = from_keras_stack("probe/", found["mark"])
        return x

    with keras.name_scope("outer"):
        found["mark"] = keras_stack_mark()  # Keras's stack, one entry deep
    keras.backend.clear_session(free_memory=False)  # Keras's state, and its stack, replaced
    keras.layers.Lambda(probe, name="probe")(tf.ones((1, 2)))
    assert found["mark"] is not None
    assert found["at"] is None  # which entries are the block's is unknown: walked

"""keras_scopes_at: which parts of a name scope Keras's own layers and Keras loss objects
running on the stack opened, read in one walk (the recorder asks once per new scope)."""

from __future__ import annotations

import sys

import keras
import tensorflow as tf

import tapeviz as tv
from tapeviz.record.keras_scopes import keras_scopes_at


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

"""Three small real Keras 3 models, each as ``make() -> (model, args, labels)``: a Sequential
CNN, a functional model with two inputs, a subclassed model with an embedding. Trained by
record/test_models.py, placed by picture/test_placement.py."""

import keras
import numpy as np
import tensorflow as tf

L = keras.layers


def sequential_cnn():
    """Conv2D + pooling + Flatten + BatchNormalization + Dropout + Dense, on 6x6x2 images."""
    model = keras.Sequential(
        [
            keras.Input((6, 6, 2)),
            L.Conv2D(3, 3, activation="relu"),
            L.MaxPooling2D(),
            L.Flatten(),
            L.BatchNormalization(),
            L.Dropout(0.5),
            L.Dense(3),
        ]
    )
    rng = np.random.default_rng(1)
    x = tf.constant(rng.normal(size=(4, 6, 6, 2)).astype("float32"))
    y = tf.constant([0, 1, 2, 1])
    return model, (x,), y


def functional_two_inputs():
    """Dense branch + Embedding branch, concatenated; average pooling over the sequence."""
    dense_in = keras.Input((5,), name="features")
    ids_in = keras.Input((3,), dtype="int32", name="ids")
    h = L.Dense(4, activation="tanh")(dense_in)
    h = L.Dropout(0.3)(h)
    e = L.Embedding(10, 2)(ids_in)
    e = L.GlobalAveragePooling1D()(e)
    out = L.Dense(3)(L.Concatenate()([h, e]))
    model = keras.Model([dense_in, ids_in], out, name="two_inputs")
    rng = np.random.default_rng(2)
    x = tf.constant(rng.normal(size=(4, 5)).astype("float32"))
    ids = tf.constant([[1, 2, 3], [3, 4, 3], [0, 0, 1], [9, 9, 2]], dtype=tf.int32)
    return model, ([x, ids],), tf.constant([2, 0, 1, 1])


class Subclassed(keras.Model):
    def __init__(self):
        super().__init__(name="subclassed")
        self.emb = L.Embedding(12, 3)
        self.conv = L.Conv1D(4, 2, activation="relu")
        self.pool = L.AveragePooling1D(2)
        self.bn = L.BatchNormalization()
        self.drop = L.Dropout(0.25)
        self.head = L.Dense(3)

    def call(self, ids, training=False):
        h = self.pool(self.conv(self.emb(ids)))
        h = tf.reduce_mean(h, axis=1)  # an op of the model itself, outside any layer
        h = self.drop(self.bn(h, training=training), training=training)
        return self.head(h)


def subclassed_embedding():
    model = Subclassed()
    ids = tf.constant([[1, 2, 3, 4, 5], [5, 4, 3, 3, 1], [0, 0, 1, 11, 7], [9, 9, 2, 2, 2]], dtype=tf.int32)
    return model, (ids,), tf.constant([0, 2, 1, 0])


MODELS = [sequential_cnn, functional_two_inputs, subclassed_embedding]

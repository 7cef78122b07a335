"""Run by tests/record/test_distribute.py in a fresh process: two logical CPUs must be configured
before TensorFlow's runtime starts, which a pytest worker has long done.

A Keras model trained one step under ``tf.distribute.MirroredStrategy.run`` on two
logical CPUs, once with a plain ``tf.GradientTape`` and once with ``tv.GradientTape``
inside the replica function (eager ``strategy.run`` runs each replica in its own
thread). Prints one JSON line: per replica, the thread, the loss, the plain tape's
gradients, the tapeviz tape's own ``tape.gradient`` and ``tv.flow(...).grad`` for every
trainable variable, and how many ops each capture holds.
"""

import json
import threading

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402  (after the device configuration)
from tensorflow.python.eager import context  # noqa: E402

import tapeviz as tv  # noqa: E402
from tapeviz.record import hooks, replay  # noqa: E402

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])
    model.build((None, 3))

xs = np.random.default_rng(0).normal(size=(4, 3)).astype("float32")
# Each replica gets its own half of the batch, so their gradients differ.
per_replica = strategy.experimental_distribute_values_from_function(
    lambda ctx: tf.constant(xs[2 * ctx.replica_id_in_sync_group : 2 * ctx.replica_id_in_sync_group + 2])
)

plain: dict = {}
seen: dict = {}


def plain_step(x):
    rid = int(tf.distribute.get_replica_context().replica_id_in_sync_group)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True)))
    plain[rid] = [g.numpy().tolist() for g in tape.gradient(loss, model.trainable_variables)]
    return loss


def tapeviz_step(x):
    rid = int(tf.distribute.get_replica_context().replica_id_in_sync_group)
    with tv.GradientTape(persistent=True) as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True)))
    fl = tv.flow(tape, loss)
    grads = tape.gradient(loss, model.trainable_variables)
    seen[rid] = {
        "thread": threading.get_ident(),
        "loss": float(loss.numpy()),
        "tape": [g.numpy().tolist() for g in grads],
        "flow": [fl.grad(v).tolist() for v in model.trainable_variables],
        "ops": len(fl.graph.capture.ops),
        "names": sorted(fl.gradients()),
        "paths": sorted(v.path for v in model.trainable_variables),
    }
    return loss


reduced: dict = {}


def all_reduce_step(x, tape_class):
    """ReplicaContext.all_reduce inside the tape: the replicas wait for each other in the
    middle of the block, so their recordings interleave in time."""
    ctx = tf.distribute.get_replica_context()
    rid = int(ctx.replica_id_in_sync_group)
    with tape_class(persistent=True) as tape:
        y = ctx.all_reduce("sum", tf.reduce_sum(model(x, training=True)))
        loss = y * y
    grads = [g.numpy().tolist() for g in tape.gradient(loss, model.trainable_variables)]
    entry = reduced.setdefault(tape_class.__module__.split(".")[0], {})
    entry[rid] = {"grads": grads}
    if tape_class is tv.GradientTape:
        entry[rid]["ops"] = len(tape.graph.capture.ops)
        try:
            tv.flow(tape, loss)
            entry[rid]["flow"] = "ok"
        except replay.ReplayError as e:
            entry[rid]["flow"] = str(e)
    return loss


strategy.run(plain_step, args=(per_replica,))
strategy.run(tapeviz_step, args=(per_replica,))
strategy.run(all_reduce_step, args=(per_replica, tf.GradientTape))
strategy.run(all_reduce_step, args=(per_replica, tv.GradientTape))
print(
    json.dumps(
        {
            "replicas": strategy.num_replicas_in_sync,
            "plain": plain,
            "tapeviz": seen,
            "all_reduce": reduced,
            "hooks_left": hooks.hooks_installed(),
            "callbacks_left": len(context.context().op_callbacks),
        }
    )
)

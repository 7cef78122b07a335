"""Capture overhead (tv.GradientTape vs tf.GradientTape) and flow cost (tv.flow vs one
tape.gradient), measured side by side in one run so machine noise hits both equally.

Run: .venv/bin/python bench/bench_core.py   (prints a markdown table)
"""

from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import tapeviz as tv  # noqa: E402
from tapeviz.examples import small_model  # noqa: E402


def programs():
    x = tf.Variable(3.0)
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    xv = tf.Variable([[1.0], [2.0]])
    a, b = tf.Variable(2.0), tf.Variable(3.0)

    def basic():
        return x**2

    def scalar_over_tensor():
        return tf.reduce_sum(w**2)

    def tensor_over_tensor():
        return tf.reduce_sum(xv * 2)

    def persistent():
        return x**2 + b + x * b

    def stop_gradient():
        return a**2 + tf.stop_gradient(b)

    model, xb, yb = small_model()
    model(xb)

    def keras_mlp():
        return tf.reduce_mean(tf.square(model(xb) - yb))

    big = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(128, activation="relu"),
                               tf.keras.layers.Dense(128, activation="relu"), tf.keras.layers.Dense(10)])
    xbig = tf.constant(np.random.default_rng(0).normal(size=(64, 32)).astype("float32"))
    ybig = tf.constant(np.random.default_rng(1).integers(0, 10, size=(64,)))
    lossf = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    big(xbig)

    def keras_mlp_64x128():
        return lossf(ybig, big(xbig))

    return {
        "basic x**2": (basic, [x]),
        "sum(w**2)": (scalar_over_tensor, [w]),
        "sum(x*2)": (tensor_over_tensor, [xv]),
        "persistent f": (persistent, [x, b]),
        "stop_gradient": (stop_gradient, [a, b]),
        "Keras MLP 3-4-1": (keras_mlp, model.trainable_variables),
        "Keras MLP 32-128-128-10": (keras_mlp_64x128, big.trainable_variables),
    }


def timed(fn, reps):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return statistics.median(t)


def main(rounds: int = 7, reps: int = 40) -> None:
    rows = []
    for name, (prog, variables) in programs().items():
        def plain_step():
            with tf.GradientTape() as tape:
                loss = prog()
            tape.gradient(loss, variables)

        def tv_step():
            with tv.GradientTape() as tape:
                loss = prog()
            tape.gradient(loss, variables)

        with tf.GradientTape(persistent=True) as ptape:
            loss = prog()
        with tf.GradientTape(persistent=True) as rtape, tv.record(rtape) as rec:
            rloss = prog()

        def one_gradient():
            ptape.gradient(loss, variables)

        def full_flow():
            tv.flow(rec, rloss)

        def graph_build():
            rec._tv_graph = None
            rec.graph

        for f in (plain_step, tv_step, one_gradient, full_flow):
            f()  # warm up
        plain, tvs, grad, fl, gb = [], [], [], [], []
        for _ in range(rounds):  # interleave so drift hits both sides
            plain.append(timed(plain_step, reps))
            tvs.append(timed(tv_step, reps))
            grad.append(timed(one_gradient, reps))
            fl.append(timed(full_flow, max(reps // 4, 3)))
            gb.append(timed(graph_build, max(reps // 4, 3)))
        p, t, g, f, b = (statistics.median(v) for v in (plain, tvs, grad, fl, gb))
        rows.append((name, len(rec.graph.capture.ops), p * 1e3, t * 1e3, t / p, g * 1e3, f * 1e3, f / g, b * 1e3))
    print("| program | ops | plain step ms | tapeviz step ms | capture ratio | tape.gradient ms | tv.flow ms | flow ratio | graph build ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.3f} | {r[3]:.3f} | **{r[4]:.2f}x** | {r[5]:.3f} | {r[6]:.3f} | **{r[7]:.2f}x** | {r[8]:.3f} |")


if __name__ == "__main__":
    main()

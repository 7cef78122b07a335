"""Capture overhead (tv.GradientTape vs tf.GradientTape) and flow cost (tv.flow vs one
tape.gradient), measured side by side in one run so machine noise hits both equally.

A "step" is forward + ``tape.gradient`` over the trainable variables (the optimizer's
``apply_gradients`` runs after the tape and is the same on both sides, so it is left out).
Calls of all variants alternate one by one in a random order; each round keeps the
median of its `reps` calls per variant, ratios are taken within a round, and the table
shows their median over rounds, so on a shared, noisy machine drift hits all variants
alike.

Run: .venv/bin/python bench/bench_core.py [--rounds N] [--reps N] [--only SUBSTR]
                                          [--baseline DIR]

``--baseline DIR`` loads another copy of the tapeviz package from DIR (e.g. a checkout
of the previous commit: ``git worktree add /tmp/old HEAD~1`` then ``--baseline
/tmp/old/tapeviz``) and times it in the same rounds, so before/after ratios come from
one run. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import random
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

import tapeviz as tv
from tapeviz.examples import small_model


def programs():
    import keras

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

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    lossf = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    big = keras.Sequential(
        [
            keras.Input((32,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    xbig = tf.constant(rng.normal(size=(64, 32)).astype("float32"))
    ybig = tf.constant(rng.integers(0, 10, size=(64,)))
    big(xbig)

    def keras_mlp_64x128():
        return lossf(ybig, big(xbig, training=True))

    cnn = keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(10),
        ]
    )
    xc = tf.constant(rng.normal(size=(8, 16, 16, 3)).astype("float32"))
    yc = tf.constant(rng.integers(0, 10, size=(8,)))
    cnn(xc)

    def keras_cnn():
        return lossf(yc, cnn(xc, training=True))

    return {
        "basic x**2": (basic, [x]),
        "sum(w**2)": (scalar_over_tensor, [w]),
        "sum(x*2)": (tensor_over_tensor, [xv]),
        "persistent f": (persistent, [x, b]),
        "stop_gradient": (stop_gradient, [a, b]),
        "Keras MLP 3-4-1": (keras_mlp, model.trainable_variables),
        "Keras MLP 32-128-128-10 b64": (keras_mlp_64x128, big.trainable_variables),
        "Keras CNN conv8 3x3 8x16x16x3": (keras_cnn, cnn.trainable_variables),
    }


def load_baseline(path: str):
    """Import the tapeviz package in `path` under another name (relative imports work)."""
    pkg = Path(path).resolve()
    spec = importlib.util.spec_from_file_location(
        "tapeviz_baseline", pkg / "__init__.py", submodule_search_locations=[str(pkg)]
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules["tapeviz_baseline"] = mod
    spec.loader.exec_module(mod)
    return mod


def measure(name, prog, variables, rounds, reps, base=None):
    def step_with(tape_cls):
        def step():
            with tape_cls() as tape:
                loss = prog()
            tape.gradient(loss, variables)

        return step

    def flow_with(lib):
        with tf.GradientTape(persistent=True) as rtape, lib.record(rtape) as rec:
            rloss = prog()
        rec.graph  # noqa: B018  (built once; graph_build times it separately)

        def full_flow():
            lib.flow(rec, rloss)

        def graph_build():
            rec._tv_graph = None
            rec.graph  # noqa: B018

        return rec, full_flow, graph_build

    with tf.GradientTape(persistent=True) as ptape:
        loss = prog()

    def one_gradient():
        ptape.gradient(loss, variables)

    rec, full_flow, graph_build = flow_with(tv)
    variants = {
        "plain": step_with(tf.GradientTape),
        "tv": step_with(tv.GradientTape),
        "grad": one_gradient,
        "flow": full_flow,
        "build": graph_build,
    }
    if base is not None:
        _, bflow, bbuild = flow_with(base)
        variants["tv_before"] = step_with(base.GradientTape)
        variants["flow_before"] = bflow
        variants["build_before"] = bbuild
    for fn in variants.values():
        fn()  # warm up
        fn()
    times = {k: [] for k in variants}
    rng = random.Random(0)
    clock = time.perf_counter
    for _ in range(rounds):
        # Calls alternate one by one, in a fresh random order each time: what ran just
        # before a call (its garbage, its allocations) favours no variant, and a burst of
        # load from other processes hits all of them alike.
        gc.collect()
        per = {k: [] for k in variants}
        order = list(variants)
        for _ in range(reps):
            rng.shuffle(order)
            for k in order:
                t0 = clock()
                variants[k]()
                per[k].append(clock() - t0)
        for k, v in per.items():
            times[k].append(statistics.median(v))
    med = {k: statistics.median(v) for k, v in times.items()}
    # Ratios: median over rounds of the ratio within a round (drift cancels out).
    for a, b in (("tv", "plain"), ("flow", "grad"), ("tv_before", "plain"), ("flow_before", "grad")):
        if a in times:
            med[a + "/" + b] = statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))
    med["flow+build/grad"] = statistics.median(
        (f + b) / g for f, b, g in zip(times["flow"], times["build"], times["grad"], strict=True)
    )
    return name, len(rec.graph.capture.ops), med


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--only", default=None, help="only programs whose name contains this")
    ap.add_argument("--baseline", default=None, help="another tapeviz package dir to compare against")
    args = ap.parse_args(argv)
    base = load_baseline(args.baseline) if args.baseline else None
    rows = []
    for name, (prog, variables) in programs().items():
        if args.only and args.only.lower() not in name.lower():
            continue
        rows.append(measure(name, prog, variables, args.rounds, args.reps, base))
    cols = ["program", "ops", "plain step ms", "tapeviz step ms", "capture ratio"]
    if base is not None:
        cols += ["baseline capture ratio"]
    cols += ["tape.gradient ms", "tv.flow ms", "flow ratio"]
    if base is not None:
        cols += ["baseline flow ratio"]
    cols += ["graph build ms"]
    if base is not None:
        cols += ["baseline graph build ms"]
    cols += ["(flow + build) ratio"]
    print(
        f"rounds={args.rounds} reps={args.reps}: times are medians; a ratio is the median over rounds of "
        "the ratio of the two medians measured in the same round"
    )
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for name, nops, m in rows:
        cells = [name, str(nops), f"{m['plain'] * 1e3:.3f}", f"{m['tv'] * 1e3:.3f}", f"**{m['tv/plain']:.2f}x**"]
        if base is not None:
            cells.append(f"{m['tv_before/plain']:.2f}x")
        cells += [f"{m['grad'] * 1e3:.3f}", f"{m['flow'] * 1e3:.3f}", f"**{m['flow/grad']:.2f}x**"]
        if base is not None:
            cells.append(f"{m['flow_before/grad']:.2f}x")
        cells.append(f"{m['build'] * 1e3:.3f}")
        if base is not None:
            cells.append(f"{m['build_before'] * 1e3:.3f}")
        cells.append(f"{m['flow+build/grad']:.2f}x")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

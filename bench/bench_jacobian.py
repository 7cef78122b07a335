"""tv.jacobian against tape.jacobian, side by side in one run.

A Jacobian's rows are backward passes seeded with one target element each: tv.jacobian
replays TF's backprop over the recording once per row; tape.jacobian vectorises the rows
(pfor, the default) or loops over them (``experimental_use_pfor=False``). Programs:

- a Keras Dense(32, tanh) layer on an 8x16 batch, d y / d kernel (256 rows x 512 columns);
- softmax of 64 logits, d y / d logits (64 x 64);
- a PINN-style gradient: the Hessian of a 2 -> 16 -> 16 -> 1 tanh network's output
  (summed over 32 points) with respect to the points, as tv.batch_jacobian (2 rows a point).

Interleaved rounds, medians. Run: .venv/bin/python bench/bench_jacobian.py [--rounds 5]
Prints a markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tapeviz as tv


def dense():
    tf.keras.utils.set_random_seed(0)
    layer = tf.keras.layers.Dense(32, activation="tanh")
    x = tf.random.normal([8, 16])
    layer.build(x.shape)
    with tv.GradientTape(persistent=True) as tape:
        y = layer(x)
    return tape, y, layer.kernel, False


def softmax():
    z = tf.Variable(tf.linspace(-2.0, 2.0, 64))
    with tv.GradientTape(persistent=True) as tape:
        y = tf.nn.softmax(z * 1.5)
    return tape, y, z, False


def pinn_hessian():
    tf.keras.utils.set_random_seed(0)
    hidden = [tf.keras.layers.Dense(16, activation="tanh") for _ in range(2)]
    net = tf.keras.Sequential([tf.keras.Input((2,)), *hidden, tf.keras.layers.Dense(1)])
    pts = tf.random.normal([32, 2])
    with tv.GradientTape(persistent=True) as tape:
        tape.watch(pts)
        with tf.GradientTape() as inner:
            inner.watch(pts)
            u = net(pts)
        du = inner.gradient(u, pts)
    return tape, du, pts, True


PROGRAMS = {"Dense(32, tanh) d y/d kernel": dense, "softmax(64)": softmax, "PINN Hessian (batch)": pinn_hessian}


def _runs(tape, y, x, batch: bool) -> dict:
    """The three ways to the same Jacobian, as callables."""
    tf_fn = tape.batch_jacobian if batch else tape.jacobian
    tv_fn = tv.batch_jacobian if batch else tv.jacobian
    return {
        "pfor": lambda: tf_fn(y, x),
        "loop": lambda: tf_fn(y, x, experimental_use_pfor=False),
        "tv": lambda: tv_fn(tape, y, x).matrix,
    }


def _time(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(
        "| program | rows x columns | tape.jacobian (pfor) ms | tape.jacobian (loop) ms | tv.jacobian ms "
        "| tv / pfor | tv / loop | equal to the loop form |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, build in PROGRAMS.items():
        tape, y, x, batch = build()
        runs = _runs(tape, y, x, batch)
        for f in runs.values():
            f()  # warm up (pfor traces a function)
        times: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(args.rounds):
            for k, f in runs.items():
                times[k].append(_time(f))
        med = {k: statistics.median(v) * 1000 for k, v in times.items()}
        jac = (tv.batch_jacobian if batch else tv.jacobian)(tape, y, x)
        equal = np.array_equal(jac.matrix, runs["loop"]().numpy())
        cols = int(np.prod(jac.source_shape[1:] if batch else jac.source_shape))
        print(
            f"| {name} | {jac.rows} x {cols} | {med['pfor']:.1f} | {med['loop']:.1f} | {med['tv']:.1f} | "
            f"{med['tv'] / med['pfor']:.2f}x | {med['tv'] / med['loop']:.2f}x | {equal} |"
        )


if __name__ == "__main__":
    main()

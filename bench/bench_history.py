"""What tv.History costs a training loop, and that its memory stays flat.

1. Overhead: plain eager custom train steps on a Keras MLP 32-128-128-10, batch 64, against
   the same steps followed by ``hist.add(...)`` (norms only: no tape picture). Two steps:
   the *heavy* one (cross-entropy, ``tf.GradientTape.gradient``, ``tf.clip_by_global_norm``,
   SGD ``apply_gradients``) and the *light* one of issue 23 (MSE, gradient, SGD, no
   clipping: the cheapest step, so the largest ratio). A round runs ``flush_every`` (256)
   steps of every variant, one step of each in a fresh random order, so load from other
   processes hits all variants alike and each History fetches its norms (and judges
   flags) exactly once per round; a variant's time is its mean step in the round, a ratio
   the median over rounds of the within-round ratio. Also printed: the ratio of the
   medians of all single steps (what issue 23 measured).
   Also timed in the same rounds: the design not taken, one ``tf.function`` computing every
   norm (``reduce_retracing=True``) instead of one eager ``tf.nn.l2_loss`` per tensor.
2. A picture step: ``hist.add(tape=tv_tape)`` (records the graph; the flow is computed
   only when asked for) against a plain step, median of single steps.
3. ``tv.explore(hist)`` on a norms-only History: ms per move of the train_step slider, in
   the kernel (10 and 100 layers, 200 steps, 60 moves to steps not shown before).
4. Memory: 100,000 ``hist.add`` calls of a 2 -> 1 linear model with clipping: stored
   points, the History's own bytes, and the process RSS growth, at 1 %, 10 %, 50 % and 100 %.

Run: .venv/bin/python bench/bench_history.py [--rounds N] [--long N] [--overhead-only]
Prints markdown tables.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

import tapeviz as tv


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _mlp(seed: int):
    """The Keras MLP 32-128-128-10 both steps train, and a generator for its batch."""
    import keras

    keras.utils.set_random_seed(seed)
    model = keras.Sequential(
        [
            keras.Input((32,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    return model, np.random.default_rng(seed)


def parse_with_old(doc: str, argv, **counts: int):
    """Arguments of the A/B benches: ``--old DIR`` (a folder holding another checkout's
    package renamed ``tapeviz_old``) and one int option per keyword (its default); returns
    the parsed arguments and that package."""
    import argparse
    import importlib
    import sys
    from pathlib import Path

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--old", type=Path, required=True)
    for name, default in counts.items():
        ap.add_argument(f"--{name}", type=int, default=default)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.old))
    return args, importlib.import_module("tapeviz_old")


def mlp_setup():
    import keras

    model, rng = _mlp(0)
    x = tf.constant(rng.normal(size=(64, 32)).astype("float32"))
    y = tf.constant(rng.integers(0, 10, size=(64,)))
    lossf = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = keras.optimizers.SGD(learning_rate=0.01)
    variables = model.trainable_variables

    def step(tape_cls=tf.GradientTape):
        with tape_cls() as tape:
            loss = lossf(y, model(x, training=True))
        grads = tape.gradient(loss, variables)
        clipped, _ = tf.clip_by_global_norm(grads, 1.0)
        opt.apply_gradients(zip(clipped, variables, strict=True))
        return loss, grads, clipped, tape

    return step, variables


def light_setup():
    """Issue 23's light step: the same MLP, MSE on 10 outputs, SGD, no clipping."""
    import keras

    model, rng = _mlp(1)
    x = tf.constant(rng.normal(size=(64, 32)).astype("float32"))
    y = tf.constant(rng.normal(size=(64, 10)).astype("float32"))
    opt = keras.optimizers.SGD(learning_rate=0.01)
    variables = model.trainable_variables

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, variables)
        opt.apply_gradients(zip(grads, variables, strict=True))
        return loss, grads

    return step, variables


@tf.function(reduce_retracing=True)
def _all_norms(loss, grads, weights, clipped):
    parts = [loss] + [tf.nn.l2_loss(t) for t in list(grads) + list(weights) + list(clipped)]
    return tf.stack(parts)


def overhead(rounds: int) -> dict:
    step, variables = mlp_setup()
    light, light_variables = light_setup()
    hist = tv.History()
    hist_noclip = tv.History()
    hist_light = tv.History()
    counter = {"hist": 0, "noclip": 0, "light": 0}
    block = hist.flush_every
    inner = [v.value for v in variables]
    kept = []

    def plain():
        step()

    def with_hist():
        loss, grads, clipped, _ = step()
        counter["hist"] += 1
        hist.add(counter["hist"], loss=loss, grads=grads, variables=variables, clipped=clipped)

    def with_hist_noclip():
        loss, grads, _, _ = step()
        counter["noclip"] += 1
        hist_noclip.add(counter["noclip"], loss=loss, grads=grads, variables=variables)

    def with_tf_function():  # the alternative design: one graph call per step, fetched in blocks
        loss, grads, clipped, _ = step()
        kept.append(_all_norms(loss, grads, inner, clipped))
        if len(kept) >= block:
            tf.stack(kept).numpy()
            kept.clear()

    def light_plain():
        light()

    def light_hist():  # issue 23's user: their own loop, a plain tape, one hist.add
        loss, grads = light()
        counter["light"] += 1
        hist_light.add(counter["light"], loss=loss, grads=grads, variables=light_variables)

    light_inner = [v.value for v in light_variables]
    kept_l2 = []

    def light_l2():  # the design replaced in issue 23: one eager tf.nn.l2_loss per tensor, fetched in blocks
        loss, grads = light()
        kept_l2.append(loss)
        kept_l2.extend(tf.nn.l2_loss(t) for t in list(grads) + light_inner)
        if len(kept_l2) >= block * 13:
            tf.stack(kept_l2).numpy()
            kept_l2.clear()

    variants = {
        "plain": plain,
        "hist": with_hist,
        "hist_noclip": with_hist_noclip,
        "tf_function": with_tf_function,
        "light_plain": light_plain,
        "light_hist": light_hist,
        "light_l2": light_l2,
    }
    for fn in variants.values():
        for _ in range(block):
            fn()  # warm up: traces, first flush
    times = {k: [] for k in variants}
    singles = {k: [] for k in variants}
    cpu = {k: [] for k in variants}  # CPU time of the process: what other processes' load does not add
    rng = random.Random(0)
    clock, cpu_clock = time.perf_counter, time.process_time
    order = list(variants)
    for _ in range(rounds):
        gc.collect()
        total = dict.fromkeys(variants, 0.0)
        for _ in range(block):  # one step of every variant, in a fresh random order
            rng.shuffle(order)
            for k in order:
                c0, t0 = cpu_clock(), clock()
                variants[k]()
                dt = clock() - t0
                cpu[k].append(cpu_clock() - c0)
                total[k] += dt
                singles[k].append(dt)
        for k, v in total.items():
            times[k].append(v / block)  # includes exactly one flush of each History
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, base in (
        ("hist", "plain"),
        ("hist_noclip", "plain"),
        ("tf_function", "plain"),
        ("light_hist", "light_plain"),
        ("light_l2", "light_plain"),
    ):
        med[k + "/plain"] = statistics.median(a / b for a, b in zip(times[k], times[base], strict=True))
        med[k + "/plain singles"] = statistics.median(singles[k]) / statistics.median(singles[base])
        med[k + "/plain cpu"] = statistics.median(cpu[k]) / statistics.median(cpu[base])
    med["singles"] = len(singles["plain"])
    return med


def picture_step(n: int = 15) -> dict:
    step, variables = mlp_setup()
    hist = tv.History()
    plain, pic = [], []
    for i in range(n):
        t0 = time.perf_counter()
        step()
        plain.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        loss, grads, clipped, tape = step(tv.GradientTape)
        hist.add(i, loss=loss, grads=grads, variables=variables, clipped=clipped, tape=tape)
        pic.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    hist.picture(hist.recorded_steps()[-1])
    first_flow = time.perf_counter() - t0
    return {
        "plain": statistics.median(plain),
        "picture": statistics.median(pic),
        "flow": first_flow,
        "kept": len(hist.recorded_steps()),
        "bytes": hist.nbytes,
    }


def explore_moves(layers: int, steps: int = 200, moves: int = 60) -> dict:
    """tv.explore(hist) on a norms-only History (a plain tf.GradientTape loop, ``layers``
    Dense layers): ms per move of the train_step slider in the kernel (the observer's
    whole repaint: run panel SVG, flags, note), each move to a step not shown before."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((16,))] + [keras.layers.Dense(16, activation="sigmoid") for _ in range(layers)]
    )
    x = tf.random.normal((32, 16))
    hist = tv.History()
    opt = keras.optimizers.SGD(0.1)
    for step in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x)))
        grads = tape.gradient(loss, model.trainable_variables)
        hist.add(step, loss=loss, grads=grads, variables=model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    t0 = time.perf_counter()
    ex = tv.explore(hist)
    opened = time.perf_counter() - t0
    slider = ex.controls["train_step"]
    order = random.Random(1).sample(list(slider.options)[:-1], moves)
    times = []
    for s in order:
        t0 = time.perf_counter()
        slider.value = s
        times.append(time.perf_counter() - t0)
    ex.close()
    return {"open": opened, "median": statistics.median(times), "max": max(times), "flags": len(hist.flags())}


def long_run(n: int) -> dict:
    """n steps of a 2 -> 1 linear model on plain tf.Variables (cheap steps, so the run is
    mostly hist.add), clipped with tf.clip_by_global_norm."""
    rng = np.random.default_rng(0)
    kernel = tf.Variable(rng.normal(size=(2, 1)).astype("float32"), name="lin/kernel")
    bias = tf.Variable([0.0], name="lin/bias")
    x = tf.constant(rng.normal(size=(8, 2)).astype("float32"))
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    variables = [kernel, bias]
    hist = tv.History()
    gc.collect()
    rss0 = rss_bytes()
    marks = {}
    t0 = time.perf_counter()
    for i in range(n):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x @ kernel + bias - y))
        grads = tape.gradient(loss, variables)
        clipped, _ = tf.clip_by_global_norm(grads, 0.5)
        hist.add(i, loss=loss, grads=grads, variables=variables, clipped=clipped)
        kernel.assign_sub(0.01 * clipped[0])
        bias.assign_sub(0.01 * clipped[1])
        if (i + 1) in (n // 100, n // 10, n // 2, n):
            gc.collect()
            marks[i + 1] = (len(hist.steps()), hist.nbytes, rss_bytes() - rss0)
    return {
        "seconds": time.perf_counter() - t0,
        "marks": marks,
        "flags": len(hist.flags()),
        "engaged": hist.clipping(by="global")["global"].engaged,
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--long", type=int, default=100_000, help="steps of the memory run (0: skip it)")
    ap.add_argument("--overhead-only", action="store_true", help="only the overhead table")
    args = ap.parse_args(argv)

    m = overhead(args.rounds)
    print(
        f"Overhead, Keras MLP 32-128-128-10 b64, eager train step; rounds={args.rounds} of 256 steps per variant, "
        "interleaved step by step; ratio = median over rounds of the within-round ratio of mean steps"
    )
    print(
        f"| variant | ms / step | ratio to its plain step (rounds) | overhead | ratio of single-step medians "
        f"({m['singles']:,} steps each) | ratio of CPU-time medians |"
    )
    print("|---|---|---|---|---|---|")
    rows = (
        ("light_plain", "light step: forward, gradient, SGD (MSE, no clipping)", None),
        ("light_hist", "+ `hist.add(step, loss=, grads=, variables=)`", "light_plain"),
        ("light_l2", "+ one eager tf.nn.l2_loss per tensor (the design replaced)", "light_plain"),
        ("plain", "heavy step: forward, gradient, clip_by_global_norm, SGD (cross-entropy)", None),
        ("hist_noclip", "+ `hist.add(step, loss, grads, variables)`", "plain"),
        ("hist", "+ `hist.add(..., clipped=clipped)`", "plain"),
        ("tf_function", "+ one tf.function for all norms (design not taken)", "plain"),
    )
    for k, label, base in rows:
        if base is None:
            print(f"| {label} | {m[k] * 1e3:.3f} | 1.00x | | | |")
            continue
        r, r1, rc = m[k + "/plain"], m[k + "/plain singles"], m[k + "/plain cpu"]
        bold = "**" if "hist" in k else ""
        print(f"| {label} | {m[k] * 1e3:.3f} | {bold}{r:.3f}x{bold} | {(r - 1) * 100:+.1f}% | {r1:.3f}x | {rc:.3f}x |")

    print()
    print(
        "| `tv.explore(hist)`, norms-only History of 200 steps | open (ms) | slider move, median (ms) "
        "| slowest move (ms) |"
    )
    print("|---|---|---|---|")
    for layers in (10, 100):
        e = explore_moves(layers)
        print(
            f"| {layers} Dense layers ({e['flags']} flags) | {e['open'] * 1e3:.0f} | {e['median'] * 1e3:.1f} | "
            f"{e['max'] * 1e3:.1f} |"
        )
    if args.overhead_only:
        return
    p = picture_step()
    print()
    print("| picture step | ms |")
    print("|---|---|")
    print(f"| plain step | {p['plain'] * 1e3:.2f} |")
    print(f"| tv.GradientTape step + `hist.add(..., tape=tape)` | {p['picture'] * 1e3:.2f} |")
    print(f"| first `hist.picture(step)` (computes the flow) | {p['flow'] * 1e3:.2f} |")
    print(f"| pictures kept of 15 / History bytes | {p['kept']} / {p['bytes'] / 2**20:.2f} MiB |")

    if not args.long:
        return
    r = long_run(args.long)
    print()
    print(
        f"Memory: {args.long:,} steps of a 2->1 linear model with clip_by_global_norm, "
        f"{r['seconds']:.0f} s ({r['seconds'] / args.long * 1e6:.0f} us a step incl. the step itself); "
        f"global clipping engaged {r['engaged']:,} times, {r['flags']} flags"
    )
    print("| steps | stored points | History bytes | RSS growth since start |")
    print("|---|---|---|---|")
    for k, (points, nbytes, rss) in r["marks"].items():
        print(f"| {k:,} | {points} | {nbytes / 1024:.0f} KiB | {rss / 2**20:+.1f} MiB |")


if __name__ == "__main__":
    main()

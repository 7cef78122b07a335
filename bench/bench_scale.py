"""How tapeviz's costs grow with graph size (100 / 1,000 / 5,000 ops), and SVG export
against torchviz's make_dot + graphviz render of an equal-size PyTorch graph.

SVG columns use tapeviz's own exporter (tapeviz.svg.to_svg, what save_view writes
for .svg); "matplotlib SVG s" is savefig's SVG of the same default view, for comparison.

Run: .venv/bin/python bench/bench_scale.py [--sizes 100,1000,5000]
Bench-only dependencies (not needed by tapeviz or its tests):
    pip install torch==2.13.0 torchviz   and   apt-get install graphviz
The torchviz column is skipped, with a note, when they are missing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import tapeviz as tv  # noqa: E402
from tapeviz.export import save_view  # noqa: E402


def tf_program(n_ops: int):
    """A chain of small dense blocks: ~4 ops each (MatMul, AddV2, Tanh, reads)."""
    blocks = max(1, n_ops // 5)
    rng = np.random.default_rng(0)
    ws = [tf.Variable(rng.normal(size=(4, 4)).astype("float32") * 0.5, name=f"w{i}") for i in range(blocks)]
    bs = [tf.Variable(np.zeros(4, "float32"), name=f"b{i}") for i in range(blocks)]
    x = tf.constant(rng.normal(size=(2, 4)).astype("float32"))

    def run():
        h = x
        for i, (w, b) in enumerate(zip(ws, bs)):
            with tf.name_scope(f"block{i}"):  # what a Keras layer does: one scope per layer
                h = tf.tanh(tf.matmul(h, w) + b)
        return tf.reduce_sum(h * h)

    return run, ws + bs


def torch_program(n_ops: int):
    import torch

    blocks = max(1, n_ops // 5)
    g = torch.Generator().manual_seed(0)
    ws = [(torch.randn(4, 4, generator=g) * 0.5).requires_grad_() for _ in range(blocks)]
    bs = [torch.zeros(4, requires_grad=True) for _ in range(blocks)]
    x = torch.randn(2, 4, generator=g)

    def run():
        h = x
        for w, b in zip(ws, bs):
            h = torch.tanh(h @ w + b)
        return (h * h).sum()

    return run, dict(**{f"w{i}": w for i, w in enumerate(ws)}, **{f"b{i}": b for i, b in enumerate(bs)})


def clock(fn, reps: int = 3):
    times = []
    out = None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def measure(n_ops: int, tmp: Path, have_torchviz: bool) -> dict:
    run, variables = tf_program(n_ops)
    reps = 3 if n_ops <= 1000 else 1

    def plain():
        with tf.GradientTape() as t:
            loss = run()
        t.gradient(loss, variables)

    def recorded():
        with tv.GradientTape() as t:
            loss = run()
        t.gradient(loss, variables)
        return t, loss

    plain()
    recorded()
    t_plain, _ = clock(plain, reps)
    t_tv, (tape, loss) = clock(recorded, reps)
    ops = len(tape.graph.capture.ops)
    t_graph, _ = clock(lambda: (setattr(tape, "_tv_graph", None), tape.graph), reps)
    with tf.GradientTape(persistent=True) as pt:
        ploss = run()
    t_grad, _ = clock(lambda: pt.gradient(ploss, variables), reps)
    t_flow, fl = clock(lambda: tv.flow(tape, loss), reps)
    t_pic, view = clock(lambda: tv.view(tape, loss), 1)
    t_svg, _ = clock(lambda: save_view(view, tmp / f"tv_{n_ops}.svg", engine="tapeviz"), 1)
    t_mpl_svg, _ = clock(lambda: save_view(view, tmp / f"tv_mpl_{n_ops}.svg", engine="matplotlib"), 1)
    t_full, full = clock(lambda: tv.view(tape, loss, collapsed=False), 1)
    t_full_svg, _ = clock(lambda: save_view(full, tmp / f"tv_full_{n_ops}.svg", engine="tapeviz"), 1)
    row = dict(ops=ops, plain=t_plain, tv=t_tv, graph=t_graph, grad=t_grad, flow=t_flow, picture=t_pic, svg=t_svg,
               mpl_svg=t_mpl_svg, nodes=view.display.nx.number_of_nodes(), full=t_full + t_full_svg,
               full_svg=t_full_svg, full_nodes=full.display.nx.number_of_nodes(),
               svg_kb=(tmp / f"tv_full_{n_ops}.svg").stat().st_size / 1024)
    if have_torchviz:
        import torchviz

        trun, params = torch_program(n_ops)
        y = trun()

        def make_and_render():
            dot = torchviz.make_dot(y, params=params)
            dot.render(str(tmp / f"torch_{n_ops}"), format="svg", cleanup=True)
            return dot

        try:
            t_torch, dot = clock(make_and_render, 1)
        except RecursionError:  # make_dot recurses once per grad_fn: deep graphs need a higher limit
            limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(limit, 50 * n_ops))
            try:
                t_torch, dot = clock(make_and_render, 1)
            finally:
                sys.setrecursionlimit(limit)
            row["torch_note"] = "*"
        row["torchviz"] = t_torch
        row["torch_kb"] = (tmp / f"torch_{n_ops}.svg").stat().st_size / 1024
        row["torch_nodes"] = dot.source.count("\t") and sum(1 for line in dot.source.splitlines() if "[label=" in line)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000,5000")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    try:
        import torchviz  # noqa: F401

        have_torchviz = shutil.which("dot") is not None
    except ImportError:
        have_torchviz = False
    with tempfile.TemporaryDirectory() as d:
        rows = [measure(n, Path(d), have_torchviz) for n in sizes]
    print("| ops | capture ratio | graph build s | flow / tape.gradient | first picture s (boxes) | SVG export s "
          "| matplotlib SVG s | every op expanded: picture+SVG s (boxes) | expanded SVG export s (KB) "
          "| torchviz make_dot+dot SVG s (KB) | tapeviz default / torchviz | tapeviz expanded / torchviz |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        tv_total = r["picture"] + r["svg"]
        tz = r.get("torchviz")
        torch = f"{tz:.2f} ({r['torch_kb']:.0f}){r.get('torch_note', '')}" if tz else "n/a"
        ratio = f"{tv_total / tz:.2f}x | {r['full'] / tz:.2f}x" if tz else "n/a | n/a"
        print(f"| {r['ops']} | {r['tv'] / r['plain']:.2f}x | {r['graph']:.3f} | {r['flow'] / r['grad']:.2f}x "
              f"| {r['picture']:.2f} ({r['nodes']}) | {r['svg']:.3f} | {r['mpl_svg']:.2f} "
              f"| {r['full']:.2f} ({r['full_nodes']}) | {r['full_svg']:.3f} ({r['svg_kb']:.0f}) | {torch} | {ratio} |")
    if any(r.get("torch_note") for r in rows):
        print("\n* torchviz.make_dot hit Python's recursion limit; timed again with sys.setrecursionlimit raised.")
    if not have_torchviz:
        print("\n(torchviz column skipped: pip install torch==2.13.0 torchviz; apt-get install graphviz)")


if __name__ == "__main__":
    main()

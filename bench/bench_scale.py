"""How tapeviz's costs grow with graph size (100 / 1,000 / 5,000 ops), and SVG export
against torchviz's make_dot + graphviz render of an equal-size PyTorch graph.

"SVG export" is `tv.save(tape, loss, "x.svg")` end to end (flow, layout, scene, file),
as a user runs it; "every op expanded" is the same with collapsed=False, one box per op as
torchviz draws. "matplotlib savefig SVG" is savefig's SVG of the default view, for scale.
Times are medians of 7 runs (1 at 5,000 ops); the SVG exports and torchviz run in interleaved
rounds and each ratio is the median of the per-round ratios.

Run: .venv/bin/python bench/bench_scale.py [--sizes 100,1000,5000]
Bench-only dependencies (not needed by tapeviz or its tests):
    pip install torch==2.13.0 torchviz   and   apt-get install graphviz
The torchviz column is skipped, with a note, when they are missing.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

import tapeviz as tv
from tapeviz.output.artists import raster_dpi
from tapeviz.output.export import save_view


def tf_program(n_ops: int):
    """A chain of small dense blocks: ~4 ops each (MatMul, AddV2, Tanh, reads)."""
    blocks = max(1, n_ops // 5)
    rng = np.random.default_rng(0)
    ws = [tf.Variable(rng.normal(size=(4, 4)).astype("float32") * 0.5, name=f"w{i}") for i in range(blocks)]
    bs = [tf.Variable(np.zeros(4, "float32"), name=f"b{i}") for i in range(blocks)]
    x = tf.constant(rng.normal(size=(2, 4)).astype("float32"))

    def run():
        h = x
        for i, (w, b) in enumerate(zip(ws, bs, strict=True)):
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
        for w, b in zip(ws, bs, strict=True):
            h = torch.tanh(h @ w + b)
        return (h * h).sum()

    return run, dict(**{f"w{i}": w for i, w in enumerate(ws)}, **{f"b{i}": b for i, b in enumerate(bs)})


def clock(fn, reps: int = 3):
    gc.collect()  # the garbage of earlier stages (figures full of reference cycles) is not billed here
    times = []
    out = None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def measure(n_ops: int, tmp: Path, have_torchviz: bool) -> dict:
    run, variables = tf_program(n_ops)
    reps = 7 if n_ops <= 1000 else 1

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

    def forget_flows():  # tv.flow keeps a recording's flow: "cold" times start without it
        tape.graph.__dict__.pop("_flows", None)

    t_flow, fl = clock(lambda: (forget_flows(), tv.flow(tape, loss))[1], reps)

    def first_picture():  # what a notebook shows for tv.view(...): SVG written from the scene
        forget_flows()
        return tv.view(tape, loss)._repr_svg_()

    def first_figure():  # what a notebook shows for tv.draw(...): the Figure (artists made) as SVG
        forget_flows()
        return tv.draw(tape, loss)._repr_svg_()

    def first_png():  # the same Figure's PNG, rendered by matplotlib
        fig = tv.draw(tape, loss)
        fig.savefig(io.BytesIO(), format="png", dpi=raster_dpi(fig, fig.dpi))

    t_pic, _ = clock(first_picture, reps)
    t_fig, _ = clock(first_figure, reps)
    t_png, _ = clock(first_png, 1)
    svg_default, svg_full = tmp / f"tv_{n_ops}.svg", tmp / f"tv_full_{n_ops}.svg"
    view = tv.view(tape, loss)
    t_mpl_svg, _ = clock(lambda: save_view(view, tmp / f"tv_mpl_{n_ops}.svg", engine="matplotlib"), 1)
    full_view = tv.view(tape, loss, collapsed=False)

    # SVG export end to end, as a user runs it (flow + layout + scene + file), and torchviz,
    # in interleaved rounds: each round times every contestant once, in a rotating order,
    # and the ratios are taken within rounds, so drift and GC pauses hit all alike.
    # "cold": the recording's first export (TF's backprop replayed for the flow); warm: an
    # export after a view or another export of the same recording (the flow is kept).
    contestants = {
        "svg_cold": lambda: (forget_flows(), tv.save(tape, loss, svg_default)),
        "svg": lambda: tv.save(tape, loss, svg_default),
        "full_cold": lambda: (forget_flows(), tv.save(tape, loss, svg_full, collapsed=False)),
        "full": lambda: tv.save(tape, loss, svg_full, collapsed=False),
    }
    row = dict(
        ops=ops,
        plain=t_plain,
        tv=t_tv,
        graph=t_graph,
        grad=t_grad,
        flow=t_flow,
        picture=t_pic,
        fig=t_fig,
        png=t_png,
        mpl_svg=t_mpl_svg,
        nodes=view.display.nx.number_of_nodes(),
        full_nodes=full_view.display.nx.number_of_nodes(),
    )
    if have_torchviz:
        import torchviz

        trun, params = torch_program(n_ops)
        y = trun()

        def make_and_render():
            dot = torchviz.make_dot(y, params=params)
            dot.render(str(tmp / f"torch_{n_ops}"), format="svg", cleanup=True)
            return dot

        try:
            make_and_render()
        except RecursionError:  # make_dot recurses once per grad_fn: deep graphs need a higher limit
            sys.setrecursionlimit(max(sys.getrecursionlimit(), 50 * n_ops))
            row["torch_note"] = "*"
        contestants["torchviz"] = make_and_render
    times: dict[str, list[float]] = {k: [] for k in contestants}
    gc.collect()
    names = list(contestants)
    for r in range(reps):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            t0 = time.perf_counter()
            contestants[name]()
            times[name].append(time.perf_counter() - t0)
    for name, ts in times.items():
        row[name] = statistics.median(ts)
    if have_torchviz:
        for name in ("svg", "svg_cold", "full", "full_cold"):
            row[name + "_ratio"] = statistics.median(a / b for a, b in zip(times[name], times["torchviz"], strict=True))
        row["torch_kb"] = (tmp / f"torch_{n_ops}.svg").stat().st_size / 1024
    row["svg_kb"] = svg_full.stat().st_size / 1024
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
    print(
        "| ops | capture ratio | graph build s | flow / tape.gradient | **first picture s**: tv.view in a notebook "
        "| tv.draw in a notebook s | tv.draw + matplotlib PNG s | **SVG export s** cold / warm (boxes) "
        "| matplotlib savefig SVG s | **SVG export, every op expanded s** cold / warm (boxes, KB) "
        "| **torchviz make_dot + dot SVG s** (KB) | default / torchviz, cold / warm "
        "| expanded / torchviz, cold / warm |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        tz = r.get("torchviz")
        torch = f"{tz:.3f} ({r['torch_kb']:.0f}){r.get('torch_note', '')}" if tz else "n/a"
        ratio = (
            f"**{r['svg_cold_ratio']:.2f}x** / {r['svg_ratio']:.2f}x | **{r['full_cold_ratio']:.2f}x** / "
            f"{r['full_ratio']:.2f}x"
            if tz
            else "n/a | n/a"
        )
        print(
            f"| {r['ops']} | {r['tv'] / r['plain']:.2f}x | {r['graph']:.3f} | {r['flow'] / r['grad']:.2f}x "
            f"| {r['picture']:.2f} | {r['fig']:.2f} | {r['png']:.2f} | {r['svg_cold']:.3f} / {r['svg']:.3f} "
            f"({r['nodes']}) | {r['mpl_svg']:.2f} | {r['full_cold']:.3f} / {r['full']:.3f} ({r['full_nodes']}, "
            f"{r['svg_kb']:.0f}) | {torch} | {ratio} |"
        )
    if any(r.get("torch_note") for r in rows):
        print("\n* torchviz.make_dot hit Python's recursion limit; timed again with sys.setrecursionlimit raised.")
    if not have_torchviz:
        print("\n(torchviz column skipped: pip install torch==2.13.0 torchviz; apt-get install graphviz)")


if __name__ == "__main__":
    main()

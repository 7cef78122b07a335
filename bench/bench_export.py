"""Raster export: GIF and PNG drawn from tapeviz's SVG by resvg (the new path) against
matplotlib drawing them (the old path), side by side in one run.

- GIF of a small CNN (Conv2D, BatchNorm, MaxPool, Conv2D, GlobalAvgPool, Dropout, Dense on
  8x8x1 inputs, batch 4): ``tv.save(tape, loss, "cnn.gif")`` end to end, against
  the old ``save_gif`` (matplotlib FuncAnimation + PillowWriter, one frame per step), which
  is reproduced here as it was.
- GIF of MobileNetV2 (96x96x3, 10 classes, weights=None, one training step): the new path
  end to end; the old one would take many minutes, so its cost per frame is measured on a
  few frames and multiplied by its frame count (marked "extrapolated").
- PNG of a 1,000-op graph (bench_scale.py's chain of dense blocks): ``tv.save(.., "x.png")``
  against matplotlib's ``savefig`` of the same view, in interleaved rounds.

The GIF time is also split into what the picture code costs per frame (``view.set_step`` and
``to_svg``, outside the raster path) and the rest (rasterising, palette, encoding).

Run: .venv/bin/python bench/bench_export.py [--rounds 3] [--skip-mobilenet]
Prints a markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import tensorflow as tf
from matplotlib.animation import FuncAnimation, PillowWriter
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_scale import tf_program

import tapeviz as tv
from tapeviz.output.export import plan_frames, save_view
from tapeviz.output.svg import to_svg


def old_gif(view, path: Path, *, dpi: float = 100, fps: float = 1.5, limit: int | None = None) -> int:
    """The GIF export before this change: matplotlib draws every backward step (``limit``:
    only the first frames, to time a few). Returns the number of frames drawn."""
    w, h = view.figure.get_size_inches()
    dpi = min(float(dpi), (8_000_000 / (w * h)) ** 0.5)
    frames = list(range(max(view.n_steps, 1)))[:limit]

    def show(k):
        view.set_step(k)
        return []

    anim = FuncAnimation(view.figure, show, frames=frames, blit=False, repeat=False, cache_frame_data=False)
    anim.save(str(path), writer=PillowWriter(fps=fps), dpi=dpi)
    return len(frames)


def cnn_tape():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.BatchNormalization(),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dropout(0.3),
            keras.layers.Dense(3),
        ]
    )
    x = tf.random.normal((4, 8, 8, 1))
    y = tf.constant([0, 1, 2, 1])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tv.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    return tape, loss


def mobilenet_tape():
    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3), classes=10)
    x = tf.random.normal((2, 96, 96, 3))
    y = tf.constant([1, 2])
    loss_fn = keras.losses.SparseCategoricalCrossentropy()
    optimizer = keras.optimizers.SGD(0.01)
    with tv.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return tape, loss


def timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def picture_cost(tape, loss) -> float:
    """Seconds the picture code (set_step + to_svg) spends on the frames of a GIF."""
    view = tv.view(tape, loss)
    t0 = time.perf_counter()
    for f in plan_frames(view):
        view.set_step(f.step)
        to_svg(view)
    return time.perf_counter() - t0


def gif_frames(path: Path) -> int:
    with Image.open(path) as im:
        return im.n_frames


def bench_cnn(tmp: Path, rounds: int) -> dict:
    tape, loss = cnn_tape()
    new_path, old_path = tmp / "cnn.gif", tmp / "cnn_old.gif"
    tv.save(tape, loss, new_path, progress=False)  # warm-up: fonts, caches
    news, olds = [], []
    for r in range(rounds):
        news.append(timed(lambda: tv.save(tape, loss, new_path, progress=False))[0])
        if r == 0:  # the old path takes tens of seconds: once is enough
            olds.append(timed(lambda: old_gif(tv.view(tape, loss), old_path))[0])
    return dict(
        new=statistics.median(news),
        old=olds[0],
        new_kb=new_path.stat().st_size / 1024,
        old_kb=old_path.stat().st_size / 1024,
        new_frames=gif_frames(new_path),
        old_frames=gif_frames(old_path),
        picture=picture_cost(tape, loss),
    )


def bench_mobilenet(tmp: Path, sample: int = 6) -> dict:
    tape, loss = mobilenet_tape()
    path = tmp / "mobilenet.gif"
    new, _ = timed(lambda: tv.save(tape, loss, path, progress=False))
    view = tv.view(tape, loss)
    n_old = max(view.n_steps, 1)
    t_first, _ = timed(lambda: old_gif(view, tmp / "mn_old1.gif", limit=1))  # figure, artists, first frame
    t_more, _ = timed(lambda: old_gif(view, tmp / "mn_old.gif", limit=1 + sample))
    per_frame = (t_more - t_first) / sample
    return dict(
        new=new,
        new_kb=path.stat().st_size / 1024,
        new_frames=gif_frames(path),
        old_frames=n_old,
        old_extrapolated=t_first + per_frame * (n_old - 1),
        old_per_frame=per_frame,
        picture=picture_cost(tape, loss),
        steps=n_old,
    )


def bench_png(tmp: Path, rounds: int) -> dict:
    run, variables = tf_program(1000)
    with tv.GradientTape() as tape:
        loss = run()
    ops = len(tape.graph.capture.ops)
    tv.save(tape, loss, tmp / "warm.png", progress=False)
    news, olds, ratios = [], [], []
    for _ in range(rounds):
        t_new, _ = timed(lambda: tv.save(tape, loss, tmp / "big.png", progress=False))
        t_old, _ = timed(
            lambda: save_view(tv.view(tape, loss), tmp / "big_old.png", engine="matplotlib", progress=False)
        )
        news.append(t_new)
        olds.append(t_old)
        ratios.append(t_new / t_old)
    with Image.open(tmp / "big.png") as im:
        size = im.size
    return dict(
        ops=ops, new=statistics.median(news), old=statistics.median(olds), ratio=statistics.median(ratios), size=size
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-mobilenet", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        png = bench_png(tmp, args.rounds)
        cnn = bench_cnn(tmp, args.rounds)
        mn = None if args.skip_mobilenet else bench_mobilenet(tmp)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(load average during the run: {load:.1f} on {os.cpu_count()} cores)\n")
    print("| export | goal | old: matplotlib | **new: resvg from the SVG** | new / old | of which set_step + to_svg |")
    print("|---|---|---|---|---|---|")
    print(
        f"| GIF of the small CNN | ≤ 5 s, ≤ 1 MB | {cnn['old']:.1f} s, {cnn['old_kb']:.0f} KB, "
        f"{cnn['old_frames']} frames | **{cnn['new']:.2f} s, {cnn['new_kb']:.0f} KB**, {cnn['new_frames']} frames "
        f"| **{cnn['new'] / cnn['old']:.3f}x** | {cnn['picture']:.2f} s |"
    )
    if mn:
        print(
            f"| GIF of MobileNetV2 ({mn['steps']} steps) | ≤ 60 s | {mn['old_extrapolated']:.0f} s extrapolated "
            f"({mn['old_per_frame']:.2f} s x {mn['old_frames']} frames) | **{mn['new']:.1f} s**, "
            f"{mn['new_kb']:.0f} KB, {mn['new_frames']} frames | **{mn['new'] / mn['old_extrapolated']:.3f}x** "
            f"| {mn['picture']:.1f} s |"
        )
    print(
        f"| PNG of a {png['ops']}-op graph ({png['size'][0]} x {png['size'][1]} px) | ≤ 1 s | {png['old']:.2f} s "
        f"| **{png['new']:.2f} s** | **{png['ratio']:.2f}x** | |"
    )


if __name__ == "__main__":
    main()

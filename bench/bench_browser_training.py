"""tv.explore(hist) on a norms-only History: key press on the train_step slider -> new run
panel, measured in a real JupyterLab + headless Chromium (the harness of bench_browser.py).

A notebook trains a deep sigmoid net with the user's own loop (plain ``tf.GradientTape``,
one ``hist.add`` a step, no picture kept) and shows ``tv.explore(hist)``. Arrow keys move
the ``train_step`` slider's handle; in the page, a capture-phase ``keydown`` listener stamps
the press and a MutationObserver on the run panel stamps the new SVG, then the next frame
(see bench_browser.py: the same script, observing ``.tv-run-panel``). Each press is to a
step not shown before (the first walk), then back over shown ones (cached SVGs).

Run:  .venv/bin/python bench/bench_browser_training.py [--layers 10] [--presses 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_browser as BB  # its in-page latency script and press loop

B = BB.B
EXPLORER = f"{B.SEL_PANEL} .tv-training"

_PROGRAM = """\
import keras, numpy as np, tensorflow as tf, tapeviz as tv
keras.utils.set_random_seed(0)
init = keras.initializers.RandomNormal(stddev=0.1)
model = keras.Sequential([keras.Input((16,))]
    + [keras.layers.Dense(16, activation="sigmoid", kernel_initializer=init) for _ in range({layers})])
x = tf.random.normal((32, 16))
opt = keras.optimizers.SGD(0.1)
hist = tv.History()
for step in range({steps}):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x)))
    grads = tape.gradient(loss, model.trainable_variables)
    hist.add(step, loss=loss, grads=grads, variables=model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
ex = tv.explore(hist)
ex
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=10)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--presses", type=int, default=30, help="presses each way")
    ap.add_argument("--settle", type=float, default=0.25)
    args = ap.parse_args(argv)
    missing = B.missing_requirements()
    if missing:
        print("bench_browser_training skipped, missing:", "; ".join(missing))
        return 0
    with BB.lab_page() as (lab, page):
        name = "bench_training.ipynb"
        B.write_notebook(Path(lab.root) / name, [_PROGRAM.format(layers=args.layers, steps=args.steps)])
        B.open_notebook(page, lab, name)
        B.run_all(page)
        page.locator(f"{EXPLORER} .tv-run-panel svg").wait_for()
        page.locator(EXPLORER).scroll_into_view_if_needed()
        page.evaluate(BB._INSTALL_JS.replace(".tv-canvas", ".tv-run-panel"), EXPLORER)
        handle = page.locator(f"{EXPLORER} .tv-train-step .noUi-handle")
        new = BB.press_series(page, handle, ["ArrowLeft"] * args.presses, args.settle)
        cached = BB.press_series(page, handle, ["ArrowRight"] * args.presses, args.settle)
        B.screenshot(page, "bench_browser_training")
    print(f"tv.explore(hist), norms-only History: {args.layers} layers, {args.steps} steps, JupyterLab + Chromium")
    print("| presses | key → SVG in DOM, median | **key → next frame, median** | p95 | missed |")
    print("|---|---|---|---|---|")
    for label, (mut, frame, _paint, misses) in (("new steps", new), ("steps shown before", cached)):
        p95 = sorted(frame)[max(0, int(0.95 * len(frame)) - 1)] if frame else float("nan")
        print(
            f"| {label} ({len(frame)}) | {statistics.median(mut):.0f} ms | **{statistics.median(frame):.0f} ms** | "
            f"{p95:.0f} ms | {misses} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Key press -> new picture, measured in a real JupyterLab + headless Chromium.

Starts a JupyterLab on a temp copy of notebooks/ and Debian's Chromium with the test
harness (tests/support/browser.py, no pytest), opens a notebook, runs all cells, switches the clip
menu to by_norm, then presses arrow keys on two sliders of the Explorer:

- step       (``.tv-step .noUi-handle``): kernel moves the backward pass one step;
- clip_norm  (``.tv-clip-norm .noUi-handle``): kernel recomputes the clipping (TF) and the
  clipped values drawn under each variable.

Latency is measured inside the page: a capture-phase ``keydown`` listener stamps
``performance.now()``; a MutationObserver on the canvas stamps the first DOM change after
it (the new SVG is in the document), a ``requestAnimationFrame`` callback queued from
there stamps the next frame (the headline number), and a task posted from that callback
stamps "after paint" (the frame that lays out and paints the new SVG has finished). To
split the total, the kernel's side is timed too: through a second client on the
notebook's kernel (jupyter_client) the Explorer's callbacks are wrapped with timers
(``_show``: state -> picture, panel and inspector; ``_svg`` = writing the canvas SVG with
svg.to_svg, only on picture-cache misses), so "rest" = total - kernel callback = comm +
widget manager + DOM + layout.

Run:  .venv/bin/python bench/bench_browser.py [--notebook 08_clipping_in_training.ipynb] [--presses 26]
      [--ops 1000] [--canvas both]
(both: the HTML picture, then the canvas, in one JupyterLab and kernel: Run All again with TAPEVIZ_CANVAS set)
Prints markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))

import browser as B  # noqa: E402  (tests/support/browser.py: the harness)

EXPLORER = f"{B.SEL_PANEL} .tv-explorer"

_INSTALL_JS = r"""
(explorerSel) => {
  const root = document.querySelector(explorerSel);
  const canvas = root.querySelector('.tv-canvas');
  const L = window.__tvLat = {armed: false, t0: 0, mut: [], frame: [], paint: [], keys: 0};
  const chan = new MessageChannel();  // a task queued after the frame = after its paint
  let pending = null;
  chan.port1.onmessage = () => { if (pending !== null) { L.paint.push(performance.now() - pending); pending = null; } };
  document.addEventListener('keydown', (e) => {
    if (!(e.target && e.target.closest && e.target.closest(explorerSel + ' .noUi-handle'))) return;
    L.keys += 1;
    L.armed = true;
    L.t0 = performance.now();
  }, true);
  const obs = new MutationObserver(() => {
    if (!L.armed) return;
    L.armed = false;
    const t0 = L.t0;
    L.mut.push(performance.now() - t0);
    requestAnimationFrame(() => {
      L.frame.push(performance.now() - t0);
      pending = t0;
      chan.port2.postMessage(0);
    });
  });
  obs.observe(canvas, {subtree: true, childList: true, characterData: true, attributes: true});
  return true;
}
"""

# Runs in the notebook's kernel (a second client), around the Explorer instance `ex`.
_KERNEL_WRAP = r"""
import time as _tvb_time
import tapeviz.explorer.state as _tvb_state
_tvb = {"_show": [], "_svg": [], "bytes": []}
def _tvb_timed(name, f):
    def timed(*a, **k):
        t = _tvb_time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            _tvb[name].append(_tvb_time.perf_counter() - t)
    return timed
_tvb_show = _tvb_timed("_show", ex._show)  # the widget's one callback: state -> picture, panel, inspector
def _tvb_show_sent():
    _tvb_show()
    _tvb["bytes"].append(getattr(ex.canvas, "sent_bytes", len(ex.canvas.value)))  # HTML: the whole SVG each move
ex._show = _tvb_show_sent
_tvb_state.to_svg = _tvb_timed("_svg", _tvb_state.to_svg)  # SVG writing, on picture-cache misses
print(len(ex.canvas.value))
print(type(ex.canvas).__name__)
"""


def pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


lab_page = B.lab_and_page  # a JupyterLab and a Chromium page (bench_browser_training uses it too)


def press_series(page, handle, keys, settle_s: float):
    """Press each key, wait for the canvas to change; return (mutation, frame, paint ms lists, misses)."""
    page.evaluate(
        "() => { const L = window.__tvLat; L.mut.length = L.frame.length = L.paint.length = 0; L.armed = false; }"
    )
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    misses = 0
    for key in keys:
        n = page.evaluate("() => window.__tvLat.paint.length")
        handle.press(key)
        try:
            page.wait_for_function("n => window.__tvLat.paint.length > n", arg=n, timeout=10_000, polling=10)
        except PlaywrightTimeout:  # no visible change for this key (should not happen)
            misses += 1
            page.evaluate("() => { window.__tvLat.armed = false; }")
        time.sleep(settle_s)  # let the kernel go idle: each press is measured alone
    lat = page.evaluate(
        "() => ({mut: window.__tvLat.mut.slice(), frame: window.__tvLat.frame.slice(),"
        " paint: window.__tvLat.paint.slice()})"
    )
    return lat["mut"], lat["frame"], lat["paint"], misses


_BIG_PROGRAM = """\
import numpy as np, tensorflow as tf, tapeviz as tv
rng = np.random.default_rng(0)
ws = [tf.Variable(rng.normal(size=(4, 4)).astype("float32") * 0.5, name=f"w{{i}}") for i in range({blocks})]
bs = [tf.Variable(np.zeros(4, "float32"), name=f"b{{i}}") for i in range({blocks})]
x = tf.constant(rng.normal(size=(2, 4)).astype("float32"))
with tv.GradientTape() as tape:
    h = x
    for i, (w, b) in enumerate(zip(ws, bs)):
        with tf.name_scope(f"block{{i}}"):  # residual blocks: gradients stay large enough to be clipped
            h = h + tf.tanh(tf.matmul(h, w) + b)
    loss = tf.reduce_sum(h * h)
print("ops recorded:", len(tape.graph.capture.ops))
ex = tv.explore(tape, loss)
ex.controls["clip_norm"].value = 0.5
ex
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notebook", default="08_clipping_in_training.ipynb")
    ap.add_argument("--presses", type=int, default=26, help="key presses per slider (>= 20)")
    ap.add_argument("--settle", type=float, default=0.25, help="pause after each change (s)")
    ap.add_argument("--json", type=Path, default=None, help="also write raw numbers here")
    ap.add_argument(
        "--ops",
        type=int,
        default=0,
        help="instead of a notebook, explore a generated N-op graph (layers collapsed above 60 ops)",
    )
    ap.add_argument(
        "--canvas",
        choices=["both", "html", "canvas"],
        default="both",
        help="which explorer picture: today's HTML, the canvas (issue 21), or both in one run (default)",
    )
    args = ap.parse_args(argv)
    missing = B.missing_requirements()
    if missing:  # `make bench` runs every bench: skip, do not fail, on a machine without a browser
        print("bench_browser skipped, missing:", "; ".join(missing))
        return 0

    modes = ["html", "canvas"] if args.canvas == "both" else [args.canvas]
    measured = {}  # mode -> (run seconds, svg chars, canvas kind, browser results, kernel timings)
    with B.lab_and_page() as (lab, page):
        if args.ops:
            args.notebook = f"bench_{args.ops}_ops.ipynb"
            B.write_notebook(Path(lab.root) / args.notebook, [_BIG_PROGRAM.format(blocks=max(1, args.ops // 6))])
        B.open_notebook(page, lab, args.notebook)
        kc = B.kernel_client(lab)
        try:
            for mode in modes:  # one JupyterLab, one kernel, one page: the explorers side by side in time
                # the explorer made by the next Run All: today's HTML picture, or the canvas
                B.kernel_eval(kc, f"import os; os.environ['TAPEVIZ_CANVAS'] = {mode!r}")
                measured[mode] = _measure(page, kc, args)
        finally:
            kc.stop_channels()
        B.screenshot(page, "bench_browser_last")

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    for mode, (run_s, svg_chars, canvas_kind, results, kernel) in measured.items():
        _report(args, mode, run_s, svg_chars, canvas_kind, results, kernel, load)
    if args.json:
        args.json.write_text(json.dumps({m: {"browser": v[3], "kernel": v[4]} for m, v in measured.items()}, indent=1))
    return 0


def _measure(page, kc, args):
    run_s = B.run_all(page)
    page.locator(f"{EXPLORER} .tv-canvas svg").wait_for()
    page.locator(EXPLORER).scroll_into_view_if_needed()
    page.locator(f"{EXPLORER} .tv-clip-mode select").select_option("tf.clip_by_norm")
    clip = page.locator(f"{EXPLORER} .tv-clip-norm .noUi-handle")
    clip.wait_for(state="visible")
    time.sleep(1.0)
    page.evaluate(_INSTALL_JS, EXPLORER)
    results = {}
    svg_chars, canvas_kind = B.kernel_eval(kc, _KERNEL_WRAP).split()
    step = page.locator(f"{EXPLORER} .tv-step .noUi-handle")
    n_steps = int(step.get_attribute("aria-valuemax").split(".")[0])
    half = args.presses // 2
    # step: walk back from the finished pass and forward again (never past the ends),
    # ending on the finished pass: the clip_norm series needs it (clipped values are
    # drawn only once the variables' gradients are)
    step_keys: list[str] = []
    while len(step_keys) < max(args.presses, 20):
        back = max(1, min(half, n_steps, (max(args.presses, 20) - len(step_keys)) // 2))
        step_keys += ["ArrowLeft"] * back + ["ArrowRight"] * back
    B.kernel_eval(kc, "for _v in _tvb.values(): _v.clear()")
    results["step"] = press_series(page, step, step_keys, args.settle)
    k_step = json.loads(B.kernel_eval(kc, "import json; print(json.dumps(_tvb))"))
    # clip_norm: down by 0.01 per key and back up; every value below the largest norm clips
    clip_keys = ["ArrowLeft"] * half + ["ArrowRight"] * (max(args.presses, 20) - half)
    B.kernel_eval(kc, "for _v in _tvb.values(): _v.clear()")
    results["clip_norm"] = press_series(page, clip, clip_keys, args.settle)
    k_clip = json.loads(B.kernel_eval(kc, "import json; print(json.dumps(_tvb))"))
    return run_s, int(svg_chars), canvas_kind, results, {"step": k_step, "clip_norm": k_clip}


def _report(args, mode, run_s, svg_chars, canvas_kind, results, kernel, load) -> None:
    def ms(v):
        return f"{v:.0f}"

    def median(values):
        return statistics.median(values) if values else float("nan")  # every press missed: nan, not a crash

    print(
        f"\n### Explorer latency, {args.notebook}, {mode}: {canvas_kind} (run all {run_s:.1f} s, "
        f"canvas SVG {svg_chars / 1024:.0f} KiB, {os.cpu_count()} CPUs, load average {load})\n"
    )
    print(
        "| slider | presses | key → SVG in DOM, median / p95 | **key → next frame, median** | **p95** "
        "| key → after paint, median / p95 | misses |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, (mut, frame, paint, misses) in results.items():
        print(
            f"| {name} | {len(frame)} | {ms(median(mut))} / {ms(pct(mut, 0.95))} ms "
            f"| **{ms(median(frame))} ms** | **{ms(pct(frame, 0.95))} ms** "
            f"| {ms(median(paint))} / {ms(pct(paint, 0.95))} ms | {misses} |"
        )
    print(
        "\n| slider | kernel callback, median | SVG writing (cache misses), median | p95 callback "
        "| rest = next frame − callback (comm + widgets + DOM), median | bytes sent per move, median |"
    )
    print("|---|---|---|---|---|---|")
    for name, k in kernel.items():
        handler = k["_show"]
        frame = results[name][1]
        med_h = median(handler) * 1000
        med_svg = median(k["_svg"]) * 1000
        print(
            f"| {name} | {ms(med_h)} ms | {ms(med_svg)} ms | {ms(pct([h * 1000 for h in handler], 0.95))} ms | "
            f"{ms(median(frame) - med_h)} ms | {median(k['bytes']) / 1024:.1f} KiB |"
        )


if __name__ == "__main__":
    sys.exit(main())

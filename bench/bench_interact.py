"""tv.interact: input slider -> new picture, measured in a real JupyterLab + headless Chromium.

Starts a JupyterLab on a temp folder and Debian's Chromium with the test harness
(tests/support/browser.py, no pytest), writes one notebook per program, runs it, then presses
arrow keys on the explorer's sliders:

- an input slider whose plot is shown (``x``): the function runs again under a tapeviz tape
  (forward + backward through TF), the explorer's picture and panel are redrawn, and the
  slope plot moves its point and tangent over the cached curve;
- another input (``w``): the same, and the slope plot's curve is evaluated again (one call
  of the function per sample point);
- the step slider (the explorer's own baseline, side by side in the same run).

Latency is timed inside the page: a capture-phase ``keydown`` listener stamps the key; a
MutationObserver on the canvas (and one on the slope plot) stamps the first change after
it, and a ``requestAnimationFrame`` callback queued from there stamps the next frame (the
new picture on screen). The kernel's side is timed through a second client on the
notebook's kernel: ``Interact._rerun`` (call + flow + picture + panel + slope plot) and
``Runner.sample`` (the curve), wrapped with timers.

Run:  .venv/bin/python bench/bench_interact.py [--presses 26]
Prints markdown tables (goal: input slider -> new picture, median <= 100 ms, p95 <= 200 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_browser as BB  # pct, kernel_client, kernel_eval; puts tests/support/ on the path

B = BB.B
EXPLORER = f"{B.SEL_PANEL} .tv-explorer"

PROGRAMS = {
    "seed: x**2 * w": """\
import tensorflow as tf
import tapeviz as tv

def f(x=1.0, w=1.5):
    return x**2 * w

ex = tv.interact(f, x=(-3.0, 3.0, 0.1), w=(0.0, 2.0, 0.02))
ex""",
    "clip_by_norm (notebook 10) + w": """\
import tensorflow as tf
import tapeviz as tv

def clipping(x=1.0, w=1.5):
    g = tf.stack([x, 2 * x, 3 * x]) * w
    return {"clipped": tf.clip_by_norm(g, 5.0), "norm": tf.norm(g)}

ex = tv.interact(clipping, x=(0.0, 3.0, 0.05), w=(0.0, 2.0, 0.02))
ex""",
}

_INSTALL_JS = r"""
(explorerSel) => {
  const root = document.querySelector(explorerSel);
  const L = window.__tvI = {t0: 0, armed: {canvas: false, slope: false}, canvas: [], slope: [], keys: 0};
  document.addEventListener('keydown', (e) => {
    if (!(e.target && e.target.closest && e.target.closest(explorerSel + ' .noUi-handle'))) return;
    L.keys += 1;
    L.t0 = performance.now();
    L.armed.canvas = L.armed.slope = true;
  }, true);
  const watch = (el, name) => new MutationObserver(() => {
    if (!L.armed[name]) return;
    L.armed[name] = false;
    const t0 = L.t0;
    requestAnimationFrame(() => L[name].push(performance.now() - t0));  // the frame that shows it
  }).observe(el, {subtree: true, childList: true, characterData: true, attributes: true});
  watch(root.querySelector('.tv-canvas'), 'canvas');
  watch(root.querySelector('.tv-slope'), 'slope');
  return true;
}
"""

_KERNEL_WRAP = r"""
import time as _tvb_time
_tvb = {"rerun": [], "sample": []}
def _tvb_timed(f, name):
    def timed(*a, **k):
        t = _tvb_time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            _tvb[name].append(_tvb_time.perf_counter() - t)
    return timed
ex._rerun = _tvb_timed(ex._rerun, "rerun")
ex.runner.sample = _tvb_timed(ex.runner.sample, "sample")
print(len(ex.canvas.value))
"""


def press_series(page, handle, keys, settle_s: float, wait_slope: bool):
    """Press each key and wait for the new picture (and the slope plot, for inputs)."""
    page.evaluate("() => { const L = window.__tvI; L.canvas.length = L.slope.length = 0; }")
    misses = 0
    for key in keys:
        n = page.evaluate("() => [window.__tvI.canvas.length, window.__tvI.slope.length]")
        handle.press(key)
        cond = "n => window.__tvI.canvas.length > n[0]" + (" && window.__tvI.slope.length > n[1]" if wait_slope else "")
        try:
            page.wait_for_function(cond, arg=n, timeout=10_000, polling=10)
        except Exception:  # noqa: BLE001 - no visible change for this key (counted)
            misses += 1
        time.sleep(settle_s)  # the kernel goes idle: each press is measured alone
    got = page.evaluate("() => ({canvas: window.__tvI.canvas.slice(), slope: window.__tvI.slope.slice()})")
    return got["canvas"], got["slope"], misses


def measure(page, lab, name: str, source: str, presses: int, settle: float) -> dict:
    nb = f"bench_interact_{abs(hash(name)) % 10_000}.ipynb"
    B.write_notebook(Path(lab.root) / nb, [source])
    B.open_notebook(page, lab, nb)
    run_s = B.run_all(page)
    page.locator(f"{EXPLORER} .tv-canvas svg").wait_for()
    page.locator(EXPLORER).scroll_into_view_if_needed()
    time.sleep(1.0)
    page.evaluate(_INSTALL_JS, EXPLORER)
    out = {"run_all_s": run_s}
    kc = BB.kernel_client(lab)
    try:
        out["svg_chars"] = int(BB.kernel_eval(kc, _KERNEL_WRAP).strip() or 0)
        half = presses // 2
        there_and_back = ["ArrowRight"] * half + ["ArrowLeft"] * (presses - half)
        back_and_there = ["ArrowLeft"] * half + ["ArrowRight"] * (presses - half)
        # step: back from the finished pass and forward again, never past the ends (as bench_browser)
        last = int(float(page.locator(f"{EXPLORER} .tv-step .noUi-handle").get_attribute("aria-valuemax")))
        back = max(1, min(half, last))
        steps = ((["ArrowLeft"] * back + ["ArrowRight"] * back) * -(-presses // (2 * back)))[:presses]
        for slider, sel, keys, slope in (
            ("x (plotted input)", ".tv-input-x .noUi-handle", there_and_back, True),
            ("w (other input: curve re-sampled)", ".tv-input-w .noUi-handle", back_and_there, True),
            ("step (baseline)", ".tv-step .noUi-handle", steps, False),
        ):
            BB.kernel_eval(kc, "for _v in _tvb.values(): _v.clear()")
            canvas, slope_ms, misses = press_series(page, page.locator(f"{EXPLORER} {sel}"), keys, settle, slope)
            kernel = json.loads(BB.kernel_eval(kc, "import json; print(json.dumps(_tvb))"))
            out[slider] = {"canvas": canvas, "slope": slope_ms, "misses": misses, "kernel": kernel}
        B.screenshot(page, f"bench_interact_{nb[:-6]}")
    finally:
        kc.stop_channels()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--presses", type=int, default=26, help="key presses per slider (>= 20)")
    ap.add_argument("--settle", type=float, default=0.25, help="pause after each change (s)")
    ap.add_argument("--json", type=Path, default=None, help="also write raw numbers here")
    args = ap.parse_args(argv)
    missing = B.missing_requirements()
    if missing:  # `make bench` runs every bench: skip, do not fail, on a machine without a browser
        print("bench_interact skipped, missing:", "; ".join(missing))
        return 0
    from playwright.sync_api import sync_playwright

    results = {}
    with (
        tempfile.TemporaryDirectory(prefix="tapeviz-bench-") as tmp,
        B.running_jupyterlab(Path(tmp), source=None) as lab,
        sync_playwright() as pw,
    ):
        browser = B.launch_chromium(pw)
        try:
            page = B.new_page(browser)
            for name, source in PROGRAMS.items():
                results[name] = measure(page, lab, name, source, max(args.presses, 20), args.settle)
                lab.shutdown_kernels()
        finally:
            browser.close()

    def ms(v):
        return f"{v:.0f}"

    def med(v):
        return statistics.median(v) if v else float("nan")

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    print(f"\n### tv.interact latency ({os.cpu_count()} CPUs, load average {load})\n")
    print(
        "| program | slider | presses | **key → new picture, median** | **p95** | key → slope plot, median / p95 "
        "| kernel: rerun median / p95 | kernel: curve samples, median | picture / step slider | misses |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        base = med(r["step (baseline)"]["canvas"])
        for slider in ("x (plotted input)", "w (other input: curve re-sampled)", "step (baseline)"):
            m = r[slider]
            canvas, slope_ms, kernel = m["canvas"], m["slope"], m["kernel"]
            rerun = [t * 1000 for t in kernel["rerun"]]
            sample = [t * 1000 for t in kernel["sample"]]
            slope_txt = f"{ms(med(slope_ms))} / {ms(BB.pct(slope_ms, 0.95))} ms" if slope_ms else "—"
            rerun_txt = f"{ms(med(rerun))} / {ms(BB.pct(rerun, 0.95))} ms" if rerun else "—"
            sample_txt = f"{ms(med(sample))} ms ({len(sample)}×)" if sample else "—"
            print(
                f"| {name} | {slider} | {len(canvas)} | **{ms(med(canvas))} ms** | **{ms(BB.pct(canvas, 0.95))} ms** "
                f"| {slope_txt} | {rerun_txt} | {sample_txt} | {med(canvas) / base:.2f}× | {m['misses']} |"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

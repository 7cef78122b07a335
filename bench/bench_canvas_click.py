"""Click → opened block on the screen, ResNet50 in a real JupyterLab + headless Chromium.

The explorer's canvas (issue 21): a click on a closed group's box opens it (a new layout,
sent whole). Timed inside the page: a capture-phase ``pointerdown`` stamps
``performance.now()``; a MutationObserver on the canvas stamps when the opened group's
frame (``g#group-<id>``) is in the document, and a ``requestAnimationFrame`` queued from
there the next frame (the headline number). The kernel's click handler is timed too
(through a second client on the notebook's kernel): state -> layout -> scene -> SVG ->
patch or whole picture. Each block is opened cold (its layout never drawn before), closed
with a click on its frame, and opened again warm (the layout cached).

Run:  .venv/bin/python bench/bench_canvas_click.py [--blocks 4]
Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))

import browser as B  # noqa: E402  (tests/support/browser.py: the harness)

EXPLORER = f"{B.SEL_PANEL} .tv-explorer"
CANVAS = f"{EXPLORER} .tv-canvas"

_PROGRAM = """\
import numpy as np, tensorflow as tf, keras, tapeviz as tv
keras.utils.set_random_seed(0)
model = keras.applications.ResNet50(weights=None, input_shape=(32, 32, 3), classes=10)
x = tf.random.normal((2, 32, 32, 3))
labels = tf.constant([1, 2])
with tv.GradientTape() as tape:
    loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(labels, model(x)))
ex = tv.explore(tape, loss, theme="light")
ex
"""

_KERNEL_WRAP = r"""
import time as _tvc_time
_tvc = []
_tvc_click = ex._on_canvas_click
def _tvc_timed(element_id):
    t = _tvc_time.perf_counter()
    try:
        return _tvc_click(element_id)
    finally:
        _tvc.append(_tvc_time.perf_counter() - t)
ex.canvas._clicks = [_tvc_timed]
print(len(ex.canvas.value))
"""

_ARM_JS = r"""
([sel, want]) => {
  const root = document.querySelector(sel);
  const L = window.__tvClick = {t0: 0, dom: null, frame: null};
  root.addEventListener("pointerdown", () => { L.t0 = performance.now(); }, {capture: true, once: true});
  const found = () => want.startsWith("!") ? !root.querySelector(`g[id="${want.slice(1)}"]`)
                                           : !!root.querySelector(`g[id="${want}"]`);
  const obs = new MutationObserver(() => {
    if (L.dom !== null || L.t0 === 0 || !found()) return;
    L.dom = performance.now() - L.t0;
    obs.disconnect();
    requestAnimationFrame(() => { L.frame = performance.now() - L.t0; });
  });
  obs.observe(root, {subtree: true, childList: true});
  return true;
}
"""


def _click(page, kc, element: str, want: str) -> tuple[float, float, float]:
    """Click ``element``; wait until ``want`` (an id; "!id": gone) holds; (dom ms, frame ms, kernel ms)."""
    done = int(B.kernel_eval(kc, "print(len(_tvc))"))
    page.evaluate(_ARM_JS, [CANVAS, want])
    target = page.locator(f'{CANVAS} g[id="{element}"]')
    (target.locator("text").first if element.startswith("group-") else target).click()  # a frame: on its name
    page.wait_for_function("() => window.__tvClick.frame !== null", polling=10, timeout=120_000)
    got = page.evaluate("() => window.__tvClick")
    for _ in range(600):  # the handler goes on after the picture left (the groups list, steps ahead)
        kernel = json.loads(B.kernel_eval(kc, f"import json; print(json.dumps(_tvc[{done}:]))"))
        if kernel:
            break
        time.sleep(0.05)
    return got["dom"], got["frame"], (kernel[0] * 1000 if kernel else float("nan"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blocks", type=int, default=4, help="how many closed blocks to open")
    ap.add_argument("--runs", action="store_true", help="also boxes of alike blocks (conv3_block2–4)")
    args = ap.parse_args(argv)
    missing = B.missing_requirements()
    if missing:
        print("bench_canvas_click skipped, missing:", "; ".join(missing))
        return 0
    rows = []
    with B.lab_and_page() as (lab, page):
        B.write_notebook(Path(lab.root) / "resnet50.ipynb", [_PROGRAM])
        B.open_notebook(page, lab, "resnet50.ipynb")
        run_s = B.run_all(page)
        page.locator(f"{CANVAS} svg").wait_for()
        page.locator(EXPLORER).scroll_into_view_if_needed()
        kc = B.kernel_client(lab)
        try:
            chars = int(B.kernel_eval(kc, _KERNEL_WRAP).strip())
            boxes = page.evaluate(
                "sel => Array.from(document.querySelectorAll(sel + ' g[id^=\"node-layer:\"]')).map(g => g.id)",
                CANVAS,
            )
            # a box of alike blocks ("conv3_block2–4") opens its first block (--runs: those too)
            blocks = [b for b in boxes if "block" in b and (args.runs or "–" not in b)][: args.blocks]
            for element in blocks or boxes[: args.blocks]:
                gid = re.sub(r"–\d+$", "", element[len("node-layer:") :])
                cold = _click(page, kc, element, f"group-{gid}")
                shut = _click(page, kc, f"group-{gid}", f"!group-{gid}")
                warm = _click(page, kc, element, f"group-{gid}")
                _click(page, kc, f"group-{gid}", f"!group-{gid}")
                rows.append((element[len("node-layer:") :], cold, shut, warm))
            B.screenshot(page, "bench_canvas_click_last")
        finally:
            kc.stop_channels()

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    print(
        f"\n### Click to open a block, ResNet50 (32×32, no weights; run all {run_s:.1f} s, default picture "
        f"{chars / 1024:.0f} KiB, {os.cpu_count()} CPUs, load average {load})\n"
    )
    print("(kernel: the whole click handler, with what it does after the picture left: groups list, steps ahead)\n")
    print("| block | open (cold): click → frame, kernel | close: click → frame, kernel | open again (warm) |")
    print("|---|---|---|---|")
    for gid, cold, shut, warm in rows:
        print(
            f"| {gid} | **{cold[1]:.0f} ms**, {cold[2]:.0f} ms | {shut[1]:.0f} ms, {shut[2]:.0f} ms "
            f"| {warm[1]:.0f} ms, {warm[2]:.0f} ms |"
        )
    if rows:
        cold, shut, warm = (statistics.median(r[k][1] for r in rows) for k in (1, 2, 3))
        print(f"\nmedian cold open {cold:.0f} ms, close {shut:.0f} ms, warm open {warm:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

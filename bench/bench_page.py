"""The exported page, today's against the self-contained one, side by side in one run.

Today's ``tv.export_html`` (the checkout given by ``--base``: one ipywidgets picture per
backward step, require.js and the html-manager from CDNs) against this checkout's (one
file: the first SVG plus per-step patches, the page's own script inlined). For the seed
example (``x**2 + tf.stop_gradient(y)``) and ResNet50's default page (tests/support/gallery_models.py):

- **write s**: ``tv.export_html(tape, target, path)`` end to end (the flow included, the
  model and its recording not), in a fresh process per export; best of ``--rounds``;
- **size**: the file; everything the page needs is in it for the new page;
- offline in Chromium (``file://``, every request but the file's own aborted, as on a
  classroom PC without network): **requests** the page tried, **pictures** it showed
  (an SVG on screen within 5 s), **first picture ms** (from the start of navigation to
  the page's script having drawn it: ``performance.now()`` it records; median of 5 loads);
- **step ms**: a key press to the next picture, median of ``--presses`` presses going
  back from the finished pass: the keydown dispatched in the page, its handler (patching
  the SVG) and the style and layout it causes (a forced layout), timed in the page; the
  round trip of playwright's ``keyboard.press`` (the harness's IPC included) beside it.

Run: .venv/bin/python bench/bench_page.py --base /path/to/checkout-of-main [--rounds 2] [--presses 60]
(make one with ``git worktree add --detach /tmp/base main``). Prints a markdown table for
bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"

# Runs in a fresh process with the checkout to measure first on sys.path.
_WRITE = r"""
import json, os, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, {tests!r})
import tensorflow as tf
import tapeviz as tv
case, path = {case!r}, {path!r}
if case == "seed":
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        z = x**2 + tf.stop_gradient(y)
    target = z
else:
    from gallery_models import GALLERY
    run = GALLERY["ResNet50"]()
    tape, target = run.tape, run.loss
t = time.perf_counter()
tv.export_html(tape, target, path)
print(json.dumps({{"seconds": time.perf_counter() - t, "file": tv.__file__}}))
"""


def write(checkout: Path, case: str, path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout), "TF_CPP_MIN_LOG_LEVEL": "3"}
    code = _WRITE.format(tests=str(REPO / "tests" / "support"), case=case, path=str(path))
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=path.parent
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["file"].startswith(str(checkout)), got  # the checkout asked for, not another
    return got


_STEP_JS = r"""
(n) => {
  const root = document.querySelector(".tv-page");
  root.focus();
  const out = [];
  const last = Number(root.querySelector(".tv-step").max);
  let key = "ArrowLeft";
  for (let i = 0; i < n; i++) {
    const before = root.dataset.tvStep;
    if (before === "0") key = "ArrowRight"; // back and forth over a short pass
    if (Number(before) === last) key = "ArrowLeft";
    const t0 = performance.now();
    root.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true }));
    void root.offsetHeight; // the style and layout the new picture needs
    out.push(performance.now() - t0);
    if (root.dataset.tvStep === before) throw new Error("no step at " + before);
  }
  return out;
}
"""


def open_offline(browser, path: Path, *, presses: int, loads: int = 5) -> dict:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    asked: list[str] = []

    def route(r):
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            asked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(path.as_uri(), wait_until="load")
    out: dict = {"requests": 0, "pictures": 0, "first_ms": None, "step_ms": None, "press_ms": None}
    try:
        page.wait_for_selector(".tv-page[data-tv-ready='1'] svg, .tv-frames svg", timeout=5000, state="visible")
    except PlaywrightTimeout:  # the old page offline: its widget scripts never come
        pass
    out["pictures"] = page.locator("svg:visible").count()
    ready_js = "() => { const r = document.querySelector('.tv-page'); return r && r.dataset.tvReadyMs; }"
    ready = page.evaluate(ready_js)
    if ready:
        firsts = [float(ready)]
        for _ in range(loads - 1):  # the page opened again, in a new tab: the median of the loads
            again = browser.new_page(viewport={"width": 1400, "height": 1000})
            again.route("**/*", route)
            again.goto(path.as_uri(), wait_until="load")
            again.wait_for_selector(".tv-page[data-tv-ready='1'] svg")
            firsts.append(float(again.evaluate(ready_js)))
            again.close()
        out["first_ms"] = statistics.median(firsts)
        page.evaluate(_STEP_JS, 3)  # warm up
        out["step_ms"] = statistics.median(page.evaluate(_STEP_JS, presses))
        root = page.locator(".tv-page")
        times = []
        for _ in range(min(presses, 30)):
            step = root.get_attribute("data-tv-step")
            t = time.perf_counter()
            root.press("ArrowRight" if step == "0" else "ArrowLeft")
            times.append((time.perf_counter() - t) * 1000)
        out["press_ms"] = statistics.median(times)
    out["requests"] = len(asked)
    page.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, required=True, help="a checkout of today's tapeviz (main)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--presses", type=int, default=60)
    ap.add_argument("--cases", default="seed,resnet50")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        pages = (("today", args.base.resolve()), ("self-contained", REPO))
        for case in args.cases.split(","):
            # interleaved rounds, the order swapped each round: the machine's load (shared
            # cores) falls on both alike; the best round of each is reported
            best: dict[str, float] = {}
            for r in range(args.rounds):
                for label, checkout in pages if r % 2 == 0 else pages[::-1]:
                    secs = write(checkout, case, Path(tmp) / f"{case}-{label}.html")["seconds"]
                    best[label] = min(best.get(label, secs), secs)
            for label, _ in pages:
                path = Path(tmp) / f"{case}-{label}.html"
                seen = open_offline(browser, path, presses=args.presses)
                rows.append({"case": case, "page": label, "write_s": best[label], "bytes": path.stat().st_size, **seen})
                print(json.dumps(rows[-1]), flush=True)
        browser.close()

    def num(v, fmt):
        return "—" if v is None else format(v, fmt)

    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} (2 cores)\n")
    heads = ["example", "page", "write s", "size", "requests offline", "pictures offline", "first picture ms"]
    heads += ["step ms (in page)", "key press ms (playwright)"]
    print("| " + " | ".join(heads) + " |")
    print("|" + "---|" * len(heads))
    for r in rows:
        size = f"{r['bytes'] / 1e6:.2f} MB" if r["bytes"] >= 1e6 else f"{r['bytes'] / 1e3:.0f} KB"
        print(
            f"| {r['case']} | {r['page']} | {r['write_s']:.2f} | {size} | {r['requests']} | {r['pictures']} | "
            f"{num(r['first_ms'], '.0f')} | {num(r['step_ms'], '.2f')} | {num(r['press_ms'], '.1f')} |"
        )
    by = {(r["case"], r["page"]): r for r in rows}
    for case in args.cases.split(","):
        a, b = by[case, "today"], by[case, "self-contained"]
        print(f"\n{case}: size {b['bytes'] / a['bytes']:.3f}x of today's, write {b['write_s'] / a['write_s']:.2f}x")


if __name__ == "__main__":
    main()

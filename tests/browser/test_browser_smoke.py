"""Proves the browser harness end to end: JupyterLab + kernel + ipywidgets + Chromium.

A slider linked to a label through a kernel-side observer: pressing ArrowRight on the
slider handle must round-trip through the kernel and update the label.
"""

import json
import sys
import time

import pytest
from browser import ARTIFACTS_DIR, open_notebook, run_all, screenshot, write_notebook

pytestmark = pytest.mark.browser

SMOKE_CELLS = [
    "import sys\nprint(sys.prefix)",
    (
        "import ipywidgets as w\n"
        "slider = w.IntSlider(value=0, min=0, max=10, description='x')\n"
        "slider.add_class('tv-smoke')\n"
        "out = w.Label(value='0')\n"
        "out.add_class('tv-smoke-out')\n"
        "def _double(change):\n"
        "    out.value = str(change['new'] * 2)\n"
        "slider.observe(_double, names='value')\n"
        "w.VBox([slider, out])"
    ),
]


def test_slider_drives_kernel_label(jupyterlab, page):
    from playwright.sync_api import expect

    timings = {"jupyterlab_start_s": round(jupyterlab.startup_seconds, 2)}
    write_notebook(jupyterlab.root / "smoke.ipynb", SMOKE_CELLS)

    t0 = time.monotonic()
    open_notebook(page, jupyterlab, "smoke.ipynb")
    timings["open_notebook_s"] = round(time.monotonic() - t0, 2)

    timings["run_all_s"] = round(run_all(page), 2)

    # The kernel is the one from the environment running the tests.
    first_output = page.locator(".jp-NotebookPanel .jp-OutputArea-output").first
    expect(first_output).to_contain_text(sys.prefix)

    handle = page.locator(".tv-smoke .noUi-handle")
    label = page.locator(".tv-smoke-out")
    t0 = time.monotonic()
    expect(handle).to_be_visible()
    expect(label).to_have_text("0")
    timings["widget_render_s"] = round(time.monotonic() - t0, 2)

    t0 = time.monotonic()
    for _ in range(3):
        handle.press("ArrowRight")
    expect(handle).to_have_attribute("aria-valuetext", "3")
    expect(label).to_have_text("6")
    timings["keys_to_label_s"] = round(time.monotonic() - t0, 2)

    shot = screenshot(page, "browser_smoke")
    assert shot.stat().st_size > 0
    (ARTIFACTS_DIR / "browser_smoke.timings.json").write_text(json.dumps(timings, indent=2))
    print("\nsmoke timings:", timings)

"""A lesson saved with its outputs and opened where no widget can render: every explorer's
output carries its picture (explorer/fallback.py), and ``jupyter nbconvert --to html`` shows
it in a browser with JavaScript disabled.

The lessons are executed as JupyterLab saves them: outputs kept, no widget state (the
"save widget state" setting of JupyterLab and Notebook 7 is off by default). nbconvert then
has no state to render a widget from and takes the output's next richest type: the SVG.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tapeviz import cli
from tapeviz.explorer import fallback

pytestmark = [pytest.mark.slow, pytest.mark.browser]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# one lesson per kind of explorer: tv.explore(tape), tv.interact, tv.explore(hist)
LESSONS = ["01_basics", "10_what_if", "11_watching_training"]


def _execute(path: Path, work: Path):
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    env = {k: v for k, v in os.environ.items() if k != fallback.PAGE_ENV}  # a user's kernel, not a page's
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", store_widget_state=False, resources={"metadata": {"path": str(work)}}
    )
    client.execute(env=env)
    return nb


def explorer_cells(nb) -> list[int]:
    """Indexes (among code cells) of the cells that displayed a widget."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    return [i for i, c in enumerate(code) if any(WIDGET_VIEW in o.get("data", {}) for o in c.get("outputs", []))]


@pytest.mark.parametrize("name", LESSONS)
def test_nbconvert_shows_every_explorers_picture_without_javascript(tmp_path, name, chromium_browser):
    source = cli.find_notebooks("en")
    work = tmp_path / "en"
    shutil.copytree(source, work)
    nb = _execute(work / f"{name}.ipynb", work)
    cells = explorer_cells(nb)
    assert cells, f"{name} displayed no explorer"
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i in cells:
        for o in code[i].outputs:
            if WIDGET_VIEW in o.get("data", {}):
                assert o["data"]["image/svg+xml"].lstrip().startswith("<svg"), (name, i)
    saved = work / f"{name}.ipynb"
    nbformat.write(nb, str(saved))
    proc = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", str(saved)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    page_file = saved.with_suffix(".html")

    # the session's Chromium (tests/conftest.py): a second sync Playwright in one process fails
    context = chromium_browser.new_context(java_script_enabled=False, viewport={"width": 1200, "height": 900})
    try:
        page = context.new_page()
        # nbconvert's template names CDN scripts (require.js, MathJax): offline, and unused here
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:")) else r.abort())
        page.goto(page_file.as_uri())
        html_cells = page.locator(".jp-CodeCell")
        assert html_cells.count() == len(code)
        for i in cells:
            cell = html_cells.nth(i)
            cell.scroll_into_view_if_needed()
            shown = cell.evaluate(
                """(el) => [...el.querySelectorAll('.jp-OutputArea-output img, .jp-OutputArea-output svg')]
                    .filter((p) => { const b = p.getBoundingClientRect(); return b.width > 100 && b.height > 50; })
                    .length"""
            )
            assert shown >= 1, f"{name}: the explorer of code cell {i} shows no picture without JavaScript"
            if i == cells[-1]:
                cell.screenshot(path=str(tmp_path / f"{name}_cell{i}.png"))
    finally:
        context.close()

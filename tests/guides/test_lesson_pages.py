"""``tapeviz lessons --html DIR``: every lesson as one offline page, and an index.

The slow part runs both lesson sets through the command (nbclient executes them) and opens
every page in headless Chromium from file://, with every request that is not a file or
data URL aborted: nothing is asked of the network, and every code cell that made a picture
shows one. Where the explorer's stepping page exists (html_page.page_fragment), each
explorer on a page steps with no kernel.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from tapeviz import cli
from tapeviz.explorer.lesson_pages import lesson_title

PICTURE_TYPES = ("image/svg+xml", "image/png", "image/jpeg")

# Chromium flags as the browser harness uses them (no sandbox in containers, no GPU).


def test_lesson_title_is_the_first_heading():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("x = 1"),
            nbformat.v4.new_markdown_cell("Some words.\n\n## 03 · Tensors over tensors\n\nMore."),
            nbformat.v4.new_markdown_cell("# Later"),
        ]
    )
    assert lesson_title(nb) == "03 · Tensors over tensors"
    assert lesson_title(nbformat.v4.new_notebook()) == ""


def test_lessons_without_notebooks_names_the_folder(tmp_path, capsys):
    code = cli.main(["lessons", "--html", str(tmp_path / "out"), "--notebooks", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert f"no notebooks (*.ipynb) in {tmp_path}" in err and "--notebooks DIR" in err
    assert not (tmp_path / "out").exists()


def test_lessons_needs_the_html_folder(capsys):
    with pytest.raises(SystemExit):
        cli.main(["lessons"])
    assert "--html" in capsys.readouterr().err


def test_one_lesson_becomes_a_page_that_names_nothing_outside(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# 01 · A tiny lesson\n\nWords."),
            nbformat.v4.new_code_cell(
                "import sys\nimport tensorflow as tf\nimport tapeviz as tv\n"
                "x = tf.Variable(2.0)\nwith tv.GradientTape() as tape:\n    y = x * x\n"
                "print('gradient:', tape.gradient(y, x).numpy())\nprint('a log' + ' line', file=sys.stderr)"
            ),
            nbformat.v4.new_code_cell("ex = tv.explore(tape, y)\nex"),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    nbformat.write(nb, str(src / "01_tiny.ipynb"))
    out = tmp_path / "out"
    assert cli.main(["lessons", "--html", str(out), "--notebooks", str(src), "--lang", "zh"]) == 0
    assert "wrote 1 pages and index.html" in capsys.readouterr().out
    page = (out / "01_tiny.html").read_text(encoding="utf-8")
    assert '<html lang="zh">' in page and "<title>01 · A tiny lesson</title>" in page
    assert "gradient: 4.0" in page and "a log line" not in page  # stderr is not the lesson's
    assert "data-tv-static=" in page and page.count("<svg") >= 1
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)=[\"']?(https?:)?//", page), "names a URL"
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "href='01_tiny.html'>01 · A tiny lesson</a>" in index and "tapeviz 课程" in index
    saved = nbformat.read(str(out / "01_tiny.ipynb"), as_version=4)
    explorer = saved.cells[2].outputs[0]["data"]
    assert "application/vnd.jupyter.widget-view+json" not in explorer and "text/html" in explorer


def cells_with_pictures(nb) -> list[int]:
    """Indexes (among code cells) of the cells whose outputs hold a picture."""
    out = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, cell in enumerate(code):
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if any(t in data for t in PICTURE_TYPES) or "<svg" in str(data.get("text/html", "")):
                out.append(i)
                break
    return out


def visible_pictures(root) -> int:
    """Pictures (svg, img) drawn at a real size inside an element handle."""
    return root.evaluate(
        """(el) => [...el.querySelectorAll('svg, img')].filter((p) => {
            const box = p.getBoundingClientRect();
            return box.width > 40 && box.height > 20 && p.checkVisibility();
        }).length"""
    )


STEP_JS = """
async (root) => {
  const shown = () => [...root.querySelectorAll('svg')]
    .filter((s) => s.checkVisibility() && s.getBoundingClientRect().width > 40)
    .map((s) => s.outerHTML).join('');
  const wait = () => new Promise((r) => setTimeout(r, 150));
  const seen = new Set([shown()]);
  for (const range of root.querySelectorAll('input[type=range]')) {
    for (const v of [range.min, range.max]) {
      range.value = v;
      range.dispatchEvent(new Event('input', { bubbles: true }));
      range.dispatchEvent(new Event('change', { bubbles: true }));
      await wait();
      seen.add(shown());
    }
  }
  if (seen.size < 2) {
    for (const button of root.querySelectorAll('button')) {
      button.click();
      await wait();
      seen.add(shown());
    }
  }
  return seen.size;
}
"""


@pytest.fixture(scope="module")
def lesson_sets(tmp_path_factory):
    out = tmp_path_factory.mktemp("lessons")
    for lang in ("en", "zh"):
        assert cli.main(["lessons", "--html", str(out / lang), "--lang", lang]) == 0
    return out


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_lesson_page_opens_offline_with_every_picture(lesson_sets, lang, chromium_browser):
    folder: Path = lesson_sets / lang
    source = cli.find_notebooks(lang)
    names = sorted(p.stem for p in source.glob("*.ipynb"))
    assert sorted(p.stem for p in folder.glob("*.html") if p.stem != "index") == names
    index = (folder / "index.html").read_text(encoding="utf-8")
    for name in names:
        nb = nbformat.read(str(folder / f"{name}.ipynb"), as_version=4)
        assert f"href='{name}.html'" in index and lesson_title(nb) in index

    elsewhere: list[str] = []
    # the session's Chromium (tests/conftest.py): a second sync Playwright in one process fails
    context = chromium_browser.new_context(viewport={"width": 1200, "height": 900})
    try:
        page = context.new_page()

        def route(r):  # a classroom PC without network: only the page's own file and data URLs
            if r.request.url.startswith(("file:", "data:")):
                return r.continue_()
            elsewhere.append(r.request.url)
            return r.abort()

        page.route("**/*", route)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        for name in ["index", *names]:
            page.goto((folder / f"{name}.html").as_uri())
            if name == "index":
                assert page.locator("ol.tv-lessons li a").count() == len(names)
                continue
            nb = nbformat.read(str(folder / f"{name}.ipynb"), as_version=4)
            cells = page.locator(".code_cell")
            assert cells.count() == sum(c.cell_type == "code" for c in nb.cells), name
            wanted = cells_with_pictures(nb)
            assert wanted, f"{name}: no cell made a picture"
            for i in wanted:
                cell = cells.nth(i)
                cell.scroll_into_view_if_needed()
                assert visible_pictures(cell.element_handle()) >= 1, f"{name}: code cell {i} shows no picture"
            stepping = page.locator("[data-tv-static='stepping']")
            for k in range(stepping.count()):  # the stepping page, once html_page has it
                assert stepping.nth(k).element_handle().evaluate(STEP_JS) >= 2, f"{name}: explorer {k} does not step"
            if name.startswith("01"):
                page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
        assert not errors, errors
    finally:
        context.close()
    assert not elsewhere, f"the pages asked the network for {elsewhere[:5]}"

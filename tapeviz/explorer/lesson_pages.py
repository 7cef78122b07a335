"""The teaching notebooks as offline pages: one self-contained .html per lesson and an index.

Each lesson is executed with nbclient in a copy of its folder, in a kernel where
:data:`~tapeviz.explorer.fallback.PAGE_ENV` is "1": every explorer's output is then its
offline stepping page (or its pictures), not a widget that needs the kernel (see
fallback.py). nbconvert's ``basic`` template turns the executed notebook into the page's
body: the prose, the code, the printed outputs and the pictures, every image inline. The
page around it is written here with its own styles (code highlighting included), so it
loads nothing at all: no script, style or font from a CDN, no MathJax, no require.js. A
teacher can copy the folder to a USB stick and open index.html from there.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..messages import say
from .fallback import PAGE_ENV

__all__ = ["LessonPage", "lesson_title", "write_lesson_pages"]

_CSS = """
body { font-family: 'DejaVu Sans', 'Noto Sans CJK SC', 'Microsoft YaHei', 'PingFang SC', sans-serif;
  margin: 0 auto; max-width: 1100px; padding: 12px 20px 40px; line-height: 1.5; color: #222; }
nav.tv-lesson-nav { display: flex; gap: 18px; flex-wrap: wrap; padding: 6px 0 10px;
  border-bottom: 1px solid #ddd; margin-bottom: 10px; font-size: 14px; }
.cell { margin: 10px 0; }
.input_area, .highlight { background: #f6f8fa; border: 1px solid #e1e4e8; border-radius: 4px; }
.highlight pre, pre { margin: 0; padding: 8px 10px; overflow-x: auto; font-size: 13px; line-height: 1.4;
  font-family: 'DejaVu Sans Mono', Consolas, monospace; white-space: pre; }
.prompt { display: none; }
.output_area pre { background: none; border: none; padding: 4px 10px; }
.output_area { margin: 4px 0; overflow-x: auto; }
.output_area img, .output_area svg { max-width: 100%; height: auto; }
.tv-static-picture { margin: 6px 0; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 2px 6px; }
code { background: #f0f0f0; padding: 0 3px; border-radius: 3px; }
ol.tv-lessons li { margin: 6px 0; font-size: 16px; }
"""


@dataclass(frozen=True)
class LessonPage:
    """One written page: the notebook it came from, its title and the .html file."""

    source: Path
    title: str
    path: Path


def lesson_title(nb) -> str:
    """A lesson's title: its first Markdown heading (else its file has to do)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#+\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    return ""


def _highlight_css() -> str:
    from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]

    return str(HtmlFormatter(style="default").get_style_defs(".highlight"))


def _page(title: str, lang: str, nav: str, body: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="{html.escape(lang)}">\n<head>\n<meta charset="UTF-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'  # no favicon request
        f"<title>{html.escape(title)}</title>\n<style>{_CSS}\n{_highlight_css()}</style>\n</head>\n<body>\n"
        f"<nav class='tv-lesson-nav'>{nav}</nav>\n{body}\n</body>\n</html>\n"
    )


def _execute(path: Path, workdir: Path, timeout: int):
    """Run a lesson in a copy of its folder, in a kernel that makes static explorers."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    env = {**os.environ, PAGE_ENV: "1", "TAPEVIZ_CANVAS": "html"}
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        # no widget state: nbconvert then shows each output's static part, not a dead widget
        store_widget_state=False,
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute(env=env)
    # TensorFlow's log lines (start-up, retracing warnings) are not the lesson's: a failing
    # cell still raises above, with its traceback
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr")]
    return nb


def _body(nb) -> str:
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="basic", exclude_input_prompt=True, exclude_output_prompt=True, exclude_anchor_links=True
    )
    exporter.embed_images = True
    body, _ = exporter.from_notebook_node(nb)
    return str(body)


def write_lesson_pages(
    source: Path,
    out: Path,
    *,
    lang: str = "en",
    timeout: int = 600,
    report: Callable[[str], None] | None = None,
) -> list[LessonPage]:
    """Execute every notebook in ``source`` and write it as ``out/<name>.html``, with
    ``out/index.html`` listing them; the executed notebooks go beside them
    (``out/<name>.ipynb``, their outputs carrying the same pictures). Returns the pages
    in lesson order. A failing cell raises nbclient's CellExecutionError (its cell and
    traceback in the message)."""
    notebooks = sorted(source.glob("*.ipynb"))
    if not notebooks:
        raise ValueError(f"no notebooks (*.ipynb) in {source}")
    import nbformat

    out.mkdir(parents=True, exist_ok=True)
    pages: list[LessonPage] = []
    with tempfile.TemporaryDirectory(prefix="tapeviz-lessons-") as tmp:
        work = Path(tmp) / source.name
        shutil.copytree(source, work)  # what a lesson writes stays out of the source folder
        executed = []
        for path in notebooks:
            if report is not None:
                report(f"running {path.name}")
            nb = _execute(work / path.name, work, timeout)
            nbformat.write(nb, str(out / path.name))
            executed.append((path, nb))
    index_name = "index.html"
    home = say("lessons.index", lang)
    for i, (path, nb) in enumerate(executed):
        title = lesson_title(nb) or path.stem
        links = [f"<a href='{index_name}'>{html.escape(home)}</a>"]
        if i > 0:
            prev = executed[i - 1][0].with_suffix(".html").name
            links.append(f"<a href='{prev}'>◀ {html.escape(say('lessons.previous', lang))}</a>")
        if i + 1 < len(executed):
            nxt = executed[i + 1][0].with_suffix(".html").name
            links.append(f"<a href='{nxt}'>{html.escape(say('lessons.next', lang))} ▶</a>")
        page = out / path.with_suffix(".html").name
        page.write_text(_page(title, lang, " ".join(links), _body(nb)), encoding="utf-8")
        pages.append(LessonPage(path, title, page))
    items = "".join(f"<li><a href='{p.path.name}'>{html.escape(p.title)}</a></li>" for p in pages)
    offline = html.escape(say("lessons.offline", lang))
    body = f"<h1>{html.escape(home)}</h1>\n<p>{offline}</p>\n<ol class='tv-lessons'>{items}</ol>"
    (out / index_name).write_text(_page(home, lang, "", body), encoding="utf-8")
    return pages

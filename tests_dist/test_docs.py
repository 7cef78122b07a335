"""The built docs site (docs/_build/html, made by `make docs`; `make test-docs` builds and
then runs this): every part is there, and no page needs anything from the internet.

The build itself is strict (sphinx -W: any warning fails it); these tests check what the
pages hold: every guide page with its sections, linked from the home page, every notebook with
the outputs of its run, every built-in example in the gallery, every public function in
the API reference, and, in headless Chromium with the network blocked, the lessons'
explorers as their offline pages (stepping, where this tapeviz has the stepping page).
"""

from __future__ import annotations

import functools
import html
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import tapeviz
from tapeviz.examples import EXAMPLES
from tapeviz.explorer import html_page

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "docs" / "_build" / "html"
NOTEBOOKS = sorted(
    p.relative_to(ROOT / "notebooks").with_suffix("").as_posix() for p in (ROOT / "notebooks").glob("*/*.ipynb")
)
# What the docs' explorers are: the offline stepping page where this tapeviz has it, else the pictures.
STATIC_KIND = "stepping" if hasattr(html_page, "page_fragment") else "pictures"
# Moves every range input (then every button) of an explorer's offline page and counts the
# different pictures it showed.
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
# A resource the browser would fetch from another host: script/img/link/iframe/source URLs and CSS url().
EXTERNAL = re.compile(
    r"""<(?:script|img|iframe|source|link)\b[^>]*?\b(?:src|href)\s*=\s*["']?(?:https?:)?//"""
    r"""|url\(\s*["']?(?:https?:)?//""",
    re.I,
)


@pytest.fixture(scope="module", autouse=True)
def site():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built docs in {SITE}: run `make docs` first (or `make test-docs`)", pytrace=False)


def page(rel: str) -> str:
    path = SITE / rel
    assert path.is_file(), f"{rel} was not built"
    return path.read_text(encoding="utf-8")


def text_of(markup: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", markup)))


def test_every_guide_page_is_built_with_its_sections_and_linked_from_home():
    home = page("index.html")
    assert "tv.explore" in text_of(home).replace(" . ", "."), "the home page shows the README's first example"
    assert (SITE / "_images" / "stop_gradient.png").is_file(), "the home page's picture travels with it"
    for source in sorted((ROOT / "docs").glob("*.md")):
        if source.stem == "index":
            continue
        assert f'href="{source.stem}.html"' in home, f"{source.name} is not linked from the home page"
        # Sphinx writes typographic quotes (generator's -> generator’s)
        built = text_of(page(f"{source.stem}.html")).replace("\u2019", "'").replace("\u2018", "'")
        text = source.read_text(encoding="utf-8")
        headings = [re.sub(r"[`*]", "", h).strip() for h in re.findall(r"^#{1,4} (.+)$", text, re.M)]
        missing = [h for h in headings if re.sub(r"\s+", " ", h) not in built]
        assert not missing, f"{source.name}: sections not on its page: {missing}"


def test_every_notebook_is_rendered_with_its_outputs():
    for name in NOTEBOOKS:
        markup = page(f"notebooks/{name}.html")
        outputs = markup.count('class="cell_output')
        assert outputs >= 3, f"{name}: {outputs} cell outputs; the notebook was not executed"
        # the explorer as its offline page (tapeviz/explorer/fallback.py), not a widget needing a kernel
        assert f"data-tv-static='{STATIC_KIND}'" in markup, f"{name}: the explorer's offline page is missing"
        assert "Traceback" not in markup, f"{name}: a cell raised"
    assert {n.split("/")[0] for n in NOTEBOOKS} == {"en", "zh"}, "both lesson sets are on the site"
    first = text_of(page("notebooks/zh/01_basics.html"))
    assert "梯度: 6.0" in first and "tapeviz: 6.0 TensorFlow: 6.0" in first  # printed by TF at build time
    assert "gradient: 6.0" in text_of(page("notebooks/en/01_basics.html"))
    teaching = text_of(page("teaching.html"))
    assert "Voilà" in teaching and "QUIZ = True" in teaching


def test_gallery_has_every_example_as_svg_gif_and_png():
    markup = page("gallery.html")
    for name, ex in EXAMPLES.items():
        code = html.unescape(re.sub(r"<[^>]+>", "", markup))  # highlighted code: tags between tokens
        assert ex.heading in markup and f"def {ex.run.__name__}() -> ExampleRun:" in code, name
        for fmt in ("svg", "gif"):
            shown = SITE / "_images" / f"{name}.{fmt}"
            assert f'src="_images/{name}.{fmt}"' in markup and shown.stat().st_size > 500, (name, fmt)
        downloads = list((SITE / "_downloads").glob(f"*/{name}.png"))
        assert len(downloads) == 1 and downloads[0].read_bytes().startswith(b"\x89PNG"), name
        assert (SITE / "_images" / f"{name}.gif").read_bytes().startswith(b"GIF8")
        assert (SITE / "_images" / f"{name}.svg").read_text(encoding="utf-8").lstrip().startswith("<?xml")


def test_api_reference_documents_every_public_name():
    markup = page("api.html")
    for name in tapeviz.__all__:
        assert f'id="tapeviz.{name}"' in markup, f"tapeviz.{name} is not in the API reference"
    for extra in (
        "tapeviz.explorer.widget.Explorer",
        "tapeviz.gradients.diagnose.Diagnosis",
        "tapeviz.gradients.flow.Step",
        "tapeviz.explorer.whatif.Interact",
        "tapeviz.History.norms",
        "tapeviz.training.history.ClipStats",
    ):
        assert f'id="{extra}"' in markup, extra
    assert "Write a standalone .html page" in markup  # a docstring's own text, not just a name


def test_changelog_page():
    assert "Unreleased" in text_of(page("changelog.html"))


def test_no_page_loads_anything_from_another_host():
    offenders = {}
    for path in SITE.rglob("*"):
        if path.suffix in (".html", ".css") and path.is_file():
            found = EXTERNAL.findall(path.read_text(encoding="utf-8", errors="replace"))
            if found:
                offenders[str(path.relative_to(SITE))] = found[:3]
    assert not offenders, offenders


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.mark.parametrize("lesson", ["en/01_basics", "zh/01_basics", "en/10_what_if", "en/11_watching_training"])
def test_lesson_pages_explorers_work_offline(lesson):
    """Headless Chromium on a lesson page served from 127.0.0.1, every request to another
    host refused: each explorer is its offline page, drawn at a real size, and (where this
    tapeviz has the stepping page) steps with no kernel."""
    playwright = pytest.importorskip("playwright.sync_api")
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(SITE)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    elsewhere, failed, errors = [], [], []
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path="/usr/bin/chromium",
                args=[
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                ],
            )
            try:
                pg = browser.new_page(viewport={"width": 1280, "height": 900})

                def route(r):  # nothing leaves the machine: another host's request is recorded and refused
                    if r.request.url.startswith((base, "data:", "blob:")):
                        return r.continue_()
                    elsewhere.append(r.request.url)
                    return r.abort()

                pg.route("**/*", route)
                pg.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
                pg.on("pageerror", lambda e: errors.append(str(e)))
                pg.goto(f"{base}/notebooks/{lesson}.html")
                explorers = pg.locator(f"[data-tv-static='{STATIC_KIND}']")
                explorers.first.wait_for(state="visible", timeout=60_000)
                for k in range(explorers.count()):
                    root = explorers.nth(k)
                    root.scroll_into_view_if_needed()
                    box = root.locator("svg").first.bounding_box()
                    assert box and box["width"] > 200 and box["height"] > 100, (lesson, k, box)
                    if STATIC_KIND == "stepping":
                        views = root.element_handle().evaluate(STEP_JS)
                        assert views >= 2, f"{lesson}: explorer {k} does not step offline"
                pg.screenshot(path=str(SITE.parent / f"{lesson.replace('/', '_')}.png"), full_page=True)
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
    assert not elsewhere, f"the page asked other hosts for {elsewhere}"
    assert not [f for f in failed if not f.endswith("/favicon.ico")], failed
    assert not errors, errors

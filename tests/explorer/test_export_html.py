"""Explorer.export_html / tapeviz.api.export_html: a standalone page where stepping keeps
working with no kernel.

The browser test serves the page and local copies of the widget scripts (fetched once from
the npm registry with `npm pack`, cached in tests/.cache/) from a local http server, and
blocks every other address: what it checks runs on the exported page alone.
"""

from __future__ import annotations

import functools
import html
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import tensorflow as tf
from browser import TESTS_DIR, is_ci, screenshot
from ipywidgets import embed
from ipywidgets._version import __html_manager_version__
from ipywidgets.widgets import widget as widget_module

import tapeviz as tv
from tapeviz.api import export_html

EVIL = "<script>alert(1)</script>"
CACHE_DIR = TESTS_DIR / ".cache" / "npm"
# The html-manager range ipywidgets' own embed code loads from the CDN (^1.0.1 for 8.1.x).
HTML_MANAGER = f"@jupyter-widgets/html-manager@{__html_manager_version__}"
REQUIREJS = "requirejs@2"

_STATE_RE = re.compile(r'<script type="application/vnd.jupyter.widget-state\+json">\s*(.*?)\s*</script>', re.S)


def stop_gradient_example():
    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape() as tape:
        z = x**2 + tf.stop_gradient(y)
    return tape, x, y, z


def widget_state(page: str) -> dict:
    (text,) = _STATE_RE.findall(page)
    return json.loads(text)["state"]  # escape_script's \u003c escapes are plain JSON escapes


def models(state: dict, name: str) -> list[tuple[str, dict]]:
    return [(mid, m["state"]) for mid, m in state.items() if m["model_name"] == name]


def ref(mid: str) -> str:
    return f"IPY_MODEL_{mid}"


# --------------------------------------------------------------------------- no browser


def test_page_holds_one_frame_per_step_linked_to_slider_and_play(tmp_path):
    tape, x, y, z = stop_gradient_example()
    ex = tv.explore(tape, z)
    n = len(ex.flow.steps)
    step = ex.controls["step"]
    shown, canvas = step.value, ex.canvas.value
    before = len(widget_module._instances)

    path = ex.export_html(tmp_path / "page.html")

    assert len(widget_module._instances) == before, "export_html left widgets registered"
    assert (step.value, ex.canvas.value) == (shown, canvas), "export_html changed the live explorer"
    page = path.read_text(encoding="utf-8")
    state = widget_state(page)
    ((stack_id, stack),) = models(state, "StackModel")
    frames = [state[c.removeprefix("IPY_MODEL_")]["state"]["value"] for c in stack["children"]]
    assert len(frames) == n, "one picture per backward step; the last is the finished pass"
    assert stack.get("selected_index") == shown == n - 1
    for k, svg in enumerate(frames):  # the same pictures the canvas shows at each step
        step.value = k
        assert svg == ex.canvas.value, f"frame {k} differs from the explorer's picture"
        assert svg.startswith("<svg")
    assert all(f"Step {k}/{n - 1}" in frames[k] for k in range(n))
    assert "backward pass of z done" in frames[-1] and "backward pass of z done" not in frames[-2]

    ((slider_id, slider),) = models(state, "IntSliderModel")
    ((play_id, play),) = models(state, "PlayModel")
    assert slider["max"] == play["max"] == n - 1 and slider["value"] == play["value"] == n - 1
    links = sorted((s["source"], s["target"]) for _, s in models(state, "LinkModel"))
    assert links == sorted(
        [
            ([ref(slider_id), "value"], [ref(stack_id), "selected_index"]),
            ([ref(play_id), "value"], [ref(stack_id), "selected_index"]),
        ]
    )
    # Only the page's own widgets: nothing of the live explorer (its canvas, controls) rides along.
    live = [ex, ex.canvas, ex.panel, *ex.controls.values()]
    assert set(state).isdisjoint(w.model_id for w in live)
    assert "tv-panel" in page and "global norm" in page  # the static clipping panel
    # Default: the public CDN copies ipywidgets itself uses (documented in export_html).
    assert f'<script src="{html.escape(embed.DEFAULT_EMBED_REQUIREJS_URL)}"' in page
    assert "cdnjs.cloudflare.com/ajax/libs/require.js" in page
    ex.close()


def test_names_appear_only_escaped(tmp_path):
    holder = {"v": tf.Variable(2.0, name=EVIL)}
    with tv.GradientTape() as tape:
        y = holder["v"] * 3.0
    ex = tv.explore(tape, {EVIL: y})
    ex.controls["clip"].value = "by_norm"
    n = len(ex.flow.steps)
    page = ex.export_html(tmp_path / "evil.html").read_text(encoding="utf-8")
    ex.close()

    assert "alert(1)" in page, "the name is on the page, as text"
    assert not re.search(r"<script>\s*alert", page, re.I)
    assert not re.search(r"alert\(1\)</script", page, re.I)
    # Exactly the page's own script tags: require.js config, require.js, the manager, the state, the view,
    # the canvas's (hover tips, zoom, pan)
    assert len(re.findall(r"<script\b", page, re.I)) == 6
    assert f"<title>tapeviz: backward pass of {html.escape(EVIL)}</title>" in page
    state = widget_state(page)
    ((_, stack),) = models(state, "StackModel")
    assert len(stack["children"]) == n
    texts = [m["state"].get("value", "") for m in state.values() if m["model_name"] == "HTMLModel"]
    escaped = html.escape(EVIL)
    assert any(escaped in t for t in texts), "panel and header show the escaped name"
    assert not any(EVIL in t for t in texts), "no widget value carries the name as markup"


def test_options_and_errors(tmp_path):
    tape, x, y, z = stop_gradient_example()
    page = export_html(tape, {"loss": z}, tmp_path / "a.html", requirejs=False).read_text(encoding="utf-8")
    assert f'<script src="{html.escape(embed.DEFAULT_EMBED_SCRIPT_URL)}"' in page
    assert "require.js" not in page and "var require" not in page and "tapeviz: backward pass of loss" in page
    page = export_html(
        tape, z, tmp_path / "b.html", embed_url="/js/embed-amd.js?a=1&b=2", requirejs_url="/js/require.js", cors=False
    ).read_text(encoding="utf-8")
    assert re.search(
        r'<script src="/js/require.js"></script>\s*<script src="/js/embed-amd.js\?a=1&amp;b=2"></script>', page
    ), "require.js first, then the manager; URLs escaped for the attribute"
    config = re.search(r"<script>var require = (.*?);</script>", page).group(1)
    assert json.loads(config)["paths"]["@jupyter-widgets/html-manager/dist"] == "/js"  # fonts next to the script
    assert "cdn" not in page.lower()
    with pytest.raises(ValueError, match="requirejs=True"):
        export_html(tape, z, tmp_path / "c.html", requirejs=False, requirejs_url="/js/require.js")
    with pytest.raises(ValueError, match=r"\.html"):
        export_html(tape, z, tmp_path / "c.svg")
    x2 = tf.Variable(3.0)
    with tv.GradientTape(persistent=True) as both:
        f1 = x2**2
        f2 = x2 * 4.0
    two = export_html(both, {"a": f1, "b": f2}, tmp_path / "two.html").read_text(encoding="utf-8")
    state = widget_state(two)
    ((_, chooser),) = models(state, "DropdownModel")
    assert chooser["_options_labels"] == ["a", "b"]  # every target of the tape in one page, a menu picks one
    assert len(models(state, "StackModel")) == 3  # the targets, and each one's pictures
    with pytest.raises(FileNotFoundError):
        export_html(tape, z, tmp_path / "missing" / "c.html")
    assert not list(tmp_path.glob("c.*"))


# --------------------------------------------------------------------------- local scripts


def _unavailable(reason: str):
    if is_ci():
        pytest.fail(f"{reason} (CI is set, so this fails instead of skipping)", pytrace=False)
    pytest.skip(reason)


def _safe_extract(tgz: Path, dest: Path) -> None:
    with tarfile.open(tgz) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
        else:  # pragma: no cover - Python without extraction filters
            for m in tar.getmembers():
                if m.name.startswith(("/", "..")) or ".." in Path(m.name).parts:
                    raise ValueError(f"unsafe path in {tgz.name}: {m.name}")
            tar.extractall(dest)


@functools.lru_cache(maxsize=1)
def _local_widget_scripts() -> Path:
    """tests/.cache/npm/<key>/ with html-manager/ and requirejs/ (unpacked npm packages)."""
    key = re.sub(r"[^A-Za-z0-9.]+", "_", f"{HTML_MANAGER}+{REQUIREJS}").strip("_")
    target = CACHE_DIR / key
    if (target / "ok").is_file():
        return target
    npm = shutil.which("npm")
    if npm is None:
        _unavailable("npm not found (apt-get install -y --no-install-recommends nodejs npm)")
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    (CACHE_DIR.parent / ".gitignore").write_text("*\n")  # tests/.cache/ is never committed
    with tempfile.TemporaryDirectory(dir=CACHE_DIR) as tmp:
        tmp = Path(tmp)
        t0 = time.monotonic()
        proc = subprocess.run(
            [npm, "pack", "--json", "--pack-destination", str(tmp), HTML_MANAGER, REQUIREJS],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp,
        )
        if proc.returncode != 0:
            _unavailable(f"npm pack {HTML_MANAGER} {REQUIREJS} failed:\n{proc.stderr[-2000:]}")
        packed = {p["name"]: tmp / p["filename"] for p in json.loads(proc.stdout)}
        stage = tmp / "stage"
        for name, folder in (("@jupyter-widgets/html-manager", "html-manager"), ("requirejs", "requirejs")):
            _safe_extract(packed[name], stage / folder)
        versions = {p["name"]: p["version"] for p in json.loads(proc.stdout)}
        (stage / "ok").write_text(json.dumps({"versions": versions, "npm_seconds": time.monotonic() - t0}))
        try:
            os.replace(stage, target)
        except OSError:  # another worker got there first
            if not (target / "ok").is_file():
                raise
    return target


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def local_site(tmp_path_factory):
    """(root dir, base URL): a 127.0.0.1 http server over a temp dir that holds the
    widget scripts (html-manager/, requirejs/) next to the pages a test writes."""
    scripts = _local_widget_scripts()
    root = tmp_path_factory.mktemp("site")
    (root / "html-manager").symlink_to(scripts / "html-manager" / "package", target_is_directory=True)
    (root / "requirejs").symlink_to(scripts / "requirejs" / "package", target_is_directory=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, name="export-html-server", daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


# --------------------------------------------------------------------------- browser

_VISIBLE_SVG_JS = """
() => {
  const svgs = Array.from(document.querySelectorAll('.tv-export .tv-frames svg'))
    .filter(s => s.getClientRects().length > 0 && getComputedStyle(s).visibility !== 'hidden');
  if (svgs.length !== 1) return null;
  const title = Array.from(svgs[0].querySelectorAll('text')).map(t => (t.textContent || '').trim())
    .find(t => /^(Step \\d+\\/\\d+|Backward pass)/.test(t)) || null;
  return {svg: svgs[0].outerHTML, title: title, count: svgs.length};
}
"""


def _visible(page):
    return page.evaluate(_VISIBLE_SVG_JS)


def _wait_title(page, old):
    js = "old => { const v = (" + _VISIBLE_SVG_JS + ")(); return v !== null && v.title !== null && v.title !== old; }"
    page.wait_for_function(js, arg=old, polling=50)
    return _visible(page)


@pytest.mark.browser
@pytest.mark.parametrize("loader", ["amd", "standalone"])
def test_exported_page_steps_in_chromium_without_kernel(local_site, page, loader):
    """amd: require.js + embed-amd.js (ipywidgets' default kind); standalone: embed.js alone."""
    from playwright.sync_api import expect

    root, base = local_site
    tape, x, y, z = stop_gradient_example()
    if loader == "amd":
        options = dict(embed_url=f"{base}/html-manager/dist/embed-amd.js", requirejs_url=f"{base}/requirejs/require.js")
    else:
        options = dict(embed_url=f"{base}/html-manager/dist/embed.js", requirejs=False)
    export_html(tape, z, root / f"stop_gradient_{loader}.html", **options)
    n = len(tv.flow(tape, z).steps)

    outside, failed, errors, sockets = [], [], [], []

    def route(r):
        if r.request.url.startswith(base + "/"):
            r.continue_()
        else:  # a CDN, a kernel, anything: the page must not need it
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("websocket", lambda ws: sockets.append(ws.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("response", lambda resp: resp.status >= 400 and failed.append(f"{resp.status} {resp.url}"))
    page.goto(f"{base}/stop_gradient_{loader}.html", wait_until="load")

    frames = page.locator(".tv-export .tv-frames")
    expect(frames.locator("svg").first).to_be_visible()
    expect(page.locator(".tv-export-loading")).to_be_hidden()
    shown = _visible(page)
    assert shown is not None and re.match(rf"Step {n - 1}/{n - 1}\b.*backward pass of .* done", shown["title"]), shown
    expect(page.locator(".tv-export .tv-panel td.tv-norm[data-var='x']")).to_contain_text("4 →")

    handle = page.locator(".tv-export .tv-step .noUi-handle")
    expect(handle).to_have_attribute("aria-valuetext", str(n - 1))
    handle.press("ArrowLeft")
    expect(handle).to_have_attribute("aria-valuetext", str(n - 2))
    back = _wait_title(page, shown["title"])
    assert back["svg"] != shown["svg"]
    assert re.match(rf"Step {n - 2}/{n - 1}\b", back["title"]), back["title"]
    screenshot(page, "export_html" if loader == "amd" else f"export_html_{loader}")

    # Play, linked to the same Stack: from step 0 it moves on by itself.
    for _ in range(n - 2):
        handle.press("ArrowLeft")
    expect(handle).to_have_attribute("aria-valuetext", "0")
    start = _wait_title(page, back["title"])
    assert start["title"].startswith(f"Step 0/{n - 1}"), start["title"]
    page.locator(".tv-export .tv-play button").first.click()
    moved = _wait_title(page, start["title"])
    assert re.match(rf"Step 1/{n - 1}\b", moved["title"]), moved["title"]
    expect(handle).not_to_have_attribute("aria-valuetext", "0")

    assert outside == [], f"the page asked for other addresses: {outside}"
    assert sockets == [], f"the page opened websockets (a kernel?): {sockets}"
    assert failed == [] and errors == [], (failed, errors)


@pytest.mark.browser
def test_exported_page_has_the_canvas_tips_zoom_and_pan_inline(local_site, page):
    """The canvas's script is in the page itself (no CDN, no anywidget, no kernel): hovering a
    box shows its tip, the wheel zooms, a step keeps the view, reset goes back."""
    from playwright.sync_api import expect

    root, base = local_site
    tape, x, y, z = stop_gradient_example()
    export_html(tape, z, root / "canvas.html", embed_url=f"{base}/html-manager/dist/embed.js", requirejs=False)
    assert "tvNavigate" in (root / "canvas.html").read_text(encoding="utf-8")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{base}/canvas.html", wait_until="load")
    viewport = page.locator(".tv-export .tv-viewport")
    expect(viewport).to_have_count(1)
    box = page.locator('.tv-frames svg:visible g[id^="node-"]').first
    box.hover()
    tip = page.locator(".tv-export .tv-tip")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("gradient")
    screenshot(page, "export_html_tip")
    bb = viewport.bounding_box()
    page.mouse.move(bb["x"] + bb["width"] / 2, bb["y"] + 30)
    page.mouse.wheel(0, -300)
    expect(viewport).not_to_have_attribute("data-tv-scale", "1.000")
    scale = viewport.get_attribute("data-tv-scale")
    handle = page.locator(".tv-export .tv-step .noUi-handle")
    handle.press("ArrowLeft")
    page.wait_for_timeout(200)
    assert viewport.get_attribute("data-tv-scale") == scale  # stepping keeps the view
    page.locator(".tv-export .tv-reset").click()
    expect(viewport).to_have_attribute("data-tv-scale", "1.000")
    assert errors == [], errors

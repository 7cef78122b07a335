"""Sphinx extension for tapeviz's docs: everything the site shows that is made at build time.

- The teaching notebooks (both lesson sets, notebooks/en and notebooks/zh, with img/) are
  copied from the repo's notebooks/ into docs/notebooks/ (git-ignored), where myst-nb
  executes them; the lessons' bilingual sources and their build script stay behind.
- The gallery: every built-in example (`tapeviz examples`) exported with the same code as
  `tapeviz demo --export` (PNG, SVG and the backward-pass GIF) into docs/_generated/, and
  its Markdown appended to gallery.md while Sphinx reads it. No picture is committed.
- The ipywidgets scripts that show the notebooks' explorers come from the npm registry
  (`npm pack`, cached in docs/_build/) and are served from the site itself: no page of the
  site loads anything from a CDN.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import linecache
import shutil
import subprocess
import tarfile
import tempfile
import textwrap
import time
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
NOTEBOOKS_SRC = ROOT / "notebooks"
NOTEBOOKS_DOCS = DOCS / "notebooks"  # build-time copy (git-ignored)
SOURCES_ONLY = {"source", "build.py"}  # what writes the lessons: not pages of the site
GENERATED = DOCS / "_generated"  # build-time output (git-ignored)
GALLERY_DIR = GENERATED / "gallery"
STATIC = GENERATED / "static"
WIDGET_DIR = STATIC / "widgets"  # served as _static/widgets/
NPM_CACHE = DOCS / "_build" / ".npm"
GALLERY_DOC = "gallery"
TEACHING_DOC = "teaching"  # the teacher's page: its quiz questions are appended at build time
GALLERY_FORMATS = ("svg", "png", "gif")


# ----------------------------------------------------------------------------- notebooks
def sync_notebooks(src: Path = NOTEBOOKS_SRC, dst: Path = NOTEBOOKS_DOCS) -> list[Path]:
    """Mirror src into dst (notebooks and their images), keeping modification times so an
    incremental build re-executes only changed notebooks. Files gone from src are removed."""
    wanted = {
        p.relative_to(src)
        for p in src.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(src).parts)
        and p.relative_to(src).parts[0] not in SOURCES_ONLY
    }
    if not any(p.suffix == ".ipynb" for p in wanted):
        raise ExtensionError(f"no notebooks in {src}")
    dst.mkdir(parents=True, exist_ok=True)
    for old in sorted(dst.rglob("*"), reverse=True):
        rel = old.relative_to(dst)
        if old.is_file() and rel not in wanted:
            old.unlink()
        elif old.is_dir() and not any(old.iterdir()):
            old.rmdir()
    copied = []
    for rel in sorted(wanted):
        s, d = src / rel, dst / rel
        if d.exists() and d.stat().st_mtime == s.stat().st_mtime and d.stat().st_size == s.stat().st_size:
            continue
        d.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(s, d)
        copied.append(d)
    return copied


# ----------------------------------------------------------------------------- gallery
def build_gallery(out: Path = GALLERY_DIR) -> dict[str, dict[str, Path]]:
    """Export every built-in example as PNG, SVG and GIF (the `tapeviz demo --export` code)."""
    from tapeviz import cli, examples

    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    files: dict[str, dict[str, Path]] = {}
    for name in examples.EXAMPLES:
        files[name] = {fmt: cli.export_example(name, out / f"{name}.{fmt}") for fmt in GALLERY_FORMATS}
    logger.info(f"tapeviz gallery: {len(files)} examples exported in {time.monotonic() - t0:.1f} s")
    return files


def gallery_markdown(files: dict[str, dict[str, Path]]) -> str:
    """One section per example: its program, the finished backward pass (SVG), the pass step
    by step (GIF) and download links. Paths are absolute from the docs folder."""
    from tapeviz import examples

    parts = []
    for name, ex in examples.EXAMPLES.items():
        rel = {fmt: "/" + p.relative_to(DOCS).as_posix() for fmt, p in files[name].items()}
        source = textwrap.dedent(inspect.getsource(ex.run)).rstrip()
        parts.append(
            f"## {ex.heading} · {name}\n\n"
            f"{ex.title}. `tapeviz export {name} -o {name}.svg` draws it; the program, from "
            f"`tapeviz/examples.py`:\n\n"
            f"```python\n{source}\n```\n\n"
            f"The finished backward pass:\n\n"
            f"![{name}: the finished backward pass]({rel['svg']})\n\n"
            f"Step by step (one frame per backward step, the one being processed in amber):\n\n"
            f"![{name}: the backward pass step by step]({rel['gif']})\n\n"
            f"Files: {{download}}`PNG <{rel['png']}>` · {{download}}`SVG <{rel['svg']}>` · "
            f"{{download}}`GIF <{rel['gif']}>`\n"
        )
    return "\n".join(parts)


# ----------------------------------------------------------------------------- widget scripts
def widget_scripts(dest: Path = WIDGET_DIR, cache: Path = NPM_CACHE) -> Path:
    """Copy the standalone @jupyter-widgets/html-manager bundle (embed.js and its fonts) into
    dest. The version range is the one this ipywidgets embeds with. Fetched once with
    `npm pack` into the cache."""
    from ipywidgets._version import __html_manager_version__

    spec = f"@jupyter-widgets/html-manager@{__html_manager_version__}"
    unpacked = cache / spec.replace("/", "_").replace("@", "").replace("^", "")
    if not (unpacked / "package" / "dist" / "embed.js").is_file():
        npm = shutil.which("npm")
        if npm is None:
            raise ExtensionError(
                "the docs serve the ipywidgets scripts themselves (no CDN), and fetch them with npm: "
                "install Node.js and npm (Debian: apt-get install nodejs npm), then build again"
            )
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            proc = subprocess.run(
                [npm, "pack", "--json", "--pack-destination", tmp, spec],
                capture_output=True,
                text=True,
                timeout=300,
                cwd=tmp,
            )
            if proc.returncode != 0:
                raise ExtensionError(f"npm pack {spec} failed:\n{proc.stderr[-2000:]}")
            tgz = Path(tmp) / json.loads(proc.stdout)[0]["filename"]
            stage = Path(tmp) / "stage"
            with tarfile.open(tgz) as tar:
                tar.extractall(stage, filter="data")
            if unpacked.exists():
                shutil.rmtree(unpacked)
            stage.rename(unpacked)
    dist = unpacked / "package" / "dist"
    dest.mkdir(parents=True, exist_ok=True)
    for f in dist.iterdir():
        # embed.js (the standalone bundle: no require.js) finds its fonts next to itself.
        if f.name == "embed.js" or f.suffix in (".woff2", ".woff", ".ttf", ".eot", ".svg", ".txt"):
            shutil.copy2(f, dest / f.name)
    return dest


# ----------------------------------------------------------------------------- teaching
def lesson_explorer(path: Path):
    """Run a lesson's code in this process with ``QUIZ = True`` and return its last explorer
    (``ex``), or None for a lesson whose explorer has no quiz (tv.interact)."""
    import matplotlib

    matplotlib.use("Agg")
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    namespace: dict = {"__name__": f"lesson_{path.stem}"}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        code = "\n".join(ln for ln in cell.source.splitlines() if not ln.lstrip().startswith(("%", "!")))
        code = code.replace("QUIZ = False", "QUIZ = True")
        # the cell's source where tracebacks and tapeviz's names look (linecache), as IPython
        # keeps it: a derivative group is named from its source line (du = ∂u/∂pts)
        filename = f"<{path.name} cell {i}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
        with contextlib.redirect_stdout(io.StringIO()):  # the lesson's prints are the lesson page's
            exec(compile(code, filename, "exec"), namespace)
    ex = namespace.get("ex")
    return ex if getattr(getattr(ex, "state", None), "quiz", False) else None


def quiz_questions(ex) -> list[dict]:
    """Every question an explorer's quiz asks: target, step, the question in en and zh, and
    TensorFlow's answer as the quiz reveals it."""
    from tapeviz.explorer import quiz
    from tapeviz.record.values import format_value

    rows = []
    for target in ex.graph_targets.targets:
        fl = ex.graph_targets.flow(target)
        for k in range(fl.last_step + 1):
            q = quiz.question(fl, k)
            answer = f"‖·‖ = {float(q.expected[0]):.4g}" if q.by_norm else format_value(q.value)
            rows.append(
                {
                    "target": target,
                    "step": k,
                    "en": quiz.question_text(fl, q, "en"),
                    "zh": quiz.question_text(fl, q, "zh"),
                    "answer": answer,
                }
            )
    return rows


def teaching_markdown(src: Path = NOTEBOOKS_SRC / "en") -> str:
    """The teacher's page's generated part: each lesson's quiz questions, in a folded table."""
    import html

    parts = []
    for path in sorted(src.glob("*.ipynb")):
        ex = lesson_explorer(path)
        title = path.stem.replace("_", " ")
        if ex is None:
            why = "it has no quiz explorer"
            if "what_if" in path.stem:
                why = "its explorer is `tv.interact` (predict the slope)"
            parts.append(f"### {title}\n\nNo quiz: {why}.\n")
            continue
        rows = quiz_questions(ex)
        ex.close()
        body = "".join(
            f"<tr><td>{html.escape(r['target'])}</td><td>{r['step']}</td><td>{html.escape(r['en'])}<br>"
            f"{html.escape(r['zh'])}</td><td><code>{html.escape(r['answer'])}</code></td></tr>"
            for r in rows
        )
        parts.append(
            f"### {title}\n\n<details class='tv-questions'><summary>{len(rows)} questions</summary>"
            "<table><tr><th>target</th><th>step</th><th>question · 问题</th><th>TensorFlow's answer</th></tr>"
            f"{body}</table></details>\n"
        )
    return "\n".join(parts)


# ----------------------------------------------------------------------------- Sphinx hooks
def _fetch_static(app: Sphinx, config) -> None:
    widget_scripts()  # before the HTML builder checks html_static_path


def _prepare(app: Sphinx) -> None:
    copied = sync_notebooks()
    if copied:
        logger.info(f"tapeviz docs: {len(copied)} notebook files copied into {NOTEBOOKS_DOCS}")
    app.env.tapeviz_gallery = gallery_markdown(build_gallery())  # type: ignore[attr-defined]
    app.env.tapeviz_teaching = teaching_markdown()  # type: ignore[attr-defined]


def _append_gallery(app: Sphinx, docname: str, source: list[str]) -> None:
    if docname == GALLERY_DOC:
        source[0] = source[0].rstrip() + "\n\n" + app.env.tapeviz_gallery + "\n"  # type: ignore[attr-defined]
    if docname == TEACHING_DOC:
        source[0] = source[0].rstrip() + "\n\n" + app.env.tapeviz_teaching + "\n"  # type: ignore[attr-defined]


def _gallery_always_read(app: Sphinx, env, added, changed, removed) -> list[str]:
    # The gallery's pictures are remade on every build: read the page again so it shows them.
    return [GALLERY_DOC]


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _fetch_static)
    app.connect("builder-inited", _prepare)
    app.connect("source-read", _append_gallery)
    app.connect("env-get-outdated", _gallery_always_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

"""The README is the front page and docs/ holds the guide: every Python example on them runs
as written, uses only public names, and the front page stays short."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import tapeviz

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# The pages someone reads: the README and the guide's Markdown pages (docs/notebooks/ is a
# build-time copy of the notebooks, which tests/guides/test_notebooks.py runs).
PAGES = [README, *sorted(DOCS.glob("*.md"))]
BLOCKS = [
    (page, i, code)
    for page in PAGES
    for i, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S))
]
# What a page may import from a module other than `tapeviz` itself: the names the API
# reference documents (`.. autofunction:: tapeviz.output.export.plan_frames`).
DOCUMENTED = set(re.findall(r"^\.\. auto\w+:: (tapeviz\.[\w.]+)$", (DOCS / "api.md").read_text(encoding="utf-8"), re.M))


def _id(block) -> str:
    page, i, _ = block
    return f"{page.relative_to(ROOT)}:{i}"


def test_readme_is_a_front_page_with_both_commands_and_the_picture_on_its_first_screen():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    first_block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    first_screen = "\n".join(text.splitlines()[:25])  # what a 1080p browser shows above the fold
    assert "make demo" in first_screen and "make test" in first_screen
    assert re.search(r"!\[[^\]]*\]\(notebooks/img/\w+\.png\)", first_screen), "the picture is on the first screen"


def test_readme_example_is_ten_lines_that_run():
    text = README.read_text(encoding="utf-8")
    example = text.split("<!-- first-example -->", 1)[1].split("<!-- /first-example -->", 1)[0]
    code = re.search(r"```python\n(.*?)```", example, re.S).group(1)
    assert len(code.strip().splitlines()) <= 10
    assert README.read_text(encoding="utf-8").index("<!-- first-example -->") < 2500


def test_guide_pages_are_listed_in_the_docs_index():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^([\w-]+)$", index, re.M))
    pages = {p.stem for p in DOCS.glob("*.md")} - {"index"}
    assert pages <= listed, f"pages missing from docs/index.md's toctrees: {sorted(pages - listed)}"
    whole = re.search(r"\{include\} \.\./README\.md\n(?!:start-after:)", index)
    assert whole is None, "the docs' home page is its own: it includes the README's first example, not all of it"


@pytest.mark.parametrize("block", BLOCKS, ids=_id)
def test_example_uses_only_public_names(block):
    page, i, code = block
    tree = ast.parse(code)
    aliases = {
        a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names if a.name == "tapeviz"
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tapeviz"):
            public = tapeviz.__all__ if node.module == "tapeviz" else []
            for a in node.names:
                name = f"{node.module}.{a.name}"
                assert a.name in public or name in DOCUMENTED, f"{_id(block)}: {name} is not in the API reference"
        elif isinstance(node, ast.Import):
            for a in node.names:
                assert a.name == "tapeviz" or not a.name.startswith("tapeviz."), f"{_id(block)}: import {a.name}"
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            assert node.attr in tapeviz.__all__ or node.attr == "__version__", f"{_id(block)}: tv.{node.attr}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_run(page, tmp_path, monkeypatch):
    """A page's Python blocks run top to bottom in one namespace, as a reader runs them (a
    later block may use what an earlier one made)."""
    monkeypatch.chdir(tmp_path)  # files the examples write land here
    namespace: dict = {}
    for p, i, code in BLOCKS:
        if p == page:
            exec(compile(code, _id((p, i, code)), "exec"), namespace)


def test_flow_page_numbers_are_tensorflows():
    # docs/flow.md prints 5.0 / 1.0 and a contributions list summing to 5.0
    import numpy as np
    import tensorflow as tf

    import tapeviz as tv

    x = tf.Variable(2.0)
    y = tf.Variable(3.0)
    with tv.GradientTape(persistent=True) as tape:
        a = x * x
        z = a + x + tf.stop_gradient(y)
    fl = tv.flow(tape, z)
    assert fl.grad(x) == tape.gradient(z, x).numpy() == 5.0
    assert fl.grad(a) == tape.gradient(z, a).numpy() == 1.0
    parts = [c for _, c in fl.contributions(x)]
    assert sorted(float(p) for p in parts) == [1.0, 2.0, 2.0]
    assert np.sum(parts) == 5.0
    assert fl.why_none(y).reason == "stop_gradient"

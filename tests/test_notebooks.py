"""The teaching notebooks: they run headless from top to bottom, print TensorFlow's numbers,
end with a live Explorer, and are committed without outputs.

Each notebook is executed with nbclient in a temp copy (the repo's files are never written).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

EXPECTED = [
    "01_basics",
    "02_scalar_over_tensor",
    "03_tensor_over_tensor",
    "04_persistent_tape",
    "05_stop_gradient",
    "06_clip_by_norm",
    "07_clip_by_value",
    "08_clipping_in_training",
    "09_why_is_my_gradient_none",
    "10_what_if",
    "11_watching_training",
]

# What the tutorial's own print statements must show (computed by TensorFlow in the kernel).
PRINTED = {
    "01_basics": ["梯度: 6.0", "tapeviz: 6.0   TensorFlow: 6.0"],
    "02_scalar_over_tensor": ["损失函数对w的梯度:", "[[2. 4.]\n [6. 8.]]", "equal      : True"],
    "03_tensor_over_tensor": ["z对x的梯度:", "[[2.]\n [2.]]", "gradient(y, x): [2. 2.]"],
    "04_persistent_tape": ["f1对x的梯度: 6.0", "f2对x的梯度: 4.0", "second call: RuntimeError"],
    "05_stop_gradient": ["z对x的梯度: 4.0", "z对y的梯度: None", "why_none(y): stop_gradient"],
    "06_clip_by_norm": ["裁剪后的梯度: [1.3363062 2.6726124 4.008919 ]", "norm after  : 5.0"],
    "07_clip_by_value": ["裁剪后的梯度: [-1.  1.  1.]"],
    "08_clipping_in_training": ["SGD step matches: True", "global norm after : 1.0", "per-variable scale: [0.4367"],
    "09_why_is_my_gradient_none": [
        "why_none      -> stop_gradient",
        "why_none      -> integer_dtype",
        "why_none      -> not_watched: c is a plain tensor",
        "why_none      -> not_watched: w is a non-trainable variable",
        "why_none      -> outside_tf",
        "why_none      -> not_recorded",
        "why_none -> not_watched: x is a plain tensor",
        "tape.gradient -> LookupError: gradient registry has no entry for: AdjustContrastv2",
        "why_none      -> no_gradient: AdjustContrastv2 has no gradient registered",
    ],
    "10_what_if": [
        "x =  2.5   dy/dx =  5.0   2x =  5.0",
        "tape.gradient: 5.0",
        "y = 5.0   z =  9.0   dz/dx = 4.0   dz/dy = None",
        "x = 1.3   norm = 4.864   unchanged   d sum(clipped)/dx = 6",
        "x = 2.0   norm = 7.483   clipped",
    ],
    "11_watching_training": [
        "step  0  vanishing  sig/d0",
        "matches tf.norm: True",
        "step  6  exploding  seq/rnn/simple_rnn_cell",
        "step  7  nan        loss",
        "so the update stayed bounded",
        "vanishing flags with ReLU + He initialisation: 0",
        "steps with a picture: [0, 10, 20]",
    ],
}


def _repo_notebooks() -> list[Path]:
    """Every .ipynb the repository holds or would take in: git's tracked and untracked
    files minus the ignored ones (the venv, the docs build's executed copies, caches)."""
    git = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.ipynb"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if git.returncode != 0:  # not a checkout (an unpacked sdist): its notebooks folder is all there is
        return sorted(NOTEBOOKS.glob("*.ipynb"))
    return sorted(REPO / p for p in git.stdout.split() if (REPO / p).exists())


def _stream_text(nb) -> str:
    return "".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.output_type == "stream" and o.get("name") == "stdout"
    )


def test_every_tutorial_section_has_a_notebook():
    names = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
    assert names == EXPECTED


@pytest.mark.parametrize("path", _repo_notebooks(), ids=lambda p: str(p.relative_to(REPO)))
def test_committed_without_outputs(path):
    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)
    dirty = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)
    ]
    assert not dirty, f"{path.name}: cells {dirty} have outputs or execution counts; clear them before committing"
    assert "widgets" not in nb.metadata, f"{path.name}: saved widget state in the metadata"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


@pytest.mark.parametrize("name", EXPECTED)
def test_last_cell_displays_the_explorer_once(name):
    nb = nbformat.read(str(NOTEBOOKS / f"{name}.ipynb"), as_version=4)
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    lines = [ln.strip() for ln in last.source.strip().splitlines()]
    assert lines[-1] == "ex", "the last line shows the explorer (and nothing else)"
    assert any(ln.startswith(("ex = tv.explore(", "ex = tv.interact(")) for ln in lines)
    assert not any(ln.endswith(")") and ".add_class(" in ln for ln in lines), "add_class() would display a second copy"


@pytest.mark.slow
@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs(name, tmp_path):
    from nbclient import NotebookClient

    src = NOTEBOOKS / f"{name}.ipynb"
    work = tmp_path / src.name
    shutil.copy(src, work)
    nb = nbformat.read(str(work), as_version=4)
    t0 = time.monotonic()
    client = NotebookClient(
        nb, timeout=120, kernel_name="python3", store_widget_state=True, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    elapsed = time.monotonic() - t0

    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors

    code = [c for c in nb.cells if c.cell_type == "code"]
    views = [o for o in code[-1].outputs if WIDGET_MIME in o.get("data", {})]
    assert len(views) == 1, f"last cell should show exactly one widget view, got {code[-1].outputs}"
    model_id = views[0]["data"][WIDGET_MIME]["model_id"]
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    assert model_id in state, "the explorer's widget state was not stored"
    classes = state[model_id]["state"].get("_dom_classes", [])
    assert "tv-explorer" in classes

    text = _stream_text(nb)
    for expected in PRINTED[name]:
        assert expected in text, f"{name}: {expected!r} not printed; stdout was:\n{text}"
    print(f"\n{name}: executed in {elapsed:.1f} s")

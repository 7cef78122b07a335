"""A clone named tapeviz/ in the folder Python starts in must not shadow the package.

Python looks in the current folder first, and a clone's root (no __init__.py) imports as
an empty namespace package: ``module 'tapeviz' has no attribute 'GradientTape'``. A
namespace package loses to a regular package found anywhere on sys.path, so the package
must be installed as one: the wheel puts it in site-packages and the editable install
(hatchling) adds the checkout to sys.path, where an import hook (setuptools' editable
finder, used before) came after the path search and lost to the clone."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tapeviz

PACKAGE = Path(tapeviz.__file__).resolve().parent


@pytest.mark.slow
def test_a_clone_next_to_python_does_not_shadow_the_package(tmp_path):
    clone = tmp_path / "tapeviz"
    (clone / "tapeviz").mkdir(parents=True)
    (clone / "pyproject.toml").write_text("[project]\nname = 'tapeviz'\n")
    (clone / "tapeviz" / "notes.txt").write_text("a clone's package folder, without __init__.py yet\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = (
        "import tapeviz, pathlib; print(pathlib.Path(tapeviz.__file__).resolve().parent); print(tapeviz.GradientTape)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[0] == str(PACKAGE)

"""Release hygiene: one version, a changelog, and the stated TensorFlow range, tested
versions and docs instructions kept true to the build files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import tensorflow as tf

import tapeviz

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")


def _tf_range(extra: str) -> tuple[str, str]:
    (spec,) = PYPROJECT["project"]["optional-dependencies"][extra]
    low = re.search(r">=\s*([\d.]+)", spec).group(1)
    high = re.search(r"<\s*([\d.]+)", spec).group(1)
    return low, high


def test_the_version_has_one_source():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "tapeviz/__init__.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+", tapeviz.__version__)


def test_changelog_has_the_version_and_an_unreleased_section():
    log = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", log, re.M)
    assert headings[0] == "Unreleased"
    assert any(h.split()[0] == tapeviz.__version__ for h in headings[1:]), headings


def test_tensorflow_range_is_stated_once_and_tested_at_its_lower_end():
    cpu, gpu = _tf_range("cpu"), _tf_range("tensorflow")
    assert cpu == gpu
    low, high = cpu
    assert re.search(rf"^TF_MIN := {re.escape(low)}$", MAKEFILE, re.M), "make test-tf-min runs the lowest supported TF"
    newest = f"{high.split('.')[0]}.{int(high.split('.')[1]) - 1}"
    assert f"TensorFlow {low} – {newest}" in README
    # The README names the versions CI runs, including the one running this test.
    tested = re.search(r"^Tested: (.+)$", README, re.M)
    assert tested, "the README says which TensorFlow versions CI tests (a line starting 'Tested: ')"
    running = ".".join(tf.__version__.split(".")[:2])
    assert f"TensorFlow {running}" in tested.group(1) and f"TensorFlow {low}" in tested.group(1), tested.group(1)


def test_readme_says_how_to_install_and_build_the_docs():
    assert "pip install -e '.[cpu]'" in README
    assert re.search(r"pip wheel \. .*-w dist", README)
    assert "make docs" in README
    assert "docs/_build/html/index.html" in README


def test_lint_runs_first_in_make_test_with_pinned_tools():
    """ruff and mypy are pinned exactly (a new release's rules must not fail CI on code
    nobody changed), installed into the venv, and `make test` (what CI runs) lints first."""
    lint = PYPROJECT["project"]["optional-dependencies"]["lint"]
    assert sorted(spec.split("==")[0] for spec in lint) == ["mypy", "ruff"]
    assert all(re.fullmatch(r"[a-z]+==\d+(\.\d+)+", spec) for spec in lint), lint
    assert "pip install -e '.[cpu,test,docs,lint]'" in MAKEFILE
    assert re.search(r"^test: venv lint\b", MAKEFILE, re.M), "make test runs make lint first"
    assert re.search(r"^test-fast: venv lint$", MAKEFILE, re.M), "and so does make test-fast"
    recipe = re.search(r"^lint: venv node-tools\n((?:\t.*\n)+)", MAKEFILE, re.M)
    assert recipe and "ruff check ." in recipe.group(1) and "mypy" in recipe.group(1)
    # the front end's eslint and prettier, pinned exactly in package.json (and its lock file)
    assert "node_modules/.bin/eslint" in recipe.group(1) and "node_modules/.bin/prettier --check" in recipe.group(1)
    node_tools = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))["devDependencies"]
    assert {"eslint", "prettier"} <= set(node_tools)
    assert all(re.fullmatch(r"\d+(\.\d+)+", v) for v in node_tools.values()), node_tools
    assert (ROOT / "package-lock.json").is_file() and "npm ci" in MAKEFILE
    assert re.search(r"^test: .*\btest-js\b", MAKEFILE, re.M) and "node --test tests/js/" in MAKEFILE
    assert PYPROJECT["tool"]["mypy"]["files"] == ["tapeviz"]

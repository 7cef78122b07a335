"""Where `tapeviz demo` finds the teaching notebooks: the installed package's data first
(tapeviz/notebooks, what the wheel ships), else a source checkout's notebooks/.

The wheel itself is built, installed into a fresh venv and served from there in
tests_dist/test_wheel.py; these tests pin the lookup order with folders made here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tapeviz import cli

REPO = Path(__file__).resolve().parents[1]


def _notebook_folder(root: Path, *names: str) -> Path:
    root.mkdir(parents=True)
    for name in names:
        (root / name).write_text("{}")
    return root


def test_checkout_finds_the_repos_notebooks():
    # This test runs from a checkout (PYTHONPATH or an editable install): no package data.
    assert not cli.PACKAGE_NOTEBOOKS.exists()
    assert cli.find_notebooks() == REPO / "notebooks"


def test_package_data_comes_first(tmp_path, monkeypatch):
    package = _notebook_folder(tmp_path / "site-packages" / "tapeviz" / "notebooks", "01_a.ipynb")
    monkeypatch.setattr(cli, "PACKAGE_NOTEBOOKS", package)
    assert cli.find_notebooks() == package


def test_package_without_notebooks_falls_back_to_the_checkout(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "PACKAGE_NOTEBOOKS", _notebook_folder(tmp_path / "pkg" / "notebooks", "README.md"))
    assert cli.find_notebooks() == REPO / "notebooks"


def test_a_notebooks_folder_outside_a_checkout_is_not_served(tmp_path, monkeypatch):
    # An installed tapeviz sits in site-packages; a stray site-packages/notebooks (another
    # package's) must not be taken for the checkout's.
    site = tmp_path / "site-packages"
    _notebook_folder(site / "notebooks", "someone_elses.ipynb")
    monkeypatch.setattr(cli, "PACKAGE_NOTEBOOKS", site / "tapeviz" / "notebooks")
    monkeypatch.setattr(cli, "REPO_NOTEBOOKS", site / "notebooks")
    assert cli.find_notebooks() is None


def test_demo_without_any_notebooks_says_what_to_do(tmp_path, monkeypatch, capsys):
    pytest.importorskip("jupyterlab")  # without it, demo stops earlier with its own message
    monkeypatch.setattr(cli, "PACKAGE_NOTEBOOKS", tmp_path / "none" / "tapeviz" / "notebooks")
    monkeypatch.setattr(cli, "REPO_NOTEBOOKS", tmp_path / "none" / "notebooks")
    assert cli.main(["demo", "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert "has no notebooks" in err
    assert "--notebooks DIR" in err and "tapeviz demo --export" in err and "pip install" in err


def test_demo_with_an_empty_notebooks_dir_names_it(tmp_path, capsys):
    pytest.importorskip("jupyterlab")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["demo", "--notebooks", str(empty)]) == 2
    err = capsys.readouterr().err
    assert str(empty) in err and "*.ipynb" in err

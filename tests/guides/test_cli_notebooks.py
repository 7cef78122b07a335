"""Where `tapeviz demo` finds the teaching notebooks: the installed package's data first
(tapeviz/notebooks/<lang>, what the wheel ships), else a source checkout's notebooks/<lang>;
which language: --lang, else the locale's.

The wheel itself is built, installed into a fresh venv and served from there in
tests_dist/test_wheel.py; these tests pin the lookup order with folders made here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tapeviz import cli

REPO = Path(__file__).resolve().parents[2]


def _notebook_folder(root: Path, *names: str) -> Path:
    root.mkdir(parents=True)
    for name in names:
        (root / name).write_text("{}")
    return root


def test_checkout_finds_the_repos_notebooks():
    # This test runs from a checkout (PYTHONPATH or an editable install): no package data.
    assert not cli.PACKAGE_NOTEBOOKS.exists()
    assert cli.find_notebooks() == REPO / "notebooks" / "en"
    assert cli.find_notebooks("zh") == REPO / "notebooks" / "zh"


def test_package_data_comes_first(tmp_path, monkeypatch):
    package = tmp_path / "site-packages" / "tapeviz" / "notebooks"
    _notebook_folder(package / "zh", "01_a.ipynb")
    monkeypatch.setattr(cli, "PACKAGE_NOTEBOOKS", package)
    assert cli.find_notebooks("zh") == package / "zh"


def test_package_without_notebooks_falls_back_to_the_checkout(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "PACKAGE_NOTEBOOKS", _notebook_folder(tmp_path / "pkg" / "notebooks", "README.md"))
    assert cli.find_notebooks() == REPO / "notebooks" / "en"


@pytest.mark.parametrize(
    ("environ", "lang"),
    [
        ({"LANG": "zh_CN.UTF-8"}, "zh"),
        ({"LANG": "zh_TW.UTF-8"}, "zh"),
        ({"LANG": "en_US.UTF-8"}, "en"),
        ({"LANG": "de_DE.UTF-8"}, "en"),  # no German set: English
        ({"LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),  # LC_ALL wins, as in gettext
        ({"LC_ALL": "", "LC_MESSAGES": "en_GB", "LANG": "zh_CN"}, "en"),
        ({}, "en"),
        ({"LANG": "C.UTF-8"}, "en"),
    ],
)
def test_demo_follows_the_locale_else_english(environ, lang):
    assert cli.default_lang(environ) == lang


def test_demo_lang_picks_the_set_served(tmp_path, monkeypatch):
    pytest.importorskip("jupyterlab")
    served = []
    monkeypatch.setattr(cli, "prepare_workdir", lambda source, workdir: served.append(source) or [])
    monkeypatch.setattr(cli, "pick_port", lambda *a, **k: 1)

    class Stop(Exception):
        pass

    def no_server(*a, **k):
        raise Stop

    monkeypatch.setattr(cli.subprocess, "Popen", no_server)
    for lang in ("zh", "en"):
        with pytest.raises(Stop):
            cli.main(["demo", "--lang", lang, "--workdir", str(tmp_path / lang), "--no-browser"])
    assert served == [REPO / "notebooks" / "zh", REPO / "notebooks" / "en"]


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

"""The front end's own files: JavaScript and CSS in ``static/`` next to this module.

anywidget reads a widget's ``_esm`` / ``_css`` from a :class:`pathlib.Path` (:func:`path`);
the exported page inlines the same files (:func:`text`), so the page runs the code the
notebook's canvas runs. They ship in the wheel as package data; nothing is fetched.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

__all__ = ["STATIC", "path", "text"]

#: The folder holding the front end's files.
STATIC = Path(__file__).with_name("static")


def path(name: str) -> Path:
    """The file ``static/<name>`` (FileNotFoundError naming it when it is missing)."""
    p = STATIC / name
    if not p.is_file():
        raise FileNotFoundError(f"tapeviz's front-end file {p} is missing: reinstall tapeviz.")
    return p


@cache
def text(name: str) -> str:
    """The contents of ``static/<name>``."""
    return path(name).read_text(encoding="utf-8")

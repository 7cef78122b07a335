"""The front end's own files: JavaScript and CSS in ``static/`` next to this module.

anywidget reads a widget's ``_esm`` / ``_css`` from a :class:`pathlib.Path` (:func:`path`);
the exported page inlines the same files (:func:`text`), so the page runs the code the
notebook's canvas runs. They ship in the wheel as package data; nothing is fetched.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

__all__ = ["STATIC", "path", "text", "bundle", "module"]

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


_EXPORT = re.compile(r"^export (?:async )?(?:function\*? |const |let |class )([A-Za-z_$][\w$]*)", re.M)
_EXPORT_DEFAULT = re.compile(r"^export default .*;\n", re.M)
_IMPORT = re.compile(r'^import \{([^}]*)\} from "\./([\w.-]+\.js)";\n', re.M)


def _order(name: str) -> list[str]:
    """``name`` and the files it imports, each after the files it imports."""
    order: list[str] = []

    def visit(file: str, seen: tuple[str, ...]) -> None:
        if file in order:
            return
        if file in seen:
            raise ValueError(f"static/{file} imports itself through {' -> '.join(seen)}")
        for m in _IMPORT.finditer(text(file)):
            visit(m.group(2), (*seen, file))
        order.append(file)

    visit(name, ())
    return order


def _scoped(file: str) -> str:
    """One file as a function scope returning its exports, bound to ``tv_<file>``."""
    code = text(file)
    names = _EXPORT.findall(code)
    code = _IMPORT.sub(lambda m: f"const {{{m.group(1)}}} = {_scope(m.group(2))};\n", code)
    code = _EXPORT_DEFAULT.sub("", code)
    code = re.sub(r"^export ", "", code, flags=re.M)
    return f"const {_scope(file)} = (() => {{\n{code}\nreturn {{ {', '.join(names)} }};\n}})();\n"


@cache
def bundle(name: str) -> str:
    """``static/<name>`` and the files it imports as one classic script (no module loader:
    the page may be a ``file://`` document, or a fragment inside another page). Each file
    becomes a function scope returning what it exports; an ``import {a, b} from "./x.js"``
    reads those names from x.js's scope; ``export default`` (anywidget's entry) is dropped.
    The result defines one name per file (``tv_<file>``) inside the caller's scope: wrap it
    in a function of its own."""
    return "".join(_scoped(f) for f in _order(name))


@cache
def module(name: str) -> str:
    """``static/<name>`` as one ES module with the files it imports inlined before it (each
    as :func:`bundle` writes it), its own exports kept: what anywidget runs as a widget's
    ``_esm``, which loads one module from a string and cannot resolve ``./x.js``."""
    code = text(name)
    inlined = "".join(_scoped(f) for f in _order(name)[:-1])
    return inlined + _IMPORT.sub(lambda m: f"const {{{m.group(1)}}} = {_scope(m.group(2))};\n", code)


def _scope(file: str) -> str:
    return "tv_" + re.sub(r"\W", "_", file.removesuffix(".js"))

"""The front end's own files: JavaScript and CSS in ``static/`` next to this module.

anywidget reads a widget's ``_esm`` / ``_css`` from a :class:`pathlib.Path` (:func:`path`);
the exported page inlines the same files (:func:`text`), so the page runs the code the
notebook's canvas runs. They ship in the wheel as package data; nothing is fetched.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

__all__ = ["STATIC", "path", "text", "bundle"]

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


@cache
def bundle(name: str) -> str:
    """``static/<name>`` and the files it imports as one classic script (no module loader:
    the page may be a ``file://`` document, or a fragment inside another page). Each file
    becomes a function scope returning what it exports; an ``import {a, b} from "./x.js"``
    reads those names from x.js's scope; ``export default`` (anywidget's entry) is dropped.
    The result defines one name per file (``tv_<file>``) inside the caller's scope: wrap it
    in a function of its own."""
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
    out = []
    for file in order:
        code = text(file)
        names = _EXPORT.findall(code)
        code = _IMPORT.sub(lambda m: f"const {{{m.group(1)}}} = {_scope(m.group(2))};\n", code)
        code = _EXPORT_DEFAULT.sub("", code)
        code = re.sub(r"^export ", "", code, flags=re.M)
        out.append(f"const {_scope(file)} = (() => {{\n{code}\nreturn {{ {', '.join(names)} }};\n}})();\n")
    return "".join(out)


def _scope(file: str) -> str:
    return "tv_" + re.sub(r"\W", "_", file.removesuffix(".js"))

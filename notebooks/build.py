"""Write the two lesson sets, notebooks/en/ and notebooks/zh/, from one bilingual source per lesson.

    python notebooks/build.py           # (re)write every notebook whose source changed
    python notebooks/build.py --check   # exit 1 and name the stale ones (tests/test_lessons.py runs this)

A source, ``notebooks/source/NN_name.txt``, is a list of cells, each opened by a marker line:

    %% markdown        the cell's English text follows ...
    %% zh              ... then its Chinese text (every markdown cell has both)
    %% code            one code cell, the same in both sets, except ``«English|中文»``:
                       the two languages of a comment, a printed label or a setting

A new lesson is a new source file (its notebooks appear in both sets on the next run);
edit a lesson in its source, never in notebooks/en or notebooks/zh: the test refuses
notebooks that differ from what their source writes.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "source"
LANGS = ("en", "zh")
_CHOICE = re.compile(r"«([^«»|]*)\|([^«»]*)»")
_MARKER = re.compile(r"^%% (markdown|zh|code)\s*$")


class SourceError(ValueError):
    """A lesson source that cannot be read: says which file, which line and what to write."""


def parse(text: str, name: str = "<source>") -> list[tuple[str, dict[str, str]]]:
    """[(cell type, {lang: text})] of a source: markdown cells have an en and a zh text,
    code cells one text per language with every «en|zh» choice made."""
    cells: list[tuple[str, dict[str, list[str]]]] = []
    current: list[str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        m = _MARKER.match(line)
        if m is None:
            if current is None:
                if line.strip():
                    raise SourceError(f"{name}:{number}: text before the first '%% markdown' or '%% code' line")
                continue
            current.append(line)
            continue
        kind = m.group(1)
        if kind == "zh":
            if not cells or cells[-1][0] != "markdown" or "zh" in cells[-1][1]:
                raise SourceError(f"{name}:{number}: '%% zh' must follow the English text of a '%% markdown' cell")
            current = cells[-1][1]["zh"] = []
        else:
            current = []
            cells.append((kind, {"en": current} if kind == "markdown" else {"code": current}))
    out = []
    for kind, parts in cells:
        if kind == "markdown":
            if "zh" not in parts:
                raise SourceError(f"{name}: a markdown cell has no '%% zh' text: {_first(parts['en'])!r}")
            out.append((kind, {lang: "\n".join(parts[lang]).strip("\n") for lang in LANGS}))
        else:
            code = "\n".join(parts["code"]).strip("\n")
            texts = {lang: _CHOICE.sub(lambda m, i=i: m.group(i + 1), code) for i, lang in enumerate(LANGS)}
            for t in texts.values():
                if "«" in t or "»" in t:
                    raise SourceError(f"{name}: an unclosed «en|zh» choice in the code cell {_first(parts['code'])!r}")
            out.append((kind, texts))
    return out


def _first(lines: list[str]) -> str:
    return next((ln for ln in lines if ln.strip()), "")


def notebook(cells: list[tuple[str, dict[str, str]]], lang: str) -> nbformat.NotebookNode:
    """The lesson's notebook in ``lang``: no outputs, a python3 kernel, stable cell ids."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for i, (kind, texts) in enumerate(cells):
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        cell = make(texts[lang])
        cell.id = f"c{i:02d}"  # the same cell has the same id in both sets and in every build
        nb.cells.append(cell)
    return nb


def render(source: Path) -> dict[str, str]:
    """{lang: the .ipynb text} of one lesson source."""
    cells = parse(source.read_text(encoding="utf-8"), source.name)
    return {lang: nbformat.writes(notebook(cells, lang)) + "\n" for lang in LANGS}


def lessons(sources: Path = SOURCES) -> list[Path]:
    return sorted(sources.glob("[0-9][0-9]_*.txt"))


def stale(root: Path = HERE) -> list[Path]:
    """Notebooks that differ from what their source writes, are missing, or have no source."""
    out = []
    wanted = set()
    for src in lessons(root / "source"):
        for lang, text in render(src).items():
            path = root / lang / f"{src.stem}.ipynb"
            wanted.add(path)
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                out.append(path)
    for lang in LANGS:
        out += [p for p in sorted((root / lang).glob("*.ipynb")) if p not in wanted]
    return out


def build(root: Path = HERE) -> list[Path]:
    """Write every stale notebook (and delete those whose source is gone); returns them."""
    changed = stale(root)
    sources = {s.stem: s for s in lessons(root / "source")}
    for path in changed:
        src = sources.get(path.stem)
        if src is None:
            path.unlink()
            continue
        path.parent.mkdir(exist_ok=True)
        path.write_text(render(src)[path.parent.name], encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only say which notebooks are stale (exit 1 if any)")
    args = ap.parse_args(argv)
    if args.check:
        bad = stale()
        for p in bad:
            print(f"stale: {p.relative_to(HERE.parent)} (run python notebooks/build.py)")
        return 1 if bad else 0
    for p in build():
        print(f"wrote {p.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

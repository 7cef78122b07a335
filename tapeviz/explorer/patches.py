"""What changed between two SVG pictures of the explorer, per element id.

A backward step changes a few elements of a picture (the arrows of the step, a box's
outline, a gradient text, the chevrons, the title); the rest of the document stays
byte for byte. :func:`diff` compares two documents written by
:func:`tapeviz.output.svg.to_svg` element by element and returns the changes as plain
JSON, which the canvas's front end (canvas.py) applies to the SVG on the page in place;
:func:`apply` does the same to markup, so a test can check the patch against a fresh
document in Python too.

to_svg writes one element per line: the ``<svg>`` start tag and the background, then
groups holding elements (``<g id="layer-edges">`` ... ``</g>``) and elements
(``<g id="edge-a-b-0">...</g>``) each on its line. A document is read as containers
holding id'd lines in order. Patches say, per container, which elements go (``drop``),
which are new, changed or moved (``put``: id, markup or None for "keep it", the id of
the element it goes before, None for the end), which changed where they are
(``set``), and which id'd texts changed their words only (``text``: the new content,
a third of the element's markup: a clip move on the 1,000-op graph rewrites 333 gradient
texts), and which elements changed the values of their own attributes only (``attr``: id
-> {attribute: value as written}; a box's spoken name says its new gradient). ``put``
entries are listed right to left in each container, so each one's ``before`` is already
in its final place when it is applied; elements that keep their order are the longest
run that needs no move (edges are sorted by line width, so a step that thickens an edge
moves it and only it).

Anything this reading does not recognise (another start tag or background, a line
without an id, two elements with one id) gives None: the caller sends the whole
document.
"""

from __future__ import annotations

import re
from html import unescape

__all__ = ["Document", "parse", "diff", "apply"]

_ID = re.compile(r'<[A-Za-z]+ id="([^"]*)"')
_OPEN = re.compile(r'^<g id="([^"]*)">$')
# an element's own id'd text (a box's gradient text, the title): id, the rest of its start tag, its content
_INNER = re.compile(r'<text id="([^"]*)"([^>]*)>(.*?)</text>')
_ATTR = re.compile(r'([\w:-]+)="([^"]*)"')  # a start tag's attributes, as written
ROOT = ""  # the container id of the <svg> element itself


class Document:
    """An SVG document as its head (start tag, background) and containers of id'd lines."""

    __slots__ = ("head", "order", "lines", "parent")

    def __init__(self, head: str, order: dict[str, list[str]], lines: dict[str, str], parent: dict[str, str]):
        self.head = head  # everything before the first element, e.g. '<svg ...>\n<rect .../>'
        self.order = order  # container id -> its children's ids, in document order
        self.lines = lines  # element id -> its markup line (containers: their start tag)
        self.parent = parent  # element id -> container id


def parse(markup: str) -> Document | None:
    """Read a to_svg document (from ``<svg``); None when it is not one this module can patch."""
    rows = markup.split("\n")
    i = 0
    head = []
    while i < len(rows) and not rows[i].startswith("<g "):
        if rows[i].startswith("</svg>"):
            break
        head.append(rows[i])
        i += 1
    if not head or not head[0].startswith("<svg"):
        return None
    order: dict[str, list[str]] = {ROOT: []}
    lines: dict[str, str] = {}
    parent: dict[str, str] = {}
    stack = [ROOT]
    for row in rows[i:]:
        if not row:
            continue
        if row == "</g>":
            if len(stack) == 1:
                return None
            stack.pop()
            continue
        if row == "</svg>":
            break
        m = _OPEN.match(row)
        key = m.group(1) if m else None
        if key is None:
            found = _ID.match(row)
            if found is None:
                return None
            key = found.group(1)
        if key in lines:
            return None
        lines[key] = row
        parent[key] = stack[-1]
        order[stack[-1]].append(key)
        if m:
            order[key] = []
            stack.append(key)
    if len(stack) != 1:
        return None
    return Document("\n".join(head), order, lines, parent)


def _kept(old_pos: list[int]) -> set[int]:
    """Indexes (into ``old_pos``) of a longest increasing run: the elements that need no move."""
    tails: list[int] = []  # tails[k]: index of the smallest tail of an increasing run of length k+1
    prev = [-1] * len(old_pos)
    for i, p in enumerate(old_pos):
        k = _search(tails, old_pos, p)
        if k > 0:
            prev[i] = tails[k - 1]
        if k == len(tails):
            tails.append(i)
        else:
            tails[k] = i
    out = set()
    i = tails[-1] if tails else -1
    while i >= 0:
        out.add(i)
        i = prev[i]
    return out


def _search(tails: list[int], old_pos: list[int], p: int) -> int:
    lo, hi = 0, len(tails)
    while lo < hi:
        mid = (lo + hi) // 2
        if old_pos[tails[mid]] < p:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _start_tag(line: str) -> tuple[str, str, dict[str, str]] | None:
    """A line's start tag, the rest of the line, and the tag's attributes (as written)."""
    end = line.find(">")
    if end < 0:
        return None
    return line[: end + 1], line[end + 1 :], dict(_ATTR.findall(line[:end]))


def _changed(
    key: str, old: str, new: str, set_: dict[str, str], text: dict[str, str], attr: dict[str, dict[str, str]]
) -> None:
    """A changed line: its id'd texts alone when only they changed (a clipped gradient, a
    step's title), as their content (``text``) when their start tags are the same, else
    the whole element (``set_``). A line whose own start tag changed only the values of
    its attributes (a box's spoken name says the gradient that arrived) sends those
    values (``attr``, as written in the markup) and its texts, not the whole element."""
    ta, tb = _start_tag(old), _start_tag(new)
    if ta is not None and tb is not None and ta[0] != tb[0]:
        (_, rest_a, attrs_a), (_, rest_b, attrs_b) = ta, tb
        if attrs_a.keys() == attrs_b.keys() and attrs_a.get("id") == attrs_b.get("id"):
            if rest_a == rest_b or _texts_only(rest_a, rest_b):
                attr[unescape(key)] = {k: v for k, v in attrs_b.items() if attrs_a[k] != v}
                _text_changes(rest_a, rest_b, set_, text)
                return
    if _texts_only(old, new):
        _text_changes(old, new, set_, text)
        return
    set_[unescape(key)] = new


def _text_changes(old: str, new: str, set_: dict[str, str], text: dict[str, str]) -> None:
    """The id'd texts that differ between two markups that differ in them alone."""
    for x, y in zip(_INNER.finditer(old), _INNER.finditer(new), strict=True):
        if x.group(0) == y.group(0):
            continue
        if x.group(2) == y.group(2):
            text[unescape(y.group(1))] = y.group(3)
        else:
            set_[unescape(y.group(1))] = y.group(0)


def _texts_only(a: str, b: str) -> bool:
    """Whether two markups differ in their id'd texts alone (the same ids, in order)."""
    x, y = list(_INNER.finditer(a)), list(_INNER.finditer(b))
    same_ids = bool(x) and [m.group(1) for m in x] == [m.group(1) for m in y]
    return same_ids and _INNER.sub("", a) == _INNER.sub("", b)


def diff(old: Document, new: Document) -> dict | None:
    """The changes that turn ``old`` into ``new`` (JSON-ready), or None when the heads or
    the containers differ (another layout: send the whole document)."""
    if old.head != new.head or old.order.keys() != new.order.keys():
        return None
    drop: list[str] = []
    put: list[list] = []
    set_: dict[str, str] = {}
    text: dict[str, str] = {}
    attr: dict[str, dict[str, str]] = {}
    for box, ids in new.order.items():
        if old.parent.get(box, ROOT) != new.parent.get(box, ROOT) or (box != ROOT and old.lines[box] != new.lines[box]):
            return None
        before = old.order[box]
        if before == ids:
            for k in ids:
                if k not in new.order and old.lines[k] != new.lines[k]:
                    _changed(k, old.lines[k], new.lines[k], set_, text, attr)
            continue
        now = set(ids)
        drop += [unescape(k) for k in before if k not in now]
        where = {k: i for i, k in enumerate(before) if k in now}
        common = [k for k in ids if k in where]
        stay = {common[i] for i in _kept([where[k] for k in common])}
        moves = []
        for j, k in enumerate(ids):
            if k in new.order:  # a container must stay in place (its children are patched separately)
                if k not in stay:
                    return None
                continue
            changed = k not in where or old.lines[k] != new.lines[k]
            if k in stay:
                if changed:
                    _changed(k, old.lines[k], new.lines[k], set_, text, attr)
                continue
            nxt = unescape(ids[j + 1]) if j + 1 < len(ids) else None
            moves.append([unescape(box), unescape(k), new.lines[k] if changed else None, nxt])
        put += reversed(moves)
    out: dict = {"drop": drop, "put": put, "set": set_, "text": text}
    if attr:
        out["attr"] = attr
    return out


def _replace_inner(line: str, k: str, markup: str | None = None, content: str | None = None) -> str:
    """``line`` with its id'd text ``k`` replaced by ``markup``, or its content by ``content``."""
    for m in _INNER.finditer(line):
        if unescape(m.group(1)) == k:
            if markup is not None:
                return line[: m.start()] + markup + line[m.end() :]
            return line[: m.start(3)] + (content or "") + line[m.end(3) :]
    raise KeyError(k)


def apply(doc_markup: str, patch: dict) -> str:
    """``patch`` applied to a document's markup, as the front end applies it to the page's
    SVG (for tests: ``apply(old, diff(parse(old), parse(new))) == new``)."""
    doc = parse(doc_markup)
    if doc is None:
        raise ValueError("apply: not a document this module reads (see parse)")
    esc = {unescape(k): k for k in doc.lines}
    order = {b: list(ids) for b, ids in doc.order.items()}
    lines = dict(doc.lines)
    for k in patch["drop"]:
        key = esc[k]
        order[doc.parent[key]].remove(key)
    inner = {unescape(m.group(1)): k for k, line in lines.items() for m in _INNER.finditer(line)}
    for k, line in patch["set"].items():
        if k in esc:
            lines[esc[k]] = line
        else:  # an id'd text inside an element's line
            key = inner[k]
            lines[key] = _replace_inner(lines[key], k, line)
    for k, content in patch.get("text", {}).items():
        key = inner[k]
        lines[key] = _replace_inner(lines[key], k, content=content)
    for k, changes in patch.get("attr", {}).items():
        key = esc[k]
        tag, rest, _ = _start_tag(lines[key]) or ("", lines[key], {})
        for name, value in changes.items():
            at = tag.index(f' {name}="') + len(name) + 3
            tag = tag[:at] + value + tag[tag.index('"', at) :]
        lines[key] = tag + rest
    for box, k, line, nxt in patch["put"]:
        m = _ID.match(line) if line is not None else None
        key = esc.get(k) or (m.group(1) if m else k)
        esc[k] = key
        ids = order[esc.get(box, box)]
        if key in ids:
            ids.remove(key)
        if line is not None:
            lines[key] = line
        ids.insert(len(ids) if nxt is None else ids.index(esc[nxt]), key)
    out = [doc.head]

    def write(box: str) -> None:
        for k in order[box]:
            out.append(lines[k])
            if k in order:
                write(k)
                out.append("</g>")

    write(ROOT)
    out.append("</svg>")
    return "\n".join(out) + "\n"

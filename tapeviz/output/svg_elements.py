"""An SVG document taken apart into the elements it draws, each with where it may paint.

What this is for: redrawing an animation only where it changes (see
:class:`tapeviz.output.raster.FrameRenderer`).  Elements are the children of the root and of
plain groups that hold only groups (``<g id="layer-edges">``); each keeps its source
(inside the start tags of the groups around it, so it can be drawn alone) and a few
boxes that together hold everything it may paint: one per path segment and per text
chunk, so a long routed arrow that changes colour damages a thin band along it.

Bounds err on the large side: path end and control points (a curve lies in their
hull), rectangles and circles, stroke widths (mitred corners reach twice the half
width), transforms, and texts bounded by their glyphs' own advances and ink boxes
(read from the font files with matplotlib's FreeType) plus a margin for kerning.
Anything this module cannot bound (a filter or a marker, an arc, per-character
positions, ``<use>``, a nested ``<svg>``) is reported as unbounded, and the caller
redraws everything.

The document also says which font files draw it: the ones matplotlib would use for
the families it names (so text has the widths svg.py measured), plus the system's CJK
fonts when it holds Chinese, Japanese or Korean text.
"""

from __future__ import annotations

import math
import re
import xml.parsers.expat
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from html import unescape
from xml.sax.saxutils import quoteattr

import numpy as np

__all__ = ["SvgDoc", "parse_svg", "Box"]

Box = tuple[float, float, float, float]  # x0, y0, x1, y1

_GENERIC = ("sans-serif", "serif", "monospace", "cursive", "fantasy")
_GLOBAL = {"defs", "style", "metadata", "title", "desc"}  # drawn nowhere, needed by every part
_GROUP_EFFECTS = ("opacity", "filter", "mask", "clip-path")  # a group drawn as one layer: its parts can't be apart
_UNBOUNDED = ("filter", "marker-start", "marker-mid", "marker-end", "marker")  # paint beyond the geometry
_TEXT_UNBOUNDED = (
    "dx",
    "dy",
    "rotate",
    "textLength",
    "letter-spacing",
    "word-spacing",
    "writing-mode",
    "baseline-shift",
    "dominant-baseline",
    "alignment-baseline",
    "font-stretch",
)
CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff]"
)
_FAMILY = re.compile(r"font-family(?:\s*=\s*\"([^\"]*)\"|\s*=\s*'([^']*)'|\s*:\s*([^;\"]*))")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_PATH_TOKEN = re.compile(r"[MmZzLlHhVvCcSsQqTtAa]|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_TRANSFORM = re.compile(r"(matrix|translate|scale|rotate|skewX|skewY)\s*\(([^)]*)\)")
_LENGTH = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(px|pt|pc|in|cm|mm|%)?\s*$")
_IDENTITY = np.eye(3)  # no transform (compared by identity: most elements have none)
_INCHES = {None: 1 / 96, "px": 1 / 96, "pt": 1 / 72, "pc": 1 / 6, "in": 1.0, "cm": 1 / 2.54, "mm": 1 / 25.4}


# --------------------------------------------------------------------------- fonts


@lru_cache(maxsize=1)
def cjk_font_files() -> tuple[str, ...]:
    """CJK font files on this system (Debian's fonts-noto-cjk and the like), regular before bold."""
    from matplotlib import font_manager

    found = {f.fname for f in font_manager.fontManager.ttflist if "CJK" in f.name}
    found |= {p for p in font_manager.findSystemFonts() if "CJK" in p.rsplit("/", 1)[-1]}
    return tuple(sorted(found, key=lambda p: ("Bold" in p, "Serif" in p, p)))


@lru_cache(maxsize=64)
def fonts_for(families: tuple[str, ...], cjk: bool) -> tuple[tuple[str, ...], dict[str, str]]:
    """Font files for the families a document names (as matplotlib resolves them, so text
    has the widths svg.py measured), and what each generic family (sans-serif, ...) means."""
    from matplotlib import font_manager as fm

    files: list[str] = []
    sans = fm.get_font(fm.findfont(fm.FontProperties(family=["sans-serif"]))).family_name
    generic: dict[str, str] = {}
    for name in _GENERIC:  # cursive and fantasy are often missing: sans-serif then, without a warning
        try:
            path = fm.findfont(fm.FontProperties(family=[name]), fallback_to_default=False)
            generic[name] = fm.get_font(path).family_name
        except ValueError:
            generic[name] = sans
    for fam in dict.fromkeys(families + ("sans-serif",)):
        for weight in ("normal", "bold"):
            for style in ("normal", "italic"):
                try:
                    path = fm.findfont(
                        fm.FontProperties(family=[fam], weight=weight, style=style), fallback_to_default=False
                    )
                except ValueError:  # a family matplotlib does not have: resvg falls back to sans-serif
                    continue
                if path not in files:
                    files.append(path)
    if cjk:
        files += [p for p in cjk_font_files() if p not in files]
    return tuple(files), generic


def _families(svg: str) -> tuple[str, ...]:
    names = []
    for m in _FAMILY.finditer(svg):
        for part in unescape(m.group(1) or m.group(2) or m.group(3) or "").split(","):
            part = part.strip().strip("'\"").strip()
            if part:
                names.append(part)
    return tuple(dict.fromkeys(names))


# --------------------------------------------------------------------------- the document


@dataclass
class _Node:
    tag: str  # as written (a prefix stays)
    attrs: dict
    start: int  # byte offsets into the document: '<' of the start tag ...
    head_end: int = -1  # ... just past the start tag ...
    end: int = -1  # ... just past the element
    children: list = field(default_factory=list)
    chars: list = field(default_factory=list)  # character data directly inside

    @property
    def local(self) -> str:
        return self.tag.rsplit(":", 1)[-1]


@dataclass
class _Unit:
    key: str  # the element's id, or its place among its id-less siblings
    source: str  # the element as written, inside the start tags of the groups holding it
    parts: list[Box] | None  # boxes that hold all it may paint, in the root's user units; None: cannot tell
    drawn: str = ""  # the source with percentage lengths made absolute: what a part of the picture draws

    def __post_init__(self):
        self.drawn = self.drawn or self.source


@dataclass
class SvgDoc:
    """An SVG document taken apart for drawing: its size, the parts every drawing needs
    (definitions, styles), and its elements one by one with where each may paint."""

    source: str
    size_inches: tuple[float, float]
    view_box: Box  # x, y, width, height
    outer_attrs: dict  # namespace declarations: on the document we hand resvg
    inner_attrs: dict  # the root's other attributes (fonts, styles): inherited by every element
    body: str  # everything inside the root element
    globals: tuple[str, ...]
    units: list[_Unit]
    keyed: bool  # every unit has a key of its own: frames can be compared element by element
    fonts: tuple = ()

    def document(self, region: Box | None, size_px: tuple[int, int], units: Iterable[_Unit] | None = None) -> str:
        """This document, or the part of it inside ``region`` (user units) drawn with only
        ``units``, as a standalone SVG of ``size_px`` pixels."""
        rx, ry, rw, rh = region if region is not None else self.view_box
        w, h = size_px
        attrs = "".join(f" {k}={quoteattr(v)}" for k, v in {**self.outer_attrs, **self.inner_attrs}.items())
        # a part of the picture is drawn from sources whose percentages were made absolute:
        # they meant a share of the whole picture, not of the part (a nested <svg> the size
        # of the whole would keep their meaning, but costs resvg a layer: twice the time)
        body = self.body if units is None else "".join(self.globals) + "".join(u.drawn for u in units)
        return (
            f'<svg{attrs} width="{w}" height="{h}" viewBox="{rx!r} {ry!r} {rw!r} {rh!r}" '
            f'preserveAspectRatio="none">{body}</svg>'
        )


def _parse_tree(data: bytes) -> _Node:
    root: list[_Node] = []
    stack: list[_Node] = []
    events = [0]  # events seen: an element with none between start and end was written <x/> or <x></x>
    parser = xml.parsers.expat.ParserCreate()
    parser.buffer_text = True

    def start(tag, attrs):
        node = _Node(tag, attrs, parser.CurrentByteIndex)
        node.head_end = events[0]  # the event count, for now
        if stack:
            stack[-1].children.append(node)
        else:
            root.append(node)
        stack.append(node)
        events[0] += 1

    def end(tag):
        node = stack.pop()
        i = parser.CurrentByteIndex
        if events[0] == node.head_end + 1 and data[i - 2 : i] == b"/>":  # <x .../>: expat is already past it
            node.head_end = node.end = i
        else:
            node.head_end = _tag_end(data, node.start)
            node.end = data.index(b">", i) + 1
        events[0] += 1

    def chars(text):
        if stack:
            stack[-1].chars.append(text)
        events[0] += 1

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    parser.Parse(data, True)
    return root[0]


def _tag_end(data: bytes, start: int) -> int:
    """Offset just past the start tag beginning at ``start`` ('>' may sit inside quotes)."""
    quote = None
    i = start
    n = len(data)
    while i < n:
        c = data[i]
        if quote is not None:
            if c == quote:
                quote = None
        elif c in (34, 39):  # " '
            quote = c
        elif c == 62:  # >
            return i + 1
        i += 1
    raise ValueError("unterminated start tag")


def _known(*lengths: float | None) -> list[float] | None:
    """The lengths, or None when any of them is unknown (a unit not converted here)."""
    known = [v for v in lengths if v is not None]
    return known if len(known) == len(lengths) else None


def _length(value: str | None, reference: float | None = None) -> float | None:
    """A length in user units (px); percentages of ``reference``; None if it has other units."""
    if value is None:
        return None
    m = _LENGTH.match(value)
    if m is None:
        return None
    v, unit = float(m.group(1)), m.group(2)
    if unit in (None, "px"):
        return v
    if unit == "%":
        return None if reference is None else v / 100 * reference
    return None


def _inches(value: str | None) -> float | None:
    if value is None:
        return None
    m = _LENGTH.match(value)
    if m is None or m.group(2) == "%":
        return None
    return float(m.group(1)) * _INCHES[m.group(2)]


def parse_svg(svg: str, bounds: dict | None = None, *, elements: bool = True) -> SvgDoc:
    """Take an SVG document apart into the elements it draws (see :class:`SvgDoc`).

    ``bounds``: a cache of where each element (by its source) paints, shared by
    documents with the same root element (the frames of one animation): most elements
    do not change from frame to frame, and estimating bounds is most of the parsing.
    ``elements=False``: the root, size and fonts only (enough to draw it whole)."""
    data = svg.encode("utf-8")
    root = _parse_tree(data)
    if root.local != "svg":
        raise ValueError(f"Not an SVG document: its root element is <{root.tag}>.")
    a = root.attrs
    numbers = [float(v) for v in _NUMBER.findall(a.get("viewBox", ""))]
    w_attr, h_attr = _length(a.get("width")), _length(a.get("height"))
    w_in, h_in = _inches(a.get("width")), _inches(a.get("height"))
    if len(numbers) == 4 and numbers[2] > 0 and numbers[3] > 0:
        view_box = (numbers[0], numbers[1], numbers[2], numbers[3])
    elif w_in is not None and h_in is not None:
        view_box = (0.0, 0.0, w_in * 96, h_in * 96)
    else:
        raise ValueError("The SVG has neither a viewBox nor a width and height: its size is unknown.")
    if w_in is None or h_in is None:  # size from the viewBox: user units as CSS pixels
        w_in, h_in = (w_attr or view_box[2]) / 96, (h_attr or view_box[3]) / 96
    outer = {k: v for k, v in a.items() if k == "xmlns" or k.startswith("xmlns:")}
    outer.setdefault("xmlns", "http://www.w3.org/2000/svg")
    inner = {
        k: v
        for k, v in a.items()
        if k not in outer and k not in ("width", "height", "viewBox", "version", "x", "y", "preserveAspectRatio")
    }
    body = (
        data[root.head_end : root.end - len(b"</" + root.tag.encode() + b">")].decode("utf-8")
        if root.end != root.head_end
        else ""
    )
    globals_: list[str] = []
    units: list[_Unit] = []
    fonts = fonts_for(_families(svg), bool(CJK.search(svg)))
    if elements:
        ctx = _Context(view_box=view_box, glyphs=_glyphs(fonts[0])).inherit(a)
        _collect(data, root, [], "", ctx, globals_, units, {} if bounds is None else bounds)
    keys = [u.key for u in units]
    return SvgDoc(
        svg,
        (w_in, h_in),
        view_box,
        outer,
        inner,
        body,
        tuple(globals_),
        units,
        keyed=len(set(keys)) == len(keys),
        fonts=fonts,
    )


_PERCENT = re.compile(r"""\b(x|y|width|height|cx|cy|r|rx|ry|x1|x2|y1|y2)=(["'])\s*([-+]?(?:\d+\.?\d*|\.\d+))%\s*\2""")


def _absolute(m: re.Match, view_box: Box) -> str:
    """A percentage length attribute as user units of the whole picture."""
    name, quote, value = m.group(1), m.group(2), float(m.group(3))
    w, h = view_box[2], view_box[3]
    if name in ("x", "width", "cx", "rx", "x1", "x2"):
        ref = w
    elif name in ("y", "height", "cy", "ry", "y1", "y2"):
        ref = h
    else:  # a length along no axis: a percentage of the diagonal / sqrt(2), as SVG defines it
        ref = math.hypot(w, h) / math.sqrt(2)
    return f"{name}={quote}{value / 100 * ref!r}{quote}"


def _is_container(node: _Node) -> bool:
    """A group whose children can be drawn apart: only groups inside, no group effect."""
    if node.local != "g" or not node.children:
        return False
    if any(k in node.attrs for k in _GROUP_EFFECTS) or any(e in node.attrs.get("style", "") for e in _GROUP_EFFECTS):
        return False
    return all(c.local == "g" or c.local in _GLOBAL for c in node.children)


def _collect(
    data: bytes,
    node: _Node,
    wrappers: list[bytes],
    path: str,
    ctx: _Context,
    globals_: list[str],
    units: list[_Unit],
    bounds: dict,
) -> None:
    ordinal: dict[str, int] = {}
    for child in node.children:
        if child.local in _GLOBAL:
            globals_.append(data[child.start : child.end].decode("utf-8"))
            continue
        ident = child.attrs.get("id")
        if ident is None:
            ordinal[child.local] = ordinal.get(child.local, 0) + 1
            key = f"{path}/{child.local}[{ordinal[child.local]}]"
        else:
            key = "#" + ident
        if _is_container(child):
            head = data[child.start : child.head_end]
            _collect(data, child, wrappers + [head], key, ctx.inherit(child.attrs), globals_, units, bounds)
            continue
        src = (b"".join(wrappers) + data[child.start : child.end] + b"</g>" * len(wrappers)).decode("utf-8")
        parts = bounds.get(src, False)
        if parts is False:
            parts = bounds[src] = _parts(child, ctx)
        drawn = _PERCENT.sub(lambda m: _absolute(m, ctx.view_box), src) if "%" in src else src
        units.append(_Unit(key, src, parts, drawn))


# --------------------------------------------------------------------------- bounds


def _style(attrs: dict) -> dict:
    out = dict(attrs)
    for decl in attrs.get("style", "").split(";"):
        if ":" in decl:
            k, v = decl.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def _matrix(transform: str) -> np.ndarray | None:
    """A transform attribute as a 3x3 matrix; None if it cannot be read."""
    m = np.eye(3)
    rest = _TRANSFORM.sub("", transform).replace(",", " ").strip()
    if rest:
        return None
    for name, args in _TRANSFORM.findall(transform):
        v = [float(x) for x in _NUMBER.findall(args)]
        if name == "matrix" and len(v) == 6:
            t = np.array([[v[0], v[2], v[4]], [v[1], v[3], v[5]], [0, 0, 1]])
        elif name == "translate" and len(v) in (1, 2):
            t = np.array([[1, 0, v[0]], [0, 1, v[1] if len(v) == 2 else 0], [0, 0, 1]])
        elif name == "scale" and len(v) in (1, 2):
            t = np.diag([v[0], v[1] if len(v) == 2 else v[0], 1.0])
        elif name == "rotate" and len(v) in (1, 3):
            c, s = math.cos(math.radians(v[0])), math.sin(math.radians(v[0]))
            cx, cy = (v[1], v[2]) if len(v) == 3 else (0.0, 0.0)
            t = np.array([[c, -s, cx - c * cx + s * cy], [s, c, cy - s * cx - c * cy], [0, 0, 1]])
        elif name in ("skewX", "skewY") and len(v) == 1:
            k = math.tan(math.radians(v[0]))
            t = (
                np.array([[1, k, 0], [0, 1, 0], [0, 0, 1]])
                if name == "skewX"
                else np.array([[1, 0, 0], [k, 1, 0], [0, 0, 1]])
            )
        else:
            return None
        m = m @ t
    return m


@dataclass
class _Context:
    """What an element inherits that decides where it paints."""

    view_box: Box
    glyphs: _Glyphs | None = None
    matrix: np.ndarray = field(default_factory=lambda: _IDENTITY)
    font_size: float | None = 16.0
    anchor: str = "start"
    stroke: float = 1.0
    unbounded: bool = False

    def inherit(self, attrs: dict) -> _Context:
        s = _style(attrs)
        ctx = _Context(
            self.view_box, self.glyphs, self.matrix, self.font_size, self.anchor, self.stroke, self.unbounded
        )
        if "transform" in attrs:
            t = _matrix(attrs["transform"])
            if t is None:
                ctx.unbounded = True
            else:
                ctx.matrix = self.matrix @ t
        if "font-size" in s:
            ctx.font_size = _length(s["font-size"], self.font_size)
        if "text-anchor" in s:
            ctx.anchor = s["text-anchor"]
        if "stroke-width" in s:
            sw = _length(s["stroke-width"], math.hypot(self.view_box[2], self.view_box[3]) / math.sqrt(2))
            ctx.stroke = max(self.stroke, sw) if sw is not None else math.inf
        if any(k in s for k in _UNBOUNDED):
            ctx.unbounded = True
        return ctx


def _path_segments(d: str) -> list[list[tuple[float, float]]] | None:
    """Each segment of a path as its start, control and end points (a curve lies inside
    their hull); None for arcs and anything unreadable."""
    tokens = _PATH_TOKEN.findall(d)
    segs: list[list[tuple[float, float]]] = []
    x = y = sx = sy = 0.0
    last_ctrl = None  # the previous cubic / quadratic control point, for S and T
    cmd = None
    i = 0
    n = len(tokens)
    try:
        while i < n:
            tok = tokens[i]
            if tok.isalpha():
                cmd = tok
                i += 1
                if cmd in "Zz":
                    segs.append([(x, y), (sx, sy)])
                    x, y = sx, sy
                    last_ctrl = None
                    continue
            elif cmd is None or cmd in "Zz":
                return None
            rel = cmd.islower()
            c = cmd.upper()
            ox, oy = (x, y) if rel else (0.0, 0.0)
            start = (x, y)
            if c == "M":
                x, y = ox + float(tokens[i]), oy + float(tokens[i + 1])
                i += 2
                segs.append([(x, y)])  # a lone move paints at most a dot (round caps)
                sx, sy = x, y
                cmd = "l" if rel else "L"  # further pairs are lines
                last_ctrl = None
            elif c == "L":
                x, y = ox + float(tokens[i]), oy + float(tokens[i + 1])
                i += 2
                segs.append([start, (x, y)])
                last_ctrl = None
            elif c == "H":
                x = ox + float(tokens[i])
                i += 1
                segs.append([start, (x, y)])
                last_ctrl = None
            elif c == "V":
                y = oy + float(tokens[i])
                i += 1
                segs.append([start, (x, y)])
                last_ctrl = None
            elif c in "CS":
                if c == "C":
                    c1 = (ox + float(tokens[i]), oy + float(tokens[i + 1]))
                    i += 2
                else:
                    c1 = (2 * x - last_ctrl[0], 2 * y - last_ctrl[1]) if last_ctrl else (x, y)
                c2 = (ox + float(tokens[i]), oy + float(tokens[i + 1]))
                x, y = ox + float(tokens[i + 2]), oy + float(tokens[i + 3])
                i += 4
                segs.append([start, c1, c2, (x, y)])
                last_ctrl = c2
            elif c in "QT":
                if c == "Q":
                    c1 = (ox + float(tokens[i]), oy + float(tokens[i + 1]))
                    i += 2
                else:
                    c1 = (2 * x - last_ctrl[0], 2 * y - last_ctrl[1]) if last_ctrl else (x, y)
                x, y = ox + float(tokens[i]), oy + float(tokens[i + 1])
                i += 2
                segs.append([start, c1, (x, y)])
                last_ctrl = c1
            else:  # arcs (and anything else): not bounded here
                return None
    except (IndexError, ValueError, TypeError):
        return None
    return segs


class _Glyphs:
    """Per character, the largest advance and ink box (in ems) among the document's font
    files, from the fonts themselves (matplotlib's FreeType): texts are bounded by their
    glyphs, not by a guess, so a redrawn rectangle pulls in few neighbours.  A character
    none of them has is drawn by some fallback font: 2 ems wide, 1.3 tall, to be safe."""

    FALLBACK = (2.0, 0.0, 2.0, -0.5, 1.3)

    def __init__(self, files: tuple):
        from matplotlib import font_manager, ft2font

        flags = ft2font.LoadFlags.NO_SCALE
        self._fonts = []
        for path in files:
            try:
                self._fonts.append(font_manager.get_font(path))
            except (OSError, RuntimeError):
                continue
        self._flags = flags
        self._cache: dict[str, tuple[float, float, float, float, float]] = {}

    def __call__(self, ch: str) -> tuple[float, float, float, float, float]:
        """(advance, ink x min, ink x max, ink y min, ink y max) of ``ch``, in ems, y up."""
        got = self._cache.get(ch)
        if got is None:
            found = []
            for font in self._fonts:
                if font.get_char_index(ord(ch)):
                    g = font.load_char(ord(ch), flags=self._flags)
                    em = float(font.units_per_EM)
                    x0, y0, x1, y1 = g.bbox
                    found.append((g.horiAdvance / em, x0 / em, x1 / em, y0 / em, y1 / em))
            if found:
                got = (
                    max(f[0] for f in found),
                    min(f[1] for f in found),
                    max(f[2] for f in found),
                    min(f[3] for f in found),
                    max(f[4] for f in found),
                )
            else:
                got = self.FALLBACK
            self._cache[ch] = got
        return got


@lru_cache(maxsize=16)
def _glyphs(files: tuple) -> _Glyphs:
    return _Glyphs(files)


def _text_boxes(node: _Node, ctx: _Context) -> list[list[tuple[float, float]]] | None:
    """Corners that hold a text's glyphs.  A text is cut into chunks where an element
    sets x or y (each chunk is anchored on its own, as SVG says); a chunk spans the sum
    of its characters' advances, its ink reaches past that by the glyphs' overhangs,
    and a margin for kerning and rounding is added."""
    chunks: list[list] = []  # [x, y, anchor, largest font size, characters]

    def walk(n: _Node, c: _Context):
        a = n.attrs
        if any(k in a for k in _TEXT_UNBOUNDED) or ("style" in a and any(k in a["style"] for k in _TEXT_UNBOUNDED)):
            raise ValueError
        if c.font_size is None:
            raise ValueError
        if "x" in a or "y" in a or not chunks:
            xs = [float(v) for v in _NUMBER.findall(a.get("x", ""))]
            ys = [float(v) for v in _NUMBER.findall(a.get("y", ""))]
            x = xs[0] if xs else (chunks[-1][0] if chunks else 0.0)
            y = ys[0] if ys else (chunks[-1][1] if chunks else 0.0)
            if len(xs) > 1 or len(ys) > 1:  # a position per character: not bounded here
                raise ValueError
            chunks.append([x, y, c.anchor, c.font_size, []])
        chunk = chunks[-1]
        chunk[3] = max(chunk[3], c.font_size)
        chunk[4].extend(n.chars)
        placed = any("x" in k.attrs or "y" in k.attrs for k in n.children)
        if placed and "".join(n.chars).strip():  # text around placed tspans: which chunk holds what
            raise ValueError
        for child in n.children:
            if child.local != "tspan":
                raise ValueError
            walk(child, c.inherit(child.attrs))

    try:
        walk(node, ctx)
    except ValueError:
        return None
    glyphs = ctx.glyphs or _Glyphs(())
    boxes = []
    for x, y, anchor, size, parts in chunks:
        text = "".join(parts)
        if not text:
            continue
        width = left = right = 0.0
        low, high = 0.0, 0.0
        for ch in text:
            adv, x0, x1, y0, y1 = glyphs(ch)
            left = min(left, x0)
            right = max(right, x1 - adv)
            low, high = min(low, y0), max(high, y1)
            width += adv
        w = width * size
        start = x - w / 2 if anchor == "middle" else x - w if anchor == "end" else x
        pad = (0.25 + 0.03 * len(text)) * size + 0.5
        boxes.append(
            [
                (start + left * size - pad, y - high * size - 0.1 * size - 0.5),
                (start + w + right * size + pad, y - low * size + 0.1 * size + 0.5),
            ]
        )
    return boxes


def _parts(node: _Node, parent: _Context) -> list[Box] | None:
    """Boxes, in the root's user units, that together hold everything an element may
    paint (None: cannot tell): one per path segment and per text chunk, so a long
    routed arrow that changes colour damages a thin band along it, not its whole span."""
    ctx = parent.inherit(node.attrs)
    if ctx.unbounded:
        return None
    a = node.attrs
    tag = node.local
    vx, vy, vw, vh = ctx.view_box
    if tag in ("g", "a", "switch"):
        out: list[Box] = []
        for c in node.children:
            if c.local in _GLOBAL:
                continue
            got = _parts(c, ctx)
            if got is None:
                return None
            out += got
        return out
    pad = ctx.stroke if math.isfinite(ctx.stroke) else math.inf  # an outlined text
    groups: list[list[tuple[float, float]]] | None
    if tag == "text":
        groups = _text_boxes(node, ctx)
    else:
        pad = 2.0 * ctx.stroke + 1.0  # mitred corners reach twice the half width (miterlimit 4)
        if tag == "path":
            groups = _path_segments(a.get("d", ""))
        elif tag in ("rect", "image"):
            full = "100%" if tag == "image" else "0"
            xywh = _known(
                _length(a.get("x", "0"), vw),
                _length(a.get("y", "0"), vh),
                _length(a.get("width", full), vw),
                _length(a.get("height", full), vh),
            )
            if xywh is None:
                groups = None
            else:
                x, y, w, h = xywh
                groups = [[(x, y), (x + w, y + h)]]
        elif tag in ("circle", "ellipse"):
            circle = _known(
                _length(a.get("cx", "0"), vw),
                _length(a.get("cy", "0"), vh),
                _length(a.get("r", a.get("rx", "0")), vw),
                _length(a.get("r", a.get("ry", a.get("rx", "0"))), vh),
            )
            if circle is None:
                groups = None
            else:
                cx, cy, rx, ry = circle
                groups = [[(cx - rx, cy - ry), (cx + rx, cy + ry)]]
        elif tag == "line":
            ends = _known(*(_length(a.get(k, "0"), vw if k[0] == "x" else vh) for k in ("x1", "y1", "x2", "y2")))
            groups = None if ends is None else [[(ends[0], ends[1]), (ends[2], ends[3])]]
        elif tag in ("polyline", "polygon"):
            v = [float(s) for s in _NUMBER.findall(a.get("points", ""))]
            # an odd count is an SVG error; browsers draw the pairs before it: the lone last number is dropped
            pts = list(zip(v[0::2], v[1::2], strict=False))
            groups = [pts] if pts else []
        else:  # use, nested svg, foreignObject, ...: not bounded here
            return None
    if groups is None or not math.isfinite(pad):
        return None
    m = ctx.matrix
    out = []
    for pts in groups:
        p = np.asarray(pts, float)
        x0, y0 = p.min(axis=0) - pad
        x1, y1 = p.max(axis=0) + pad
        if m is _IDENTITY:
            out.append((float(x0), float(y0), float(x1), float(y1)))
            continue
        t = np.array([[x0, y0], [x1, y0], [x0, y1], [x1, y1]]) @ m[:2, :2].T + m[:2, 2]
        out.append((float(t[:, 0].min()), float(t[:, 1].min()), float(t[:, 0].max()), float(t[:, 1].max())))
    return out

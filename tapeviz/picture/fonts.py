"""Text metrics: how wide and how tall a text is, as an SVG viewer and matplotlib draw it.

The scene places every label before anything is drawn (labels must not overlap each
other or a box, and must stay on the canvas), so it needs each text's extent without a
matplotlib renderer. Widths are the sum of the glyphs' unhinted advances (what SVG
viewers draw; matplotlib's hinted Agg text is a few per cent narrower), read once per
character from the font files matplotlib itself uses and cached: a label costs a few
dictionary look-ups, not a text layout (~0.5 ms each in FreeType's shaper).

Characters the Latin font lacks (Chinese, for ``lang="zh"``) are measured in the first
installed CJK font (Noto Sans CJK / Source Han Sans / ...), which is also the fallback
both writers name: ``FONT_FAMILIES`` in the SVG, :func:`matplotlib_families` for
matplotlib. Until a CJK font is installed, wide characters (East Asian width W or F) are
measured as one em each, the width every CJK font gives them: a picture made here keeps
room for them in a browser that has the font. Line heights are the Latin font's own ascent,
descent and line gap (what matplotlib's text layout uses), which hold the CJK glyphs too.
"""

from __future__ import annotations

import unicodedata
import warnings
from functools import cache, lru_cache
from typing import Literal

from matplotlib import font_manager
from matplotlib.ft2font import FT2Font, LoadFlags

from .themes import FONT_FAMILIES

__all__ = ["text_width", "line_box", "fit", "wrap", "matplotlib_families", "cjk_font_path", "has_glyph"]

PRIMARY = FONT_FAMILIES[0]
CJK_FAMILIES = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Source Han Sans SC",
    "Source Han Sans CN",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Microsoft YaHei",
    "PingFang SC",
    "SimHei",
    "Noto Sans SC",
)
_REF = 64.0  # advances are read at this size (points, at 72 dpi) and scaled: unhinted advances are linear
ELLIPSIS = "…"


# The two slants measured: matplotlib's "oblique" is drawn from the italic face.
_Slant = Literal["normal", "italic"]


def _slant(style: str) -> _Slant:
    return "italic" if style in ("italic", "oblique") else "normal"


def _weight(weight) -> str:
    return (
        "bold"
        if weight in ("bold", "heavy", "black", "semibold", "demibold")
        or (isinstance(weight, (int, float)) and weight >= 600)
        else "normal"
    )


@cache
def _primary_path(weight: str, style: _Slant) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return font_manager.findfont(font_manager.FontProperties(family=PRIMARY, weight=weight, style=style))


@lru_cache(maxsize=1)
def cjk_font_path() -> str | None:
    """A font file with Chinese glyphs, or None when none is installed.

    matplotlib's font list is cached on disk and may predate the CJK fonts (installed
    after matplotlib first ran): then the system's font folders are searched once and
    what is found is added to matplotlib's list, so that its Text fallback finds it too."""

    def known():
        by_name = {f.name: f.fname for f in font_manager.fontManager.ttflist}
        return next((by_name[n] for n in CJK_FAMILIES if n in by_name), None)

    found = known()
    if found is None:
        for path in font_manager.findSystemFonts():
            name = path.rsplit("/", 1)[-1].lower()
            if any(k in name for k in ("sanscjk", "sourcehansans", "wqy", "msyh", "pingfang", "simhei", "notosanssc")):
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):
                    continue
        found = known()
    return found


@cache
def _face(path: str) -> FT2Font:
    font = FT2Font(path)
    font.set_size(_REF, 72)
    return font


def has_glyph(path: str, ch: str) -> bool:
    """Whether the font file has a glyph for ``ch`` (not the missing-glyph box)."""
    return _face(path).get_char_index(ord(ch)) != 0


class _Advances(dict):
    """Character -> advance in em for one weight and style, filled on first use."""

    def __init__(self, weight: str, style: _Slant):
        super().__init__()
        self.path = _primary_path(weight, style)

    def __missing__(self, ch: str) -> float:
        font = _face(self.path)
        if font.get_char_index(ord(ch)) == 0 and ch not in "\n\t":
            cjk = cjk_font_path()
            if cjk is not None and has_glyph(cjk, ch):
                font = _face(cjk)
            elif unicodedata.east_asian_width(ch) in ("W", "F"):
                # No font here has it, but a browser or viewer that has a CJK font draws it
                # one em wide (ideographs and full-width forms are square in every CJK font):
                # keep that room, or its labels would overlap there.
                self[ch] = 1.0
                return 1.0
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                adv = font.load_char(ord(ch), flags=LoadFlags.NO_HINTING).linearHoriAdvance / 65536.0 / _REF
        except (RuntimeError, ValueError, OverflowError):
            adv = 0.6
        self[ch] = adv
        return adv


_TABLES: dict[tuple[str, _Slant], _Advances] = {}
_BY_ARGS: dict = {}  # (weight, style) as callers pass them -> table: one look-up per call


def _table(weight, style) -> _Advances:
    table = _BY_ARGS.get((weight, style))
    if table is None:
        key = (_weight(weight), _slant(style))
        table = _TABLES.get(key)
        if table is None:
            table = _TABLES[key] = _Advances(*key)
        _BY_ARGS[(weight, style)] = table
    return table


def text_width(text: str, size: float, weight="normal", style="normal") -> float:
    """Width in points of one line of ``text`` at ``size`` points."""
    return size * sum(map(_table(weight, style).__getitem__, text))


@cache
def _line_em(weight: str, style: _Slant) -> tuple[float, float, float]:
    font = _face(_primary_path(weight, style))
    head = font.get_sfnt_table("head")
    assert head is not None  # (every TrueType / OpenType font has one)
    units = head["unitsPerEm"]
    os2 = font.get_sfnt_table("OS/2")
    if os2 is not None:
        return os2["sTypoAscender"] / units, -os2["sTypoDescender"] / units, os2["sTypoLineGap"] / units
    hhea = font.get_sfnt_table("hhea")
    if hhea is not None:
        return hhea["ascent"] / units, -hhea["descent"] / units, hhea["lineGap"] / units
    return 0.8, 0.2, 0.2  # pragma: no cover


def line_box(size: float, weight="normal", style="normal") -> tuple[float, float, float]:
    """(ascent, descent, line gap) in points: the height matplotlib's layout gives a line."""
    a, d, g = _line_em(_weight(weight), _slant(style))
    return a * size, d * size, g * size


def fit(text: str, width: float, size: float, weight="normal", style="normal", *, keep_tail: bool = False) -> str:
    """``text`` if it is at most ``width`` points wide, else cut with an ellipsis to fit
    (``keep_tail``: keep the end, e.g. ``…dense/kernel`` of a scoped name)."""
    if text_width(text, size, weight, style) <= width:
        return text
    table = _table(weight, style)
    room = width / size - table[ELLIPSIS]
    if room <= 0:
        return ""
    chars = reversed(text) if keep_tail else iter(text)
    used, kept = 0.0, []
    for c in chars:
        used += table[c]
        if used > room:
            break
        kept.append(c)
    if not kept:
        return ""
    return ELLIPSIS + "".join(reversed(kept)) if keep_tail else "".join(kept).rstrip() + ELLIPSIS


def _is_wide(c: str) -> bool:
    """A character a line may break after without a space (CJK scripts)."""
    o = ord(c)
    return 0x2E80 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF or 0xFF00 <= o <= 0xFFEF or 0x3000 <= o <= 0x303F


def _tokens(line: str) -> list[str]:
    out, word = [], ""
    for c in line:
        if c == " ":
            out.append(word + " ")
            word = ""
        elif _is_wide(c):
            if word:
                out.append(word)
                word = ""
            out.append(c)
        else:
            word += c
    if word:
        out.append(word)
    return out


def wrap(text: str, width: float, size: float, weight="normal", style="normal") -> list[str]:
    """``text`` broken into lines at most ``width`` points wide: at spaces, between CJK
    characters, and inside a word only when the word alone is too long."""
    lines: list[str] = []
    for para in text.split("\n"):
        current = ""
        for tok in _tokens(para):
            trial = current + tok
            if not current or text_width(trial.rstrip(), size, weight, style) <= width:
                current = trial
                if text_width(current.rstrip(), size, weight, style) <= width:
                    continue
            else:
                lines.append(current.rstrip())
                current = tok
            while text_width(current.rstrip(), size, weight, style) > width and len(current) > 1:
                # one word wider than the line: break it where it stops fitting
                cut = len(fit(current, width, size, weight, style).rstrip(ELLIPSIS)) or 1
                lines.append(current[:cut])
                current = current[cut:]
        lines.append(current.rstrip())
    return lines


@lru_cache(maxsize=1)
def matplotlib_families() -> tuple[str, ...]:
    """The family list to give matplotlib texts: the Latin font, then an installed CJK
    font (matplotlib falls back glyph by glyph along the list)."""
    cjk = cjk_font_path()
    if cjk is None:
        return (PRIMARY,)
    names = [f.name for f in font_manager.fontManager.ttflist if f.fname == cjk]
    preferred = next((n for n in CJK_FAMILIES if n in names), names[0] if names else None)
    return (PRIMARY, preferred) if preferred else (PRIMARY,)

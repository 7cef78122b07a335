"""The check that a Chinese picture has no English words (issue 24): the Latin words of
an SVG's texts, less the names a picture may show. Shared by the lessons' test
(tests/guides/test_notebooks.py) and the run explorer's (tests/training/test_scrubber.py)."""

from __future__ import annotations

import re
from html import unescape


def picture_words(svg: str) -> set[str]:
    """The Latin words of a picture's texts, whole identifiers (show_all, AddV2, sig/d0's d0);
    shapes (2x2, 8x1) and numbers in e-notation (1e5, 6.3e-08) are numbers."""
    texts = re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S)
    words = set()
    for t in texts:
        # the text as shown: tags out, entities read (the code line of a caption's `x > 0` is no "gt")
        shown = unescape(re.sub(r"<[^>]+>", "", t))
        plain = re.sub(r"\d+(?:x\d+)+|\b\d+(?:\.\d*)?e[+-]?\d+\b", " ", shown)
        words |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", plain))
    return {w for w in words if len(w.strip("_")) >= 2}


def english_words(svg: str, allowed: set[str], lesson: set[str] = frozenset()) -> set[str]:
    """The picture's words that are neither allowed names, nor a derivative written with
    them (dz/dx: d + a name), nor part of a lesson's name a picture cut short to fit (sequ…ential)."""
    out = set()
    for w in picture_words(svg) - allowed:
        if w.startswith("d") and w[1:] in allowed:
            continue
        if re.sub(r"_?\d+$", "", w) in allowed | {"d"}:  # numbered names: dense_1, sig/d3 (f"d{i}")
            continue
        if len(w) >= 3 and any(w in name for name in lesson):
            continue
        out.add(w)
    return out

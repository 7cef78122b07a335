"""What an SVG document's text measures as a browser shows it (a helper of the tests).

tapeviz's SVG declares its size in points (``width="…pt"``) over a viewBox in canvas
pixels, and a ``<text>``'s ``font-size`` is in viewBox units. Shown at its declared size,
one viewBox unit is ``width_pt / viewBox width`` points (0.72 at 100 dpi); a picture that
may shrink to its page (``min-width``) can get as small as its min-width."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

SVG_NS = "{http://www.w3.org/2000/svg}"
CSS_PX_PER_PT = 96 / 72


def _root(svg: str) -> ET.Element:
    return ET.fromstring(svg[svg.find("<svg") :])


def shown_width_pt(svg: str, *, shrunk: bool = False) -> float:
    """The picture's width in points as shown: its declared width, or with ``shrunk`` the
    narrowest its style lets a page squeeze it (``min-width``)."""
    root = _root(svg)
    width = float(root.get("width", "").removesuffix("pt"))
    floor = re.search(r"min-width:([0-9.]+)pt", root.get("style", ""))
    return float(floor.group(1)) if shrunk and floor else width


def shown_text_pt(svg: str, *, shrunk: bool = False) -> list[float]:
    """The size, in points as shown, of every ``<text>`` (each must say its size)."""
    root = _root(svg)
    per_unit = shown_width_pt(svg, shrunk=shrunk) / float(root.get("viewBox", "").split()[2])
    texts = list(root.iter(f"{SVG_NS}text"))
    assert texts and all(t.get("font-size") for t in texts), "every text says its size"
    return [float(t.get("font-size")) * per_unit for t in texts]

"""What an explorer shows where its widget front end is missing.

A notebook saved with its outputs keeps, for a widget, the bundle its ``_repr_mimebundle_``
returned. ipywidgets' own bundle holds only the widget view and a ``text/plain`` repr, so
GitHub, nbviewer, ``jupyter nbconvert --to html`` or a VS Code reload show nothing where
the explorer was. :class:`StaticFallback` adds the explorer's current view as one
``image/svg+xml`` to that bundle; a front end with the widget manager (JupyterLab,
Notebook 7, Voilà) picks the richer widget view and shows only the widget.

The pictures of an explorer are found in its widget tree, top to bottom: a canvas
(``tv-canvas``: the explorer's :func:`~tapeviz.explorer.state.picture` in its current
state), the plots (``tv-slope``, ``tv-run-panel``, the compare explorer's ``tv-compare``:
their SVG) and the Jacobian's heatmap (``tv-heatmap``: its PNG). Parts hidden on screen are left out.

While a lesson is executed for a page (``tapeviz lessons --html``, the docs site), the
environment variable :data:`PAGE_ENV` is ``"1"`` in the kernel: the bundle then has no
widget view, and its ``text/html`` holds the offline stepping page of every canvas
(:func:`tapeviz.explorer.html_page.page_fragment`) where that function exists, else the
same static pictures inline.
"""

from __future__ import annotations

import base64
import html
import os
import re
import struct
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import ipywidgets as W

from ..messages import DEFAULT, say
from . import state as st

__all__ = ["PAGE_ENV", "Part", "StaticFallback", "page_mode", "parts_of", "static_html", "static_svg"]

#: Set to "1" in the kernel that runs a lesson for a static page (lesson pages, docs site).
PAGE_ENV = "TAPEVIZ_STEPPING_PAGE"

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
CANVAS, PLOTS, HEATMAP = "tv-canvas", ("tv-slope", "tv-run-panel", "tv-compare"), "tv-heatmap"
_GAP = 8  # px between two stacked pictures
_PT = 4 / 3  # px per pt (CSS: 96 px per inch, 72 pt per inch)
_ROOT = re.compile(r"<svg\b[^>]*>", re.S)
_SVG = re.compile(r"<svg\b.*?</svg>", re.S)


def page_mode(environ: dict[str, str] | None = None) -> bool:
    """Whether this kernel runs a lesson for a static page (:data:`PAGE_ENV` is "1")."""
    return (os.environ if environ is None else environ).get(PAGE_ENV, "") == "1"


@dataclass(frozen=True)
class Part:
    """One picture of a widget's view: ``svg`` (a whole ``<svg>`` element), or ``png``
    (its bytes); ``explorer`` is the explorer a canvas belongs to (for the stepping page)."""

    svg: str = ""
    png: bytes = b""
    explorer: Any = None


def _hidden(w: W.Widget) -> bool:
    layout = getattr(w, "layout", None)
    return isinstance(layout, W.Layout) and layout.display == "none"


def _classes(w: W.Widget) -> set[str]:
    return set(getattr(w, "_dom_classes", ()))


def _is_explorer(w: Any) -> bool:
    return isinstance(getattr(w, "state", None), st.ExplorerState) and hasattr(w, "graph_targets")


def parts_of(widget: W.Widget) -> list[Part]:
    """The pictures ``widget`` shows now, top to bottom (see the module's docstring)."""
    return list(_walk(widget, None))


def _walk(w: W.Widget, explorer: Any) -> Iterator[Part]:
    if _hidden(w):
        return
    if _is_explorer(w):
        explorer = w
    classes = _classes(w)
    if CANVAS in classes and explorer is not None:
        yield Part(svg=st.picture(explorer.graph_targets, explorer.state), explorer=explorer)
        return
    if classes & set(PLOTS):
        yield from (Part(svg=s) for s in _SVG.findall(str(getattr(w, "value", ""))))
        return
    if HEATMAP in classes:
        src = str(getattr(w, "src", ""))
        if src.startswith("data:image/png;base64,"):
            yield Part(png=base64.b64decode(src.partition(",")[2]))
        return
    for child in getattr(w, "children", ()):
        yield from _walk(child, explorer)


def _length(value: str | None) -> float | None:
    """A root ``width``/``height`` in px (plain numbers and px as they are, pt scaled)."""
    if not value:
        return None
    m = re.fullmatch(r"\s*([0-9.]+)\s*(pt|px)?\s*", value)
    if m is None:
        return None
    return float(m.group(1)) * (_PT if m.group(2) == "pt" else 1.0)


def _attr(tag: str, name: str) -> str | None:
    m = re.search(rf'\s{name}="([^"]*)"', tag)
    return m.group(1) if m else None


def svg_size(svg: str) -> tuple[float, float]:
    """The size in px an SVG asks for: its root's width and height, else its viewBox's."""
    tag = _ROOT.search(svg)
    if tag is None:
        raise ValueError("not an SVG picture: no <svg> element")
    w, h = _length(_attr(tag.group(0), "width")), _length(_attr(tag.group(0), "height"))
    if w is None or h is None:
        box = (_attr(tag.group(0), "viewBox") or "").split()
        if len(box) != 4:
            raise ValueError("an SVG picture with neither width/height nor a viewBox")
        w, h = float(box[2]), float(box[3])
    return w, h


def png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height in pixels, from its header."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG image")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _placed(svg: str, y: float, width: float, height: float) -> str:
    """``svg`` as a nested element at (0, y), ``width`` x ``height`` px, its drawing scaled
    into that box by its viewBox (one is made from its own size when it has none)."""
    tag = _ROOT.search(svg)
    assert tag is not None
    root = tag.group(0)
    attrs = re.sub(r'\s(?:width|height|x|y|xmlns)="[^"]*"', "", root[4:-1])
    if _attr(root, "viewBox") is None:
        w, h = svg_size(svg)
        attrs += f' viewBox="0 0 {w:g} {h:g}"'
    opened = f'<svg x="0" y="{y:g}" width="{width:g}" height="{height:g}"{attrs}>'
    return opened + svg[tag.end() :]


def static_svg(parts: list[Part]) -> str:
    """One SVG document of ``parts`` stacked top to bottom, each at its own size."""
    if not parts:
        raise ValueError("no picture to draw: the widget shows none now")
    placed, y, width = [], 0.0, 0.0
    for part in parts:
        if part.svg:
            w, h = svg_size(part.svg)
            placed.append(_placed(part.svg, y, w, h))
        else:
            pw, ph = png_size(part.png)
            w, h = float(pw), float(ph)
            data = base64.b64encode(part.png).decode("ascii")
            placed.append(f'<image x="0" y="{y:g}" width="{w:g}" height="{h:g}" href="data:image/png;base64,{data}"/>')
        width = max(width, w)
        y += h + _GAP
    height = y - _GAP
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{width:g}" height="{height:g}" '
        f'viewBox="0 0 {width:g} {height:g}">' + "".join(placed) + "</svg>"
    )


def _fragment_maker() -> Callable[..., str] | None:
    """html_page.page_fragment, the offline stepping page as one inline element, when this
    tapeviz has it."""
    from . import html_page

    return getattr(html_page, "page_fragment", None)


def static_html(parts: list[Part], *, stepping: bool = True) -> str:
    """The parts as inline HTML inside one ``<div class="tv-static">``: a canvas as the
    offline stepping page when ``stepping`` and :func:`_fragment_maker` has one, else its
    picture; plots inline; the heatmap as an ``<img>``."""
    make = _fragment_maker() if stepping else None
    out = []
    for part in parts:
        if part.explorer is not None and make is not None:
            ex = part.explorer
            targets = list(ex.graph_targets.targets)
            out.append(
                "<div class='tv-static-stepping'>"
                + make(ex.graph_targets, ex.state, targets=targets if len(targets) > 1 else None)
                + "</div>"
            )
        elif part.svg:
            out.append(f"<div class='tv-static-picture'>{part.svg}</div>")
        else:
            data = base64.b64encode(part.png).decode("ascii")
            out.append(f"<div class='tv-static-picture'><img alt='' src='data:image/png;base64,{data}'></div>")
    kind = "stepping" if make is not None and any(p.explorer is not None for p in parts) else "pictures"
    return f"<div class='tv-static' data-tv-static='{html.escape(kind)}'>" + "".join(out) + "</div>"


def _lang(widget: Any, parts: list[Part]) -> str:
    """The language the widget speaks: its explorer's, else its own ``lang``."""
    for part in parts:
        if part.explorer is not None:
            return str(part.explorer.state.lang)
    return str(getattr(widget, "lang", DEFAULT))


class StaticFallback:
    """Mixin for an explorer widget: its output bundle also carries its current view, so
    a front end without the widget shows the picture instead of nothing."""

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        bundle = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if not isinstance(bundle, dict):
            return bundle
        try:
            extra = self._without_front_end()
        except Exception as e:  # noqa: BLE001 - the live widget comes first: a failed picture never hides it
            warnings.warn(f"tapeviz: the explorer's saved picture could not be made ({e!r})", stacklevel=2)
            return bundle
        bundle = {**bundle, **extra}
        if page_mode() and "text/html" in extra:
            # a static page has no kernel behind its widgets: the stepping page (or the
            # pictures) is the whole output, and no front end picks the dead widget instead
            bundle.pop(WIDGET_VIEW, None)
        return bundle

    def _without_front_end(self) -> dict[str, str]:
        """The output types a host without the widget shows (none when nothing is drawn)."""
        parts = parts_of(self)
        if not parts:
            return {}
        # ipywidgets' text/plain is the widget's repr (its children's reprs, cut off): where a
        # host falls back to plain text, say what the output is and how to get it back
        out = {"text/plain": say("fallback.text", _lang(self, parts)), "image/svg+xml": static_svg(parts)}
        if page_mode():
            out["text/html"] = static_html(parts)
        return out

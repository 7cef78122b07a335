"""A comparison that draws itself: ``tv.compare(a, b)`` with ``.save(path)`` and a picture in a notebook.

:class:`ComparePicture` is the :class:`~tapeviz.gradients.compare.Comparison` of the
gradients stage (its rows, ratios and table unchanged) with the picture of
:class:`~tapeviz.picture.compare_scene.CompareScene`, written by the same writers as every
picture (the SVG of :func:`tapeviz.output.svg.to_svg`, its pixels for PNG). A notebook
shows the picture with the table of the largest changes under it, inline, offline.
"""

from __future__ import annotations

import base64
import dataclasses
import os
from pathlib import Path
from typing import Any

from ..gradients.compare import Comparison
from ..picture.compare_scene import CompareScene
from ..picture.options import Options
from .export import check_path, written_in_place
from .svg import to_svg

__all__ = ["ComparePicture", "save_scene"]

#: A still picture's formats (a comparison has no steps to animate).
STILL = (".png", ".svg")


@dataclasses.dataclass(repr=False)
class ComparePicture(Comparison):
    """A :class:`Comparison` with its picture: ``.scene()``, ``.save(path)``, ``.svg()``,
    ``.png()``; in a notebook the picture and the table of the largest changes
    (``.shown(lang="zh")``: with other options)."""

    @classmethod
    def of(cls, comparison: Comparison) -> ComparePicture:
        """The same comparison, able to draw itself."""
        return cls(**{f.name: getattr(comparison, f.name) for f in dataclasses.fields(Comparison)})

    def scene(
        self, options: Options | None = None, *, names: tuple[str, str] | None = None, **option_keywords: Any
    ) -> CompareScene:
        """The picture's records (see CompareScene); the options as for ``tv.save``."""
        return CompareScene(self, Options.of(options, **option_keywords).in_file(), names=names)

    def svg(self, options: Options | None = None, **option_keywords: Any) -> str:
        """The picture as an SVG document."""
        return to_svg(self.scene(options, **option_keywords))

    def png(self, options: Options | None = None, *, dpi: int = 100, **option_keywords: Any) -> bytes:
        """The picture as PNG bytes (the SVG's pixels)."""
        from .raster import png_bytes

        return png_bytes(self.svg(options, **option_keywords), dpi=dpi)

    def save(
        self,
        path: str | os.PathLike[str],
        /,
        *,
        dpi: int = 100,
        names: tuple[str, str] | None = None,
        options: Options | None = None,
        **option_keywords: Any,
    ) -> Path:
        """Write the picture to a .png or .svg file (``names``: what a and b are, e.g.
        ("raw", "clipped"), said in the title). The options: as for ``tv.save``
        (:class:`tv.Options`). Returns the path."""
        check_path(path, formats=STILL)  # fail before any drawing work
        return save_scene(self.scene(options, names=names, **option_keywords), path, dpi=dpi)

    def shown(
        self, options: Options | None = None, *, names: tuple[str, str] | None = None, **option_keywords: Any
    ) -> ComparePicture:
        """The same comparison, shown in a notebook with these options and names (as a
        cell's last line: ``c.shown(lang="zh", names=("raw", "clipped"))``)."""
        out = ComparePicture.of(self)
        out.__dict__["_show"] = (Options.of(options, **option_keywords), names)
        return out

    def _shown(self) -> str:
        """The picture a notebook shows (its options, names), made once for its HTML and PNG."""
        got = self.__dict__.get("_svg")
        if got is None:
            options, names = self.__dict__.get("_show", (None, None))
            got = self.__dict__["_svg"] = to_svg(self.scene(options, names=names))
        return got

    def _repr_png_(self) -> bytes:
        from .raster import png_bytes

        return png_bytes(self._shown())

    def _repr_html_(self) -> str:
        # the picture as an <img> of its own SVG (no script, no request), the table under it
        data = base64.b64encode(self._shown().encode("utf-8")).decode("ascii")
        picture = f'<img src="data:image/svg+xml;base64,{data}" alt="{_alt(self)}" style="max-width:100%"/>'
        return f"<div>{picture}{super()._repr_html_()}</div>"

    def __repr__(self) -> str:
        return super().__repr__()


def _alt(c: Comparison) -> str:
    return f"‖g_b‖ / ‖g_a‖ on {len(c.edges)} edges; {len(c.lost())} lost"


def save_scene(scene: Any, path: str | os.PathLike[str], *, dpi: int = 100) -> Path:
    """Write one still scene to .png or .svg (no half-written file on error)."""
    p = check_path(path, formats=STILL)
    doc = to_svg(scene)
    with written_in_place(p) as tmp:
        if p.suffix.lower() == ".svg":
            tmp.write_bytes(doc.encode("utf-8"))
        else:
            from .raster import png_bytes

            tmp.write_bytes(png_bytes(doc, dpi=dpi))
    return p

"""The painter interface: what a writer implements to put a Scene's records on its medium.

Drawing goes one way, scene -> writers. A Scene (picture/scene.py) holds every mark as a
placed, styled record; a painter turns one record into one element of its medium and
decides nothing. Two painters implement it: :class:`~tapeviz.output.svg.SvgPainter`
(SVG text: files, the explorer's canvas, Jupyter; PNG and GIF are that SVG's pixels)
and :class:`~tapeviz.output.artists.MplPainter` (matplotlib artists: ``tv.draw(ax=...)``,
``view.figure``). Each writer assembles its own document from what its painter returns:
the SVG groups elements by layer, matplotlib orders artists by z-order.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..picture.marks import Arrow, Box, Label, Swatch

__all__ = ["Painter"]


@runtime_checkable
class Painter(Protocol):
    """One method per kind of record; each returns what it made (SVG text, or artists)."""

    def box(self, b: Box) -> Any:
        """A node's rounded box."""

    def text(self, t: Label) -> Any:
        """A text: in a box, under it (a gradient), on an edge, or the chrome's."""

    def arrow(self, a: Arrow) -> Any:
        """An edge, producer -> consumer, with its head."""

    def marks(self, a: Arrow) -> Any:
        """The backward markers an edge shows at the current step."""

    def swatch(self, sw: Swatch) -> Any:
        """A legend entry's sample (its text is painted with :meth:`text`)."""

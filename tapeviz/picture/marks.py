"""The marks a picture is made of, as plain records: boxes, texts, arrows, legend swatches.

Graph marks are in data units, chrome marks (title, caption, legend) in canvas pixels; the
writers (output/) turn each record into one element or artist."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .style import LABEL_PAD


@dataclass(slots=True)
class Box:
    """A node's rounded box: lower-left corner and size in data units."""

    x: float
    y: float
    w: float
    h: float
    fc: str
    ec: str
    lw: float
    gid: str
    linestyle: Any = "-"
    visible: bool = True
    radius: float = 0.08  # corner rounding, in data units
    tip: str = ""  # what hovering shows: the full name the title shortens


@dataclass(slots=True)
class Label:
    """One text, anchored at (x, y); ``boxed`` puts it on a rounded background
    (``fill`` / ``edge``; edge labels sit on top of arrows, chips are tags)."""

    x: float
    y: float
    text: str
    size: float
    color: str | None = None  # None: the theme's text colour
    ha: str = "center"
    va: str = "center"
    weight: str = "normal"
    style: str = "normal"
    boxed: bool = False
    gid: str | None = None
    fill: str | None = None
    edge: str | None = None
    fill_alpha: float = 1.0
    visible: bool = True
    pad: float = LABEL_PAD  # background padding, in units of the font size


class Route(NamedTuple):
    """A path: vertices and matplotlib path codes (MOVETO / LINETO / CURVE4), in data units."""

    vertices: list
    codes: list


@dataclass(slots=True)
class Arrow:
    """An edge, producer → consumer (the forward direction).  Routed and ported edges
    follow ``path``; straight ones go from ``start`` to ``end`` bent by ``rad`` (arc3).
    ``marks`` are backward chevrons, (x, y, dx, dy) with (dx, dy) the direction the
    gradient moves (towards the producer), on the edges of the step being processed."""

    start: tuple[float, float]
    end: tuple[float, float]
    rad: float
    path: Route | None
    color: str
    lw: float
    linestyle: Any
    gid: str
    members: list = field(default_factory=list)  # the graph's edges this one stands for
    marks: list = field(default_factory=list)  # drawn now
    mark_color: str | None = None
    visible: bool = True
    mark_at: tuple | None = None  # where its chevron goes while its step is processed


class Hidden(NamedTuple):
    """Numbers a picture shows as "?" (a quiz: predict, then reveal): the gradients on these
    recorded edges and nodes, wherever the picture draws them, and a title saying so."""

    edges: frozenset  # recorded edges (u, v, key)
    nodes: frozenset  # recorded nodes
    title: str | None  # None: the step's own title


@dataclass(slots=True)
class Swatch:
    """A legend entry's sample: a box, a line or a tag, and its text (canvas pixels)."""

    kind: str  # "box", "line", "chip"
    x: float  # lower-left of the sample
    y: float
    w: float
    h: float
    fc: str | None
    ec: str
    lw: float
    linestyle: Any
    label: Label
    mark: bool = False  # a line with a backward chevron on it
    chip: Label | None = None


@dataclass(frozen=True)
class GraphArea:
    """Where the graph sits on the canvas (fractions of it): left, bottom, width, height."""

    axes: tuple[float, float, float, float]

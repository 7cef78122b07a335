"""Themes: every colour, font size and line width a picture uses, in one place.

A picture's meaning is carried by a handful of colour *roles*: the gradient flowing
back, the step being processed, an edge that carries nothing (stopped), a NaN/Inf
gradient and the target. About one reader in twelve sees red and green poorly, so the
roles are taken from the Okabe–Ito palette and chosen so that they stay apart under
simulated deuteranopia and protanopia (``tests/test_themes.py`` simulates both and
checks the CIEDE2000 distance of every pair, in every theme).

Three themes:

* ``light`` (the default): white paper, as in a notebook or a printed page;
* ``dark``: JupyterLab's dark theme background (#111111) and text (#ffffff);
* ``projector``: light, with text 1.5x larger and lines twice as thick, for the back
  of a classroom (the whole picture scales, so nothing that fits on screen overlaps).

A picture's smaller texts (subtitles, values, edge labels, tags) sit a fixed number of
points below its base text (:data:`BELOW`), never below the theme's ``least``. The
explorer draws any theme through :func:`explorer_theme`: on a screen, at the size a
notebook shows its inline SVG, no text is below :data:`EXPLORER_TEXT` (9 pt), with the
small texts raised more than the base text (a flatter scale: 9.5 pt titles over 9 pt
tags, where a file has 8 over 6.5) and columns that stay narrow enough for three to fit
a notebook cell. Files keep the themes as they are.

Nothing here draws: the scene reads a Theme, and the writers (svg.py, artists.py) only
copy what the scene's records say.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = [
    "Theme",
    "THEMES",
    "DEFAULT_THEME",
    "get_theme",
    "explorer_theme",
    "EXPLORER_TEXT",
    "BELOW",
    "ROLES",
    "FONT_FAMILIES",
    "rgba",
]

#: Font families, in the order a viewer should try them: matplotlib's default Latin font,
#: then fonts with Chinese glyphs on Linux (Noto / Source Han), Windows and macOS.
FONT_FAMILIES = (
    "DejaVu Sans",
    "Noto Sans CJK SC",
    "Source Han Sans SC",
    "Microsoft YaHei",
    "PingFang SC",
    "sans-serif",
)

#: How many points below the base text (a box's title) each smaller text is written.
BELOW = {
    "title": 0.0,  # a box's title (bold)
    "subtitle": 1.0,  # a box's second line (italic: a layer's kind and size)
    "value": 0.5,  # the forward value inside a box
    "gradient": 0.5,  # the gradient written under a box
    "edge": 1.0,  # an edge's label (its gradient or stop reason)
    "tag": 1.5,  # a box's chips (folded constants, shapes, named inputs)
    "legend": 0.5,  # the legend's texts
    "frame": 1.5,  # an open group's name on its frame (the explorer's canvas)
}

#: The colour roles that carry meaning and must stay distinguishable for colour-blind readers.
ROLES = ("flowing", "stopped", "bad", "active", "target")

# Okabe & Ito (2008), "Color Universal Design": the palette's colours by name.
ORANGE, SKY_BLUE, BLUISH_GREEN, YELLOW = "#e69f00", "#56b4e9", "#009e73", "#f0e442"
BLUE, VERMILLION, REDDISH_PURPLE = "#0072b2", "#d55e00", "#cc79a7"


@dataclass(frozen=True)
class Theme:
    """Colours (hex strings), sizes (points) and line widths of one look."""

    name: str
    background: str
    text: str  # titles, box titles, legend
    muted: str  # subtitles, captions' second lines
    value: str  # the forward value inside a box
    kinds: dict  # node kind -> (fill, outline)
    forward: str  # an edge no gradient has crossed yet
    flowing: str  # an edge carrying gradient
    active: str  # the step being processed (edges and box outline)
    stopped: str  # an edge that carries no gradient (dashed)
    bad: str  # a NaN / Inf gradient
    target: str  # the target's outline
    grad_text: str  # gradient values written on edges and under boxes
    stop_text: str  # stop reasons written on edges
    label_fill: str  # the rounded box behind an edge label
    label_alpha: float
    chips: dict  # chip kind -> (fill, outline, text)
    font: float = 8.0  # the base text size, in points
    line: float = 1.0  # line widths are multiplied by this
    scale: float = 1.0  # inches per layout unit are multiplied by this (bigger text needs bigger boxes)
    column: float = 1.0  # a column's width is multiplied by this too (the explorer's are narrower for their text)
    least: float = 0.0  # no text is smaller than this, in points (see :meth:`size`)
    # a comparison's diverging colours (tv.compare): ‖g_b‖/‖g_a‖ below 1, at 1, above 1
    shrunk: str = BLUE
    unchanged: str = "#8c8c8c"
    grown: str = VERMILLION

    def role(self, name: str) -> str:
        """The colour of one of :data:`ROLES`."""
        return getattr(self, name)

    def size(self, text: str, font: float | None = None) -> float:
        """The size (points) of one kind of text (a key of :data:`BELOW`): ``BELOW[text]``
        points under the base text (``font``, default the theme's), but at least ``least``."""
        return max((self.font if font is None else font) - BELOW[text], self.least)

    @property
    def smallest(self) -> float:
        """The size of the theme's smallest text (points)."""
        return self.size(max(BELOW, key=BELOW.__getitem__))


_LIGHT_KINDS = {
    "variable": ("#dcebf7", BLUE),
    "watched": ("#d9f2ea", BLUISH_GREEN),
    "constant": ("#f1f3f5", "#8c959f"),
    "input": ("#f8fafc", "#8c959f"),
    "op": ("#ffffff", "#3b4754"),
    "layer": ("#f3e6ef", "#9c4f83"),
    "inner": ("#fbf6dc", "#8a6d00"),
}

LIGHT = Theme(
    name="light",
    background="#ffffff",
    text="#1a1a1a",
    muted="#5b6670",
    value="#2f3b46",
    kinds=_LIGHT_KINDS,
    forward="#6b7682",
    flowing=ORANGE,
    active=BLUE,
    stopped="#999999",
    bad="#b2182b",
    target="#000000",
    grad_text="#8a4600",
    stop_text="#6e6e6e",
    label_fill="#ffffff",
    label_alpha=0.9,
    chips={
        "value": ("#f1f3f5", "#c3c9cf", "#4a5560"),
        "input": ("#e3f0fa", "#9cc3e0", "#1f4e73"),
        "random": ("#fbefe0", "#e3be8c", "#7a4a00"),
    },
)

DARK = Theme(
    name="dark",
    background="#111111",  # JupyterLab dark: --jp-layout-color0
    text="#ffffff",  # --jp-content-font-color1
    muted="#b3b3b3",  # --jp-content-font-color2 (white at 70 %) on #111
    value="#dddddd",
    kinds={
        "variable": ("#0d2a3d", SKY_BLUE),
        "watched": ("#0b2e25", "#3cc29a"),
        "constant": ("#1e1e1e", "#8a8a8a"),
        "input": ("#191919", "#8a8a8a"),
        "op": ("#212121", "#b8b8b8"),  # --jp-layout-color1
        "layer": ("#2e1a29", REDDISH_PURPLE),
        "inner": ("#2b2610", "#c9b64a"),
    },
    forward="#8f98a1",
    flowing=ORANGE,
    active=SKY_BLUE,
    stopped="#8a8a8a",
    bad="#cc2233",
    target="#ffffff",
    grad_text="#f2b84b",
    stop_text="#a0a0a0",
    label_fill="#111111",
    shrunk=SKY_BLUE,
    unchanged="#858585",
    grown=ORANGE,
    label_alpha=0.9,
    chips={
        "value": ("#2a2a2a", "#555555", "#cfcfcf"),
        "input": ("#10283a", "#3d7aa6", "#bfe0f5"),
        "random": ("#33250f", "#8c6a2e", "#f2cf8f"),
    },
)

PROJECTOR = Theme(
    **{
        **LIGHT.__dict__,
        "name": "projector",
        "font": 12.0,
        "line": 2.0,
        "scale": 1.5,
        "forward": "#4f5a66",
        "grad_text": "#7a3e00",
        "muted": "#46515c",
    },
)

THEMES: dict[str, Theme] = {t.name: t for t in (LIGHT, DARK, PROJECTOR)}
DEFAULT_THEME = "light"


def get_theme(theme: str | Theme | None) -> Theme:
    """A Theme by name (``"light"``, ``"dark"``, ``"projector"``), or the Theme given."""
    if theme is None:
        return THEMES[DEFAULT_THEME]
    if isinstance(theme, Theme):
        return theme
    try:
        return THEMES[theme]
    except (KeyError, TypeError):
        raise ValueError(f"No theme named {theme!r}; use one of {', '.join(repr(t) for t in THEMES)}.") from None


#: The explorer's smallest text, in points as a notebook shows it (no text below 9 pt
#: reads well in a cell). Its inline SVG is shown at its own size: 1 pt of the theme is 1 pt (4/3 CSS px).
EXPLORER_TEXT = 9.0
#: The explorer's base text (box titles, bold): half a point above its smallest text.
EXPLORER_FONT = 9.5
#: Geometry of the explorer's picture, as multiples of a light file's. Rows: tall enough for
#: a box's lines at the explorer's sizes (a two-line title, subtitle, value and a row of
#: 9 pt tags). Columns: three fit a notebook cell (rows.CELL_WIDTH) with their gaps and
#: margins, as in a file; the box and its gap grow by 1.13 while its text grows by 1.19
#: (titles) to 1.38 (tags), so titles wrap onto their second line sooner and an edge label
#: too long for its gap is written shorter (its norm alone: the shape is on the box).
EXPLORER_ROWS = 1.22
EXPLORER_COLUMNS = 1.13


def explorer_theme(theme: str | Theme | None) -> Theme:
    """The theme the explorer draws with: ``theme`` with no text below
    :data:`EXPLORER_TEXT` points (light and dark: base text 8 -> 9.5 pt, edge labels 7 ->
    9, tags 6.5 -> 9) and rows and columns grown for it (:data:`EXPLORER_ROWS`,
    :data:`EXPLORER_COLUMNS`; colours, name and lines unchanged). A theme whose smallest
    text is that big already (projector: tags 10.5 pt) is returned as it is."""
    th = get_theme(theme)
    if th.smallest >= EXPLORER_TEXT:
        return th
    return replace(
        th,
        font=max(th.font, EXPLORER_FONT),
        least=EXPLORER_TEXT,
        scale=th.scale * EXPLORER_ROWS,
        column=th.column * EXPLORER_COLUMNS / EXPLORER_ROWS,
    )


def rgba(color: str) -> tuple[float, float, float, float]:
    """``#rgb``, ``#rrggbb`` or ``#rrggbbaa`` as floats in 0..1 (the only colour forms records hold)."""
    c = color.lstrip("#")
    if len(c) == 3:
        c = "".join(ch * 2 for ch in c)
    if len(c) not in (6, 8) or color[:1] != "#":
        raise ValueError(f"Not a hex colour: {color!r}")
    vals = [int(c[i : i + 2], 16) / 255 for i in range(0, len(c), 2)]
    return (vals[0], vals[1], vals[2], vals[3] if len(vals) == 4 else 1.0)


def mix(colour: str, background: str, amount: float) -> str:
    """``colour`` mixed with ``background``: ``amount`` of the colour, the rest background
    (a tint that keeps the hue and lets dark text on it stay readable)."""
    from matplotlib.colors import to_hex, to_rgb

    fg, bg = to_rgb(colour), to_rgb(background)
    r, g, b = (x * amount + y * (1.0 - amount) for x, y in zip(fg, bg, strict=True))
    return to_hex((r, g, b))

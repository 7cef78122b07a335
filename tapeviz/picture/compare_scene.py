"""Two backward passes as one picture: a's graph, every edge and box coloured by ‖g_b‖ / ‖g_a‖.

The numbers are a :class:`~tapeviz.gradients.compare.Comparison`'s rows (what TF's
gradient functions passed back in each pass); this module only turns them into colours,
texts and dashes on the records a :class:`~tapeviz.picture.scene.Scene` of a's finished
pass placed. The colour map diverges around "unchanged" on the log of the ratio: grey at
×1, the theme's ``shrunk`` hue below it and its ``grown`` hue above, full at the scale's
ends (×0.5 .. ×2, else whole decades that hold the ratios shown). Every box is drawn plain
unless its gradient changed: colour says the ratio alone. Blue and orange stay apart for readers
with red–green colour blindness (tests/picture/test_themes.py), and nothing is said by
colour alone: every edge and box writes its ratio, and an edge whose gradient b lost is
dashed and labelled "lost".
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..gradients.compare import Change, Comparison, Row
from ..messages import localize, say
from . import fonts
from .options import Options
from .scene import Scene
from .style import LW_BOX, LW_CARRIES, LW_STOPPED, LW_TARGET
from .themes import Theme, mix

__all__ = ["RatioScale", "CompareScene", "ratio_text", "combined"]

#: Where the colour scale may end (×1/span .. ×span); beyond the last, the end colour.
SPANS = (2.0, 10.0, 100.0, 1000.0)
#: How an edge that lost its gradient is dashed (points on, off).
LOST_DASH = (0, (4, 2))
#: How many of the largest changes the picture lists under its title.
TABLE_ROWS = 5


@dataclass(frozen=True)
class RatioScale:
    """The diverging colour map of a comparison: the log of the ratio, from ×1/``span``
    (shrunk most) to ×``span`` (grown most)."""

    span: float

    @classmethod
    def fit(cls, ratios: Iterable[float | None]) -> RatioScale:
        """The least of :data:`SPANS` that holds every finite, positive ratio (clipping's
        ×0.7 is plainly blue on a ×0.5 .. ×2 scale, a tenfold change on ×0.1 .. ×10)."""
        logs = [abs(math.log10(r)) for r in ratios if r is not None and r > 0 and math.isfinite(r)]
        most = max(logs, default=0.0)
        return cls(next((s for s in SPANS if math.log10(s) >= most - 1e-9), SPANS[-1]))

    def position(self, ratio: float) -> float:
        """Where a ratio sits on the scale: -1 (shrunk most) .. 0 (×1) .. 1 (grown most)."""
        if ratio <= 0:
            return -1.0
        if math.isinf(ratio):
            return 1.0
        return max(-1.0, min(1.0, math.log10(ratio) / math.log10(self.span)))

    def colour(self, ratio: float | None, theme: Theme) -> str:
        """The colour of a ratio (None or NaN: the theme's NaN colour)."""
        if ratio is None or math.isnan(ratio):
            return theme.bad
        t = self.position(ratio)
        if t == 0:
            return theme.unchanged
        return mix(theme.grown if t > 0 else theme.shrunk, theme.unchanged, abs(t) ** 0.7)

    def ticks(self) -> list[float]:
        """The ratios the legend shows: the ends, ×1, and every decade between."""
        if self.span < 10:
            return [1 / self.span, 1.0, self.span]
        decades = round(math.log10(self.span))
        return [10.0**d for d in range(-decades, decades + 1)]


def ratio_text(ratio: float | None) -> str:
    """A ratio as the picture writes it: ``×0.25``, ``×1``, ``×12.5``, ``×∞``; ``NaN``; ``—``."""
    if ratio is None:
        return "—"
    if math.isnan(ratio):
        return "NaN"
    if math.isinf(ratio):
        return "×∞"
    return f"×{ratio:.3g}"


def _norm_text(v: float | None) -> str:
    if v is None:
        return "None"
    return f"{v:.3g}"


@dataclass(frozen=True)
class Combined:
    """Several rows of a comparison seen as one (an arrow standing for several edges, a
    group's variables): their norms taken together, as one vector's."""

    change: Change
    ratio: float | None
    norm_a: float | None
    norm_b: float | None


def combined(rows: Iterable[Row]) -> Combined:
    """The rows taken together: lost when b lost every gradient a had there, gained when
    only b has one, else the ratio of the two norms of all of them together."""
    rows = [r for r in rows if r.change is not Change.NONE]
    if not rows:
        return Combined(Change.NONE, None, None, None)
    if len(rows) == 1:
        r = rows[0]
        return Combined(r.change, r.ratio, r.norm_a, r.norm_b)
    if all(r.change is Change.LOST for r in rows):
        return Combined(Change.LOST, None, _root(r.norm_a for r in rows), None)
    if all(r.change is Change.GAINED for r in rows):
        return Combined(Change.GAINED, math.inf, None, _root(r.norm_b for r in rows))
    na, nb = _root(r.norm_a for r in rows), _root(r.norm_b for r in rows)
    if na is None or nb is None:
        return Combined(Change.CHANGED, None, na, nb)
    if na > 0 and nb == 0:
        return Combined(Change.ZEROED, 0.0, na, nb)
    ratio = (1.0 if nb == 0 else math.inf) if na == 0 else nb / na
    same = all(r.change is Change.SAME for r in rows)
    return Combined(Change.SAME if same else Change.CHANGED, ratio, na, nb)


def _root(norms: Iterable[float | None]) -> float | None:
    got = [n for n in norms if n is not None]
    return math.sqrt(sum(n * n for n in got)) if got else None


class CompareScene(Scene):
    """A Scene of a's finished backward pass whose edges and boxes show how b's gradient
    compares: coloured by ``‖g_b‖ / ‖g_a‖`` on :class:`RatioScale`, labelled with it
    (``×0.25``), lost gradients dashed and labelled, and the largest changes listed under
    the title. ``names``: what a and b are (e.g. ("raw", "clipped")), said in the title.
    The options: as for any picture (:class:`~tapeviz.picture.options.Options`)."""

    def __init__(
        self,
        comparison: Comparison,
        options: Options | None = None,
        *,
        names: tuple[str, str] | None = None,
        title: str | None = None,
        **keywords: Any,
    ):
        self.comparison = comparison
        self.ratio_scale = RatioScale.fit(r.ratio for r in comparison.rows(None))
        opts = Options.of(options, **{k: v for k, v in keywords.items() if k not in _SCENE_KEYWORDS})
        lang = opts.lang
        if title is None:
            title = (
                say("ui.compare.title", lang, a=names[0], b=names[1])
                if names is not None
                else say("ui.compare.title_plain", lang)
            )
        rest = {k: v for k, v in keywords.items() if k in _SCENE_KEYWORDS}
        super().__init__(comparison.a.graph, comparison.a, opts, title=title, caption=self._table(lang), **rest)

    # -- the table under the title ---------------------------------------------------
    def _table(self, lang: str) -> str:
        c = self.comparison
        lines = []
        if c.clip != "none":
            lines.append(say("ui.compare.clip", lang, mode=c.clip))
        rows = c.rows(TABLE_ROWS)
        changed = [r for r in rows if r.change is not Change.SAME]
        if not changed:
            lines.append(say("ui.compare.none", lang))
            return "\n".join(lines)
        lines.append(say("ui.compare.largest", lang))
        for r in changed:
            lines.append(
                say(
                    "ui.compare.row",
                    lang,
                    name=self._row_name(r, lang),
                    a=_norm_text(r.norm_a),
                    b=_norm_text(r.norm_b),
                    ratio=self._change_word(r.change, r.ratio, lang),
                )
            )
        return "\n".join(lines)

    def _row_name(self, r: Row, lang: str) -> str:
        """A row's name in ``lang`` (the graph's names of its node, or of its edge's two ends)."""
        g = self.comparison.a.graph
        if r.kind == "node" and r.key in g.nx:
            return localize(g.display_name(r.key), lang)
        if r.kind == "edge" and r.key[0] in g.nx and r.key[1] in g.nx:
            return f"{localize(g.display_name(r.key[0]), lang)} → {localize(g.display_name(r.key[1]), lang)}"
        return r.name

    @staticmethod
    def _change_word(change: Change, ratio: float | None, lang: str) -> str:
        if change is Change.LOST:
            return say("ui.compare.lost", lang)
        if change is Change.ZEROED:
            return say("ui.compare.zeroed", lang)
        if change is Change.GAINED:
            return say("ui.compare.gained", lang)
        return ratio_text(ratio)

    # -- styling -----------------------------------------------------------------------
    def set_step(self, step: int | None) -> None:
        """The finished pass, restyled by the ratios (a comparison has no steps of its own)."""
        super().set_step(None)
        self._style_ratios()

    def _list_what_is_shown(self) -> None:
        super()._list_what_is_shown()
        self.kinds = []  # every box is drawn plain (see _style_ratios): the legend names no kind

    def _restyle_clamped(self) -> None:
        super()._restyle_clamped()  # (a's gradient texts, in the rooms the canvas left)
        self._style_ratios()

    def edge_change(self, e) -> Combined:
        """How the gradient along one drawn edge changed (its recorded edges taken together)."""
        rows = self.comparison.edges
        return combined(rows[m] for m in self.arrows[e].members if m in rows)

    def box_change(self, n) -> Combined:
        """How the gradient of one drawn box changed: its node's, or a group box's variables' together."""
        rows = self.comparison.nodes
        members = self.display.members.get(n)
        if members is None or n in rows:
            return combined([rows[n]] if n in rows else [])
        variables = [m for m in members if self.graph.nx.nodes[m]["kind"] == "variable" and m in rows]
        return combined(rows[m] for m in variables)

    def _style_ratios(self) -> None:
        th, lang, scale = self.theme, self.lang, self.ratio_scale
        for e, arrow in self.arrows.items():
            got = self.edge_change(e)
            label = self.edge_labels[e]
            arrow.marks = []
            if got.change is Change.NONE:
                continue  # a's own stopped or forward-only edge, styled as a's picture styles it
            room = self._rooms[e]
            if got.change in (Change.LOST, Change.ZEROED):
                arrow.color, arrow.lw, arrow.linestyle = th.shrunk, LW_STOPPED * 1.5 * th.line, LOST_DASH
                word = say("ui.compare.lost" if got.change is Change.LOST else "ui.compare.zeroed", lang)
                label.text = fonts.fit(word, room, label.size, weight="bold")
                label.color, label.style, label.weight = th.shrunk, "normal", "bold"
                continue
            colour = scale.colour(got.ratio, th)
            arrow.color, arrow.lw, arrow.linestyle = colour, LW_CARRIES * 1.3 * th.line, "-"
            word = say("ui.compare.gained", lang) if got.change is Change.GAINED else ratio_text(got.ratio)
            label.text = fonts.fit(word, room, label.size)
            label.color, label.style, label.weight = self._text_colour(colour, got), "normal", "normal"
        plain_fill, plain_edge = th.kinds["op"]
        for n, box in self.boxes.items():
            # colour says the ratio alone: every box is drawn plain unless its gradient changed
            # (no step is processed here either: no box is the active one)
            box.fc = plain_fill
            if n not in self.targets:
                box.ec, box.lw = plain_edge, LW_BOX * th.line
            got = self.box_change(n)
            grad = self.grads[n]
            if got.change is Change.NONE:
                grad.text = ""
                continue
            room, size = self._grad_rooms[n], grad.size
            if got.change in (Change.LOST, Change.ZEROED):
                word = say("ui.compare.lost" if got.change is Change.LOST else "ui.compare.zeroed", lang)
                colour = th.shrunk
            elif got.change is Change.GAINED:
                word, colour = say("ui.compare.gained", lang), th.grown
            else:
                word, colour = ratio_text(got.ratio), scale.colour(got.ratio, th)
            long = f"{word}  ({_norm_text(got.norm_a)} → {_norm_text(got.norm_b)})"
            grad.text = long if fonts.text_width(long, size) <= room else fonts.fit(word, room, size)
            grad.color = self._text_colour(colour, got)
            if got.change is not Change.SAME:  # a box whose gradient changed: outlined and tinted in its colour
                box.ec, box.lw = colour, LW_TARGET * th.line
                box.fc = mix(colour, th.background, 0.22)

    def _text_colour(self, colour: str, got: Combined) -> str:
        """Text in the ratio's colour, unless it is ×1's grey: then the theme's quieter text."""
        return self.theme.muted if got.change is Change.SAME else colour

    @property
    def changes(self) -> dict[str, list]:
        """What the picture says, for checking it: the drawn edges ``lost`` (dashed, labelled),
        ``grown``, ``shrunk`` and ``unchanged``, each a list of (edge, colour, label text)."""
        out: dict[str, list] = {"lost": [], "grown": [], "shrunk": [], "unchanged": []}
        for e, arrow in self.arrows.items():
            got = self.edge_change(e)
            if got.change is Change.NONE:
                continue
            if got.change in (Change.LOST, Change.ZEROED):
                kind = "lost"
            elif got.ratio is None or got.ratio == 1.0:
                kind = "unchanged"
            else:
                kind = "grown" if got.ratio > 1.0 else "shrunk"
            out[kind].append((e, arrow.color, self.edge_labels[e].text))
        return out


#: Keywords a Scene takes besides the options.
_SCENE_KEYWORDS = frozenset({"page", "frames", "functions", "pos", "routes"})

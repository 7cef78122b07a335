"""The compare explorer: two backward passes side by side, one step slider, the ratio picture.

``tv.explore(tv.compare(a, b))``. The widget only maps its controls to a
:class:`~tapeviz.explorer.compare_state.CompareState` and shows what the state shows
(:func:`~tapeviz.explorer.compare_state.pictures`, the ratio picture, the comparison's
table); it computes nothing.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from ..gradients.compare import Comparison
from ..messages import say
from . import compare_state as cs
from .fallback import StaticFallback
from .notebook_theme import PageTheme
from .static_files import text
from .widget import step_buttons

__all__ = ["CompareExplorer"]

#: The sides' style sheet (static/compare.css): they fit the cell, wrapped or scaled, never cut.
CSS = "<style>\n" + text("compare.css") + "</style>\n"


class CompareExplorer(StaticFallback, W.VBox):
    """a and b side by side at one step (``controls["step"]``), the ratio picture and the
    table of the largest changes under them. ``names``: what a and b are (the headings)."""

    def __init__(self, comparison: Comparison, *, names: tuple[str, str] = cs.SIDES, **options: Any):
        super().__init__()
        # theme="auto": light until the page says it is dark (PageTheme, below), as the explorer
        self.auto_theme = options.get("theme") == "auto"
        if self.auto_theme:
            options = {**options, "theme": "light"}
        self.pair = cs.ComparedPair(comparison, names)
        self.state: cs.CompareState = self.pair.initial(**options)
        lang = self.state.options.lang
        last = self.pair.last_step
        c: dict[str, W.Widget] = {}
        c["step"] = W.IntSlider(
            value=last, min=0, max=last, description=say("ui.control.step", lang), layout=W.Layout(width="420px")
        ).add_class("tv-step")
        c["prev"], c["next"] = step_buttons(lang)
        self.controls = c
        self.panes = {side: W.HTML().add_class("tv-compare") for side in cs.SIDES}
        self.ratios = W.HTML().add_class("tv-compare")
        self.table = W.HTML(Comparison._repr_html_(comparison))  # the table alone: the picture is above
        c["step"].observe(lambda ch: self._set(step=ch["new"]), names="value")
        c["prev"].on_click(lambda _: self._move(-1))
        c["next"].on_click(lambda _: self._move(1))
        self.children = [
            W.HBox([c["prev"], c["step"], c["next"]]),
            W.HBox([self.panes["a"], self.panes["b"]], layout=W.Layout(align_items="flex-start")).add_class(
                "tv-compare-sides"
            ),
            self.ratios,
            self.table,
        ]
        self.add_class("tv-compare-explorer")
        self.page_theme: PageTheme | None = None
        if self.auto_theme:
            self.page_theme = PageTheme()
            self.page_theme.observe(lambda ch: self._on_page_theme(ch["new"]), names="dark")
            self.children = [*self.children, self.page_theme]
        self._render()

    def _on_page_theme(self, dark: bool | None) -> None:
        """The page switched between light and dark: both sides and the ratio picture follow."""
        if dark is not None:
            self._set(theme="dark" if dark else "light")

    def _move(self, by: int) -> None:
        slider = self.controls["step"]
        slider.value = min(slider.max, max(slider.min, slider.value + by))

    def _set(self, **changes: Any) -> None:
        self.state = self.state.replace(**changes)
        self._render()

    def _render(self) -> None:
        state, pair, lang = self.state, self.pair, self.state.options.lang
        a, b = cs.pictures(pair, state)
        for side, svg in (("a", a), ("b", b)):
            fl = pair.comparison.a if side == "a" else pair.comparison.b
            k = cs.side_step(pair, state, side)
            heading = say("ui.compare.side", lang, name=pair.names[cs.SIDES.index(side)], k=k, n=fl.last_step)
            self.panes[side].value = f"{CSS}<div><b>{html.escape(heading)}</b></div>{svg}"
        self.ratios.value = cs.ratio_picture(pair, state)

    def close(self) -> None:
        if self.page_theme is not None:
            self.page_theme.close()
        self.pair.forget()
        super().close()

"""The explorer of a training run: ``tv.explore(hist)`` on any :class:`tv.History`.

The ``train_step`` slider scrubs every stored step (every recorded step until the series
merge, see :mod:`tapeviz.training.bounded_series`). At each step it shows:

- the run's loss with the step marked and the gradient norm of every layer at that step,
  flagged layers coloured (:mod:`tapeviz.explorer.run_panel`, SVG written directly: a move repaints
  in milliseconds);
- it opens at the first step flagged NaN / Inf, if any (:func:`opening_step`); where that
  step kept a picture, the picture marks the op where the NaN starts and the inspector says why;
- the flags raised at that step, and those raised earlier whose condition still holds
  there ("since step n"), each with its one-sentence fix, in the explorer's language;
- where the step kept a picture (recorded with a ``tv.GradientTape``, see
  ``hist.add(..., tape=...)`` and ``hist.callback``): that step's backward pass in a full
  :class:`~tapeviz.explorer.widget.Explorer` (``ex.picture``) with every control of
  ``tv.explore`` (step, clipping, lr, inspector, groups), boxes coloured by ``‖g‖/‖w‖``.

A History filled by ``hist.add(step, loss=, grads=, variables=)`` from a plain
``tf.GradientTape`` loop has no picture: the slider, the run panel and the flags work the
same, and the explorer says which steps would show a picture.
"""

from __future__ import annotations

import html

import ipywidgets as W

from ..messages import check_lang, say
from ..record.bounded_cache import BoundedCache
from ..training.history import Flag, History
from .fallback import StaticFallback
from .panels import CSS
from .run_panel import RunData, run_data, step_svg
from .state import ExplorerState, GraphTargets
from .widget import Explorer

__all__ = ["TrainingExplorer", "step_flags", "opening_step"]

TARGET = "loss"
_KEEP = 64  # SVGs of the run panel kept


def explored_step(hist: History, step: int) -> GraphTargets:
    """What the explorer shows at one training step: that step's graph and the loss's flow."""
    got = hist.picture(step)
    if got is None:
        raise ValueError(f"Step {step} kept no picture; steps with one: {hist.recorded_steps()}.")
    graph, flow = got
    return GraphTargets(graph, {TARGET: flow.target}, flow_factory=lambda _target: flow)


def step_flags(hist: History, step: int) -> list[tuple[Flag, bool]]:
    """``(flag, ongoing)`` at ``step``: the flags raised there (``ongoing=False``), then for
    every layer or variable where a condition holds but whose flag was raised earlier, that
    earlier flag (``ongoing=True``)."""
    raised = hist.flags(step=step)
    out = [(f, False) for f in raised]
    have = {(f.name, f.kind) for f in raised}
    holds = {
        (name, kind) for by in ("layer", "variable") for name, kinds in hist.flagged(step, by).items() for kind in kinds
    }
    earlier: dict[tuple[str, str], Flag] = {}
    for f in hist.flags():
        if f.step < step and (f.name, f.kind) in holds and (f.name, f.kind) not in have:
            earlier[(f.name, f.kind)] = f  # the latest onset before the step
    out += [(f, True) for f in earlier.values()]
    return out


def opening_step(hist: History, options: list[int] | None = None) -> int:
    """The training step ``tv.explore(hist)`` opens at: the first step flagged NaN / Inf
    (the first stored step from it on, where steps merged), else the latest step that kept
    a picture, else the last stored step."""
    if options is None:
        options = sorted({int(s) for s in hist.steps()} | set(hist.recorded_steps()))
    nan = hist.flags(kind="nan")
    if nan:
        start = min(f.step for f in nan)
        later = [s for s in options if s >= start]
        if later:
            return later[0]
    pictured = hist.recorded_steps()
    return pictured[-1] if pictured else options[-1]


class TrainingExplorer(StaticFallback, W.VBox):
    """``tv.explore(hist)``: ``controls["train_step"]`` scrubs the stored steps; ``run``
    shows the loss and the layers' norms at the step, ``flags_view`` its flags, and
    ``picture`` (an Explorer, or None when the run kept no picture) the step's backward
    pass where one was kept."""

    def __init__(self, hist: History, *, presenter: bool = False, lang: str = "en", **settings):
        super().__init__()
        steps = [int(s) for s in hist.steps()]
        if not steps:
            raise ValueError(
                "This tv.History has no step to explore yet: call hist.add(step, loss=loss, grads=grads, "
                "variables=model.trainable_variables) in your training loop first."
            )
        if not hist.variables():
            raise ValueError(
                "This tv.History recorded losses only: pass grads= and variables= to hist.add so each step has "
                "the layers' gradient norms to show."
            )
        self.history = hist
        self.lang = check_lang(lang)
        self.add_class("tv-explorer").add_class("tv-training")
        pictured = hist.recorded_steps()
        options = sorted(set(steps) | set(pictured))
        self.data: RunData = run_data(hist)
        self._svgs: BoundedCache[int, str] = BoundedCache(_KEEP)
        # a run that went NaN opens where it did; else at the latest picture, else the last step
        first = opening_step(hist, options)
        slider = W.SelectionSlider(
            options=options,
            value=first,
            description=say("ui.control.train_step", lang),
            continuous_update=True,
            layout=W.Layout(width="560px"),
        ).add_class("tv-train-step")
        prev = W.Button(description="◀", layout=W.Layout(width="40px")).add_class("tv-train-prev")
        nxt = W.Button(description="▶", layout=W.Layout(width="40px")).add_class("tv-train-next")
        prev.on_click(lambda _: self._nudge(-1))
        nxt.on_click(lambda _: self._nudge(+1))
        self.controls: dict[str, W.Widget] = {"train_step": slider, "train_prev": prev, "train_next": nxt}
        self.run = W.HTML(layout=W.Layout(overflow="auto")).add_class("tv-run-panel")
        self.flags_view = W.HTML().add_class("tv-flags")
        self.note = W.HTML().add_class("tv-picture-note")
        self.pictured = pictured
        self.picture: Explorer | None = None
        if pictured:
            self.picture = Explorer(
                explored_step(hist, pictured[-1]), presenter=presenter, lang=lang, **settings
            ).add_class("tv-step-picture")
        kids: list[W.Widget] = [W.HTML(CSS), W.HBox([prev, nxt, slider]), self.run, self.flags_view, self.note]
        if self.picture is not None:
            kids.append(self.picture)
        self.children = kids
        slider.observe(lambda ch: self.show_train_step(ch["new"]), names="value")
        self.show_train_step(first)

    @property
    def train_step(self) -> int:
        return self.controls["train_step"].value

    def _nudge(self, d: int) -> None:
        s = self.controls["train_step"]
        i = list(s.options).index(s.value)
        s.value = s.options[max(0, min(len(s.options) - 1, i + d))]

    def show_train_step(self, step: int) -> None:
        """Show a training step: the run panel, its flags, and its picture if it kept one
        (keeping the picture explorer's clipping, lr, language and theme)."""
        svg = self._svgs.fetch(step, lambda: step_svg(self.history, self.data, step, self.lang))
        self.run.value = svg
        self.flags_view.value = self._flags_html(step)
        self._show_picture(step)

    def _show_picture(self, step: int) -> None:
        lang = self.lang
        if step in self.pictured and self.picture is not None:
            pic = self.picture
            got = self.history.picture(step)
            if got is not None and pic.graph_targets.graph is not got[0]:
                explored = explored_step(self.history, step)
                last = explored.flow(TARGET).last_step
                state: ExplorerState = pic.state.replace(
                    target=TARGET, step=last, node=None, collapsed=None, functions=frozenset()
                )
                pic.show_graph_targets(explored, state)
            pic.layout.display = None
            self.note.value = ""
            return
        if self.picture is not None:
            self.picture.layout.display = "none"
        if self.pictured:
            shown = ", ".join(str(s) for s in self.pictured[:12]) + (" ..." if len(self.pictured) > 12 else "")
            text = say("ui.history.no_picture", lang, step=step, steps=shown)
        else:
            text = say("ui.history.norms_only", lang)
        self.note.value = f"<div class='tv-note'>{html.escape(text)}</div>"

    def _flags_html(self, step: int) -> str:
        lang = self.lang
        flags = step_flags(self.history, step)
        if not flags:
            return f"<div class='tv-note'>{html.escape(say('ui.history.no_flags', lang, step=step))}</div>"
        items = []
        for f, ongoing in flags:
            since = f" <i>{html.escape(say('ui.history.since', lang, first=f.step))}</i>" if ongoing else ""
            kind = html.escape(say(f"plot.kind.{f.kind}", lang))
            items.append(f"<li class='tv-flag-{f.kind}'><b>{kind}</b>{since} {html.escape(f.text(lang))}</li>")
        head = html.escape(say("ui.history.flags", lang, step=step))
        return f"<div class='tv-bad'>{head}</div><ul>{''.join(items)}</ul>"

    def close(self) -> None:
        """Close every widget this explorer made (and the picture explorer's)."""
        if self.picture is not None:
            self.picture.close()
        for w in [*self.controls.values(), self.run, self.flags_view, self.note, *self._boxes()]:
            for part in (getattr(w, "layout", None), getattr(w, "style", None)):
                if isinstance(part, W.Widget):
                    part.close()
            w.close()
        super().close()

    def _boxes(self) -> list:
        return [c for c in self.children if c is not self.picture]

"""The explorer of a training run: scrub the steps a tv.History kept pictures of.

``tv.explore(hist)`` opens the picture of the latest step that kept one (recorded with a
``tv.GradientTape``, see ``hist.add(..., tape=...)`` and ``hist.callback``); the
``train_step`` slider moves through those steps, and the explorer shows each one's
backward pass with every control of ``tv.explore`` (step, clipping, lr, inspector,
groups). Boxes are coloured by ``‖g‖/‖w‖`` by default, so the layer that stops learning
stands out at each step. Beside the picture: the run's gradient norms with the step
marked (``hist.plot``), and the flags raised at that step.
"""

from __future__ import annotations

import html
import io

import ipywidgets as W

from ..messages import say
from ..training.history import History
from .state import Explored, ExplorerState
from .widget import Explorer

__all__ = ["TrainingExplorer"]

TARGET = "loss"


def explored_step(hist: History, step: int) -> Explored:
    """What the explorer shows at one training step: that step's graph and the loss's flow."""
    got = hist.picture(step)
    if got is None:
        raise ValueError(f"Step {step} kept no picture; steps with one: {hist.recorded_steps()}.")
    graph, flow = got
    return Explored(graph, {TARGET: flow.target}, flow_factory=lambda _target: flow)


class TrainingExplorer(Explorer):
    """``tv.explore(hist)``: ``controls["train_step"]`` scrubs the steps that kept a picture."""

    def __init__(self, hist: History, *, presenter: bool = False, **settings):
        steps = hist.recorded_steps()
        if not steps:
            raise ValueError(
                "This tv.History kept no picture to explore: record some steps with a tv.GradientTape and pass it "
                "(hist.add(step, ..., tape=tape)), or use hist.callback(x, y) during model.fit."
            )
        self.history = hist
        super().__init__(explored_step(hist, steps[-1]), presenter=presenter, **settings)
        lang = self.state.lang
        slider = W.SelectionSlider(
            options=steps,
            value=steps[-1],
            description=say("ui.control.train_step", lang),
            continuous_update=False,
            layout=W.Layout(width="420px"),
        ).add_class("tv-train-step")
        slider.observe(lambda ch: self.show_train_step(ch["new"]), names="value")
        self.controls["train_step"] = slider
        self.flags_view = W.HTML().add_class("tv-flags")
        self.plot_view = W.HTML(layout=W.Layout(overflow="auto")).add_class("tv-history-plot")
        self._plots: dict[int, str] = {}
        kids = list(self.children)
        kids[1:1] = [slider, self.flags_view]
        if not presenter:
            kids.append(self.plot_view)
        self.children = kids
        self._show_step_info(steps[-1])

    @property
    def train_step(self) -> int:
        return self.controls["train_step"].value

    def show_train_step(self, step: int) -> None:
        """Show another training step's picture, keeping clipping, lr, language and theme."""
        explored = explored_step(self.history, step)
        last = explored.flow(TARGET).last_step
        state: ExplorerState = self.state.replace(
            target=TARGET, step=last, node=None, collapsed=None, functions=frozenset()
        )
        self.show_model(explored, state)
        self._show_step_info(step)

    def _show_step_info(self, step: int) -> None:
        lang = self.state.lang
        flags = self.history.flags(step=step)
        if flags:
            items = "".join(
                f"<li class='tv-flag-{html.escape(f.kind)}'><b>{html.escape(f.kind)}</b> "
                f"{html.escape(f.text(lang))}</li>"
                for f in flags
            )
            self.flags_view.value = (
                f"<div class='tv-bad'>{html.escape(say('ui.history.flags', lang, step=step))}</div><ul>{items}</ul>"
            )
        else:
            note = html.escape(say("ui.history.no_flags", lang, step=step))
            self.flags_view.value = f"<div class='tv-note'>{note}</div>"
        self.plot_view.value = self._plot(step)

    def _plot(self, step: int) -> str:
        """The run's plot (hist.plot) with this step marked, as SVG; kept per step."""
        if step not in self._plots:
            fig = self.history.plot()
            for ax in fig.axes:
                ax.axvline(step, color=self.model.view(self.state).scene.theme.active, lw=1.5, ls=":")
            buf = io.StringIO()
            fig.savefig(buf, format="svg")
            svg = buf.getvalue()
            self._plots[step] = svg[svg.find("<svg") :]
            if len(self._plots) > 32:
                self._plots.pop(next(iter(self._plots)))
        return self._plots[step]

"""tv.interact: move a function's inputs with sliders and watch the gradient follow.

``tv.interact(f, x=(-3.0, 3.0, 0.1))`` calls ``f`` with one ``tf.Variable`` per input
under a tapeviz tape, and shows the explorer of that run (every control of tv.explore)
plus one slider per input and a slope plot: the target against one input over its
range, with the tangent at the current point. The inputs are read as
``ipywidgets.interact`` reads them (``(min, max[, step])``, the start from ``f``'s
default, a ready slider, ``fixed(value)`` for a constant), by ipywidgets itself. Each
slider move calls ``f`` again through TensorFlow; nothing is interpolated or computed by
tapeviz itself.

This module holds the widgets: each input's slider (:func:`input_widget`) and
:class:`Interact`, an :class:`~tapeviz.explorer.widget.Explorer` whose model is replaced by
each run's GraphTargets, while the explorer's state (target, step, clipping, groups, inspected
node) carries over. It only maps its sliders to runs, and the runs to states; calling the
function is the runner's job (:mod:`tapeviz.explorer.whatif_runner`).

When a Python branch in the function (``if x > 0``) records other ops, the shape
changes: the boxes are laid out again and the explorer says so, and what changed. When
the function raises or returns no tensor, the explorer says why and keeps the last
picture that worked. At construction there is no last picture: a bad input or a first
call that fails raises (ValueError, or TypeError for a wrong type).
"""

from __future__ import annotations

import html
import inspect
import math
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import ipywidgets as W
import numpy as np

from ..messages import say
from ..picture.options import Options
from ..picture.themes import THEMES
from ..record.tape import GradientTape
from ..record.values import format_value
from .slope_plot import Slope, caption_lines, slope_figure, slope_svg
from .whatif_runner import (
    FunctionRun,
    InputRange,
    InteractError,
    Runner,
    carry_state,
    error_text,
    shape_change,
    short_number,
    total,
)
from .widget import Explorer

__all__ = ["input_widget", "range_of", "Interact", "interact"]

# --------------------------------------------------------------------------- ranges


#: Ready widgets an input may be: a number with a range in the number's own units (a
#: FloatLogSlider's min and max are exponents; a FloatText has no range for the slope plot).
NUMBER_WIDGETS = (W.FloatSlider, W.IntSlider, W.BoundedFloatText, W.BoundedIntText)


def _example(name: str) -> str:
    return f"{name}=(-3.0, 3.0, 0.1)"


def input_widget(name: str, abbrev: Any, default: Any = inspect.Parameter.empty) -> W.ValueWidget | W.fixed:
    """The control ``ipywidgets.interact`` makes for ``name=abbrev``, made by ipywidgets
    itself (``interactive.widget_from_abbrev``): ``(min, max[, step])`` is a FloatSlider, or
    an IntSlider when all are ints, starting at the function's default for that parameter
    (clipped into the range), else at the middle; a ready widget and ``fixed(value)`` are
    taken as they are; a bare number is a slider around it. tapeviz differentiates its
    inputs, so anything other than a number slider is refused with the fix."""
    if isinstance(abbrev, (W.fixed, *NUMBER_WIDGETS)):
        return abbrev
    if isinstance(abbrev, W.Widget):
        raise TypeError(
            f"{name}: a {type(abbrev).__name__} cannot be an input: tv.interact differentiates its inputs, so "
            f"each is a number with a range (FloatSlider, IntSlider, BoundedFloatText, BoundedIntText), "
            f"e.g. {_example(name)}; pass a value that is not differentiated as {name}=fixed(value)."
        )
    if isinstance(abbrev, list) and 2 <= len(abbrev) <= 3:
        raise TypeError(
            f"{name}={abbrev!r}: give the range as a tuple, e.g. {_example(name)} "
            "(ipywidgets reads a list as menu options)."
        )
    if isinstance(abbrev, tuple):
        _check_tuple(name, abbrev)
    elif isinstance(abbrev, bool) or not isinstance(abbrev, (int, float, np.integer, np.floating)):
        raise TypeError(
            f"{name}={abbrev!r}: an input is a range (min, max[, step]) such as {_example(name)}, a number, or a "
            f"ready slider; pass a value that is not differentiated as {name}=fixed(value)."
        )
    elif not math.isfinite(abbrev):
        raise ValueError(f"{name}={abbrev}: an input must be a finite number.")
    return W.interactive.widget_from_abbrev(abbrev, default)


def _check_tuple(name: str, spec: tuple) -> None:
    """The errors ipywidgets would give a bad range, said with the cause and the fix."""
    if not 2 <= len(spec) <= 3:
        raise TypeError(f"{name}={spec!r}: give the input's range as (min, max[, step]), e.g. {_example(name)}.")
    for part, v in zip(("min", "max", "step"), spec, strict=False):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name}: {part} must be a number, got {type(v).__name__} ({v!r}); e.g. {_example(name)}.")
        if not math.isfinite(v):
            raise ValueError(f"{name}: {part} must be a finite number, got {v}.")
    lo, hi = spec[0], spec[1]
    if lo >= hi:
        raise ValueError(
            f"{name}=({short_number(lo)}, {short_number(hi)}, ...): the range is empty, min must be below max; "
            f"e.g. {name}=({short_number(min(lo, hi))}, {short_number(max(lo, hi) if lo != hi else lo + 1)})."
        )
    if len(spec) == 3 and not 0 < spec[2] <= hi - lo:
        raise ValueError(
            f"{name}: step {short_number(spec[2])} must be positive and at most the range's width "
            f"({short_number(hi - lo)})."
        )


def range_of(name: str, widget: W.ValueWidget) -> InputRange:
    """What the runner and the slope plot need of an input's widget."""
    step = float(getattr(widget, "step", None) or (widget.max - widget.min) / 100)
    return InputRange(name, float(widget.min), float(widget.max), float(widget.value), step)


# --------------------------------------------------------------------------- the widget


_CSS = """
<style>
.tv-status { font-size: 13px; margin: 2px 0 2px 4px; }
.tv-notice { font-size: 12px; margin: 0 0 2px 4px; }
.tv-notice .tv-info { color: #1d4ed8; }
.tv-slope-caption { font-size: 11px; line-height: 1.35; color: #475569; max-width: 340px; }
</style>
"""


class Interact(Explorer):
    """The explorer of a function's run, with one slider per input and a live slope plot.

    ``ex.inputs[name]`` is an input's slider, apart from the explorer's own controls
    (``ex.controls``: every control of tv.explore, plus the slope plot's input menu), so an
    input may take any name. ``ex.values`` holds the inputs the picture shows (the last call that worked),
    ``ex.tape`` that call's tape, ``ex.gradients()`` its gradients per input."""

    def __init__(
        self,
        runner: Runner,
        first: FunctionRun,
        widgets: Mapping[str, W.ValueWidget],
        *,
        presenter: bool = False,
        **settings,
    ):
        super().__init__(first.explored, presenter=presenter, **settings)
        self.runner = runner
        self.run = first
        self._curves: OrderedDict = OrderedDict()
        lang = self.state.lang
        self.inputs: dict[str, W.ValueWidget] = dict(widgets)
        c = self.controls = _Controls(self.controls, self.inputs)
        sliders = []
        for name, s in widgets.items():
            if not s.description:  # as ipywidgets.interact labels its controls
                s.description = name
            s.add_class("tv-input").add_class(f"tv-input-{name}")
            s.observe(partial(self._on_input, name), names="value")
            s.observe(partial(self._on_range, name), names=["min", "max"])
            sliders.append(s)
        self.status = W.HTML().add_class("tv-status")
        self.notice = W.HTML().add_class("tv-notice")
        self.slope_view = W.HTML().add_class("tv-slope")
        inputs = [*sliders, self.status]
        if len(runner.ranges) > 1:
            c["slope"] = W.Dropdown(
                options=list(runner.ranges),
                value=next(iter(runner.ranges)),
                description=say("ui.control.slope", lang),
                layout=W.Layout(width="240px"),
            ).add_class("tv-slope-input")
            c["slope"].observe(lambda _: self._show_slope(), names="value")
            inputs.append(c["slope"])
        # Sliders and the slope plot side by side above the picture (the plot wraps under the
        # sliders in a narrow cell); the picture keeps the full width below, as in tv.explore.
        top = W.HBox(
            [W.VBox(inputs, layout=W.Layout(margin="0 16px 0 0")), self.slope_view],
            layout=W.Layout(flex_flow="row wrap", align_items="flex-start"),
        )
        kids = list(self.children)
        kids[1:1] = [W.HTML(_CSS), top, self.notice]
        self.children = kids
        self._show_inputs()
        self._show_slope()

    # -- what the picture shows ----------------------------------------------------------
    @property
    def values(self) -> dict[str, float]:
        """The input values the picture shows (those of the last call that worked)."""
        return dict(self.run.values)

    @property
    def tape(self) -> GradientTape:
        """The tv.GradientTape of the call the picture shows."""
        return self.run.tape

    def gradients(self, clipped: bool = True) -> dict[str, np.ndarray | None]:
        """{input name: gradient} at the values the picture shows (TF's clip functions when
        clipped), plus any other variable the function read, under its own name."""
        by_graph_name = super().gradients(clipped)
        g = self.graph_targets.graph
        out: dict[str, np.ndarray | None] = {}
        own = set()
        for name, var in self.runner.variables.items():
            node = g.node_of(var)
            graph_name = g.nx.nodes[node]["name"] if node is not None else None
            own.add(graph_name)
            out[name] = by_graph_name.get(graph_name) if graph_name is not None else None
        for k, v in by_graph_name.items():
            if k not in own:
                out.setdefault(k, v)
        return out

    def slope(self, name: str) -> Slope:
        """The slope plot's data for input ``name``: the current target against it over its
        range (other inputs fixed), the current point, and TF's gradient as the slope."""
        if name not in self.runner.ranges:
            raise ValueError(f"No input named {name!r}; the inputs are: {', '.join(self.runner.ranges)}.")
        run, target = self.run, self.state.target
        r = self.runner.ranges[name]
        fixed = {k: v for k, v in run.values.items() if k != name}
        t = run.targets[target]
        key = (name, target, r.min, r.max, tuple(fixed.items()))
        curve = self._curves.get(key)
        if curve is None:
            curve = self._curves[key] = self.runner.sample(name, target, run.values, at=(run.values[name], total(t)))
            if len(self._curves) > 32:
                self._curves.popitem(last=False)
        xs, ys, failed = curve
        fl, var = run.flow(target), self.runner.variables[name]
        g = fl.grad(var)
        reason = None
        if g is None:
            why = fl.why_none(var)
            reason = why.reason.value if why is not None else "None"
        return Slope(
            input=name,
            target=target,
            xs=xs,
            ys=ys,
            x0=run.values[name],
            y0=total(t),
            slope=None if g is None else float(np.asarray(g)),
            reason=reason,
            shape=tuple(t.shape),
            fixed=fixed,
            failed=failed,
        )

    def slope_figure(self, name: str | None = None):
        """A matplotlib Figure of the current target against input ``name`` (default: the
        one the live plot shows) with the tangent whose slope is TF's gradient."""
        return slope_figure(self.slope(name or self._slope_input()), lang=self.state.lang, theme=self.state.theme)

    def set_range(self, name: str, min: float, max: float, step: float | None = None) -> None:
        """Give input ``name`` a new range (and step). A bad range is refused with a
        ValueError, also shown in the explorer; the picture stays."""
        if name not in self.runner.ranges:
            raise ValueError(f"No input named {name!r}; the inputs are: {', '.join(self.runner.ranges)}.")
        s = self.inputs[name]
        try:
            _check_tuple(name, (min, max) if step is None else (min, max, step))
        except (TypeError, ValueError) as e:
            self._fail(str(e))
            raise
        with self._quiet():
            if min > s.max:
                s.max, s.min = max, min
            else:
                s.min, s.max = min, max
            if step is not None and hasattr(s, "step"):
                s.step = step
        self.runner.ranges[name] = range_of(name, s)
        self._rerun(name)

    # -- sliders -> runs -> states ---------------------------------------------------------
    def _on_input(self, name: str, _change) -> None:
        if not self._muted:
            self._rerun(name)

    def _on_range(self, name: str, _change) -> None:
        if self._muted:
            return
        s = self.inputs[name]
        if s.min < s.max:
            self.runner.ranges[name] = range_of(name, s)
        self._rerun(name)

    def _rerun(self, moved: str) -> None:
        """Call the function at the sliders' values; show the new run, or say why not."""
        c, lang = self.inputs, self.state.lang
        for name in self.runner.ranges:
            if c[name].min >= c[name].max:
                self._fail(
                    say(
                        "ui.interact.empty_range",
                        lang,
                        name=name,
                        lo=short_number(c[name].min),
                        hi=short_number(c[name].max),
                    )
                )
                return
        try:
            run = self.runner.run({name: c[name].value for name in self.runner.ranges}, self.state.target)
        except InteractError as e:
            self._fail(e.say(lang))
            return
        self._load(run, moved)

    def _load(self, run: FunctionRun, moved: str) -> None:
        old = self.run
        state = carry_state(self.state, old, run)
        notice = ""
        if run.shape(state.target) != old.shape(state.target):
            where = f"{moved} = {short_number(run.values[moved])}"
            notice = say(
                "ui.interact.changed",
                state.lang,
                where=where,
                what=shape_change(old, run, state.target, state.lang),
                fn=self.runner.fn_name,
            )
        self.run = run
        self.show_graph_targets(run.explored, state)  # the picture first, then the panel and the controls
        self.notice.value = f"<span class='tv-info'>{html.escape(notice)}</span>" if notice else ""
        self._show_inputs()
        self._show_slope()

    def _fail(self, text: str) -> None:
        """Say why there is no new picture; the last one stays."""
        good = ", ".join(f"{k} = {short_number(v)}" for k, v in self.run.values.items())
        kept = say("ui.interact.kept", self.state.lang, good=good)
        self.notice.value = f"<span class='tv-bad'>{html.escape(text)} {html.escape(kept)}</span>"

    def _on_target(self, target: str) -> None:
        try:  # computed now (a move computes only the shown target's backward pass)
            self.run.flow(target)
        except Exception as e:  # noqa: BLE001 - said in the explorer, the menu goes back
            self._fail(
                say(
                    "ui.interact.raised",
                    self.state.lang,
                    call=self.runner.call_text(self.run.values),
                    error=error_text(e),
                    fn=self.runner.fn_name,
                )
            )
            with self._quiet():
                self.controls["target"].value = self.state.target
            return
        super()._on_target(target)
        self._show_inputs()
        self._show_slope()

    # -- state -> what is shown ----------------------------------------------------------
    def _slope_input(self) -> str:
        c = self.controls
        return c["slope"].value if "slope" in c else next(iter(self.runner.ranges))

    def _show_inputs(self) -> None:
        run, target = self.run, self.state.target
        value = format_value(run.targets[target].numpy())
        self.status.value = (
            f"<code>{html.escape(self.runner.call_text(run.values))}</code> → "
            f"{html.escape(target)} = <b>{html.escape(value)}</b>"
        )

    def _show_slope(self) -> None:
        s = self.slope(self._slope_input())
        lang = self.state.lang
        theme = self.state.theme if self.state.theme in THEMES else "light"
        caption = "<br>".join(html.escape(line) for line in caption_lines(s, lang))
        view = f"{slope_svg(s, lang=lang, theme=theme)}<div class='tv-slope-caption'>{caption}</div>"
        if self.slope_view.value != view:
            self.slope_view.value = view


class _Controls(dict):
    """An Interact's ``controls``: the explorer's own. An input's slider asked for here by
    its name, as tapeviz 0.1 kept it, is found in ``inputs`` with a DeprecationWarning (an
    input named like a control, ``step``, is only in ``inputs``)."""

    def __init__(self, controls: Mapping[str, W.Widget], inputs: Mapping[str, W.ValueWidget]):
        super().__init__(controls)
        self._inputs = inputs

    def __missing__(self, name: str) -> W.Widget:
        if name not in self._inputs:
            raise KeyError(name)
        warnings.warn(
            f"ex.controls[{name!r}] for an input's slider is deprecated in tapeviz and goes in the next release; "
            f"write ex.inputs[{name!r}].",
            DeprecationWarning,
            stacklevel=2,
        )
        return self._inputs[name]


# --------------------------------------------------------------------------- entry point


def interact(
    fn: Callable, inputs: Mapping[str, Any], options: Options, *, presenter: bool = False, **settings: Any
) -> Interact:
    """Build the Interact explorer (see tv.interact); errors before the first picture raise.
    ``settings``: the explorer's other opening state (its clipping)."""
    if not callable(fn):
        raise TypeError(
            f"tv.interact needs a function first, got {type(fn).__name__}: tv.interact(f, x=(-3.0, 3.0, 0.1))."
        )
    try:
        params: Mapping[str, inspect.Parameter] = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # no signature to read (some builtins): the first call will tell
        params = {}
    defaults = {n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty}
    inputs = dict(inputs)
    for n, d in defaults.items():  # as ipywidgets.interact: a parameter with a number as default is a slider too
        if n not in inputs and isinstance(d, (int, float)) and not isinstance(d, bool):
            inputs[n] = d
    made = {n: input_widget(n, a, defaults.get(n, inspect.Parameter.empty)) for n, a in inputs.items()}
    widgets = {n: w for n, w in made.items() if not isinstance(w, W.fixed)}
    constants = {n: w.value for n, w in made.items() if isinstance(w, W.fixed)}
    if not widgets:
        raise ValueError(
            "tv.interact needs at least one input with its range, e.g. tv.interact(f, x=(-3.0, 3.0, 0.1)), "
            "or a parameter with a number as its default (def f(x=1.0): ...)."
        )
    if params:
        try:
            inspect.signature(fn).bind(**made)
        except TypeError as e:
            name = getattr(fn, "__name__", "fn")
            raise TypeError(
                f"{name} cannot be called with the inputs {', '.join(made)}: {e}. Give one range per "
                f"parameter of {name}, named like the parameter."
            ) from None
    for n, w in widgets.items():
        if not isinstance(inputs[n], W.Widget):  # a slider made here: tapeviz's look, ipywidgets' numbers
            w.continuous_update = True
            w.layout = W.Layout(width="360px")
            if isinstance(w, W.FloatSlider):
                w.readout_format = f".{range_of(n, w).decimals}f"
    runner = Runner(fn, {n: range_of(n, w) for n, w in widgets.items()}, constants)
    first = runner.run({n: w.value for n, w in widgets.items()})
    return Interact(runner, first, widgets, presenter=presenter, **settings, **options.keywords())

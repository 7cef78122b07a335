"""tv.interact: move a function's inputs with sliders and watch the gradient follow.

``tv.interact(f, x=(-3.0, 3.0, 0.1))`` calls ``f`` with one ``tf.Variable`` per input
under a tapeviz tape, and shows the explorer of that run (every control of tv.explore)
plus one slider per input and a slope plot: the target against one input over its
range, with the tangent at the current point. The inputs are read as
``ipywidgets.interact`` reads them (``(min, max[, step])``, the start from ``f``'s
default, a ready slider, ``fixed(value)`` for a constant), by ipywidgets itself. Each
slider move calls ``f`` again through TensorFlow; nothing is interpolated or computed by
tapeviz itself.

Three parts, one job each:

- :class:`Runner` calls the function: at given input values, under a tapeviz tape,
  checking what it returns, and (for the slope plot) at sample points with no tape.
- :class:`Run` is what one call gave: tape, targets, flows, the :class:`GraphTargets` the
  explorer's pure state functions work on, and the graph's *shape* (what decides the
  layout). Two runs of one shape draw their boxes in the same places, because the layout
  is a deterministic function of the graph's structure and insertion order.
- :class:`Interact` is the widget: an :class:`~tapeviz.explorer.widget.Explorer` whose model is
  replaced by each run's GraphTargets, while the explorer's state (target, step, clipping,
  groups, inspected node) carries over (:func:`carry_state`). It only maps its sliders
  to runs, and the runs to states.

When a Python branch in the function (``if x > 0``) records other ops, the shape
changes: the boxes are laid out again and the explorer says so, and what changed. When
the function raises or returns no tensor, the explorer says why and keeps the last
picture that worked. At construction there is no last picture: a bad input or a first
call that fails raises (ValueError, or TypeError for a wrong type).
"""

from __future__ import annotations

import html
import inspect
import keyword
import math
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import ipywidgets as W
import numpy as np
import tensorflow as tf

from ..gradients.flow import GradientFlow, flow_over
from ..messages import DEFAULT, say
from ..picture.options import Options
from ..picture.themes import THEMES
from ..record.graph import TapeGraph
from ..record.tape import GradientTape, graph_of
from ..record.values import format_value
from .slope_plot import Slope, caption_lines, slope_figure, slope_svg
from .state import ExplorerState, GraphTargets
from .widget import Explorer

__all__ = [
    "InputRange",
    "input_widget",
    "range_of",
    "Runner",
    "Run",
    "InteractError",
    "CallFailed",
    "ReturnTypeError",
    "carry_state",
    "shape_of",
    "shape_change",
    "Interact",
    "interact",
    "SAMPLES",
]

#: Points at which the slope plot's curve is evaluated (one call of the function each).
SAMPLES = 61
#: Control names the explorer already uses: an input cannot take one of them.
RESERVED = frozenset(
    {
        "step",
        "play",
        "prev",
        "next",
        "target",
        "clip",
        "clip_norm",
        "clip_value",
        "lr",
        "node",
        "show_all",
        "layers",
        "slope",
    }
)


def _num(v: float) -> str:
    return f"{float(v):.4g}"


# --------------------------------------------------------------------------- ranges


@dataclass(frozen=True)
class InputRange:
    """One input's slider: its range, where it starts and its step."""

    name: str
    min: float
    max: float
    start: float
    step: float

    @property
    def decimals(self) -> int:
        """Digits the readout needs to show a step."""
        return max(0, min(6, -math.floor(math.log10(self.step) + 1e-9)))


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
            f"{name}=({_num(lo)}, {_num(hi)}, ...): the range is empty, min must be below max; "
            f"e.g. {name}=({_num(min(lo, hi))}, {_num(max(lo, hi) if lo != hi else lo + 1)})."
        )
    if len(spec) == 3 and not 0 < spec[2] <= hi - lo:
        raise ValueError(
            f"{name}: step {_num(spec[2])} must be positive and at most the range's width ({_num(hi - lo)})."
        )


def range_of(name: str, widget: W.ValueWidget) -> InputRange:
    """What the runner and the slope plot need of an input's widget."""
    step = float(getattr(widget, "step", None) or (widget.max - widget.min) / 100)
    return InputRange(name, float(widget.min), float(widget.max), float(widget.value), step)


# --------------------------------------------------------------------------- calling the function


class InteractError(Exception):
    """The function could not give a picture at some input values. ``key`` and ``facts``
    say why in any language (:meth:`say`); ``str()`` is the English sentence."""

    def __init__(self, key: str, **facts: Any):
        self.key, self.facts = key, facts
        super().__init__(say(key, DEFAULT, **facts))

    def say(self, lang: str) -> str:
        return say(self.key, lang, **self.facts)


class CallFailed(InteractError, ValueError):
    """The function raised (or TensorFlow could not run the backward pass of its result)."""


class ReturnTypeError(InteractError, TypeError):
    """The function returned something other than a tensor or a dict of tensors."""


def _describe(v: Any) -> str:
    """How an error names a value that is not a tensor."""
    if v is None:
        return "None (is a `return` missing?)"
    if isinstance(v, tf.Variable):
        return f"the tf.Variable {v.name.split(':')[0]} itself (return a tensor computed from it, e.g. tf.identity(x))"
    if isinstance(v, (int, float, np.ndarray, np.generic)):
        kind = f"numpy.{type(v).__name__}" if isinstance(v, (np.ndarray, np.generic)) else type(v).__name__
        # str, not repr: NumPy 2's repr of a scalar is "np.float32(1.0)"
        shown = np.array2string(v, threshold=6) if isinstance(v, np.ndarray) else str(v)
        return f"{_a(kind)} ({shown:.40}), computed outside TensorFlow, where the tape cannot trace it"
    return _a(type(v).__name__)


def _a(noun: str) -> str:
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


# The tape's block runs in a namespace of its own: tapeviz names tensors and variables after
# the Python names bound in the block's frame, so each input is bound to its keyword and each
# target to its name there (names starting with "_" are not used as names).
_BLOCK = compile("with _tape:\n    _targets = _check(_fn(**_args), _ns)\n", "<tapeviz.explorer.whatif>", "exec")


class Run:
    """One call of the function at some input values, and what the explorer needs of it:
    the tape, the targets, each target's backward pass (computed when first asked for:
    a move computes only the shown target's), the GraphTargets of the explorer's states."""

    def __init__(self, values: dict[str, float], tape: GradientTape, targets: dict[str, tf.Tensor]):
        self.values = values  # the input values of this call
        self.tape = tape
        self.targets = targets  # name -> target tensor, in the order the function returned them
        self.nodes = list(tape.graph.nx.nodes)  # insertion order: runs of one shape match node for node
        self._flows: dict[str, GradientFlow] = {}
        self._shapes: dict[str, tuple] = {}
        by_id = {id(t): name for name, t in targets.items()}
        self.explored = GraphTargets(tape.graph, targets, flow_factory=lambda t: self.flow(by_id[id(t)]))

    @property
    def graph(self) -> TapeGraph:
        return self.explored.graph

    def flow(self, target: str) -> GradientFlow:
        """The backward pass of one target (tv.flow; raises what it raises)."""
        fl = self._flows.get(target)
        if fl is None:
            fl = self._flows[target] = flow_over(graph_of(self.tape), self.targets[target])
        return fl

    def shape(self, target: str) -> tuple:
        """What decides the layout of this target's picture (see shape_of)."""
        if target not in self._shapes:
            self._shapes[target] = shape_of(self.graph, self.flow(target))
        return self._shapes[target]


class Runner:
    """Calls ``fn`` with one tf.Variable per input, under a tapeviz tape or (for the slope
    plot's samples) with no tape at all."""

    def __init__(self, fn: Callable, ranges: Mapping[str, InputRange], constants: Mapping[str, Any] | None = None):
        self.fn = fn
        self.ranges = dict(ranges)
        self.constants = dict(constants or {})  # fixed(...) arguments: passed as they are, never differentiated
        name = getattr(fn, "__name__", "")
        self.fn_name = name if name.isidentifier() else "fn"
        # the target's name when fn returns one tensor: the function's own name (def z(x, y): ...)
        # ("target" is a reserved input name, so one of the three is always free)
        self.single = next(n for n in (name, "y", "target") if self._bindable(n))
        self.variables = {n: tf.Variable(r.start, dtype=tf.float32, name=n) for n, r in self.ranges.items()}
        self._probes: dict[str, tf.Variable] | None = None
        # (input, target) -> tf.function of the curve; False: fn does not trace
        self._traced: dict | Literal[False] = {}
        self.target_names: list[str] | None = None  # fixed by the first call that works

    def _bindable(self, name: str) -> bool:
        return (
            name.isidentifier()
            and not keyword.iskeyword(name)
            and not name.startswith("_")
            and name not in self.ranges
            and name not in self.constants
        )

    def call_text(self, values: Mapping[str, float]) -> str:
        """``f(x=2, w=1.5)``: how messages name one call."""
        return f"{self.fn_name}({', '.join(f'{k}={_num(v)}' for k, v in values.items())})"

    # -- under the tape ------------------------------------------------------------------
    def run(self, values: Mapping[str, float], target: str | None = None) -> Run:
        """Call fn at ``values`` under a tv.GradientTape and compute the flow of ``target``
        (default: the first). Raises CallFailed or ReturnTypeError (with the cause and the fix)."""
        # 12 significant digits: a slider stepped in the browser adds float noise
        # (2.000000000000001); the float32 variable holds 7 digits anyway.
        values = {n: float(f"{float(values[n]):.12g}") for n in self.ranges}
        for n, v in values.items():
            self.variables[n].assign(v)
        call = self.call_text(values)
        tape = GradientTape()
        ns: dict[str, Any] = {
            "_tape": tape,
            "_fn": self.fn,
            "_args": {**self.constants, **self.variables},
            "_check": partial(self._check, call),
            **self.variables,
        }
        ns["_ns"] = ns
        try:
            exec(_BLOCK, ns)
        except InteractError:
            raise
        except Exception as e:  # whatever fn raises is reported, never re-raised in a callback
            raise CallFailed("ui.interact.raised", call=call, error=_error_text(e), fn=self.fn_name) from e
        targets: dict[str, tf.Tensor] = ns["_targets"]
        try:
            run = Run(values, tape, targets)
            run.flow(target or next(iter(targets)))
        except Exception as e:  # e.g. a target not computed from anything on the tape
            raise CallFailed("ui.interact.raised", call=call, error=_error_text(e), fn=self.fn_name) from e
        if self.target_names is None:
            self.target_names = list(targets)
        return run

    def _check(self, call: str, out: Any, ns: dict) -> dict[str, tf.Tensor]:
        """{name: tensor} of what fn returned (a tensor or a dict of them), each bound to its
        name in the block's namespace; a clear ReturnTypeError otherwise."""
        if isinstance(out, Mapping):
            if not out:
                raise ReturnTypeError("ui.interact.returned", call=call, got="an empty dict")
            named = {}
            for k, v in out.items():
                if not isinstance(v, tf.Tensor):
                    raise ReturnTypeError(
                        "ui.interact.returned", call=call, got=f"a dict whose {k!r} is {_describe(v)}"
                    )
                named[str(k)] = v
        elif isinstance(out, tf.Tensor):
            named = {self.single: out}
        else:
            raise ReturnTypeError("ui.interact.returned", call=call, got=_describe(out))
        if self.target_names is not None and list(named) != self.target_names:
            raise ReturnTypeError("ui.interact.renamed", call=call, got=str(list(named)), first=str(self.target_names))
        for name, t in named.items():
            if self._bindable(name):
                ns[name] = t
        return named

    # -- no tape: the slope plot's samples ------------------------------------------------
    def sample(
        self,
        name: str,
        target: str,
        values: Mapping[str, float],
        at: tuple[float, float] | None = None,
        n: int = SAMPLES,
    ):
        """(xs, ys, failed): the target (summed if not a scalar) at ``n`` points over input
        ``name``'s range, the other inputs at ``values``, with variables of its own (the
        explorer's stay as they are).

        Each point is one call of fn, through a tf.function of it when fn can be traced
        (a few hundred microseconds a point instead of milliseconds for a dozen eager ops)
        and gives there, at ``at`` = (x0, y0), the value the eager run gave; else eagerly."""
        if self._probes is None:
            self._probes = {k: tf.Variable(v.start, dtype=tf.float32, name=k) for k, v in self.ranges.items()}
        probes = self._probes
        for k, v in values.items():
            probes[k].assign(v)
        r = self.ranges[name]
        xs = np.linspace(r.min, r.max, n)
        if self._traced is not False and at is not None:
            ys = self._sample_traced(self._traced, probes, name, target, xs, at)
            if ys is not None:
                return xs, ys, 0
        ys = np.full(n, np.nan)
        failed = 0
        for i, x in enumerate(xs):
            probes[name].assign(x)
            try:
                out = self.fn(**self.constants, **probes)
                t = out[target] if isinstance(out, Mapping) else out
                ys[i] = total(t)
            except Exception:  # noqa: BLE001 - a point where fn fails is a gap in the curve, and is counted
                failed += 1
        return xs, ys, failed

    def _sample_traced(
        self,
        traced: dict,
        probes: dict[str, tf.Variable],
        name: str,
        target: str,
        xs: np.ndarray,
        at: tuple[float, float],
    ) -> np.ndarray | None:
        """The curve from one call of a tf.function that loops over the points in the graph,
        or None (and never again for this runner) when fn cannot be traced or the traced
        function disagrees with the eager run at the current point."""
        try:
            curve = traced.get((name, target))
            if curve is None:
                curve = traced[(name, target)] = self._curve_function(probes, name, target)
            ys = curve(tf.constant(np.append(xs, at[0]), dtype=tf.float32)).numpy()
            if not np.isclose(ys[-1], at[1], rtol=1e-5, atol=1e-6, equal_nan=True):
                raise ValueError(f"traced {ys[-1]} != eager {at[1]}")
            return ys[:-1]
        except Exception:  # noqa: BLE001 - not traceable (x.numpy(), Python branches on values, ...)
            self._traced = False
            return None

    def _curve_function(self, probes: dict[str, tf.Variable], name: str, target: str) -> Callable:
        """tf.function(xs) -> the target (summed) at each x: the loop runs inside the graph,
        assigning the probe variable and calling fn at each point."""
        fn, single, constants = self.fn, self.single, self.constants
        probe = probes[name]

        @tf.function(autograph=True)
        def curve(xs):
            n = tf.shape(xs)[0]
            ys = tf.TensorArray(tf.float64, size=n)
            for i in tf.range(n):
                probe.assign(xs[i])
                out = fn(**constants, **probes)
                t = out[target] if isinstance(out, Mapping) else out if target == single else None
                ys = ys.write(i, tf.cast(tf.reduce_sum(t), tf.float64))
            return ys.stack()

        return curve


def total(t: tf.Tensor) -> float:
    """A target as one number: itself if a scalar, else its sum (computed by TF), which is
    what TF differentiates for a non-scalar target."""
    return float(tf.reduce_sum(t).numpy()) if t.shape.rank else float(t.numpy())


def _error_text(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(e).__name__}: {first}" if first else type(e).__name__


# --------------------------------------------------------------------------- shapes and states


def shape_of(graph: TapeGraph, flow: GradientFlow) -> tuple:
    """What decides the layout of a target's picture: the recorded nodes (kind, op type,
    name, scope) in insertion order, the edges between them, the target and where its
    gradient stops. Values are left out: moving an input changes them and nothing else."""
    g = graph.nx
    index = {n: i for i, n in enumerate(g.nodes)}
    nodes = tuple(
        (
            d["kind"],
            d.get("op_type"),
            d.get("name") if d["kind"] == "variable" else None,
            d.get("scope"),
            d.get("recorded"),
        )
        for _, d in g.nodes(data=True)
    )
    edges = tuple((index[u], index[v], k, d["kind"]) for u, v, k, d in g.edges(keys=True, data=True))
    stops = (
        tuple(sorted((index[u], index[v], k, r.reason.value) for (u, v, k), r in flow.edge_reason.items())),
        tuple(sorted((index[n], r.reason.value) for n, r in flow.node_reason.items())),
        tuple(index[n] for n in flow.target_nodes),
    )
    return nodes, edges, stops


def shape_change(old: Run, new: Run, target: str, lang: str = DEFAULT) -> str:
    """What differs between two shapes, in words: ops added and gone, else rewiring, else
    where the gradient stops."""

    def ops(run: Run) -> Counter:
        return Counter(d["op_type"] for _, d in run.graph.nx.nodes(data=True) if d["kind"] == "op")

    before, after = ops(old), ops(new)
    added, removed = after - before, before - after
    if added or removed:

        def names(c: Counter) -> str:
            return ", ".join(f"{op} ×{k}" if k > 1 else op for op, k in sorted(c.items()))

        return say("ui.interact.ops", lang, added=names(added), removed=names(removed))
    if old.shape(target)[:2] != new.shape(target)[:2]:
        return say("ui.interact.rewired", lang)
    return say("ui.interact.stops", lang)


def carry_state(state: ExplorerState, old: Run, new: Run) -> ExplorerState:
    """The explorer's state for a new run: same target, clipping, lr, language and theme; the
    step clamped to the new pass (or the finished pass, if it was showing the finished one);
    groups and the inspected node kept while the shape is the same (nodes matched by
    insertion order), the picture's defaults when it changed."""
    fl_old, fl_new = old.flow(state.target), new.flow(state.target)
    step = fl_old.check_step(state.step)
    step = fl_new.last_step if step >= fl_old.last_step else min(step, fl_new.last_step)
    if new.shape(state.target) == old.shape(state.target):
        same = dict(zip(old.nodes, new.nodes, strict=True))
        return state.replace(
            step=step, node=same.get(state.node), functions=frozenset(same[f] for f in state.functions if f in same)
        )
    return state.replace(step=step, node=None, collapsed=None, functions=frozenset())


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

    ``ex.controls[name]`` is an input's slider; every control of the explorer is there
    too. ``ex.values`` holds the inputs the picture shows (the last call that worked),
    ``ex.tape`` that call's tape, ``ex.gradients()`` its gradients per input."""

    def __init__(
        self,
        runner: Runner,
        first: Run,
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
        c = self.controls
        sliders = []
        for name, s in widgets.items():
            if not s.description:  # as ipywidgets.interact labels its controls
                s.description = name
            s.add_class("tv-input").add_class(f"tv-input-{name}")
            s.observe(partial(self._on_input, name), names="value")
            s.observe(partial(self._on_range, name), names=["min", "max"])
            c[name] = s
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
        s = self.controls[name]
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
        s = self.controls[name]
        if s.min < s.max:
            self.runner.ranges[name] = range_of(name, s)
        self._rerun(name)

    def _rerun(self, moved: str) -> None:
        """Call the function at the sliders' values; show the new run, or say why not."""
        c, lang = self.controls, self.state.lang
        for name in self.runner.ranges:
            if c[name].min >= c[name].max:
                self._fail(say("ui.interact.empty_range", lang, name=name, lo=_num(c[name].min), hi=_num(c[name].max)))
                return
        try:
            run = self.runner.run({name: c[name].value for name in self.runner.ranges}, self.state.target)
        except InteractError as e:
            self._fail(e.say(lang))
            return
        self._load(run, moved)

    def _load(self, run: Run, moved: str) -> None:
        old = self.run
        state = carry_state(self.state, old, run)
        notice = ""
        if run.shape(state.target) != old.shape(state.target):
            where = f"{moved} = {_num(run.values[moved])}"
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
        good = ", ".join(f"{k} = {_num(v)}" for k, v in self.run.values.items())
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
                    error=_error_text(e),
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


# --------------------------------------------------------------------------- entry point


def interact(fn: Callable, inputs: Mapping[str, Any], options: Options, *, presenter: bool = False) -> Interact:
    """Build the Interact explorer (see tv.interact); errors before the first picture raise."""
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
        if n not in inputs and n not in RESERVED and isinstance(d, (int, float)) and not isinstance(d, bool):
            inputs[n] = d
    taken = sorted(set(inputs) & RESERVED)
    if taken:
        raise ValueError(
            f"An input cannot be called {taken[0]!r}: ex.controls[{taken[0]!r}] is one of the explorer's "
            f"own controls ({', '.join(sorted(RESERVED))}). Rename that parameter of your function."
        )
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
    return Interact(runner, first, widgets, presenter=presenter, **options.keywords())

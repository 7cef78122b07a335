"""The runner of tv.interact: the user's function called at given input values.

:class:`Runner` calls the function with one ``tf.Variable`` per input, under a tapeviz
tape, checking what it returns, and (for the slope plot) at sample points with no tape.
:class:`FunctionRun` is what one call gave: tape, targets, flows, the :class:`GraphTargets` the
explorer's pure state functions work on, and the graph's *shape* (what decides the
layout). Two runs of one shape draw their boxes in the same places, because the layout is
a deterministic function of the graph's structure and insertion order; :func:`carry_state`
moves the explorer's state from one run to the next. Nothing here draws or holds a widget
(the widgets are in whatif.py).
"""

from __future__ import annotations

import itertools
import keyword
import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import numpy as np
import tensorflow as tf

from ..gradients.flow import GradientFlow, flow_over
from ..messages import DEFAULT, say
from ..record.graph import TapeGraph
from ..record.tape import GradientTape, graph_of
from .state import ExplorerState, GraphTargets

__all__ = [
    "InputRange",
    "Runner",
    "FunctionRun",
    "InteractError",
    "CallFailed",
    "ReturnTypeError",
    "carry_state",
    "shape_of",
    "shape_change",
    "total",
    "error_text",
    "short_number",
    "SAMPLES",
]

#: Points at which the slope plot's curve is evaluated (one call of the function each).
SAMPLES = 61


def short_number(v: float) -> str:
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


class FunctionRun:
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
        # (or the first of y, target, target2, ... that no input takes)
        candidates = itertools.chain((name, "y", "target"), (f"target{i}" for i in itertools.count(2)))
        self.single = next(n for n in candidates if self._bindable(n))
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
        return f"{self.fn_name}({', '.join(f'{k}={short_number(v)}' for k, v in values.items())})"

    # -- under the tape ------------------------------------------------------------------
    def run(self, values: Mapping[str, float], target: str | None = None) -> FunctionRun:
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
            raise CallFailed("ui.interact.raised", call=call, error=error_text(e), fn=self.fn_name) from e
        targets: dict[str, tf.Tensor] = ns["_targets"]
        try:
            run = FunctionRun(values, tape, targets)
            run.flow(target or next(iter(targets)))
        except Exception as e:  # e.g. a target not computed from anything on the tape
            raise CallFailed("ui.interact.raised", call=call, error=error_text(e), fn=self.fn_name) from e
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


def error_text(e: BaseException) -> str:
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


def shape_change(old: FunctionRun, new: FunctionRun, target: str, lang: str = DEFAULT) -> str:
    """What differs between two shapes, in words: ops added and gone, else rewiring, else
    where the gradient stops."""

    def ops(run: FunctionRun) -> Counter:
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


def carry_state(state: ExplorerState, old: FunctionRun, new: FunctionRun) -> ExplorerState:
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

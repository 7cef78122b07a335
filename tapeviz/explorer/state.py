"""The explorer's state, and what it shows, as pure functions of it.

An :class:`ExplorerState` is plain data: which target, which backward step, how
gradients are clipped, the learning rate of the SGD preview, which groups are open,
whether every op is shown, the inspected node, language and theme. What the explorer
shows is a function of the state: :func:`picture` (the SVG), :func:`panel` (the
clipping table), :func:`inspector`, :func:`gradients`. The widget only maps its
controls to states; the exported HTML page iterates over states; a test can compare
any state's picture with TensorFlow without a widget.

:class:`GraphTargets` holds what the states are about (one graph, its named targets) and
keeps what is expensive to recompute: a flow per target (the backward pass), a view per
picture structure (layout, scene) and a clipping report per setting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..gcpause import gc_paused
from ..gradients import clipping
from ..gradients.chain_rule import ChainRule
from ..gradients.flow import GradientFlow
from ..gradients.origin import Origin, flow_origin
from ..messages import say
from ..output.svg import to_svg
from ..output.view import GraphView
from ..picture.frames import group_frames
from ..picture.marks import Hidden
from ..picture.options import AUTO, Collapsed, Options, option_names
from ..picture.restyling import GradOverride
from ..picture.rows import CELL_WIDTH
from ..picture.themes import explorer_theme
from ..picture.visibility import Shown, decide
from ..picture.wording import node_title
from ..record.bounded_cache import BoundedCache
from ..record.graph import TapeGraph
from ..record.values import GRAD_NORM, format_value
from . import chain_line as chain_line_module
from . import panels, quiz
from .quiz import TOLERANCE

__all__ = [
    "tips",
    "box_at",
    "with_groups",
    "open_group",
    "close_group",
    "open_step",
    "ExplorerState",
    "GraphTargets",
    "picture",
    "panel",
    "inspector",
    "diagnosis",
    "origin_step",
    "jump_to_origin",
    "node_inspector",
    "gradients",
    "clipped_texts",
    "quiz_hidden",
    "quiz_open",
    "quiz_panel",
    "answer",
    "reveal",
    "reset_score",
    "chain_rule",
    "chain_line",
    "chain_html",
]

_PICTURES = 128  # SVG documents kept per explorer (a slider going back and forth reuses them)


_OPTION_NAMES = frozenset(option_names())
#: The picture's options that decide its layout besides its groups (``collapsed``, which a
#: state holds as the groups themselves).
_PICTURE_OPTIONS = tuple(n for n in option_names() if n != "collapsed")
#: An explorer's picture before any option is given: light (the widget follows the page's
#: theme itself), no magnitude colours.
_EXPLORER_DEFAULTS = Options(theme="light", magnitude=False)


@dataclass(frozen=True)
class ExplorerState:
    """Everything that decides what an explorer shows, as plain data.

    The picture's options are one :class:`~tapeviz.picture.options.Options` value, read as
    the state's own (``state.lang`` is ``state.options.lang``) and changed by
    :meth:`replace` like the other fields; its ``collapsed`` holds the groups drawn as one
    box, or "auto": the picture's default (``depth``, ``expand``) chooses them."""

    target: str
    step: int | None = None  # backward step; None: the last one (the finished pass)
    clip_mode: str = "none"  # one of clipping.MODES
    clip_norm: float = 1.0
    clip_value: tuple[float, float] = (-1.0, 1.0)
    lr: float = 0.01  # learning rate of the SGD preview w - lr * g
    options: Options = _EXPLORER_DEFAULTS  # theme is a name: the canvas draws explorer_theme(theme)
    functions: frozenset = frozenset()  # tf.function calls opened into their bodies
    node: Any = None  # the node shown in the inspector
    quiz: bool = False  # predict, then reveal: a step's numbers are hidden until answered
    ask: str = "gradient"  # what the quiz asks (quiz.ASKS): the gradient, the local derivative, the product
    answers: tuple = ()  # quiz.Answer per answered step (of every target)
    tolerance: float = TOLERANCE  # how close a right prediction is (relative, at least absolute)

    def __getattr__(self, name: str) -> Any:
        """An option read as the state's own: ``state.lang`` is ``state.options.lang``."""
        if name in _OPTION_NAMES:
            return getattr(self.options, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def replace(self, **changes) -> ExplorerState:
        """A new state with these fields and options changed (``collapsed=None``: the
        picture's default groups)."""
        picked = {name: changes.pop(name) for name in _OPTION_NAMES & changes.keys()}
        if picked:
            if picked.get("collapsed", AUTO) is None:
                picked["collapsed"] = AUTO
            changes["options"] = dataclasses.replace(self.options, **picked)
        return dataclasses.replace(self, **changes)

    @property
    def collapsed(self) -> frozenset | None:
        """The groups drawn as one box; None: the picture's default."""
        groups = self.options.collapsed
        return None if isinstance(groups, str) and groups == AUTO else frozenset(groups)  # type: ignore[arg-type]

    @property
    def clip_range(self) -> tuple[float, float]:
        """``clip_value`` as a (min, max) tuple: a widget may hand the range over as a list."""
        lo, hi = self.clip_value
        return lo, hi

    @property
    def my_answers(self) -> tuple:
        """The quiz answers given for this state's target."""
        return tuple(a for a in self.answers if a.target == self.target)

    @property
    def structure(self) -> tuple:
        """What decides the picture's layout (its boxes and where they are)."""
        options = self.options
        return (self.target, self.collapsed, self.functions, *(getattr(options, n) for n in _PICTURE_OPTIONS))


class GraphTargets:
    """One recorded graph and its named targets, as the explorer's states see them."""

    def __init__(self, graph: TapeGraph, targets: Mapping[str, Any], *, flow_factory: Callable[[Any], GradientFlow]):
        if not targets:
            raise ValueError("An explorer needs at least one target.")
        self.graph = graph
        self.targets = dict(targets)
        self._flow_factory = flow_factory
        self._flows: dict[str, GradientFlow] = {}
        self._views: dict[tuple, GraphView] = {}
        self._shown: dict[tuple, Shown] = {}
        self._reports: BoundedCache[tuple, clipping.ClipReport] = BoundedCache(64)
        self._measures: dict[str, clipping.Measures] = {}
        self._pictures: BoundedCache[tuple, str] = BoundedCache(_PICTURES, recency=True)
        self._texts: BoundedCache[tuple, dict] = BoundedCache(64)
        self._tips: BoundedCache[tuple, dict] = BoundedCache(32)
        self._variables: dict[str, Any] | None = None
        self._rules: dict[tuple[str, str], ChainRule] = {}
        self._refs: BoundedCache[tuple, chain_line_module.Refs] = BoundedCache(32)

    # -- what is computed once -------------------------------------------------------
    def flow(self, target: str) -> GradientFlow:
        if target not in self.targets:
            raise ValueError(f"No target named {target!r}; targets are: {', '.join(self.targets)}")
        if target not in self._flows:
            self._flows[target] = self._flow_factory(self.targets[target])
        return self._flows[target]

    def initial(self, *, collapsed: Collapsed | frozenset | None = None, **settings) -> ExplorerState:
        """The state an explorer opens in: the first target, its finished pass (a quiz: its
        first step, the seed, with every number still to predict). The settings: the
        state's fields and the picture's options, by name. ``collapsed``: as tv.Options
        takes it ("auto", True, False or group names), or the groups themselves; "auto"
        and None leave it to the picture."""
        picked = {name: settings.pop(name) for name in _OPTION_NAMES & settings.keys()}
        options = Options.of(_EXPLORER_DEFAULTS, **picked)
        state = ExplorerState(target=next(iter(self.targets)), options=options, **settings)
        state = state.replace(step=0 if state.quiz else self.flow(state.target).last_step)
        if collapsed is None or collapsed == AUTO or isinstance(collapsed, frozenset):
            return state.replace(collapsed=None if collapsed == AUTO else collapsed)
        shown = self._decide(state, dataclasses.replace(options, collapsed=collapsed))
        return state.replace(collapsed=frozenset(shown.collapsed))

    def _decide(self, state: ExplorerState, options: Options) -> Shown:
        bodies = {f: self.graph.function_body(f) for f in state.functions}
        fl = self.flow(state.target)
        origin = flow_origin(fl)  # the default groups open down to the op where a NaN starts
        return decide(self.graph, fl, options, bodies=bodies, origin=origin.node if origin is not None else None)

    def default_shown(self, state: ExplorerState) -> Shown:
        """The picture's own decision of what is shown for this target (no groups chosen)."""
        key = (state.target, state.show_all, state.functions, state.depth, state.expand)
        if key not in self._shown:
            self._shown[key] = self._decide(state, dataclasses.replace(state.options, collapsed=AUTO))
        return self._shown[key]

    def collapsed(self, state: ExplorerState) -> frozenset:
        """The groups drawn as one box in this state."""
        if state.collapsed is not None:
            return state.collapsed
        return frozenset(self.default_shown(state).collapsed)

    def groups(self, state: ExplorerState) -> list[str]:
        """The groups (layers, TF API calls) this target's picture can collapse or expand."""
        return list(self.default_shown(state).group_names)

    def view(self, state: ExplorerState) -> GraphView:
        """The GraphView for this state's structure, set to its step and clipped texts. A
        state whose groups are the picture's to choose (``collapsed`` None) draws the
        picture's default, folded loops included (a fresh ``tv.save`` draws the same
        boxes); chosen groups draw exactly those (``Options.closing``)."""
        key = state.structure
        view = self._views.get(key)
        if view is None:
            options = state.options if state.collapsed is None else state.options.closing(state.collapsed)
            view = self._views[key] = GraphView(
                self.graph,
                self.flow(state.target),
                # no text below 9 pt on the screen; files keep the theme
                dataclasses.replace(options, theme=explorer_theme(options.theme)),
                functions=set(state.functions),
                page=CELL_WIDTH,
                frames=True,
            )
        view.overrides = clipped_texts(self, state)
        view.hidden = quiz_hidden(self, state)
        view.set_step(state.step)
        return view

    def report(self, state: ExplorerState) -> clipping.ClipReport:
        """Raw vs clipped gradients, norms and the SGD preview, computed by TensorFlow."""
        key = (state.target, state.clip_mode, state.clip_norm, tuple(state.clip_value), state.lr)
        rep = self._reports.get(key)
        if rep is None:
            measured = self._measures.get(state.target)
            if measured is None:  # what no slider changes: raw gradients, their norms, the weights
                weights = {name: self.graph.value_of(node) for name, node in self.variables().items()}
                measured = self._measures[state.target] = clipping.measure(
                    self.raw_gradients(state), {k: v for k, v in weights.items() if v is not None}
                )
            rep = clipping.report(
                measured.grads,
                measured.weights,
                mode=state.clip_mode,
                clip_norm=state.clip_norm,
                clip_value=state.clip_range,
                lr=state.lr,
                measured=measured,
            )
            self._reports.put(key, rep)
        return rep

    def chain_rule(self, target: str, lang: str) -> ChainRule:
        """The chain rule of ``target``'s backward pass (its steps are made on first use)."""
        key = (target, lang)
        if key not in self._rules:
            self._rules[key] = ChainRule(self.flow(target), lang)
        return self._rules[key]

    def variables(self) -> dict[str, Any]:
        """{variable name: node} for every variable the tape saw (read once: every clip move asks)."""
        if self._variables is None:
            self._variables = {d["name"]: n for n, d in self.graph.nx.nodes(data=True) if d["kind"] == "variable"}
        return dict(self._variables)

    def raw_gradients(self, state: ExplorerState) -> dict[str, Any]:
        fl = self.flow(state.target)
        return {name: fl.computed_tensor(node) for name, node in self.variables().items()}

    def cached_texts(self, key, make: Callable[[], dict]) -> dict:
        """The clipped texts of one clip setting (a picture key and its view both need them)."""
        return self._texts.fetch(key, make)

    def cached_picture(self, key, make: Callable[[], str]) -> str:
        return self._pictures.fetch(key, make)

    def forget(self) -> None:
        """Drop every flow, view, report and picture (Explorer.close)."""
        self._flows.clear()
        self._views.clear()
        self._shown.clear()
        self._reports.clear()
        self._measures.clear()
        self._pictures.clear()
        self._texts.clear()
        self._tips.clear()
        self._rules.clear()
        self._refs.clear()


# --------------------------------------------------------------------------- what a state shows


def step_of(ex: GraphTargets, state: ExplorerState) -> int:
    return ex.flow(state.target).check_step(state.step)


def clipped_texts(ex: GraphTargets, state: ExplorerState) -> dict:
    """Clipped gradients replace the variables' texts on the finished picture."""
    fl = ex.flow(state.target)
    if state.clip_mode == "none" or step_of(ex, state) < fl.last_step:
        return {}
    return ex.cached_texts(
        (state.target, state.clip_mode, state.clip_norm, tuple(state.clip_value)),
        lambda: _clipped_texts(ex, state.target, ex.report(state)),
    )


def _clipped_texts(ex: GraphTargets, target: str, rep: clipping.ClipReport) -> dict:
    # "∂ raw → clipped" in a box's width: the numbers as they are when the text is short
    # ("∂ [6.0, 8.0] → [0.6, 0.8]"), else the norms (clipping is about norms, and
    # "∂ [-0.09405, -0.009118, …" left the clipped side cut off). The raw sides are the same
    # for every setting: written once.
    raw = ex.cached_texts(
        (target, "raw"),
        lambda: {
            name: (
                format_value(rep.raw.get(name), norm=GRAD_NORM),
                format_value(rep.raw.get(name), max_items=1, norm=GRAD_NORM),
            )
            for name in ex.variables()
        },
    )
    out: dict[Any, GradOverride | str] = {}
    for name, node in ex.variables().items():
        g = rep.clipped.get(name)
        if g is None:
            out[node] = "∂ None"
            continue
        before, after = raw[name][0], format_value(g, norm=GRAD_NORM)
        if len(before) + len(after) + 5 > _SHORT_CLIP_TEXT:
            before, after = raw[name][1], format_value(g, max_items=1, norm=GRAD_NORM)
        shape = before.partition(GRAD_NORM)[0]  # "4×4 " when it is a shape and a norm
        if GRAD_NORM in before and after.startswith(shape + GRAD_NORM + " "):
            after = after[len(shape + GRAD_NORM) + 1 :]  # the norm alone: "∂ 4×4 ‖g‖ 0.235 → 0.19"
        text = f"∂ {before} → {after}"
        nb, na = rep.norm_before.get(name), rep.norm_after.get(name)
        # a closed layer's line lists its variables by name: the norms alone (as the table)
        short = f"{nb:.3g} → {na:.3g}" if nb is not None and na is not None else text.removeprefix("∂ ")
        out[node] = GradOverride(text, short)
    return out


#: Characters of a clipped gradient text that fit under a box at the explorer's size.
_SHORT_CLIP_TEXT = 28


def picture(ex: GraphTargets, state: ExplorerState) -> str:
    """The SVG document (from ``<svg``) the explorer's canvas shows in this state.

    Keyed by everything it shows, so moves that change nothing drawn (the learning
    rate, clipping while an earlier step is shown) reuse the picture."""
    overrides = clipped_texts(ex, state)
    key = (
        state.structure,
        step_of(ex, state),
        tuple(sorted((str(k), v) for k, v in overrides.items())),
        quiz_hidden(ex, state),
    )

    def make() -> str:
        with gc_paused():
            svg = to_svg(ex.view(state), fit=True, frames=True)
        return svg[svg.find("<svg") :]

    return ex.cached_picture(key, make)


def panel(ex: GraphTargets, state: ExplorerState) -> str:
    """The clipping panel's HTML for this state (raises ValueError on bad settings). In a
    quiz it would give the answers away: it waits until the last step is answered."""
    if _quiz_pending(ex, state):
        return f"<div class='tv-panel tv-none'>{panels._esc(say('quiz.hidden_panel', state.lang))}</div>"
    return panels.clipping_panel(ex.report(state), ex.flow(state.target), ex.variables(), state.lang)


def inspector(ex: GraphTargets, state: ExplorerState) -> str:
    """The inspector's HTML: why the target's gradient is NaN, Inf or zero, when it is (the
    picture marks where), then the state's node ('' when there is neither; in a quiz,
    until the last step is answered)."""
    if _quiz_pending(ex, state):
        return ""
    origin = diagnosis(ex, state)
    parts = [panels.diagnosis(origin, state.lang)] if origin is not None else []
    if state.node is not None:
        parts.append(node_inspector(ex, state, state.node))
    return "<br>".join(parts)


def diagnosis(ex: GraphTargets, state: ExplorerState) -> Origin | None:
    """Where the state's target's NaN, Inf or zero gradient starts (None: every source's
    gradient is finite and not all zero): what the picture marks and the inspector says."""
    return flow_origin(ex.flow(state.target))


def origin_step(ex: GraphTargets, state: ExplorerState) -> int | None:
    """The backward step where the bad gradient first appears (None: there is none)."""
    origin = diagnosis(ex, state)
    return None if origin is None else origin.step


def jump_to_origin(ex: GraphTargets, state: ExplorerState) -> ExplorerState:
    """The state at the step where the NaN, Inf or zero gradient first appears, its op in
    the inspector; the same state when there is none."""
    origin = diagnosis(ex, state)
    if origin is None:
        return state
    return state.replace(step=origin.step, node=origin.node)


def node_inspector(ex: GraphTargets, state: ExplorerState, node: Any) -> str:
    """The inspector's HTML for ``node``: what panels.inspector shows, and the chain rule at
    the steps that process it (its local derivative, its inputs' names, TF's numbers)."""
    fl = ex.flow(state.target)
    rule = chain_rule(ex, state)
    steps = [k for k in range(1, len(fl.steps)) if fl.steps[k].node == node]
    chain = [(k, lines) for k in steps if (lines := rule[k].lines(state.lang))]
    return panels.inspector(ex.graph, fl, node, state.lang, chain)


def gradients(ex: GraphTargets, state: ExplorerState, clipped: bool = True) -> dict[str, np.ndarray | None]:
    """{variable name: gradient} in this state (TF's clip functions when clipped)."""
    raw = ex.raw_gradients(state)
    if not clipped:
        return {k: clipping.to_numpy(v) for k, v in raw.items()}
    out = clipping.clip(raw, state.clip_mode, state.clip_norm, state.clip_range)
    return {k: clipping.to_numpy(v) for k, v in out.items()}


def _structure_key(ex: GraphTargets, state: ExplorerState) -> tuple:
    # the default groups and the same groups chosen by hand are two pictures: the default
    # folds a long loop's repeats (ac ×20), a choice draws what it names
    return state.structure


def _outermost(tree, groups) -> frozenset:
    """The closed groups that are boxes: those no other closed group holds (what a closed
    group holds does not change the picture)."""
    return frozenset(g for g in groups if g in tree.groups and not any(a in groups for a in tree.ancestors(g)))


def with_groups(ex: GraphTargets, state: ExplorerState, groups: frozenset, **changes) -> ExplorerState:
    """The state with ``groups`` closed (and ``changes``). Groups that draw the picture's
    own default come back as the default (``collapsed`` None): closing what was opened
    brings back the default picture, its folded loop (``ac ×20``) included, not the same
    boxes with the loop's ops unfolded. Compared with the default of the state's
    ``depth`` / ``expand``, then with the plain default (no ``depth``, no ``expand``)."""
    new = state.replace(**changes)
    tree = ex.default_shown(new).tree
    chosen = _outermost(tree, groups)
    if chosen == _outermost(tree, ex.default_shown(new).collapsed):
        return new.replace(collapsed=None)
    if new.depth is not None or new.expand:
        plain = new.replace(collapsed=None, depth=None, expand=())
        if chosen == _outermost(tree, ex.default_shown(plain).collapsed):
            return plain
    return new.replace(collapsed=frozenset(groups))


def open_group(ex: GraphTargets, state: ExplorerState, gid: str) -> ExplorerState:
    """The state with group ``gid`` open, the groups directly inside it closed (a click on
    its box)."""
    tree = ex.default_shown(state).tree
    collapsed = (set(ex.collapsed(state)) - {gid}) | set(tree.groups[gid].children)
    return with_groups(ex, state, frozenset(collapsed))


def close_group(ex: GraphTargets, state: ExplorerState, gid: str) -> ExplorerState:
    """The state with group ``gid`` closed (a click on its frame); when that is what the
    picture shows by default, the default state."""
    return with_groups(ex, state, ex.collapsed(state) | {gid})


def open_step(ex: GraphTargets, state: ExplorerState, k: int) -> ExplorerState:
    """The state with step ``k`` of the opened loop drawn opened, the same groups open (a
    click on the box of the loop's other steps)."""
    return with_groups(ex, state, ex.collapsed(state), repeat_step=k)


def box_at(ex: GraphTargets, state: ExplorerState, element_id: str) -> tuple[str, Any] | None:
    """What a canvas element of this state's picture is: ("open", group id) for a closed
    group's box (for a box of alike blocks, "conv3_block2–4": the first of them), ("close",
    group id) for an open group's frame, ("step", k) for the box of an opened loop's steps
    (its first step k opens in place of the one shown), ("select", node) for any other box
    of the graph; None for anything else."""
    display = ex.view(state).scene.display
    if element_id.startswith("group-"):
        gid = element_id[len("group-") :]
        return ("close", gid) if gid in display.tree else None
    runs = {r.id: r for r in display.runs.values()}
    for n, d in display.nx.nodes(data=True):
        if f"node-{n}" == element_id:
            if d.get("kind") == "layer" and d.get("step_range"):
                return "step", d["step_range"][0]  # the steps of an opened loop: the first opens
            if d.get("kind") == "layer" and d.get("layer") in runs:
                return "open", runs[d["layer"]].groups[0]  # a box of alike blocks: the first opens
            if d.get("kind") == "layer" and d.get("layer") in display.tree:
                return "open", d["layer"]
            return ("select", n) if n in ex.graph.nx else None
    return None


def tips(ex: GraphTargets, state: ExplorerState) -> dict[str, str]:
    """Hover text per canvas element id: a box's full name, what it is, its value's shape and
    summary, its gradient's summary (TF's, from the flow), and what a click does."""
    key = (_structure_key(ex, state), state.lang)
    got = ex._tips.get(key)
    if got is not None:
        return got
    lang, graph, fl = state.lang, ex.graph, ex.flow(state.target)
    scene = ex.view(state).scene
    out: dict[str, str] = {}
    for n, b in scene.boxes.items():
        d = scene.display.nx.nodes[n] if n in scene.display.nx else {}
        lines = [b.tip or str(d.get("name") or d.get("label") or n)]
        if d.get("kind") == "layer" and d.get("step_range"):
            lines.append(say("ui.canvas.open_step", lang, k=d["step_range"][0]))
        elif d.get("kind") == "layer":
            lines.append(say("ui.canvas.open", lang))
        elif n in graph.nx:
            info = graph.output_info(n)
            if info is not None:
                lines.append(say("ui.canvas.shape", lang, dtype=info.dtype, shape=info.shape))
                lines.append(say("ui.canvas.value", lang, summary=format_value(info.value, info.summary)))
            # what arrived at the box's first output, as the box shows it (computed, not grad:
            # it answers behind an op with no registered gradient, where grad raises TF's error)
            first = fl.computed(n)
            shown = "None" if first is None else format_value(first, norm=GRAD_NORM)
            lines.append(say("ui.canvas.grad", lang, summary=shown))
            lines.append(say("ui.canvas.select", lang))
        out[b.gid] = "\n".join(lines)
    for f in group_frames(scene):
        out[f"group-{f.gid}"] = f"{f.gid}\n{say('ui.canvas.close', lang)}"
    return ex._tips.put(key, out)


# --------------------------------------------------------------------------- the chain rule


def chain_rule(ex: GraphTargets, state: ExplorerState) -> ChainRule:
    """The chain rule of the state's target, in its language."""
    return ex.chain_rule(state.target, state.lang)


def chain_line(ex: GraphTargets, state: ExplorerState) -> chain_line_module.ChainLine | None:
    """The chain rule of the state's step as the explorer shows it under the picture: the
    step's lines (what arrived, times each input's local derivative, what it passes; a
    stopped input's reason), or, when the step's op is inside a collapsed group, the group's
    line (the gradient in at its outputs and out to its inputs, as of this step). None in a
    quiz while the step waits for an answer (the line would give it away)."""
    return _chain_line(ex, state, ex.view(state))


def _chain_line(ex: GraphTargets, state: ExplorerState, view: GraphView) -> chain_line_module.ChainLine | None:
    if quiz_open(ex, state):
        return None
    fl = ex.flow(state.target)
    k = step_of(ex, state)
    display = view.scene.display
    # the symbols and boxes of one picture structure: the same for all its steps
    refs = ex._refs.fetch(_structure_key(ex, state), lambda: chain_line_module.Refs(fl, display))
    box = display.of.get(fl.steps[k].node)
    if k > 0 and box is not None and display.nx.nodes[box].get("kind") == "layer":
        name = node_title(ex.graph, box, display, state.lang)
        members = [str(m) for m in display.members.get(box, ()) if m in ex.graph.nx]
        group = chain_rule(ex, state).group(members, step=k, name=name)
        return chain_line_module.group_line(group, box, refs, state.lang)
    return chain_line_module.step_line(chain_rule(ex, state)[k], refs, state.lang)


def step_sentence(ex: GraphTargets, state: ExplorerState) -> str:
    """The step's sentence, as the picture's title says it ("Step 2/3: x has received ...")."""
    return str(ex.view(state).scene.title)


def chain_html(ex: GraphTargets, state: ExplorerState) -> str:
    """The live region under the picture: the step's sentence and its chain rule, each term
    naming its boxes and arrows (chain_line.line_html)."""
    view = ex.view(state)  # set to this step once (the sentence and the line both read it)
    return chain_line_module.line_html(str(view.scene.title), _chain_line(ex, state, view), state.lang)


# --------------------------------------------------------------------------- the quiz


def _quiz_pending(ex: GraphTargets, state: ExplorerState) -> bool:
    """A quiz whose last step is not answered yet (the gradients' table would give it away)."""
    last = ex.flow(state.target).last_step
    return state.quiz and quiz.answered(state.answers, last, state.target) is None


def quiz_hidden(ex: GraphTargets, state: ExplorerState) -> Hidden | None:
    """What this state's picture hides: the numbers of every step not answered yet."""
    if not state.quiz:
        return None
    answered = [a.step for a in state.my_answers]
    return quiz.hidden(ex.flow(state.target), step_of(ex, state), answered, state.lang)


def quiz_open(ex: GraphTargets, state: ExplorerState) -> bool:
    """Whether this state's step still waits for an answer."""
    return state.quiz and quiz.answered(state.answers, step_of(ex, state), state.target) is None


def quiz_panel(ex: GraphTargets, state: ExplorerState) -> str:
    """The quiz's HTML in this state: question, verdict, score ('' outside quiz mode)."""
    if not state.quiz:
        return ""
    return quiz.quiz_panel(
        ex.flow(state.target), step_of(ex, state), state.my_answers, state.lang, state.ask, chain_rule(ex, state)
    )


def answer(ex: GraphTargets, state: ExplorerState, typed: str) -> tuple[ExplorerState, str | None]:
    """The state after a student typed ``typed`` at this step: judged right or wrong against
    TensorFlow's number, and revealed. A text with no number (or the wrong count) changes
    nothing and comes back with the sentence that says what to type."""
    fl = ex.flow(state.target)
    q = quiz.question(fl, step_of(ex, state), state.ask, chain_rule(ex, state))
    outcome = quiz.judge(q, typed, state.tolerance)
    if outcome is None:
        return state, say("quiz.unreadable", state.lang)
    done = quiz.Answer(q.step, outcome, typed.strip(), state.target)
    return state.replace(answers=quiz.record(state.answers, done)), None


def reveal(ex: GraphTargets, state: ExplorerState) -> ExplorerState:
    """The state with this step revealed (no prediction)."""
    done = quiz.Answer(step_of(ex, state), "revealed", "", state.target)
    return state.replace(answers=quiz.record(state.answers, done))


def reset_score(state: ExplorerState) -> ExplorerState:
    """Every step hidden again and the score back to zero (the teacher's reset)."""
    return state.replace(answers=())

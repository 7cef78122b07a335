"""What a picture shows: which recorded nodes become boxes, which fold, which hide.

The stage between the model (graph + flow) and the layout. A real model records many
ops that carry nothing back to the loss; drawn as boxes they bury the ones that do.
Two principles decide:

1. **What has no path to the target is hidden**: BatchNorm's moving-average updates,
   RNG state advances, logging, the other loss's branch.
2. **What no watched source reaches through float values is a constant for the
   backward pass**, and folds into a *chip* on the op that uses it: literal
   constants, shapes and axes, integer labels, dropout's random mask chain.

Stops that matter stay boxes, with their reason: tf.stop_gradient, float variables
and named tensors nobody watches, watched integer sources, values that left
TensorFlow, assigns into variables the target reads, and the op where a watched value
turns into integers (ArgMax, a cast to int).

Groups collapse into one box each: Keras layers (name scopes), TF API calls the user
wrote (``tf.clip_by_norm``, which sets no scope when executing eagerly, grouped by
the call on the stack: see capture), tf.function calls, inner gradient calls and calls of
the user's own functions. TF API calls and inner gradients are collapsed by default, and so
is a function of the user's that holds an inner gradient; layers when the picture would
not fit a screen. Which groups are closed is :mod:`tapeviz.picture.opening`'s to decide;
this module draws the nodes in them.

The model is not changed: hiding and folding change pictures only; ``fl.grad``,
contributions and steps stay those of the whole tape. ``show_all=True`` shows every
recorded op, grouped by name scope only.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import weakref
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import networkx as nx

from ..gradients.stop_reasons import Reason
from ..messages import Phrase
from ..record.graph import STATEFUL_OPS, TapeGraph
from ..record.values import format_value
from .groups import GroupTree, build_tree
from .opening import (
    api_call_sites,
    choose_closed,
    derivative_contexts,
    derivative_paths,
    derivative_sources,
    differentiated_groups,
    fitting_level,
    function_paths,
    holding_everything,
    keras_layers,
    layer_calls,
    leaf_groups,
    owners,
    scope_tree,
)
from .options import Options
from .steps import Stepped, alike_steps, loop_entries, loop_steps

__all__ = [
    "Shown",
    "Chip",
    "decide",
    "collapse",
    "alike_runs",
    "AlikeRun",
    "fold_repeats",
    "FIT_BOXES",
    "COLLAPSE_THRESHOLD",
]

Node = Hashable

#: More boxes than this (after hiding and folding, every group open): layers collapse.
FIT_BOXES = 30
#: A default picture with Keras's own layers closed that has fewer boxes than this opens
#: them (a one-layer model, where the ops are the lesson).
FEW_BOXES = 6
#: With show_all=True, graphs with more ops than this open with their layers collapsed.
COLLAPSE_THRESHOLD = 60

# Ops that only read a tensor's shape: plumbing even when their input carries gradient.
METADATA_OPS = frozenset({"Shape", "ShapeN", "Size", "Rank", "BroadcastArgs", "BroadcastGradientArgs"})
# Stops a reader must see at the node where they happen.
_SIGNIFICANT = frozenset({Reason.STOP_GRADIENT, Reason.OUTSIDE_TF, Reason.NOT_RECORDED, Reason.STATEFUL})
# What a constant input means to the op using it: (op type, input index) -> role.
_ROLES = {
    **{
        (op, 1): "axis"
        for op in (
            "Sum",
            "Mean",
            "Max",
            "Min",
            "Prod",
            "All",
            "Any",
            "ArgMax",
            "ArgMin",
            "EuclideanNorm",
            "Cumsum",
            "ExpandDims",
            "Squeeze",
            "GatherV2",
            "ReverseV2",
        )
    },
    ("ConcatV2", -1): "axis",
    ("Pack", -1): "axis",
    ("Reshape", 1): "shape",
    ("Fill", 0): "shape",
    ("BroadcastTo", 1): "shape",
    ("Transpose", 1): "perm",
    ("Pow", 1): "exponent",
    ("Tile", 1): "multiples",
    ("Pad", 1): "paddings",
    ("PadV2", 1): "paddings",
    ("MirrorPad", 1): "paddings",
    ("OneHot", 1): "depth",
}


@dataclass(frozen=True)
class Chip:
    """Something folded into the op that uses it, shown as a small tag on its box."""

    text: str  # what the tag says: "axis [0, 1]", "2.0", "y", "random mask" (a Phrase where it has words)
    kind: str  # "value", "random" or "input" (a tensor the user named)
    index: int  # the consumer's input position (-1 on a collapsed group)
    members: tuple = field(default=(), compare=False)  # the original nodes folded into it
    # a value chip's tensor (value, summary): a tag too narrow for it shortens it with whole numbers
    value: tuple | None = field(default=None, compare=False, repr=False)


# --------------------------------------------------------------------------- the display graph


class Shown:
    """A display graph: the boxes a picture shows, with some groups as one box each.

    ``nx`` has the original nodes that stay boxes plus one node per collapsed group
    (id ``"layer:<name>"``, attributes ``kind="layer"``, ``layer``, ``group_kind``
    (see picture.groups; a derivative's ``note`` is its call, "t1.gradient") and
    ``members``); every node carries its ``chips``. Edges between
    two visible original nodes keep their keys; edges into or out of a collapsed group
    are merged into one edge per pair of display nodes whose ``members`` lists the
    original edges it stands for. Edges inside a group, and edges to hidden or folded
    nodes, are not drawn.
    """

    def __init__(
        self,
        g: nx.MultiDiGraph,
        tree: GroupTree,
        collapsed,
        bodies=None,
        *,
        boxes: set | None = None,
        chips: Mapping[Node, list] | None = None,
        links=(),
        hidden=(),
        folded=(),
        calls: Mapping[Node, int] | None = None,
        runs: Mapping[str, AlikeRun] | None = None,
        repeats: Mapping[Node, tuple[str, int]] | None = None,
        stepped: Stepped | None = None,
    ):
        self.source = g
        self.stepped = stepped  # a loop's group opened one step at a time (see open_one_step)
        self.repeats = dict(repeats or {})  # node -> (its repeat box's id, how many steps) (see fold_repeats)
        self.calls = calls
        self.runs = dict(runs or {})  # group id -> the run of alike sibling boxes drawn as one
        self.tree = tree
        self.collapsed = {c for c in collapsed if c is not None}
        self.group_names = [grp.id for grp in tree.walk()]  # parents first, in forward order
        self.hidden = set(hidden)  # original nodes with no path to the target
        self.folded = set(folded)  # original nodes folded into chips
        self.of: dict[Node, Node] = {}
        self.members: dict[Node, list[Node]] = {}
        chips = chips or {}
        owner = owners(tree, self.collapsed)
        d = nx.MultiDiGraph()
        for n, data in g.nodes(data=True):
            if boxes is not None and n not in boxes:
                continue
            layer = owner.get(n)
            side = stepped.side(n) if stepped is not None else None
            if stepped is not None and side is not None:  # a step of an opened loop other than the one drawn opened
                grp = tree.groups[stepped.gid]
                dn = f"layer:{stepped.gid}@{side[0]}-{side[1]}"
                if dn not in d:
                    d.add_node(
                        dn,
                        kind="layer",
                        layer=stepped.gid,
                        name=grp.name,
                        level=grp.level,
                        call=0,
                        group_kind=grp.kind,
                        note=grp.note,
                        alike=0,
                        step_range=side,
                        members=[],
                        chips=[],
                    )
                    self.members[dn] = d.nodes[dn]["members"]
                d.nodes[dn]["members"].append(n)
                for c in chips.get(n, ()):
                    if c.kind not in ("value", "input") and all(c.text != o.text for o in d.nodes[dn]["chips"]):
                        d.nodes[dn]["chips"].append(Chip(c.text, c.kind, -1, c.members))
            elif layer is not None:
                call = calls.get(n, 0) if calls else 0
                run = self.runs.get(layer)
                if run is not None:
                    layer = run.id
                dn = f"layer:{layer}" if call == 0 else f"layer:{layer}#{call + 1}"
                if dn not in d:
                    grp = tree.groups[run.groups[0] if run is not None else layer]
                    d.add_node(
                        dn,
                        kind="layer",
                        layer=layer,
                        name=run.name if run is not None else grp.name,
                        level=grp.level,
                        call=call,
                        group_kind=grp.kind,
                        note=grp.note,
                        alike=len(run.groups) if run is not None else 0,
                        members=[],
                        chips=[],
                    )
                    self.members[dn] = d.nodes[dn]["members"]
                d.nodes[dn]["members"].append(n)
                for c in chips.get(n, ()):  # a group box keeps what the reader must know: inputs, randomness
                    if c.kind != "value" and all(c.text != o.text for o in d.nodes[dn]["chips"]):
                        d.nodes[dn]["chips"].append(Chip(c.text, c.kind, -1, c.members))
            elif n in self.repeats:  # one op of each step of a loop: one box for all of them
                dn, steps = self.repeats[n]
                if dn not in d:
                    d.add_node(
                        dn,
                        kind="layer",
                        layer=dn,
                        name=data.get("op_type", ""),
                        level=0,
                        call=0,
                        group_kind="repeat",
                        note="",
                        alike=0,
                        repeat=steps,
                        members=[],
                        # a step's own constants (its action's index) differ from step to step
                        chips=[c for c in chips.get(n, ()) if c.kind != "value"],
                    )
                    self.members[dn] = d.nodes[dn]["members"]
                d.nodes[dn]["members"].append(n)
            else:
                dn = n
                d.add_node(n, **data)
                d.nodes[n]["chips"] = list(chips.get(n, ()))
                self.members[n] = [n]
            self.of[n] = dn
        for u, v, k, data in g.edges(keys=True, data=True):
            du, dv = self.of.get(u), self.of.get(v)
            if du is None or dv is None:
                continue
            if du == dv and du != u:
                continue  # inside a collapsed group
            if du == u and dv == v:
                d.add_edge(u, v, key=k, members=[(u, v, k)], **data)
            elif d.has_edge(du, dv, "merged"):
                d.edges[du, dv, "merged"]["members"].append((u, v, k))
            else:
                d.add_edge(du, dv, key="merged", members=[(u, v, k)], kind=data.get("kind", "data"))
        # A value that left TF, to where it most likely came back: a tensor made from NumPy
        # is usually folded into a chip, so the link ends at the box that holds the chip.
        holder = {m: consumer for consumer, cs in chips.items() for c in cs for m in c.members}
        for u, v in links:
            du, dv = self.of.get(u), self.of.get(v, self.of.get(holder.get(v)))
            if du is not None and dv is not None and du != dv:
                d.add_edge(du, dv, key="left", members=[], kind="outside", likely=True)
        self.nx = d
        for f, body in (bodies or {}).items():
            if f in d and body:
                self._open_function(f, body)

    def _open_function(self, f, body) -> None:
        """Replace a tf.function's node by the ops of its body (kind "inner"). Edges into
        the call attach to the ops that read that argument; edges out of it leave from
        the op that returns that output. Inner edges stand for no tape edge (members [])."""
        d = self.nx
        inner = {name: f"{f}/{name}" for name, _ in body["nodes"]}
        for name, op_type in body["nodes"]:
            d.add_node(inner[name], kind="inner", op_type=op_type, function=f, inner_name=name, chips=[])
        for src, dst, k in body["edges"]:
            if src in inner and dst in inner:
                d.add_edge(inner[src], inner[dst], key=k, members=[], kind="inner")
        for u, _, k, data in list(d.in_edges(f, keys=True, data=True)):
            index = data.get("dst_index", k)
            for arg, dst, kk in body["arg_uses"]:
                if arg == index:
                    d.add_edge(u, inner[dst], key=f"{k}:{kk}", members=data["members"], kind=data.get("kind", "data"))
        rets = [inner[r] for r in body["rets"] if r in inner]
        for j, r in enumerate(body["rets"]):
            if r in inner:
                d.nodes[inner[r]].setdefault("ret_index", j)
        for _, v, k, data in list(d.out_edges(f, keys=True, data=True)):
            src = rets[min(data.get("src_index", 0), len(rets) - 1)] if rets else None
            if src is not None:
                d.add_edge(src, v, key=k, members=data["members"], kind=data.get("kind", "data"))
        d.remove_node(f)
        head = rets[0] if rets else next(iter(inner.values()), None)
        for n, dn in self.of.items():
            if dn == f:
                self.of[n] = head
        self.members.pop(f, None)
        for n in inner.values():
            self.members[n] = []

    def display_edges_of(self, original_edges) -> set:
        """The display edges that stand for some of these original edges."""
        out = set()
        for u, v, k in original_edges:
            du, dv = self.of.get(u), self.of.get(v)
            if du is None or dv is None:
                continue
            if du == u and dv == v:
                out.add((u, v, k))
            elif du != dv:
                out.add((du, dv, "merged"))
        return out

    @property
    def n_hidden_ops(self) -> int:
        return sum(1 for n in self.hidden if self.source.nodes[n]["kind"] == "op")


class AlikeRun(NamedTuple):
    """Consecutive sibling groups that are alike (the same ops and variable shapes, each
    feeding only the next), drawn as one box: ResNet50's identity blocks conv3_block2–4."""

    id: str  # "resnet50/conv3/conv3_block2–4"
    name: str  # "conv3_block2–4"
    groups: tuple[str, ...]  # the group ids, in order


_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def alike_runs(display: Shown) -> dict[str, AlikeRun]:
    """{group id: its AlikeRun} for every run of two or more closed sibling groups drawn as one
    box each, numbered consecutively (``block2``, ``block3``), alike, and chained: each
    one's only edges go into the next, so one box for the run keeps every number true (its
    input is the first's, its output the last's, its gradient line the norm of all their
    variables, its steps theirs)."""
    tree, d = display.tree, display.nx
    runs: dict[str, AlikeRun] = {}
    siblings = [[g.id for g in tree.walk() if g.parent is None]] + [g.children for g in tree.groups.values()]
    for names in siblings:
        names = [x for x in names if tree.groups[x].kind == "block"]  # blocks of layers, not layers
        chain: list[str] = []
        for gid in [*names, None]:
            if gid is not None and chain and _continues(display, chain[-1], gid):
                chain.append(gid)
                continue
            if len(chain) >= 2:
                run = _run(tree, chain)
                runs.update((x, run) for x in chain)
            chain = [gid] if gid is not None and f"layer:{gid}" in d and f"layer:{gid}#2" not in d else []
    return runs


def _continues(display: Shown, a: str, b: str) -> bool:
    d, tree = display.nx, display.tree
    da, db = f"layer:{a}", f"layer:{b}"
    if db not in d or f"layer:{b}#2" in d:
        return False
    ma, mb = _NUMBERED.match(tree.groups[a].name), _NUMBERED.match(tree.groups[b].name)
    if not (ma and mb and ma.group(1) == mb.group(1) and int(mb.group(2)) == int(ma.group(2)) + 1):
        return False
    if any(u != da for u in d.predecessors(db)) or any(v != db for v in d.successors(da)):
        return False  # not a chain: a box for the run would hide an edge
    return _signature(display, da) == _signature(display, db)


def _signature(display: Shown, dn) -> tuple:
    """What makes two groups alike: their ops' types in order and their variables' shapes."""
    G = display.source
    out = []
    for m in display.members[dn]:
        nd = G.nodes[m]
        if nd["kind"] == "variable":
            out.append(("variable", tuple(getattr(nd.get("variable"), "shape", ()))))
        else:
            out.append((nd["kind"], nd.get("op_type")))
    return tuple(out)


def _run(tree: GroupTree, chain: list[str]) -> AlikeRun:
    first, last = tree.groups[chain[0]], tree.groups[chain[-1]]
    prefix = _NUMBERED.match(first.name)
    end = _NUMBERED.match(last.name)
    assert prefix is not None and end is not None  # _continues matched both
    name = f"{first.name}–{end.group(2)}"
    return AlikeRun(f"{first.parent}/{name}" if first.parent else name, name, tuple(chain))


#: An op repeated in at least this many steps of a loop (alike, from alike inputs) is one box.
REPEAT_LEAST = 3


def fold_repeats(display: Shown, keep=frozenset()) -> dict[Node, tuple[str, int]]:
    """The ops a loop inside one tape repeats, step after step (an RL episode's log-softmax
    of each step's logits, an unrolled RNN's cell): {op: (its repeat box's id, steps)}.

    Ops are alike when they have the same type and their inputs are alike (or the same
    box: the model called once per step): classes found in one forward pass over the
    display. A class of at least REPEAT_LEAST ops is drawn as one box; what gathers the
    steps (``tf.stack``, a sum) stays a box of its own, fed by it. Ops in ``keep`` (the
    targets) and named ones stay themselves."""
    d = display.nx
    ids: dict[tuple, int] = {}
    cls: dict[Node, object] = {}
    for n in nx.topological_sort(d):
        dd = d.nodes[n]
        preds = frozenset(cls[p] for p in d.predecessors(n))
        if dd.get("kind") == "op" and preds and n not in keep and not dd.get("name"):
            cls[n] = ids.setdefault((dd["op_type"], preds), len(ids))
        else:
            cls[n] = ("box", n)
    members: dict[object, list] = {}
    for n, c in cls.items():
        if isinstance(c, int):
            members.setdefault(c, []).append(n)
    out: dict[Node, tuple[str, int]] = {}
    for nodes in members.values():
        if len(nodes) >= REPEAT_LEAST:
            for n in nodes:
                out[n] = (f"repeat:{nodes[0]}", len(nodes))
    return out


def _count_steps(display: Shown) -> None:
    """A group box that feeds repeat boxes ran once per step (the model called in the
    loop): it says how many steps (``ac × 20``)."""
    d = display.nx
    for n, dd in d.nodes(data=True):
        if dd.get("kind") == "layer" and dd.get("group_kind") != "repeat" and not dd.get("step_range"):
            steps = {d.nodes[v].get("repeat", 0) for v in d.successors(n)} - {0}
            if steps:
                dd["steps"] = max(steps)


#: The kinds of groups a loop may call once per step (see open_one_step).
_STEPPED_KINDS = frozenset({"layer", "block", "function"})


def open_one_step(
    display: Shown, make: Callable[..., Shown], options: Options, entries: Mapping[str, int], keep=frozenset()
) -> Shown:
    """An open group that a loop entered once per step (``entries``: a model called once per
    step of an episode) shows one step at a time: step ``options.repeat_step`` opened, the
    steps before and after it one box each, and the loop's own ops of the other steps
    folded as repeats (``LogSoftmax ×19``). The outermost such group whose steps ran alike
    ops is stepped; a display
    with none (or ``collapsed=False``: every op its own box), or whose folding would close
    a cycle, is returned as it is."""
    tree = display.tree
    if options.collapsed is False:
        return display
    loops = sorted(
        (tree.groups[gid].level, gid)
        for gid, n in entries.items()
        if n >= REPEAT_LEAST
        and gid in tree.groups
        and gid not in display.collapsed
        # a model, layer or function of the user's: an inner gradient's or a TF call's ops
        # interleave with others by themselves, no loop runs them
        and all(tree.groups[a].kind in _STEPPED_KINDS for a in (gid, *tree.ancestors(gid)))
        and not any(a in display.collapsed for a in tree.ancestors(gid))
    )
    for _, gid in loops:
        of = loop_steps(display.source, tree, gid)
        steps = max(of.values(), default=-1) + 1
        if steps < REPEAT_LEAST or not alike_steps(display.source, of):
            continue
        k = options.repeat_step
        if not 0 <= k < steps:
            raise ValueError(f"repeat_step={k}: {tree.groups[gid].name} ran {steps} steps; pass one of 0–{steps - 1}.")
        # the variables every step reads in the opened step's boxes; where a step's state
        # feeds the next (an RNN) that closes a cycle, so they go with the first step
        for shared in (False, True):
            stepped = Stepped(gid, k, steps, loop_steps(display.source, tree, gid, shared=True) if shared else of)
            trial = make(display.collapsed, display.calls, display.runs or None, None, stepped)
            # the opened step's own ops stay themselves (an LSTM cell's three sigmoid gates
            # are alike, but not steps of the loop)
            repeats = fold_repeats(trial, set(keep) | {n for n, s in of.items() if s == k})
            if repeats:
                trial = make(display.collapsed, display.calls, display.runs or None, repeats, stepped)
            if nx.is_directed_acyclic_graph(trial.nx):
                return trial
    return display


def _count_with_runs(display: Shown) -> int:
    """The boxes a display has once each run of alike blocks is one box."""
    runs = {run.id: run for run in alike_runs(display).values()}
    return display.nx.number_of_nodes() - sum(len(run.groups) - 1 for run in runs.values())


def _acyclic(make: Callable[..., Shown], g: nx.MultiDiGraph, tree: GroupTree, chosen: set) -> Shown:
    """The display for the chosen groups, with a box per call where a group is left and
    entered again (a box with edges out and back in would be a cycle)."""
    display = make(chosen)
    if chosen and not nx.is_directed_acyclic_graph(display.nx):
        display = make(chosen, layer_calls(g, owners(tree, chosen)))
        # One box holds a call's ops even where no path joins them, so boxes can still
        # close a cycle no path of the graph makes: such groups stay open.
        while not nx.is_directed_acyclic_graph(display.nx):
            cycle = nx.find_cycle(display.nx)
            chosen = chosen - {display.nx.nodes[e[0]].get("layer") for e in cycle}
            display = make(chosen, layer_calls(g, owners(tree, chosen)))
    return display


def collapse(
    g: nx.MultiDiGraph,
    options: Options | None = None,
    *,
    threshold: int = COLLAPSE_THRESHOLD,
    bodies=None,
    **option_keywords,
) -> Shown:
    """Every recorded node as a box, grouped by name scope: ``collapsed="auto"`` collapses
    every innermost group (layer) when the graph has more than ``threshold`` ops,
    ``True``/``False`` all or none, or pass the group names to collapse (``depth`` /
    ``expand`` as in :func:`choose_closed`; the options as ``options=`` or keywords).
    ``bodies`` maps tf.function nodes to open to their bodies. (What ``show_all=True`` shows.)"""
    opts = Options.of(options, **option_keywords)
    tree = scope_tree(g)
    n_ops = sum(1 for _, d in g.nodes(data=True) if d.get("kind") == "op")
    chosen = choose_closed(tree, opts, default=lambda: leaf_groups(tree) if n_ops > threshold else set())
    return _acyclic(lambda ch, calls=None: Shown(g, tree, ch, bodies, calls=calls), g, tree, chosen)


# --------------------------------------------------------------------------- the decision


def decide(
    graph: TapeGraph,
    flow=None,
    options: Options | None = None,
    *,
    bodies=None,
    fit: int = FIT_BOXES,
    origin: Hashable | None = None,
    **option_keywords,
) -> Shown:
    """What a picture of ``graph`` (and ``flow``'s backward pass) shows (see the module
    docstring), under the picture's options (``options=`` or keywords): ``show_all``, and
    ``collapsed``, ``depth`` and ``expand``, which choose how far the hierarchy of groups
    opens (see :func:`choose_closed`). ``origin``: the op where a NaN, Inf or zero gradient
    starts (tapeviz.gradients.origin); when the groups are the picture's to choose
    (``collapsed="auto"``, no ``depth``), the groups holding it open too, so that the mark
    is on the op itself (a Sqrt, not the tf.norm box around it)."""
    opts = Options.of(options, **option_keywords)
    if opts.show_all:
        return collapse(graph.nx, opts, bodies=bodies)
    decision = _decision(graph, flow)
    shown = decision.shown(opts, bodies, fit)
    if origin is not None and opts.collapsed == "auto" and opts.depth is None:
        shown = _opened_to(decision, shown, opts, bodies, fit, origin)
    return shown


def _opened_to(decision: _Decision, shown: Shown, opts: Options, bodies, fit: int, node: Hashable) -> Shown:
    """``shown`` with the groups holding ``node`` opened (``expand``), outermost first,
    until it is a box of its own."""
    for _ in range(16):  # groups nest a few levels deep (a model, a block, a layer)
        box = shown.of.get(node)
        if box is None or box == node:
            return shown
        name = shown.nx.nodes[box].get("layer")
        if not name or name in opts.expand:
            return shown
        opts = dataclasses.replace(opts, expand=(*opts.expand, name))
        shown = decision.shown(opts, bodies, fit)
    return shown


#: flow -> its _Decision: what is a box, a chip or hidden, and the groups' tree, do not
#: depend on which groups are closed, and each new set of closed groups (a click that
#: opens a block in the explorer) asks again (ResNet50: ~150 ms of a 270 ms click).
_DECISIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _decision(graph: TapeGraph, flow) -> _Decision:
    if flow is None:
        return _Decision(graph, flow)
    got = _DECISIONS.get(flow)
    if got is None or got.graph is not graph:
        got = _DECISIONS[flow] = _Decision(graph, flow)
    return got


class _Decision:
    """Which nodes are boxes, which fold into chips, which hide; computed once."""

    def __init__(self, graph: TapeGraph, flow):
        self.graph = graph
        # weakly: _DECISIONS keeps a decision as long as its flow lives, not longer
        self._flow = weakref.ref(flow) if flow is not None else lambda: None
        G = graph.nx
        self.G = G
        self.order = graph.forward_order
        self.live = {n for n in G if self._is_live(n)}
        reach = self._reaching_targets()
        # The target is always drawn, even when it depends on nothing watched (a value
        # that came back from NumPy, a sum of constants): it is what the picture is about.
        targets = set(flow.target_nodes) if flow is not None else set()
        self.boxes: set = set()
        self.folded: set = set()
        for n in self.order:
            if n not in reach:
                continue
            if n in targets or n in self.live or self._kept_anyway(n):
                self.boxes.add(n)
            elif self._foldable(n):
                self.folded.add(n)
            else:
                self.boxes.add(n)  # a non-float value made from something drawn: keep the path visible
        self.hidden = set(G) - reach
        self.chips = self._chips()

    @property
    def flow(self):
        return self._flow()

    # -- what is what ----------------------------------------------------------------
    def _float_value(self, n) -> bool:
        info = self.graph.output_info(n)
        return info is not None and info.trainable and info.dtype not in ("resource", "variant")

    def _is_live(self, n) -> bool:
        """On the tape with a float value: something a gradient can flow through."""
        d = self.G.nodes[n]
        kind = d["kind"]
        if kind == "variable":
            return d["watched"] and self._float_value(n)
        if kind == "watched":
            return d["outputs"][0] in self.graph.capture.tape_watched and self._float_value(n)
        if kind == "op":
            return d["recorded"] and any(self.graph.tensors[t].trainable for t in d["outputs"])
        return False

    def _reaching_targets(self) -> set:
        G = self.G
        fl = self.flow
        targets = (
            list(fl.target_nodes)
            if fl is not None
            else [n for n in G if G.out_degree(n) == 0 and not G.nodes[n].get("unread")]
        )
        reach: set = set()
        for t in targets:
            reach |= nx.ancestors(G, t) | {t}
        extra: set = set()
        for n in G:
            if n in reach:
                continue
            d = G.nodes[n]
            if fl is not None and d.get("unread"):
                extra.add(n)  # a variable the block names but never read: its gradient is None, say why
                continue
            if (
                d["kind"] == "op"
                and d["op_type"] in STATEFUL_OPS
                and self.graph.capture.ops[d["op_index"]].tape_recording
            ):
                # an assign the user made into what the target reads (not a variable's
                # initializer: Keras runs those in tf.init_scope, where the tape is paused)
                var = self.graph.assigned_variable(n)
                if var is not None and var in reach and var in self.live:
                    extra |= nx.ancestors(G, n) | {n}
            elif fl is not None and getattr(fl.node_reason.get(n), "reason", None) is Reason.OUTSIDE_TF:
                extra |= nx.ancestors(G, n) | {n}  # a value that left TF on its way to the target
        return reach | extra

    def _kept_anyway(self, n) -> bool:
        """Not live, but a reader should see it as a box (with its reason)."""
        G = self.G
        d = G.nodes[n]
        kind = d["kind"]
        if kind == "variable":  # a float variable nobody watches (or the block never read): one expects its gradient
            return self._float_value(n) or bool(d.get("unread"))
        if kind == "watched":
            return True  # the user watched it, whatever its dtype
        if kind == "input":
            info = self.graph.output_info(n)
            data = info is not None and info.trainable and len(info.shape) > 0 and any(s != 1 for s in info.shape)
            return bool(d.get("name")) and self._float_value(n) or data
        if kind == "constant":
            return d.get("came_from") is not None or bool(d.get("name")) and self._float_value(n)
        if d["op_type"] in METADATA_OPS:
            return False
        why = self.flow.node_reason.get(n) if self.flow is not None else None
        if why is not None and why.reason in _SIGNIFICANT:
            return True
        return any(u in self.live for u, _ in G.in_edges(n))  # where a watched value stops carrying gradient

    def _foldable(self, n) -> bool:
        d = self.G.nodes[n]
        if d["kind"] == "op" and d["op_type"] in METADATA_OPS:
            return True
        return all(u in self.folded for u, _ in self.G.in_edges(n))

    # -- chips -----------------------------------------------------------------------
    def _chips(self) -> dict[Node, list[Chip]]:
        G = self.G
        out: dict[Node, list[Chip]] = {}
        for v in self.boxes:
            for u, _, _key, d in G.in_edges(v, keys=True, data=True):
                if u not in self.folded or d.get("kind") != "data":
                    continue
                members = tuple(a for a in nx.ancestors(G, u) if a in self.folded) + (u,)
                out.setdefault(v, []).append(self._chip(v, d["dst_index"], d["tensor"], members))
        for chips in out.values():
            chips.sort(key=lambda c: c.index)
        return out

    def _chip(self, consumer, index: int, tensor: int, members: tuple) -> Chip:
        G = self.G
        g = self.graph
        named = [
            G.nodes[m]["name"]
            for m in members
            if G.nodes[m]["kind"] in ("input", "constant", "variable") and G.nodes[m].get("name")
        ]
        if any("random" in G.nodes[m].get("op_type", "").lower() for m in members):
            op = G.nodes[consumer].get("op_type", "")
            mask = op in ("Mul", "SelectV2", "Select", "RealDiv")
            return Chip(Phrase("ui.chip.random_mask" if mask else "ui.chip.random_value"), "random", index, members)
        if named:
            return Chip(named[-1], "input", index, members)
        info = g.tensors[tensor]
        value = format_value(info.value, info.summary, max_items=4)
        op = G.nodes[consumer].get("op_type", "")
        n_inputs = len(g.capture.ops[G.nodes[consumer]["op_index"]].inputs) if G.nodes[consumer]["kind"] == "op" else 0
        role = _ROLES.get((op, index)) or (_ROLES.get((op, -1)) if index == n_inputs - 1 else None)
        return Chip(
            Phrase(f"ui.chip.role.{role}", value=value) if role else value,
            "value",
            index,
            members,
            value=(info.value, info.summary),
        )

    # -- groups and the display graph ------------------------------------------------
    @functools.cached_property
    def tree(self) -> GroupTree:
        """The groups of the boxes (whichever are closed)."""
        G = self.G
        targets = set(self.flow.target_nodes) if self.flow is not None else set()
        apis, loss_scopes = api_call_sites(self.graph, self.boxes)
        # groups in the order their ops ran (a topological order can visit a ReLU layer late)
        order = sorted(self.boxes, key=lambda n: G.nodes[n].get("op_index", -1))
        derivatives = derivative_paths(self.graph, self.boxes - targets)
        return build_tree(
            G,
            self.boxes,
            order,
            apis=apis,
            loss_scopes=loss_scopes,
            loose=targets,
            derivatives=derivatives,
            functions=function_paths(self.graph, self.boxes - targets),
            layer_scopes=getattr(self.graph.capture, "layer_scopes", ()),
        )

    @functools.cached_property
    def _ops(self) -> list:
        targets = set(self.flow.target_nodes) if self.flow is not None else set()
        return [n for n in self.boxes - targets if self.G.nodes[n]["kind"] == "op"]

    @functools.cached_property
    def differentiated(self) -> set:
        """Groups kept closed by default: what an inner gradient differentiates, and the
        user's functions that hold one."""
        return differentiated_groups(self.G, self.tree, derivative_sources(self.graph)) | derivative_contexts(
            self.tree, self._ops
        )

    @functools.cached_property
    def everything(self) -> set:
        """Groups never closed by default: one box for the whole picture tells nothing."""
        return holding_everything(self.tree, self._ops)

    def shown(self, options: Options, bodies, fit: int) -> Shown:
        G = self.G
        tree = self.tree
        links = getattr(self.flow, "left_links", ()) if self.flow is not None else ()

        def make(ch, calls=None, runs=None, repeats=None, stepped=None):
            return Shown(
                G,
                tree,
                ch,
                bodies,
                boxes=self.boxes,
                chips=self.chips,
                links=links,
                hidden=self.hidden,
                folded=self.folded,
                calls=calls,
                runs=runs,
                repeats=repeats,
                stepped=stepped,
            )

        fitted: list[int] = []
        differentiated, everything = self.differentiated, self.everything

        builtin = keras_layers(tree)
        always = [builtin]  # closed at every level by default (none in a one-layer model)

        def default() -> set:
            fitted.append(fitting_level(tree, self.boxes, fit, differentiated, everything, builtin))
            closed = tree.closed_below(fitted[0]) - everything | differentiated | builtin
            if builtin and tree.count_boxes(self.boxes, closed) < FEW_BOXES:
                # a one-layer model: its ops are the lesson
                always[0] = set()
                fitted[0] = fitting_level(tree, self.boxes, fit, differentiated, everything)
                closed = tree.closed_below(fitted[0]) - everything | differentiated
            return closed

        def closed_at(level: int) -> set:
            return tree.closed_below(level) - everything | differentiated | always[0]

        chosen = choose_closed(tree, options, default=default)
        display = _acyclic(make, G, tree, chosen)
        level = fitted[0] if fitted and not options.expand else 0
        while level > 1 and _count_with_runs(display) > fit:
            level -= 1  # a group split per call added boxes the count did not see
            display = _acyclic(make, G, tree, closed_at(level))
        if level:
            # a run of alike blocks is one box: a deeper level may fit once its runs are
            # counted so (48 alike decoder blocks are one box, not 48)
            grain = min((tree.groups[gid].level + 1 for gid in differentiated if gid in tree), default=tree.depth + 1)
            for deeper in range(level + 1, min(grain, tree.depth + 1) + 1):
                trial = _acyclic(make, G, tree, closed_at(deeper))
                if _count_with_runs(trial) > fit:
                    break
                display = trial
        runs = alike_runs(display)
        if runs:
            merged = make(display.collapsed, display.calls, runs)
            if nx.is_directed_acyclic_graph(merged.nx):
                display = merged
        if level and display.nx.number_of_nodes() > fit:
            targets = set(self.flow.target_nodes) if self.flow is not None else set()
            repeats = fold_repeats(display, targets)
            if repeats:
                folded = make(display.collapsed, display.calls, display.runs or None, repeats)
                if nx.is_directed_acyclic_graph(folded.nx):
                    _count_steps(folded)
                    display = folded
        targets = set(self.flow.target_nodes) if self.flow is not None else set()
        return open_one_step(display, make, options, self.entries, targets)

    @functools.cached_property
    def entries(self) -> dict[str, int]:
        """Group id -> how many times the recording entered it (a loop's model: once per step)."""
        return loop_entries(self.G, self.tree)

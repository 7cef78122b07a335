"""Which groups a picture opens: the tree of groups read by name scope, call and derivative,
and the groups drawn closed (one box each).

:func:`choose_closed` resolves the options that choose them (``collapsed``, ``depth``,
``expand``) for every picture, a file's or the explorer's; the picture's own default
opens the deepest level that fits (:func:`fitting_level`), keeps TF API calls, losses and
the groups an inner gradient differentiates through closed (:func:`differentiated_groups`),
and never closes a function group holding everything (:func:`holding_everything`). Which
nodes and chips a picture then shows, in those groups: :mod:`tapeviz.picture.visibility`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping

import networkx as nx

from ..record.graph import TapeGraph
from .groups import GroupTree, build_tree
from .options import AUTO, Options

__all__ = [
    "layer_groups",
    "scope_tree",
    "leaf_groups",
    "owners",
    "api_call_sites",
    "derivative_paths",
    "function_paths",
    "derivative_contexts",
    "holding_everything",
    "derivative_sources",
    "differentiated_groups",
    "choose_closed",
    "fitting_level",
    "layer_calls",
    "keras_layers",
]

Node = Hashable


def layer_groups(g: nx.MultiDiGraph) -> dict[Node, str | None]:
    """Node -> its innermost name-scope group (a layer), or None for nodes outside every
    layer. A variable or constant joins the layer of its first consumer."""
    tree = scope_tree(g)
    return {n: (tree.paths.get(n) or (None,))[-1] for n in g}


def scope_tree(g: nx.MultiDiGraph) -> GroupTree:
    """The groups of every recorded node by name scope only (what ``show_all`` shows)."""
    return build_tree(g, g.nodes, list(g), prefixes=False)


def api_call_sites(graph: TapeGraph, boxes: set) -> tuple[dict[Node, tuple[str, int, str]], set[str]]:
    """The API calls unscoped ops ran in ({node: (name, call, kind)}: "tf.clip_by_norm";
    a Keras loss or metric function by its own name, kind "loss"), and the scopes Keras
    loss objects opened."""
    ops = graph.capture.ops
    apis: dict[Node, tuple[str, int, str]] = {}
    for n in boxes:
        d = graph.nx.nodes[n]
        if d["kind"] != "op" or d.get("scope"):
            continue
        op = ops[d["op_index"]]
        if op.api:
            keras_fn = op.api.startswith("keras.")
            name = op.api.rsplit(".", 1)[-1] if keras_fn else op.api
            apis[n] = (name, op.api_call, "loss" if keras_fn else "api")
    return apis, set(getattr(graph.capture, "loss_scopes", ()))


def leaf_groups(tree: GroupTree) -> set[str]:
    """The innermost groups (holding no group): every layer as one box."""
    return {gid for gid, grp in tree.groups.items() if not grp.children}


def owners(tree: GroupTree, closed) -> dict[Node, str]:
    """Node -> the closed group whose box shows it (nodes in no closed group are left out)."""
    out = {}
    for n, path in tree.paths.items():
        for gid in path:
            if gid in closed:
                out[n] = gid
                break
    return out


def derivative_paths(graph: TapeGraph, boxes: Iterable[Node]) -> dict[Node, tuple[tuple[int, str, str], ...]]:
    """Ops an inner ``tape.gradient`` / ``jacobian`` call ran (capture's derivative records):
    op node -> the calls it ran in, outermost first, as (record index, title, call): a
    ``t2.gradient`` made inside another call's gradient function nests in it. Titles are
    how the user wrote the call ("du = ∂u/∂pts", see record.derivatives)."""
    return _call_paths(graph, boxes, graph.capture.derivatives, "derivative", lambda k, r: (k, r.title, r.call))


def function_paths(graph: TapeGraph, boxes: Iterable[Node]) -> dict[Node, tuple[tuple[int, str], ...]]:
    """Ops run inside calls of the user's own functions (capture's function records): op
    node -> those calls, outermost first, as (record index, title "gradient_penalty()")."""
    return _call_paths(graph, boxes, graph.capture.functions, "function", lambda k, r: (k, r.title))


def _call_paths(graph: TapeGraph, boxes: Iterable[Node], records, innermost: str, describe: Callable) -> dict:
    """Op node -> the nested calls it ran in (``records``, each knowing its ``parent``; the
    op record's ``innermost`` field names the innermost), outermost first, as ``describe``
    writes each."""
    if not records:
        return {}
    ops = graph.capture.ops
    out: dict = {}
    for n in boxes:
        d = graph.nx.nodes[n]
        k = getattr(ops[d["op_index"]], innermost) if d["kind"] == "op" else None
        if k is None:
            continue
        path = []
        while k is not None:
            path.append(describe(k, records[k]))
            k = records[k].parent
        out[n] = tuple(reversed(path))
    return out


def derivative_contexts(tree: GroupTree, ops: Iterable[Node]) -> set[str]:
    """The calls of the user's functions that hold an inner gradient (``gradient_penalty()``
    around ``gp_tape.gradient``): closed by default, as a TF API call is. The function is
    the derivative's context, named by its author; opened, it shows the inner tape's
    gradient as its own box. Not a function holding all the ``ops`` the picture draws (the
    target's whole computation, ``loss = pinn_loss(net, pts)``): its one box would leave
    nothing to see, so the picture opens it as any other level."""
    out = set()
    for gid, grp in tree.groups.items():
        if grp.kind == "derivative":
            out |= {a for a in tree.ancestors(gid) if tree.groups[a].kind == "function"}
    return out - holding_everything(tree, ops)


def holding_everything(tree: GroupTree, ops: Iterable[Node]) -> set[str]:
    """The function groups that hold every one of ``ops`` (the op boxes but the targets)."""
    held: dict[str, int] = {}
    n_ops = 0
    for n in ops:
        n_ops += 1
        for gid in tree.paths.get(n, ()):
            held[gid] = held.get(gid, 0) + 1
    return {gid for gid, k in held.items() if k == n_ops and tree.groups[gid].kind == "function"}


def derivative_sources(graph: TapeGraph) -> set[Node]:
    """The nodes of what inner gradient calls differentiated by (their ``sources``)."""
    out = set()
    for record in graph.capture.derivatives:
        for key in record.source_ids:
            node = f"var{key}" if f"var{key}" in graph.nx else getattr(graph.tensors.get(key), "node", None)
            if node is not None:
                out.add(node)
    return out


def differentiated_groups(g: nx.MultiDiGraph, tree: GroupTree, sources: Iterable[Node] = ()) -> set[str]:
    """The outermost groups an inner gradient differentiates through: those whose ops feed
    a derivative group (its backward ops read their activations). They are closed by
    default, whatever the picture's size: the inner gradient treats them as one function
    (u = pinn(pts)), and drawn open they would send an edge from every internal
    activation into the derivative's box. Outermost below what holds the derivative too:
    in ``gradient_penalty()`` it is the critic called there. A group holding one of the
    ``sources`` an inner gradient differentiates by stays as the picture has it: the
    source must be seen."""
    inside: dict[Node, str] = {}  # node -> the outermost derivative group holding it
    for n, path in tree.paths.items():
        kinds = [tree.groups[gid].kind for gid in path]
        if "derivative" in kinds:
            inside[n] = path[kinds.index("derivative")]
    out: set[str] = set()
    for n, gid in inside.items():
        around = {gid, *tree.ancestors(gid)}
        for p in g.predecessors(n):
            if inside.get(p) == gid:
                continue
            feeding = next((x for x in tree.paths.get(p, ()) if x not in around), None)
            if feeding is not None and tree.groups[feeding].kind != "derivative":
                out.add(feeding)
    held = {x for n in sources for x in tree.paths.get(n, ())}
    return out - held


def choose_closed(tree: GroupTree, options: Options, *, default: Callable[[], set] | None = None) -> set[str]:
    """The groups drawn closed (as one box each), from the options that choose them (every
    picture, a file's or the explorer's, resolves them here).

    ``collapsed``: "auto" (``default()``, or with ``depth=n`` the hierarchy opened n levels
    deep: groups at level n and deeper are boxes; TF API calls and losses stay boxes),
    True (every innermost group), False (none) or group names. ``expand`` then opens the
    named groups and every group holding them."""
    collapsed, depth, expand = options.collapsed, options.depth, options.expand
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise ValueError(f"depth={depth!r}: pass a whole number of levels >= 1 (1 shows the outermost groups as boxes)")
    if collapsed == AUTO:
        closed = tree.closed_below(depth) if depth is not None else (default() if default else set())
    elif depth is not None:
        raise ValueError("depth= chooses what collapsed='auto' opens; pass depth= or collapsed=, not both")
    elif collapsed is True:
        closed = leaf_groups(tree)
    elif collapsed is False or collapsed is None:
        closed = set()
    else:
        closed = {tree.find(name) for name in ([collapsed] if isinstance(collapsed, str) else collapsed)}
    for name in expand:
        gid = tree.find(name)
        closed -= {gid, *tree.ancestors(gid)}
    return closed


def keras_layers(tree: GroupTree) -> set[str]:
    """The groups of Keras's own layers (Dense, Conv2D, MultiHeadAttention...) not inside
    another: one box each by default, as a TF API call is (``expand=``, ``depth=`` or a
    click opens them)."""
    return {
        gid
        for gid, g in tree.groups.items()
        if g.builtin and not any(tree.groups[a].builtin for a in tree.ancestors(gid))
    }


def fitting_level(
    tree: GroupTree,
    boxes: Iterable[Node],
    fit: int,
    closed: set | frozenset = frozenset(),
    opened=frozenset(),
    always: set | frozenset = frozenset(),
) -> int:
    """The default depth: the hierarchy opened down to the deepest level whose picture
    still has at most ``fit`` boxes (API calls and losses closed at every level, and the
    groups ``closed`` too; the groups ``opened`` never closed), else 1.

    A picture keeps one grain: with groups ``closed`` whatever its size (the critic an
    inner gradient differentiates through, ``gradient_penalty()``), it opens no deeper
    than the level just below the shallowest of them, so that the generator beside a
    one-box critic is one box too, not its MatMul, BiasAdd and Tanh. The groups ``always``
    closed (Keras's own layers) are boxes at every level but set no grain."""
    boxes = list(boxes)
    deepest = min((tree.groups[gid].level + 1 for gid in closed if gid in tree), default=tree.depth + 1)
    for level in range(min(deepest, tree.depth + 1), 1, -1):
        if tree.count_boxes(boxes, tree.closed_below(level) - opened | closed | always) <= fit:
            return level
    return 1


def layer_calls(g: nx.MultiDiGraph, groups: Mapping[Node, str | None]) -> dict[Node, int]:
    """Node -> which call of its group it belongs to (0, 1, ...), for nodes in a group.

    A layer whose ops are left and entered again (a layer called twice, as with shared
    weights; ops in a model's own scope on both sides of a layer, as Keras's mixed-precision
    casts are) would collapse into one box with edges out of it and back in: a cycle. So
    each time a path leaves a layer and comes back, its ops start a new call, which gets
    a box of its own. Variables and constants go with their first consumer's call 0.
    """
    calls: dict[Node, int] = {}
    # node -> {layer: the highest call of that layer with a path to this node}
    reach: dict[Node, dict] = {}
    for n in nx.topological_sort(g):
        mine = groups.get(n)
        seen: dict = {}
        call = 0
        for p in g.predecessors(n):
            for layer, c in reach[p].items():
                if c > seen.get(layer, -1):
                    seen[layer] = c
            if mine is not None and mine in reach[p]:
                # a path from this layer's ops: the same call if p is in the layer,
                # a new call if it went through something outside the layer
                call = max(call, reach[p][mine] + (groups.get(p) != mine))
        if mine is not None:
            calls[n] = seen[mine] = call
        reach[n] = seen
    return calls

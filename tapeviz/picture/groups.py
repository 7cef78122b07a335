"""The hierarchy of groups a picture can open and close: models, blocks, layers, calls.

People think of a network in nested parts: ResNet50's stages hold blocks, a block holds
conv / batch-norm / relu layers, a TransformerBlock holds a MultiHeadAttention that holds
its query / key / value projections. The recording knows these parts from four
call-site facts, and this module turns them into one tree of plain records:

- **name scopes** (Keras layer paths: ``encoder/block0/multi_head_attention/query``):
  every scope prefix is a group, so nested models and layers inside layers nest;
- **TF API calls** the user wrote (``tf.clip_by_norm``: TF sets no scope for them when
  executing eagerly; capture names the call on the stack);
- **Keras losses and metrics** (loss objects open a name scope; capture notes which
  scopes a ``keras.losses.Loss`` opened; loss *functions* are named like TF API calls);
- **derivatives**: the ops an inner ``tape.gradient`` / ``jacobian`` call ran while the
  tape recorded ("du = ∂u/∂pts", see record.derivatives), whatever scopes they ran in; a
  call made inside another's nests in it;
- **the user's own functions** called from the tape's block (``gradient_penalty()``, see
  record.user_calls): the outermost level of all, one group per call, holding the
  layers, API calls and derivatives it ran;
- **name prefixes** in flat functional models, whose layers are all siblings but whose
  names carry the structure: ``conv3_block2_1_conv`` sits in ``conv3`` → ``conv3_block2``
  → ``conv3_block2_1``. Only consecutive siblings share a prefix group.

A group with a single member is not a group: it is replaced by that member (a ReLU
layer of one op is that op; ``compile_loss`` holding only ``mse`` is ``mse``).

The tree is built iteratively (no recursion: a 5,000-op model is a deep tree) in time
linear in the boxes times the depth of their scopes.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

import networkx as nx

__all__ = ["Group", "GroupTree", "build_tree", "ALWAYS_CLOSED", "GROUP_KINDS"]

Node = Hashable
#: Group kinds drawn as one box by default whatever the picture's size (they open like any group).
ALWAYS_CLOSED = frozenset({"api", "loss", "derivative"})


#: Every kind of Group, in the order the caption and the legend name them.
GROUP_KINDS = ("function", "block", "layer", "loss", "api", "derivative")


@dataclass(frozen=True)
class Group:
    """One group of the hierarchy, as plain data.

    ``id`` is its full path in the tree (``"resnet50/conv3/conv3_block2"``), unique in the
    picture; ``name`` the last part (what its box is titled); ``kind`` one of "layer"
    (a name scope holding ops only), "block" (a scope or name prefix holding groups),
    "api" (a TF API call), "loss" (a Keras loss or metric), "derivative" (an inner
    gradient call; ``note`` is the call, "t1.gradient") or "function" (a call of a
    function of the user's, named "gradient_penalty()"; ``note`` is the math of the
    inner gradients it holds, "∂d_hat/∂x_hat"); ``level`` 1 for the
    outermost groups; ``children`` the ids of the groups directly inside, in forward order;
    ``size`` how many boxes it holds when open all the way down.
    """

    id: str
    name: str
    kind: str
    parent: str | None
    level: int
    children: tuple[str, ...]
    size: int
    note: str = ""
    builtin: bool = False  # a layer of Keras's own (Dense, Conv2D, MultiHeadAttention): one box by default


class GroupTree:
    """Groups by id and each box's path (its groups, outermost first)."""

    def __init__(self, groups: Mapping[str, Group], paths: Mapping[Node, tuple[str, ...]]):
        self.groups = dict(groups)
        self.paths = dict(paths)
        self.depth = max((g.level for g in self.groups.values()), default=0)

    def __len__(self) -> int:
        return len(self.groups)

    def __contains__(self, gid: object) -> bool:
        return gid in self.groups

    def walk(self) -> list[Group]:
        """Every group, parents before children, siblings in forward order."""
        roots = [g for g in self.groups.values() if g.parent is None]
        out: list[Group] = []
        stack = list(reversed(roots))
        while stack:
            g = stack.pop()
            out.append(g)
            stack.extend(self.groups[c] for c in reversed(g.children))
        return out

    def ancestors(self, gid: str) -> list[str]:
        """The groups holding ``gid``, innermost first."""
        out = []
        parent = self.groups[gid].parent
        while parent is not None:
            out.append(parent)
            parent = self.groups[parent].parent
        return out

    def find(self, name: str) -> str:
        """The id of the group called ``name``: its id, or a unique ending of it at a ``/``
        (``"conv3_block2"`` finds ``"resnet50/conv3/conv3_block2"``)."""
        if name in self.groups:
            return name
        hits = [gid for gid in self.groups if gid.endswith("/" + name)]
        if len(hits) == 1:
            return hits[0]
        if hits:
            raise ValueError(f"The group name {name!r} is ambiguous: it ends {sorted(hits)}; pass one of those.")
        raise ValueError(f"No group named {name!r}; groups are: {[g.id for g in self.walk()]}")

    def owner(self, node: Node, closed: set | frozenset) -> str | None:
        """The closed group whose box shows ``node`` (its outermost closed group), or None."""
        for gid in self.paths.get(node, ()):
            if gid in closed:
                return gid
        return None

    def closed_below(self, depth: int) -> set[str]:
        """The groups closed when the picture opens the hierarchy ``depth`` levels deep:
        groups at level ``depth`` and deeper are boxes, and so is every group holding only
        ops (a layer) until ``depth`` passes the deepest group, which opens them all. API
        calls and losses are boxes at every level."""
        every_layer = depth > self.depth
        return {
            gid
            for gid, g in self.groups.items()
            if g.level >= depth or g.kind in ALWAYS_CLOSED or (not g.children and not every_layer)
        }

    def count_boxes(self, boxes: Iterable[Node], closed: set | frozenset) -> int:
        """How many boxes a picture of ``boxes`` has with these groups closed (before a
        group left and entered again is split per call)."""
        shown: set = set()
        for n in boxes:
            owner = self.owner(n, closed)
            shown.add(n if owner is None else owner)
        return len(shown)


# --------------------------------------------------------------------------- building


class _Raw:
    """A group while the tree is built (mutable; becomes a Group at the end)."""

    __slots__ = ("name", "kind", "items", "note", "builtin")

    def __init__(self, name: str, kind: str, note: str = "", builtin: bool = False):
        self.name = name
        self.kind = kind
        self.note = note
        self.builtin = builtin
        self.items: list = []  # child _Raw groups and box nodes, in forward order


def build_tree(
    g: nx.MultiDiGraph,
    boxes: Iterable[Node],
    order: Iterable[Node],
    *,
    apis: Mapping[Node, tuple[str, int, str]] | None = None,
    loss_scopes: Iterable[str] = (),
    prefixes: bool = True,
    loose: Iterable[Node] = (),
    derivatives: Mapping[Node, tuple[tuple[int, str, str], ...]] | None = None,
    functions: Mapping[Node, tuple[tuple[int, str], ...]] | None = None,
    layer_scopes: Iterable[str] = (),
) -> GroupTree:
    """The group tree of the boxes ``boxes`` of graph ``g`` (nodes carry ``kind`` and, for
    ops, ``scope``), visited in forward ``order``.

    ``apis`` maps unscoped ops to (name, call number, kind) of the API call that ran them
    ("tf.clip_by_norm", 3, "api"); ``loss_scopes`` are the scopes a Keras loss opened;
    ``prefixes`` adds groups for name prefixes shared by consecutive sibling layers;
    ``loose`` nodes stay outside every group (the targets, always drawn as themselves);
    ``derivatives`` maps ops an inner gradient call ran to those calls, outermost first, as
    (record index, title, call): they group by call before any scope or API call;
    ``functions`` maps ops to the calls of the user's functions they ran in, outermost
    first, as (record index, title): every other group of the op is made inside them.
    ``layer_scopes`` are the scopes Keras's own layers opened: their groups are ``builtin``,
    and one holding a single op keeps its box when it holds the layer's variables too (a
    Conv2D with no bias is its op and its kernel, not a loose kernel beside a Conv2D op).
    """
    boxes = set(boxes)
    loose = set(loose)
    apis = apis or {}
    derivatives = derivatives or {}
    functions = functions or {}
    losses = set(loss_scopes)
    layers = set(layer_scopes)
    root = _Raw("", "block")
    by_key: dict[tuple, _Raw] = {}
    by_scope: dict[int, dict[str, _Raw]] = {}  # per function call (or the root): its scope groups
    where: dict[Node, _Raw] = {}
    joiners = []
    for n in order:
        if n not in boxes:
            continue
        d = g.nodes[n]
        if n in loose:
            root.items.append(n)
            continue
        if d["kind"] in ("variable", "constant"):
            joiners.append(n)
            continue
        if d["kind"] != "op":
            root.items.append(n)
            continue
        scope = d.get("scope") or ""
        home = _function_group(root, by_key, functions[n]) if n in functions else root
        if n in derivatives:
            parent = _derivative_group(home, by_key, derivatives[n])
        elif scope:
            parent = _scope_group(scope, by_scope.setdefault(id(home), {}), home, losses, layers)
        elif n in apis:
            name, call, kind = apis[n]
            key = ("\0api", name, call)
            call_group = by_key.get(key)
            if call_group is None:
                call_group = by_key[key] = _Raw(name, kind)
                home.items.append(call_group)
            parent = call_group
        else:
            parent = home
        parent.items.append(n)
        where[n] = parent
    for n in joiners:  # a variable or constant joins the group of its first consumer drawn
        first = next((v for _, v in g.out_edges(n) if v in where), None)
        group = where[first] if first is not None else root
        if group.kind == "derivative" and g.nodes[n]["kind"] == "variable":
            group = root  # what an inner gradient differentiates by is its input, not part of it
        group.items.append(n)
    if prefixes:
        _add_prefix_groups(root)
    _dissolve_singletons(root, set(joiners))
    _name_inner_gradients(root)
    return _freeze(root)


def _name_inner_gradients(root: _Raw) -> None:
    """A function group's note: the inner gradients it holds ("∂d_hat/∂x_hat"), so that
    its closed box still names them."""
    for raw in _all(root):
        if raw.kind != "function":
            continue
        titles, stack = [], list(raw.items)
        while stack:
            it = stack.pop(0)
            if isinstance(it, _Raw):
                if it.kind == "derivative":  # its math: "grads = ∂d_hat/∂x_hat" -> ∂d_hat/∂x_hat
                    titles.append(it.name.split(" = ", 1)[-1].split(" (", 1)[0])
                else:
                    stack.extend(it.items)
        raw.note = ", ".join(titles)


def _function_group(root: _Raw, by_key: dict, calls: tuple[tuple[int, str], ...]) -> _Raw:
    """The group of the innermost of the user's function ``calls`` (outermost first)."""
    parent = root
    for index, title in calls:
        made = by_key.get(("\0function", index))
        if made is None:
            made = by_key[("\0function", index)] = _Raw(title, "function")
            parent.items.append(made)
        parent = made
    return parent


def _derivative_group(root: _Raw, by_key: dict, calls: tuple[tuple[int, str, str], ...]) -> _Raw:
    """The group of the innermost of ``calls`` (outermost first), made with its parents."""
    parent = root
    for index, title, call in calls:
        made = by_key.get(("\0derivative", index))
        if made is None:
            made = by_key[("\0derivative", index)] = _Raw(title, "derivative", call)
            parent.items.append(made)
        parent = made
    return parent


def _scope_group(
    scope: str, by_scope: dict[str, _Raw], root: _Raw, losses: set, layers: set | frozenset = frozenset()
) -> _Raw:
    """The group of name scope ``scope``, made with any missing outer scopes (each scope
    string is split once: linear in the scopes' lengths, however deep they nest)."""
    raw = by_scope.get(scope)
    if raw is not None:
        return raw
    missing = [scope]
    parent = root
    while "/" in missing[-1]:
        outer = missing[-1].rsplit("/", 1)[0]
        if outer in by_scope:
            parent = by_scope[outer]
            break
        missing.append(outer)
    for s in reversed(missing):
        raw = by_scope[s] = _Raw(s.rsplit("/", 1)[-1], "loss" if s in losses else "layer", builtin=s in layers)
        parent.items.append(raw)
        parent = raw
    return parent


_STAGE_BLOCK = re.compile(r"([A-Za-z]+\d+)([a-z]+)")  # EfficientNet's "block2a": stage 2, block a


def _tokens(item) -> list[str] | None:
    """A layer's name in the words a prefix is made of: ``conv3_block2_1_conv`` ->
    conv3, block2, 1, conv; a word such as ``block2a`` is two (block2, a), so
    EfficientNet's block2a and block2b share the stage block2."""
    if not (isinstance(item, _Raw) and item.kind == "layer" or _is_block(item)):
        return None
    out: list[str] = []
    for word in item.name.split("_"):
        m = _STAGE_BLOCK.fullmatch(word)
        out.extend(m.groups() if m else (word,))
    return out


def _prefix_name(name: str, tokens: list[str], k: int) -> str:
    """The part of ``name`` its first ``k`` tokens spell (with the underscores between them)."""
    end = 0
    for t in tokens[:k]:
        end = name.index(t, end) + len(t)
    return name[:end]


def _is_block(item) -> bool:
    return isinstance(item, _Raw) and item.kind == "block"


def _prefix_ok(tokens: list[str], k: int) -> bool:
    """Whether ``tokens[:k]`` may name a group: a stage / block name (``conv3``,
    ``block_5``, ``block1a``) or two words or more (``expanded_conv``), and not Keras's
    numbering of same-named layers (``dense_1`` is not part of a ``dense``)."""
    if k >= len(tokens):
        return False
    rest = tokens[k:]
    if len(rest) == 1 and rest[0].isdigit():
        return False
    return k >= 2 or any(c.isdigit() for c in tokens[k - 1])


def _add_prefix_groups(root: _Raw) -> None:
    """Group consecutive sibling layers whose names share a prefix, level by level."""
    todo = [(raw, 1) for raw in _all(root)]
    while todo:
        raw, start = todo.pop()
        items = raw.items
        out: list = []
        i = 0
        while i < len(items):
            toks = _tokens(items[i]) or []
            k = next((k for k in range(start, len(toks)) if _prefix_ok(toks, k)), None)
            j = i + 1
            while k is not None and j < len(items):
                other = _tokens(items[j])
                if not other or other[:k] != toks[:k] or not _prefix_ok(other, k):
                    break
                j += 1
            if k is None or j - i < 2:
                out.append(items[i])
                i += 1
                continue
            block = _Raw(_prefix_name(items[i].name, toks, k), "block")
            block.items = items[i:j]
            out.append(block)
            todo.append((block, k + 1))
            i = j
        raw.items = out


def _all(root: _Raw) -> list[_Raw]:
    """Every group under ``root`` (and root), parents before children."""
    out: list[_Raw] = []
    stack = [root]
    while stack:
        raw = stack.pop()
        out.append(raw)
        stack.extend(it for it in raw.items if isinstance(it, _Raw))
    return out


def _dissolve_singletons(root: _Raw, joiners: set) -> None:
    """Replace every group holding a single member by what it holds (children first).
    Variables and constants that joined a group are not members: a layer of one op and
    its kernel is that op (with its kernel beside it)."""
    for raw in reversed(_all(root)):  # children before parents
        items: list = []
        for it in raw.items:
            # a derivative keeps its box even for one op: its name says what the op computes
            own = sum(1 for x in it.items if x not in joiners) if isinstance(it, _Raw) else 0
            holds_variables = isinstance(it, _Raw) and it.builtin and len(it.items) > own
            if isinstance(it, _Raw) and it.kind != "derivative" and own == 1 and not holds_variables:
                if it.kind == "loss":  # compile_loss holding only mse: mse is the loss
                    for x in it.items:
                        if isinstance(x, _Raw) and x.kind != "api":
                            x.kind = "loss"
                items.extend(it.items)
            else:
                items.append(it)
        raw.items = items
        if raw.kind == "layer" and any(isinstance(it, _Raw) for it in items):
            raw.kind = "block"


def _freeze(root: _Raw) -> GroupTree:
    groups: dict[str, Group] = {}
    paths: dict[Node, tuple[str, ...]] = {}
    sizes: dict[int, int] = {}
    for raw in reversed(_all(root)):  # sizes, children first
        sizes[id(raw)] = sum(sizes[id(it)] if isinstance(it, _Raw) else 1 for it in raw.items)
    ids: dict[int, str] = {id(root): ""}
    levels: dict[int, int] = {id(root): 0}
    prefix: dict[int, tuple[str, ...]] = {id(root): ()}
    made: list[tuple[_Raw, str, str | None]] = []
    stack = [root]
    while stack:
        raw = stack.pop()
        for it in raw.items:
            if isinstance(it, _Raw):
                base = f"{ids[id(raw)]}/{it.name}" if ids[id(raw)] else it.name
                gid, k = base, 1
                while gid in groups:
                    k += 1
                    gid = f"{base} #{k}"
                ids[id(it)] = gid
                levels[id(it)] = levels[id(raw)] + 1
                prefix[id(it)] = prefix[id(raw)] + (gid,)
                groups[gid] = Group(
                    gid, it.name if k == 1 else f"{it.name} #{k}", it.kind, None, 0, (), 0, it.note, it.builtin
                )
                made.append((it, gid, ids[id(raw)] or None))
                stack.append(it)
            else:
                paths[it] = prefix[id(raw)]
    for it, gid, parent in made:
        children = tuple(ids[id(c)] for c in it.items if isinstance(c, _Raw))
        old = groups[gid]
        groups[gid] = Group(
            gid, old.name, old.kind, parent, levels[id(it)], children, sizes[id(it)], old.note, old.builtin
        )
    return GroupTree(groups, paths)

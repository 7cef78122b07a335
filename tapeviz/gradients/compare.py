"""Two backward passes of the same program side by side: how much each edge's and each
node's gradient changed (‖g_b‖ / ‖g_a‖), which lost it, and the largest changes.

Two recordings have "the same structure" when their nodes line up one to one: the same
kinds and op types in the order they were recorded, and the same edges between them. Ops
that only pass a value on (tf.stop_gradient, tf.identity) are looked through, so a
program run with and without a ``tf.stop_gradient`` compares: the edge into the stop is
where b's gradient is lost. Anything else that differs is an error naming the first op
that does.

Every number is read from the flows (what TF's gradient functions passed back); with
``clip``, b's variable gradients are clipped by the TF function a training step would
call (tapeviz.gradients.clipping), as the optimizer would receive them. The result is
data a picture can colour by: ``node_ratio`` / ``edge_ratio`` per node and edge of a.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np
import tensorflow as tf

from ..record.graph import TapeGraph
from .clipping import check_settings, clip
from .flow import GradientFlow

#: Ops a structure comparison looks through: they pass their input on unchanged.
PASS_THROUGH = frozenset({"StopGradient", "Identity", "PreventGradient"})


class Change(str, Enum):
    """How a gradient changed from a to b; compares equal to its code."""

    SAME = "same"  # bit for bit the same norm
    CHANGED = "changed"  # both carry a gradient, of another norm
    LOST = "lost"  # a carries a gradient, b none (None)
    ZEROED = "zeroed"  # a carries a nonzero gradient, b exactly zero
    GAINED = "gained"  # b carries a gradient where a has none
    NONE = "none"  # neither carries one

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Row:
    """One node or edge of the comparison: its name, both norms, their ratio."""

    kind: str  # "node" or "edge"
    key: Any  # a's node id, or a's edge (producer, consumer, input position)
    name: str  # "w", "x → Mul"
    norm_a: float | None  # ‖g_a‖ (None: no gradient)
    norm_b: float | None  # ‖g_b‖
    ratio: float | None  # ‖g_b‖ / ‖g_a‖ (inf when only b has one; None when neither)
    change: Change

    @property
    def log_change(self) -> float:
        """The absolute log10 of the ratio: how far from "unchanged" (inf for a lost or gained gradient)."""
        if self.change in (Change.LOST, Change.ZEROED, Change.GAINED):
            return math.inf
        if self.ratio is None or self.ratio <= 0 or not math.isfinite(self.ratio):
            return math.inf if self.ratio is not None else 0.0
        return abs(math.log10(self.ratio))


class StructureMismatch(ValueError):
    """The two recordings are not of the same program: the first op that differs."""


@dataclass
class Comparison:
    """The per-node and per-edge comparison of two backward passes (b against a)."""

    a: GradientFlow
    b: GradientFlow
    nodes: dict = field(default_factory=dict)  # a's node id -> Row
    edges: dict = field(default_factory=dict)  # a's edge -> Row
    node_map: dict = field(default_factory=dict)  # a's node id -> b's node id
    clip: str = "none"  # how b's variable gradients were clipped

    def node_ratio(self, node: Hashable) -> float | None:
        """‖g_b‖ / ‖g_a‖ at one of a's nodes (a picture colours the node by it)."""
        row = self.nodes.get(node)
        return None if row is None else row.ratio

    def edge_ratio(self, edge: tuple) -> float | None:
        """‖g_b‖ / ‖g_a‖ along one of a's edges (u, v, input position)."""
        row = self.edges.get(tuple(edge))
        return None if row is None else row.ratio

    def ratio(self, obj: Any) -> float | None:
        """‖g_b‖ / ‖g_a‖ of a variable, a tensor seen by a's tape, or a node id of a."""
        node = self.a.graph.node_of(obj)
        if node is None:
            raise ValueError(f"{getattr(obj, 'name', type(obj).__name__)} is not something a's tape saw.")
        return self.node_ratio(node)

    def lost(self) -> list[Row]:
        """Edges and nodes whose gradient b lost (None or all zero where a has one)."""
        return [r for r in self._all() if r.change in (Change.LOST, Change.ZEROED)]

    def rows(self, n: int | None = 10, *, kind: str | None = None) -> list[Row]:
        """The largest changes first (lost and gained gradients, then by the absolute log
        of the ratio), at most ``n`` (None: all); ``kind`` "node" or "edge" keeps one kind."""
        if kind not in (None, "node", "edge"):
            raise ValueError(f'kind must be "node", "edge" or None, got {kind!r}.')
        rows = [r for r in self._all() if r.change is not Change.NONE and (kind is None or r.kind == kind)]
        rows.sort(key=lambda r: -r.log_change)
        return rows if n is None else rows[:n]

    def _all(self) -> list[Row]:
        return [*self.nodes.values(), *self.edges.values()]

    def table(self, n: int | None = 10) -> str:
        """The largest changes as a plain-text table."""
        head = ("", "name", "‖g_a‖", "‖g_b‖", "b / a", "change")
        body = [(r.kind, r.name, _num(r.norm_a), _num(r.norm_b), _num(r.ratio), r.change.value) for r in self.rows(n)]
        widths = [max(len(str(row[i])) for row in [head, *body]) for i in range(len(head))]
        lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [head, *body]]
        return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("", "name", "‖g_a‖", "‖g_b‖", "b / a", "change"))
        body = "".join(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(c))}</td>"
                for c in (r.kind, r.name, _num(r.norm_a), _num(r.norm_b), _num(r.ratio), r.change.value)
            )
            + "</tr>"
            for r in self.rows(10)
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return (
            f"Comparison(nodes={len(self.nodes)}, edges={len(self.edges)}, lost={len(self.lost())}, clip={self.clip!r})"
        )


def _num(v: float | None) -> str:
    if v is None:
        return "—"
    if math.isinf(v):
        return "∞"
    if math.isnan(v):
        return "NaN"
    return f"{v:.4g}"


# -- building it ----------------------------------------------------------------------------
def compare_flows(
    a: GradientFlow,
    b: GradientFlow,
    *,
    clip_mode: str = "none",
    clip_norm: float = 1.0,
    clip_value: tuple[float, float] = (-1.0, 1.0),
) -> Comparison:
    """Compare b's backward pass with a's (see the module's docstring)."""
    check_settings(clip_mode, clip_norm, clip_value)
    node_map, edge_map = match(a.graph, b.graph)
    norm_b = _clipped_norms(b, clip_mode, clip_norm, clip_value)
    out = Comparison(a, b, node_map=node_map, clip=clip_mode)
    for na, nb in node_map.items():
        out.nodes[na] = _row("node", na, a.graph.display_name(na), _node_norm(a, na), norm_b(nb))
    for ea, eb in edge_map.items():
        name = f"{a.graph.display_name(ea[0])} → {a.graph.display_name(ea[1])}"
        out.edges[ea] = _row("edge", ea, name, _edge_norm(a, ea), _edge_norm(b, eb))
    return out


def _row(kind: str, key: Any, name: str, na: float | None, nb: float | None) -> Row:
    if na is None and nb is None:
        return Row(kind, key, str(name), None, None, None, Change.NONE)
    if nb is None:
        return Row(kind, key, str(name), na, None, None, Change.LOST)
    if na is None:
        return Row(kind, key, str(name), None, nb, math.inf, Change.GAINED)
    if na > 0 and nb == 0:
        return Row(kind, key, str(name), na, nb, 0.0, Change.ZEROED)
    if na == 0:
        ratio = 1.0 if nb == 0 else math.inf
    else:
        ratio = nb / na
    return Row(kind, key, str(name), na, nb, ratio, Change.SAME if na == nb else Change.CHANGED)


def _node_norm(fl: GradientFlow, node: Any) -> float | None:
    if fl.computed_tensor(node) is None:
        return None
    return math.sqrt(fl.sum_squares(node))


def _edge_norm(fl: GradientFlow, edge: tuple) -> float | None:
    g = fl.edge_grad(*edge)
    if g is None or g.dtype.kind not in "fc":
        return None
    return float(np.linalg.norm(np.asarray(g, dtype=np.float64).ravel()))


def _clipped_norms(fl: GradientFlow, mode: str, clip_norm: float, clip_value) -> Callable[[Any], float | None]:
    """node -> ‖g‖ of b, its variables' gradients clipped as ``mode`` says (by TF)."""
    if mode == "none":
        return lambda node: _node_norm(fl, node)
    g = fl.graph
    variables = [n for n, d in g.nx.nodes(data=True) if d["kind"] == "variable" and fl.computed_tensor(n) is not None]
    clipped = clip({n: fl.computed_tensor(n) for n in variables}, mode, clip_norm, clip_value)

    def norm(node):
        if node in clipped:
            t = tf.convert_to_tensor(clipped[node])
            return float(np.linalg.norm(np.asarray(t, dtype=np.float64).ravel()))
        return _node_norm(fl, node)

    return norm


# -- the structure ------------------------------------------------------------------------------
def match(a: TapeGraph, b: TapeGraph) -> tuple[dict, dict]:
    """(a's node -> b's node, a's edge -> b's edge): nodes paired in recording order, pass-
    through ops looked through; a StructureMismatch names the first op that differs."""
    seq_a, seq_b = _sequence(a), _sequence(b)
    node_map: dict = {}
    for k in range(max(len(seq_a), len(seq_b))):
        na = seq_a[k] if k < len(seq_a) else None
        nb = seq_b[k] if k < len(seq_b) else None
        if na is None or nb is None or _signature(a, na) != _signature(b, nb):
            raise StructureMismatch(_mismatch(a, b, na, nb, k))
        node_map[na] = nb
    edges_a, edges_b = _contracted_edges(a), _contracted_edges(b)
    back = {nb: na for na, nb in node_map.items()}
    edge_map: dict = {}
    for (u, v, k), first_a in edges_a.items():
        key_b = (node_map[u], node_map[v], k)
        if key_b not in edges_b:
            raise StructureMismatch(_mismatch(a, b, v, node_map[v], seq_a.index(v), edge=True))
        edge_map[first_a] = edges_b[key_b]
    for u, v, k in edges_b:
        if (back[u], back[v], k) not in edges_a:
            raise StructureMismatch(_mismatch(a, b, back[v], v, seq_a.index(back[v]), edge=True))
    return node_map, edge_map


def _passes(g: TapeGraph, node: Any) -> bool:
    d = g.nx.nodes[node]
    return d["kind"] == "op" and d.get("op_type") in PASS_THROUGH


def _sequence(g: TapeGraph) -> list:
    return [n for n in g.nx.nodes if not _passes(g, n)]


def _signature(g: TapeGraph, node: Any) -> tuple:
    d = g.nx.nodes[node]
    return (d["kind"], d.get("op_type"))


def _contracted_edges(g: TapeGraph) -> dict:
    """(producer, consumer, input position) with pass-through ops looked through -> the
    first hop out of the producer (whose gradient is what the producer gets by that use)."""
    out: dict = {}
    for u, v, k, _ in g.data_edges():
        if _passes(g, u):
            continue
        first = (u, v, k)
        while _passes(g, v):
            nxt = [(vv, kk) for _, vv, kk, _ in g.data_edges(v)]
            if len(nxt) != 1:
                break
            v, k = nxt[0]
        out[(u, v, k)] = first
    return out


def _mismatch(a: TapeGraph, b: TapeGraph, na: Any, nb: Any, k: int, edge: bool = False) -> str:
    def say(g, n):
        if n is None:
            return "nothing (the recording ends there)"
        d = g.nx.nodes[n]
        what = d.get("op_type") or d["kind"]
        index = d.get("op_index")
        line = g.capture.ops[index].line if index is not None else 0
        return f"{what}" + (f" ({g.display_name(n)})" if d.get("name") else "") + (f" on line {line}" if line else "")

    if edge:
        return (
            f"The two recordings differ at their node {k}: {say(a, na)} in a and {say(b, nb)} in b take "
            "different inputs. tv.compare needs the same program recorded twice (the same ops in the same "
            "order; tf.stop_gradient and tf.identity may differ)."
        )
    return (
        f"The two recordings differ at their node {k}: a has {say(a, na)}, b has {say(b, nb)}. tv.compare needs "
        "the same program recorded twice (the same ops in the same order; tf.stop_gradient and tf.identity may "
        "differ): compare two steps of one training loop, or one program with and without clipping."
    )

"""A loop's steps inside one group: which call of a model called once per step each of
its nodes belongs to, so that opening the repeat shows one step at a time.

A model called in a loop inside one tape (an RL episode's ``ac(state)`` per step) runs its
ops once per step, in order, with the loop's own ops (the log-softmax of each step's
logits) recorded between two calls. Those in-between ops mark where one step ends and the
next begins; the recording order, not the graph's paths, tells them apart (the steps of
an episode share no path: each starts from its own state).
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import networkx as nx

from .groups import GroupTree

__all__ = ["Stepped", "alike_steps", "loop_entries", "loop_steps"]

Node = Hashable


@dataclass(frozen=True)
class Stepped:
    """A group opened one step at a time: step ``step`` of its ``steps`` is drawn opened,
    the steps before it and after it are one box each."""

    gid: str  # the group (the model called once per step)
    step: int  # the step drawn opened
    steps: int  # how many steps the loop ran
    of: Mapping[Node, int]  # the group's nodes -> their step

    def side(self, n: Node) -> tuple[int, int] | None:
        """The steps (first, last) of the folded box node ``n`` is drawn in: the steps before
        the opened one, or after it; None for the opened step's nodes and the group's others."""
        k = self.of.get(n)
        if k is None or k == self.step:
            return None
        return (0, self.step - 1) if k < self.step else (self.step + 1, self.steps - 1)


def loop_steps(g: nx.MultiDiGraph, tree: GroupTree, gid: str, *, shared: bool = False) -> dict[Node, int]:
    """The group's ops -> their step (0, 1, ...), in recording order, a new step wherever an
    op outside the group was recorded between two of its ops. The variables and constants
    every step reads are left out (drawn in the opened step's boxes: ``torso`` keeps its
    kernel), or with ``shared=True`` go with their first consumer's step."""
    members = [n for n, path in tree.paths.items() if gid in path and n in g]
    inside = set(members)
    ops = sorted(
        (d["op_index"], n) for n in members if (d := g.nodes[n]).get("kind") == "op" and d.get("op_index") is not None
    )
    outside = sorted(
        d["op_index"]
        for n, d in g.nodes(data=True)
        if n not in inside and d.get("kind") == "op" and d.get("op_index") is not None
    )
    steps: dict[Node, int] = {}
    step, last = 0, None
    for index, n in ops:
        if last is not None and bisect.bisect_right(outside, last) < bisect.bisect_left(outside, index):
            step += 1  # the loop ran ops of its own between two of the group's: a new call
        steps[n] = step
        last = index
    for n in members if shared else ():
        if n not in steps:
            after = [steps[v] for v in g.successors(n) if v in steps]
            steps[n] = min(after, default=0)
    return steps


def loop_entries(g: nx.MultiDiGraph, tree: GroupTree) -> dict[str, int]:
    """Group id -> how many times the recording entered it: ops in recording order, a group
    entered again when an op outside it ran since its last op (a model called once per
    step of a loop: 20 for an episode of 20 steps). One pass over the ops."""
    ops = sorted(
        (d["op_index"], n) for n, d in g.nodes(data=True) if d.get("kind") == "op" and d.get("op_index") is not None
    )
    entries: dict[str, int] = {}
    inside: frozenset = frozenset()
    for _, n in ops:
        path = frozenset(tree.paths.get(n, ()))
        for gid in path - inside:
            entries[gid] = entries.get(gid, 0) + 1
        inside = path
    return entries


def alike_steps(g: nx.MultiDiGraph, of: Mapping[Node, int]) -> bool:
    """Whether every step ran the same ops in the same order (a loop calling one model),
    not a function whose ops interleave with another's (a gradient penalty calling the
    critic it differentiates)."""
    runs: dict[int, list] = {}
    for n, k in sorted(of.items(), key=lambda item: g.nodes[item[0]].get("op_index", -1)):
        if g.nodes[n].get("kind") == "op":
            runs.setdefault(k, []).append(g.nodes[n]["op_type"])
    firsts = list(runs.values())
    return len(firsts) > 1 and all(r == firsts[0] for r in firsts[1:])

"""Where a picture's NaN, Inf or zero gradient starts, as plain data for the picture to mark.

``tv.explain`` answers for one source; a picture has no source asked about, so this module
asks on its behalf: the first source (a variable or a watched tensor, in the order the
tape saw them) whose gradient is NaN or Inf, else the first whose gradient is all zero
although the target depends on it at an op of a known pattern (a dead ReLU, a
saturated sigmoid ...), and returns the diagnosis's op, the backward path
from that op to the source (the recorded edges that carried the gradient), the backward
step where it starts and the diagnosis's sentences in every language. A flow whose
sources all get finite gradients that are not all zero has no origin: its picture gets
no mark, unless the target's own forward value is NaN or Inf: then the forward op that made
it is the origin, as tv.explain names it. Nothing here computes a gradient; it reads the flow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from ..messages import LANGUAGES
from .diagnose import Diagnosis, explain_flow
from .flow import GradientFlow
from .numeric import Pattern, Problem, number

__all__ = ["Origin", "flow_origin", "path_edges"]

#: The node kinds a picture's diagnosis looks at as sources.
_SOURCE_KINDS = ("variable", "watched", "input")


@dataclass(frozen=True)
class Origin:
    """The op where a NaN, Inf or zero gradient starts, and its path back to a source.

    ``node`` is the op's recorded node, ``source`` the source node whose gradient it
    reaches; ``edges`` the recorded edges (producer, consumer, key) on the backward path
    from ``node`` to ``source`` that carried a gradient; ``step`` the backward step at
    which it starts (0 when the forward pass made the target NaN or Inf: the seed is
    already bad); ``problem`` and ``pattern`` the diagnosis's codes; ``value`` what the
    bad elements are ("NaN", "∞", "0" ...; for a forward problem, what the op made: "-∞");
    ``summary`` and ``text`` the diagnosis's sentences by language (``summary``: what and
    where; ``text``: all of it, with the fix)."""

    node: Any
    source: Any
    problem: str
    pattern: str
    value: str
    step: int
    edges: frozenset
    line: int = 0
    summary: dict[str, str] = field(default_factory=dict)
    text: dict[str, str] = field(default_factory=dict)
    diagnosis: Diagnosis | None = field(default=None, compare=False, repr=False)


def flow_origin(fl: GradientFlow) -> Origin | None:
    """The origin of the first bad gradient of the flow's sources (see the module), or None
    when every source's gradient is finite and not all zero. Kept on the flow: every
    picture of it asks."""
    cache = fl.__dict__.setdefault("_origin", {})
    if "origin" not in cache:
        cache["origin"] = _find(fl)
    return cache["origin"]


def _find(fl: GradientFlow) -> Origin | None:
    g = fl.graph
    sources = [n for n in g.forward_order if g.nx.nodes[n]["kind"] in _SOURCE_KINDS]
    non_finite: list[Any] = []
    zero: list[Any] = []
    for n in sources:
        grad = fl.computed(n)
        if grad is None or grad.dtype.kind not in "fc":
            continue
        squares = fl.sum_squares(n)  # kept by the flow: a finite, non-zero sum is a healthy gradient
        if math.isfinite(squares) and squares > 0:
            continue
        (zero if math.isfinite(squares) else non_finite).append(n)
    if not non_finite and not zero and not _target_finite(fl):
        # the loss itself is NaN or Inf although every gradient is finite (log of a negative
        # number whose derivative 1/x is fine): the forward op that made it is named
        non_finite = sources
    for n in non_finite + zero:
        d = explain_flow(fl, n)
        if d is None or d.finding is None or d.finding.node is None:
            continue
        if d.reason is Problem.ZERO and d.finding.pattern is Pattern.OTHER:
            # a zero of no known pattern is mostly a sum that comes to exactly 0 (a BatchNorm
            # beta on 1×1 maps, a bias under mean(fake) - mean(real)): tv.explain says so, but
            # the op it names is not at fault, so the picture marks nothing
            continue
        return _origin(fl, n, d)
    return None


def _target_finite(fl: GradientFlow) -> bool:
    """Whether the forward value of every target is finite (a target with no value kept:
    nothing to say, taken as finite)."""
    for t in fl.target_nodes:
        v = fl.graph.value_of(t)
        if v is not None and np.asarray(v).dtype.kind in "fc" and not np.all(np.isfinite(v)):
            return False
    return True


def _origin(fl: GradientFlow, source: Any, d: Diagnosis) -> Origin:
    f = d.finding
    assert f is not None
    value = f.value
    if d.reason is Problem.FORWARD and f.result is not None and not math.isfinite(f.result):
        value = number(f.result)  # what the op made (-∞ out of a log), not what the target became
    langs = {lang: d.in_language(lang) for lang in LANGUAGES}
    return Origin(
        node=f.node,
        source=source,
        problem=Problem(d.reason).value,
        pattern=f.pattern.value,
        value=value,
        step=f.step,
        edges=frozenset(path_edges(fl, f.node, source)),
        line=f.line,
        summary={lang: x.summary() for lang, x in langs.items()},
        text={lang: x.text() for lang, x in langs.items()},
        diagnosis=d,
    )


def path_edges(fl: GradientFlow, origin: Any, source: Any) -> set:
    """The recorded edges on a path source → … → origin (forward direction) that carried a
    gradient: the way the bad gradient went back from the op where it starts to the source."""
    g = fl.graph.nx
    if origin not in g or source not in g:
        return set()
    after_source = nx.descendants(g, source) | {source}
    before_origin = nx.ancestors(g, origin) | {origin}
    return {
        (u, v, k)
        for u, v, k in g.edges(keys=True)
        if u in after_source and v in before_origin and v in after_source and fl.carries((u, v, k))
    }

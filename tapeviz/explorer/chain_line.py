"""The step's chain rule as the explorer shows it under the picture: pieces of text, each
term carrying the ids of the picture's elements it comes from.

The words are :mod:`tapeviz.gradients.chain_words`' (the message catalogues', en and zh);
nothing here writes a sentence of its own or reads one back. To know which piece of a line
names which box or arrow, the step's values are handed to the writer with every name and
number wrapped in a marker (three private-use characters and an index): the writer puts
them where its template says, and the line is cut at the markers it returns. So the joined
pieces are exactly the writer's line (a test holds it), and a piece's ids come from the
flow's data (the node, the edge), never from its text.

A piece's ids are canvas element ids (``node-<box>``, ``edge-<u>-<v>-<k>``) as the picture
draws them: a node folded into a collapsed group names the group's box; an edge into one
names the merged arrow.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, replace
from typing import Any

from ..gradients import formulas
from ..gradients.chain_rule import symbols
from ..gradients.chain_steps import Amount, ChainStep, GroupStep, Link, Term
from ..gradients.chain_words import group_lines, step_lines
from ..gradients.flow import Edge, GradientFlow
from ..picture.visibility import Shown

__all__ = ["Piece", "ChainLine", "Refs", "step_line", "group_line", "line_html", "refs_of"]

_OPEN, _MID, _CLOSE = "\ue000", "\ue001", "\ue002"
_MARKED = re.compile(f"{_OPEN}(\\d+){_MID}(.*?){_CLOSE}", re.S)


@dataclass(frozen=True)
class Piece:
    """A run of a line's text; ``refs``: the canvas element ids it names (none: plain words)."""

    text: str
    refs: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChainLine:
    """What the explorer shows under the picture at one step: the lines of its chain rule
    (a step's, a collapsed group's), each a tuple of pieces."""

    lines: tuple[tuple[Piece, ...], ...]

    def texts(self) -> list[str]:
        """Each line as plain text (the writer's own line)."""
        return ["".join(p.text for p in line) for line in self.lines]

    def text(self) -> str:
        return "\n".join(self.texts())


class Refs:
    """Canvas element ids of the flow's nodes and edges in one picture (``display``)."""

    def __init__(self, flow: GradientFlow, display: Shown | None):
        self.flow = flow
        self.display = display
        # a symbol names one node when no other node has it (two variables both called "x"
        # name none: better no highlight than the wrong box)
        by_symbol: dict[str, list[str]] = {}
        for n, s in symbols(flow).items():
            by_symbol.setdefault(s, []).append(n)
        self.node_of_symbol = {s: ns[0] for s, ns in by_symbol.items() if len(ns) == 1}

    def box(self, node: Any) -> Any:
        """The box ``node`` is drawn as (itself, or the collapsed group holding it; None: not drawn)."""
        if self.display is None:
            return node
        return self.display.of.get(node)

    def node(self, node: Any) -> tuple[str, ...]:
        box = self.box(node)
        return () if box is None else (f"node-{box}",)

    def symbol(self, name: str) -> tuple[str, ...]:
        node = self.node_of_symbol.get(name)
        return () if node is None else self.node(node)

    def edge(self, edge: Edge) -> tuple[str, ...]:
        u, v, k = edge
        if self.display is None:
            return (f"edge-{u}-{v}-{k}",)
        return tuple(f"edge-{a}-{b}-{c}" for a, b, c in sorted(self.display.display_edges_of([edge]), key=str))


class _Marks:
    """Markers put into a step's values, and the ids each stands for."""

    def __init__(self) -> None:
        self.refs: list[tuple[str, ...]] = []
        self._index: dict[tuple[str, tuple[str, ...]], int] = {}

    def __call__(self, text: str, refs: tuple[str, ...]) -> str:
        if not refs or not text:
            return text
        i = self._index.setdefault((text, refs), len(self.refs))
        if i == len(self.refs):
            self.refs.append(refs)
        return f"{_OPEN}{i}{_MID}{text}{_CLOSE}"

    def amount(self, a: Amount | None, refs: tuple[str, ...]) -> Amount | None:
        return None if a is None else replace(a, text=self(a.text, refs))

    def split(self, line: str) -> tuple[Piece, ...]:
        out: list[Piece] = []
        at = 0
        for m in _MARKED.finditer(line):
            if m.start() > at:
                out.append(Piece(line[at : m.start()]))
            out.append(Piece(m.group(2), self.refs[int(m.group(1))]))
            at = m.end()
        if at < len(line):
            out.append(Piece(line[at:]))
        return tuple(out)


def _marked_link(link: Link, mark: _Marks, refs: Refs, arriving_refs: tuple[str, ...]) -> Link:
    edge = refs.edge(link.edge)
    source = refs.node(link.edge[0])
    if link.result is None:  # a stopped input: its name names its box and the arrow nothing crosses
        source = source + edge
    renamed = {name: mark(name, refs.symbol(name)) for name in link.names.values() if name != link.input}
    renamed[link.input] = mark(link.input, source)
    formula = None if link.formula is None else formulas.bind(link.formula, {}, renamed)
    return replace(
        link,
        input=renamed[link.input],
        arriving=mark.amount(link.arriving, arriving_refs),
        result=mark.amount(link.result, edge),
        local=mark.amount(link.local, edge),
        names={arg: renamed.get(name, name) for arg, name in link.names.items()},
        formula=formula,
    )


def _marked_term(term: Term, mark: _Marks, refs: Refs) -> Term:
    amount = mark.amount(term.amount, refs.edge(term.edge))
    assert amount is not None
    return replace(term, consumer=mark(term.consumer, refs.node(term.edge[1])), amount=amount)


def step_line(step: ChainStep, refs: Refs, lang: str) -> ChainLine:
    """Step ``step``'s chain rule in ``lang``: the writer's lines, cut into pieces that name
    the boxes and arrows of ``refs``' picture (the op's box for ∂z/∂p and the arriving
    gradient, the input's box, the edge for the local derivative and what it passes)."""
    mark = _Marks()
    fl = refs.flow
    here = refs.node(step.node)
    marked = replace(
        step,
        name=mark(step.name, here),
        target=mark(step.target, refs.node(fl.target_nodes[0])),
        arriving=mark.amount(step.arriving, here),
        terms=tuple(_marked_term(t, mark, refs) for t in step.terms),
        links=tuple(_marked_link(lk, mark, refs, here) for lk in step.links),
        stopped=tuple(_marked_link(lk, mark, refs, here) for lk in step.stopped),
        completed=tuple(
            (
                mark(name, refs.symbol(name)),
                mark.amount(total, refs.symbol(name)),
                tuple(_marked_term(t, mark, refs) for t in terms),
            )  # type: ignore[misc]
            for name, total, terms in step.completed
        ),
        total=mark.amount(step.total, here),
        value=mark.amount(step.value, here),
    )
    return ChainLine(tuple(mark.split(line) for line in step_lines(marked, lang)))


def group_line(group: GroupStep, box: Any, refs: Refs, lang: str) -> ChainLine:
    """A collapsed group's line ("the block takes in ‖g‖ … and passes out ‖g‖ …"): its
    name names its box, each input its box."""
    mark = _Marks()
    marked = replace(
        group,
        name=mark(group.name, (f"node-{box}",) if box is not None else ()),
        inputs=tuple((mark(n, refs.symbol(n)), a) for n, a in group.inputs),
        outputs=tuple((mark(n, refs.symbol(n)), a) for n, a in group.outputs),
    )
    return ChainLine(tuple(mark.split(line) for line in group_lines(marked, lang)))


def refs_of(line: ChainLine) -> set[str]:
    """Every element id the line names."""
    return {r for pieces in line.lines for p in pieces for r in p.refs}


def line_html(sentence: str, line: ChainLine | None, lang: str) -> str:
    """The step's sentence and its chain rule as the live region under the picture: each
    term a focusable span whose ``data-tv-refs`` lists the element ids it names (the
    canvas's script highlights them while the term is hovered or focused)."""
    rows = [f"<div class='tv-chain-sentence'>{html.escape(sentence)}</div>"] if sentence else []
    for pieces in line.lines if line is not None else ():
        parts = []
        for p in pieces:
            text = html.escape(p.text)
            if p.refs:
                ids = html.escape(" ".join(p.refs), quote=True)
                parts.append(f"<span class='tv-term' tabindex='0' data-tv-refs='{ids}'>{text}</span>")
            else:
                parts.append(text)
        rows.append(f"<div class='tv-chain-line'>{''.join(parts)}</div>")
    return f"<div class='tv-chain' lang='{html.escape(lang)}' aria-live='polite'>{''.join(rows)}</div>"

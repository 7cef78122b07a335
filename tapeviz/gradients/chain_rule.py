"""The chain rule at each backward step, as data: what arrived, the local factor, what left.

At step k TensorFlow calls one op's gradient function: the gradient arriving at the op's
output (the sum of what its consumers passed back: the *terms*) times the op's local
derivative gives what each input receives. A :class:`ChainStep` holds exactly that, read
from the flow: every number in it is TensorFlow's (the arriving gradient, each input's
gradient, and for a scalar step the local derivative itself, from the op's registered
gradient function called with ones). The table of local derivatives
(:mod:`tapeviz.gradients.local_derivatives`) only says what formula that number follows.
The values are :mod:`tapeviz.gradients.chain_steps`'; :mod:`tapeviz.gradients.chain_words`
writes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from ..messages import DEFAULT, check_lang
from ..record.replay import local_backward
from ..record.values import VALUE_NORM
from . import formulas
from .chain_steps import Amount, ChainStep, GroupStep, Link, Term, amount
from .chain_words import group_lines, step_lines
from .flow import Edge, GradientFlow
from .local_derivatives import LocalDerivative, lookup
from .stop_reasons import Cause, StopReason

__all__ = ["ChainRule", "symbol", "symbols"]


class ChainRule:
    """The chain rule at every step of one backward pass: ``rule[k]`` is a
    :class:`ChainStep` (made on first use), ``rule.text()`` every step's lines, and
    ``rule.group(...)`` a collapsed group of ops as one step."""

    def __init__(self, flow: GradientFlow, lang: str = DEFAULT):
        self.flow = flow
        self.lang = check_lang(lang)
        self._steps: dict[int, ChainStep] = {}
        self._borders: dict[frozenset, list] = {}  # a group's members -> the edges crossing its border
        self._symbols = symbols(flow)
        self.target = self._sym(flow.target_nodes[0])
        # step -> the nodes TF runs no backward function for (a watched tensor, a variable
        # reached through its handle) whose gradient is whole after it: found once, not per step
        called = {s.node for s in flow.steps[1:]}
        self._uncalled: dict[int, list[str]] = {}
        for n, d in flow.graph.nx.nodes(data=True):
            k = flow.step_of(n)
            if k is not None and n not in called and d["kind"] != "op":
                self._uncalled.setdefault(k, []).append(n)

    def _sym(self, node: str) -> str:
        return self._symbols[node]

    def __len__(self) -> int:
        return len(self.flow.steps)

    def __getitem__(self, step: int) -> ChainStep:
        k = self.flow.check_step(step)
        if k not in self._steps:
            self._steps[k] = self._make(k)
        return self._steps[k]

    def __iter__(self) -> Iterator[ChainStep]:
        return (self[k] for k in range(len(self)))

    def text(self, lang: str | None = None) -> str:
        """Every step's chain rule, step by step."""
        return "\n".join(f"[{s.index}] " + "\n    ".join(s.lines(lang or self.lang)) for s in self)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"ChainRule(target={self.target}, steps={len(self)})"

    # -- one step -------------------------------------------------------------------------
    def _make(self, k: int) -> ChainStep:
        fl = self.flow
        g = fl.graph
        st = fl.steps[k]
        node = st.node
        name = self._sym(node)
        if k == 0:
            info = g.output_info(node)
            seed = st.grad if not isinstance(st.grad, list) else st.grad[0]
            value = amount(info.value, VALUE_NORM) if info is not None and info.value is not None else None
            return ChainStep(0, node, name, self.target, None, amount(seed), value=value, writer=step_lines)
        call = fl.calls[k - 1]
        op = call.op
        terms = self._terms(node, set(op.outputs), k)
        arriving = self._arriving(call.out_grads, op.outputs, node, terms)
        completed = self._completed(k, node)
        d = g.nx.nodes[node]
        if d["kind"] == "variable":
            # the reads on the way to the target: each is a step, its part of the variable's gradient
            reads = [s.index for s in fl.steps[1:] if s.node == node]
            position = reads.index(k) + 1
            total = amount(fl.computed(node)) if fl.step_of(node) == k and len(reads) > 1 else None
            return ChainStep(
                k, node, name, self.target, op.op_type, arriving, terms, completed=completed,
                read=(position, len(reads)), total=total, writer=step_lines,
            )  # fmt: skip
        entry = lookup(op.op_type)
        attrs = dict(zip(op.attrs[::2], op.attrs[1::2], strict=True))
        links, stopped = [], []
        inputs = list(g.data_edges(node, out=False))
        names, shapes, constants, values = self._arguments(entry, inputs, len(op.inputs))
        local_values: list | None = None
        for u, v, key, data in sorted(inputs, key=lambda e: e[2]):
            e = (u, v, key)
            arg = entry.input_name(key, len(op.inputs)) if entry is not None else f"input{key}"
            if entry is not None and entry.variadic and arg == entry.inputs[0]:
                arg = f"{arg}[{key}]"  # AddN's inputs[0], inputs[1] ...
            partial = entry.partial(key, len(op.inputs), attrs) if entry is not None else None
            result = amount(fl.edge_grad(u, v, key)) if fl.carries(e) else None
            formula = None
            if partial is not None and partial.local is not None:
                # attributes (LeakyRelu's alpha) first: an input of the same name is what the formula means
                bound = {**{a: float(x) for a, x in attrs.items() if _is_number(x)}, **constants}
                formula = formulas.bind(partial.local, bound, names)
            link = Link(
                e, self._sym(u), arg, op.op_type, arriving, result, partial, formula, None, names, shapes,
                via=str(d.get("via") or ""), values=values,
            )  # fmt: skip
            if result is None:
                stop = fl.edge_reason.get(e)
                if stop is not None and self._worth_saying(u, data["tensor"], stop):
                    stopped.append(_with(link, stop=stop))
                continue
            if link.arriving is not None and link.arriving.scalar and result.scalar:
                if local_values is None:
                    local_values = local_backward(g.capture, op) or []
                if key < len(local_values) and local_values[key] is not None:
                    link = _with(link, local=amount(local_values[key]))
            links.append(link)
        return ChainStep(
            k, node, name, self.target, op.op_type, arriving, terms, tuple(links), tuple(stopped), completed,
            writer=step_lines,
        )  # fmt: skip

    def _arriving(self, out_grads: list, outputs: tuple, node: str, terms: tuple[Term, ...]) -> Amount | None:
        """The gradient arriving at the op's output: its one output's, or, for an op with
        several (SoftmaxCrossEntropyWithLogits' loss and backprop), the one output that a
        gradient reached; None when several did."""
        if len(out_grads) == 1:
            return amount(out_grads[0])
        g = self.flow.graph
        used = {outputs.index(g.nx.edges[t.edge]["tensor"]) for t in terms}
        if node in self.flow.target_nodes:
            used.add(0)
        return amount(out_grads[used.pop()]) if len(used) == 1 else None

    def _terms(self, node: str, tensors: set, k: int) -> tuple[Term, ...]:
        """What each consumer of the step's output(s) passed back: the parts TF added up
        into the gradient arriving now (one term when one consumer)."""
        fl = self.flow
        out = []
        for u, v, key, data in fl.graph.data_edges(node):
            e = (u, v, key)
            if data["tensor"] in tensors and fl.arrived(e, k):
                a = amount(fl.edge_grad(u, v, key))
                if a is not None:
                    out.append(Term(self._sym(v), e, a))
        return tuple(out)

    def _completed(self, k: int, node: str) -> tuple[tuple[str, Amount, tuple[Term, ...]], ...]:
        """Nodes TF runs no backward function for whose gradient is whole after step k."""
        fl = self.flow
        g = fl.graph
        out = []
        for n in self._uncalled.get(k, ()):
            if n == node:
                continue
            total = amount(fl.computed(n))
            if total is None:
                continue
            terms = tuple(
                Term(self._sym(v), (u, v, key), a)
                for u, v, key, _ in g.data_edges(n)
                if (a := amount(fl.edge_grad(u, v, key))) is not None
            )
            out.append((self._sym(n), total, terms))
        return tuple(out)

    def _arguments(
        self, entry: LocalDerivative | None, inputs: list, count: int
    ) -> tuple[dict[str, str], dict[str, tuple], dict[str, float], dict[str, Amount]]:
        """The entry's argument names -> the reader's names, the inputs' shapes and forward
        values (those the tape kept), and the scalar constants a formula can take in (Pow's
        exponent 2)."""
        names: dict[str, str] = {}
        shapes: dict[str, tuple] = {}
        constants: dict[str, float] = {}
        values: dict[str, Amount] = {}
        if entry is None:
            return names, shapes, constants, values
        g = self.flow.graph
        for u, _, key, data in inputs:
            arg = entry.input_name(key, count)
            info = g.tensors[data["tensor"]]
            shapes.setdefault(arg, tuple(info.shape))
            kept = amount(info.value, VALUE_NORM) if arg not in values else None
            if kept is not None:
                values[arg] = kept
            kind = g.nx.nodes[u]["kind"]
            if kind == "constant" and info.value is not None and info.value.size == 1 and info.trainable:
                constants.setdefault(arg, float(info.value.reshape(())))
            else:
                names.setdefault(arg, self._sym(u))
        return names, shapes, constants, values

    def _worth_saying(self, producer: str, tensor: int, stop: StopReason) -> bool:
        """A stopped input worth a line: a float value that is not one of the op's own
        constants or made from them only (an exponent, an axis, a fill value is no path a
        gradient could take)."""
        g = self.flow.graph
        if stop.cause in (Cause.CONSTANT, Cause.DERIVED):
            return False
        return g.nx.nodes[producer]["kind"] != "constant" and g.tensors[tensor].trainable

    # -- a collapsed group -----------------------------------------------------------------
    def group(self, members: Iterable[str] | str, step: int | None = None, name: str | None = None) -> GroupStep:
        """A group of ops as one step: ``members`` are node ids, or a name scope (every op
        whose scope is it or lies inside it: ``"sequential/dense"``). Its gradients in (at
        its outputs) and out (to its inputs, variables included), as of ``step`` (None:
        the finished pass), each TF's: what flowed along the edges that cross its border."""
        fl = self.flow
        g = fl.graph
        k = fl.check_step(step)
        if isinstance(members, str):
            scope = members
            chosen = frozenset(
                n
                for n, d in g.nx.nodes(data=True)
                if d["kind"] == "op" and (d["scope"] == scope or d["scope"].startswith(scope + "/"))
            )
            name = name or scope
        else:
            chosen = frozenset(members)
        unknown = sorted(str(n) for n in chosen if n not in g.nx)
        if not chosen or unknown:
            raise ValueError(
                f"A group needs nodes of the graph: {', '.join(unknown[:3]) or 'no op matches'}. Pass node ids "
                "(tv.flow(tape, target).graph.nx.nodes) or a name scope such as 'sequential/dense'."
            )
        by_tensor_in: dict[int, list[Edge]] = {}
        by_tensor_out: dict[int, list[Edge]] = {}
        border = self._borders.get(chosen)
        if border is None:  # the edges that cross the group's border: the same at every step
            border = [(u, v, key, data) for u, v, key, data in g.data_edges() if (u in chosen) != (v in chosen)]
            self._borders[chosen] = border
        later = False
        for u, v, key, data in border:
            if not fl.arrived((u, v, key), k):
                later = later or (v in chosen and fl.arrived((u, v, key), fl.last_step))
                continue
            (by_tensor_in if u in chosen else by_tensor_out).setdefault(data["tensor"], []).append((u, v, key))
        inputs = tuple(
            (self._sym(g.tensors[t].node), a)
            for t, edges in by_tensor_in.items()
            if (a := amount(fl.total_along(edges))) is not None
        )
        if any(t in chosen for t in fl.target_nodes):  # the target is inside: the seed comes in
            seed = amount(fl.steps[0].grad if not isinstance(fl.steps[0].grad, list) else fl.steps[0].grad[0])
            if seed is not None:
                inputs = ((self.target, seed), *inputs)
        outputs = tuple(
            (self._sym(g.tensors[t].node), a)
            for t, edges in by_tensor_out.items()
            if (a := amount(fl.total_along(edges))) is not None
        )
        label = name or ", ".join(sorted(self._sym(n) for n in chosen))
        return GroupStep(label, chosen, k, inputs, outputs, later, writer=group_lines)


def symbols(flow: GradientFlow) -> dict[str, str]:
    """Every node's symbol, told apart: unnamed ops of one type are numbered in the order
    they ran (Mul₁, Mul₂), so ``∂Mul₂/∂Mul₁`` names two boxes, not one."""
    g = flow.graph
    plain = {n: symbol(flow, n) for n in g.nx}
    ops = sorted((n for n, d in g.nx.nodes(data=True) if d["kind"] == "op" and not d.get("name")), key=_op_order(g))
    shared: dict[str, list[str]] = {}
    for n in ops:
        shared.setdefault(plain[n], []).append(n)
    for name, nodes in shared.items():
        if len(nodes) > 1:
            for i, n in enumerate(nodes, start=1):
                plain[n] = name + str(i).translate(_SUBSCRIPT)
    return plain


_SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _op_order(g: Any) -> Any:
    return lambda n: g.nx.nodes[n].get("op_index", 0)


def symbol(flow: GradientFlow, node: str) -> str:
    """How a formula calls a node: the user's name, else a constant's value, else the op type."""
    d = flow.graph.nx.nodes[node]
    if d.get("name"):
        return str(d["name"])
    if d["kind"] == "op":
        return str(d.get("function") or d["op_type"])
    return str(d["label"])


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _with(link: Link, **changes: Any) -> Link:
    return replace(link, **changes)

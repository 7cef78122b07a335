"""The chain rule at a step, as values: what arrived, the local factor, what left.

These are plain values read from a flow by :mod:`tapeviz.gradients.chain_rule`; every
number in them is TensorFlow's. How they are written in words is
:mod:`tapeviz.gradients.chain_words`' job: a step is handed its writer when it is made
(so the values and the words stay apart, and neither imports the other's maker).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..messages import DEFAULT, check_lang
from ..record.values import GRAD_NORM, format_value, sum_squares
from . import formulas
from .flow import Edge, _to_numpy
from .local_derivatives import Partial
from .stop_reasons import StopReason

__all__ = ["Amount", "Term", "Link", "ChainStep", "GroupStep", "amount"]

#: How a step or a group is written: (the value, a language) -> lines.
Writer = Callable[[Any, str], list[str]]


def _unwritten(value: Any, lang: str) -> list[str]:
    raise RuntimeError("this step was made without a writer: make steps with tapeviz.chain_rule")


class _Written:
    """What ChainStep and GroupStep share: their lines come from the writer they were handed."""

    writer: Writer

    def lines(self, lang: str = DEFAULT) -> list[str]:
        """This step's chain rule, one line per fact, in ``lang`` ("en", "zh")."""
        return self.writer(self, check_lang(lang))

    def text(self, lang: str = DEFAULT) -> str:
        """:meth:`lines` as one text."""
        return "\n".join(self.lines(lang))

    def __str__(self) -> str:
        return self.text()


@dataclass(frozen=True)
class Amount:
    """A gradient (or a value) as a step shows it: TF's numbers, their shape and norm, and
    ``text``, written as every picture writes a value (its numbers when few, else shape and norm)."""

    value: np.ndarray = field(repr=False)
    shape: tuple
    norm: float
    text: str

    @property
    def scalar(self) -> bool:
        return self.value.size == 1


def amount(value: Any, norm: str = GRAD_NORM) -> Amount | None:
    """TF's value (tensor, IndexedSlices or array) as an :class:`Amount`; None for None.
    ``norm``: how its text writes a norm (a gradient's ‖g‖, a forward value's ‖·‖)."""
    a = _to_numpy(value) if not isinstance(value, np.ndarray) else value
    if a is None:
        return None
    a = np.asarray(a)
    size = math.sqrt(sum_squares(a)) if a.dtype.kind in "fiu" and a.size else float(np.linalg.norm(a))
    return Amount(a, tuple(a.shape), size, format_value(a, norm=norm))


@dataclass(frozen=True)
class Term:
    """One path's part of a sum: what ``consumer`` passed back along ``edge``."""

    consumer: str  # the consumer's symbol
    edge: Edge
    amount: Amount


@dataclass(frozen=True)
class Link:
    """What the step's op passes back to one input: the chain rule for one edge.

    ``arriving`` is the gradient at the op's output, ``result`` TF's gradient along the
    edge (None: nothing, and ``stop`` says why). ``partial`` is the table's form for the
    input (None: the op has no entry, or none for this input), ``formula`` its local
    derivative with the constants put in and the inputs called by the reader's names,
    ``local`` the local derivative's value as TF computes it (scalar steps only)."""

    edge: Edge
    input: str  # the input's symbol (the user's name, else its op type or value)
    arg: str  # TF's name of the input (x, y, a, b, features ...)
    op: str  # the op type
    arriving: Amount | None
    result: Amount | None
    partial: Partial | None = None
    formula: formulas.Expr | None = None
    local: Amount | None = None
    names: dict[str, str] = field(default_factory=dict)  # the entry's argument names -> symbols
    shapes: dict[str, tuple] = field(default_factory=dict)  # the entry's argument names -> shapes
    values: dict[str, Amount] = field(default_factory=dict, repr=False)  # argument name -> forward value (kept ones)
    stop: StopReason | None = None
    via: str = ""  # "tf.function" / "tf.custom_gradient": TF calls a Python backward function, not a registered one

    @property
    def scalar(self) -> bool:
        """Everything in it is one number: the chain rule can be written with numbers."""
        return (
            self.arriving is not None
            and self.arriving.scalar
            and self.result is not None
            and self.result.scalar
            and (self.local is None or self.local.scalar)
        )


@dataclass(frozen=True)
class ChainStep(_Written):
    """Step ``index`` of the backward pass as the chain rule says it.

    ``node`` received ``arriving`` (the sum of ``terms`` when several consumers passed
    back to it); ``links`` say what its op passes to each input; ``stopped`` are the inputs
    nothing reaches, with the reason; ``completed`` are the sums finished at this step of
    nodes TF runs no backward function for (a watched tensor)."""

    index: int
    node: str
    name: str  # the node's symbol: ∂target/∂name
    target: str
    op: str | None  # the op whose gradient function TF called (None at step 0)
    arriving: Amount | None
    terms: tuple[Term, ...] = ()
    links: tuple[Link, ...] = ()
    stopped: tuple[Link, ...] = ()
    completed: tuple[tuple[str, Amount, tuple[Term, ...]], ...] = ()
    read: tuple[int, int] | None = None  # a variable's read: (this read, of how many)
    total: Amount | None = None  # a variable's whole gradient, when its last read completes it
    value: Amount | None = None  # step 0: the target's value

    writer: Writer = field(default=_unwritten, repr=False, compare=False)


@dataclass(frozen=True)
class GroupStep(_Written):
    """A collapsed group of ops as one step: the gradient that comes in at its outputs
    (from the ops after it) and what it passes out to its inputs, each TF's, with norms."""

    name: str
    members: frozenset
    step: int
    inputs: tuple[tuple[str, Amount], ...]  # at the group's outputs: (output's symbol, gradient arriving)
    outputs: tuple[tuple[str, Amount], ...]  # to the group's inputs: (input's symbol, gradient passed)
    #: gradients to the group's inputs that leave it at a later step (none left it yet, or some)
    later: bool = False

    @property
    def norm_in(self) -> float:
        """The norm of everything arriving at the group's outputs, taken together."""
        return math.sqrt(sum(a.norm**2 for _, a in self.inputs))

    @property
    def norm_out(self) -> float:
        """The norm of everything the group passes to its inputs, taken together."""
        return math.sqrt(sum(a.norm**2 for _, a in self.outputs))

    writer: Writer = field(default=_unwritten, repr=False, compare=False)

"""Why a gradient is NaN, Inf or zero, as data: the problem, the known pattern, the facts.

A :class:`Finding` names the first op on the backward path where the gradient stops
being finite (or becomes zero where the arriving gradient was not), or the first op on
the forward pass that made a non-finite value: the op, the edge, the element indices,
the arriving gradient, the op's local derivative and the forward value that produced
it, and the user's source line. Sentences in every language are written from these
facts by ``tapeviz.messages`` (keys ``numeric.*``); nothing parses a sentence back.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Problem(str, Enum):
    """What is wrong with a gradient that does arrive; compares equal to its code."""

    NON_FINITE = "non_finite"  # d target / d source holds NaN or Inf
    ZERO = "zero"  # d target / d source is exactly zero although the target depends on it
    FORWARD = "forward"  # the target itself is NaN or Inf: the forward pass made it

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Pattern(str, Enum):
    """The known pattern behind a NaN, Inf or zero gradient; each has its usual fix."""

    WHERE_TRAP = "where_trap"  # tf.where sends 0 into an unselected branch whose derivative is infinite
    SQRT_AT_ZERO = "sqrt_at_zero"  # d sqrt(x) / dx = 1 / (2 sqrt(x)) is infinite at x = 0
    NORM_AT_ZERO = "norm_at_zero"  # tf.norm of a zero vector: its sqrt at 0
    SQRT_OF_NEGATIVE = "sqrt_of_negative"  # sqrt(x) of x < 0 is NaN
    LOG_OF_ZERO = "log_of_zero"  # log(0) = -inf, d log(x) / dx = 1/x = inf
    LOG_OF_NEGATIVE = "log_of_negative"  # log(x) of x < 0 is NaN
    LOG_OF_PROBABILITY = "log_of_probability"  # log of a softmax / sigmoid output that rounded to 0
    PROBABILITY_CLIPPED = "probability_clipped"  # a loss clips saturated probabilities (0 or 1): zero gradient
    DIVISION_BY_ZERO = "division_by_zero"  # x / 0
    EXP_OVERFLOW = "exp_overflow"  # exp(x) is inf in float32 for x > 88.7
    DEAD_RELU = "dead_relu"  # every input of a ReLU is <= 0
    SATURATED = "saturated"  # sigmoid / tanh so far out that its derivative rounds to 0
    STEP_FUNCTION = "step_function"  # sign, round, floor, ceil: flat almost everywhere
    CLIPPED = "clipped"  # clip_by_value / maximum / minimum: every value outside the range
    WHERE_UNSELECTED = "where_unselected"  # tf.where picks the other branch at every element
    ROW_NOT_READ = "row_not_read"  # an embedding (gather) row that no index looked up
    MULTIPLIED_BY_ZERO = "multiplied_by_zero"  # the other factor of a product is zero
    OTHER = "other"  # an op the catalogue has no pattern for: the facts alone

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


@dataclass(frozen=True)
class Finding:
    """The facts of one NaN, Inf or zero gradient (or non-finite forward value)."""

    problem: Problem
    pattern: Pattern
    target: str = ""  # the target's name, as the user knows it
    source: str = ""  # the source's name
    op: str = ""  # the op type where it starts: Log, Sqrt, Relu ...
    label: str = ""  # how a sentence names that op: its type, or "f()" for a tf.function call
    node: Any = None  # that op's graph node
    edge: Any = None  # (producer, op node, input position): the first edge that carries it
    step: int = 0  # the backward step of that op (0 for a forward finding)
    indices: tuple = ()  # element indices of d target / d source (or of the target, forward) that are bad
    count: int = 0  # how many elements are
    size: int = 0  # how many elements it has
    value: str = ""  # what they are: "NaN", "∞", "-∞", "NaN, ∞" or "0"
    asked: tuple = ()  # the element or row the question was about (tv.explain's index), () for all
    op_indices: tuple = ()  # element indices where the op makes it (at most MAX_INDICES, in C order)
    arriving: float | None = None  # the gradient arriving at the op, at indices[0]
    local: str = ""  # the op's local derivative, as a formula ("1/x")
    local_value: float | None = None  # its value at indices[0]
    variable: str = ""  # the formula's variable ("x", "y")
    forward: float | None = None  # the forward value of that variable at indices[0]
    result: float | None = None  # what went back (or what the op made, forward), at indices[0]
    filename: str = ""  # the user's source file that ran the op
    line: int = 0  # its line
    code: str = ""  # the text of that line
    api: str = ""  # the public TF function that ran the op ("tf.norm"), if known
    safe_code: tuple = ()  # the fix as code: (make the input safe, use it), e.g. for the tf.where trap
    other_op: str = ""  # a second op the pattern names: the tf.where, the softmax
    other_line: int = 0  # its line
    extra: dict = field(default_factory=dict)  # pattern facts: the ids read, the smallest |x| ...
    seeded: bool = False  # it is already in the gradient the pass starts from (output_gradients)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: How many element indices a finding keeps.
MAX_INDICES = 8


def number(v: float | None) -> str:
    """A value as a sentence says it: NaN, ∞, -∞, or four significant digits."""
    if v is None:
        return "?"
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    if v == 0:
        return "0"
    return f"{v:.4g}"


def index_text(indices: tuple, count: int) -> str:
    """``[0]``, ``[0], [2]``, ``[0, 1], … (12 elements)``; '' for a scalar."""
    if not indices or all(len(i) == 0 for i in indices):
        return ""
    shown = ", ".join("[" + ", ".join(str(int(k)) for k in i) + "]" for i in indices)
    return shown + (f", … ({count})" if count > len(indices) else "")


# The local derivative of the ops a NaN, Inf or zero usually starts at: for each op, per
# input position, the formula a sentence shows, its variable and what the variable is
# ("in": the op's input at that position, "in0"/"in1": a given input, "out": its output).
LOCAL: dict[str, dict[int, tuple[str, str, str]]] = {
    "Log": {0: ("1/x", "x", "in")},
    "Log1p": {0: ("1/(1 + x)", "x", "in")},
    "Sqrt": {0: ("1/(2·√x)", "x", "in")},
    "Rsqrt": {0: ("-1/(2·x^1.5)", "x", "in")},
    "Reciprocal": {0: ("-1/x²", "x", "in")},
    "Inv": {0: ("-1/x²", "x", "in")},
    "RealDiv": {0: ("1/y", "y", "in1"), 1: ("-x/y²", "y", "in1")},
    "Div": {0: ("1/y", "y", "in1"), 1: ("-x/y²", "y", "in1")},
    "Exp": {0: ("exp(x)", "x", "in")},
    "Pow": {0: ("p·x^(p-1)", "x", "in0"), 1: ("x^p·log(x)", "x", "in0")},
    "Acos": {0: ("-1/√(1 - x²)", "x", "in")},
    "Asin": {0: ("1/√(1 - x²)", "x", "in")},
    "Atanh": {0: ("1/(1 - x²)", "x", "in")},
    "Relu": {0: ("1 (x > 0), 0 (x ≤ 0)", "x", "in")},
    "Relu6": {0: ("1 (0 < x < 6), 0 (elsewhere)", "x", "in")},
    "Sigmoid": {0: ("σ(x)·(1 - σ(x))", "x", "in")},
    "Tanh": {0: ("1 - tanh²(x)", "x", "in")},
    "Sign": {0: ("0", "x", "in")},
    "Mul": {0: ("y", "y", "in1"), 1: ("x", "x", "in0")},
}


def local_value(op: str, position: int, inputs: list, output) -> float | None:
    """The local derivative at one element, from the forward values there (None if unknown)."""
    try:
        x = float(inputs[0]) if inputs and inputs[0] is not None else math.nan
        y = float(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else math.nan
        out = float(output) if output is not None else math.nan
    except (TypeError, ValueError):
        return None
    try:
        return _local(op, position, x, y, out)
    except (OverflowError, ZeroDivisionError):
        return None


def _local(op: str, k: int, x: float, y: float, out: float) -> float | None:
    inf = math.inf

    def div(a: float, b: float) -> float:
        if b == 0:
            return math.nan if a == 0 or math.isnan(a) else math.copysign(inf, a) * math.copysign(1.0, b)
        return a / b

    if op == "Log":
        return div(1.0, x)
    if op == "Log1p":
        return div(1.0, 1.0 + x)
    if op == "Sqrt":
        return div(1.0, 2.0 * out)
    if op in ("Reciprocal", "Inv"):
        return div(-1.0, x * x)
    if op in ("RealDiv", "Div"):
        return div(1.0, y) if k == 0 else div(-x, y * y)
    if op == "Exp":
        return out
    if op == "Pow" and k == 0:
        import numpy as np

        with np.errstate(all="ignore"):
            return float(y * np.float64(x) ** (y - 1.0))
    if op == "Relu":
        return 1.0 if x > 0 else 0.0
    if op == "Sigmoid":
        return out * (1.0 - out)
    if op == "Tanh":
        return 1.0 - out * out
    if op == "Sign":
        return 0.0
    if op == "Mul":
        return y if k == 0 else x
    return None


def value_word(a) -> str:
    """What the bad elements of an array are: "NaN", "∞", "-∞", or several of them."""
    import numpy as np

    a = np.asarray(a)
    kinds = []
    if np.any(np.isnan(a)):
        kinds.append("NaN")
    if np.any(np.isposinf(a)):
        kinds.append("∞")
    if np.any(np.isneginf(a)):
        kinds.append("-∞")
    return ", ".join(kinds) or "0"


# The tf.where trap's fix, per op: the call on the safe input ({s}); {a}: the op's first input.
SAFE_CALLS = {
    "Log": "tf.math.log({s})",
    "Log1p": "tf.math.log1p({s})",
    "Sqrt": "tf.sqrt({s})",
    "Rsqrt": "tf.math.rsqrt({s})",
    "Pow": "{s} ** p",
    "Reciprocal": "1.0 / {s}",
    "RealDiv": "{a} / {s}",
    "Div": "{a} / {s}",
    "Acos": "tf.acos({s})",
    "Asin": "tf.asin({s})",
    "Atanh": "tf.atanh({s})",
}
#: What fills the safe input where the branch is not picked: a value where the op is finite.
_SAFE_FILL = {"Acos": "tf.zeros_like", "Asin": "tf.zeros_like", "Atanh": "tf.zeros_like"}


def safe_code(op: str, name: str, first: str) -> tuple[str, str]:
    """(``safe_x = tf.where(cond, x, tf.ones_like(x))``, ``tf.where(cond, tf.math.log(safe_x), 0.0)``)."""
    safe = f"safe_{name}" if name.isidentifier() else "safe"
    make = f"{safe} = tf.where(cond, {name}, {_SAFE_FILL.get(op, 'tf.ones_like')}({name}))"
    call = SAFE_CALLS.get(op, "f({s})").format(s=safe, a=first)
    return make, f"tf.where(cond, {call}, 0.0)"

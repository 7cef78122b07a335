"""Names on boxes: the shortest part of a path that still says which one, and how a long
name breaks onto a second line.

A Keras variable is ``generator/dense_1/kernel`` and a layer of a nested model
``encoder/block2/attention``: written whole, such names are cut to fit a box
("…ator/dense_1/kernel") and the part that tells boxes apart is lost. Every box instead
shows the shortest ``/``-suffix of its path that no other box's path ends with (so the
model's own name, shared by all, drops away), and the whole path is the box's tooltip.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from . import fonts

__all__ = ["short_names", "name_lines", "call_title", "OPERATORS"]

SEP = "/"
_BREAK_AFTER = "/_-. "  # a name breaks after these before it breaks inside a word


def short_names(paths: Mapping[Hashable, str]) -> dict[Hashable, str]:
    """Each path's shortest ``/``-suffix that no other (different) path ends with.

    ``{a: "gen/dense/kernel", b: "disc/dense_2/kernel", c: "gen/dense/bias"}`` gives
    ``dense/kernel``, ``dense_2/kernel``, ``bias``. Equal paths (one layer called twice)
    keep the same name: the caller tells them apart. Suffixes are counted in whole
    components, so ``dense`` never matches the end of ``my_dense``."""
    parts = {k: p.split(SEP) for k, p in paths.items()}
    # how many distinct paths end with each suffix (a tuple of components)
    ends: dict[tuple[str, ...], set[str]] = {}
    for p, comps in zip(paths.values(), parts.values(), strict=True):
        for i in range(len(comps)):
            ends.setdefault(tuple(comps[i:]), set()).add(p)
    out = {}
    for k, comps in parts.items():
        n = len(comps)
        out[k] = next(
            (SEP.join(comps[n - j :]) for j in range(1, n + 1) if len(ends[tuple(comps[n - j :])]) == 1),
            paths[k],
        )
    return out


#: Op types a Python operator runs, and the operator: ``a + b`` is titled ``+``. TF's operators
#: go through its public functions (``a * b`` is ``tf.multiply``) or none (``a + b``), so
#: these are the titles of such ops whichever the user wrote.
OPERATORS = {
    "AddV2": "+",
    "Add": "+",
    "Sub": "-",
    "Mul": "*",
    "RealDiv": "/",
    "Div": "/",
    "FloorDiv": "//",
    "FloorMod": "%",
    "Pow": "**",
    "Neg": "-x",
    "StridedSlice": "[…]",
}
_OPERATOR_APIS = frozenset(
    {"tf.add", "tf.subtract", "tf.multiply", "tf.truediv", "tf.divide", "tf.negative", "tf.pow"}
    | {"tf.math.floordiv", "tf.math.floormod", "tf.math.add", "tf.math.multiply", "tf.math.subtract"}
)
_CALL_TAILS = ("_with_logits", "_v2")  # how TF spells a variant, not what the call computes


def call_title(api: str | None, op_type: str) -> str:
    """The title of an op the user's own call ran (outside every layer): the function as
    written, short (``tf.nn.sparse_softmax_cross_entropy_with_logits`` is
    ``sparse_softmax_cross_entropy``), an operator's symbol (``a + b`` is ``+``), or the op
    type where it says the same (``tf.matmul`` is ``MatMul``, ``tf.square`` ``Square``)."""
    if op_type in OPERATORS and (api is None or api in _OPERATOR_APIS):
        return OPERATORS[op_type]
    if not api:
        return op_type
    name = api.rsplit(".", 1)[-1]
    for tail in _CALL_TAILS:
        name = name.removesuffix(tail)
    same = name.replace("_", "").lower() == op_type.lower()
    return op_type if same or not name else name


def name_lines(name: str, width: float, size: float, weight="normal", *, lines: int = 2) -> list[str]:
    """``name`` broken into at most ``lines`` lines of at most ``width`` points: after a
    ``/``, ``_``, ``-``, ``.`` or space where one fits, else inside a word; only a name longer
    than all the lines together is cut (with "…", at the end of the last line)."""
    out = _break(name, width, size, weight, lines, 0.0)
    if out and out[-1].endswith(fonts.ELLIPSIS):  # a break one "…" wider (the line has none) may save it
        fuller = _break(name, width, size, weight, lines, fonts.text_width(fonts.ELLIPSIS, size, weight))
        if not fuller[-1].endswith(fonts.ELLIPSIS):
            return fuller
    return out


def _break(name: str, width: float, size: float, weight, lines: int, more: float) -> list[str]:
    """name_lines's lines, each break sought in the start that ``fonts.fit`` keeps in
    ``width + more`` points (``fit`` keeps room for an ellipsis)."""
    out: list[str] = []
    rest = name
    while rest and len(out) < lines - 1 and fonts.text_width(rest, size, weight) > width:
        head = fonts.fit(rest, width + more, size, weight).removesuffix(fonts.ELLIPSIS)
        if not head:
            break
        cut = head.rfind("(")  # a note in brackets ("(3 alike)", "(call 2)") stays whole
        while cut > 0 and head.startswith("()", cut):  # not a call's brackets: gradient_penalty()/critic
            cut = head.rfind("(", 0, cut)
        if cut <= len(head) // 3:
            cut = max((head.rfind(c) for c in _BREAK_AFTER), default=-1) + 1
        cut = cut if cut > len(head) // 3 else len(head)  # a break near the start wastes the line
        out.append(rest[:cut].rstrip(" "))
        rest = rest[cut:]
    out.append(fonts.fit(rest, width, size, weight))
    return [line for line in out if line]

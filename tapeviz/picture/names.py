"""Names on boxes: the shortest part of a path that still says which one, and how a long
name breaks onto a second line.

A Keras variable is ``generator/dense_1/kernel`` and a layer of a nested model
``encoder/block2/attention``: written whole, such names are cut to fit a box
("…ator/dense_1/kernel") and the part that tells boxes apart is lost. Every box instead
shows the shortest ``/``-suffix of its path that no other box's path ends with (so the
model's own name, shared by all, drops away), and the whole path is the box's tooltip.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping

from . import fonts

__all__ = ["short_names", "name_lines", "call_title", "OPERATORS"]

SEP = "/"


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
    """``name`` broken into at most ``lines`` lines of at most ``width`` points, between its
    words: a line ends at a space, and a note in brackets (``(3 alike)``) stays whole. A word
    (an identifier, ``log_probs``) breaks only when it alone is wider than ``width``: after a
    ``/``, ``_``, ``-``, ``.`` or between camelCase parts (``Softmax|Cross``), a part wider
    still where the line is full. When the words need more than ``lines`` lines, every word
    may break at those places, then anywhere; only a name longer than all the lines
    together is cut (with "…", at the end of the last line)."""
    if fonts.text_width(name, size, weight) <= width:
        return [name] if name else []
    words = _words(name)
    out = _fill(words, width, size, weight)
    if len(out) > lines:  # more lines than the box has: every word may break at its parts
        out = _fill([p for w in words for p in _parts(w)], width, size, weight)
    if len(out) > lines:  # still more: a line ends where it is full
        out = _fill(list(name), width, size, weight)
    if len(out) > lines:
        out = out[: lines - 1] + [fonts.fit("".join(out[lines - 1 :]).strip(" "), width, size, weight)]
    return [line.strip(" ") for line in out if line.strip(" ")]


#: Where an identifier may break when it alone is too wide: after a run of separators, between
#: a lower-case letter or digit and a capital (``Softmax|Cross``), before a capital's word after
#: an acronym (``HTTP|Server``).
_PART = re.compile(r".+?(?:[/_\-.]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|$)")
_NUMBER = re.compile(r"[\d/_\-.–]+")


def _words(name: str) -> list[str]:
    """The words of ``name`` with the spaces after them: a line may end after any. Spaces
    inside brackets do not part words (``(3 alike)``, ``(steps 0–19)`` is one)."""
    out, word, depth = [], "", 0
    for c in name:
        word += c
        depth += (c in "([") - (c in ")]")
        if c == " " and depth <= 0:
            out.append(word)
            word = ""
    return out + [word] if word else out


def _parts(word: str) -> list[str]:
    """``word`` in the pieces it may break between (see :data:`_PART`), a piece of digits
    joined to the one before (``layer_`` / ``normalization_1``, never ``…_`` / ``1``); its
    trailing space stays on its last piece."""
    core = word.rstrip(" ")
    parts: list[str] = []
    for part in _PART.findall(core) or [core]:
        if parts and _NUMBER.fullmatch(part):  # a number stays with the name it counts: dense_7/, normalization_1
            parts[-1] += part
        else:
            parts.append(part)
    parts[-1] += word[len(core) :]
    return parts


def _fill(units: list[str], width: float, size: float, weight) -> list[str]:
    """``units`` laid into lines of at most ``width`` points (spaces at a line's ends not
    counted), each line as full as it can be: a line ends only between units. A unit wider
    than a line alone breaks at its parts (:func:`_parts`), a part wider still where the
    line is full. The lines keep their spaces: joined, they are the name."""

    def fits(text: str) -> bool:
        return fonts.text_width(text.strip(" "), size, weight) <= width

    lines: list[str] = []
    current = ""
    for unit in units:
        if fits(current + unit):
            current += unit
            continue
        for piece in [unit] if fits(unit) else _parts(unit):
            if fits(current + piece):
                current += piece
            elif fits(piece):
                lines.append(current)
                current = piece
            else:  # no place to break: where the line is full
                current += piece
                while not fits(current) and len(current) > 1:
                    cut = len(fonts.fit(current, width, size, weight).removesuffix(fonts.ELLIPSIS)) or 1
                    while cut < len(current) and fits(current[: cut + 1]):  # (fit kept room for a "…")
                        cut += 1
                    lines.append(current[:cut])
                    current = current[cut:]
    if current.strip(" "):
        lines.append(current)
    return [line for line in lines if line.strip(" ")]

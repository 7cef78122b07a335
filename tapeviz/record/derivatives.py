"""Derivative groups: the ops an inner ``tape.gradient`` / ``jacobian`` call ran while an
outer tape recorded, and how the user wrote that call.

A PINN residual or a WGAN-GP penalty differentiates inside a recording: the outer tape
records the inner call's backward ops (TanhGrad, MatMul, Mul, AddN...) as ordinary ops.
They are one thing to the reader, "du = ∂u/∂pts", so capture marks the range of ops each
call ran (see ``capture``: the tape's gradient methods are wrapped while recording) and
this module names it from the call site: the source line is parsed (``ast``) for the
call's receiver, arguments and the variable its result is assigned to. Anything it
cannot read (no source, a call spread over an odd expression) falls back to the plain
form ``∂target/∂sources (tape.gradient)``; naming never raises into the user's run.
"""

from __future__ import annotations

import ast
import linecache
from dataclasses import dataclass, field

from .bounded_cache import BoundedCache

__all__ = ["DerivativeRecord", "CallSite", "call_site", "METHODS"]

#: The tf.GradientTape methods whose calls form derivative groups.
METHODS = ("gradient", "jacobian", "batch_jacobian")
_MAX_TEXT = 32  # longest argument text used in a name (a longer expression: the plain word)


@dataclass(frozen=True)
class CallSite:
    """How the user wrote the call: ``du = t1.gradient(u, pts)``."""

    tape: str  # the receiver as written ("t1", "self.tape"); "tape" when unknown
    target: str  # the first argument as written ("u"), "" when unknown
    sources: str  # the second argument as written ("pts", "[w, b]"), "" when unknown
    assigned: str | None  # the name the result is assigned to, when it is one name


@dataclass
class DerivativeRecord:
    """One inner gradient / jacobian call seen by a recording, as plain data.

    ``start`` / ``end``: the range of the recording's op log the call ran (op indices
    ``start <= i < end``); ``parent``: the record of the call this one ran inside (a
    gradient function that itself differentiates), or None. Tensor ids as capture's."""

    index: int
    method: str  # "gradient", "jacobian" or "batch_jacobian"
    site: CallSite
    start: int
    end: int = -1
    target_ids: tuple = ()
    source_ids: tuple = ()
    output_ids: tuple = ()
    parent: int | None = None
    order: int = 1  # 2 for a derivative of a derivative by the same sources (∂²u/∂x²)
    of_target: str = ""  # the innermost target's name when order > 1 ("u" in ∂²u/∂x²)
    children: list = field(default_factory=list)

    @property
    def call(self) -> str:
        """``t1.gradient``: the call as the user wrote it."""
        return f"{self.site.tape}.{self.method}"

    @property
    def math(self) -> str:
        """``∂u/∂pts``, ``∂²u/∂pts²``; ``J(y, x)`` style is kept the same for jacobians."""
        target = self.of_target or self.site.target or "target"
        sources = self.site.sources or "sources"
        if self.order > 1:
            return f"∂{_sup(self.order)}{target}/∂{sources}{_sup(self.order)}"
        return f"∂{target}/∂{sources}"

    @property
    def title(self) -> str:
        """``du = ∂u/∂pts`` when the result is assigned to a name, else ``∂u/∂pts (t1.gradient)``."""
        if self.site.assigned:
            return f"{self.site.assigned} = {self.math}"
        return f"{self.math} ({self.call})"


def _sup(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))


def call_site(filename: str, lineno: int, method: str, module_globals: dict | None = None) -> CallSite:
    """Read the call ``<tape>.<method>(target, sources)`` on line ``lineno`` of the source
    (a file, or a notebook cell IPython registered with linecache) and the name its
    result is assigned to. Falls back to unknowns, never raises."""
    try:
        call, assigned = _find_call(filename, lineno, method, module_globals)
    except Exception:  # noqa: BLE001 - a source we cannot read or parse: the plain form
        call, assigned = None, None
    if call is None:
        return CallSite("tape", "", "", None)
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    args = list(call.args)
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    target = args[0] if args else keywords.get("target")
    sources = args[1] if len(args) > 1 else keywords.get("sources") or keywords.get("source")
    if isinstance(sources, (ast.List, ast.Tuple)) and len(sources.elts) == 1:
        sources = sources.elts[0]  # keras.io's gp_tape.gradient(pred, [interpolated])[0]: ∂pred/∂interpolated
    return CallSite(_text(receiver) or "tape", _text(target), _text(sources), assigned)


def _find_call(filename: str, lineno: int, method: str, module_globals) -> tuple[ast.Call | None, str | None]:
    lines = linecache.getlines(filename, module_globals)
    if not lines or lineno > len(lines):
        return None, None
    tree = _parse(filename, "".join(lines))
    best: tuple[ast.Call | None, str | None] = (None, None)
    for node in ast.walk(tree):
        if not isinstance(node, (ast.stmt,)) or not node.lineno <= lineno <= (node.end_lineno or node.lineno):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.For, ast.If)):
            continue  # a compound statement: the simple statement inside it is the one
        calls = [
            c
            for c in ast.walk(node)
            if isinstance(c, ast.Call)
            and isinstance(c.func, ast.Attribute)
            and c.func.attr == method
            and c.lineno <= lineno <= (c.end_lineno or c.lineno)
        ]
        if len(calls) != 1:
            continue  # none, or two calls of the method on one line: cannot tell which
        assigned = None
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name) and _feeds(node.value, calls[0]):
                assigned = targets[0].id
        best = (calls[0], assigned)
    return best


def _feeds(value: ast.expr | None, call: ast.Call) -> bool:
    """The assigned value is the call itself or a view of it (``g(...)[:, 0:1]``)."""
    while isinstance(value, ast.Subscript):
        value = value.value
    return value is call


_TREES: BoundedCache[tuple[str, int], ast.Module] = BoundedCache(64, start_over=True)


def _parse(filename: str, text: str) -> ast.Module:
    return _TREES.fetch((filename, hash(text)), lambda: ast.parse(text, filename))


def _text(node: ast.expr | None) -> str:
    if node is None:
        return ""
    text = ast.unparse(node)
    return text if len(text) <= _MAX_TEXT else ""

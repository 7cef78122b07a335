"""Formulas as small expression trees: a local derivative written once, as data.

An :class:`Expr` is a number, a name (an op input's or attribute's) or a function of
other expressions. Three things are done with one: it is *written* in a language
(:func:`render`: ``2·x``, ``(1 if x > 0 else 0)``), its known constants are put in and
folded (:func:`bind`: ``y·x^(y − 1)`` with y = 2 becomes ``2·x``), and, in tests only,
it is *evaluated* with NumPy (:func:`evaluate`) to check it against TensorFlow's
registered gradient. Numbers a picture shows never come from :func:`evaluate`: they are
TensorFlow's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..messages import DEFAULT, say

__all__ = ["Expr", "Num", "Var", "Call", "evaluate", "render", "bind", "names"]


@dataclass(frozen=True)
class Num:
    """A number in a formula."""

    value: float


@dataclass(frozen=True)
class Var:
    """A name in a formula: an op input (TF's argument name: x, y, features ...) or an attribute (alpha)."""

    name: str


@dataclass(frozen=True)
class Call:
    """A function of other expressions; ``fn`` is a key of :data:`FUNCTIONS`."""

    fn: str
    args: tuple[Expr, ...]


Expr = Num | Var | Call

_SIGMOID = lambda a: 1.0 / (1.0 + np.exp(-a))  # noqa: E731

#: fn -> (NumPy evaluator, precedence when written). Precedence: higher binds tighter.
FUNCTIONS: dict[str, tuple[Any, int]] = {
    "add": (np.add, 1),
    "sub": (np.subtract, 1),
    "mul": (np.multiply, 2),
    "div": (np.divide, 2),
    "neg": (np.negative, 3),
    "pow": (np.power, 4),
    "exp": (np.exp, 5),
    "log": (np.log, 5),
    "sqrt": (np.sqrt, 5),
    "tanh": (np.tanh, 5),
    "sigmoid": (_SIGMOID, 5),
    "sin": (np.sin, 5),
    "cos": (np.cos, 5),
    "sign": (np.sign, 5),
    "gt": (np.greater, 0),
    "ge": (np.greater_equal, 0),
    "lt": (np.less, 0),
    "le": (np.less_equal, 0),
    "ne": (np.not_equal, 0),
    "and": (np.logical_and, -1),
    "or": (np.logical_or, -1),
    "where": (np.where, -2),
}
_INFIX = {
    "add": " + ",
    "sub": " − ",
    "mul": "·",
    "div": "/",
    "gt": " > ",
    "ge": " ≥ ",
    "lt": " < ",
    "le": " ≤ ",
    "ne": " ≠ ",
}
_NAMED = {"sigmoid": "σ", "exp": "exp", "log": "log", "tanh": "tanh", "sin": "sin", "cos": "cos", "sign": "sign"}
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


# -- building (short spellings for the table) --------------------------------------------
def add(a: Expr, b: Expr) -> Expr:
    return Call("add", (a, b))


def sub(a: Expr, b: Expr) -> Expr:
    return Call("sub", (a, b))


def mul(*factors: Expr) -> Expr:
    out = factors[0]
    for f in factors[1:]:
        out = Call("mul", (out, f))
    return out


def div(a: Expr, b: Expr) -> Expr:
    return Call("div", (a, b))


def power(a: Expr, b: Expr) -> Expr:
    return Call("pow", (a, b))


def fn(name: str, *args: Expr) -> Expr:
    return Call(name, args)


def where(test: Expr, then: Expr, otherwise: Expr) -> Expr:
    return Call("where", (test, then, otherwise))


# -- evaluating (tests only) ---------------------------------------------------------------
def evaluate(expr: Expr, env: dict[str, Any]) -> np.ndarray:
    """The formula's value with NumPy, names taken from ``env``. Tests check a formula with
    it against TensorFlow's gradient; nothing shown is computed by it."""
    if isinstance(expr, Num):
        return np.asarray(expr.value)
    if isinstance(expr, Var):
        if expr.name not in env:
            raise KeyError(f"the formula names {expr.name!r}, which is none of {sorted(env)}")
        return np.asarray(env[expr.name])
    f = FUNCTIONS[expr.fn][0]
    with np.errstate(all="ignore"):  # a `where` evaluates both branches, as np.where does
        return np.asarray(f(*(evaluate(a, env) for a in expr.args)))


def names(expr: Expr) -> set[str]:
    """Every name the formula uses."""
    if isinstance(expr, Var):
        return {expr.name}
    if isinstance(expr, Call):
        return set().union(*(names(a) for a in expr.args))
    return set()


# -- putting constants in ------------------------------------------------------------------
def bind(expr: Expr, values: dict[str, float], renamed: dict[str, str] | None = None) -> Expr:
    """The formula with known scalar constants put in and folded (``y·x^(y − 1)``, y = 2:
    ``2·x``), and names changed as ``renamed`` says (TF's ``x`` -> the user's ``w``)."""
    renamed = renamed or {}
    if isinstance(expr, Num):
        return expr
    if isinstance(expr, Var):
        if expr.name in values:
            return Num(float(values[expr.name]))
        return Var(renamed.get(expr.name, expr.name))
    return _fold(Call(expr.fn, tuple(bind(a, values, renamed) for a in expr.args)))


def _fold(c: Call) -> Expr:
    args = c.args
    if c.fn in ("add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sqrt") and all(
        isinstance(a, Num) for a in args
    ):
        with np.errstate(all="ignore"):
            v = float(FUNCTIONS[c.fn][0](*(a.value for a in args)))  # type: ignore[union-attr]
        if math.isfinite(v) and (v == round(v, 6)):
            return Num(v)
    if c.fn == "mul":
        a, b = args
        if a == Num(1.0):
            return b
        if b == Num(1.0):
            return a
        if Num(0.0) in args:
            return Num(0.0)
    if c.fn == "add":
        a, b = args
        if a == Num(0.0):
            return b
        if b == Num(0.0):
            return a
    if c.fn == "sub" and args[1] == Num(0.0):
        return args[0]
    if c.fn == "div" and args[1] == Num(1.0):
        return args[0]
    if c.fn == "pow":
        if args[1] == Num(1.0):
            return args[0]
        if args[1] == Num(0.0):
            return Num(1.0)
    return c


# -- writing --------------------------------------------------------------------------------
def render(expr: Expr, lang: str = DEFAULT) -> str:
    """The formula as a person writes it: ``2·x``, ``1 − tanh(x)²``, ``(1 if x > 0 else 0)``."""
    return _render(expr, lang)


def number(v: float) -> str:
    """A formula's number: 2, 0.5, 1.0507 (no trailing ".0" inside a formula)."""
    if v == int(v) and abs(v) < 1e6:
        return str(int(v))
    return f"{v:.5g}"


def _precedence(expr: Expr) -> int:
    if isinstance(expr, Call):
        return FUNCTIONS[expr.fn][1]
    if isinstance(expr, Num) and expr.value < 0:
        return 3
    return 9


def _wrap(expr: Expr, lang: str, above: int, strict: bool = False) -> str:
    text = _render(expr, lang)
    p = _precedence(expr)
    return f"({text})" if p < above or (strict and p == above) else text


def _render(expr: Expr, lang: str) -> str:
    if isinstance(expr, Num):
        return number(expr.value).replace("-", "−")
    if isinstance(expr, Var):
        return expr.name
    f, a = expr.fn, expr.args
    if f in ("add", "sub", "mul", "div"):
        p = FUNCTIONS[f][1]
        right_strict = f in ("sub", "div")
        return _wrap(a[0], lang, p) + _INFIX[f] + _wrap(a[1], lang, p, strict=right_strict)
    if f in ("gt", "ge", "lt", "le", "ne"):
        return _wrap(a[0], lang, 1) + _INFIX[f] + _wrap(a[1], lang, 1)
    if f == "neg":
        return "−" + _wrap(a[0], lang, 3, strict=True)
    if f == "pow":
        base = _wrap(a[0], lang, 5)
        e = a[1]
        if isinstance(e, Num) and e.value == int(e.value) and abs(e.value) < 10:
            return base + number(e.value).translate(_SUPERSCRIPT)
        return f"{base}^{_wrap(e, lang, 5)}"
    if f == "sqrt":
        return "√" + _wrap(a[0], lang, 5, strict=True)
    if f in ("and", "or"):
        return say(f"chain.{f}", lang, a=_wrap(a[0], lang, 0), b=_wrap(a[1], lang, 0))
    if f == "where":
        return say(
            "chain.where", lang, test=_render(a[0], lang), then=_render(a[1], lang), otherwise=_render(a[2], lang)
        )
    return f"{_NAMED[f]}({', '.join(_render(x, lang) for x in a)})"

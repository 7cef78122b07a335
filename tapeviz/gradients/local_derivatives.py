"""The local derivatives of the ops a student meets, as data: the chain rule's second factor.

Each :class:`LocalDerivative` names an op's inputs as TensorFlow does (``Pow(x, y)``,
``MatMul(a, b)``: the argument names of ``tf.raw_ops``) and says, per differentiable
input, how the gradient arriving at the op's output becomes that input's gradient:

- an *elementwise* op has a local derivative ∂out/∂input, a formula (an expression tree,
  see :mod:`tapeviz.gradients.formulas`) of the inputs; the input's gradient is the
  arriving gradient times it, summed over the axes the input was broadcast along;
- a *structural* op (MatMul, Sum, Reshape, GatherV2, Conv2D ...) has a vector–Jacobian
  product instead, written in notation (``g·bᵀ``) with the operands whose shapes a step
  shows, and a NumPy evaluator.

What is shown at a step is TensorFlow's number; the formulas say *why* it is that number.
``expected`` evaluates a formula with NumPy: tests use it to check every entry against
TF's registered gradient on random inputs. Nothing a picture shows is computed by it.
An op with no entry is said as "TF's registered gradient for <op>".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import formulas as f
from .formulas import Call, Expr, Num, Var

__all__ = ["LocalDerivative", "Partial", "TABLE", "lookup", "unbroadcast"]

#: A structural op's NumPy evaluator: (arriving gradient, the op's inputs by position,
#: its attributes, the input position asked about) -> that input's gradient.
Evaluator = Callable[[np.ndarray, list, dict, int], np.ndarray]


@dataclass(frozen=True)
class Partial:
    """How the gradient reaches one input of an op.

    ``local``: an elementwise op's ∂out/∂input (times the arriving gradient g, summed over
    broadcast axes). ``vjp``: a structural op's product in notation, a ``str.format``
    template whose fields are names (``{g}·{b}ᵀ``: a step puts in the names the reader
    knows, ``g_y·Wᵀ``), with the
    ``operands`` whose shapes a step shows, as (name, transposed) pairs, "g" being the
    arriving gradient; ``evaluator`` computes it with NumPy (tests only). ``when``: the
    attribute values this form holds for (MatMul's transpose_a ...)."""

    input: str
    local: Expr | None = None
    vjp: str = ""
    operands: tuple[tuple[str, bool], ...] = ()
    evaluator: Evaluator | None = field(default=None, compare=False, repr=False)
    when: tuple[tuple[str, Any], ...] = ()
    joiner: str = ", "  # between the operands' shapes: "·" for a matrix product

    @property
    def elementwise(self) -> bool:
        return self.local is not None


@dataclass(frozen=True)
class LocalDerivative:
    """One op's entry: its inputs' names (TF's), and how each differentiable one gets its gradient.

    ``variadic``: the first input is a list (AddN's inputs, ConcatV2's values); its
    positions all take that name. ``stops``: the op passes no gradient at all
    (StopGradient)."""

    op: str
    inputs: tuple[str, ...]
    partials: tuple[Partial, ...] = ()
    variadic: bool = False
    stops: bool = False

    def input_name(self, position: int, count: int) -> str:
        """TF's name of the input at ``position`` of ``count`` inputs."""
        if self.variadic:
            fixed = len(self.inputs) - 1
            return self.inputs[0] if position < count - fixed else self.inputs[position - (count - fixed) + 1]
        return self.inputs[position] if position < len(self.inputs) else f"input{position}"

    def partial(self, position: int, count: int, attrs: dict | None = None) -> Partial | None:
        """The form for the input at ``position`` (given the op's attributes), or None when
        it is not differentiable (an axis, a shape, indices)."""
        name = self.input_name(position, count)
        attrs = attrs or {}
        for p in self.partials:
            if p.input == name and all(attrs.get(k, v) == v for k, v in p.when):
                return p
        return None

    def expected(self, g: np.ndarray, inputs: list, attrs: dict, position: int) -> np.ndarray:
        """The input's gradient by this entry's formula, with NumPy. Tests only: it checks the
        formula against TF's registered gradient (what is shown is always TF's number)."""
        p = self.partial(position, len(inputs), attrs)
        if p is None:
            raise ValueError(f"{self.op} passes no gradient to its input {position}")
        if p.evaluator is not None:
            return np.asarray(p.evaluator(np.asarray(g), [np.asarray(x) for x in inputs], attrs, position))
        assert p.local is not None
        env = {name: v for name, v in attrs.items() if not isinstance(v, (bytes, str, list, tuple))}
        for k, x in enumerate(inputs):
            env.setdefault(self.input_name(k, len(inputs)), np.asarray(x))
        local = f.evaluate(p.local, env)
        return unbroadcast(np.asarray(g) * local, np.shape(inputs[position]))


def unbroadcast(a: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``a`` over the axes an input of ``shape`` was broadcast along (what TF's
    gradients of Add, Mul ... do with their BroadcastGradientArgs)."""
    a = np.asarray(a)
    while a.ndim > len(shape):
        a = a.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1 and a.shape[axis] != 1:
            a = a.sum(axis=axis, keepdims=True)
    return np.broadcast_to(a, shape).copy()


# -- short spellings for the table ----------------------------------------------------------
X, Y = Var("x"), Var("y")
ONE, ZERO = Num(1.0), Num(0.0)


def _elementwise(op: str, inputs: tuple[str, ...], **locals_: Expr) -> LocalDerivative:
    return LocalDerivative(op, inputs, tuple(Partial(name, local=e) for name, e in locals_.items()))


def _unary(op: str, local: Expr, name: str = "x") -> LocalDerivative:
    return LocalDerivative(op, (name,), (Partial(name, local=local),))


def _structural(op: str, inputs: tuple[str, ...], *partials: Partial, variadic: bool = False) -> LocalDerivative:
    return LocalDerivative(op, inputs, partials, variadic=variadic)


# -- evaluators of the structural ops (NumPy, tests only) --------------------------------------
def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    a = np.atleast_1d(np.asarray(axis)).astype(int)
    return tuple(sorted({int(x) % ndim for x in a})) if ndim else ()


def _spread(g: np.ndarray, x: np.ndarray, axis: Any) -> np.ndarray:
    """A reduction's g put back on x's shape (the reduced axes kept as size 1, then broadcast)."""
    shape = [1 if k in _axes(axis, x.ndim) else n for k, n in enumerate(x.shape)]
    return np.broadcast_to(np.reshape(g, shape), x.shape)


def _sum(g, ins, attrs, k):
    return _spread(g, ins[0], ins[1]).copy()


def _mean(g, ins, attrs, k):
    x = ins[0]
    count = int(np.prod([x.shape[a] for a in _axes(ins[1], x.ndim)]))
    return _spread(g, x, ins[1]) / count


def _extreme(pick: Callable) -> Evaluator:
    """Max's / Min's: g goes to the elements that are the extreme, split evenly among ties."""

    def evaluator(g, ins, attrs, k):
        x, axis = ins
        reduce = _axes(axis, x.ndim)
        hit = (x == pick(x, axis=reduce, keepdims=True)).astype(x.dtype)
        return _spread(g, x, axis) * hit / hit.sum(axis=reduce, keepdims=True)

    return evaluator


def _matmul(transpose_a: str, transpose_b: str) -> Evaluator:
    def evaluator(g, ins, attrs, k):
        a, b = ins
        ta, tb = bool(attrs.get(transpose_a, False)), bool(attrs.get(transpose_b, False))
        a_ = np.swapaxes(a, -1, -2) if ta else a
        b_ = np.swapaxes(b, -1, -2) if tb else b
        if k == 0:
            d = g @ np.swapaxes(b_, -1, -2)  # d a_
            d = np.swapaxes(d, -1, -2) if ta else d
            return unbroadcast(d, a.shape)
        d = np.swapaxes(a_, -1, -2) @ g  # d b_
        d = np.swapaxes(d, -1, -2) if tb else d
        return unbroadcast(d, b.shape)

    return evaluator


def _reshape_back(g, ins, attrs, k):
    return np.reshape(g, ins[0].shape)


def _transpose(g, ins, attrs, k):
    return np.transpose(g, np.argsort(ins[1]))


def _concat(g, ins, attrs, k):
    values = ins[:-1]
    axis = int(ins[-1]) % values[0].ndim
    start = sum(v.shape[axis] for v in values[:k])
    return np.take(g, range(start, start + values[k].shape[axis]), axis=axis)


def _gather(g, ins, attrs, k):
    params, indices, axis = ins
    axis = int(axis) % params.ndim
    out = np.zeros_like(params)
    moved = np.moveaxis(out, axis, 0)  # a view: adding to it adds to out
    gm = np.moveaxis(g, list(range(axis, axis + indices.ndim)), list(range(indices.ndim)))
    np.add.at(moved, indices, gm)
    return out


def _tile(g, ins, attrs, k):
    x, multiples = ins
    split = []
    for n, m in zip(x.shape, multiples, strict=True):
        split += [int(m), n]
    return np.reshape(g, split).sum(axis=tuple(range(0, 2 * x.ndim, 2)))


def _pad(g, ins, attrs, k):
    x, paddings = ins
    return g[tuple(slice(int(lo), int(lo) + n) for (lo, _), n in zip(paddings, x.shape, strict=True))]


def _slice(g, ins, attrs, k):
    x, begin, size = ins
    out = np.zeros_like(x)
    out[
        tuple(slice(int(b), int(b) + int(s if s >= 0 else n - b)) for b, s, n in zip(begin, size, x.shape, strict=True))
    ] = g
    return out


def _strided_slice(g, ins, attrs, k):
    """Only for the slices the tests make (no ellipsis / new-axis masks): g goes back to the
    positions the slice read."""
    x, begin, end, strides = ins
    index: list[Any] = []
    for axis in range(x.ndim):
        if axis >= len(begin):
            index.append(slice(None))
            continue
        bit = 1 << axis
        if attrs.get("shrink_axis_mask", 0) & bit:
            index.append(int(begin[axis]))
            continue
        b = None if attrs.get("begin_mask", 0) & bit else int(begin[axis])
        e = None if attrs.get("end_mask", 0) & bit else int(end[axis])
        index.append(slice(b, e, int(strides[axis])))
    out = np.zeros_like(x)
    out[tuple(index)] += g  # a basic slice: no position is read twice
    return out


def _softmax(g, ins, attrs, k):
    x = ins[0]
    s = np.exp(x - x.max(axis=-1, keepdims=True))
    s /= s.sum(axis=-1, keepdims=True)
    return (g - (g * s).sum(axis=-1, keepdims=True)) * s


def _log_softmax(g, ins, attrs, k):
    x = ins[0]
    s = np.exp(x - x.max(axis=-1, keepdims=True))
    s /= s.sum(axis=-1, keepdims=True)
    return g - s * g.sum(axis=-1, keepdims=True)


def _xent(g, ins, attrs, k):
    features, labels = ins
    s = np.exp(features - features.max(axis=-1, keepdims=True))
    s /= s.sum(axis=-1, keepdims=True)
    if labels.dtype.kind in "iu":  # the sparse op's labels: class indices
        labels = np.eye(features.shape[-1], dtype=features.dtype)[labels]
    if k == 0:
        return g[..., None] * (s - labels)
    return g[..., None] * -np.log(s)


def _conv2d(g, ins, attrs, k):
    """NHWC, dilations 1: each output position's patch gets g times the filter (input) or
    each filter tap gets the patch times g (filter), summed."""
    x, w = ins
    s_h, s_w = int(attrs["strides"][1]), int(attrs["strides"][2])
    kh, kw = w.shape[:2]
    n, h, wd, _ = x.shape
    _, oh, ow, _ = g.shape
    if attrs["padding"] in (b"SAME", "SAME"):
        ph = max((oh - 1) * s_h + kh - h, 0) // 2
        pw = max((ow - 1) * s_w + kw - wd, 0) // 2
    else:
        ph = pw = 0
    xp = np.pad(x, ((0, 0), (ph, kh + oh * s_h), (pw, kw + ow * s_w), (0, 0)))
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * s_h : i * s_h + kh, j * s_w : j * s_w + kw, :]  # n, kh, kw, c
            gij = g[:, i, j, :]  # n, o
            dw += np.einsum("nhwc,no->hwco", patch, gij)
            dxp[:, i * s_h : i * s_h + kh, j * s_w : j * s_w + kw, :] += np.einsum("hwco,no->nhwc", w, gij)
    return dxp[:, ph : ph + h, pw : pw + wd, :] if k == 0 else dw


def _pack(g, ins, attrs, k):
    return np.take(g, k, axis=int(attrs.get("axis", 0)) % g.ndim)


def _prod(g, ins, attrs, k):
    """Each element gets g times the product of the *other* elements of its slice (exact
    with zeros too: no division)."""
    x, axis = ins
    reduce = _axes(axis, x.ndim)
    moved = np.moveaxis(x, reduce, tuple(range(len(reduce))))
    flat = moved.reshape((-1, *moved.shape[len(reduce) :]))
    others = np.empty_like(flat)
    for i in range(flat.shape[0]):
        others[i] = np.prod(np.delete(flat, i, axis=0), axis=0)
    back = np.moveaxis(others.reshape(moved.shape), tuple(range(len(reduce))), reduce)
    return _spread(g, x, axis) * back


def _windows(x_shape: tuple, g_shape: tuple, attrs: dict):
    """The input window (rows, cols) of each output position of an NHWC pooling, clipped to
    the input (SAME padding pads before by half the total, as TF does)."""
    _, kh, kw, _ = (int(v) for v in attrs["ksize"])
    _, sh, sw, _ = (int(v) for v in attrs["strides"])
    _, h, w, _ = x_shape
    _, oh, ow, _ = g_shape
    same = attrs["padding"] in (b"SAME", "SAME")
    ph = max((oh - 1) * sh + kh - h, 0) // 2 if same else 0
    pw = max((ow - 1) * sw + kw - w, 0) // 2 if same else 0
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * sh - ph, j * sw - pw
            yield i, j, slice(max(r0, 0), min(r0 + kh, h)), slice(max(c0, 0), min(c0 + kw, w))


def _max_pool(g, ins, attrs, k):
    x = ins[0]
    out = np.zeros_like(x)
    for i, j, rows, cols in _windows(x.shape, g.shape, attrs):
        window = x[:, rows, cols, :]  # n, r, c, ch
        n, r, c, ch = window.shape
        best = window.reshape(n, r * c, ch).argmax(axis=1)  # the first maximum of each window
        for b in range(n):
            for q in range(ch):
                out[b, rows.start + best[b, q] // c, cols.start + best[b, q] % c, q] += g[b, i, j, q]
    return out


def _avg_pool(g, ins, attrs, k):
    x = ins[0]
    out = np.zeros_like(x)
    for i, j, rows, cols in _windows(x.shape, g.shape, attrs):
        count = (rows.stop - rows.start) * (cols.stop - cols.start)  # the window's real elements only
        out[:, rows, cols, :] += g[:, i, j, None, None, :] / count
    return out


def _einsum(g, ins, attrs, k):
    """Two operands, no ellipsis: operand k's gradient is the einsum of g with the other
    operand onto k's letters; a letter only k has (summed away) is broadcast back."""
    equation = attrs["equation"].decode() if isinstance(attrs["equation"], bytes) else attrs["equation"]
    lhs, out = equation.replace(" ", "").split("->")
    subs = lhs.split(",")
    if len(subs) != 2 or "." in equation:
        raise ValueError(f"the einsum check covers two operands without '...', not {equation!r}")
    mine, other = subs[k], subs[1 - k]
    kept = "".join(c for c in mine if c in out or c in other)
    part = np.einsum(f"{out},{other}->{kept}", g, ins[1 - k])
    shape = [part.shape[kept.index(c)] if c in kept else 1 for c in mine]
    order = [kept.index(c) for c in mine if c in kept]
    return np.broadcast_to(np.transpose(part, order).reshape(shape), ins[k].shape).copy()


def _matmul_partials(first: str, second: str, ta: str, tb: str) -> tuple[Partial, ...]:
    """MatMul's (and BatchMatMulV2's) four forms, by which operand is transposed."""
    ev = _matmul(ta, tb)
    a, b = first, second
    forms = {
        (False, False): ((("g", False), (b, True)), ((a, True), ("g", False))),
        (False, True): ((("g", False), (b, False)), (("g", True), (a, False))),
        (True, False): (((b, False), ("g", True)), ((a, False), ("g", False))),
        (True, True): (((b, True), ("g", True)), (("g", True), (a, True))),
    }
    out = []
    for (t1, t2), (ops_a, ops_b) in forms.items():
        when = ((ta, t1), (tb, t2))
        out.append(Partial(a, vjp=_product(ops_a), operands=ops_a, evaluator=ev, when=when, joiner="·"))
        out.append(Partial(b, vjp=_product(ops_b), operands=ops_b, evaluator=ev, when=when, joiner="·"))
    return tuple(out)


def _product(operands: tuple[tuple[str, bool], ...]) -> str:
    return "·".join("{" + name + "}" + ("ᵀ" if t else "") for name, t in operands)


SELU_SCALE, SELU_ALPHA = 1.0507009873554805, 1.6732632423543772
FEATURES = Var("features")
SIGMOID_X = f.fn("sigmoid", X)

_ENTRIES: list[LocalDerivative] = [
    # -- arithmetic, elementwise with broadcasting --------------------------------------
    _elementwise("Add", ("x", "y"), x=ONE, y=ONE),
    _elementwise("AddV2", ("x", "y"), x=ONE, y=ONE),
    LocalDerivative("AddN", ("inputs",), (Partial("inputs", local=ONE),), variadic=True),
    _elementwise("Sub", ("x", "y"), x=ONE, y=Num(-1.0)),
    _elementwise("Mul", ("x", "y"), x=Y, y=X),
    _elementwise("RealDiv", ("x", "y"), x=f.div(ONE, Y), y=f.fn("neg", f.div(X, f.power(Y, Num(2.0))))),
    _elementwise(
        "DivNoNan",
        ("x", "y"),
        x=f.where(f.fn("ne", Y, ZERO), f.div(ONE, Y), ZERO),
        y=f.where(f.fn("ne", Y, ZERO), f.fn("neg", f.div(X, f.power(Y, Num(2.0)))), ZERO),
    ),
    _elementwise(
        "Pow",
        ("x", "y"),
        x=f.mul(Y, f.power(X, f.sub(Y, ONE))),
        y=f.where(f.fn("gt", X, ZERO), f.mul(f.power(X, Y), f.fn("log", X)), ZERO),
    ),
    _elementwise("SquaredDifference", ("x", "y"), x=f.mul(Num(2.0), f.sub(X, Y)), y=f.mul(Num(-2.0), f.sub(X, Y))),
    _elementwise("Maximum", ("x", "y"), x=f.where(f.fn("ge", X, Y), ONE, ZERO), y=f.where(f.fn("ge", X, Y), ZERO, ONE)),
    _elementwise("Minimum", ("x", "y"), x=f.where(f.fn("le", X, Y), ONE, ZERO), y=f.where(f.fn("le", X, Y), ZERO, ONE)),
    _elementwise("BiasAdd", ("value", "bias"), value=ONE, bias=ONE),
    # -- one input ---------------------------------------------------------------------------
    _unary("Square", f.mul(Num(2.0), X)),
    _unary("Sqrt", f.div(ONE, f.mul(Num(2.0), f.fn("sqrt", X)))),
    _unary("Rsqrt", f.mul(Num(-0.5), f.power(X, Num(-1.5)))),
    _unary("Reciprocal", f.fn("neg", f.power(X, Num(-2.0)))),
    _unary("Exp", f.fn("exp", X)),
    _unary("Expm1", f.fn("exp", X)),
    _unary("Log", f.div(ONE, X)),
    _unary("Log1p", f.div(ONE, f.add(ONE, X))),
    _unary("Neg", Num(-1.0)),
    _unary("Abs", f.fn("sign", X)),
    _unary("Sin", f.fn("cos", X)),
    _unary("Cos", f.fn("neg", f.fn("sin", X))),
    _unary("Tanh", f.sub(ONE, f.power(f.fn("tanh", X), Num(2.0)))),
    _unary("Sigmoid", f.mul(SIGMOID_X, f.sub(ONE, SIGMOID_X))),
    _unary("Softplus", f.fn("sigmoid", FEATURES), "features"),
    _unary("Relu", f.where(f.fn("gt", FEATURES, ZERO), ONE, ZERO), "features"),
    _unary(
        "Relu6",
        f.where(Call("and", (f.fn("gt", FEATURES, ZERO), f.fn("lt", FEATURES, Num(6.0)))), ONE, ZERO),
        "features",
    ),
    _unary("Elu", f.where(f.fn("gt", FEATURES, ZERO), ONE, f.fn("exp", FEATURES)), "features"),
    _unary(
        "Selu",
        f.where(
            f.fn("gt", FEATURES, ZERO), Num(SELU_SCALE), f.mul(Num(SELU_SCALE * SELU_ALPHA), f.fn("exp", FEATURES))
        ),
        "features",
    ),
    _unary("LeakyRelu", f.where(f.fn("gt", FEATURES, ZERO), ONE, Var("alpha")), "features"),
    _unary("Cast", ONE),
    _unary("Identity", ONE, "input"),
    _unary("ReadVariableOp", ONE, "resource"),
    _unary("L2Loss", Var("t"), "t"),
    LocalDerivative(
        "ClipByValue",
        ("t", "clip_value_min", "clip_value_max"),
        (
            Partial(
                "t",
                local=f.where(
                    Call(
                        "and",
                        (f.fn("le", Var("clip_value_min"), Var("t")), f.fn("le", Var("t"), Var("clip_value_max"))),
                    ),
                    ONE,
                    ZERO,
                ),
            ),
            Partial("clip_value_min", local=f.where(f.fn("lt", Var("t"), Var("clip_value_min")), ONE, ZERO)),
            Partial("clip_value_max", local=f.where(f.fn("gt", Var("t"), Var("clip_value_max")), ONE, ZERO)),
        ),
    ),
    _elementwise(
        "Select",
        ("condition", "x", "y"),
        x=f.where(Var("condition"), ONE, ZERO),
        y=f.where(Var("condition"), ZERO, ONE),
    ),
    _elementwise(
        "SelectV2",
        ("condition", "t", "e"),
        t=f.where(Var("condition"), ONE, ZERO),
        e=f.where(Var("condition"), ZERO, ONE),
    ),
    LocalDerivative("StopGradient", ("input",), stops=True),
    # -- structural: a vector–Jacobian product -----------------------------------------------
    _structural("MatMul", ("a", "b"), *_matmul_partials("a", "b", "transpose_a", "transpose_b")),
    _structural("BatchMatMulV2", ("x", "y"), *_matmul_partials("x", "y", "adj_x", "adj_y")),
    _structural(
        "Sum", ("input", "axis"), Partial("input", vjp="broadcast({g})", operands=(("g", False),), evaluator=_sum)
    ),
    _structural(
        "Mean",
        ("input", "axis"),
        Partial("input", vjp="broadcast({g})/N", operands=(("g", False),), evaluator=_mean),
    ),
    _structural(
        "Max",
        ("input", "axis"),
        Partial(
            "input",
            vjp="broadcast({g})·[{input} = max]/count([{input} = max])",
            operands=(("g", False),),
            evaluator=_extreme(np.max),
        ),
    ),
    _structural(
        "Min",
        ("input", "axis"),
        Partial(
            "input",
            vjp="broadcast({g})·[{input} = min]/count([{input} = min])",
            operands=(("g", False),),
            evaluator=_extreme(np.min),
        ),
    ),
    _structural(
        "Prod",
        ("input", "axis"),
        Partial("input", vjp="broadcast({g})·prod_others({input})", operands=(("g", False),), evaluator=_prod),
    ),
    _structural(
        "Pack",
        ("values",),
        Partial("values", vjp="unstack({g})", operands=(("g", False),), evaluator=_pack),
        variadic=True,
    ),
    _structural(
        "MaxPool",
        ("input",),
        Partial("input", vjp="unpool_max({g})", operands=(("g", False),), evaluator=_max_pool),
    ),
    _structural(
        "AvgPool",
        ("value",),
        Partial("value", vjp="unpool_avg({g})", operands=(("g", False),), evaluator=_avg_pool),
    ),
    _structural(
        "Einsum",
        ("inputs",),
        Partial("inputs", vjp="einsum({g}, …)", operands=(("g", False),), evaluator=_einsum),
        variadic=True,
    ),
    _structural(
        "Reshape",
        ("tensor", "shape"),
        Partial("tensor", vjp="reshape({g})", operands=(("g", False),), evaluator=_reshape_back),
    ),
    _structural(
        "ExpandDims",
        ("input", "axis"),
        Partial("input", vjp="reshape({g})", operands=(("g", False),), evaluator=_reshape_back),
    ),
    _structural(
        "Squeeze", ("input",), Partial("input", vjp="reshape({g})", operands=(("g", False),), evaluator=_reshape_back)
    ),
    _structural(
        "Transpose",
        ("x", "perm"),
        Partial("x", vjp="transpose({g}, perm⁻¹)", operands=(("g", False),), evaluator=_transpose),
    ),
    _structural(
        "ConcatV2",
        ("values", "axis"),
        Partial("values", vjp="slice({g})", operands=(("g", False),), evaluator=_concat),
        variadic=True,
    ),
    _structural(
        "GatherV2",
        ("params", "indices", "axis"),
        Partial("params", vjp="scatter_add({g}, {indices})", operands=(("g", False),), evaluator=_gather),
    ),
    _structural(
        "Tile", ("input", "multiples"), Partial("input", vjp="Σ tiles({g})", operands=(("g", False),), evaluator=_tile)
    ),
    _structural(
        "Pad", ("input", "paddings"), Partial("input", vjp="slice({g})", operands=(("g", False),), evaluator=_pad)
    ),
    _structural(
        "Slice",
        ("input", "begin", "size"),
        Partial("input", vjp="pad({g})", operands=(("g", False),), evaluator=_slice),
    ),
    _structural(
        "StridedSlice",
        ("input", "begin", "end", "strides"),
        Partial("input", vjp="scatter({g})", operands=(("g", False),), evaluator=_strided_slice),
    ),
    _structural(
        "Softmax",
        ("logits",),
        Partial("logits", vjp="({g} − Σ {g}⊙s)⊙s, s = softmax({logits})", operands=(("g", False),), evaluator=_softmax),
    ),
    _structural(
        "LogSoftmax",
        ("logits",),
        Partial("logits", vjp="{g} − softmax({logits})·Σ{g}", operands=(("g", False),), evaluator=_log_softmax),
    ),
    _structural(
        "SoftmaxCrossEntropyWithLogits",
        ("features", "labels"),
        Partial("features", vjp="{g}·(softmax({features}) − {labels})", operands=(("g", False),), evaluator=_xent),
        Partial("labels", vjp="{g}·(−log softmax({features}))", operands=(("g", False),), evaluator=_xent),
    ),
    _structural(
        "SparseSoftmaxCrossEntropyWithLogits",
        ("features", "labels"),
        Partial(
            "features", vjp="{g}·(softmax({features}) − onehot({labels}))", operands=(("g", False),), evaluator=_xent
        ),
    ),
    _structural(
        "Conv2D",
        ("input", "filter"),
        Partial(
            "input",
            vjp="conv2d_transpose({g}, {filter})",
            operands=(("g", False), ("filter", False)),
            evaluator=_conv2d,
        ),
        Partial(
            "filter", vjp="conv2d_filter({input}, {g})", operands=(("input", False), ("g", False)), evaluator=_conv2d
        ),
    ),
]

#: op type -> its entry
TABLE: dict[str, LocalDerivative] = {e.op: e for e in _ENTRIES}


def lookup(op_type: str) -> LocalDerivative | None:
    """The op's entry, or None (then a step says "TF's registered gradient for <op>")."""
    return TABLE.get(op_type)

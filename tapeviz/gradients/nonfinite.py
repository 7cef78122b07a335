"""Find where a gradient stops being finite or becomes zero, and which known pattern it is.

Reads only the flow (what TF's gradient functions passed back along each edge, in TF's
order), the ops' types and the forward values the tape kept. Three searches:

* forward: the target itself is NaN or Inf; the first op (in forward order, on the way
  to the target) whose inputs are finite and whose output is not;
* non-finite: the first backward step, among the ops between the source and the target,
  whose arriving gradient is finite while what it passes back towards the source is not;
* zero: the first such step whose arriving gradient is not all zero while what it passes
  back towards the source is.

"Zero gradient worth explaining" is precise: every element of d target / d source is
exactly zero while a gradient does reach the source (the target depends on it); with
``index``, that element (or row) of it is. Anything else is no finding.
"""

from __future__ import annotations

import linecache
from typing import Any, cast

import numpy as np

from ..record.graph import TapeGraph
from .flow import GradientFlow
from .numeric import LOCAL, MAX_INDICES, Finding, Pattern, Problem, local_value, safe_code, value_word

# Ops that pass a value through unchanged, element by element: a pattern looks through them.
_THROUGH = frozenset({"Identity", "IdentityN", "Reshape", "Squeeze", "ExpandDims", "Cast", "AddV2", "Sub", "Neg"})
_SELECT = frozenset({"Select", "SelectV2"})
_NORM_APIS = frozenset({"tf.norm", "tf.linalg.norm", "tf.math.l2_normalize", "tf.nn.l2_normalize"})
_STEP_OPS = frozenset({"Sign", "Round", "Floor", "Ceil", "Rint"})
_CLIP_OPS = frozenset({"ClipByValue", "Maximum", "Minimum", "Relu6"})
_GATHER_OPS = frozenset({"ResourceGather", "GatherV2", "Gather", "GatherNd", "ResourceGatherNd"})
_PROBABILITY_OPS = frozenset({"Softmax", "Sigmoid"})
# What a loss does to probabilities before their log: 1 - p, p / sum(p), clipping to [ε, 1 - ε].
_TOWARDS_PROBABILITY = frozenset(
    {"Identity", "Reshape", "Squeeze", "Sub", "Neg", "StridedSlice", "GatherV2", "RealDiv"} | _CLIP_OPS
)


def find(fl: GradientFlow, node: Any, source: Any, index: Any = None) -> Finding | None:
    """What is wrong with d target / d source (a gradient that does arrive), or None."""
    g = fl.graph
    grad = fl.computed(source if not isinstance(source, str) else node)
    if grad is None or grad.dtype.kind not in "fc":
        return None
    names: dict[str, Any] = {"target": g.display_name(fl.target_nodes[0]), "source": g.display_name(node)}
    target_value = _target_value(fl)
    if target_value is not None and not np.all(np.isfinite(target_value)):
        found = _forward(fl)
        if found is not None:
            return Finding(**found, **names, **_bad(~np.isfinite(target_value), target_value))
    if not np.all(np.isfinite(grad)):
        return Finding(**_backward(fl, node, grad, zero=False), **names, **_bad(~np.isfinite(grad), grad))
    part = grad if index is None else _part(grad, index)
    if part.size and not np.any(part != 0):
        mask = np.zeros(grad.shape, bool)
        mask[() if index is None else index] = True
        asked = () if index is None else (tuple(index) if isinstance(index, tuple) else (int(index),))
        return Finding(**_backward(fl, node, grad, zero=True, index=index), **names, **_bad(mask, grad), asked=asked)
    return None


def _bad(mask: np.ndarray, a: np.ndarray) -> dict:
    """The source-side facts: which elements are bad, how many, and what they are."""
    return dict(
        indices=_indices(mask),
        count=int(mask.sum()),
        size=int(mask.size),
        value=value_word(a[mask]) if mask.any() else "0",
    )


def _part(grad: np.ndarray, index: Any) -> np.ndarray:
    """The element or row ``index`` of the gradient (an int, a tuple of ints)."""
    try:
        return np.atleast_1d(grad[index])
    except (IndexError, TypeError) as e:
        raise IndexError(
            f"index {index!r} is not an element or row of the gradient (shape {grad.shape}): "
            "pass an int (a row) or a tuple of ints (an element)."
        ) from e


def _target_value(fl: GradientFlow) -> np.ndarray | None:
    value = _full(fl.graph.output_info(fl.target_nodes[0]))
    return value if value is not None and value.dtype.kind in "fc" else None


# -- the forward pass -------------------------------------------------------------------
def _forward(fl: GradientFlow) -> dict | None:
    """The first op, on the way to the target, whose inputs are finite and output is not."""
    g = fl.graph
    leads = _ancestors(g, fl.target_nodes[0]) | {fl.target_nodes[0]}
    for node in g.forward_order:
        d = g.nx.nodes[node]
        if d["kind"] != "op" or node not in leads:
            continue
        out = _value(g, node)
        if out is None or np.all(np.isfinite(out)):
            continue
        inputs = _inputs(g, node)
        if any(v is not None and not np.all(np.isfinite(v)) for v in inputs.values()):
            continue
        bad = ~np.isfinite(out)
        idx = _indices(bad)
        first = idx[0] if idx else ()
        op = d["op_type"]
        facts = _site(g, node)
        values = [_at(inputs.get(k), first, out.shape) for k in range(max(inputs, default=-1) + 1)]
        pattern, more = _forward_pattern(g, node, op, values)
        variable = "y" if pattern is Pattern.DIVISION_BY_ZERO else "x"
        fwd = values[1] if variable == "y" and len(values) > 1 else (values[0] if values else None)
        return dict(
            problem=Problem.FORWARD,
            pattern=pattern,
            op=op,
            node=node,
            op_indices=idx,
            variable=variable,
            forward=fwd,
            result=_float(out[first]) if out.ndim else _float(out),
            **more,
            **facts,
        )
    return None


def _forward_pattern(g: TapeGraph, node: Any, op: str, values: list) -> tuple[Pattern, dict]:
    x = values[0] if values else None
    if op == "Log" and x is not None:
        if x < 0:
            return Pattern.LOG_OF_NEGATIVE, {}
        producer = _probability_before(g, node)
        if producer is not None:
            return Pattern.LOG_OF_PROBABILITY, _other(g, producer)
        return Pattern.LOG_OF_ZERO, {}
    if op == "Sqrt" and x is not None and x < 0:
        return Pattern.SQRT_OF_NEGATIVE, {}
    if op in ("RealDiv", "Div", "Reciprocal", "Inv"):
        return Pattern.DIVISION_BY_ZERO, {}
    if op == "Exp":
        return Pattern.EXP_OVERFLOW, {}
    return Pattern.OTHER, {}


# -- the backward pass ------------------------------------------------------------------
def _backward(fl: GradientFlow, node: Any, grad: np.ndarray, *, zero: bool, index: Any = None) -> dict:
    g = fl.graph
    on_path = (_descendants(g, node) | {node}) & (_ancestors(g, fl.target_nodes[0]) | {fl.target_nodes[0]})
    problem = Problem.ZERO if zero else Problem.NON_FINITE
    seed = _arriving(fl.steps[0])
    if seed is not None and (not np.any(seed != 0) if zero else not np.all(np.isfinite(seed))):
        return dict(problem=problem, pattern=Pattern.OTHER, seeded=True)
    for step in fl.steps[1:]:
        op_node = step.node
        if op_node not in on_path or g.nx.nodes[op_node]["kind"] != "op":
            continue
        edges = [e for e in step.edges if e[0] in on_path]
        if not edges:
            continue
        arriving = _arriving(step)
        if arriving is None:
            continue
        if zero:
            if not np.any(arriving != 0) or not np.all(np.isfinite(arriving)):
                continue
            passed = [fl.edge_grad(*e) for e in edges]
            if any(p is None or np.any(_zero_part(p, grad.shape, index) != 0) for p in passed):
                continue
            first = cast(np.ndarray, passed[0])
            return _at_op(fl, problem, op_node, edges[0], step.index, first, arriving, index=index)
        if not np.all(np.isfinite(arriving)):
            continue
        for e in edges:
            passed_e = fl.edge_grad(*e)
            if passed_e is not None and passed_e.dtype.kind in "fc" and not np.all(np.isfinite(passed_e)):
                return _at_op(fl, problem, op_node, e, step.index, passed_e, arriving)
    return dict(problem=problem, pattern=Pattern.OTHER)


def _zero_part(passed: np.ndarray, shape: tuple, index: Any) -> np.ndarray:
    """What must be zero of an edge's gradient: all of it, or, when it has the source's
    shape and an index is asked about, that element or row."""
    if index is None or passed.shape != shape:
        return passed
    return _part(passed, index)


def _arriving(step) -> np.ndarray | None:
    grads = step.grad if isinstance(step.grad, list) else [step.grad]
    parts = [np.asarray(a) for a in grads if a is not None and np.asarray(a).dtype.kind in "fc"]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else np.concatenate([p.ravel() for p in parts])


def _at_op(
    fl: GradientFlow,
    problem: Problem,
    op_node: Any,
    edge: tuple,
    step: int,
    passed: np.ndarray,
    arriving: np.ndarray,
    index: Any = None,
) -> dict:
    """The facts of the op where it starts: indices, the arriving gradient, the local
    derivative and the forward value at the first index, and the pattern."""
    g = fl.graph
    op = g.nx.nodes[op_node]["op_type"]
    position = edge[2]
    if problem is Problem.ZERO:
        bad = passed == 0
        if index is not None and passed.ndim and bad.shape:
            mask = np.zeros(bad.shape, bool)
            try:
                mask[index] = True
                bad = bad & mask
            except (IndexError, TypeError):
                pass
    else:
        bad = ~np.isfinite(passed)
    idx = _indices(bad)
    first = idx[0] if idx else ()
    if problem is Problem.ZERO and arriving.shape == passed.shape:
        # the facts are told at an element where a gradient that is not zero arrived
        telling = _indices(bad & (arriving != 0))
        first = telling[0] if telling else first
    inputs = _inputs(g, op_node)
    out = _value(g, op_node)
    values = [_at(inputs.get(k), first, passed.shape) for k in range(max(inputs, default=-1) + 1)]
    out_at = _at(out, first, passed.shape)
    formula, variable, which = LOCAL.get(op, {}).get(position, ("", "", ""))
    forward = None
    if which:
        k = position if which == "in" else int(which[2:])
        forward = values[k] if k < len(values) else None
    facts = dict(
        problem=problem,
        op=op,
        node=op_node,
        edge=edge,
        step=step,
        op_indices=idx,
        arriving=_at(arriving, first, passed.shape),
        local=formula,
        local_value=local_value(op, position, values, out_at) if formula else None,
        variable=variable,
        forward=forward,
        result=_at(passed, first, passed.shape),
        **_site(g, op_node),
    )
    pattern, extra = _pattern(fl, problem, op_node, op, position, inputs, facts, index)
    return {**facts, "pattern": pattern, **extra}


def _pattern(
    fl: GradientFlow,
    problem: Problem,
    node: Any,
    op: str,
    position: int,
    inputs: dict,
    facts: dict,
    index: Any,
) -> tuple[Pattern, dict]:
    g = fl.graph
    x = facts["forward"]
    if problem is Problem.NON_FINITE:
        select = _select_downstream(g, node)
        if facts["arriving"] == 0 and select is not None:
            risky = 1 if op in ("RealDiv", "Div") else position  # a division: the denominator is made safe
            code = safe_code(op, _input_name(g, node, risky), _input_name(g, node, 0))
            return Pattern.WHERE_TRAP, {**_other(g, select), "safe_code": code}
        if op in ("Sqrt", "Rsqrt"):
            api = _site(g, node)["api"]
            return (Pattern.NORM_AT_ZERO if api in _NORM_APIS else Pattern.SQRT_AT_ZERO), {}
        if op == "Log":
            producer = _probability_before(g, node)
            if producer is not None:
                return Pattern.LOG_OF_PROBABILITY, _other(g, producer)
            return (Pattern.LOG_OF_NEGATIVE if x is not None and x < 0 else Pattern.LOG_OF_ZERO), {}
        if op in ("RealDiv", "Div", "Reciprocal", "Inv"):
            return Pattern.DIVISION_BY_ZERO, {}
        if op == "Exp":
            return Pattern.EXP_OVERFLOW, {}
        return Pattern.OTHER, {}
    x_all = inputs.get(position)
    if op == "Relu":
        return Pattern.DEAD_RELU, _stats(x_all)
    if op in ("Sigmoid", "Tanh"):
        return Pattern.SATURATED, _stats(x_all)
    if op in _STEP_OPS:
        return Pattern.STEP_FUNCTION, {}
    if op in _CLIP_OPS:
        producer = _probability_before(g, node)
        if producer is not None:
            return Pattern.PROBABILITY_CLIPPED, _other(g, producer)
        return Pattern.CLIPPED, _stats(x_all)
    if op in _SELECT:
        return Pattern.WHERE_UNSELECTED, {}
    if op in _GATHER_OPS:
        ids = inputs.get(1)
        read = sorted({int(i) for i in np.asarray(ids).ravel()}) if ids is not None else []
        return Pattern.ROW_NOT_READ, {"extra": {"ids": read[:MAX_INDICES], "ids_count": len(read)}}
    if op in ("Mul", "MatMul", "BatchMatMulV2"):
        return Pattern.MULTIPLIED_BY_ZERO, {}
    return Pattern.OTHER, {}


def _stats(x: np.ndarray | None) -> dict:
    if x is None or np.asarray(x).dtype.kind not in "fc" or not np.asarray(x).size:
        return {}
    a = np.asarray(x, dtype=np.float64)
    return {"extra": {"min": float(a.min()), "max": float(a.max()), "min_abs": float(np.abs(a).min())}}


def _select_downstream(g: TapeGraph, node: Any) -> Any:
    """The tf.where (Select) the op's output reaches as a branch, through pass-through ops."""
    frontier, seen = [node], {node}
    while frontier:
        n = frontier.pop()
        for _, v, k, _ in g.data_edges(n):
            if v in seen or g.nx.nodes[v]["kind"] != "op":
                continue
            seen.add(v)
            vt = g.nx.nodes[v]["op_type"]
            if vt in _SELECT and k in (1, 2):
                return v
            if vt in _THROUGH or vt in ("Mul", "RealDiv"):
                frontier.append(v)
    return None


def _probability_before(g: TapeGraph, node: Any) -> Any:
    """The softmax or sigmoid whose output the op's input 0 is, as such or as 1 - p, looking
    through pass-through ops (``tf.math.log(p + 1e-9)`` adds a constant: not the pattern,
    as it is no longer 0)."""
    frontier = [u for u, _, k, _ in g.data_edges(node, out=False) if k == 0]
    for _ in range(4):
        nxt = []
        for u in frontier:
            d = g.nx.nodes[u]
            if d["kind"] != "op":
                continue
            if d["op_type"] in _PROBABILITY_OPS:
                return u
            if d["op_type"] in _TOWARDS_PROBABILITY:
                nxt += [a for a, _, _, _ in g.data_edges(u, out=False)]
        frontier = nxt
    return None


def _input_name(g: TapeGraph, node: Any, position: int) -> str:
    """The Python name of the op's input ``position`` ("x" when it has none)."""
    for u, _, k, _ in g.data_edges(node, out=False):
        if k == position and g.nx.nodes[u].get("name"):
            return str(g.nx.nodes[u]["name"])
    return "x" if position == 0 else "y"


def _other(g: TapeGraph, node: Any) -> dict:
    site = _site(g, node)
    return {"other_op": site["label"], "other_line": site["line"]}


# -- graph reading --------------------------------------------------------------------
def _descendants(g: TapeGraph, node: Any) -> set:
    cache = g.__dict__.setdefault("_numeric_down", {})
    if node not in cache:
        cache[node] = _walk(g, node, out=True)
    return cache[node]


def _ancestors(g: TapeGraph, node: Any) -> set:
    cache = g.__dict__.setdefault("_numeric_up", {})
    if node not in cache:
        cache[node] = _walk(g, node, out=False)
    return cache[node]


def _walk(g: TapeGraph, node: Any, out: bool) -> set:
    seen: set = set()
    frontier = [node]
    while frontier:
        n = frontier.pop()
        for u, v, _, _ in g.data_edges(n, out=out):
            m = v if out else u
            if m not in seen:
                seen.add(m)
                frontier.append(m)
    return seen


def _value(g: TapeGraph, node: Any) -> np.ndarray | None:
    return _full(g.output_info(node))


def _full(info: Any) -> np.ndarray | None:
    """A tensor's whole forward value: what the graph kept, else a view of the tensor
    itself (the graph keeps only a summary of a large activation, the capture keeps it)."""
    if info is None:
        return None
    v = info.value
    if v is None and info.source is not None:
        v = info.source.value_view(info.id)
    return None if v is None or np.asarray(v).dtype.kind not in "fciub" else np.asarray(v)


def _inputs(g: TapeGraph, node: Any) -> dict[int, np.ndarray | None]:
    """input position -> its forward value (None for a handle or an unreadable tensor)."""
    return {k: _full(g.tensors.get(d["tensor"])) for _, _, k, d in g.data_edges(node, out=False)}


def _indices(mask: np.ndarray) -> tuple:
    if mask.ndim == 0:
        return ((),) if bool(mask) else ()
    return tuple(tuple(int(k) for k in i) for i in np.argwhere(mask)[:MAX_INDICES])


def _at(a: Any, index: tuple, shape: tuple) -> float | None:
    """The value at ``index`` of ``a`` when ``a`` has that shape (element by element), its
    only value when it is a scalar, else None."""
    if a is None:
        return None
    a = np.asarray(a)
    if a.dtype.kind not in "fciub":
        return None
    if a.shape == tuple(shape) and len(index) == a.ndim:
        return _float(a[index] if a.ndim else a)
    if a.size == 1:
        return _float(a.reshape(()))
    try:  # broadcast against the contribution's shape (a scalar divisor, a bias)
        return _float(np.broadcast_to(a, shape)[index])
    except (ValueError, IndexError):
        return None


def _float(v: Any) -> float | None:
    try:
        return float(np.real(v))
    except (TypeError, ValueError):
        return None


def _site(g: TapeGraph, node: Any) -> dict:
    """The user's source line that ran the op (file, line, its text) and the TF API call."""
    d = g.nx.nodes[node]
    index = d.get("op_index")
    label = f"{d['function']}()" if d.get("function") else d.get("op_type", "")
    if index is None:
        return {"filename": "", "line": 0, "code": "", "api": "", "label": label}
    op = g.capture.ops[index]
    code = linecache.getline(op.filename, op.line).strip() if op.filename and op.line else ""
    return {"filename": op.filename, "line": op.line, "code": code, "api": op.api or "", "label": label}

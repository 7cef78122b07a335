"""A tensor's value written for a person: statistics (:func:`summarize`), a short text for a
box or an edge (:func:`format_value`), a shape ('4×3'), a size in bytes.

Plain NumPy on values the record stage kept; every later stage writes values this way, so
a number reads the same on a box, in a panel and in the explorer's hover text.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "summarize",
    "format_bytes",
    "shape_text",
    "format_value",
    "listed_items",
    "value_head",
    "sum_squares",
    "TIMES",
    "VALUE_NORM",
    "GRAD_NORM",
]

_SUMMARY_CHUNK = 1 << 18  # elements per pass: bounds the temporary float64 copies (2 MiB)


def summarize(value: np.ndarray) -> dict:
    """Shape, dtype and statistics; enough to judge a tensor too big to show whole.

    Large arrays are read in chunks, so summarizing a huge activation needs a few MiB of
    scratch memory, not several copies of the tensor."""
    s: dict[str, Any] = {"shape": tuple(value.shape), "dtype": str(value.dtype), "size": int(value.size)}
    if not (value.size and np.issubdtype(value.dtype, np.number) and not np.iscomplexobj(value)):
        return s
    flat = value.reshape(-1)
    if value.dtype.kind == "f":
        # min and max are NaN or infinite when any element is: finite ones mean a clean
        # array, summed in float64 by NumPy's buffered casts (no copy; ~15x faster)
        lo, hi = float(flat.min()), float(flat.max())
        if math.isfinite(lo) and math.isfinite(hi):
            total = float(np.add.reduce(flat, dtype=np.float64))
            sq = float(np.einsum("i,i->", flat, flat, dtype=np.float64))
            s.update(nan=0, inf=0, min=lo, max=hi, mean=total / flat.size, norm=math.sqrt(sq))
            return s
    nan = inf = count = 0
    lo, hi, total, sq = np.inf, -np.inf, 0.0, 0.0
    buf = np.empty(min(flat.size, _SUMMARY_CHUNK), np.float64)  # one scratch buffer for all chunks
    for start in range(0, flat.size, _SUMMARY_CHUNK):
        part = flat[start : start + _SUMMARY_CHUNK]
        v = buf[: part.size]
        np.copyto(v, part, casting="unsafe")
        finite = np.isfinite(v)
        if not finite.all():
            nan += int(np.isnan(v).sum())
            inf += int(np.isinf(v).sum())
            v = v[finite]
        if v.size:
            count += v.size
            lo, hi = min(lo, float(v.min())), max(hi, float(v.max()))
            total += float(v.sum())
            sq += float(np.einsum("i,i->", v, v))  # not np.dot: see sum_squares
    s["nan"], s["inf"] = nan, inf
    if count:
        s.update(min=lo, max=hi, mean=total / count, norm=float(np.sqrt(sq)))
    return s


def format_bytes(n: int) -> str:
    """1536 -> '1.5 KiB', 64 << 20 -> '64 MiB'."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


#: How a picture writes a tensor too big to list: its shape, then a norm. ``‖·‖`` is a
#: forward value's norm, ``‖g‖`` a gradient's (the legend explains both once).
TIMES = "×"
VALUE_NORM, GRAD_NORM = "‖·‖", "‖g‖"
#: What stands for the numbers a shortened list leaves out.
ELLIPSIS = "…"


def shape_text(shape) -> str:
    """(4, 3) -> '4×3' (the multiplication sign, as a textbook writes a shape); () -> 'scalar'."""
    return TIMES.join(str(d) for d in shape) or "scalar"


def format_value(
    value: np.ndarray | None, summary: dict | None = None, max_items: int = 6, *, norm: str = VALUE_NORM
) -> str:
    """A short, readable rendering of a value for a node or edge label: its components when
    there are few, else its shape and norm ('4×3 ‖g‖ 0.884' with ``norm=GRAD_NORM``)."""
    if value is None:
        if not summary:
            return "?"
        shape = shape_text(summary.get("shape", ()))
        if "norm" in summary:
            return f"{shape} {norm} {summary['norm']:.3g}"
        return shape
    a = np.asarray(value)
    if a.dtype.kind in "SUO":
        return str(a.tolist())[:24]
    if a.size <= max_items:
        return _fmt_nested(a)
    if a.size <= 4096 and a.dtype.kind in "fiu":  # the common case, without summarize's other statistics
        v = a.astype(np.float64).reshape(-1)
        if np.isfinite(v).all():
            return f"{shape_text(a.shape)} {norm} {float(np.sqrt(np.dot(v, v))):.3g}"
    if summary is not None and "norm" in summary and tuple(summary.get("shape", ())) == a.shape:
        return format_value(None, summary, norm=norm)  # the tape summarized it already
    return format_value(None, _norm_summary(a), norm=norm)


def sum_squares(a: np.ndarray) -> float:
    """The sum of an array's squares in float64. By einsum, not BLAS (np.dot, np.linalg.norm):
    above ~10,000 numbers OpenBLAS wakes its threads, and on a busy 2-core machine that took
    15 ms for 32,768 numbers instead of 0.02 ms (ResNet50's block gradients, when a click
    opens a block)."""
    flat = a.reshape(-1)
    return float(
        sum(
            np.einsum("i,i->", flat[i : i + _SUMMARY_CHUNK], flat[i : i + _SUMMARY_CHUNK], dtype=np.float64)
            for i in range(0, flat.size, _SUMMARY_CHUNK)
        )
    )


def _norm_summary(a: np.ndarray) -> dict:
    """Shape and norm of a big array, the norm summed as :func:`summarize` sums it (float64,
    chunk by chunk) but without its other statistics; summarize itself when a number is
    not finite (its norm leaves NaN / Inf out). ResNet50's biggest gradients are 2.4 M numbers."""
    if a.dtype.kind not in "fiu" or not a.size:
        return summarize(a)
    sq = sum_squares(a)
    if not math.isfinite(sq):
        return summarize(a)
    return {"shape": tuple(a.shape), "norm": math.sqrt(sq)}


def listed_items(value: np.ndarray | None, max_items: int = 6) -> int:
    """How many numbers :func:`format_value` lists for ``value`` (0: it writes a scalar, a
    shape and norm, or a text instead): the numbers :func:`value_head` may leave out."""
    if value is None:
        return 0
    a = np.asarray(value)
    return a.size if a.ndim and 1 < a.size <= max_items and a.dtype.kind not in "SUO" else 0


def value_head(value: np.ndarray, k: int) -> str:
    """The first ``k`` numbers of a listed value, each written as :func:`format_value`
    writes it, then "…" and every bracket closed: ``[[-0.2618, -2.202, …]]``. A text too
    narrow for the whole list shows this, never a number cut in two."""
    text, _ = _head(np.asarray(value), max(k, 0))
    return text


def _head(a: np.ndarray, k: int) -> tuple[str, bool]:
    """(text of a's first k numbers, whether some were left out)."""
    if a.ndim == 0:
        return _fmt_scalar(a.item()), False
    parts = []
    for x in a:
        if k <= 0:
            parts.append(ELLIPSIS)
            return "[" + ", ".join(parts) + "]", True
        text, cut = _head(x, k)
        parts.append(text)
        k -= int(np.asarray(x).size)
        if cut:
            return "[" + ", ".join(parts) + "]", True
    return "[" + ", ".join(parts) + "]", False


def _fmt_nested(a: np.ndarray) -> str:
    if a.ndim == 0:
        return _fmt_scalar(a.item())
    return "[" + ", ".join(_fmt_nested(x) for x in a) + "]"


def _fmt_scalar(x) -> str:
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, complex):
        return f"{x:.3g}"
    x = float(x)
    if np.isnan(x) or np.isinf(x):
        return str(x)
    if x == int(x) and abs(x) < 1e6:
        return f"{x:.1f}"
    return f"{x:.4g}"

"""A value written in the room a picture has for it, every number whole.

A box's forward value, the gradient under it and an edge's gradient share one rule: the
value as :func:`tapeviz.record.values.format_value` writes it; if that is too wide, its
first numbers, "…" and every bracket closed (``[[-0.2618, -2.202, …]]``); then its shape
and norm, its norm alone, its shape alone (a gradient tries its shape and norm first). A
number is never cut in two ("-2.1…" reads as a different number); the whole value stays in
the box's tooltip and the inspector."""

from __future__ import annotations

import numpy as np

from ..record.values import VALUE_NORM, format_value, listed_items, shape_text, value_head
from . import fonts

__all__ = ["fit_value"]


def fit_value(
    value,
    room: float,
    size: float,
    *,
    summary: dict | None = None,
    norm: str = VALUE_NORM,
    prefix: str = "",
    norm_first: bool = False,
    max_items: int = 6,
) -> str:
    """``prefix`` and ``value`` in at most ``room`` points at ``size`` (see the module's
    rule); '' when not even the shortest form fits. ``norm_first`` (a gradient: how big it
    is says most) tries the shape and norm before the first numbers; ``max_items`` as
    format_value takes it (a tag lists 4). A value that is not
    numbers (a string tensor) is written as format_value writes it and cut like any text."""

    def fits(text: str) -> bool:
        return fonts.text_width(text, size) <= room

    a = None if value is None else np.asarray(value)
    text = prefix + format_value(a, summary, max_items, norm=norm)
    if fits(text):
        return text
    if a is not None and a.dtype.kind in "SUO":
        return fonts.fit(text, room, size)
    # the first k numbers, then "…"
    heads = [] if a is None else [prefix + value_head(a, k) for k in range(listed_items(a, max_items) - 1, 0, -1)]
    if a is not None and a.size > 1:
        text = prefix + format_value(a, summary, max_items=1, norm=norm)  # shape and norm
    norms = [text, prefix + text[text.index(norm) :]] if norm in text else []  # the norm alone: the shape is on the box
    shape = a.shape if a is not None else (summary or {}).get("shape")
    shapes = [prefix + shape_text(shape)] if shape else []
    for short in (norms + heads if norm_first else heads + norms) + shapes:
        if fits(short):
            return short
    return ""

"""Placement: the records of a graph's boxes, texts, chips, gradients and arrows, at the
positions the layout gave, sized with the text metrics of fonts.py."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import cache
from typing import Any

from ..messages import DEFAULT, Phrase, localize
from ..record.graph import TapeGraph
from ..record.values import format_value
from . import fonts
from .marks import Arrow, Box, Label
from .names import name_lines
from .routing import edge_plans, edge_route, label_anchor
from .style import (
    BOX_H,
    BOX_W,
    CHIP_PAD,
    FONT,
    INCH_X,
    INCH_Y,
    LABEL_PAD,
    LW_BOX,
    LW_EDGE,
    LW_TARGET,
    MAX_INCHES,
)
from .themes import BELOW, LIGHT, Theme
from .value_text import fit_value
from .visibility import Shown
from .wording import box_names, node_subtitle, node_value


def _nodes(graph: TapeGraph, display: Shown | None):
    return (display.nx if display is not None else graph.nx).nodes(data=True)


def _extent_ys(pos, routes=None) -> list[float]:
    """Every y the drawing uses: node centres and the bend points of routed edges."""
    ys = [p[1] for p in pos.values()]
    for bends in (routes or {}).values():
        ys.extend(b[1] for b in bends)
    return ys


def figure_size(
    pos: Mapping[Any, tuple[float, float]], *, max_inches: float = MAX_INCHES, routes=None
) -> tuple[float, float]:
    """Inches the graph alone needs, so that one layer / one row keeps a constant size
    (a Scene adds its title, caption and legend: see ``Scene.size``)."""
    if not pos:
        return (4.0, 3.0)
    xs = [p[0] for p in pos.values()]
    ys = _extent_ys(pos, routes)
    w = (max(xs) - min(xs) + 1.0) * INCH_X + 0.6
    h = (max(ys) - min(ys) + 1.0) * INCH_Y + 1.6
    return (min(max(w, 4.5), max_inches), min(max(h, 3.2), max_inches))


def label_height(size: float) -> float:
    """Height in points of a one-line boxed label (its text line and padding)."""
    a, d, _ = fonts.line_box(size)
    return a + d + 2 * LABEL_PAD * size


def box_specs(
    graph: TapeGraph,
    pos,
    *,
    targets=(),
    display: Shown | None = None,
    theme: Theme = LIGHT,
    names: Mapping[Any, tuple[str, str]] | None = None,
) -> dict[Any, Box]:
    """One rounded box per node, styled by kind; targets get the theme's target outline;
    ``names`` (from :func:`tapeviz.picture.wording.box_names`) give each its tooltip."""
    boxes = {}
    kinds = theme.kinds
    for n, d in _nodes(graph, display):
        x, y = pos[n]
        fc, ec = kinds.get(d["kind"], kinds["op"])
        target = n in targets
        boxes[n] = Box(
            x - BOX_W / 2,
            y - BOX_H / 2,
            BOX_W,
            BOX_H,
            fc,
            theme.target if target else ec,
            (LW_TARGET if target else LW_BOX) * theme.line,
            f"node-{n}",
            tip=names[n][1] if names else "",
        )
    return boxes


def box_lines(size: float, has_sub: bool, has_chips: bool, theme: Theme = LIGHT) -> tuple[float, ...]:
    """Heights (points) of a box's lines: title, subtitle, value, chips."""
    return _box_lines(size, has_sub, has_chips, theme.least)


@cache
def _box_lines(size: float, has_sub: bool, has_chips: bool, least: float) -> tuple[float, ...]:
    title = sum(fonts.line_box(size, "bold")[:2])
    sub = sum(fonts.line_box(max(size - BELOW["subtitle"], least), style="italic")[:2]) if has_sub else 0.0
    value = sum(fonts.line_box(max(size - BELOW["value"], least))[:2])
    chips = label_height(max(size - BELOW["tag"], least)) + 1.0 if has_chips else 0.0
    return (title, sub, value, chips)


def label_specs(
    graph: TapeGraph,
    pos,
    *,
    fontsize: float = FONT,
    display: Shown | None = None,
    theme: Theme = LIGHT,
    lang: str = DEFAULT,
    unit=(INCH_X * 72, INCH_Y * 72),
    names: Mapping[Any, tuple[str, str]] | None = None,
) -> dict[Any, tuple[Label, Label, Label]]:
    """(title, subtitle, forward value) texts inside each box, fitted to its width and
    stacked by their font heights (leaving a row for chips where the box has some). A
    title too long for one line takes two (:func:`tapeviz.picture.names.name_lines`), never "…"."""
    labels = {}
    inner = BOX_W * unit[0] * 0.92  # points of text a box holds
    ppu_y = unit[1]
    names = names if names is not None else box_names(graph, display, lang)
    title_pitch = sum(fonts.line_box(fontsize, "bold"))
    for n, d in _nodes(graph, display):
        x, y = pos[n]
        sub = node_subtitle(graph, n, display, lang)
        chips = bool(d.get("chips"))
        title_lines = name_lines(names[n][0], inner, fontsize, "bold")
        heights = list(box_lines(fontsize, bool(sub), chips, theme))
        if len(title_lines) > 1:
            heights[0] = len(title_lines) * title_pitch
        sub_size = theme.size("subtitle", fontsize)
        # a long call under a one-line title ("sparse_softmax_cross_entropy") takes a second line
        sub_lines = name_lines(sub, inner, sub_size, lines=1 if len(title_lines) > 1 else 2) if sub else []
        if len(sub_lines) > 1:
            heights[1] *= len(sub_lines)
        gap = 2.0
        total = sum(heights) + gap * (sum(1 for h in heights if h) - 1)
        top = y + total / 2 / ppu_y
        centres = []
        for h in heights:
            centres.append(top - h / 2 / ppu_y)
            if h:
                top -= (h + gap) / ppu_y
        title = "\n".join(title_lines)
        value_size = theme.size("value", fontsize)
        got = node_value(graph, n, display)
        value = "" if got is None else fit_value(got[0], inner, value_size, summary=got[1])  # every number whole
        labels[n] = (
            Label(x, centres[0], title, fontsize, color=theme.text, weight="bold"),
            Label(
                x,
                centres[1] if sub else y,
                "\n".join(sub_lines) if len(sub_lines) > 1 else fonts.fit(sub, inner, sub_size, style="italic"),
                sub_size,
                color=theme.muted,
                style="italic",
            ),
            Label(x, centres[2], value, value_size, color=theme.value),
        )
    return labels


def chip_specs(
    display: Shown,
    pos,
    *,
    fontsize: float = FONT,
    theme: Theme = LIGHT,
    unit=(INCH_X * 72, INCH_Y * 72),
    rows: Mapping | None = None,
    lang: str = DEFAULT,
) -> dict[Any, list[Label]]:
    """The chips of each box (folded constants, shapes, random masks, named inputs) as a
    row of small tags at the bottom of the box: as many as fit, then "+k"."""
    out = {}
    size = theme.size("tag", fontsize)
    inner = BOX_W * unit[0] * 0.92
    pad = CHIP_PAD * size
    for n, d in display.nx.nodes(data=True):
        chips = [
            dataclasses.replace(c, text=localize(c.text, lang)) if isinstance(c.text, Phrase) else c
            for c in d.get("chips") or []
        ]
        if not chips:
            continue
        x, y = pos[n]
        cy = rows[n] if rows else y - BOX_H * 0.32
        widths = [fonts.text_width(c.text, size) + 2 * pad for c in chips]
        kept, used = [], 0.0
        for i, (c, w) in enumerate(zip(chips, widths, strict=True)):
            more = len(chips) - i - 1
            extra = (fonts.text_width(f"+{more}", size) + 2 * pad + 3.0) if more else 0.0
            if used + w + extra > inner:
                break
            kept.append((c.text, c.kind, w))
            used += w + 3.0
        if len(kept) < len(chips):
            rest = len(chips) - len(kept)
            if not kept:  # not even one fits whole: the first, shortened to the room left
                room = inner - 2 * pad
                if rest > 1:
                    room -= fonts.text_width(f"+{rest - 1}", size) + 2 * pad + 3
                text = _shortened_chip(chips[0], room, size)
                if text:
                    kept.append((text, chips[0].kind, fonts.text_width(text, size) + 2 * pad))
                    used = kept[0][2] + 3.0
                    rest -= 1
            if rest:
                w = fonts.text_width(f"+{rest}", size) + 2 * pad
                kept.append((f"+{rest}", "value", w))
                used += w + 3.0
        used -= 3.0
        left = x - used / 2 / unit[0]
        tags = []
        for text, kind, w in kept:
            fc, ec, tc = theme.chips.get(kind, theme.chips["value"])
            tags.append(
                Label(
                    left + w / 2 / unit[0],
                    cy,
                    text,
                    size,
                    color=tc,
                    boxed=True,
                    fill=fc,
                    edge=ec,
                    gid=None,
                    pad=CHIP_PAD,
                )
            )
            left += (w + 3.0) / unit[0]
        out[n] = tags
    return out


def _shortened_chip(chip, room: float, size: float) -> str:
    """A tag's text in ``room`` points: a value's (``axis [0, 1, 2, 3]``) with its numbers
    whole (:func:`fit_value`: its first numbers and "…", its shape and norm), a name's cut."""
    if chip.value is None or chip.kind != "value":
        return fonts.fit(chip.text, room, size)
    value, summary = chip.value
    written = format_value(value, summary, max_items=4)
    label = chip.text[: -len(written)] if chip.text.endswith(written) else ""  # "axis ", "指数 "
    return fit_value(value, room, size, summary=summary, prefix=label, max_items=4)


def grad_specs(
    graph: TapeGraph, pos, *, fontsize: float = FONT, display: Shown | None = None, theme: Theme = LIGHT
) -> dict[Any, Label]:
    """The gradient reaching each node, under its box (empty until the flow fills it)."""
    return {
        n: Label(
            pos[n][0],
            pos[n][1] - BOX_H / 2 - 0.02,
            "",
            theme.size("gradient", fontsize),
            color=theme.grad_text,
            va="top",
            gid=f"grad-{n}",
        )
        for n, _ in _nodes(graph, display)
    }


def arrow_specs(
    graph: TapeGraph,
    pos,
    *,
    routes=None,
    display: Shown | None = None,
    plans=None,
    theme: Theme = LIGHT,
    route: bool = True,
) -> dict[tuple, Arrow]:
    """One arrow per edge, in the forward direction, ending at its consumer's port run
    (see :func:`edge_plans`); routed edges follow their bends. ``route=False`` leaves the
    paths to the caller (a Scene routes each edge once it knows its label's width)."""
    plans = plans if plans is not None else edge_plans(graph, pos, routes, display)
    g = display.nx if display is not None else graph.nx
    arrows = {}
    for u, v, k, d in g.edges(keys=True, data=True):
        plan = plans[(u, v, k)]
        path, mark = edge_route(plan)[::2] if route else (None, None)
        arrows[(u, v, k)] = Arrow(
            plan.start,
            (plan.gap_right, plan.end_y) if plan.top is None else (plan.top, plan.top_y),
            0.0,
            path,
            theme.forward,
            LW_EDGE * theme.line,
            "-",
            f"edge-{u}-{v}-{k}",
            list(d.get("members", [(u, v, k)])),
            mark_at=mark,
        )
    return arrows


def edge_label_specs(
    graph: TapeGraph,
    pos,
    *,
    fontsize: float = FONT,
    routes=None,
    display: Shown | None = None,
    plans=None,
    theme: Theme = LIGHT,
) -> dict[tuple, Label]:
    """A text on each edge for the gradient (or stop reason) it carries, right-aligned on
    its port run in the gap before its consumer."""
    plans = plans if plans is not None else edge_plans(graph, pos, routes, display)
    out = {}
    for e, p in plans.items():
        x, y, ha = label_anchor(p)
        out[e] = Label(
            x,
            y,
            "",
            theme.size("edge", fontsize),
            color=theme.grad_text,
            ha=ha,
            boxed=True,
            fill=theme.label_fill,
            fill_alpha=theme.label_alpha,
        )
    return out

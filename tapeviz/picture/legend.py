"""The legend: one swatch per kind of box and per stop reason shown, flowed into rows by width."""

from __future__ import annotations

from typing import Any, Protocol

from ..messages import DEFAULT, check_lang, say
from ..record.values import GRAD_NORM, TIMES
from . import fonts
from .marks import Label, Swatch
from .style import (
    CHIP_PAD,
    DPI,
    LW_ACTIVE_EDGE,
    LW_BOX,
    LW_CARRIES,
    LW_EDGE,
    LW_ORIGIN,
    LW_ORIGIN_PATH,
    LW_STOPPED,
    MARGIN,
    ORIGIN_DASH,
    REASON_STYLE,
)
from .themes import Theme, get_theme, mix


class LegendSource(Protocol):
    """What the legend reads of a Scene (or of a LegendOnly, for a legend without one)."""

    theme: Theme
    lang: str
    kinds: list
    reasons: list
    chip_kinds: list
    has_bad: bool
    flow: Any


NOTATION_SAMPLE = f"4{TIMES}3 {GRAD_NORM} 0.884"  # the legend's sample of how big tensors are written


def legend_entries(scene: LegendSource) -> list[tuple[str, Any, str]]:
    """(kind, style, text) for each legend entry: node kinds, edges, stop reasons, chips.
    The style's form depends on the kind (see legend_layout)."""
    th, lang = scene.theme, scene.lang
    out: list[tuple[str, Any, str]] = []
    for k in scene.kinds:
        fc, ec = th.kinds[k]
        if k == "layer":  # one colour for every closed group: the text names the kinds drawn
            text = say("ui.kind.layer", lang, kinds=tuple(getattr(scene, "group_kinds", None) or ("layer",)))
        else:
            text = say(f"ui.kind.{k}", lang)
        out.append(("box", (fc, ec, LW_BOX * th.line, "-"), text))
    out.append(("line", (th.forward, LW_EDGE * th.line * 1.4, "-", False), say("ui.legend.forward", lang)))
    ratios = getattr(scene, "ratio_scale", None)
    if ratios is not None:  # a comparison (compare_scene.py): its colours, not one pass's
        out.extend(_ratio_entries(scene, ratios))
    elif scene.flow is not None:
        out.append(("line", (th.flowing, LW_CARRIES * th.line, "-", False), say("ui.legend.flowing", lang)))
        out.append(("line", (th.active, LW_ACTIVE_EDGE * th.line, "-", True), say("ui.legend.active", lang)))
        if scene.has_bad:
            out.append(("line", (th.bad, LW_CARRIES * th.line, "-", False), say("ui.legend.bad", lang)))
        out += origin_entries(scene)
    for r in scene.reasons:
        out.append(
            (
                "line",
                (th.stopped, LW_STOPPED * th.line * 1.3, REASON_STYLE.get(r, "--"), False),
                say("ui.legend.stopped", lang, reason=say(f"legend.{r}", lang)),
            )
        )
    for kind in scene.chip_kinds:
        out.append(("chip", kind, say(f"ui.chip.{kind}", lang)))
    if getattr(scene, "notation", False):
        out.append(("note", NOTATION_SAMPLE, say("ui.legend.notation", lang)))
    scale = getattr(scene, "magnitude_scale", None)
    if scale is not None:
        colours = [mix(scale.color(scale.lo * (scale.hi / scale.lo) ** (i / 9)), th.background, 0.6) for i in range(10)]
        ticks = scale.ticks()
        out.append(("scale", (colours, ticks[0][1], ticks[-1][1]), say("ui.legend.magnitude", lang)))
    return out


def _ratio_entries(scene: Any, scale: Any) -> list[tuple[str, Any, str]]:
    """A comparison's legend: the ratio's colours at each decade, and the lost / gained edges shown."""
    th, lang = scene.theme, scene.lang
    ticks = scale.ticks()
    colours, texts = [scale.colour(t, th) for t in ticks], [f"{TIMES}{t:g}" for t in ticks]
    out: list[tuple[str, Any, str]] = [("ratios", (colours, texts), say("ui.legend.ratio", lang))]
    shown = scene.changes
    if shown["lost"]:
        kinds = {t for _, _, t in shown["lost"]}
        key = "ui.legend.lost" if say("ui.compare.lost", lang) in kinds else "ui.legend.zeroed"
        out.append(("line", (th.shrunk, LW_STOPPED * 1.5 * th.line, (0, (4, 2)), False), say(key, lang)))
    if any(t == say("ui.compare.gained", lang) for _, _, t in shown["grown"]):
        out.append(("line", (th.grown, LW_CARRIES * 1.3 * th.line, "-", False), say("ui.legend.gained", lang)))
    return out


def origin_entries(scene: Any) -> list[tuple[str, Any, str]]:
    """The legend's entries for a marked origin: its box (dashed, in the NaN colour) and
    its path back to the source (a thick line in that colour); none without an origin."""
    origin = getattr(scene, "origin", None)
    if origin is None or getattr(scene, "origin_label", None) is None:
        return []
    th, lang = scene.theme, scene.lang
    fc = th.kinds["op"][0]
    key = "ui.legend.origin_zero" if origin.problem == "zero" else "ui.legend.origin"
    out: list[tuple[str, Any, str]] = [
        ("box", (fc, th.bad, LW_ORIGIN * th.line, ORIGIN_DASH), say(key, lang, value=origin.value))
    ]
    if scene.origin_path:
        source = scene.graph.display_name(origin.source)
        out.append(
            ("line", (th.bad, LW_ORIGIN_PATH * th.line, "-", False), say("ui.legend.origin_path", lang, source=source))
        )
    return out


def legend_layout(entries: list, inner: float, th: Theme, font: float) -> tuple[list[Swatch], float]:
    """Legend entries flowed into centred rows no wider than ``inner`` points; positions
    in points from the lower-left of the legend area (the caller shifts them)."""
    size, tag = th.size("legend", font), th.size("tag", font)
    sample_w, sample_h, sep, col_gap = 20.0 * th.scale, 9.0 * th.scale, 4.0, 14.0 * th.scale
    items = []
    for kind, style, text in entries:
        if kind == "chip":
            w_sample = fonts.text_width("2.0", tag) + 2 * CHIP_PAD * tag
        elif kind == "note":  # a sample text in the gradients' colour
            w_sample = fonts.text_width(style, size)
        elif kind == "ratios":  # a colour sample and its ratio for each tick, then the text
            colours, ticks = style
            w_sample = sum(0.6 * sample_w + 2.0 + fonts.text_width(t, size) + sep for t in ticks) - sep
        elif kind == "scale":  # the low end's label and ten colour steps; the high end's label leads the text
            colours, lo, hi = style
            w_sample = fonts.text_width(lo, size) + sep + 10 * 0.8 * sample_w
            text = f"{hi}  {text}"
        else:
            w_sample = sample_w
        text = fonts.fit(text, inner - w_sample - sep, size)
        items.append((kind, style, text, w_sample, w_sample + sep + fonts.text_width(text, size)))
    rows: list[tuple[list, float]] = []
    row: list = []
    used = 0.0
    for it in items:
        w = it[4]
        if row and used + col_gap + w > inner:
            rows.append((row, used))
            row, used = [], 0.0
        used += (col_gap if row else 0.0) + w
        row.append(it)
    if row:
        rows.append((row, used))
    line_h = max(sum(fonts.line_box(size)[:2]), sample_h) + 4.0
    out = []
    for r, (row, used) in enumerate(rows):
        y = (len(rows) - 1 - r) * line_h + line_h / 2  # centre of this row
        x = (inner - used) / 2
        for kind, style, text, w_sample, w in row:
            label = Label(x + w_sample + sep, y, text, size, color=th.text, ha="left")
            if kind == "box":
                fc, ec, lw, ls = style
                sw = Swatch("box", x, y - sample_h / 2, w_sample, sample_h, fc, ec, lw, ls, label)
            elif kind == "line":
                color, lw, ls, mark = style
                sw = Swatch("line", x, y, w_sample, 0.0, None, color, lw, ls, label, mark=mark)
            elif kind == "ratios":  # each tick: a box of its colour, its ratio beside it
                colours, ticks = style
                at = x
                for colour, tick in zip(colours, ticks, strict=True):
                    seg = 0.6 * sample_w
                    tick_label = Label(at + seg + 2.0, y, tick, size, color=th.text, ha="left")
                    out.append(Swatch("box", at, y - sample_h / 2, seg, sample_h, colour, colour, 0.0, "-", tick_label))
                    at += seg + 2.0 + fonts.text_width(tick, size) + sep
                sw = Swatch("line", x, y, 0.0, 0.0, None, th.background, 0.0, "-", label)
            elif kind == "scale":  # a colour bar: its steps as boxes, the ends' labels beside it
                colours, lo, hi = style
                seg = 0.8 * sample_w
                x_bar = x + fonts.text_width(lo, size) + sep
                out.append(
                    Swatch(
                        "box",
                        x_bar,
                        y - sample_h / 2,
                        seg,
                        sample_h,
                        colours[0],
                        colours[0],
                        0.0,
                        "-",
                        Label(x, y, lo, size, color=th.text, ha="left"),
                    )
                )
                for i, colour in enumerate(colours[1:-1], start=1):
                    out.append(
                        Swatch(
                            "box",
                            x_bar + i * seg,
                            y - sample_h / 2,
                            seg,
                            sample_h,
                            colour,
                            colour,
                            0.0,
                            "-",
                            Label(x, y, "", size, color=th.text, ha="left"),
                        )
                    )
                sw = Swatch(
                    "box", x_bar + 9 * seg, y - sample_h / 2, seg, sample_h, colours[-1], colours[-1], 0.0, "-", label
                )
            elif kind == "note":
                chip = Label(x + w_sample / 2, y, style, size, color=th.grad_text)
                sw = Swatch(
                    "chip", x, y - sample_h / 2, w_sample, sample_h, None, th.grad_text, 0.0, "-", label, chip=chip
                )
            else:
                fc, ec, tc = th.chips[style]
                chip = Label(
                    x + w_sample / 2,
                    y,
                    "2.0" if style == "value" else ("x" if style == "input" else "∼"),
                    tag,
                    color=tc,
                    boxed=True,
                    fill=fc,
                    edge=ec,
                    pad=CHIP_PAD,
                )
                sw = Swatch("chip", x, y - sample_h / 2, w_sample, sample_h, fc, ec, 0.8, "-", label, chip=chip)
            out.append(sw)
            x += w + col_gap
    return out, len(rows) * line_h


class LegendOnly:
    """What :func:`legend_entries` reads, for a legend drawn without a scene; after
    :func:`legend_layout_for`, the legend placed on its canvas."""

    def __init__(self, reasons, kinds, theme, lang):
        self.theme, self.lang = get_theme(theme), check_lang(lang)
        self.kinds, self.reasons = [k for k in kinds if k in self.theme.kinds], list(reasons)
        self.flow = True  # not None: the gradient-flow entries are listed
        self.has_bad = False
        self.chip_kinds: list[str] = []
        self.font = self.theme.font
        self.legend: list[Swatch] = []
        self.canvas = (0.0, 0.0)


def legend_layout_for(size_in: tuple[float, float], reasons, kinds, *, theme=None, lang: str = DEFAULT):
    """A legend alone, laid out for a canvas of ``size_in`` inches and placed at its
    bottom: an object with ``legend`` (Swatches in pixels), ``canvas`` and ``theme``."""
    width_in, height_in = size_in
    spec = LegendOnly(reasons, kinds, theme, lang)
    th = spec.theme
    margin = MARGIN * th.scale
    inner = width_in * 72 - 2 * margin
    swatches, _ = legend_layout(legend_entries(spec), inner, th, spec.font)
    px = DPI / 72.0
    for sw in swatches:
        for obj in (sw, sw.label, sw.chip):
            if obj is not None:
                obj.x, obj.y = obj.x * px + margin * px, obj.y * px + margin * px
        sw.w *= px
        sw.h *= px
    spec.legend = swatches
    spec.canvas = (width_in * DPI, height_in * DPI)
    return spec

"""Gradient norm by layer at one training step: ``hist.plot_layers(step)`` and
``hist.compare(a, b)``.

The bar chart people draw by hand to find where gradients vanish (the first layers near
zero, the last ones large) or explode. Bars are horizontal so every layer's whole name
sits on the axis, however long and however many layers (the figure grows downwards, one
row per layer, first layer at the top as in the model); the norm axis is logarithmic,
since the norms of a sick network span many decades. Flags whose condition holds at the
step are marked on their layer's bar (colour and symbol of ``hist.plot``). Every number
is one History stored: the norm of the gradients TensorFlow computed (see :mod:`tapeviz.training.squared_norms`).

Drawing is split from data: :func:`layer_bars` reads one step out of a History into a
:class:`LayerBars`; :func:`draw_bars` draws bars into an Axes and returns its artists
(the explorer of a run moves them from step to step).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..messages import DEFAULT, check_lang, say
from ..picture.fonts import matplotlib_families
from .plot import FLAG_STYLE

__all__ = ["LayerBars", "LayerChange", "NormTable", "layer_bars", "draw_bars", "plot_layers", "compare"]

BAR = "#a9a9a9"  # a bar with no flag (grey: the flags' blue and red stand out)
STEP_A, STEP_B = "#c8c8c8", "#3f5a78"  # compare: the earlier step light, the later dark
VALUES = ("grad", "relative")
_SYMBOL = {"vanishing": "▼", "exploding": "▲"}  # hist.plot's markers for these flags
_ORDER = ("nan", "exploding", "vanishing", "no_gradient")  # the kind a bar is coloured by


@dataclass(frozen=True)
class LayerBars:
    """One step of a History, one entry per layer (or variable): the norms it stored,
    the flag kinds whose condition holds there, and each entry's layer."""

    step: int
    by: str
    names: tuple[str, ...]
    layers: tuple[str, ...]
    grad: np.ndarray  # NaN: no gradient
    weight: np.ndarray
    relative: np.ndarray  # NaN: no gradient or zero weights
    kinds: tuple[tuple[str, ...], ...]
    loss: float

    def values(self, value: str) -> np.ndarray:
        return self.grad if value == "grad" else self.relative


def _check(value: str, by: str) -> None:
    if value not in VALUES:
        raise ValueError(f"value must be 'grad' or 'relative', got {value!r}.")
    if by not in ("layer", "variable"):
        raise ValueError(f"by must be 'layer' or 'variable', got {by!r}.")


def layer_bars(hist, step: int | None = None, by: str = "layer") -> LayerBars:
    """What :func:`plot_layers` shows, read from ``hist`` at ``step`` (None: the last)."""
    _check("grad", by)
    mags = hist.magnitudes(step, by=by)
    if not mags:
        raise ValueError("Nothing to plot yet: call hist.add(..., grads=, variables=) for some training steps first.")
    steps = hist.steps()
    point = len(steps) - 1 if step is None else int(np.searchsorted(hist.spans()[1], step))
    flagged = hist.flagged(step, by=by)
    nan = float("nan")
    return LayerBars(
        step=int(steps[point]),
        by=by,
        names=tuple(m.name for m in mags),
        layers=tuple(m.layer for m in mags),
        grad=np.array([nan if m.grad_norm is None else m.grad_norm for m in mags]),
        weight=np.array([m.weight_norm for m in mags]),
        relative=np.array([nan if m.relative is None else m.relative for m in mags]),
        kinds=tuple(flagged.get(m.name, ()) for m in mags),
        loss=float(hist.losses()[point]),
    )


def common_prefix(names) -> str:
    """The path prefix every name shares (``"model/"``), cut at a ``/``; "" if none."""
    parts = [n.split("/") for n in names]
    if len(parts) < 2:
        return ""
    common = []
    for level in zip(*parts, strict=False):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    if any(len(p) <= len(common) for p in parts):  # a name would vanish
        common = common[:-1]
    return "/".join(common) + "/" if common else ""


def _kind(kinds) -> str | None:
    return next((k for k in _ORDER if k in kinds), None)


def _decades(values: np.ndarray) -> tuple[float, float]:
    """Whole decades holding every positive finite value (at least two)."""
    ok = values[np.isfinite(values) & (values > 0)]
    if not len(ok):
        return 1e-3, 1e1
    lo, hi = math.floor(math.log10(ok.min())), math.ceil(math.log10(ok.max()))
    if hi - lo < 2:
        lo, hi = lo - 1, hi + 1
    return 10.0**lo, 10.0**hi


def _kind_word(kind: str, lang: str = DEFAULT) -> str:
    return say(f"plot.kind.{kind}", lang)


def _label(value: float, kinds, lang: str = DEFAULT) -> str:
    """The number written beside a bar, or why there is no bar, and the flag's name."""
    if np.isnan(value):
        text = "NaN" if "nan" in kinds else _kind_word("no_gradient", lang) if "no_gradient" in kinds else "—"
    elif np.isinf(value):
        text = "Inf"
    else:
        text = "0" if value == 0 else f"{value:.2g}"
    kind = _kind(kinds)
    if kind in ("vanishing", "exploding"):
        text += f"  {_SYMBOL[kind]} {_kind_word(kind, lang)}"
    return text


@dataclass
class BarArtists:
    """What :func:`draw_bars` drew, to move from step to step: bars, their value texts."""

    bars: list
    texts: list
    floor: float


def draw_bars(
    ax: Axes,
    series: list[tuple[str, np.ndarray, tuple, str]],
    rows: int,
    *,
    lim: tuple[float, float],
    value: str = "grad",
    labels: bool = True,
    lang: str = DEFAULT,
) -> BarArtists:
    """Horizontal bars on a log axis: ``series`` is ``(label, values, kinds per row,
    colour)`` per bar drawn side by side in each row (row 0 at the top). A bar whose row
    has a flag takes the flag's colour; a value that is not a positive number draws no
    bar but says why ("0", "no gradient", "NaN / Inf")."""
    lo, hi = lim
    ax.set_xscale("log")
    room = hi * (hi / lo) ** 0.25  # space on the right for the value texts
    ax.set_xlim(lo, room)
    k = len(series)
    height = 0.8 / k
    bars, texts = [], []
    for s, (label, values, kinds, color) in enumerate(series):
        y = np.arange(rows) + (s - (k - 1) / 2) * height
        width = [_width(v, lo) for v in values]
        colors = [_color(kk, color) for kk in kinds]
        bc = ax.barh(y, width, left=lo, height=height * 0.92, color=colors, label=label, edgecolor="none")
        bars.append(bc)
        if labels:
            for yy, v, kk in zip(y, values, kinds, strict=True):
                x = v if np.isfinite(v) and v > lo else lo
                t = ax.text(
                    x * 1.15,
                    yy,
                    _label(v, kk, lang),
                    va="center",
                    ha="left",
                    fontsize=8 if k == 1 else 7,
                    color="#333333",
                )
                texts.append(t)
    ax.set_ylim(rows - 0.5, -0.5)
    ax.grid(True, which="major", axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    ax.set_xlabel(say("plot.grad_log" if value == "grad" else "plot.rel_log", lang))
    return BarArtists(bars, texts, lo)


def _width(v: float, lo: float) -> float:
    return v - lo if np.isfinite(v) and v > lo else 0.0


def _color(kinds, default: str) -> str:
    kind = _kind(kinds)
    return FLAG_STYLE[kind][1] if kind in ("vanishing", "exploding") else default


def _set_names(ax: Axes, names, fontsize: float = 9) -> str:
    prefix = common_prefix(names)
    ax.set_yticks(np.arange(len(names)), [n[len(prefix) :] for n in names], fontsize=fontsize)
    return prefix


def _mark_layer_names(ax: Axes, rows, flagged) -> set[str]:
    """By variable, a layer's flags go on its name: ▼ / ▲ before it, in the flag's colour.
    Returns the kinds marked, for the legend."""
    texts: list[str] = []
    colors: list[str | None] = []
    marked: set[str] = set()
    for label, layer in zip(ax.get_yticklabels(), rows, strict=True):
        kind = _kind(flagged.get(layer, ()))
        if kind is not None and kind in _SYMBOL:
            texts.append(f"{_SYMBOL[kind]} {label.get_text()}")
            colors.append(FLAG_STYLE[kind][1])
            marked.add(kind)
        else:
            texts.append(label.get_text())
            colors.append(None)
    ax.set_yticks(np.arange(len(rows)), texts)
    for label, color in zip(ax.get_yticklabels(), colors, strict=True):
        if color:
            label.set_color(color)
    return marked


def _name_mark_handles(marked: set[str], lang: str) -> list[Line2D]:
    """Legend entries for the ▼ / ▲ put on layer names: the symbol in the flag's colour."""
    return [
        Line2D(
            [],
            [],
            linestyle="none",
            marker=FLAG_STYLE[kind][0],  # the triangle ▼ / ▲ as hist.plot draws it
            color=FLAG_STYLE[kind][1],
            label=say("plot.flag", lang, label=_kind_word(kind, lang)),
        )
        for kind in _ORDER
        if kind in marked
    ]


def _legend(fig: Figure, handles, title: str | None = None) -> None:
    """One legend under the axes (never over a bar or its value)."""
    if handles:
        fig.legend(
            handles=handles,
            loc="outside lower center",
            ncols=min(len(handles), 4),
            fontsize=8,
            title=title,
            title_fontsize=8,
        )


def _flag_legend(fig: Figure, kinds_seen, lang: str) -> None:
    handles = [Patch(color=BAR, label=say("layers.bar", lang))]
    for kind in _ORDER:
        if kind in kinds_seen and kind in ("vanishing", "exploding"):
            handles.append(Patch(color=FLAG_STYLE[kind][1], label=say("plot.flag", lang, label=_kind_word(kind, lang))))
    if len(handles) > 1:
        _legend(fig, handles)


def _height(rows: int) -> float:
    return 1.6 + 0.3 * max(rows, 3)


def _rows_of(data: LayerBars):
    """(row names, [(label, values, kinds, colour)], value key) of a step: one row per
    layer; by variable, a layer's variables side by side, coloured by their last name."""
    if data.by == "layer":
        return list(data.names), None
    rows = list(dict.fromkeys(data.layers))
    leaves = list(dict.fromkeys(n.rsplit("/", 1)[-1] for n in data.names))
    return rows, leaves


def plot_layers(
    hist, step: int | None = None, *, by: str = "layer", relative: bool = False, lang: str = DEFAULT
) -> Figure:
    """See History.plot_layers; words in ``lang`` (CJK text falls back to a CJK font)."""
    check_lang(lang)
    with rc_context({"font.family": list(matplotlib_families())}):
        return _plot_layers(hist, step, by=by, relative=relative, lang=lang)


def _axis_label(prefix: str, lang: str) -> str:
    return say("layers.axis_of", lang, prefix=prefix) if prefix else say("layers.axis", lang)


def _plot_layers(hist, step: int | None, *, by: str, relative: bool, lang: str) -> Figure:
    _check("grad", by)
    data = layer_bars(hist, step, by)
    values = ["grad", "relative"] if relative else ["grad"]
    rows, leaves = _rows_of(data)
    longest = max(len(n) for n in rows) - len(common_prefix(rows))
    width = min(10.0, (6.5 if not relative else 8.0) + 0.07 * longest)  # long names widen it, up to a page
    fig = Figure(figsize=(width, _height(len(rows))), layout="constrained")
    axes = fig.subplots(1, len(values), sharey=True, squeeze=False)[0]
    for ax, value in zip(axes, values, strict=True):
        lim = _decades(data.values(value))
        if leaves is None:
            series = [("gradient norm", data.values(value), data.kinds, BAR)]
        else:
            series = _leaf_series(data, rows, leaves, value)
        draw_bars(ax, series, len(rows), lim=lim, value=value, lang=lang)
    prefix = _set_names(axes[0], rows)
    if leaves is not None:
        marked = _mark_layer_names(axes[0], rows, hist.flagged(data.step, by="layer"))
        _legend(fig, axes[0].get_legend_handles_labels()[0] + _name_mark_handles(marked, lang))
    axes[0].set_ylabel(_axis_label(prefix, lang))
    if leaves is None:
        _flag_legend(fig, {k for kk in data.kinds for k in kk}, lang)
    loss = say("layers.loss", lang, loss=f"{data.loss:.4g}") if np.isfinite(data.loss) else ""
    title = say("layers.title", lang, by=say(f"plot.by.{by}", lang), step=data.step, loss=loss)
    fig.suptitle(title, x=0.01, ha="left", fontsize=11)
    return fig


_LEAF_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


def _leaf_series(data: LayerBars, rows, leaves, value):
    vals = data.values(value)
    out = []
    for i, leaf in enumerate(leaves):
        v = np.full(len(rows), np.nan)
        kinds: list[tuple[str, ...]] = [()] * len(rows)
        for name, layer, x, kk in zip(data.names, data.layers, vals, data.kinds, strict=True):
            if name.rsplit("/", 1)[-1] == leaf:
                r = rows.index(layer)
                v[r], kinds[r] = x, kk
        out.append((leaf, v, tuple(kinds), _LEAF_COLORS[i % len(_LEAF_COLORS)]))
    return out


# ---------------------------------------------------------------------- compare
@dataclass(frozen=True)
class LayerChange:
    """One layer (or variable) at steps a and b: norms and ratios b / a (NaN: not defined)."""

    name: str
    grad_a: float
    grad_b: float
    grad_ratio: float
    relative_a: float
    relative_b: float
    relative_ratio: float
    weight_ratio: float


class NormTable:
    """The per-layer norm ratios of :func:`compare`: ``rows`` (LayerChange), shown as a
    table in a notebook (``_repr_html_``) and as Markdown by ``str``, headed in ``lang``."""

    def __init__(self, a: int, b: int, rows: list[LayerChange], lang: str = DEFAULT):
        self.a, self.b, self.rows, self.lang = a, b, rows, check_lang(lang)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, name: str) -> LayerChange:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"No layer named {name!r} in this table; names: {', '.join(r.name for r in self.rows[:8])}.")

    def _head(self) -> list[str]:
        lang, a, b = self.lang, self.a, self.b
        return [
            say("compare.col.layer", lang),
            say("compare.col.grad_at", lang, step=a),
            say("compare.col.grad_at", lang, step=b),
            say("compare.col.grad_ratio", lang),
            say("compare.col.rel_at", lang, step=a),
            say("compare.col.rel_at", lang, step=b),
            say("compare.col.rel_ratio", lang),
            say("compare.col.weight_ratio", lang),
        ]

    def _cells(self) -> list[list[str]]:
        fmt = _fmt
        return [
            [
                r.name,
                fmt(r.grad_a),
                fmt(r.grad_b),
                fmt(r.grad_ratio, "×"),
                fmt(r.relative_a),
                fmt(r.relative_b),
                fmt(r.relative_ratio, "×"),
                fmt(r.weight_ratio, "×"),
            ]
            for r in self.rows
        ]

    def __str__(self) -> str:
        head = self._head()
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in self._cells()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self._head())
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in self._cells())
        return f"<table class='tv-norm-table'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def __repr__(self) -> str:
        return f"NormTable(a={self.a}, b={self.b}, rows={len(self.rows)})"


def _fmt(x: float, suffix: str = "") -> str:
    if not np.isfinite(x):
        return "—" if x != x else str(x)
    return f"{suffix}{x:.3g}"


def _ratio(b: np.ndarray, a: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((a > 0) & np.isfinite(a) & np.isfinite(b), b / a, np.nan)


def compare(hist, a: int, b: int, *, by: str = "layer", lang: str = DEFAULT) -> tuple[Figure, NormTable]:
    """See History.compare; the figure's words in ``lang``."""
    check_lang(lang)
    with rc_context({"font.family": list(matplotlib_families())}):
        return _compare(hist, a, b, by=by, lang=lang)


def _compare(hist, a: int, b: int, *, by: str, lang: str) -> tuple[Figure, NormTable]:
    _check("grad", by)
    da, db = layer_bars(hist, a, by), layer_bars(hist, b, by)
    names = [n for n in da.names if n in db.names] + [n for n in db.names if n not in da.names]
    ia, ib = {n: i for i, n in enumerate(da.names)}, {n: i for i, n in enumerate(db.names)}

    def pick(data: LayerBars, index, attr):
        arr = getattr(data, attr)
        return np.array([arr[index[n]] if n in index else np.nan for n in names])

    none = ((),) * len(names)  # two steps' colours: flags are plot_layers' business
    ga, gb = pick(da, ia, "grad"), pick(db, ib, "grad")
    ra, rb = pick(da, ia, "relative"), pick(db, ib, "relative")
    wa, wb = pick(da, ia, "weight"), pick(db, ib, "weight")
    table = NormTable(
        da.step,
        db.step,
        [
            LayerChange(n, *(float(x) for x in row))
            for n, row in zip(
                names,
                zip(ga, gb, _ratio(gb, ga), ra, rb, _ratio(rb, ra), _ratio(wb, wa), strict=True),
                strict=True,
            )
        ],
        lang,
    )
    fig = Figure(figsize=(10.0, _height(len(names)) + 0.3), layout="constrained")
    ax_norm, ax_ratio = fig.subplots(1, 2, sharey=True, width_ratios=[1.5, 1.0])
    lim = _decades(np.concatenate([ga, gb]))
    draw_bars(
        ax_norm,
        [(f"step {da.step}", ga, none, STEP_A), (f"step {db.step}", gb, none, STEP_B)],
        len(names),
        lim=lim,
        labels=False,
        lang=lang,
    )
    steps = [
        Patch(color=STEP_A, label=say("compare.step", lang, step=da.step)),
        Patch(color=STEP_B, label=say("compare.step", lang, step=db.step)),
    ]
    _legend(fig, steps + _draw_ratio(ax_ratio, _ratio(gb, ga), da.step, db.step, lang))
    prefix = _set_names(ax_norm, names)
    ax_norm.set_ylabel(_axis_label(prefix, lang))
    title = say("compare.title", lang, by=say(f"plot.by.{by}", lang), a=da.step, b=db.step)
    fig.suptitle(title, x=0.01, ha="left", fontsize=11)
    return fig, table


def _draw_ratio(ax: Axes, ratio: np.ndarray, a: int, b: int, lang: str) -> list:
    """Bars from 1 to each ratio on a log axis (longer: changed more), ×k written beside."""
    ok = ratio[np.isfinite(ratio) & (ratio > 0)]
    span = max(10.0, float(np.max(np.maximum(ok, 1 / ok)))) if len(ok) else 10.0
    span = 10.0 ** math.ceil(math.log10(span))
    ax.set_xscale("log")
    ax.set_xlim(1 / span / 3, span * 3)
    ax.axvline(1.0, color="#555555", linewidth=0.8)
    for y, r in enumerate(ratio):
        if np.isfinite(r) and r > 0:
            color = "#d62728" if r > 1 else "#1f77b4"
            ax.barh(y, r - 1 if r > 1 else 1 - r, left=1 if r > 1 else r, height=0.6, color=color, alpha=0.75)
            # the text beside the centre line, on the side without the bar
            ax.text(
                1 / 1.15 if r > 1 else 1.15, y, f"×{r:.2g}", va="center", ha="right" if r > 1 else "left", fontsize=8
            )
        else:
            ax.text(1.15, y, "—", va="center", ha="left", fontsize=8, color="grey")
    ax.set_xlabel(say("compare.ratio_axis", lang, a=a, b=b))
    ax.grid(True, which="major", axis="x", alpha=0.3)
    return [
        Patch(color=color, alpha=0.75, label=label)
        for color, label, seen in (
            ("#d62728", say("compare.grew", lang), (ok > 1).any()),
            ("#1f77b4", say("compare.shrank", lang), (ok < 1).any()),
        )
        if seen
    ]

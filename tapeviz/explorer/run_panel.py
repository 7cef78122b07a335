"""The picture of a training run at one step, for the explorer's ``train_step`` slider:
the loss over the run with the step marked, and the gradient norm of every layer at that
step on a log axis (flagged layers coloured and named, as ``hist.plot_layers`` draws them,
:mod:`tapeviz.training.layer_plot`).

Written as SVG directly: a move of the slider repaints in about a millisecond, where
matplotlib took 0.9-1.8 s a frame here (text metrics and constrained layout on every
``savefig``). The data is read once (:class:`RunData`: steps, loss, layer names, one norm
axis for the whole run, so bars compare from step to step); :func:`run_svg` is a pure
function of that data and one step's :class:`~tapeviz.training.layer_plot.LayerBars`.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np

from ..messages import DEFAULT, say
from ..picture.fonts import text_width
from ..picture.themes import FONT_FAMILIES
from ..training.layer_plot import BAR, LayerBars, _color, _decades, _kind_word, _label, common_prefix, layer_bars
from ..training.plot import FLAG_STYLE

__all__ = ["RunData", "run_data", "run_svg", "step_svg"]

FAMILY = ", ".join(f"'{f}'" if " " in f else f for f in FONT_FAMILIES)
SIZE = 12.0  # px, names and titles
SMALL = 10.5  # px, ticks and values
ROW = 22.0  # px per layer
WIDTH = 760.0
LOSS_H = 120.0


@dataclass(frozen=True)
class RunData:
    """What stays the same while the slider moves."""

    steps: np.ndarray
    loss: np.ndarray
    log_loss: bool
    layers: tuple[str, ...]
    prefix: str
    lim: tuple[float, float]


def run_data(hist) -> RunData:
    steps = hist.steps()
    loss = hist.losses()
    layers = tuple(hist.layers())
    pos = loss[np.isfinite(loss)]
    every = [hist.norms(name, "grad", stat, level="layer") for name in layers for stat in ("min", "max")]
    return RunData(
        steps=steps,
        loss=loss,
        log_loss=bool(len(pos) and (pos > 0).all() and pos.max() > 100 * pos.min()),
        layers=layers,
        prefix=common_prefix(layers),
        lim=_decades(np.concatenate(every) if every else np.zeros(0)),
    )


def step_svg(hist, data: RunData, step: int, lang: str = DEFAULT) -> str:
    """The SVG at ``step``: :func:`run_svg` of that step's bars."""
    return run_svg(data, layer_bars(hist, step), lang)


def _esc(s) -> str:
    return html.escape(str(s), quote=True)


def _text(x, y, s, *, size=SMALL, anchor="start", fill="#333333", weight="normal", cls="") -> str:
    c = f' class="{cls}"' if cls else ""
    w = ' font-weight="bold"' if weight == "bold" else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"{w}{c} '
        f'dominant-baseline="middle">{_esc(s)}</text>'
    )


def _nice_ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def _decade_label(e: int) -> str:
    return f"1e{e}"


def run_svg(data: RunData, bars: LayerBars, lang: str = DEFAULT) -> str:
    """The run's loss with ``bars.step`` marked, and ``bars`` as one row per layer; every
    word from the ``run.*`` messages of ``lang``."""
    names = [n[len(data.prefix) :] for n in data.layers]
    left = min(320.0, max([text_width(n, SIZE) for n in names] + [40.0]) + 16.0)
    right = 150.0  # room for the value and the flag's name
    plot_w = WIDTH - left - right
    out: list[str] = []
    y0 = 8.0
    # -- loss
    out.append(_text(left, y0 + 8, _loss_title(data, bars.step, lang), size=SIZE, weight="bold"))
    top, h = y0 + 22, LOSS_H
    out.append(f'<rect x="{left}" y="{top}" width="{plot_w:.1f}" height="{h}" fill="none" stroke="#999999"/>')
    s0, s1 = float(data.steps[0]), float(data.steps[-1])
    span = max(s1 - s0, 1.0)

    def sx(s):
        return left + (float(s) - s0) / span * plot_w

    ok = np.isfinite(data.loss) & ((data.loss > 0) if data.log_loss else True)
    if ok.any():
        v = np.log10(data.loss[ok]) if data.log_loss else data.loss[ok]
        lo, hi = float(v.min()), float(v.max())
        if hi == lo:
            lo, hi = lo - 1, hi + 1

        def sy(x):
            x = math.log10(x) if data.log_loss else x
            return top + h - 6 - (x - lo) / (hi - lo) * (h - 12)

        pts = " ".join(f"{sx(s):.1f},{sy(x):.1f}" for s, x in zip(data.steps[ok], data.loss[ok], strict=True))
        out.append(f'<polyline points="{pts}" fill="none" stroke="#000000" stroke-width="1.3"/>')
        for x in (float(np.nanmin(data.loss[ok])), float(np.nanmax(data.loss[ok]))):
            out.append(_text(left - 8, sy(x), f"{x:.3g}", anchor="end"))
        out.append(_text(left - 8, top + h / 2, say("plot.loss", lang), anchor="end", fill="#777777"))
        i = int(np.searchsorted(data.steps, bars.step))
        if i < len(data.loss) and np.isfinite(data.loss[i]) and ok[i]:
            out.append(
                f'<circle class="tv-run-dot" cx="{sx(bars.step):.1f}" cy="{sy(data.loss[i]):.1f}" r="4" '
                f'fill="{FLAG_STYLE["exploding"][1]}"/>'
            )
    marker = FLAG_STYLE["exploding"][1]
    out.append(
        f'<line class="tv-run-marker" x1="{sx(bars.step):.1f}" y1="{top}" x2="{sx(bars.step):.1f}" y2="{top + h}" '
        f'stroke="{marker}" stroke-width="1.5" stroke-dasharray="4 3"/>'
    )
    for t in _nice_ticks(s0, s1):
        if t == int(t):
            out.append(_text(sx(t), top + h + 10, f"{int(t)}", anchor="middle"))
    # -- layers
    y = top + h + 34
    of = say("run.of", lang, prefix=data.prefix) if data.prefix else ""
    out.append(_text(left, y, say("run.norms", lang, of=of, step=bars.step), size=SIZE, weight="bold"))
    top = y + 18
    lo, hi = data.lim
    decades = math.log10(hi / lo)

    def bx(v):
        return left + max(0.0, min(1.0, math.log10(v / lo) / decades)) * plot_w

    rows_h = ROW * max(len(names), 1)
    every = max(1, math.ceil(decades * 44 / plot_w))  # labels at least 44 px apart
    for e in range(round(math.log10(lo)), round(math.log10(hi)) + 1):
        x = bx(10.0**e)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + rows_h}" stroke="#e3e3e3"/>')
        if e % every == 0:
            out.append(_text(x, top + rows_h + 10, _decade_label(e), anchor="middle"))
    at = {n: i for i, n in enumerate(bars.names)}
    seen: set[str] = set()
    for r, (full, name) in enumerate(zip(data.layers, names, strict=True)):
        cy = top + r * ROW + ROW / 2
        out.append(_text(left - 8, cy, name, size=SIZE, anchor="end", fill="#111111", cls="tv-run-name"))
        j = at.get(full)
        if j is None:
            out.append(_text(left + 4, cy, say("run.absent", lang), fill="#999999"))
            continue
        g, kinds = float(bars.grad[j]), bars.kinds[j]
        seen.update(kinds)
        end = left
        if np.isfinite(g) and g > lo:
            end = bx(g)
            out.append(
                f'<rect class="tv-run-bar" data-layer="{_esc(full)}" data-norm="{g!r}" x="{left}" '
                f'y="{cy - ROW * 0.38:.1f}" width="{end - left:.1f}" height="{ROW * 0.76:.1f}" '
                f'fill="{_color(kinds, BAR)}"/>'
            )
        out.append(_text(end + 5, cy, _label(g, kinds, lang), fill="#333333"))
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + rows_h}" stroke="#999999"/>')
    y = top + rows_h + 30
    legend = [(k, FLAG_STYLE[k][1]) for k in ("vanishing", "exploding") if k in seen]
    x = left
    for kind, color in legend:
        out.append(f'<rect x="{x}" y="{y - 6}" width="14" height="12" fill="{color}"/>')
        words = say("run.flag", lang, kind=_kind_word(kind, lang))
        out.append(_text(x + 18, y, words))
        x += 18 + text_width(words, SMALL) + 20
    height = y + (16 if legend else 0)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="tv-run" width="{WIDTH:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {WIDTH:.0f} {height:.0f}" font-family="{_esc(FAMILY)}">'
        f'<rect width="100%" height="100%" fill="#ffffff"/>' + "".join(out) + "</svg>"
    )


def _loss_title(data: RunData, step: int, lang: str) -> str:
    i = int(np.searchsorted(data.steps, step))
    loss = data.loss[i] if i < len(data.loss) else float("nan")
    scale = say("run.log_scale", lang) if data.log_loss else ""
    if not np.isfinite(loss):
        return say("run.no_loss", lang, scale=scale, step=step)
    return say("run.loss", lang, scale=scale, loss=f"{loss:.4g}", step=step)

"""The slope plot: a target against one input, the current point and its tangent.

Every number here comes from TensorFlow: tv.interact samples the curve by calling the
user's function at each point and takes the tangent's slope from the flow's gradient.
This module only draws that data, in two ways that share one tangent segment
(:func:`tangent_segment`) and one set of ticks:

- :func:`slope_svg`: a small SVG written directly (about a millisecond, no matplotlib),
  which the explorer's live view repaints on every slider move;
- :func:`slope_figure`: a matplotlib Figure, for a notebook cell or a file.

A non-scalar target is plotted as its sum, and the plot says so: TensorFlow's gradient
of a non-scalar target is the gradient of its sum, so that is the curve whose tangent
the gradient is.
"""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass, field

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..messages import DEFAULT, say
from ..picture.fonts import matplotlib_families
from ..picture.themes import get_theme, mix

__all__ = ["Slope", "slope_svg", "slope_figure", "tangent_segment", "caption_lines"]


def _colours(theme: str) -> dict:
    """The slope plot's colours, from the tapeviz theme (themes.py holds every colour): the
    curve in the theme's highlight colour, the tangent in its gradient colour."""
    th = get_theme(theme)
    return dict(
        bg=th.background,
        fg=th.text,
        axis=th.muted,
        grid=mix(th.muted, th.background, 0.25),
        curve=th.active,
        tangent=th.flowing,
        point=th.text,
        width=1.6 * th.line,
    )


#: Half the tangent segment's length, as a fraction of the input's range.
TANGENT_HALF = 0.2


@dataclass(frozen=True)
class Slope:
    """What a slope plot shows, all computed by TensorFlow."""

    input: str  # the input on the x axis
    target: str  # the target on the y axis
    xs: np.ndarray  # sample points over the input's range
    ys: np.ndarray  # the target (its sum if non-scalar) at each sample; NaN where the function failed
    x0: float  # the input's current value
    y0: float  # the target at x0, from the run the explorer shows
    slope: float | None  # TF's gradient d target / d input at x0; None when no gradient flows
    reason: str | None = None  # why the gradient is None (a stop reason code)
    shape: tuple = ()  # the target's shape; () for a scalar
    fixed: dict = field(default_factory=dict)  # the other inputs' values
    failed: int = 0  # samples where the function raised or returned no tensor

    @property
    def summed(self) -> bool:
        return self.shape != ()

    @property
    def y_name(self) -> str:
        return f"sum({self.target})" if self.summed else self.target


def _num(v: float) -> str:
    return f"{float(v):.4g}"


def tangent_segment(s: Slope) -> tuple[np.ndarray, np.ndarray] | None:
    """Two points of the tangent at (x0, y0) with TF's slope, within the input's range
    (None when the gradient is None)."""
    if s.slope is None or not np.isfinite(s.slope) or not np.isfinite(s.y0):
        return None
    lo, hi = float(s.xs[0]), float(s.xs[-1])
    half = TANGENT_HALF * (hi - lo)
    xa, xb = max(lo, s.x0 - half), min(hi, s.x0 + half)
    if xb <= xa:
        return None
    xs = np.array([xa, xb])
    return xs, s.y0 + s.slope * (xs - s.x0)


def _limits(s: Slope) -> tuple[float, float]:
    """The y range: the curve and the point, with a margin (the tangent is clipped to it)."""
    finite = s.ys[np.isfinite(s.ys)]
    values = np.concatenate([finite, [s.y0] if np.isfinite(s.y0) else []])
    if values.size == 0:
        return -1.0, 1.0
    lo, hi = float(values.min()), float(values.max())
    if hi - lo < 1e-12 * max(1.0, abs(hi)):
        pad = max(1.0, abs(hi) * 0.1)
        return lo - pad, hi + pad
    pad = 0.08 * (hi - lo)
    return lo - pad, hi + pad


def caption_lines(s: Slope, lang: str = DEFAULT) -> list[str]:
    """What the plot says under it: the slope (TF's gradient) or why there is none, and
    what is plotted when the target is not a scalar."""
    if s.slope is None:
        lines = [say("ui.slope.none", lang, y=s.y_name, x=s.input, reason=s.reason or "None")]
    else:
        lines = [say("ui.slope.tangent", lang, y=s.y_name, x=s.input, x0=_num(s.x0), slope=_num(s.slope))]
    if s.summed:
        lines.append(say("ui.slope.sum", lang, y=s.target, shape=str(tuple(s.shape))))
    if s.failed:
        lines.append(say("ui.slope.failed", lang, n=s.failed, total=len(s.xs)))
    return lines


def _title(s: Slope, lang: str) -> str:
    fixed = ", ".join(f"{k} = {_num(v)}" for k, v in s.fixed.items())
    return say("ui.slope.title", lang, y=s.y_name, x=s.input) + (f" ({fixed})" if fixed else "")


# --------------------------------------------------------------------------- SVG


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


def _path(px: np.ndarray, py: np.ndarray) -> str:
    """An SVG path through the points, broken where a value is missing (NaN)."""
    parts, pen = [], "M"
    for x, y in zip(px, py, strict=True):
        if not (np.isfinite(x) and np.isfinite(y)):
            pen = "M"
            continue
        parts.append(f"{pen}{x:.1f},{y:.1f}")
        pen = "L"
    return " ".join(parts)


def slope_svg(s: Slope, *, lang: str = DEFAULT, theme: str = "light", width: int = 340, height: int = 250) -> str:
    """The slope plot as a small SVG document: curve, tangent, point, ticks, title."""
    c = _colours(theme)
    font = 11 if theme != "projector" else 13
    left, right, top, bottom = 58, 12, 24, 34
    pw, ph = width - left - right, height - top - bottom
    x_lo, x_hi = float(s.xs[0]), float(s.xs[-1])
    y_lo, y_hi = _limits(s)

    def X(v):
        return left + (np.asarray(v, float) - x_lo) / (x_hi - x_lo) * pw

    def Y(v):
        return top + (y_hi - np.asarray(v, float)) / (y_hi - y_lo) * ph

    out = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="tv-slope-svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="{font}">'
        ),
        f'<rect width="{width}" height="{height}" fill="{c["bg"]}"/>',
        f'<clipPath id="tv-slope-clip"><rect x="{left}" y="{top}" width="{pw}" height="{ph}"/></clipPath>',
    ]
    for t in MaxNLocator(5).tick_values(x_lo, x_hi):
        if x_lo - 1e-9 <= t <= x_hi + 1e-9:
            x = float(X(t))
            out.append(
                f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="{c["grid"]}"/>'
                f'<text x="{x:.1f}" y="{top + ph + font + 2}" text-anchor="middle" fill="{c["fg"]}">'
                f"{_esc(_num(t))}</text>"
            )
    for t in MaxNLocator(5).tick_values(y_lo, y_hi):
        if y_lo <= t <= y_hi:
            y = float(Y(t))
            out.append(
                f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="{c["grid"]}"/>'
                f'<text x="{left - 4}" y="{y + font / 3:.1f}" text-anchor="end" fill="{c["fg"]}">'
                f"{_esc(_num(t))}</text>"
            )
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="{c["axis"]}"/>')
    out.append(
        f'<text x="{left + pw / 2:.1f}" y="{height - 3}" text-anchor="middle" fill="{c["fg"]}">{_esc(s.input)}</text>'
    )
    out.append(
        f'<text transform="translate({font + 1},{top + ph / 2:.1f}) rotate(-90)" text-anchor="middle" '
        f'fill="{c["fg"]}">{_esc(s.y_name)}</text>'
    )
    out.append(
        f'<text x="{width / 2:.1f}" y="{top - 8}" text-anchor="middle" fill="{c["fg"]}" font-weight="600">'
        f"{_esc(_title(s, lang))}</text>"
    )
    w = c["width"]
    out.append(
        f'<g clip-path="url(#tv-slope-clip)">'
        f'<path class="tv-slope-curve" d="{_path(X(s.xs), Y(s.ys))}" fill="none" stroke="{c["curve"]}" '
        f'stroke-width="{w}" stroke-linejoin="round"/>'
    )
    seg = tangent_segment(s)
    if seg is not None:
        (xa, xb), (ya, yb) = X(seg[0]), Y(seg[1])
        out.append(
            f'<line class="tv-slope-tangent" x1="{xa:.1f}" y1="{ya:.1f}" x2="{xb:.1f}" y2="{yb:.1f}" '
            f'stroke="{c["tangent"]}" stroke-width="{w + 0.4}" data-slope="{s.slope!r}"/>'
        )
    if np.isfinite(s.y0):
        out.append(
            f'<circle class="tv-slope-point" cx="{float(X(s.x0)):.1f}" cy="{float(Y(s.y0)):.1f}" r="4" '
            f'fill="{c["point"]}"/>'
        )
    out.append("</g></svg>")
    return "".join(out)


# --------------------------------------------------------------------------- matplotlib


class SlopeFigure(Figure):
    """A Figure that shows itself in Jupyter without pyplot (as PNG)."""

    def _repr_png_(self) -> bytes:
        import io

        buf = io.BytesIO()
        self.savefig(buf, format="png")
        return buf.getvalue()


def slope_figure(s: Slope, *, lang: str = DEFAULT, theme: str = "light") -> Figure:
    """The slope plot as a matplotlib Figure (no pyplot). Its lines carry gids:
    ``curve``, ``tangent`` (absent when the gradient is None) and ``point``. Its words are
    drawn in a font that has them (CJK text falls back to a CJK font)."""
    with rc_context({"font.family": list(matplotlib_families())}):
        return _slope_figure(s, lang=lang, theme=theme)


def _slope_figure(s: Slope, *, lang: str, theme: str) -> Figure:
    c = _colours(theme)
    lines = [textwrap.fill(line, 84) for line in caption_lines(s, lang)]
    n_lines = sum(line.count("\n") + 1 for line in lines)
    line_h = 0.16  # inches per caption line (8.5 pt, spacing 1.3)
    height = 3.3 + line_h * n_lines
    fig = SlopeFigure(figsize=(5.2, height), dpi=100, facecolor=c["bg"])
    bottom = 0.55 + line_h * n_lines + 0.08  # the x label, then the caption under it
    ax = fig.add_axes((0.13, bottom / height, 0.82, 1 - (bottom + 0.35) / height), facecolor=c["bg"])
    ax.grid(True, color=c["grid"], lw=0.8)
    for side in ax.spines.values():
        side.set_color(c["axis"])
    ax.tick_params(colors=c["fg"], labelsize=9)
    ax.xaxis.set_major_locator(MaxNLocator(5))
    ax.yaxis.set_major_locator(MaxNLocator(5))
    ax.plot(s.xs, s.ys, color=c["curve"], lw=c["width"], gid="curve", label=s.y_name)
    seg = tangent_segment(s)
    if seg is not None and s.slope is not None:  # (a tangent needs a slope)
        ax.plot(
            seg[0],
            seg[1],
            color=c["tangent"],
            lw=c["width"] + 0.4,
            gid="tangent",
            label=say("ui.slope.legend", lang, slope=_num(s.slope)),
        )
    if np.isfinite(s.y0):
        ax.plot([s.x0], [s.y0], "o", color=c["point"], ms=6, gid="point", zorder=5)
    ax.set_xlim(float(s.xs[0]), float(s.xs[-1]))
    ax.set_ylim(*_limits(s))
    ax.set_xlabel(s.input, color=c["fg"])
    ax.set_ylabel(s.y_name, color=c["fg"])
    ax.set_title(_title(s, lang), color=c["fg"], fontsize=10)
    legend = ax.legend(loc="best", fontsize=8, facecolor=c["bg"], edgecolor=c["grid"])
    for text in legend.get_texts():
        text.set_color(c["fg"])
    fig.text(
        0.5, 0.08 / height, "\n".join(lines), ha="center", va="bottom", fontsize=8.5, linespacing=1.3, color=c["fg"]
    )
    return fig

"""``hist.plot()``: a training run on one matplotlib Figure (object API, no pyplot).

Panels, sharing the step axis:
1. the loss;
2. gradient norms per layer (or variable) on a log scale: raw solid, clipped dashed in
   the same colour; where steps were merged a band spans each point's min..max, so a
   spike is never hidden; flags are marked where they were raised (vanishing ▼,
   exploding ▲ at the norm, NaN ✕ along the top, no gradient ○ along the bottom); steps
   whose gradients are NaN / Inf are shaded red on every panel;
3. when clipped gradients were recorded: the clip scale (clipped / raw norm) over steps,
   with how often clipping engaged in the legend.
Up to 10 series get a legend; more are coloured by depth (first layer dark, last light)
with a colour bar.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from matplotlib import colormaps, rc_context
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..gradients.magnitude import layer_of
from ..messages import DEFAULT, check_lang, say
from ..picture.fonts import matplotlib_families

_MAX_LEGEND = 10
_NAN_SHADE = "#f4a3a3"
FLAG_STYLE = {  # kind -> (marker, colour); the label is the message "plot.kind.<kind>"
    "vanishing": ("v", "#1f77b4"),
    "exploding": ("^", "#d62728"),
    "nan": ("X", "#000000"),
    "no_gradient": ("o", "#7f7f7f"),
}


def _band(ax, first, last, lo, hi, color, alpha=0.18):
    """Each point's min..max drawn over the steps it covers (first..last step)."""
    ok = np.isfinite(lo) & np.isfinite(hi) & (lo > 0 if ax.get_yscale() == "log" else True)
    if not ok.any():
        return
    x = np.column_stack([first, last]).ravel()
    lo2 = np.repeat(np.where(ok, lo, np.nan), 2)
    hi2 = np.repeat(np.where(ok, hi, np.nan), 2)
    ax.fill_between(x, lo2, hi2, color=color, alpha=alpha, linewidth=0)


def plot_history(
    hist, *, by: str = "layer", names: Iterable[str] | None = None, kind: str = "grad", lang: str = DEFAULT
) -> Figure:
    """The history's figure, its words in ``lang`` (CJK text falls back to a CJK font)."""
    check_lang(lang)
    with rc_context({"font.family": list(matplotlib_families())}):
        return _plot_history(hist, by=by, names=names, kind=kind, lang=lang)


def _plot_history(hist, *, by: str, names: Iterable[str] | None, kind: str, lang: str) -> Figure:
    if by not in ("layer", "variable"):
        raise ValueError(f"by must be 'layer' or 'variable', got {by!r}.")
    if kind not in ("grad", "relative"):
        raise ValueError(f"kind must be 'grad' or 'relative', got {kind!r}.")
    steps = hist.steps()
    if not len(steps):
        raise ValueError("Nothing to plot yet: call hist.add(...) for some training steps first.")
    first, last = hist.spans()
    merged = bool((first != last).any())
    all_names = hist.layers() if by == "layer" else hist.variables()
    if names is None:
        shown = all_names
    else:
        shown = list(names)
        unknown = [n for n in shown if n not in all_names]
        if unknown:
            raise KeyError(f"No {by} named {unknown[0]!r}; known: {', '.join(all_names[:8])}.")
    clip = hist.clipping(by=by)
    has_clip = any(clip[n].steps for n in shown)

    nrows = 3 if has_clip else 2
    ratios = [1.0, 1.8, 1.1][:nrows]
    fig = Figure(figsize=(10, 2.0 + 3.4 + (2.2 if has_clip else 0.0)), layout="constrained")
    axes = fig.subplots(nrows, 1, sharex=True, height_ratios=ratios)
    ax_loss, ax_norm = axes[0], axes[1]

    # -- loss
    loss = hist.losses()
    if np.isfinite(loss).any():
        ax_loss.plot(steps, loss, color="black", linewidth=1.3, label=say("plot.loss", lang))
        pos = loss[np.isfinite(loss)]
        if (pos > 0).all() and pos.max() > 100 * pos.min():
            ax_loss.set_yscale("log")
        if merged:
            _band(ax_loss, first, last, hist.losses("min"), hist.losses("max"), "black", alpha=0.12)
    else:
        ax_loss.text(
            0.5, 0.5, say("plot.no_loss", lang), transform=ax_loss.transAxes, ha="center", va="center", color="grey"
        )
    ax_loss.set_ylabel(say("plot.loss", lang))
    merged_note = say("plot.merged", lang, points=len(steps)) if merged else ""
    ax_loss.set_title(say("plot.title", lang, n=len(hist), note=merged_note), loc="left", fontsize=11)

    # -- norms
    n = len(shown)
    if n <= _MAX_LEGEND:
        colors = [colormaps["tab10"](i % 10) for i in range(n)]
    else:
        colors = [colormaps["viridis"](i / max(n - 1, 1)) for i in range(n)]
    level = "layer" if by == "layer" else "variable"
    ax_norm.set_yscale("log")
    series = {}
    for name, color in zip(shown, colors, strict=True):
        g = hist.norms(name, kind, level=level)
        series[name] = g
        ax_norm.plot(steps, np.where(g > 0, g, np.nan), color=color, linewidth=1.4, label=name)
        if merged:
            _band(
                ax_norm,
                first,
                last,
                hist.norms(name, kind, "min", level=level),
                hist.norms(name, kind, "max", level=level),
                color,
            )
        if kind == "grad" and clip[name].steps:
            c = hist.norms(name, "clipped", level=level)
            ax_norm.plot(steps, np.where(c > 0, c, np.nan), color=color, linewidth=1.0, linestyle="--")
    ax_norm.set_ylabel(say("plot.grad_log" if kind == "grad" else "plot.rel_log", lang))
    ax_norm.grid(True, which="major", axis="y", alpha=0.3)
    kinds_shown = _mark_flags(hist, ax_norm, steps, series, shown, by)
    broken = _shade_nonfinite(hist, axes, first, last)
    ax_loss.set_xlim(first[0] - 0.5, last[-1] + 0.5)  # the whole run, NaN steps included

    handles, labels = [], []
    if n <= _MAX_LEGEND:
        handles, labels = ax_norm.get_legend_handles_labels()
    else:
        sm = ScalarMappable(norm=Normalize(0, n - 1), cmap="viridis")
        cb = fig.colorbar(sm, ax=ax_norm, pad=0.01, fraction=0.03)
        cb.set_label(say("plot.colorbar", lang, by=say(f"plot.by.{by}", lang), last=n - 1))
    if kind == "grad" and has_clip:
        handles += [
            Line2D([], [], color="grey", linewidth=1.4),
            Line2D([], [], color="grey", linewidth=1.0, linestyle="--"),
        ]
        labels += [say("plot.raw", lang), say("plot.clipped", lang)]
    if broken:
        handles.append(Patch(color=_NAN_SHADE, alpha=0.5))
        labels.append(say("plot.nan", lang))
    for k in kinds_shown:
        marker, flag_color = FLAG_STYLE[k]
        handles.append(Line2D([], [], linestyle="none", marker=marker, color=flag_color, markersize=7))
        labels.append(say("plot.flag", lang, label=say(f"plot.kind.{k}", lang)))
    if handles:
        ax_norm.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    by_word = say(f"plot.by.{by}", lang)
    ax_norm.set_title(
        say("plot.norms" if kind == "grad" else "plot.norms_rel", lang, by=by_word), loc="left", fontsize=10
    )

    # -- clipping
    if has_clip:
        ax_clip = axes[2]
        scales = {name: hist.norms(name, "clip_scale", level=level) for name in shown if clip[name].steps}
        glob = hist.norms(None, "clip_scale")
        shared = all(np.allclose(s, glob, rtol=1e-4, atol=1e-6, equal_nan=True) for s in scales.values())
        lines: list[tuple[str | None, Any, np.ndarray, Any]]  # (name, colour, scales, clipping stats)
        if shared:  # tf.clip_by_global_norm: one scale for every gradient, one line
            st = hist.clipping(by="global")["global"]
            lines = [(None, "black", glob, st)]
            title = say(
                "plot.clip_global",
                lang,
                engaged=st.engaged,
                steps=st.steps,
                fraction=f"{st.fraction:.0%}",
                scale=f"{st.min_scale:.2g}",
            )
        else:
            lines = [
                (name, color, scales[name], clip[name])
                for name, color in zip(shown, colors, strict=True)
                if name in scales
            ]
            title = say("plot.clip_each", lang, by=by_word)
        for name, color, s, st in lines:
            label = f"{name}: {st.engaged}/{st.steps} ({st.fraction:.0%})" if name else say("plot.every", lang)
            ax_clip.plot(steps, s, color=color, linewidth=1.2, label=label)
            if merged:
                lvl = level if name else None
                _band(
                    ax_clip,
                    first,
                    last,
                    hist.norms(name, "clip_scale", "min", level=lvl),
                    hist.norms(name, "clip_scale", "max", level=lvl),
                    color,
                    alpha=0.15,
                )
        ax_clip.set_ylim(0, 1.08)
        ax_clip.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
        ax_clip.set_ylabel(say("plot.clip_axis", lang))
        ax_clip.set_title(title, loc="left", fontsize=10)
        if not shared and len(lines) <= _MAX_LEGEND:
            ax_clip.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    axes[-1].set_xlabel(say("plot.step", lang))
    return fig


def _shade_nonfinite(hist, axes, first, last) -> bool:
    """Shade the steps whose global gradient norm is NaN / Inf on every panel; True if any."""
    if not hist.variables():
        return False
    bad = ~np.isfinite(hist.norms(None))
    if not bad.any():
        return False
    edges = np.flatnonzero(np.diff(np.concatenate([[0], bad.astype(np.int8), [0]])))
    for a, b in zip(edges[0::2], edges[1::2], strict=True):  # runs of bad points
        for ax in axes:
            ax.axvspan(first[a] - 0.5, last[b - 1] + 0.5, color=_NAN_SHADE, alpha=0.25, linewidth=0, zorder=0)
    return True


def _mark_flags(hist, ax, steps, series, shown, by) -> list[str]:
    """Draw a marker per flag on the norms panel; return the kinds drawn."""
    kinds = []
    shown_set = set(shown)
    top = ax.get_xaxis_transform()  # x in data, y in axes fraction
    for f in hist.flags():
        name = f.name if by == "variable" or f.kind in ("vanishing", "exploding") else layer_of(f.name)
        if f.name == "loss":
            name = None
        elif name not in shown_set:
            continue
        marker, color = FLAG_STYLE[f.kind]
        if f.kind in ("vanishing", "exploding") and name in series:
            i = min(int(np.searchsorted(steps, f.step)), len(steps) - 1)
            y = series[name][i]
            if np.isfinite(y) and y > 0:
                ax.plot(
                    [steps[i]],
                    [y],
                    linestyle="none",
                    marker=marker,
                    color=color,
                    markersize=8,
                    markeredgecolor="white",
                    markeredgewidth=0.6,
                    zorder=5,
                )
            else:
                ax.plot(
                    [f.step],
                    [0.97],
                    transform=top,
                    linestyle="none",
                    marker=marker,
                    color=color,
                    markersize=8,
                    zorder=5,
                )
        else:
            y = 0.97 if f.kind == "nan" else 0.03
            ax.plot(
                [f.step],
                [y],
                transform=top,
                linestyle="none",
                marker=marker,
                color=color,
                markersize=8,
                markerfacecolor=color if f.kind == "nan" else "none",
                zorder=5,
            )
        if f.kind not in kinds:
            kinds.append(f.kind)
    return kinds

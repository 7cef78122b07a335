"""The explorer's HTML panels: the clipping table and the node inspector.

Each function turns plain data (a ClipReport computed by TensorFlow, a flow, a node)
into an HTML fragment; words come from the message catalogue of the chosen language.
Nothing here computes a gradient or a norm.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..gradients import clipping
from ..gradients.diagnose import explain_flow
from ..gradients.flow import GradientFlow
from ..messages import DEFAULT, say
from ..record.graph import TapeGraph
from ..record.values import VALUE_NORM, format_value, shape_text, sum_squares
from . import static_files

__all__ = ["CSS", "clipping_panel", "inspector", "diagnosis", "PANEL_ROWS"]

#: The panels' and quiz's style sheet (static/panels.css), as a ``<style>`` element.
CSS = "<style>\n" + static_files.text("panels.css") + "</style>\n"

#: The clipping panel lists at most this many variables (a table of hundreds helps nobody).
PANEL_ROWS = 40


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _arr(a: np.ndarray | None, precision: int = 4) -> str:
    if a is None:
        return "None"
    a = np.asarray(a)
    if a.size <= 6:
        return format_value(a)
    return np.array2string(a, precision=precision, separator=", ", threshold=64)


def _bad(a) -> bool:
    return a is not None and np.asarray(a).dtype.kind in "fc" and not np.all(np.isfinite(a))


def _small(a: np.ndarray | None, max_items: int = 4) -> str:
    """Components for small tensors, the norm for large ones."""
    if a is None:
        return "None"
    a = np.asarray(a)
    if a.size <= max_items:
        return format_value(a, max_items=max_items)
    norm = math.sqrt(sum_squares(a)) if a.dtype.kind in "fiu" else float(np.linalg.norm(a))  # no BLAS threads
    return f"{shape_text(a.shape)} {VALUE_NORM} {norm:.4g}"


def _shown_names(rep: clipping.ClipReport) -> list[str]:
    names = list(rep.raw)
    if len(names) <= PANEL_ROWS:
        return names
    nones = [n for n in names if rep.raw[n] is None]  # big models: None gradients, then the largest norms
    rest = sorted((n for n in names if rep.raw[n] is not None), key=lambda n: -(rep.norm_before[n] or 0.0))
    keep = set((nones + rest)[:PANEL_ROWS])
    return [n for n in names if n in keep]


def clipping_panel(
    rep: clipping.ClipReport, fl: GradientFlow, variables: Mapping[str, Any], lang: str = DEFAULT
) -> str:
    """Raw vs clipped gradient, norms before and after with bars, the SGD preview, the
    global norm; a None gradient with its diagnosis where clipping it would raise."""
    rows = []
    scale = max([v for v in rep.norm_before.values() if v] + [1e-12])
    names = list(rep.raw)
    shown = _shown_names(rep)
    for name in shown:
        raw, clipped = rep.raw[name], rep.clipped[name]
        if raw is None:
            why = explain_flow(fl, variables[name], lang)
            detail = f" ({_esc(why.reason)}): {_esc(why)}" if why else ""
            rows.append(
                f"<tr><td>{_esc(name)}</td><td colspan='5' class='tv-none'>{_esc(say('panel.none', lang))}"
                f"{detail} {_esc(say('panel.none_advice', lang))}</td></tr>"
            )
            continue
        nb, na = rep.norm_before[name], rep.norm_after[name]
        assert nb is not None and na is not None  # (a gradient has norms)
        bars = (
            f"<span class='tv-bar tv-raw' style='width:{120 * nb / scale:.1f}px'></span><br>"
            f"<span class='tv-bar tv-clip' style='width:{120 * na / scale:.1f}px'></span>"
        )
        bad = " class='tv-bad'" if _bad(raw) else ""
        w, upd = rep.weights.get(name), rep.updated.get(name)
        rows.append(
            f"<tr><td>{_esc(name)}</td><td{bad}>{_esc(_small(raw))}</td><td>{_esc(_small(clipped))}</td>"
            f"<td class='tv-norm' data-var='{_esc(name)}'>{nb:.4g} → <b class='tv-clipped-norm'>{na:.4g}</b></td>"
            f"<td>{bars}</td><td>{_esc(_small(w))} − {rep.lr:g}·g = {_esc(_small(upd))}</td></tr>"
        )
    heads = ("variable", "raw", "clipped", "norms", "bars", "sgd")
    head = "<tr>" + "".join(f"<th>{_esc(say('panel.head.' + h, lang))}</th>" for h in heads) + "</tr>"
    more = (
        f"<div class='tv-none'>{_esc(say('panel.more', lang, shown=len(shown), total=len(names)))}</div>"
        if len(shown) < len(names)
        else ""
    )
    if rep.global_norm_before is None or rep.global_norm_after is None:
        gn = f"<span class='tv-none'>{_esc(say('panel.global_mixed', lang))}</span>"
    else:
        gn = f"{rep.global_norm_before:.4g} → <b class='tv-global-norm'>{rep.global_norm_after:.4g}</b>"
    foot = more + f"<div>{_esc(say('panel.global', lang))} {gn} ({_esc(mode_label(rep.mode, lang))})</div>"
    return f"<div class='tv-panel'><table>{head}{''.join(rows)}</table>{foot}</div>"


def inspector(
    graph: TapeGraph, fl: GradientFlow, node, lang: str = DEFAULT, chain: Sequence[tuple[int, list[str]]] = ()
) -> str:
    """One node: what it is, its value, its gradient, and why it has none. ``chain``: the
    chain rule at the steps that process it, (step, lines): its local derivative with its
    inputs' names and TF's numbers (chain_words writes them)."""
    g = graph
    d = g.nx.nodes[node]
    info = g.output_info(node)
    parts = [
        (
            f"<b>{_esc(d.get('name') or d['label'])}</b> <i>{_esc(d['kind'])}"
            f"{' · ' + _esc(d['op_type']) if d['kind'] == 'op' else ''}</i>"
        )
    ]
    if d.get("scope"):
        parts.append(f"{_esc(say('inspect.scope', lang))} {_esc(d['scope'])}")
    if info is not None:
        shown = _arr(info.value) if info.value is not None else info.summary
        parts.append(f"{_esc(say('inspect.value', lang, dtype=info.dtype, shape=info.shape))}<pre>{_esc(shown)}</pre>")
    grad = fl.computed(node)
    cls = "tv-bad" if _bad(grad) else ""
    target = g.display_name(fl.target_nodes[0])
    parts.append(f"{_esc(say('inspect.grad', lang, target=target))}<pre class='{cls}'>{_esc(_arr(grad))}</pre>")
    why = explain_flow(fl, node, lang) if grad is None else None
    if why is not None:
        parts.append(
            f"<span class='tv-none'>{_esc(say('inspect.no_gradient', lang, reason=why.reason))} {_esc(why)}</span>"
        )
    for k, lines in chain:
        text = "\n".join(lines)
        parts.append(f"{_esc(say('inspect.chain', lang, k=k))}<pre class='tv-inspect-chain'>{_esc(text)}</pre>")
    return "<br>".join(parts)


def diagnosis(origin: Any, lang: str = DEFAULT) -> str:
    """Why the target's gradient is NaN, Inf or zero (a tapeviz.gradients.origin.Origin:
    the diagnosis's sentences, written by the gradients stage), and the step it starts at."""
    value = "0" if origin.problem == "zero" else origin.value
    head = say("inspect.diagnosis", lang, value=value)
    return (
        f"<div class='tv-diagnosis' data-step='{origin.step}'><b class='tv-bad'>{_esc(head)}</b> "
        f"{_esc(origin.text.get(lang, ''))}</div>"
    )


def mode_label(mode: str, lang: str) -> str:
    """A clip mode as the menu and the panel name it: the TF function it calls
    ("tf.clip_by_norm"), or "no clipping" in the page's language."""
    return say("ui.clip.none", lang) if mode == "none" else f"tf.clip_{mode}"

"""The exported page: the explorer with no kernel and no network, in one HTML file.

:func:`page_fragment` is one explorer as an HTML fragment: one root element holding its
own ``<style>``, its controls, its data (a ``<script type="application/json">``) and its
script (the canvas's, keyboard's and quiz's own files from ``static/``, inlined as one
classic script, no module loader). Each target's pictures are its first SVG plus a patch
per backward step each way (patches.py: what the notebook's canvas is sent), so a page of
ResNet50's 1,347 steps holds one picture and small patches instead of 1,347 pictures.
The page's script applies them with the canvas's ``tvApply``; hover tips, zoom and pan,
selecting a box, the keys, the target menu, the clip_norm slider and the quiz run there.
Nothing is fetched: no CDN, no widget manager, no font; it works from ``file://`` with the
network off, and several fragments sit on one page (every rule is under ``.tv-page``, the
script finds its own root, the data sits inside it).

:func:`write_page` wraps one fragment in a document.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..messages import catalogue, say
from ..output.export import check_path
from ..record.values import format_value
from . import panels, patches, quiz, static_files
from .state import (
    ExplorerState,
    GraphTargets,
    box_at,
    chain_html,
    clipped_texts,
    diagnosis,
    jump_to_origin,
    node_inspector,
    panel,
    picture,
    tips,
)

__all__ = ["page_fragment", "write_page", "check_removed_keywords", "REMOVED_KEYWORDS"]

#: Keywords export_html took while its page loaded scripts from CDNs; the page loads none now.
REMOVED_KEYWORDS = ("embed_url", "requirejs", "requirejs_url", "cors")

# What could open a comment or a script inside script data (an SVG's "</g>" is written "<\/g>").
_OPENS = re.compile(r"<(?=!--|script)", re.I)
_CSS_FILES = ("canvas.css", "keyboard.css", "panels.css", "page.css")


def check_removed_keywords(keywords: Mapping[str, Any], where: str = "export_html") -> None:
    """TypeError naming the change when ``keywords`` holds one of :data:`REMOVED_KEYWORDS`."""
    gone = [k for k in REMOVED_KEYWORDS if k in keywords]
    if gone:
        raise TypeError(
            f"{where}() no longer takes {', '.join(gone)}: the page is one self-contained file that "
            "loads no script at all (no CDN, no require.js, no widget manager), so there is nothing "
            "to point elsewhere. Remove the argument."
        )


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _json(data: Any) -> str:
    """JSON to sit inside a ``<script>``: nothing in it can end the element or open a comment."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return _OPENS.sub("\\\\u003c", text.replace("</", "<\\/"))


def _clip_text(state: ExplorerState) -> str:
    label = panels.mode_label(state.clip_mode, state.lang)
    if state.clip_mode in ("by_norm", "by_global_norm"):
        return f"{label}(clip_norm={state.clip_norm:g})"
    if state.clip_mode == "by_value":
        lo, hi = state.clip_value
        return f"{label}(clip_value=({lo:g}, {hi:g}))"
    return label


def _patch(old: patches.Document | None, new: patches.Document | None, new_markup: str) -> dict:
    """The patch from one picture to the next, or the next picture whole (another layout)."""
    p = patches.diff(old, new) if old is not None and new is not None else None
    return p if p is not None else {"whole": new_markup}


def _overlay(base: str, other: str) -> list[dict]:
    """Patches from a step's picture to another picture of that step ([to, back])."""
    a, b = patches.parse(base), patches.parse(other)
    return [_patch(a, b, other), _patch(b, a, base)]


def _page_tips(ex: GraphTargets, state: ExplorerState) -> dict[str, str]:
    """The canvas's hover tips, less what a click does in a notebook only (open, close a
    group) and, in a quiz, the gradient (the answer a hover would give away)."""
    lang = state.lang
    drop = {say("ui.canvas.open", lang), say("ui.canvas.close", lang)}
    grad = catalogue(lang)["ui.canvas.grad"].split("{summary}")[0] if state.quiz else None

    def keep(line: str) -> bool:
        return line not in drop and not (grad and line.startswith(grad))

    return {k: "\n".join(filter(keep, v.split("\n"))) for k, v in tips(ex, state).items()}


def _track(ex: GraphTargets, state: ExplorerState, clips: list[ExplorerState] | None, start_clip: int) -> dict:
    """One target's part of the page's data: its pictures as the first one plus patches, the
    overlays (revealed quiz numbers, other clip_norm values), tips, inspector, panels, quiz."""
    fl = ex.flow(state.target)
    n = len(fl.steps)
    start = fl.check_step(state.step)
    lang = state.lang
    shown = state.replace(answers=())  # a quiz page starts with every step hidden
    markups: list[str] = []
    forward: list[dict] = []
    back: list[dict] = []
    prev_doc: patches.Document | None = None
    for k in range(n):
        markup = picture(ex, shown.replace(step=k))
        doc = patches.parse(markup)
        if k:
            forward.append(_patch(prev_doc, doc, markup))
            back.append(_patch(doc, prev_doc, markups[-1]))
        markups.append(markup)
        prev_doc = doc
    overlays: dict[str, dict[int, list[dict]]] = {}
    if state.quiz:
        overlays["reveal"] = {}
        for k in range(n):
            revealed = picture(ex, shown.replace(step=k, quiz=False))
            if revealed != markups[k]:
                overlays["reveal"][k] = _overlay(markups[k], revealed)
    for i, other in enumerate(clips or []):
        if i == start_clip:
            continue
        overlays[f"clip{i}"] = {}
        for k in range(n):  # the clip_norm changes a picture only where it changes a text
            if clipped_texts(ex, other.replace(step=k)) != clipped_texts(ex, shown.replace(step=k)):
                overlays[f"clip{i}"][k] = _overlay(markups[k], picture(ex, other.replace(step=k)))
    hover = _page_tips(ex, state)
    inspect = {}
    for element_id in hover:
        hit = box_at(ex, state, element_id) if element_id.startswith("node-") else None
        if hit is not None and hit[0] == "select":
            inspect[element_id] = node_inspector(ex, state, hit[1])
    tables: list[str] = []
    if state.quiz:
        table = panel(ex, state.replace(quiz=False))
        tables = [f"<details class='tv-quiz-table'><summary>{_esc(say('quiz.table', lang))}</summary>{table}</details>"]
    jump = None
    if not state.quiz:
        tables = [panel(ex, s) for s in clips] if clips else [panel(ex, state)]
        origin = diagnosis(ex, state)
        if origin is not None:  # why the gradient is NaN, Inf or zero, over the table (the picture marks where)
            tables = [panels.diagnosis(origin, lang) + t for t in tables]
            jump = _jump(ex, state, inspect)
    # the step's sentence and chain rule under the picture; in a quiz, the line once the step is answered
    chain = [chain_html(ex, shown.replace(step=k)) for k in range(n)]
    chain_answered = [chain_html(ex, shown.replace(step=k, quiz=False)) for k in range(n)] if state.quiz else []
    questions = []
    if state.quiz:
        for k in range(n):
            q = quiz.question(fl, k, state.ask, ex.chain_rule(state.target, lang))
            questions.append(
                {"q": quiz.question_text(fl, q, lang), "e": [float(x) for x in q.expected], "v": format_value(q.value)}
            )
    return {
        "name": state.target,
        "steps": n,
        "start": start,
        "first": markups[start],  # the page shows it first, with no walk
        "f": forward,
        "b": back,
        "overlays": overlays,
        "tips": hover,
        "inspect": inspect,
        "panels": tables,
        "jump": jump,
        "quiz": questions,
        "chain": chain,
        "chainAnswered": chain_answered,
    }


def _jump(ex: GraphTargets, state: ExplorerState, inspect: dict[str, str]) -> dict | None:
    """The "Go to step k, where it starts" button's data (the live explorer's
    ``jump_to_origin``): the step, the box the inspector then shows (its inspector's HTML
    put in ``inspect`` when the hover tips did not hold it) and the button's words."""
    there = jump_to_origin(ex, state)
    if there is state:
        return None
    element_id = f"node-{there.node}"
    if element_id not in inspect:
        inspect[element_id] = node_inspector(ex, there, there.node)
    return {"step": there.step, "id": element_id, "label": say("inspect.jump", state.lang, step=there.step)}


def _words(lang: str) -> dict:
    quiz_words = {k: catalogue(lang)[f"quiz.{k}"] for k in ("right", "wrong", "revealed", "unreadable", "score")}
    play = "▶ " + say("ui.control.play", lang)
    return {"reset": say("ui.canvas.reset", lang), "playIcon": play, "pauseIcon": "❚❚", "quiz": quiz_words}


def _controls(names: list[str], state: ExplorerState, clip_values: list[float] | None, start_clip: int) -> str:
    """The fragment's controls, in the page's language (the script wires them)."""
    lang = state.lang

    def w(key: str) -> str:
        return _esc(say(key, lang))

    def button(cls: str, key: str, face: str, extra: str = "") -> str:
        return f"<button type='button' class='{cls}' title='{w(key)}' aria-label='{w(key)}'{extra}>{face}</button>"

    out = []
    if len(names) > 1:
        options = "".join(f"<option value='{i}'>{_esc(name)}</option>" for i, name in enumerate(names))
        menu = f"<select class='tv-target'>{options}</select>"
        out.append(f"<label class='tv-page-target'>{w('page.targets')} {menu}</label>")
    out.append(
        "<div class='tv-page-bar'>"
        + button("tv-play", "ui.control.play", "▶ " + w("ui.control.play"), " aria-pressed='false'")
        + button("tv-prev", "ui.control.prev", "◀")
        + f"<label>{w('ui.control.step')} <input type='range' class='tv-step' min='0' max='0' value='0'></label>"
        + button("tv-next", "ui.control.next", "▶")
        + "<span class='tv-step-value'></span>"
        + f"<span class='tv-keys-hint'><span class='tv-keys-off'>⌨ {w('ui.keys.off')}</span>"
        + f"<span class='tv-keys-on'>⌨ {w('ui.keys.on')}</span></span></div>"
    )
    out.append("<div class='tv-canvas'></div><div class='tv-chain-box'></div>")
    if state.quiz:
        out.append(
            "<div class='tv-quiz'><div class='tv-quiz-question'></div>"
            f"<input class='tv-quiz-input' type='text' placeholder='{w('quiz.placeholder')}'> "
            f"<button class='tv-quiz-check' type='button'>{w('quiz.check')}</button> "
            f"<button class='tv-quiz-reveal' type='button'>{w('quiz.reveal')}</button>"
            "<div class='tv-quiz-verdict'></div>"
            "<div><span class='tv-quiz-score'></span> "
            f"<button class='tv-quiz-reset' type='button'>{w('quiz.reset')}</button></div>"
            "<div class='tv-quiz-steps'></div></div>"
        )
    clip = ""
    if clip_values:
        top = len(clip_values) - 1
        clip = (
            f"<div class='tv-note'>{w('page.clip_positions')}</div><div class='tv-page-clip'>"
            f"<label>clip_norm <input type='range' class='tv-clip-norm' min='0' max='{top}' step='1' "
            f"value='{start_clip}'></label><span class='tv-clip-value'>{clip_values[start_clip]:g}</span></div>"
        )
    # the button goes to the step where a NaN, Inf or zero gradient starts (the script shows
    # it, labelled, for a target that has one), over the inspector that then shows its op
    jump = "<button type='button' class='tv-jump' hidden></button>"
    out.append(
        f"<div class='tv-lower'><div>{clip}<div class='tv-clip-panel'></div></div>"
        f"<div class='tv-page-side'>{jump}<div class='tv-inspect'></div></div></div>"
    )
    return "".join(out)


def page_fragment(
    explored: GraphTargets,
    state: ExplorerState,
    *,
    targets: Sequence[str] | None = None,
    clip_norms: Sequence[float] | None = None,
    title: str | None = None,
    interval: int = 900,
) -> str:
    """The explorer in ``state`` as a self-contained HTML fragment: one root element with its
    own ``<style>`` and ``<script>``, no ``<html>``/``<head>``, no request of any kind. It
    works inline in any document, several on one page.

    ``targets``: the targets whose backward pass it holds (default: the state's own); with
    several, a menu picks one. ``clip_norms``: clip_norm positions a slider picks (by_norm
    unless the state clips by global norm): the clipping panel and the finished pass's
    clipped gradients, computed by TensorFlow now for each. ``interval``: ms per step
    while playing. A quiz state (``quiz=True``) holds the questions and TF's answers:
    the page checks what is typed, reveals, and keeps the score."""
    ex = explored
    names = list(targets) if targets else [state.target]
    for name in names:
        ex.flow(name)  # a clear error for an unknown target before any work
    lang = state.lang
    page_title = title if title is not None else say("page.title", lang, target=", ".join(names))
    clip_values: list[float] | None = None
    start_clip = 0
    base = state
    if clip_norms and not state.quiz:
        mode = state.clip_mode if state.clip_mode in ("by_norm", "by_global_norm") else "by_norm"
        clip_values = sorted({float(v) for v in clip_norms})
        start_clip = min(range(len(clip_values)), key=lambda i: abs(clip_values[i] - state.clip_norm))
        base = state.replace(clip_mode=mode, clip_norm=clip_values[start_clip])
    tracks = []
    for name in names:
        s = base if name == state.target else base.replace(target=name, step=None, collapsed=None)
        clips = [s.replace(clip_norm=v) for v in clip_values] if clip_values else None
        tracks.append(_track(ex, s, clips, start_clip))
    head = say(
        "page.head",
        lang,
        target=", ".join(names),
        clip=_clip_text(base),
        lr=f"{state.lr:g}",
        n=sum(t["steps"] for t in tracks),
    )
    steps = [{k: t.pop(k) for k in ("f", "b", "overlays")} for t in tracks]
    data = {
        "targets": tracks,
        "words": _words(lang),
        "quiz": state.quiz,
        "tolerance": state.tolerance,
        "interval": interval,
        "clip": {"start": start_clip, "labels": [f"{v:g}" for v in clip_values]} if clip_values else None,
    }
    css = "\n".join(static_files.text(f) for f in _CSS_FILES)
    script = (
        '(function () {\n"use strict";\nconst root = document.currentScript.parentElement;\n'
        + static_files.bundle("page.js")
        + 'tv_page.tvPage(root, JSON.parse(root.querySelector(":scope > script.tv-page-data").textContent));\n})();'
    )
    return (
        f"<div class='tv-page tv-explorer' lang='{_esc(lang)}' tabindex='0' data-tv-keys='on' "
        "aria-keyshortcuts='ArrowLeft ArrowRight Space'>\n"
        f"<style>\n{css}</style>\n"
        f"<div class='tv-page-head'><b>{_esc(page_title)}</b><br>{_esc(head)}</div>\n"
        f"{_controls(names, base, clip_values, start_clip)}\n"
        f"<script type='application/json' class='tv-page-data'>{_json(data)}</script>\n"
        f"<script>\n{script}\n</script>\n"
        f"<script type='application/json' class='tv-page-steps'>{_json(steps)}</script>\n</div>\n"
    )


def write_page(
    ex: GraphTargets,
    state: ExplorerState,
    path,
    *,
    targets: Sequence[str] | None = None,
    clip_norms: Sequence[float] | None = None,
    title: str | None = None,
    interval: int = 900,
    **removed: Any,
) -> Path:
    """Write a standalone .html page of the explorer in ``state`` (one :func:`page_fragment`
    in a document); returns the path. The page makes no request: open it from disk with the
    network off. Keywords as for :func:`page_fragment`."""
    check_removed_keywords(removed)
    if removed:
        raise TypeError(f"write_page() got an unexpected keyword argument {next(iter(removed))!r}")
    p = check_path(path, formats=(".html", ".htm"))
    fragment = page_fragment(ex, state, targets=targets, clip_norms=clip_norms, title=title, interval=interval)
    names = list(targets) if targets else [state.target]
    page_title = title if title is not None else say("page.title", state.lang, target=", ".join(names))
    page = (
        f'<!DOCTYPE html>\n<html lang="{_esc(state.lang)}">\n<head>\n<meta charset="UTF-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'  # no favicon request
        f"<title>{_esc(page_title)}</title>\n"
        "<style>body { font-family: sans-serif; margin: 12px; }</style>\n"
        f"</head>\n<body>\n{fragment}</body>\n</html>\n"
    )
    p.write_text(page, encoding="utf-8")
    return p

"""A standalone HTML page of an explorer's states: stepping works with no Python kernel.

The page holds the pictures of every backward step (of every target given), made by
iterating over explorer states (:func:`tapeviz.explorer.state.picture`), and ipywidgets that pick
one in the browser (a ``Stack`` per target, a step slider and a Play button linked to
it with ``jslink``; a target menu linked to a Stack of targets). The clipping panel is
static, or, given ``clip_norms``, one panel per clip_norm position, computed by
TensorFlow now and picked by a slider in the browser.

The page runs on ``@jupyter-widgets/html-manager``, loaded with require.js from the
CDNs ipywidgets itself uses unless ``embed_url`` / ``requirejs_url`` point at local
copies (see :func:`write_page`).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ipywidgets as W
from ipywidgets import embed

from ..messages import catalogue, say
from ..output.export import check_path
from ..record.graph import format_value
from . import panels, quiz
from .canvas import page_script
from .state import Explored, ExplorerState, panel, picture, step_of, tips

__all__ = ["write_page"]


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _clip_text(state: ExplorerState) -> str:
    label = panels.mode_label(state.clip, state.lang)
    if state.clip in ("by_norm", "by_global_norm"):
        return f"{label}(clip_norm={state.clip_norm:g})"
    if state.clip == "by_value":
        lo, hi = state.clip_value
        return f"{label}(clip_value=({lo:g}, {hi:g}))"
    return label


def _target_box(ex: Explored, state: ExplorerState, interval: int, made: list) -> tuple[W.Widget, int]:
    """One target's pictures in a Stack, a step slider and a Play button linked to it."""
    fl = ex.flow(state.target)
    n = len(fl.steps)  # pictures 0..n-1; the last is the finished pass
    current = fl.check_step(state.step)
    make = _quiz_frame if state.quiz else picture
    pictures = [W.HTML(make(ex, state.replace(step=k, answers=()))) for k in range(n)]
    stack = W.Stack(pictures, selected_index=current, layout=W.Layout(overflow="auto")).add_class("tv-frames")
    slider = W.IntSlider(
        value=current,
        min=0,
        max=n - 1,
        description=say("ui.control.step", state.lang),
        continuous_update=True,
        layout=W.Layout(width="420px"),
    ).add_class("tv-step")
    play = W.Play(value=current, min=0, max=n - 1, interval=interval, description=say("ui.control.play", state.lang))
    play.add_class("tv-play")
    links = [
        W.jslink((slider, "value"), (stack, "selected_index")),
        W.jslink((play, "value"), (stack, "selected_index")),
    ]
    bar = W.HBox([play, slider])
    box = W.VBox([bar, stack])
    made += [box, bar, stack, *pictures, slider, play, *links]
    return box, n


def _quiz_frame(ex: Explored, state: ExplorerState) -> str:
    """One step of a quiz page: the picture with the step's numbers hidden, the same picture
    revealed (shown by the page's script once answered), and the question with its form.
    The answer (TensorFlow's numbers) is in the page, for the page's script to check."""
    fl = ex.flow(state.target)
    q = quiz.question(fl, step_of(ex, state))
    lang = state.lang
    expected = json.dumps([float(x) for x in q.expected])
    return (
        f"<div class='tv-quiz-step' data-target='{_esc(state.target)}' data-step='{q.step}' "
        f"data-expected='{_esc(expected)}' data-value='{_esc(format_value(q.value))}' "
        f"data-tolerance='{state.tolerance!r}'>"
        f"<div class='tv-quiz-hidden'>{picture(ex, state)}</div>"
        f"<div class='tv-quiz-shown' style='display:none'>{picture(ex, state.replace(quiz=False))}</div>"
        f"<div class='tv-quiz-question'>{_esc(quiz.question_text(fl, q, lang))}</div>"
        f"<input class='tv-quiz-input' type='text' placeholder='{_esc(say('quiz.placeholder', lang))}'> "
        f"<button class='tv-quiz-check' type='button'>{_esc(say('quiz.check', lang))}</button> "
        f"<button class='tv-quiz-reveal' type='button'>{_esc(say('quiz.reveal', lang))}</button>"
        "<div class='tv-quiz-verdict'></div></div>"
    )


def _quiz_script(lang: str, steps: dict[str, int]) -> str:
    """The page's own script: checks an answer where it is typed (no kernel, no network),
    reveals the step, and keeps the per-step score (reset by the teacher's button)."""
    words = {k: catalogue(lang)[f"quiz.{k}"] for k in ("right", "wrong", "revealed", "unreadable", "score")}
    data = embed.escape_script(json.dumps({"words": words, "steps": steps}, ensure_ascii=False))
    return f'<script type="module">\nconst TV_QUIZ = {data};\n{quiz.CHECK_JS}\n{_QUIZ_PAGE_JS}</script>\n'


_QUIZ_PAGE_JS = r"""
const tvQuizAnswers = {};
function tvQuizSay(template, facts) {
  return template.replace(/\{(\w+)\}/g, (m, k) => (k in facts ? String(facts[k]) : m));
}
function tvQuizScore() {
  const counts = { right: 0, wrong: 0, revealed: 0 };
  const cells = [];
  for (const [target, n] of Object.entries(TV_QUIZ.steps)) {
    for (let k = 0; k < n; k++) {
      const outcome = tvQuizAnswers[target + "\u0000" + k];
      if (outcome) counts[outcome] += 1;
      cells.push(k + " " + ({ right: "\u2713", wrong: "\u2717", revealed: "\u25ce" }[outcome] || "\u00b7"));
    }
  }
  const steps = Object.values(TV_QUIZ.steps).reduce((a, b) => a + b, 0);
  const text = tvQuizSay(TV_QUIZ.words.score, { ...counts, steps });
  for (const el of document.querySelectorAll(".tv-quiz-page-score")) el.textContent = text;
  for (const el of document.querySelectorAll(".tv-quiz-page-steps")) el.textContent = cells.join("  ");
}
function tvQuizShow(step, outcome, typed) {
  step.querySelector(".tv-quiz-hidden").style.display = "none";
  step.querySelector(".tv-quiz-shown").style.display = "";
  for (const el of step.querySelectorAll("input, button")) el.disabled = true;
  const verdict = step.querySelector(".tv-quiz-verdict");
  verdict.className = "tv-quiz-verdict tv-quiz-" + outcome;
  verdict.textContent = tvQuizSay(TV_QUIZ.words[outcome], { typed, value: step.dataset.value });
  tvQuizAnswers[step.dataset.target + "\u0000" + step.dataset.step] = outcome;
  tvQuizScore();
}
function tvQuizHide(step) {
  step.querySelector(".tv-quiz-hidden").style.display = "";
  step.querySelector(".tv-quiz-shown").style.display = "none";
  for (const el of step.querySelectorAll("input, button")) el.disabled = false;
  step.querySelector(".tv-quiz-input").value = "";
  const verdict = step.querySelector(".tv-quiz-verdict");
  verdict.className = "tv-quiz-verdict";
  verdict.textContent = "";
}
document.addEventListener("click", (event) => {
  const button = event.target.closest("button");
  if (!button) return;
  if (button.classList.contains("tv-quiz-reset")) {
    for (const key of Object.keys(tvQuizAnswers)) delete tvQuizAnswers[key];
    for (const step of document.querySelectorAll(".tv-quiz-step")) tvQuizHide(step);
    tvQuizScore();
    return;
  }
  const step = button.closest(".tv-quiz-step");
  if (!step) return;
  if (button.classList.contains("tv-quiz-reveal")) {
    tvQuizShow(step, "revealed", "");
  } else if (button.classList.contains("tv-quiz-check")) {
    const typed = step.querySelector(".tv-quiz-input").value.trim();
    const outcome = tvQuizJudge(JSON.parse(step.dataset.expected), typed, Number(step.dataset.tolerance));
    if (outcome === null) {
      step.querySelector(".tv-quiz-verdict").textContent = TV_QUIZ.words.unreadable;
      return;
    }
    tvQuizShow(step, outcome, typed);
  }
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && event.target.classList && event.target.classList.contains("tv-quiz-input")) {
    event.target.closest(".tv-quiz-step").querySelector(".tv-quiz-check").click();
  }
});
document.addEventListener("DOMContentLoaded", tvQuizScore);
"""


def _panels(ex: Explored, state: ExplorerState, clip_norms, made: list) -> W.Widget:
    """The clipping panel: as it is now, or one per clip_norm position with a slider. In a
    quiz page it gives the answers away: it is folded away under a summary that says so."""
    if state.quiz:
        html_panel = panel(ex, state.replace(quiz=False))
        box = W.HTML(
            f"{panels.CSS}<details class='tv-quiz-table'><summary>{_esc(say('quiz.table', state.lang))}</summary>"
            f"{html_panel}</details>"
        )
        made.append(box)
        return box
    if not clip_norms:
        box = W.HTML(panels.CSS + panel(ex, state))
        made.append(box)
        return box
    mode = state.clip if state.clip in ("by_norm", "by_global_norm") else "by_norm"
    values = sorted({float(v) for v in clip_norms})
    states = [state.replace(clip=mode, clip_norm=v) for v in values]
    pages = [W.HTML(panels.CSS + panel(ex, s)) for s in states]
    start = min(range(len(values)), key=lambda i: abs(values[i] - state.clip_norm))
    stack = W.Stack(pages, selected_index=start).add_class("tv-clip-panels")
    slider = W.SelectionSlider(
        options=[(f"{v:g}", v) for v in values],
        index=start,
        description="clip_norm",
        continuous_update=True,
        layout=W.Layout(width="420px"),
    ).add_class("tv-clip-norm")
    link = W.jslink((slider, "index"), (stack, "selected_index"))
    note = W.HTML(f"<div class='tv-note'>{_esc(say('page.clip_positions', state.lang))}</div>")
    box = W.VBox([note, slider, stack])
    made += [box, note, slider, stack, *pages, link]
    return box


def write_page(
    ex: Explored,
    state: ExplorerState,
    path,
    *,
    targets: Sequence[str] | None = None,
    clip_norms: Sequence[float] | None = None,
    title: str | None = None,
    embed_url: str | None = None,
    requirejs: bool = True,
    requirejs_url: str | None = None,
    cors: bool = True,
    interval: int = 900,
) -> Path:
    """Write a standalone .html page of the explorer in ``state``; returns the path.

    ``targets``: the targets whose backward pass the page holds (default: the state's
    own); with several, a menu picks one. ``clip_norms``: clip_norm positions to
    compute the clipping panel for (a slider picks one; by_norm unless the state clips by
    global norm). The scripts: ``embed_url`` (the html-manager's ``dist/embed-amd.js``, or
    with ``requirejs=False`` the standalone ``dist/embed.js``), ``requirejs_url`` (where
    require.js comes from), ``cors`` (``crossorigin="anonymous"`` on script tags).
    Browsers refuse some scripts on ``file://`` pages: serve the page over http when the
    scripts are local files too.
    """
    p = check_path(path, formats=(".html", ".htm"))
    if requirejs_url is not None and not requirejs:
        raise ValueError(
            "requirejs_url needs requirejs=True: with requirejs=False the page loads the "
            "standalone embed.js and no require.js."
        )
    if embed_url is None:
        embed_url = embed.DEFAULT_EMBED_REQUIREJS_URL if requirejs else embed.DEFAULT_EMBED_SCRIPT_URL
    names = list(targets) if targets else [state.target]
    for name in names:
        ex.flow(name)  # a clear error for an unknown target before any work
    lang = state.lang
    page_title = title if title is not None else say("page.title", lang, target=", ".join(names))

    made: list = []
    boxes, counts, hover = [], [], []
    for name in names:
        s = state if name == state.target else state.replace(target=name, step=None, collapsed=None)
        hover.append(tips(ex, s))
        box, n = _target_box(ex, s, interval, made)
        boxes.append(box)
        counts.append(n)
    if len(boxes) == 1:
        body: W.Widget = boxes[0]
    else:
        chooser = W.Dropdown(options=names, index=0, description=say("page.targets", lang)).add_class("tv-target")
        stack = W.Stack(boxes, selected_index=0).add_class("tv-targets")
        link = W.jslink((chooser, "index"), (stack, "selected_index"))
        body = W.VBox([chooser, stack])
        made += [body, chooser, stack, link]
    head = say("page.head", lang, target=", ".join(names), clip=_clip_text(state), lr=f"{state.lr:g}", n=sum(counts))
    quiz_parts = ""
    if state.quiz:
        quiz_parts = (
            "<div class='tv-quiz-page'><span class='tv-quiz-page-score'></span> "
            f"<button class='tv-quiz-reset' type='button'>{_esc(say('quiz.reset', lang))}</button>"
            "<div class='tv-quiz-page-steps'></div></div>\n" + _quiz_script(lang, dict(zip(names, counts, strict=True)))
        )
    header = W.HTML(f"<div class='tv-export-head'><b>{_esc(page_title)}</b><br>{_esc(head)}</div>")
    clip_box = _panels(ex, state, clip_norms, made)
    root = W.VBox([header, body, clip_box]).add_class("tv-export")
    made += [root, header]
    try:
        snippet = embed.embed_snippet(
            [root],
            state=embed.dependency_state([root], drop_defaults=True),
            indent=None,
            embed_url=_esc(embed_url),
            requirejs=requirejs and requirejs_url is None,
            cors=cors,
        )
    finally:
        for w in made:  # layouts and styles are widgets too: close them, or they stay registered
            for part in (getattr(w, "layout", None), getattr(w, "style", None)):
                if isinstance(part, W.Widget):
                    part.close()
            w.close()

    crossorigin = ' crossorigin="anonymous"' if cors else ""
    load_requirejs = ""
    if requirejs:
        # The AMD build finds its fonts (the play buttons' icons) next to the URL that
        # require.js gives its modules; by default that is the page's own folder, where
        # they are not. Map the modules to the folder of embed_url instead.
        assets = re.sub(r"[?#].*$", "", embed_url).rpartition("/")[0] or "."
        config = json.dumps({"paths": {"@jupyter-widgets/html-manager/dist": assets, "@jupyter-widgets": assets}})
        load_requirejs = f"<script>var require = {embed.escape_script(config)};</script>\n"
        if requirejs_url is not None:
            load_requirejs += f'<script src="{_esc(requirejs_url)}"{crossorigin}></script>\n'
    page = (
        f'<!DOCTYPE html>\n<html lang="{_esc(lang)}">\n<head>\n<meta charset="UTF-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'  # no favicon request
        f"<title>{_esc(page_title)}</title>\n"
        "<style>\nbody { font-family: sans-serif; margin: 12px; }\n"
        ".tv-export-head { font-size: 13px; margin-bottom: 6px; }\n"
        ".tv-frames svg { max-width: 100%; height: auto; }\n"  # wide graphs fit the window
        ".tv-quiz-right { color: #009e73; font-weight: 600; } .tv-quiz-wrong { color: #d55e00; font-weight: 600; }\n"
        ".tv-quiz-step input, .tv-quiz-step button, .tv-quiz-page button { font-size: 15px; margin: 4px 2px; }\n"
        ".tv-quiz-question, .tv-quiz-page { font-size: 15px; margin: 6px 0; }\n"
        "body:has(.jupyter-widgets) .tv-export-loading { display: none; }\n</style>\n"
        "</head>\n<body>\n"
        f"<p class='tv-export-loading'>{_esc(say('page.loading', lang, url=embed_url))}</p>\n"
        f"{quiz_parts}{load_requirejs}{snippet}\n"
        # the canvas's hover tips, zoom and pan, inlined (no anywidget, no CDN, no kernel here)
        f'<script type="module">\n{page_script(hover, say("ui.canvas.reset", lang))}\n</script>\n</body>\n</html>\n'
    )
    p.write_text(page, encoding="utf-8")
    return p

"""The explorer's canvas: an SVG picture you can click, hover, zoom and pan, patched in place.

Why a widget of its own: an ``ipywidgets.HTML`` picture is replaced whole on every move
(about 200 KiB for a 1,000-op graph, although a step changes a handful of elements) and
gives Python no clicks. The :class:`Canvas` (anywidget: one generic front end, already
used by keyboard.py, that runs in JupyterLab 4, Notebook 7 and Voilà) receives the first
picture whole, then per move only what changed per element id (patches.py), which its
front end applies to the SVG on the page; a new layout (a group opened) is sent whole.

Python keeps ``canvas.value``, the current picture's complete markup (setting it is how
the explorer shows a picture); the front end reports clicks (``on_click``): the
explorer decides what a click means (open a group, close it, select a box) by setting
one field of its state. Hover tips (full name, shape, value and gradient summaries) are
plain text per element id in ``tips``. Zoom (wheel), pan (drag) and the reset button
stay in the browser and survive steps and new layouts.

:data:`PAGE_SCRIPT` is the same front end for the exported HTML page (no kernel, no
anywidget there: inlined, no CDN): hover tips, zoom and pan on the page's pictures.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets as W
import traitlets as T

from . import patches

__all__ = ["Canvas", "canvas_available", "make_canvas", "PAGE_SCRIPT", "page_script"]

#: Front-end code shared by the widget and the exported page (plain functions, no imports).
_CORE = r"""
const TV_SVGNS = "http://www.w3.org/2000/svg";

// Whitespace between elements is not drawn: drop it, so a patched picture and a fresh one
// are the same DOM (patches insert elements, not the newlines around them).
function tvStrip(svg) {
  for (const box of [svg, ...Array.from(svg.children).filter((c) => c.tagName === "g" && c.id.startsWith("layer-"))]) {
    for (const n of Array.from(box.childNodes)) if (n.nodeType === 3 && !n.data.trim()) n.remove();
  }
  return svg;
}

function tvFragments(markup) {
  const t = document.createElementNS(TV_SVGNS, "svg");
  t.innerHTML = markup;
  return Array.from(t.children);
}

// One patch (patches.py): drop, set (in place), put (new / changed / moved, right to left).
function tvApply(svg, p) {
  const ids = new Map();
  for (const e of svg.querySelectorAll("[id]")) ids.set(e.id, e);
  ids.set("", svg);
  for (const k of p.drop) { const e = ids.get(k); if (e) e.remove(); ids.delete(k); }
  const keys = Object.keys(p.set);
  if (keys.length) {
    const made = tvFragments(keys.map((k) => p.set[k]).join(""));
    keys.forEach((k, i) => { const old = ids.get(k); if (old) old.replaceWith(made[i]); ids.set(k, made[i]); });
  }
  const fresh = tvFragments(p.put.filter((x) => x[2] !== null).map((x) => x[2]).join(""));
  let j = 0;
  for (const [box, k, markup, before] of p.put) {
    const old = ids.get(k);
    const e = markup === null ? old : fresh[j++];
    if (old && old !== e) old.remove();
    ids.get(box).insertBefore(e, before === null ? null : ids.get(before));
    ids.set(k, e);
  }
}

// Wheel zooms about the pointer, a drag pans, reset() goes back; the transform sits on
// `content` (not on the SVG), so patches and new pictures keep the view.
function tvNavigate(viewport, content, onClick) {
  const v = { s: 1, x: 0, y: 0 };
  const show = () => {
    content.style.transform = v.s === 1 && v.x === 0 && v.y === 0 ? "" : `translate(${v.x}px, ${v.y}px) scale(${v.s})`;
    viewport.dataset.tvScale = v.s.toFixed(3);
    viewport.dataset.tvPan = `${Math.round(v.x)},${Math.round(v.y)}`;
  };
  content.style.transformOrigin = "0 0";
  viewport.addEventListener("wheel", (e) => {
    if (e.ctrlKey && e.deltaMode !== 0) return;
    e.preventDefault();
    const r = viewport.getBoundingClientRect();
    const mx = e.clientX - r.left + viewport.scrollLeft, my = e.clientY - r.top + viewport.scrollTop;
    const f = Math.min(4, Math.max(0.25, Math.exp(-e.deltaY * 0.0015)));
    const s = Math.min(20, Math.max(0.1, v.s * f));
    v.x = mx - (mx - v.x) * (s / v.s);
    v.y = my - (my - v.y) * (s / v.s);
    v.s = s;
    show();
  }, { passive: false });
  let down = null;
  viewport.addEventListener("pointerdown", (e) => {
    if (e.button !== 0 || (e.target instanceof Element && e.target.closest("button"))) return;
    down = { x: e.clientX, y: e.clientY, vx: v.x, vy: v.y, moved: false, id: e.pointerId };
  });
  viewport.addEventListener("pointermove", (e) => {
    if (!down) return;
    const dx = e.clientX - down.x, dy = e.clientY - down.y;
    if (!down.moved && Math.hypot(dx, dy) < 4) return;
    if (!down.moved) { down.moved = true; try { viewport.setPointerCapture(down.id); } catch (_) {} }
    v.x = down.vx + dx;
    v.y = down.vy + dy;
    viewport.classList.add("tv-panning");
    show();
  });
  const up = (e) => {
    if (!down) return;
    const was = down;
    down = null;
    viewport.classList.remove("tv-panning");
    if (!was.moved && e.type === "pointerup" && onClick) onClick(e);
  };
  viewport.addEventListener("pointerup", up);
  viewport.addEventListener("pointercancel", up);
  return { reset: () => { v.s = 1; v.x = 0; v.y = 0; show(); }, view: v };
}

// The element a pointer is on: a box (node-…), an open group's frame (group-…), or null.
function tvItem(target, svg) {
  let e = target instanceof Element ? target : null;
  while (e && e !== svg) {
    if (e.tagName === "g" && e.id && (e.id.startsWith("node-") || e.id.startsWith("group-"))) return e;
    e = e.parentElement;
  }
  return null;
}

// Hover tips: text per element id from tips(), else the box's own <title>.
function tvTips(viewport, tip, svgOf, tips) {
  viewport.addEventListener("pointermove", (e) => {
    const item = tvItem(e.target, svgOf());
    const text = item ? (tips()[item.id] || (item.querySelector(":scope > title") || {}).textContent || "") : "";
    if (!text) { tip.style.display = "none"; tip.dataset.for = ""; return; }
    if (tip.dataset.for !== item.id) { tip.textContent = text; tip.dataset.for = item.id; }
    const r = viewport.getBoundingClientRect();
    tip.style.left = `${e.clientX - r.left + viewport.scrollLeft + 14}px`;
    tip.style.top = `${e.clientY - r.top + viewport.scrollTop + 14}px`;
    tip.style.display = "block";
  });
  viewport.addEventListener("pointerleave", () => { tip.style.display = "none"; tip.dataset.for = ""; });
}

function tvFrame(el, resetLabel) {
  el.classList.add("tv-canvas-view");
  const viewport = document.createElement("div");
  viewport.className = "tv-viewport";
  const content = document.createElement("div");
  content.className = "tv-content";
  const tip = document.createElement("div");
  tip.className = "tv-tip";
  const reset = document.createElement("button");
  reset.className = "tv-reset";
  reset.textContent = "⟲";
  reset.title = resetLabel;
  reset.setAttribute("aria-label", resetLabel);
  viewport.append(content, tip, reset);
  el.appendChild(viewport);
  return { viewport, content, tip, reset };
}
"""

_ESM = (
    _CORE
    + r"""
const LIVE = new WeakMap();  // model -> its views' state (a second view of one model starts from a live one)

function render({ model, el }) {
  const { viewport, content, tip, reset } = tvFrame(el, model.get("reset_label"));
  const me = { svg: null, seq: -1 };
  if (!LIVE.has(model)) LIVE.set(model, new Set());
  LIVE.get(model).add(me);

  const full = (markup, seq) => {
    content.innerHTML = markup;
    me.svg = content.querySelector("svg");
    if (me.svg) tvStrip(me.svg);
    me.seq = seq;
  };
  const onFrame = () => {
    const f = model.get("frame");
    if (!f || f.seq === undefined) return;
    if (f.kind === "full") { full(f.markup, f.seq); tip.style.display = "none"; tip.dataset.for = ""; }
    else if (me.svg && f.base === me.seq) { tvApply(me.svg, f.patch); me.seq = f.seq; }
    else {
      const twin = [...LIVE.get(model)].find((o) => o !== me && o.svg && o.seq === f.seq);
      if (twin) {
        content.replaceChildren(twin.svg.cloneNode(true));
        me.svg = content.querySelector("svg");
        me.seq = f.seq;
      } else model.send({ event: "resync" });
    }
    el.dataset.tvSeq = String(me.seq);
  };
  model.on("change:frame", onFrame);
  onFrame();

  const nav = tvNavigate(viewport, content, (e) => {
    const item = tvItem(e.target, me.svg);
    if (item) model.send({ event: "click", id: item.id });
  });
  reset.addEventListener("click", () => nav.reset());
  tvTips(viewport, tip, () => me.svg, () => model.get("tips"));
  return () => {
    model.off("change:frame", onFrame);
    LIVE.get(model).delete(me);
  };
}

export default { render };
"""
)

_CSS = """
.tv-canvas-view { position: relative; }
.tv-viewport { position: relative; overflow: auto; cursor: grab; touch-action: none; }
.tv-viewport.tv-panning { cursor: grabbing; user-select: none; }
.tv-viewport g[id^="node-layer:"], .tv-viewport g.tv-group { cursor: pointer; }
.tv-content { width: max-content; max-width: 100%; }
.tv-content svg { display: block; }
.tv-tip { display: none; position: absolute; z-index: 10; pointer-events: none; white-space: pre-line;
  max-width: 420px; padding: 4px 7px; border-radius: 4px; font: 12px/1.35 sans-serif;
  background: rgba(30, 41, 59, 0.94); color: #f8fafc; box-shadow: 0 1px 4px rgba(0,0,0,.3); }
.tv-reset { position: absolute; top: 4px; right: 4px; z-index: 5; width: 26px; height: 26px; padding: 0;
  border: 1px solid #cbd5e1; border-radius: 4px; background: rgba(255,255,255,.85); color: #334155;
  cursor: pointer; font-size: 15px; line-height: 22px; }
"""


class Canvas(anywidget.AnyWidget):
    """An SVG picture sent whole once, then as per-id patches; clicks come back to Python.

    ``value``: the current picture's complete markup (from ``<svg``); set it to show
    another picture. ``tips``: hover text per element id. ``on_click(f)``: ``f(element
    id)`` for a click (not a drag) on a box (``node-…``) or a group frame (``group-…``).
    """

    _esm = _ESM
    _css = _CSS

    value = T.Unicode("", help="the current picture's complete SVG markup (Python side only)")
    frame = T.Dict(help="what the page gets: a whole picture or a patch of the last one").tag(sync=True)
    tips = T.Dict(help="hover text per element id").tag(sync=True)
    reset_label = T.Unicode("reset zoom and pan").tag(sync=True)

    def __init__(self, **kwargs) -> None:
        self._doc: patches.Document | None = None
        self._seq = 0
        self._clicks: list[Callable[[str], Any]] = []
        super().__init__(**kwargs)
        self.on_msg(self._on_msg)
        self.sent_bytes = 0  # what the last picture change sent (a benchmark reads it)

    @T.observe("value")
    def _picture_changed(self, change) -> None:
        markup = change["new"]
        doc = patches.parse(markup)
        patch = patches.diff(self._doc, doc) if self._doc is not None and doc is not None else None
        self._doc = doc
        self._seq += 1
        if patch is not None:
            size = len(json.dumps(patch))
            if size < len(markup) // 2:  # a patch half the picture's size: the whole picture is simpler
                self.sent_bytes = size
                self.frame = {"kind": "patch", "seq": self._seq, "base": self._seq - 1, "patch": patch}
                return
        self.sent_bytes = len(markup)
        self.frame = {"kind": "full", "seq": self._seq, "markup": markup}

    def get_state(self, key=None, drop_defaults=False):
        """A front end asking for the whole state (a page reload) gets the whole picture."""
        state = super().get_state(key, drop_defaults)
        if key is None and self.frame.get("kind") == "patch":
            state["frame"] = {"kind": "full", "seq": self._seq, "markup": self.value}
        return state

    def on_click(self, callback: Callable[[str], Any]) -> None:
        """Call ``callback(element id)`` when a box or a group frame is clicked."""
        self._clicks.append(callback)

    def _on_msg(self, _widget, content, _buffers) -> None:
        if not isinstance(content, dict):
            return
        if content.get("event") == "resync":  # a view that missed the picture a patch applies to
            self._seq += 1
            self.frame = {"kind": "full", "seq": self._seq, "markup": self.value}
        elif content.get("event") == "click" and isinstance(content.get("id"), str):
            for f in self._clicks:
                f(content["id"])


def canvas_available() -> bool:
    """True when anywidget's front end is installed where Jupyter looks for lab extensions
    (JupyterLab 4, Notebook 7 and Voilà load it from there)."""
    try:
        from jupyter_core.paths import jupyter_path
    except ImportError:  # pragma: no cover - jupyter_core comes with ipykernel
        return True
    return any((Path(p) / "anywidget" / "package.json").is_file() for p in jupyter_path("labextensions"))


_warned = False


def make_canvas(*, reset_label: str, fallback_note: str) -> W.DOMWidget:
    """A :class:`Canvas`, or where anywidget's front end is missing (or
    ``TAPEVIZ_CANVAS=html``) today's ``ipywidgets.HTML`` picture, saying so once."""
    global _warned
    if os.environ.get("TAPEVIZ_CANVAS", "").lower() != "html" and canvas_available():
        return Canvas(reset_label=reset_label)
    if not _warned:
        _warned = True
        warnings.warn(fallback_note, stacklevel=3)
    return W.HTML(layout=W.Layout(overflow="auto"))


_PAGE = r"""
// tapeviz: hover tips, zoom and pan on the exported page's pictures (no kernel here).
(function () {
  const style = document.createElement("style");
  style.textContent = TV_CSS;
  document.head.appendChild(style);
  const done = new WeakSet();
  const setup = () => {
    document.querySelectorAll(".tv-frames").forEach((stack, i) => {
      if (done.has(stack)) return;
      done.add(stack);
      const parent = stack.parentElement;
      const { viewport, content, tip, reset } = tvFrame(document.createElement("div"), "RESET_LABEL");
      const holder = viewport.parentElement;
      parent.insertBefore(holder, stack);
      content.appendChild(stack);
      const nav = tvNavigate(viewport, content, null);
      reset.addEventListener("click", () => nav.reset());
      const tips = (window.TAPEVIZ_TIPS || [])[i] || {};
      tvTips(viewport, tip, () => stack.querySelector("svg:not([style*='display: none'])"), () => tips);
    });
  };
  new MutationObserver(setup).observe(document.documentElement, { childList: true, subtree: true });
  setup();
})();
"""


def page_script(tips: list[dict[str, str]], reset_label: str) -> str:
    """The exported page's inline ``<script>`` body: the canvas's hover tips (one map per
    target's pictures, in page order), zoom and pan, with no anywidget and no kernel."""

    def js(x) -> str:  # JSON with no "<" at all: nothing in it can open or close a tag
        return json.dumps(x).replace("<", "\\u003c")

    page = _PAGE.replace('"RESET_LABEL"', js(reset_label))
    return f"window.TAPEVIZ_TIPS = {js(tips)};\nconst TV_CSS = {js(_CSS)};\n{_CORE}\n{page}"


#: The page script with no tips (for tests and docs).
PAGE_SCRIPT = page_script([], "reset zoom and pan")

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

The front end is static/canvas.js (with canvas.css); the exported page (html_page.py)
inlines the same file, so the page patches, zooms, pans and shows tips as the canvas does.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets as W
import traitlets as T

from ..record.bounded_cache import BoundedCache
from . import patches, static_files

__all__ = ["Canvas", "canvas_available", "make_canvas"]


class Canvas(anywidget.AnyWidget):
    """An SVG picture sent whole once, then as per-id patches; clicks come back to Python.

    ``value``: the current picture's complete markup (from ``<svg``); set it to show
    another picture, or call :meth:`show` to say which backward step it is, so the page
    can step on its own. ``tips``: hover text per element id. ``on_click(f)``: ``f(element
    id)`` for a click (not a drag) on a box (``node-…``) or a group frame (``group-…``).

    Stepping without the kernel: ``step`` is linked in the browser to the explorer's step
    slider, and ``ahead`` carries the patches between neighbouring steps of the picture on
    the page (a few steps either way; more when pictures are cheap). A slider move then
    patches the page at once; when the kernel gets the same move, it finds the page could
    do it alone and sends nothing, and sends the patches for the steps beyond.
    """

    _esm = static_files.module("canvas.js")  # with box_keys.js, which it imports
    _css = static_files.path("canvas.css")

    value = T.Unicode("", help="the current picture's complete SVG markup (Python side only)")
    frame = T.Dict(help="what the page gets: a whole picture or a patch of the last one").tag(sync=True)
    ahead = T.Dict(help="patches to neighbouring steps of the picture on the page").tag(sync=True)
    step = T.Int(0, help="the step the page should show (linked in the browser to the step slider)").tag(sync=True)
    clip = T.Float(0.0, help="the clip_norm the page should show (linked in the browser to its slider)").tag(sync=True)
    clips = T.Dict(help="patches from the picture on the page to its neighbouring clip_norm values").tag(sync=True)
    tips = T.Dict(help="hover text per element id").tag(sync=True)
    selected = T.Unicode("", help="the id of the box the inspector shows: drawn highlighted").tag(sync=True)
    reset_label = T.Unicode("reset zoom and pan").tag(sync=True)
    chain = T.Unicode(
        "",
        help="the step's sentence and chain rule under the picture (HTML: an aria-live region whose terms name boxes)",
    ).tag(sync=True)

    #: Pictures computed ahead per move: as many as fit this budget (seconds), at least 1 each way.
    AHEAD_BUDGET = 0.03
    AHEAD_MOST = 8
    #: Pictures of neighbouring clip_norm values computed per move: as many as fit (at least one).
    CLIP_BUDGET = 0.03

    def __init__(self, **kwargs) -> None:
        self._doc: patches.Document | None = None
        self._seq = 0
        self._at: int | None = None  # the backward step the picture shows (None: not a step picture)
        self._family: Any = None  # what, besides the step, decides the picture
        self._from: int | None = None  # the step of the picture the last patch applies to
        self._sent: dict[tuple[str, int], dict] = {}  # ("f", k): patch k -> k+1 sent; ("b", k): k -> k-1
        self._pics: dict[int, str] = {}  # step -> the picture those patches were made from, this seq
        self._carry: tuple = (-1, {}, {})  # the last seq's (seq, _sent, _pics): the page may keep some
        self._docs: BoundedCache[str, patches.Document | None] = BoundedCache(2 * self.AHEAD_MOST + 4, start_over=True)
        self._local = False
        self._asked = 0  # answers to pages that asked for patches again
        self._ahead_of: tuple | None = None  # (step, last, picture_at) of the last picture shown
        self._clip_of: tuple | None = None  # (clip_norm values near, picture_of) of the last picture shown
        self._clips_sent: tuple = (-1, None, {})  # (seq, step, {clip_norm: markup}) of the last clips sent
        self._clicks: list[Callable[[str], Any]] = []
        super().__init__(**kwargs)
        self.on_msg(self._on_msg)
        self.sent_bytes = 0  # what the last picture change sent (a benchmark reads it)

    # -- pictures ----------------------------------------------------------------------
    def show(
        self,
        markup: str,
        *,
        step: int | None = None,
        family: Any = None,
        picture_at: Callable[[int], str] | None = None,
        last: int | None = None,
        clip_near: Sequence[float] = (),
        picture_of: Callable[[float], str] | None = None,
    ) -> None:
        """Show ``markup``, the picture of backward ``step`` among the pictures
        ``picture_at(0..last)`` of one ``family`` (the same layout and settings): moves
        between them are patched by the page itself once their patches are there
        (:meth:`look_ahead` sends them). ``picture_of(v)``: this picture with clip_norm
        ``v``, for the values ``clip_near`` the clip_norm slider can go to next (the page
        patches those by itself too; the kernel's picture then confirms it)."""
        same = family is not None and family == self._family and self._at is not None and step is not None
        self._local = same and step != self._at and self._reaches(self._at, step)
        before = self._at
        self._family, self._at, self._from = family, step, before
        try:
            if markup != self.value:
                self.value = markup
            elif not same and self._doc is not None:  # other settings, same picture here: the
                self._patch_frame({"drop": [], "put": [], "set": {}, "text": {}})  # steps around it differ: new seq
        finally:
            self._local = False
        has_steps = picture_at is not None and step is not None and last is not None
        self._ahead_of = (step, last, picture_at) if has_steps else None
        self._clip_of = (tuple(clip_near), picture_of) if picture_of is not None and clip_near else None

    def look_ahead(self) -> None:
        """Send the patches to the steps around the one shown (call when the rest of the view
        is up to date: this computes neighbouring pictures). The neighbouring clip_norm
        values go first: a clip move sends no step patches the page had (it starts a new
        seq, so they go again, after)."""
        if self._clip_of is not None:
            self._send_clips(*self._clip_of)
        if self._ahead_of is not None:
            self._send_ahead(self.value, *self._ahead_of)

    def _send_clips(self, near: tuple[float, ...], picture_of: Callable[[float], str]) -> None:
        """Patches from the picture on the page to its pictures at neighbouring clip_norm
        values (TensorFlow clips in ``picture_of``): a clip key press is patched by the page
        at once, and the kernel's frame for that move confirms it (``clip_ok``)."""
        if self._clips_sent[:2] == (self._seq, self._at):
            return
        start = time.perf_counter()
        doc = self._parsed(self.value)
        out, markups = [], {}
        for v in near:
            markup = picture_of(v)
            other = self._parsed(markup)
            patch = patches.diff(doc, other) if doc is not None and other is not None else None
            if patch is not None:
                out.append([v, patch])
                markups[v] = markup
            if time.perf_counter() - start > self.CLIP_BUDGET:
                break
        self._clips_sent = (self._seq, self._at, markups)
        self.clips = {"seq": self._seq, "at": self._at, "c": out}
        self.sent_bytes += len(json.dumps(self.clips))

    def _reaches(self, a: int | None, b: int | None) -> bool:
        if a is None or b is None:
            return False
        if b >= a:
            return all(("f", k) in self._sent for k in range(a, b))
        return all(("b", k) in self._sent for k in range(b + 1, a + 1))

    def _parsed(self, markup: str) -> patches.Document | None:
        return self._docs.fetch(markup, lambda: patches.parse(markup))

    def _new_seq(self, carry: bool = True) -> None:
        """A new picture seq: the step patches sent so far belong to the old one (but the page
        keeps those whose two pictures did not change, e.g. the steps a clip move leaves alone;
        not ``carry``: a page that lost them)."""
        self._carry = (self._seq, self._sent, self._pics) if carry else (-1, {}, {})
        self._seq += 1
        self._sent, self._pics = {}, {}

    def _send_ahead(self, markup: str, step: int, last: int, picture_at: Callable[[int], str]) -> None:
        """Patches between the pictures around ``step`` the page does not have yet."""
        add: dict[str, dict[str, Any]] = {"f": {}, "b": {}}
        keep: dict[str, list[int]] = {"f": [], "b": []}
        carry_seq, carried, pics = self._carry
        start = time.perf_counter()
        docs = {step: self._parsed(markup)}
        self._pics[step] = markup
        for reach in range(1, self.AHEAD_MOST + 1):
            for k in (step + reach, step - reach):
                near = k - 1 if k > step else k + 1  # its neighbour towards step, read already
                if not 0 <= k <= last or docs.get(near) is None:
                    continue
                lo, hi = min(k, near), max(k, near)
                self._pics[k] = picture_at(k)
                docs[k] = self._parsed(self._pics[k])
                if ("f", lo) in self._sent and ("b", hi) in self._sent:
                    continue
                if (
                    ("f", lo) in carried
                    and ("b", hi) in carried
                    and pics.get(lo) == self._pics[lo]
                    and pics.get(hi) == self._pics[hi]
                ):  # the same two pictures as in the last seq: the page keeps their patches
                    self._sent["f", lo], self._sent["b", hi] = carried["f", lo], carried["b", hi]
                    keep["f"].append(lo)
                    keep["b"].append(hi)
                    continue
                a, b = (docs[near], docs[k]) if k > near else (docs[k], docs[near])
                up = down = None
                if a is not None and b is not None:
                    up, down = patches.diff(a, b), patches.diff(b, a)
                if up is None or down is None:
                    docs[k] = None  # another layout: the page asks, the kernel sends it whole
                    continue
                add["f"][str(lo)], add["b"][str(hi)] = self._sent["f", lo], self._sent["b", hi] = up, down
            if time.perf_counter() - start > self.AHEAD_BUDGET:
                break
        if add["f"] or add["b"] or keep["f"]:
            self.ahead = {
                "seq": self._seq,
                "f": add["f"],
                "b": add["b"],
                "carry": carry_seq,  # from the table of that seq, the page keeps these
                "keep": keep,
                "n": len(self._sent),
            }
            self.sent_bytes += len(json.dumps(self.ahead))

    @T.observe("value")
    def _picture_changed(self, change) -> None:
        markup = change["new"]
        doc = self._parsed(markup)
        if self._local:  # the page steps there itself with the patches it has
            self._doc = doc
            self.sent_bytes = 0
            return
        patch = patches.diff(self._doc, doc) if self._doc is not None and doc is not None else None
        self._doc = doc
        self._new_seq()
        if patch is not None:
            size = len(json.dumps(patch))
            if size < len(markup) // 2:  # a patch half the picture's size: the whole picture is simpler
                self.sent_bytes = size
                self._patch_frame(patch, bumped=True)
                return
        self.sent_bytes = len(markup)
        self.frame = self._whole()

    def _patch_frame(self, patch: dict, bumped: bool = False) -> None:
        """Send a patch of the page's picture as a new picture seq (the step patches sent so far
        belong to the old one)."""
        if not bumped:
            self._new_seq()
        seq, at, markups = self._clips_sent
        # the clip_norm values whose picture, sent ahead from the base, is this one: a page
        # that went there by itself already shows it
        ok = [v for v, m in markups.items() if m == self.value] if (seq, at) == (self._seq - 1, self._from) else []
        self.frame = {
            "kind": "patch",
            "seq": self._seq,
            "base": self._seq - 1,
            "from": self._from,
            "at": self._at,
            "patch": patch,
            "clip_ok": ok,
        }

    def _whole(self) -> dict:
        return {"kind": "full", "seq": self._seq, "at": self._at, "markup": self.value}

    def get_state(self, key=None, drop_defaults=False):
        """A front end asking for the whole state (a page reload) gets the whole picture."""
        state = super().get_state(key, drop_defaults)
        if key is None and self.frame.get("kind") == "patch":
            state["frame"] = self._whole()
        return state

    def on_click(self, callback: Callable[[str], Any]) -> None:
        """Call ``callback(element id)`` when a box or a group frame is clicked."""
        self._clicks.append(callback)

    def _on_msg(self, _widget, content, _buffers) -> None:
        if not isinstance(content, dict):
            return
        event = content.get("event")
        if event == "need" and self._resend(content):
            pass
        elif event in ("resync", "need"):
            # a view that missed what a patch applies to, or steps no patch was sent for
            self._new_seq(carry=False)
            self.frame = self._whole()
            self.look_ahead()
        elif event == "click" and isinstance(content.get("id"), str):
            for f in self._clicks:
                f(content["id"])

    def _resend(self, content: dict) -> bool:
        """A page at (seq, step) that cannot walk to the step it wants: send the patches again
        (a reload lost them) when they were sent in this seq; False when they were not."""
        a, want = content.get("step"), content.get("want")
        if content.get("seq") != self._seq or not isinstance(a, int) or not isinstance(want, int):
            return False
        if not self._reaches(a, want):
            return self._at is not None and self._at != want  # the kernel has not got there yet: it will
        keys = [("f", k) for k in range(a, want)] if want >= a else [("b", k) for k in range(want + 1, a + 1)]
        again: dict[str, dict] = {"f": {}, "b": {}}
        for d, k in keys:
            again[d][str(k)] = self._sent[d, k]
        self._asked += 1
        self.ahead = {"seq": self._seq, **again, "n": -self._asked}  # "n": a new value every time
        return True


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

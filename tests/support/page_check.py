"""Helpers for the exported page's tests: its data read back, and the pictures it would show
rebuilt in Python with patches.apply (test_export_html.py), or read from Chromium
(test_browser_page.py)."""

from __future__ import annotations

import json
import re

from tapeviz.explorer import patches

_DATA = re.compile(r"<script type='application/json' class='tv-page-data'>(.*?)</script>", re.S)
_STEPS = re.compile(r"<script type='application/json' class='tv-page-steps'>(.*?)</script>", re.S)


def page_data(page: str) -> list[dict]:
    """The data of every fragment of a page, in page order (the steps' patches, which sit
    after the page's script, merged into their targets as the script merges them)."""
    out = []
    for data, steps in zip(_DATA.findall(page), _STEPS.findall(page), strict=True):
        data = json.loads(data)
        for target, more in zip(data["targets"], json.loads(steps), strict=True):
            target.update(more)
        out.append(data)
    return out


def walk(markup: str, patch: dict) -> str:
    """One step of the page's walk, in Python: a patch applied, or the whole next picture."""
    return patch["whole"] if "whole" in patch else patches.apply(markup, patch)


def pictures(track: dict) -> list[str]:
    """Every step's picture a track of the page shows, walked from its first picture both ways."""
    n, start = track["steps"], track["start"]
    out: list[str | None] = [None] * n
    out[start] = track["first"]
    for k in range(start, n - 1):
        out[k + 1] = walk(out[k], track["f"][k])
    for k in range(start, 0, -1):
        out[k - 1] = walk(out[k], track["b"][k - 1])
    return [p for p in out if p is not None]


# The picture on the page, and a fresh parse of `markup` with the same whitespace rule (the
# page drops whitespace-only text between elements), both serialised by the browser; the
# selected box's highlight (a class on top of the picture) is left out and returned.
SAME_AS_FRESH_JS = r"""
([root, markup]) => {
  const svg = document.querySelectorAll(".tv-page")[root]
    .querySelector(".tv-page-picture:not([hidden]) svg").cloneNode(true);
  const selected = Array.from(svg.querySelectorAll(".tv-selected")).map((e) => e.id);
  for (const e of svg.querySelectorAll(".tv-selected")) {
    e.classList.remove("tv-selected");
    if (!e.classList.length) e.removeAttribute("class");
  }
  for (const e of svg.querySelectorAll("[aria-disabled]")) e.removeAttribute("aria-disabled"); // page.js: fixed groups
  const div = document.createElement("div");
  div.innerHTML = markup;
  const fresh = div.querySelector("svg");
  const layers = Array.from(fresh.children).filter((c) => c.tagName === "g" && c.id.startsWith("layer-"));
  for (const box of [fresh, ...layers])
    for (const n of Array.from(box.childNodes)) if (n.nodeType === 3 && !n.data.trim()) n.remove();
  return {page: svg.outerHTML, fresh: fresh.outerHTML, selected};
}
"""
